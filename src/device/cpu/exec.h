// Running one kernel launch of a decoded Program on host threads.
//
// Thread blocks (CTAs) are independent work items pulled by every participating thread (the
// stream's own thread plus the device pool). Inside a CTA, warps of 32 lanes run in lockstep:
// the lanes with the lowest pc run together (lanes re-merge when their pcs meet), bar.sync parks
// lanes until every live thread of the CTA arrives. Every global, shared, local and parameter
// access is bounds-checked before it happens: the first violation stops the launch with a
// DeviceFault naming the kernel, PTX line and address. A kernel with native code (native.h) runs
// its compiled blocks instead of the interpreter, under the same checks and scheduling.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/status.h"
#include "device/cpu/native.h"
#include "device/cpu/program.h"
#include "device/device.h"

namespace gpuwasm::device::cpu {

// Where generic addresses of shared and local memory live (global addresses are elsewhere).
inline constexpr uint64_t kSharedWindow = 0x0000'0100'0000'0000ull;
inline constexpr uint64_t kLocalWindow = 0x0000'0200'0000'0000ull;
inline constexpr uint64_t kGlobalBase = 0x0000'1000'0000'0000ull;

// The global memory a launch may touch: sorted, non-overlapping regions, kept alive by owners.
struct MemoryView {
  struct Region {
    uint64_t base = 0;
    uint64_t size = 0;
    uint8_t* host = nullptr;
  };
  std::vector<Region> regions;  // sorted by base
  std::vector<std::shared_ptr<void>> keep_alive;
  // Host address of [addr, addr + bytes), or nullptr when it is not inside one region.
  uint8_t* Resolve(uint64_t addr, uint64_t bytes) const;
};

struct LaunchSpec {
  std::shared_ptr<const Program> program;
  const KernelEntry* kernel = nullptr;
  LaunchConfig config;
  std::vector<uint8_t> params;
  MemoryView memory;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const std::atomic<bool>* cancel = nullptr;  // set by Stream::Cancel
  std::shared_ptr<const NativeCode> native;   // the kernel's native code, else interpreted
  uint32_t runners = 1;                       // threads that may call Work (sizes the CTA claims)
};

// Host memory one participating thread holds to run CTAs of `config` (registers of every thread,
// shared and local memory, call frames, per-instruction state), zero-filled for each launch: what
// a launch costs beyond its buffers, charged to the context's quota (cpu_device.cc).
uint64_t CtaScratchBytes(const Program& p, const LaunchConfig& config);

// State shared by the threads executing one launch.
class LaunchRun {
 public:
  explicit LaunchRun(LaunchSpec spec);
  // Executes CTAs until none are left (or the launch failed). Called by each participating
  // thread; returns when this thread has nothing more to do.
  void Work();
  // Blocks until no CTA is left to start and no participant is still inside Work().
  void Wait();
  Status status() const;
  uint64_t thread_instructions() const { return thread_insts_.load(); }
  bool has_work() const { return next_cta_.load() < total_ctas_ && !failed_.load(); }

  void Fail(Status s);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // Fails the launch when it is cancelled or past its deadline; false then (or when it failed).
  bool CheckStop(const std::string& kernel);
  const LaunchSpec& spec() const { return spec_; }
  void AddInstructions(uint64_t n) { thread_insts_.fetch_add(n, std::memory_order_relaxed); }

 private:
  LaunchSpec spec_;
  uint64_t total_ctas_;
  alignas(64) std::atomic<uint64_t> next_cta_{0};  // the only line every worker writes (once per chunk)
  std::atomic<bool> failed_{false};
  int active_ = 0;  // threads inside Work(), guarded by mu_
  std::condition_variable cv_;
  alignas(64) std::atomic<uint64_t> thread_insts_{0};  // added to once per worker, at its end
  mutable std::mutex mu_;
  Status status_;
};

}  // namespace gpuwasm::device::cpu
