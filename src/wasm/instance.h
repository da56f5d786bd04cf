// Instance: one live instantiation of a Module, with its own linear memory and tables.
//
// Each invocation gets a fresh Instance. Call() runs an exported entry point on the calling
// thread until it returns, exits (proc_exit), traps, or is interrupted (deadline or Interrupt()).
// An instance whose call trapped or was interrupted is poisoned: further calls are refused.
//
// Thread-safety: Call() on one thread at a time; Interrupt() and memory() reads from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "wasm/module.h"
#include "wasm/trap.h"
#include "wasm/wasm_rt.h"

namespace gpuwasm::wasm {

using Clock = std::chrono::steady_clock;

struct InstanceLimits {
  uint32_t max_memory_pages = 16384;  // 1 GiB; memory.grow beyond fails (-1)
  uint32_t max_table_elements = 1u << 20;
};

struct CallOutcome {
  TrapKind trap = TrapKind::kNone;   // kNone: returned or exited normally
  bool exited = false;               // the guest called proc_exit
  int32_t exit_code = 0;             // proc_exit code, or an i32 entry's return value
  bool returned_value = false;       // the entry returned an i32
  std::vector<TrapFrame> backtrace;  // on a trap: the guest functions on the stack, innermost first
  bool ok() const { return trap == TrapKind::kNone; }
};

class Instance {
 public:
  // Instantiates `module`. `host` is passed to every host function the guest calls (the import
  // instance pointer of wasm2c). Instantiation runs the module's start function and, for WASI
  // reactors, its _initialize export, under `deadline`. A trap during either is an error.
  static Result<std::unique_ptr<Instance>> Create(std::shared_ptr<const Module> module, void* host,
                                                  const InstanceLimits& limits,
                                                  std::optional<Clock::time_point> deadline = {});
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  // Runs export `name`, which must be () -> () or () -> i32. Errors: no such export, wrong
  // signature, or a poisoned instance. Traps, exits and deadlines come back in CallOutcome.
  Result<CallOutcome> Call(std::string_view name, std::optional<Clock::time_point> deadline = {});

  // Stops a running call at its next function entry or loop header (kInterrupted).
  void Interrupt() { interrupt_.store(rt::kInterruptRequested); }

  // The exported memory named "memory", or nullptr. Valid for the instance's lifetime; its size
  // may grow during a call.
  wasm_rt_memory_t* memory() const { return memory_; }
  const Module& module() const { return *module_; }
  bool poisoned() const { return poisoned_; }

 private:
  Instance() = default;
  // Runs fn(instance) as a guest call under `deadline`; fills outcome.
  void Run(void (*thunk)(Instance*, void*), void* arg, std::optional<Clock::time_point> deadline, CallOutcome* outcome);

  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };

  std::shared_ptr<const Module> module_;
  // The wasm2c instance struct (aligned_alloc'ed). What instantiation set up in it is freed by the
  // module's glue in the destructor, before the struct itself goes.
  std::unique_ptr<void, FreeDeleter> state_;
  void* raw_ = nullptr;  // state_.get(), as the generated code takes it
  bool instantiated_ = false;
  wasm_rt_memory_t* memory_ = nullptr;        // exported memory
  wasm_rt_memory_t* fault_memory_ = nullptr;  // the instance's memory, exported or not
  rt::Limits limits_;
  std::atomic<uint32_t> interrupt_{0};
  bool poisoned_ = false;
};

// Ends the guest call running on this thread with `code` as its exit status (WASI proc_exit).
// Only from a host function called by the guest.
[[noreturn]] void ExitCurrentCall(int32_t code);

}  // namespace gpuwasm::wasm
