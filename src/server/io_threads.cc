#include "server/io_threads.h"

#include <algorithm>

namespace gpuwasm::server {

// One thread of the loop. `state` is its own: bit 0 set while it is held, the count above it
// grows by one each time a hold begins or ends; kOut is set by the monitor (compare-exchange
// against the value it saw a tick before, so only while that same hold lasts) when it hands the
// thread's place to another. The rest is guarded by the owner's mu_, but `retire` (its own).
struct IoThreadSlot {
  static constexpr uint64_t kOut = uint64_t{1} << 63;
  IoThreads* owner = nullptr;
  std::thread thread;
  std::atomic<uint64_t> state{0};
  uint64_t seen = 0;    // state at the monitor's last look
  bool parked = false;  // waiting to be wanted
  bool wanted = false;  // a parked thread asked to serve again
  bool retire = false;  // parks once its handler returns
};

namespace {
thread_local IoThreadSlot* t_slot = nullptr;
constexpr uint32_t kIdleTicks = 1000;  // about a second without a held thread: the monitor sleeps
}  // namespace

IoThreads::IoThreads(boost::asio::io_context& io, uint32_t serving, uint32_t max_held)
    : io_(io), serving_target_(std::max(1u, serving)), max_threads_(serving_target_ + max_held) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t i = 0; i < serving_target_; ++i) AddServer();
  monitor_ = std::thread([this] { Monitor(); });
}

IoThreads::~IoThreads() {
  io_.stop();
  Join();
}

bool IoThreads::AddServer() {
  for (auto& s : slots_) {
    if (s->parked && !s->wanted) {
      s->wanted = true;
      ++serving_;
      park_cv_.notify_all();
      return true;
    }
  }
  if (slots_.size() >= max_threads_) return false;
  slots_.push_back(std::make_unique<IoThreadSlot>());
  IoThreadSlot* slot = slots_.back().get();
  slot->owner = this;
  ++serving_;
  slot->thread = std::thread([this, slot] { Run(slot); });
  return true;
}

void IoThreads::Run(IoThreadSlot* slot) {
  t_slot = slot;
  for (;;) {
    if (io_.run_one() == 0) break;  // stopped, or nothing left to do
    if (!slot->retire) continue;
    slot->retire = false;
    std::unique_lock<std::mutex> lock(mu_);
    slot->parked = true;
    park_cv_.wait(lock, [&] { return stopping_ || slot->wanted; });
    slot->parked = false;
    if (!slot->wanted) break;
    slot->wanted = false;
  }
  t_slot = nullptr;
}

IoThreads::Held::Held() : slot_(t_slot) {
  // Nested in another hold of this thread: that one counts.
  if (slot_ != nullptr && (slot_->state.load(std::memory_order_relaxed) & 1) != 0) slot_ = nullptr;
  if (slot_ != nullptr) slot_->owner->Enter(slot_);
}

IoThreads::Held::~Held() {
  if (slot_ != nullptr) slot_->owner->Exit(slot_);
}

void IoThreads::Enter(IoThreadSlot* slot) {
  slot->state.fetch_add(1);  // odd: held (sequentially consistent with the monitor's going to sleep)
  if (monitor_asleep_.load()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      wake_monitor_ = true;
    }
    monitor_cv_.notify_one();
  }
}

void IoThreads::Exit(IoThreadSlot* slot) {
  uint64_t was = slot->state.fetch_add(1);
  if ((was & IoThreadSlot::kOut) == 0) return;
  // Its place went to another thread while it was held: serve again if fewer than the target do,
  // else park once this handler returns.
  std::lock_guard<std::mutex> lock(mu_);
  slot->state.fetch_and(~IoThreadSlot::kOut);
  if (serving_ < serving_target_) {
    ++serving_;
  } else {
    slot->retire = true;
  }
}

void IoThreads::Monitor() {
  std::unique_lock<std::mutex> lock(mu_);
  uint32_t idle = 0;
  while (!stopping_) {
    bool held = false;
    uint32_t handed = 0;
    for (auto& s : slots_) {
      uint64_t v = s->state.load();
      if ((v & 1) != 0) {
        held = true;
        // Held at the last look too, by the same hold: take it out.
        if ((v & IoThreadSlot::kOut) == 0 && v == s->seen &&
            s->state.compare_exchange_strong(v, v | IoThreadSlot::kOut)) {
          --serving_;
          ++handed;
        }
      }
      s->seen = v;
    }
    while (serving_ < serving_target_ && AddServer()) {
    }
    if (handed > 0) handoffs_.fetch_add(handed, std::memory_order_relaxed);
    idle = held ? 0 : idle + 1;
    if (idle >= kIdleTicks) {
      // Asleep until a hold begins. A Held that did not see the flag set began before it: this
      // look finds it.
      monitor_asleep_.store(true);
      bool any = std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return (s->state.load() & 1) != 0; });
      if (!any) monitor_cv_.wait(lock, [&] { return stopping_ || wake_monitor_; });
      monitor_asleep_.store(false);
      wake_monitor_ = false;
      idle = 0;
      continue;
    }
    monitor_cv_.wait_for(lock, kTick, [&] { return stopping_; });
  }
}

void IoThreads::Join() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  monitor_cv_.notify_all();
  park_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  // Nothing adds a thread now (only the monitor and the constructor do).
  for (auto& s : slots_) {
    if (s->thread.joinable()) s->thread.join();
  }
}

uint32_t IoThreads::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<uint32_t>(slots_.size());
}

}  // namespace gpuwasm::server
