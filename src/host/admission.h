// LaunchAdmission: back-pressure for one instance's launches. A launch is admitted while fewer
// than `max_inflight` of the instance's launches have not completed; otherwise it waits for a slot
// until the invocation's deadline or the wait limit. Every refusal counts one rejection.
//
// A LaunchPermit is the RAII proof of admission: its slot is released exactly once, when the
// permit is destroyed or Release()d, whatever path the code takes. The guest interface moves it
// into the launch's device completion (device::Completion is move-only), so the slot comes back
// when the device has finished with the launch, or when it drops the launch without running it.
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

namespace gpuwasm::host {

class LaunchAdmission;

// One admitted launch's slot. One word: a completion holding it and its instance's context stays
// within device::Completion's inline room. The admission must outlive its permits (the guest
// interface stops its stream, which completes or drops every launch, before its admission goes).
class LaunchPermit {
 public:
  LaunchPermit() = default;
  LaunchPermit(LaunchPermit&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
  LaunchPermit& operator=(LaunchPermit&& o) noexcept;
  LaunchPermit(const LaunchPermit&) = delete;
  LaunchPermit& operator=(const LaunchPermit&) = delete;
  ~LaunchPermit() { Release(); }
  // Gives the slot back now (once; later calls and the destructor do nothing).
  void Release();
  bool valid() const { return owner_ != nullptr; }

 private:
  friend class LaunchAdmission;
  explicit LaunchPermit(LaunchAdmission* owner) : owner_(owner) {}
  LaunchAdmission* owner_ = nullptr;
};

class LaunchAdmission : public std::enable_shared_from_this<LaunchAdmission> {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Outcome { kAdmitted, kBusy, kDeadline };

  static std::shared_ptr<LaunchAdmission> Create(uint32_t max_inflight, std::chrono::milliseconds wait_limit);

  // Waits for a slot until `deadline` (if any) or the wait limit, whichever is first; the slot is
  // `permit`'s when admitted. `tripped`, when given, answers "has the deadline already passed?" in
  // place of reading the clock (a Watchdog sets it at the deadline: one load instead of a clock
  // read per launch). Waiting for a slot still ends at `deadline` exactly, and sets it when it
  // does, so the next launch is refused at once even if the Watchdog has not run yet.
  Outcome Acquire(std::optional<Clock::time_point> deadline, LaunchPermit* permit,
                  std::atomic<uint32_t>* tripped = nullptr) {
    // Inline fast path (every guest launch): the deadline not tripped and a free slot.
    if (tripped != nullptr && tripped->load(std::memory_order_relaxed) == 0 && TryTake(/*fresh=*/false)) {
      *permit = LaunchPermit(this);
      return Outcome::kAdmitted;
    }
    return AcquireSlow(deadline, permit, tripped);
  }

  uint32_t inflight() const;
  uint64_t rejections() const { return rejections_.load(std::memory_order_relaxed); }
  uint32_t max_inflight() const { return max_; }

 private:
  friend class LaunchPermit;
  LaunchAdmission(uint32_t max_inflight, std::chrono::milliseconds wait_limit)
      : max_(max_inflight), wait_(wait_limit) {}
  void ReleaseSlot();
  Outcome AcquireSlow(std::optional<Clock::time_point> deadline, LaunchPermit* permit, std::atomic<uint32_t>* tripped);

  // Takes a slot if one is free. `fresh`: read the release count again first (a waiter, which
  // must see every release); otherwise the acquirers' cached copy serves until it says "full".
  bool TryTake(bool fresh) {  // inline: the guest launch fast path takes its slot here
    uint64_t taken = taken_.load(std::memory_order_relaxed);
    uint64_t seen = fresh ? released_.load(std::memory_order_seq_cst) : released_seen_.load(std::memory_order_relaxed);
    for (;;) {
      if (taken - seen >= max_) {
        if (fresh) return false;
        // The cached count says full: look at the real one (slots may have come back).
        fresh = true;
        seen = released_.load(std::memory_order_seq_cst);
        continue;
      }
      if (taken_.compare_exchange_weak(taken, taken + 1, std::memory_order_acquire, std::memory_order_relaxed)) break;
    }
    if (fresh) {
      // Keep the copy moving forward only (another acquirer may have stored a newer one).
      uint64_t old = released_seen_.load(std::memory_order_relaxed);
      while (old < seen && !released_seen_.compare_exchange_weak(old, seen, std::memory_order_relaxed)) {
      }
    }
    return true;
  }

  const uint32_t max_;
  const std::chrono::milliseconds wait_;
  // In flight = taken - released. The two counts live on separate cache lines and each is
  // written by one side only: acquirers (the guest's thread) write taken_, the device's
  // completions write released_. An acquirer compares against its cached copy of released_
  // and reads the real one only when that copy says the instance is full, so the launch fast
  // path never pulls a line the device thread keeps writing. The mutex and condition variable
  // are only used while some launch waits for a slot.
  alignas(64) std::atomic<uint64_t> taken_{0};
  std::atomic<uint64_t> released_seen_{0};  // acquirers' copy of released_ (a lower bound)
  std::atomic<uint64_t> rejections_{0};
  alignas(64) std::atomic<uint64_t> released_{0};
  std::atomic<uint32_t> waiters_{0};
  alignas(64) std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace gpuwasm::host
