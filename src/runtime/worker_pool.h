// WorkerPool: a fixed set of threads running tasks queued per key (the tenant). Keys are served
// round-robin, so one key's backlog never makes another key's tasks wait behind it, and a key
// runs at most `max_running_per_key` tasks at once, so it cannot occupy every thread.
//
// Thread-safety: Submit() from any thread. Stop() (also run by the destructor) runs what is
// already queued, then joins the threads; Submit() after Stop() runs nothing and returns false.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuwasm::runtime {

class WorkerPool {
 public:
  WorkerPool(uint32_t threads, uint32_t max_running_per_key);
  ~WorkerPool() { Stop(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  bool Submit(const std::string& key, std::function<void()> task);
  // Runs `task` on the calling thread, now, when a thread's worth of capacity and a slot of `key`
  // are free and nothing of `key` is queued (as Submit would start it at once); returns whether it
  // ran. Saves a thread hop where the caller would only wait for the task.
  bool RunInline(const std::string& key, const std::function<void()>& task);
  // RunInline in two halves, for work that ends on another thread: TryEnter takes a thread's
  // worth of capacity and a slot of `key` when RunInline would run (true), and Leave(key) gives
  // them back once the work is done. Every TryEnter that returned true needs one Leave.
  bool TryEnter(const std::string& key);
  void Leave(const std::string& key);
  void Stop();
  // Forgets every task not yet started (shutdown of work that is done again later); returns how many.
  size_t DropQueued();
  uint32_t threads() const { return static_cast<uint32_t>(threads_.size()); }

 private:
  struct Queue {
    std::deque<std::function<void()>> tasks;
    uint32_t running = 0;
  };
  void Loop();
  // A runnable task, taken round-robin; false when none can run now.
  bool Take(std::function<void()>* task, std::string* key);

  const uint32_t max_per_key_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Queue> queues_;
  std::string last_key_;   // the key served last: the next pick starts after it
  uint32_t capacity_ = 0;  // tasks running at once: the threads' number
  uint32_t busy_ = 0;      // tasks running now, on the threads or inline
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpuwasm::runtime
