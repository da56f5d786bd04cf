#include "host/admission.h"

namespace gpuwasm::host {

LaunchPermit& LaunchPermit::operator=(LaunchPermit&& o) noexcept {
  if (this != &o) {
    Release();
    owner_ = std::move(o.owner_);
  }
  return *this;
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

LaunchAdmission::Outcome LaunchAdmission::Acquire(std::optional<Clock::time_point> deadline, LaunchPermit* permit) {
  std::unique_lock<std::mutex> lock(mu_);
  auto now = Clock::now();
  if (deadline && now >= *deadline) {  // the deadline had already passed
    rejections_.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kDeadline;
  }
  auto until = now + wait_;
  bool deadline_first = deadline && *deadline < until;
  if (deadline_first) until = *deadline;
  if (!cv_.wait_until(lock, until, [&] { return inflight_ < max_; })) {
    rejections_.fetch_add(1, std::memory_order_relaxed);
    return deadline_first ? Outcome::kDeadline : Outcome::kBusy;
  }
  // A slot freed just as the deadline passed (the device stops work at the deadline too): the
  // launch could not run anyway.
  if (deadline && Clock::now() >= *deadline) {
    rejections_.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kDeadline;
  }
  ++inflight_;
  lock.unlock();
  *permit = LaunchPermit(shared_from_this());
  return Outcome::kAdmitted;
}

uint32_t LaunchAdmission::inflight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return inflight_;
}

void LaunchAdmission::ReleaseSlot() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --inflight_;
  }
  cv_.notify_one();
}

}  // namespace gpuwasm::host
