#include "host/admission.h"

namespace gpuwasm::host {

LaunchPermit& LaunchPermit::operator=(LaunchPermit&& o) noexcept {
  if (this != &o) {
    Release();
    owner_ = o.owner_;
    o.owner_ = nullptr;
  }
  return *this;
}

void LaunchPermit::Release() {
  if (owner_ != nullptr) {
    owner_->ReleaseSlot();
    owner_ = nullptr;
  }
}

std::shared_ptr<LaunchAdmission> LaunchAdmission::Create(uint32_t max_inflight, std::chrono::milliseconds wait_limit) {
  return std::shared_ptr<LaunchAdmission>(new LaunchAdmission(max_inflight == 0 ? 1 : max_inflight, wait_limit));
}

LaunchAdmission::Outcome LaunchAdmission::AcquireSlow(std::optional<Clock::time_point> deadline, LaunchPermit* permit,
                                                      std::atomic<uint32_t>* tripped) {
  const bool passed =
      tripped != nullptr ? tripped->load(std::memory_order_relaxed) != 0 : deadline && Clock::now() >= *deadline;
  if (passed) {  // the deadline had already passed
    rejections_.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kDeadline;
  }
  if (!TryTake(/*fresh=*/false)) {
    auto until = Clock::now() + wait_;
    bool deadline_first = deadline && *deadline < until;
    if (deadline_first) until = *deadline;
    std::unique_lock<std::mutex> lock(mu_);
    waiters_.fetch_add(1);
    bool got = cv_.wait_until(lock, until, [&] { return TryTake(/*fresh=*/true); });
    waiters_.fetch_sub(1);
    if (!got) {
      rejections_.fetch_add(1, std::memory_order_relaxed);
      if (!deadline_first) return Outcome::kBusy;
      if (tripped != nullptr) tripped->store(1, std::memory_order_relaxed);
      return Outcome::kDeadline;
    }
    // A slot freed just as the deadline passed (the device stops work at the deadline too): the
    // launch could not run anyway.
    if (deadline && Clock::now() >= *deadline) {
      lock.unlock();
      ReleaseSlot();
      rejections_.fetch_add(1, std::memory_order_relaxed);
      if (tripped != nullptr) tripped->store(1, std::memory_order_relaxed);
      return Outcome::kDeadline;
    }
  }
  *permit = LaunchPermit(this);
  return Outcome::kAdmitted;
}

uint32_t LaunchAdmission::inflight() const {
  // Released first: read the other way round, a release between the two reads could make
  // released exceed taken for a moment.
  uint64_t released = released_.load(std::memory_order_acquire);
  uint64_t taken = taken_.load(std::memory_order_acquire);
  return taken > released ? static_cast<uint32_t>(taken - released) : 0;
}

void LaunchAdmission::ReleaseSlot() {
  // seq_cst, paired with the waiter's increment of waiters_ and its fresh read of released_:
  // either the waiter sees this release, or this sees the waiter and wakes it.
  released_.fetch_add(1, std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_seq_cst) != 0) {
    std::lock_guard<std::mutex> lock(mu_);  // the waiter checks under the mutex: no lost wake-up
    cv_.notify_one();
  }
}

}  // namespace gpuwasm::host
