// The threads that run the server's event loop (an io_context), kept at their configured number
// while some of them are held by a call that may last: an in-process guest run to its end on the
// I/O thread that read its request (no hand-over to a pool thread and none back; ADR 0026).
//
// A thread marks such a call with a Held scope. A monitor thread looks at the held threads every
// kTick while any is held: one still in the same call as at its last look (held between one and
// two ticks) is taken out of the count, and a spare thread (parked, or new) serves in its place.
// When the held thread's call ends it serves again if fewer than `serving` do, else it parks after
// its handler. Threads in all: at most `serving + max_held`; past that a held thread keeps its
// place (every guest slot of the node is taken then anyway).
//
// The monitor sleeps (no wake-ups at all) after a second without a held thread; the next Held
// wakes it.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gpuwasm::server {

struct IoThreadSlot;

class IoThreads {
 public:
  static constexpr std::chrono::microseconds kTick{1000};

  // Starts `serving` threads running `io`.
  IoThreads(boost::asio::io_context& io, uint32_t serving, uint32_t max_held);
  ~IoThreads();
  IoThreads(const IoThreads&) = delete;
  IoThreads& operator=(const IoThreads&) = delete;

  // Waits for every thread; call after io.stop(). Held calls end first.
  void Join();

  // For its scope, the calling thread (when it is one of these; else it does nothing) is in a call
  // that may last.
  class Held {
   public:
    Held();
    ~Held();
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;

   private:
    IoThreadSlot* slot_;
  };

  // For tests and metrics: threads made in all (spares included), and hand-overs so far.
  uint32_t threads() const;
  uint64_t handoffs() const { return handoffs_.load(std::memory_order_relaxed); }

 private:
  void Run(IoThreadSlot* slot);
  void Monitor();
  void Enter(IoThreadSlot* slot);
  void Exit(IoThreadSlot* slot);
  // A parked thread woken, or a new one made, to serve (mu_ held); false at the bound.
  bool AddServer();

  boost::asio::io_context& io_;
  const uint32_t serving_target_;
  const uint32_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable monitor_cv_;  // the monitor's tick and its sleep
  std::condition_variable park_cv_;     // parked threads
  std::vector<std::unique_ptr<IoThreadSlot>> slots_;
  uint32_t serving_ = 0;  // in the loop, neither taken out (held past a tick) nor parking
  bool stopping_ = false;
  bool wake_monitor_ = false;
  std::atomic<bool> monitor_asleep_{false};
  std::atomic<uint64_t> handoffs_{0};
  std::thread monitor_;
};

}  // namespace gpuwasm::server
