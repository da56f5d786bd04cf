// Implementation of wasm-rt.h for wasm2c 1.0.32 output (see wasm_rt.h for the contract).
#include "wasm/wasm_rt.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unwind.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace gpuwasm::wasm::rt {
namespace {

constexpr uint64_t kPageSize = 65536;
constexpr uint32_t kMaxPages = 65535;  // wasm_rt_memory_t::size is a u32
constexpr size_t kAltStackSize = 64 * 1024;
constexpr uintptr_t kStackGuardBelow = 2u << 20;  // fault zone under the lowest stack address
constexpr uintptr_t kStackGuardAbove = 64u << 10;

// Linear memories of finished instances, kept for the next ones: a fresh reservation costs an
// mmap, a page fault on each page the guest touches and an munmap whose TLB shootdown reaches
// every core the process runs on; for a short invocation that was most of its cost (ADR 0021).
// A kept memory is zeroed when it is given back: its first kKeepResident bytes by memset (their
// pages stay resident, so the next instance touches them without a fault), the rest discarded
// (MADV_DONTNEED: zero on the next touch) and made inaccessible again. So a reused memory reads
// as zeros, like a fresh one, and nothing an instance wrote reaches the next, whoever's it is.
// At most kKept memories, so what the pool holds resident is bounded (kKept * kKeepResident).
class MemoryPool {
 public:
  static constexpr size_t kKept = 8;
  static constexpr uint64_t kKeepResident = 1u << 20;

  // A zeroed reservation whose first `bytes` are read-write and the rest inaccessible, or
  // nullptr when none is kept (or its protection cannot be changed).
  uint8_t* Take(uint64_t bytes) {
    Entry e;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (kept_.empty()) return nullptr;
      e = kept_.back();
      kept_.pop_back();
    }
    bool ok = true;
    if (e.accessible < bytes) {
      ok = mprotect(e.data + e.accessible, bytes - e.accessible, PROT_READ | PROT_WRITE) == 0;
    } else if (e.accessible > bytes) {
      ok = mprotect(e.data + bytes, e.accessible - bytes, PROT_NONE) == 0;
    }
    if (!ok) {
      munmap(e.data, kReservation);
      return nullptr;
    }
    return e.data;
  }

  // Takes back a memory whose first `accessible` bytes are read-write (zeroing it); false when
  // the pool is full or the memory cannot be reset, and the caller unmaps it.
  bool Give(uint8_t* data, uint64_t accessible) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (kept_.size() >= kKept) return false;
    }
    if (accessible > kKeepResident) {
      uint64_t tail = accessible - kKeepResident;
      if (madvise(data + kKeepResident, tail, MADV_DONTNEED) != 0 ||
          mprotect(data + kKeepResident, tail, PROT_NONE) != 0) {
        return false;
      }
      accessible = kKeepResident;
    }
    std::memset(data, 0, accessible);
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.size() >= kKept) return false;
    kept_.push_back({data, accessible});
    return true;
  }

  size_t kept() {
    std::lock_guard<std::mutex> lock(mu_);
    return kept_.size();
  }

 private:
  struct Entry {
    uint8_t* data = nullptr;
    uint64_t accessible = 0;
  };
  std::mutex mu_;
  std::vector<Entry> kept_;
};
// Never destroyed: a thread may free an instance's memory while the process exits.
MemoryPool& Pool() {
  static MemoryPool* pool = new MemoryPool;
  return *pool;
}

// The thread's guest call; a plain pointer so the signal handler can read it safely.
thread_local CallState* t_call = nullptr;

struct ThreadStack {
  uintptr_t lo = 0;  // lowest usable address of this thread's stack
  bool ready = false;
  void* alt = nullptr;
  ~ThreadStack() {
    if (alt != nullptr) {
      stack_t ss{};
      ss.ss_flags = SS_DISABLE;
      sigaltstack(&ss, nullptr);
      munmap(alt, kAltStackSize);
    }
  }
};
thread_local ThreadStack t_stack;

struct sigaction g_prev_segv;
struct sigaction g_prev_bus;
std::once_flag g_init_once;
std::atomic<bool> g_initialized{false};

void PrepareThread() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    t_stack.lo = reinterpret_cast<uintptr_t>(addr);
    pthread_attr_destroy(&attr);
  }
  // Stack exhaustion faults need a stack to run the handler on.
  void* alt = mmap(nullptr, kAltStackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (alt != MAP_FAILED) {
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = kAltStackSize;
    if (sigaltstack(&ss, nullptr) == 0) {
      t_stack.alt = alt;
    } else {
      munmap(alt, kAltStackSize);
    }
  }
  t_stack.ready = true;
}

struct Unwinding {
  uintptr_t* out;
  int count;
};

_Unwind_Reason_Code RecordFrame(_Unwind_Context* ctx, void* arg) {
  auto* u = static_cast<Unwinding*>(arg);
  int exact = 0;  // the faulting instruction itself (a signal frame), not a return address
  uintptr_t ip = _Unwind_GetIPInfo(ctx, &exact);
  if (ip == 0) return _URC_END_OF_STACK;
  u->out[u->count++] = exact ? ip : ip - 1;  // inside the call instruction, not after it
  return u->count == kMaxTrapAddresses ? _URC_END_OF_STACK : _URC_NO_REASON;
}

// Records the stack of a trap for its backtrace: libgcc's unwinder walks the generated code's
// unwind tables (and through the signal frame when called from the fault handler). It takes no
// lock the guest could hold and allocates nothing (glibc's _dl_find_object finds the tables).
void RecordTrapStack(CallState* s) {
  Unwinding u{s->trap_addresses, 0};
  _Unwind_Backtrace(RecordFrame, &u);
  s->trap_address_count = u.count;
}

void ForwardToPrevious(int sig, siginfo_t* info, void* uctx) {
  struct sigaction* prev = sig == SIGSEGV ? &g_prev_segv : &g_prev_bus;
  if ((prev->sa_flags & SA_SIGINFO) != 0 && prev->sa_sigaction != nullptr) {
    prev->sa_sigaction(sig, info, uctx);
    return;
  }
  if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN && prev->sa_handler != nullptr) {
    prev->sa_handler(sig);
    return;
  }
  // Default action: reinstall it and return; the faulting instruction runs again and the
  // process dies with the original signal, as it would have without gpuwasm.
  signal(sig, SIG_DFL);
}

void FaultHandler(int sig, siginfo_t* info, void* uctx) {
  CallState* s = t_call;
  if (s != nullptr) {
    uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
    if (s->memory != nullptr && s->memory->data != nullptr) {
      uintptr_t base = reinterpret_cast<uintptr_t>(s->memory->data);
      if (a >= base && a - base < kReservation) {
        s->trap = TrapKind::kOutOfBounds;
        RecordTrapStack(s);
        siglongjmp(s->jmp, 1);
      }
    }
    if (t_stack.lo != 0 && a + kStackGuardBelow >= t_stack.lo && a < t_stack.lo + kStackGuardAbove) {
      s->trap = TrapKind::kStackExhausted;
      RecordTrapStack(s);
      siglongjmp(s->jmp, 1);
    }
  }
  ForwardToPrevious(sig, info, uctx);
}

void InstallHandlers() {
  struct sigaction sa {};
  sa.sa_sigaction = FaultHandler;
  // SA_NODEFER: the signal stays unblocked while handling, so leaving the handler with
  // siglongjmp needs no saved signal mask, and guest entry needs no sigprocmask syscall.
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_prev_segv);
  sigaction(SIGBUS, &sa, &g_prev_bus);
  g_initialized.store(true);
}

volatile uint32_t g_no_interrupt = 0;

TrapKind FromWasmRt(wasm_rt_trap_t t) {
  switch (t) {
    case WASM_RT_TRAP_NONE: return TrapKind::kNone;
    case WASM_RT_TRAP_OOB: return TrapKind::kOutOfBounds;
    case WASM_RT_TRAP_INT_OVERFLOW: return TrapKind::kIntegerOverflow;
    case WASM_RT_TRAP_DIV_BY_ZERO: return TrapKind::kIntegerDivideByZero;
    case WASM_RT_TRAP_INVALID_CONVERSION: return TrapKind::kInvalidConversion;
    case WASM_RT_TRAP_UNREACHABLE: return TrapKind::kUnreachable;
    case WASM_RT_TRAP_CALL_INDIRECT: return TrapKind::kIndirectCallMismatch;
    case WASM_RT_TRAP_UNCAUGHT_EXCEPTION: return TrapKind::kUncaughtException;
    case WASM_RT_TRAP_EXHAUSTION: return TrapKind::kStackExhausted;
  }
  return TrapKind::kHostError;
}

CallState& Current(const char* what) {
  CallState* s = t_call;
  if (s == nullptr) {
    // Generated code only runs inside a guest call; reaching here is a host bug.
    std::fprintf(stderr, "gpuwasm: %s outside a guest call\n", what);
    std::abort();
  }
  return *s;
}

// Function signatures, interned: the same signature always gets the same index.
std::mutex g_types_mu;
std::vector<std::vector<int>> g_types;

// Exception state (exception handling is rejected at compile time; kept for the ABI).
thread_local WASM_RT_UNWIND_TARGET* t_unwind = nullptr;
thread_local uint32_t t_exc_tag = 0;
thread_local uint32_t t_exc_size = 0;
thread_local unsigned char t_exc[256];
std::atomic<uint32_t> g_next_tag{0};

}  // namespace

void EnsureInitialized() { std::call_once(g_init_once, InstallHandlers); }

size_t KeptMemories() { return Pool().kept(); }

void Enter(CallState* state) {
  if (!t_stack.ready) PrepareThread();
  t_call = state;
  gpuwasm_rt_interrupt_flag =
      state->interrupt != nullptr ? reinterpret_cast<volatile uint32_t*>(state->interrupt) : &g_no_interrupt;
}

void Leave() {
  t_call = nullptr;
  gpuwasm_rt_interrupt_flag = &g_no_interrupt;
}

void Exit(int32_t code) {
  CallState& s = Current("proc_exit");
  s.exited = true;
  s.exit_code = code;
  siglongjmp(s.jmp, 2);
}

void Abort(TrapKind kind) {
  CallState& s = Current("trap");
  s.trap = kind;
  RecordTrapStack(&s);
  siglongjmp(s.jmp, 1);
}

}  // namespace gpuwasm::wasm::rt

using gpuwasm::wasm::TrapKind;
namespace rt = gpuwasm::wasm::rt;

extern "C" {

__thread volatile uint32_t* gpuwasm_rt_interrupt_flag = &rt::g_no_interrupt;

volatile uint32_t* gpuwasm_rt_interrupt_flag_address(void) { return gpuwasm_rt_interrupt_flag; }

void gpuwasm_rt_interrupted(void) {
  rt::CallState& s = rt::Current("interrupt check");
  uint32_t why = s.interrupt != nullptr ? s.interrupt->load() : 0;
  s.trap = why == rt::kInterruptRequested ? TrapKind::kInterrupted : TrapKind::kDeadlineExceeded;
  rt::RecordTrapStack(&s);
  siglongjmp(s.jmp, 1);
}

void wasm_rt_init(void) { rt::EnsureInitialized(); }
bool wasm_rt_is_initialized(void) { return rt::g_initialized.load(); }
void wasm_rt_free(void) {}

void wasm_rt_trap(wasm_rt_trap_t code) { rt::Abort(rt::FromWasmRt(code)); }

const char* wasm_rt_strerror(wasm_rt_trap_t trap) {
  static thread_local char buf[64];
  std::snprintf(buf, sizeof buf, "%.*s", static_cast<int>(TrapKindName(rt::FromWasmRt(trap)).size()),
                TrapKindName(rt::FromWasmRt(trap)).data());
  return buf;
}

uint32_t wasm_rt_register_func_type(uint32_t params, uint32_t results, ...) {
  std::vector<int> sig;
  sig.push_back(static_cast<int>(params));
  va_list ap;
  va_start(ap, results);
  for (uint32_t i = 0; i < params + results; ++i) sig.push_back(va_arg(ap, int));
  va_end(ap);
  std::lock_guard<std::mutex> lock(rt::g_types_mu);
  for (size_t i = 0; i < rt::g_types.size(); ++i) {
    if (rt::g_types[i] == sig) return static_cast<uint32_t>(i + 1);
  }
  rt::g_types.push_back(std::move(sig));
  return static_cast<uint32_t>(rt::g_types.size());
}

uint32_t wasm_rt_register_tag(uint32_t size) {
  (void)size;
  return rt::g_next_tag.fetch_add(1);
}

void wasm_rt_load_exception(uint32_t tag, uint32_t size, const void* values) {
  if (size > sizeof rt::t_exc) rt::Abort(TrapKind::kResourceExhausted);
  rt::t_exc_tag = tag;
  rt::t_exc_size = size;
  if (size != 0) std::memcpy(rt::t_exc, values, size);
}

void wasm_rt_throw(void) {
  if (rt::t_unwind == nullptr) rt::Abort(TrapKind::kUncaughtException);
  siglongjmp(*rt::t_unwind, 1);
}

WASM_RT_UNWIND_TARGET* wasm_rt_get_unwind_target(void) { return rt::t_unwind; }
void wasm_rt_set_unwind_target(WASM_RT_UNWIND_TARGET* target) { rt::t_unwind = target; }
uint32_t wasm_rt_exception_tag(void) { return rt::t_exc_tag; }
uint32_t wasm_rt_exception_size(void) { return rt::t_exc_size; }
void* wasm_rt_exception(void) { return rt::t_exc; }

void wasm_rt_allocate_memory(wasm_rt_memory_t* mem, uint32_t initial_pages, uint32_t max_pages) {
  rt::CallState& s = rt::Current("allocate_memory");
  uint32_t cap = rt::kMaxPages;
  if (s.limits != nullptr && s.limits->max_memory_pages < cap) cap = s.limits->max_memory_pages;
  mem->data = nullptr;
  mem->pages = mem->size = 0;
  mem->max_pages = 0;
  if (initial_pages > cap) rt::Abort(TrapKind::kMemoryCap);
  uint64_t bytes = initial_pages * rt::kPageSize;
  uint8_t* p = rt::Pool().Take(bytes);
  if (p == nullptr) {
    void* fresh = mmap(nullptr, rt::kReservation, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (fresh == MAP_FAILED) rt::Abort(TrapKind::kResourceExhausted);
    if (bytes != 0 && mprotect(fresh, bytes, PROT_READ | PROT_WRITE) != 0) {
      munmap(fresh, rt::kReservation);
      rt::Abort(TrapKind::kResourceExhausted);
    }
    p = static_cast<uint8_t*>(fresh);
  }
  mem->data = p;
  mem->pages = initial_pages;
  mem->max_pages = max_pages < cap ? max_pages : cap;
  mem->size = static_cast<uint32_t>(bytes);
  s.memory = mem;
}

uint32_t wasm_rt_grow_memory(wasm_rt_memory_t* mem, uint32_t delta) {
  uint32_t old = mem->pages;
  if (delta == 0) return old;
  uint64_t want = static_cast<uint64_t>(old) + delta;
  if (want > mem->max_pages || want > rt::kMaxPages) return UINT32_MAX;
  if (mprotect(mem->data + old * rt::kPageSize, delta * rt::kPageSize, PROT_READ | PROT_WRITE) != 0) {
    return UINT32_MAX;
  }
  mem->pages = static_cast<uint32_t>(want);
  mem->size = static_cast<uint32_t>(want * rt::kPageSize);
  return old;
}

void wasm_rt_free_memory(wasm_rt_memory_t* mem) {
  if (mem->data != nullptr && !rt::Pool().Give(mem->data, uint64_t{mem->pages} * rt::kPageSize)) {
    munmap(mem->data, rt::kReservation);
  }
  mem->data = nullptr;
  mem->pages = mem->size = 0;
}

}  // extern "C"

namespace {

template <typename Table, typename Elem>
void AllocateTable(Table* t, uint32_t elements, uint32_t max_elements) {
  rt::CallState& s = rt::Current("allocate_table");
  uint32_t cap = s.limits != nullptr ? s.limits->max_table_elements : (1u << 20);
  t->data = nullptr;
  t->size = 0;
  t->max_size = max_elements < cap ? max_elements : cap;
  if (elements > cap) rt::Abort(TrapKind::kResourceExhausted);
  if (elements != 0) {
    t->data = static_cast<Elem*>(std::calloc(elements, sizeof(Elem)));
    if (t->data == nullptr) rt::Abort(TrapKind::kResourceExhausted);
  }
  t->size = elements;
}

template <typename Table, typename Elem>
uint32_t GrowTable(Table* t, uint32_t delta, Elem init) {
  uint32_t old = t->size;
  uint64_t want = static_cast<uint64_t>(old) + delta;
  if (want > t->max_size) return UINT32_MAX;
  if (delta == 0) return old;
  auto* p = static_cast<Elem*>(std::realloc(t->data, want * sizeof(Elem)));
  if (p == nullptr) return UINT32_MAX;
  for (uint64_t i = old; i < want; ++i) p[i] = init;
  t->data = p;
  t->size = static_cast<uint32_t>(want);
  return old;
}

template <typename Table>
void FreeTable(Table* t) {
  std::free(t->data);
  t->data = nullptr;
  t->size = 0;
}

}  // namespace

extern "C" {

void wasm_rt_allocate_funcref_table(wasm_rt_funcref_table_t* t, uint32_t elements, uint32_t max) {
  AllocateTable<wasm_rt_funcref_table_t, wasm_rt_funcref_t>(t, elements, max);
}
void wasm_rt_free_funcref_table(wasm_rt_funcref_table_t* t) { FreeTable(t); }
void wasm_rt_allocate_externref_table(wasm_rt_externref_table_t* t, uint32_t elements, uint32_t max) {
  AllocateTable<wasm_rt_externref_table_t, wasm_rt_externref_t>(t, elements, max);
}
void wasm_rt_free_externref_table(wasm_rt_externref_table_t* t) { FreeTable(t); }
uint32_t wasm_rt_grow_funcref_table(wasm_rt_funcref_table_t* t, uint32_t delta, wasm_rt_funcref_t init) {
  return GrowTable(t, delta, init);
}
uint32_t wasm_rt_grow_externref_table(wasm_rt_externref_table_t* t, uint32_t delta, wasm_rt_externref_t init) {
  return GrowTable(t, delta, init);
}

}  // extern "C"
