// SchedulerContext: the wasi_scheduler module of one instance. yield() is a cooperative suspend
// point: it lets other runnable threads proceed, counts the call, and tells the guest how its
// deadline stands. Thread-safety: yield/deadline calls from the instance's thread; yield_count()
// from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace gpuwasm::host {

class SchedulerContext {
 public:
  using Clock = std::chrono::steady_clock;
  // `grace`: yield() answers 1 ("near") once the deadline is closer than this.
  explicit SchedulerContext(std::optional<Clock::time_point> deadline = {},
                            std::chrono::milliseconds grace = std::chrono::milliseconds(100))
      : deadline_(deadline), grace_(grace) {}

  static constexpr int32_t kContinue = 0, kDeadlineNear = 1, kDeadlinePassed = 2;

  int32_t Yield();
  int64_t DeadlineRemainingMs() const;  // -1 without a deadline, never negative otherwise
  uint32_t yield_count() const { return yields_.load(std::memory_order_relaxed); }
  std::optional<Clock::time_point> deadline() const { return deadline_; }

 private:
  std::optional<Clock::time_point> deadline_;
  std::chrono::milliseconds grace_;
  std::atomic<uint32_t> yields_{0};
};

}  // namespace gpuwasm::host
