#include "host/admission.h"

namespace gpuwasm::host {

LaunchPermit& LaunchPermit::operator=(LaunchPermit&& o) noexcept {
  if (this != &o) {
    Release();
    owner_ = std::move(o.owner_);
  }
  return *this;
}

void PermitToken::Release() const {
  if (owner != nullptr) owner->ReleaseSlot();
}

void LaunchPermit::Release() {
  if (owner_) {
    owner_->ReleaseSlot();
    owner_.reset();
  }
}

std::shared_ptr<LaunchAdmission> LaunchAdmission::Create(uint32_t max_inflight, std::chrono::milliseconds wait_limit) {
  return std::shared_ptr<LaunchAdmission>(new LaunchAdmission(max_inflight == 0 ? 1 : max_inflight, wait_limit));
}

bool LaunchAdmission::TryTake() {
  uint32_t cur = inflight_.load(std::memory_order_relaxed);
  while (cur < max_) {
    if (inflight_.compare_exchange_weak(cur, cur + 1, std::memory_order_acquire, std::memory_order_relaxed)) return true;
  }
  return false;
}

LaunchAdmission::Outcome LaunchAdmission::Acquire(std::optional<Clock::time_point> deadline, LaunchPermit* permit) {
  PermitToken token;
  Outcome o = AcquireToken(deadline, &token);
  if (o == Outcome::kAdmitted) *permit = LaunchPermit(shared_from_this(), token);
  return o;
}

LaunchAdmission::Outcome LaunchAdmission::AcquireToken(std::optional<Clock::time_point> deadline, PermitToken* token) {
  if (deadline && Clock::now() >= *deadline) {  // the deadline had already passed
    rejections_.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kDeadline;
  }
  if (!TryTake()) {
    auto until = Clock::now() + wait_;
    bool deadline_first = deadline && *deadline < until;
    if (deadline_first) until = *deadline;
    std::unique_lock<std::mutex> lock(mu_);
    waiters_.fetch_add(1);
    bool got = cv_.wait_until(lock, until, [&] { return TryTake(); });
    waiters_.fetch_sub(1);
    if (!got) {
      rejections_.fetch_add(1, std::memory_order_relaxed);
      return deadline_first ? Outcome::kDeadline : Outcome::kBusy;
    }
    // A slot freed just as the deadline passed (the device stops work at the deadline too): the
    // launch could not run anyway.
    if (deadline && Clock::now() >= *deadline) {
      lock.unlock();
      ReleaseSlot();
      rejections_.fetch_add(1, std::memory_order_relaxed);
      return Outcome::kDeadline;
    }
  }
  token->owner = this;
  return Outcome::kAdmitted;
}

uint32_t LaunchAdmission::inflight() const { return inflight_.load(std::memory_order_relaxed); }

void LaunchAdmission::ReleaseSlot() {
  inflight_.fetch_sub(1, std::memory_order_release);
  if (waiters_.load() != 0) {
    std::lock_guard<std::mutex> lock(mu_);  // pairs with the waiter's check under the mutex
    cv_.notify_one();
  }
}

}  // namespace gpuwasm::host
