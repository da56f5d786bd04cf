// Watchdog: one background thread that trips interrupt flags at their deadlines. Arming and
// disarming are O(log n); after Disarm returns, the watchdog never touches that flag again, so
// the flag's owner may be destroyed. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

namespace gpuwasm::wasm {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  static Watchdog& Get();

  // At `when`, stores `value` into *flag unless it is already non-zero. Returns an id for Disarm.
  uint64_t Arm(Clock::time_point when, std::atomic<uint32_t>* flag, uint32_t value);
  void Disarm(uint64_t id);

  size_t armed() const;  // for tests

 private:
  Watchdog();
  void Loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_id_ = 1;
  struct Timer {
    std::atomic<uint32_t>* flag;
    uint32_t value;
  };
  std::map<std::pair<Clock::time_point, uint64_t>, Timer> timers_;
  std::unordered_map<uint64_t, Clock::time_point> when_;
  // When the thread wakes at the latest (max: only when notified).
  Clock::time_point waiting_until_ = Clock::time_point::max();
};

}  // namespace gpuwasm::wasm
