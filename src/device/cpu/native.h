// Native code for CPU-device kernels: a kernel's PTX, decoded, translated to C and compiled by the
// system C compiler (the one that compiles guests' Wasm), then loaded with dlopen.
//
// The translation splits the kernel into basic blocks (a bar.sync or bar.warp.sync ends one).
// Each block becomes a C function that runs the block for every thread of the CTA waiting to enter
// it, thread after thread: within a block threads do not interact (a barrier would end it), so one thread may run
// the whole block before the next. The executor (scheduler.cc) picks the lowest block some thread waits
// for, exactly as its interpreter picks the lowest pc, releases bar.sync when every live thread
// arrived, and checks for cancellation and deadlines between blocks.
//
// Registers are the interpreter's register file (slot-major across the CTA), so constants and
// special registers are filled the same way. Every memory access is checked as in the
// interpreter: a global access against the region the instruction hit last, then through the
// executor (which faults with the kernel, PTX line and address); shared accesses against the
// CTA's shared memory; local and generic ones always through the executor. Nothing a kernel names
// reaches the C source: it holds only numbers (slots, offsets, immediates) the translator wrote.
//
// Instructions the C writer covers (integer and predicate arithmetic, f32/f64 add, sub, mul and
// fma rounding to nearest, comparisons, moves, loads and stores, 32- and 64-bit global and shared
// atomics, branches, bar.sync, exit) become C. Every other one (warp-level instructions, other
// atomics, calls and .func returns, the rest of the arithmetic) is a host block: a block of that
// one instruction, which the executor runs through NativeCtx::host_exec with the interpreter's
// semantics, warp by warp, for the threads waiting for it (so a warp's lanes meet there as in the
// interpreter). Only trap and warp-synchronous volatile shared-memory code keep a kernel interpreted.
//
// Thread-safety: NativeCode is immutable once loaded; the cache is internally synchronised.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/shared_library.h"
#include "common/status.h"
#include "device/cpu/program.h"

// The state a block function works on, defined once: compiled here as C++ (NativeCtx) and written
// as C into every generated source (kNativeCtxC), so the two cannot drift apart.
#define GPUWASM_NATIVE_CTX_DEFINITION                                                                  \
  struct gw_region {                                                                                   \
    uint64_t base, size;                                                                               \
    uint8_t* host;                                                                                     \
  };                                                                                                   \
  struct gw_ctx {                                                                                      \
    uint64_t* regs; /* slot s of thread t at regs[s * stride + t] */                                   \
    uint64_t stride;                                                                                   \
    uint32_t* next;  /* per thread: the block it waits to run | kNativeWait, or kNativeExited */       \
    uint32_t* count; /* per block: how many threads wait to run it (not at a barrier) */               \
    uint8_t* shared;                                                                                   \
    uint64_t shared_size;                                                                              \
    const uint8_t* params;                                                                             \
    uint64_t params_size;                                                                              \
    struct gw_region* regions; /* per instruction: the global region its last access hit */            \
    /* Host address for an access the fast path does not cover (space: Mem, 4 for a kernel             \
       parameter, 5 to fault a misaligned atomic); NULL after it faulted the launch. */                \
    uint8_t* (*address)(struct gw_ctx * c, uint32_t pc, uint32_t space, uint64_t addr, uint32_t bytes, \
                        uint32_t thread, int store);                                                   \
    void* host;                                                                                        \
    uint64_t instructions; /* thread-instructions executed */                                          \
    uint32_t threads;                                                                                  \
    uint32_t waiting;   /* threads at a barrier */                                                     \
    uint32_t all;       /* every live thread waits for the block called (none at a barrier) */         \
    uint32_t live;      /* threads not exited */                                                       \
    uint32_t first;     /* a live thread */                                                            \
    uint32_t go;        /* set by an `all` call when every thread goes on alike: the next block, or    \
                           kNativeExited; else kNativeApart (next[] was written) */                    \
    uint32_t exited;    /* threads that exited in the call */                                          \
    uint32_t flat;      /* the block is one-dimensional: thread t has %tid.x = t */                    \
    uint8_t* ahead_off; /* per block: its accesses were not contiguous here; no check-ahead */         \
    /* Runs the host block `block` (instruction `pc` alone) for every thread waiting for it (every     \
       live one when `all`), warp by warp with the interpreter's semantics, and moves them on to       \
       `fall`; 0, or 1 when it faulted the launch. */                                                  \
    int (*host_exec)(struct gw_ctx * c, uint32_t pc, uint32_t block, uint32_t fall);                   \
    uint32_t ctaid[3]; /* the CTA's %ctaid (the register file has it only where NativeCode says) */    \
  };
GPUWASM_NATIVE_CTX_DEFINITION
#define GPUWASM_NATIVE_STRINGIFY(...) #__VA_ARGS__
#define GPUWASM_NATIVE_TEXT(...) GPUWASM_NATIVE_STRINGIFY(__VA_ARGS__)

namespace gpuwasm::device::cpu {

using NativeCtx = ::gw_ctx;
using NativeRegion = ::gw_region;
// The same definition as C source (comments are gone: the preprocessor drops them first).
inline constexpr const char* kNativeCtxC = GPUWASM_NATIVE_TEXT(GPUWASM_NATIVE_CTX_DEFINITION);

inline constexpr uint32_t kNativeWait = 0x80000000u;
inline constexpr uint32_t kNativeExited = 0x7fffffffu;
inline constexpr uint32_t kNativeApart = 0xffffffffu;  // NativeCtx::go: next[] was written
// NativeCtx::address's spaces beyond Mem: a kernel parameter; a misaligned atomic (it faults).
inline constexpr uint32_t kNativeParamSpace = 4, kNativeMisalignedAtomic = 5;

// A block function: 0, or 1 when an access faulted (the launch has failed).
using NativeBlockFn = int (*)(NativeCtx*);

// A translated kernel: C source and its shape.
struct NativeSource {
  std::string c;
  uint32_t blocks = 0;
  uint32_t entry_block = 0;
  std::vector<uint32_t> starts;  // each block's first pc, ascending
  // Whether the register file must hold %ctaid for every thread: C reads NativeCtx::ctaid, but a
  // host block (the interpreter's code) or a kernel with calls reads the registers.
  bool ctaid_registers = true;
};

// Translates `kernel` of `program`; Unsupported (naming the instruction and PTX line) when it
// uses anything the translation does not cover.
Result<NativeSource> TranslateKernel(const Program& program, const KernelEntry& kernel);

// A compiled, loaded kernel.
class NativeCode {
 public:
  ~NativeCode() = default;
  NativeCode(const NativeCode&) = delete;
  NativeCode& operator=(const NativeCode&) = delete;
  uint32_t entry_block() const { return entry_; }
  const std::vector<NativeBlockFn>& blocks() const { return blocks_; }
  // The block starting at `pc` (a return site: every pc after a call starts one).
  uint32_t BlockAt(uint32_t pc) const {
    return static_cast<uint32_t>(std::lower_bound(starts_.begin(), starts_.end(), pc) - starts_.begin());
  }
  bool ctaid_registers() const { return ctaid_registers_; }  // NativeSource::ctaid_registers

  // Compiles `src` with `cc` (in a child process under limits) and loads it. A `background`
  // compile runs at nice 19, so that it takes only CPU time the launches leave (it must never slow
  // the run it is meant to speed up); one that did not finish in time is Unavailable (ask again).
  static Result<std::shared_ptr<const NativeCode>> Compile(const NativeSource& src, const std::string& cc,
                                                           bool background = false);

 private:
  NativeCode() = default;
  SharedLibrary library_;  // what blocks_ point into
  uint32_t entry_ = 0;
  std::vector<NativeBlockFn> blocks_;
  std::vector<uint32_t> starts_;
  bool ctaid_registers_ = true;
};

// When kernels get native code.
enum class NativeMode {
  kOff,     // always interpret
  kAuto,    // compile in the background once interpreting the kernel cost enough (NativePolicy)
  kAlways,  // compile before a kernel's first launch (tests, benchmarks)
};

// kAuto compiles a kernel once the interpreter ran at least `threshold` of its thread-instructions
// and spent at least `payback` times the compile's estimated CPU time on it (summed over launches
// and over loads of the same PTX in this process). A run that ends before its code is ready then
// lost at most 1/payback of its time to the compile.
struct NativePolicy {
  NativeMode mode = NativeMode::kAuto;
  uint64_t threshold = 0;
  double payback = 10;
};

// The CPU time a compile of `c_bytes` of C is expected to take here: a model per optimisation
// level, scaled by how this process's compiles compared with it.
std::chrono::nanoseconds EstimatedCompileCost(size_t c_bytes);

// Threads of this process that compile native code in the background (0 or 1: one is started at
// the first background compile and lives as long as the process).
size_t NativeCompileThreads();

// A kernel's native tier: whether and when to compile it (ADR 0008), and its NativeCode once
// compiled; shared by every load of the same translation in this process (a
// serverless runtime loads a tenant's module afresh for each invocation).
class NativeTier : public std::enable_shared_from_this<NativeTier> {
 public:
  // The native tier of `source` (nullptr source: the kernel cannot be translated).
  static std::shared_ptr<NativeTier> For(Result<NativeSource> source);

  // The code when it is ready. Counts `instructions` the interpreter ran for the kernel, and
  // starts a compile when the mode asks for one (kAlways: compiles now, in this thread).
  std::shared_ptr<const NativeCode> Get(NativeMode mode, const std::string& cc);
  void AddInterpreted(uint64_t instructions, std::chrono::nanoseconds time, const NativePolicy& policy,
                      const std::string& cc);
  // Why the kernel has no native code ("" while it may still get some).
  std::string why_not() const;

 private:
  void StartCompile(bool wait, const std::string& cc);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const NativeSource> source_;  // null: unsupported
  std::string error_;
  bool compiling_ = false, failed_ = false;
  uint64_t interpreted_ = 0;
  std::chrono::nanoseconds interpreted_time_{0};
  std::shared_ptr<const NativeCode> code_;
};

}  // namespace gpuwasm::device::cpu
