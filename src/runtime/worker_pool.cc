#include "runtime/worker_pool.h"

#include <algorithm>
#include <iterator>

namespace gpuwasm::runtime {

WorkerPool::WorkerPool(uint32_t threads, uint32_t max_running_per_key)
    : max_per_key_(std::max(1u, max_running_per_key)) {
  threads = std::max(1u, threads);
  capacity_ = threads;
  threads_.reserve(threads);
  for (uint32_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

bool WorkerPool::Submit(const std::string& key, std::function<void()> task) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    queues_[key].tasks.push_back(Task{std::move(task), nullptr});
    // With every slot taken no thread could run it: the next Leave or finished task takes it.
    wake = busy_ < capacity_;
  }
  // One thread is enough: every idle thread could take the same tasks (Take), so when the one woken
  // cannot run this one (its key is at its limit), none could. Waking all of them made every
  // invocation a stampede on mu_.
  if (wake) cv_.notify_one();
  return true;
}

bool WorkerPool::SubmitStarter(const std::string& key, Starter start) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    queues_[key].tasks.push_back(Task{nullptr, std::move(start)});
    wake = busy_ < capacity_;  // as for Submit
  }
  if (wake) cv_.notify_one();
  return true;
}

bool WorkerPool::AnyQueued() const {
  return !handoff_.empty() ||
         std::any_of(queues_.begin(), queues_.end(), [](const auto& q) { return !q.second.tasks.empty(); });
}

bool WorkerPool::TryEnter(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || busy_ >= capacity_) return false;
  auto it = queues_.find(key);
  if (it != queues_.end() && (!it->second.tasks.empty() || it->second.running >= max_per_key_)) return false;
  ++queues_[key].running;
  ++busy_;
  last_key_ = key;  // served now: round-robin goes on after it
  return true;
}

namespace {
thread_local int t_leaving = 0;  // a starter run by Leave is on this thread's stack
}  // namespace

void WorkerPool::Leave(const std::string& key) {
  Task next;
  std::string next_key;
  bool queued = false, took = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ReleaseLocked(key);
    // The next starter runs here, in the slot just freed: no thread to wake. Not from inside
    // another one's start (a start that ends at once would recurse through the whole queue).
    took = !stopping_ && t_leaving == 0 && Take(&next, &next_key, /*starters_only=*/true);
    queued = stopping_ || AnyQueued();
  }
  if (took) {
    ++t_leaving;
    bool started = next.start(false);
    --t_leaving;
    if (started) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      handoff_.push_back(std::move(next));
    }
    queued = true;
  }
  if (queued) cv_.notify_one();  // the slot it held may be what a queued task waits for
}

void WorkerPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

size_t WorkerPool::DropQueued() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (auto it = queues_.begin(); it != queues_.end();) {
    n += it->second.tasks.size();
    it->second.tasks.clear();
    it = it->second.running == 0 ? queues_.erase(it) : std::next(it);
  }
  return n;
}

void WorkerPool::ReleaseLocked(const std::string& key) {
  --busy_;
  auto it = queues_.find(key);
  if (--it->second.running == 0 && it->second.tasks.empty()) queues_.erase(it);
}

bool WorkerPool::Take(Task* task, std::string* key, bool starters_only) {
  if (queues_.empty() || busy_ >= capacity_) return false;
  // Start after the key served last, wrapping around: round-robin over keys.
  auto start = queues_.upper_bound(last_key_);
  for (size_t i = 0; i < queues_.size(); ++i, ++start) {
    if (start == queues_.end()) start = queues_.begin();
    Queue& q = start->second;
    if (q.tasks.empty() || q.running >= max_per_key_) continue;
    if (starters_only && !q.tasks.front().start) continue;
    *task = std::move(q.tasks.front());
    q.tasks.pop_front();
    ++q.running;
    ++busy_;
    *key = start->first;
    last_key_ = start->first;
    return true;
  }
  return false;
}

void WorkerPool::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Task task;
    std::string key;
    cv_.wait(lock, [&] {
      if (!handoff_.empty()) {  // its slot is held already
        task = std::move(handoff_.front());
        handoff_.pop_front();
        return true;
      }
      if (Take(&task, &key)) return true;
      if (!stopping_) return false;
      for (const auto& [k, q] : queues_) {
        if (!q.tasks.empty()) return false;  // queued work still to run (waits for a per-key slot)
      }
      return true;
    });
    if (!task.run && !task.start) return;  // stopping and nothing queued
    lock.unlock();
    if (task.start) {
      task.start(true);  // its slot stays taken until the work it started calls Leave
      task = {};
      lock.lock();
      continue;
    }
    task.run();
    task = {};
    lock.lock();
    ReleaseLocked(key);
    // This thread takes the next task itself (the wait checks first); others need waking only
    // to see that the pool stops.
    if (stopping_) cv_.notify_all();
  }
}

}  // namespace gpuwasm::runtime
