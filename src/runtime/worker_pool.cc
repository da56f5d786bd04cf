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
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    queues_[key].tasks.push_back(std::move(task));
  }
  // One thread is enough: every idle thread could take the same tasks (Take), so when the one woken
  // cannot run this one (its key is at its limit), none could. Waking all of them made every
  // invocation a stampede on mu_.
  cv_.notify_one();
  return true;
}

bool WorkerPool::RunInline(const std::string& key, const std::function<void()>& task) {
  if (!TryEnter(key)) return false;
  task();
  Leave(key);
  return true;
}

bool WorkerPool::TryEnter(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || busy_ >= capacity_) return false;
  auto it = queues_.find(key);
  if (it != queues_.end() && (!it->second.tasks.empty() || it->second.running >= max_per_key_)) return false;
  ++queues_[key].running;
  ++busy_;
  return true;
}

void WorkerPool::Leave(const std::string& key) {
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --busy_;
    auto it = queues_.find(key);
    if (--it->second.running == 0 && it->second.tasks.empty()) queues_.erase(it);
    queued = stopping_ || std::any_of(queues_.begin(), queues_.end(), [](const auto& q) { return !q.second.tasks.empty(); });
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

bool WorkerPool::Take(std::function<void()>* task, std::string* key) {
  if (queues_.empty() || busy_ >= capacity_) return false;
  // Start after the key served last, wrapping around: round-robin over keys.
  auto start = queues_.upper_bound(last_key_);
  for (size_t i = 0; i < queues_.size(); ++i, ++start) {
    if (start == queues_.end()) start = queues_.begin();
    Queue& q = start->second;
    if (q.tasks.empty() || q.running >= max_per_key_) continue;
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
    std::function<void()> task;
    std::string key;
    cv_.wait(lock, [&] {
      if (Take(&task, &key)) return true;
      if (!stopping_) return false;
      for (const auto& [k, q] : queues_) {
        if (!q.tasks.empty()) return false;  // queued work still to run (waits for a per-key slot)
      }
      return true;
    });
    if (!task) return;  // stopping and nothing queued
    lock.unlock();
    task();
    task = nullptr;
    lock.lock();
    --busy_;
    auto it = queues_.find(key);
    if (--it->second.running == 0 && it->second.tasks.empty()) queues_.erase(it);
    // This thread takes the next task itself (the wait checks first); others need waking only
    // to see that the pool stops.
    if (stopping_) cv_.notify_all();
  }
}

}  // namespace gpuwasm::runtime
