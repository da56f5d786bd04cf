// A launch: CTAs handed out to the participating threads, each running them with a CtaExec
// (cta_exec.h).
#include "device/cpu/exec.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>

#include "device/cpu/cta_exec.h"

namespace gpuwasm::device::cpu {

uint8_t* MemoryView::Resolve(uint64_t addr, uint64_t bytes) const {
  auto it =
      std::upper_bound(regions.begin(), regions.end(), addr, [](uint64_t a, const Region& r) { return a < r.base; });
  if (it == regions.begin()) return nullptr;
  --it;
  if (addr - it->base > it->size || bytes > it->size - (addr - it->base)) return nullptr;
  return it->host + (addr - it->base);
}

LaunchRun::LaunchRun(LaunchSpec spec) : spec_(std::move(spec)) { total_ctas_ = spec_.config.grid.count(); }

void LaunchRun::Fail(Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.ok()) status_ = std::move(s);
  failed_.store(true);
}

Status LaunchRun::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

uint64_t CtaScratchBytes(const Program& p, const LaunchConfig& config) {
  const uint64_t threads = config.block.count();
  const uint64_t lanes = (threads + 31) / 32 * 32;
  return lanes * p.slot_count * sizeof(uint64_t)             // registers
         + p.static_shared_bytes + config.shared_bytes + 16  // shared memory
         + lanes * p.local_bytes + 16                        // local memory
         + lanes * (1 + kMaxCallDepth * sizeof(Frame))       // call depth and frames
         + p.code.size() * (sizeof(MemoryView::Region) + 1)  // per-instruction state
         + threads * 2 * sizeof(uint32_t);                   // native next[]
}

bool LaunchRun::CheckStop(const std::string& kernel) {
  if (failed()) return false;
  if (spec_.cancel != nullptr && spec_.cancel->load(std::memory_order_relaxed)) {
    Fail(Status::Cancelled("launch of '" + kernel + "' was cancelled"));
    return false;
  }
  if (spec_.deadline && std::chrono::steady_clock::now() >= *spec_.deadline) {
    Fail(Status::DeadlineExceeded("launch of '" + kernel + "' passed its deadline"));
    return false;
  }
  return true;
}

void LaunchRun::Work() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++active_;
  }
  const Program& p = *spec_.program;
  // Scratch (registers, shared and local memory) is per launch and per thread, zero-filled:
  // nothing of another launch is ever visible to this one.
  std::unique_ptr<CtaExec> exec;
  // Between CTAs too, by the clock: a CTA shorter than the in-CTA check interval (a grid of tiny
  // blocks) would otherwise never look at the deadline. Every 4th CTA: a clock read costs about
  // as much as the smallest CTA (one thread, a few instructions) runs.
  uint32_t since_check = 0;
  // CTAs are claimed in runs, guided: each claim takes a share of what is left (1/(2 x runners)),
  // so the claims shrink towards the end and keep the last CTAs spread over the threads. One
  // fetch_add per CTA made the workers fight over its cache line for grids of many short CTAs;
  // runs of at most 32 CTAs interleaved the threads' streams through memory finely enough to cost
  // vector add on two threads a fifth of its time against one contiguous half each.
  const uint64_t share = 2 * uint64_t{std::max<uint32_t>(spec_.runners, 1)};
  const uint64_t least = std::clamp<uint64_t>(total_ctas_ / 256, 1, 32);
  for (bool more = true; more && !failed();) {
    const uint64_t seen = next_cta_.load(std::memory_order_relaxed);
    if (seen >= total_ctas_) break;
    const uint64_t chunk = std::max(least, (total_ctas_ - seen) / share);
    const uint64_t first = next_cta_.fetch_add(chunk);
    if (first >= total_ctas_) break;
    const uint64_t end = std::min(total_ctas_, first + chunk);
    for (uint64_t cta = first; more && cta < end; ++cta) {
      if (++since_check == 4) {
        since_check = 0;
        if (!CheckStop(spec_.kernel->name)) {
          more = false;
          break;
        }
      }
      if (!exec) {
        // Charged to the context before the launch was queued; the host may still be short of it.
        try {
          exec = std::make_unique<CtaExec>(*this, p, *spec_.kernel);
        } catch (const std::bad_alloc&) {
          Fail(Status::ResourceExhausted("out of host memory for the scratch of a CTA of '" + spec_.kernel->name +
                                         "' (" + std::to_string(CtaScratchBytes(p, spec_.config)) + " bytes)"));
          more = false;
          break;
        }
      }
      more = exec->Run(cta) && !failed();
    }
  }
  if (exec) AddInstructions(exec->TakeInstructions());
  std::lock_guard<std::mutex> lock(mu_);
  --active_;
  cv_.notify_all();
}

void LaunchRun::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return active_ == 0 && (next_cta_.load() >= total_ctas_ || failed_.load()); });
}

}  // namespace gpuwasm::device::cpu
