// Compile slots: a bound on the compiler processes (the Wasm translator and cc, the CPU device's
// native-code cc) running at once on a node. Every gpuwasm process of the node that was given the
// same slot directory (the supervisor gives its own to its tenant workers) shares one bound: a slot
// is a lock file held with flock() by the compile that runs, so a holder that dies releases it.
// Without a directory the bound is this process's own.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "common/status.h"

namespace gpuwasm {

// Sets the bound: `slots` compiles at once, shared through `dir` when it is not empty (created if
// missing). The default, before any call: max(1, hardware threads / 2) in this process.
Status SetCompileSlots(const std::filesystem::path& dir, uint32_t slots);

class CompileSlot {
 public:
  ~CompileSlot();
  CompileSlot(const CompileSlot&) = delete;
  CompileSlot& operator=(const CompileSlot&) = delete;

 private:
  friend Result<std::unique_ptr<CompileSlot>> AcquireCompileSlot(std::chrono::steady_clock::time_point,
                                                                 const std::atomic<bool>*);
  CompileSlot() = default;
  int fd_ = -1;  // the held lock file, or -1 for a slot of this process's own count
  bool counted_ = false;
};

// Waits for a free slot until `give_up` (Unavailable then: the node is busy, try again later) or
// `cancel` (Cancelled).
Result<std::unique_ptr<CompileSlot>> AcquireCompileSlot(std::chrono::steady_clock::time_point give_up,
                                                        const std::atomic<bool>* cancel = nullptr);

}  // namespace gpuwasm
