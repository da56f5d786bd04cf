#include "host/scheduler.h"

#include <thread>

namespace gpuwasm::host {

int32_t SchedulerContext::Yield() {
  yields_.fetch_add(1, std::memory_order_relaxed);
  std::this_thread::yield();  // other runnable work (instances, device threads) proceeds
  if (!deadline_) return kContinue;
  auto now = Clock::now();
  if (now >= *deadline_) return kDeadlinePassed;
  if (*deadline_ - now <= grace_) return kDeadlineNear;
  return kContinue;
}

int64_t SchedulerContext::DeadlineRemainingMs() const {
  if (!deadline_) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_ - Clock::now()).count();
  return left < 0 ? 0 : left;
}

}  // namespace gpuwasm::host
