#include "wasm/watchdog.h"

namespace gpuwasm::wasm {

Watchdog& Watchdog::Get() {
  // Leaked on purpose: the thread outlives static destruction at process exit.
  static Watchdog* w = new Watchdog();
  return *w;
}

Watchdog::Watchdog() {
  std::thread([this] { Loop(); }).detach();
}

uint64_t Watchdog::Arm(Clock::time_point when, std::atomic<uint32_t>* flag, uint32_t value) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_id_++;
  timers_.emplace(std::make_pair(when, id), Timer{flag, value});
  when_.emplace(id, when);
  // The thread wakes by waiting_until_ anyway and then sleeps until the earliest timer: only an
  // earlier one needs it woken. (Waking it at every arm cost each invocation a thread switch.)
  if (when < waiting_until_) cv_.notify_one();
  return id;
}

void Watchdog::Disarm(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = when_.find(id);
  if (it == when_.end()) return;
  timers_.erase({it->second, id});
  when_.erase(it);
}

size_t Watchdog::armed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timers_.size();
}

void Watchdog::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (timers_.empty()) {
      // Nothing armed: sleep until the time it was going to wake anyway (the earliest timer, since
      // disarmed, so that a run of invocations arming and disarming wakes it once per such
      // deadline), then until an Arm.
      Clock::time_point until = waiting_until_;
      if (until != Clock::time_point::max() && Clock::now() < until) {
        cv_.wait_until(lock, until);
      } else {
        waiting_until_ = Clock::time_point::max();
        cv_.wait(lock);
      }
      continue;
    }
    auto first = timers_.begin();
    // A copy: Disarm may erase this node while we wait, and wait_until reads the time again.
    const Clock::time_point when = first->first.first;
    if (Clock::now() < when) {
      waiting_until_ = when;
      cv_.wait_until(lock, when);
      continue;
    }
    uint32_t expected = 0;
    first->second.flag->compare_exchange_strong(expected, first->second.value);
    when_.erase(first->first.second);
    timers_.erase(first);
  }
}

}  // namespace gpuwasm::wasm
