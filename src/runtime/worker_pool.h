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
  // For work run by the caller or ending on another thread: TryEnter takes a thread's worth of
  // capacity and a slot of `key` when they are free and nothing of `key` is queued (as Submit would
  // start it at once; true), and Leave(key) gives them back once the work is done. Every TryEnter
  // that returned true needs one Leave.
  bool TryEnter(const std::string& key);
  void Leave(const std::string& key);
  // Work that starts here and ends on another thread, queued when TryEnter would fail: once
  // taken it keeps its slot of `key` until Leave(key). A starter is called with may_block false
  // by the thread whose Leave freed a slot (no thread hop; it must start only what needs no
  // blocking, else return false, and a pool thread calls it again), or with true on a pool
  // thread (it must start the work and return true).
  using Starter = std::function<bool(bool may_block)>;
  bool SubmitStarter(const std::string& key, Starter start);
  void Stop();
  // Forgets every task not yet started (shutdown of work that is done again later); returns how many.
  size_t DropQueued();
  uint32_t threads() const { return static_cast<uint32_t>(threads_.size()); }

 private:
  struct Task {
    std::function<void()> run;  // a task (Submit), or
    Starter start;              // a starter (SubmitStarter)
  };
  struct Queue {
    std::deque<Task> tasks;
    uint32_t running = 0;
  };
  void Loop();
  // A runnable task, taken round-robin (only starters when `starters_only`); false when none can
  // run now.
  bool Take(Task* task, std::string* key, bool starters_only = false);
  // Gives back the capacity and the slot of `key` a finished task held (mu_ held).
  void ReleaseLocked(const std::string& key);
  bool AnyQueued() const;

  const uint32_t max_per_key_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Queue> queues_;
  std::string last_key_;   // the key served last: the next pick starts after it
  uint32_t capacity_ = 0;  // tasks running at once: the threads' number
  uint32_t busy_ = 0;      // tasks running now, on the threads or inline
  // Starters taken by a Leave that could not start them without blocking: their slots are held,
  // a pool thread starts them next.
  std::deque<Task> handoff_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpuwasm::runtime
