// Each trap kind ends its call cleanly, poisons only that instance, and the process carries on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "test_support.h"
#include "wasm/wasm_rt.h"

namespace gpuwasm::testing {
namespace {

struct TrapCase {
  const char* export_name;
  wasm::TrapKind kind;
};

void PrintTo(const TrapCase& c, std::ostream* os) { *os << c.export_name; }

class Traps : public ::testing::TestWithParam<TrapCase> {};

TEST_P(Traps, trap_ends_call_and_process_keeps_running) {
  auto module = CompileOrDie("traps/traps.wasm");
  ASSERT_NE(module, nullptr);
  GuestRun r = RunExport(module, GetParam().export_name);
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
  EXPECT_EQ(r.outcome->trap, GetParam().kind)
      << "got " << wasm::TrapKindName(r.outcome->trap) << " for " << GetParam().export_name;
  // The trapped instance is never reused...
  auto again = r.instance->Call("ok");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kUnavailable);
  // ...while a fresh one runs normally.
  GuestRun ok = RunExport(module, "ok");
  ASSERT_TRUE(ok.outcome.ok());
  EXPECT_TRUE(ok.outcome->ok());
  EXPECT_EQ(ok.outcome->exit_code, 42);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Traps,
                         ::testing::Values(TrapCase{"oob_load", wasm::TrapKind::kOutOfBounds},
                                           TrapCase{"oob_load_far", wasm::TrapKind::kOutOfBounds},
                                           TrapCase{"oob_store", wasm::TrapKind::kOutOfBounds},
                                           TrapCase{"fill_oob", wasm::TrapKind::kOutOfBounds},
                                           TrapCase{"unreachable", wasm::TrapKind::kUnreachable},
                                           TrapCase{"div_zero", wasm::TrapKind::kIntegerDivideByZero},
                                           TrapCase{"rem_zero", wasm::TrapKind::kIntegerDivideByZero},
                                           TrapCase{"int_overflow", wasm::TrapKind::kIntegerOverflow},
                                           TrapCase{"invalid_conversion", wasm::TrapKind::kInvalidConversion},
                                           TrapCase{"trunc_overflow", wasm::TrapKind::kIntegerOverflow},
                                           TrapCase{"call_indirect_null", wasm::TrapKind::kIndirectCallMismatch},
                                           TrapCase{"call_indirect_type", wasm::TrapKind::kIndirectCallMismatch},
                                           TrapCase{"call_indirect_range", wasm::TrapKind::kIndirectCallMismatch},
                                           TrapCase{"stack_exhaustion", wasm::TrapKind::kStackExhausted}),
                         [](const auto& info) { return std::string(info.param.export_name); });

TEST(Traps, traps_agree_with_wabt_interpreter) {
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  for (const char* name : {"oob_load", "unreachable", "div_zero", "int_overflow", "invalid_conversion",
                           "call_indirect_null", "call_indirect_type"}) {
    EXPECT_TRUE(InterpRun(bytes, name).trapped) << name;
  }
  EXPECT_FALSE(InterpRun(bytes, "ok").trapped);
}

TEST(MemoryCap, initial_memory_above_cap_fails_instantiation_clearly) {
  auto module = CompileOrDie("traps/memory_limits.wasm");
  ASSERT_NE(module, nullptr);
  wasm::InstanceLimits limits;
  limits.max_memory_pages = 32;  // the module wants 64
  GuestRun r = RunExport(module, "size", {}, limits);
  ASSERT_FALSE(r.outcome.ok());
  EXPECT_EQ(r.outcome.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.outcome.status().message().find("exceeds the cap of 32 pages"), std::string::npos) << r.outcome.status();
}

TEST(Reactor, initialize_past_the_deadline_is_a_deadline) {
  auto module = CompileOrDie("traps/slow_reactor.wasm");
  ASSERT_NE(module, nullptr);
  host::HostEnv env({});
  auto inst = wasm::Instance::Create(module, &env, {}, wasm::Clock::now() + std::chrono::milliseconds(50));
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), StatusCode::kDeadlineExceeded) << inst.status();
  EXPECT_EQ(inst.status().message(), "_initialize did not finish before the deadline");
}

TEST(MemoryCap, grow_stops_at_cap_with_minus_one) {
  auto module = CompileOrDie("traps/memory_limits.wasm");
  ASSERT_NE(module, nullptr);
  wasm::InstanceLimits limits;
  limits.max_memory_pages = 100;
  GuestRun r = RunExport(module, "grow", {}, limits);  // 64 + 100 > 100
  ASSERT_TRUE(r.outcome.ok());
  EXPECT_EQ(r.outcome->exit_code, -1);
  GuestRun small = RunExport(module, "grow_small", {}, limits);
  ASSERT_TRUE(small.outcome.ok());
  EXPECT_EQ(small.outcome->exit_code, 64);
  EXPECT_EQ(small.instance->memory()->pages, 65u);
}

// Addresses read at run time, so the compiler cannot see (or warn about) the bad access.
volatile uintptr_t g_null_address = 0;

// With too little address space left for the 8 GiB reservation, instantiation fails with an
// error (the process does not abort); run in a child so the limit does not leak into other tests.
void InstantiateUnderSmallAddressSpace(std::shared_ptr<const wasm::Module> module) {
  rlimit lim{4ull << 30, 4ull << 30};
  setrlimit(RLIMIT_AS, &lim);
  host::HostEnv env({});
  auto inst = wasm::Instance::Create(module, &env, {});
  bool right = !inst.ok() && inst.status().code() == StatusCode::kResourceExhausted &&
               inst.status().message() == "instantiation failed: out of memory for linear memory or tables";
  std::fprintf(stderr, "%s\n", inst.status().ToString().c_str());
  std::_Exit(right ? 0 : 1);
}

TEST(MemoryReservationDeathTest, mmap_failure_is_an_error_not_an_abort) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "ASan's shadow memory already exceeds any small RLIMIT_AS";
#endif
  auto module = CompileOrDie("traps/traps.wasm");
  ASSERT_NE(module, nullptr);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(InstantiateUnderSmallAddressSpace(module), ::testing::ExitedWithCode(0),
              "instantiation failed: out of memory");
}

// Died of SIGSEGV, as an unhandled fault does. Under ASan, its handler (to which ours forwards)
// reports the SEGV and then exits non-zero or aborts (abort_on_error).
bool CrashedOnSegv(int status) {
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGABRT;
  return WIFEXITED(status) && WEXITSTATUS(status) != 0;
}

// Host bugs must still crash: the fault handler only claims faults inside a running guest's memory.
TEST(FaultHandlerDeathTest, host_null_dereference_still_crashes) {
  CompileOrDie("traps/traps.wasm");  // handlers are installed
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT({ *reinterpret_cast<volatile int*>(g_null_address) = 1; }, CrashedOnSegv, "");
}

TEST(FaultHandlerDeathTest, host_fault_during_guest_call_outside_guest_memory_crashes) {
  CompileOrDie("traps/traps.wasm");
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        wasm::rt::CallState state;
        wasm::rt::Enter(&state);  // as if a guest were running on this thread
        *reinterpret_cast<volatile int*>(g_null_address + 16) = 1;
      },
      CrashedOnSegv, "");
}

// Linear memories are kept and reused (wasm_rt.cc): each later instance gets a memory that reads
// as zeros and is exactly its own size, whatever the one before wrote or grew to.
TEST(MemoryReuse, a_reused_memory_is_zeroed_and_only_as_large_as_the_new_instance) {
  auto module = CompileOrDie("traps/memory_reuse.wasm");
  ASSERT_NE(module, nullptr);
  auto dirty = [&] {
    GuestRun r = RunExport(module, "dirty");
    ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
    ASSERT_TRUE(r.outcome->ok()) << wasm::TrapKindName(r.outcome->trap);
  };
  dirty();
  EXPECT_GE(wasm::rt::KeptMemories(), 1u) << "the memory was not kept: this test would prove nothing";
  for (const char* check : {"read_low", "grow_and_read"}) {
    for (int i = 0; i < 3; ++i) {
      dirty();
      GuestRun r = RunExport(module, check);
      ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
      ASSERT_TRUE(r.outcome->ok()) << check << ": " << wasm::TrapKindName(r.outcome->trap);
      EXPECT_EQ(r.outcome->exit_code, 0) << check << " saw what the instance before it wrote";
    }
  }
  for (const char* far : {"read_page_10", "read_page_20"}) {
    dirty();
    GuestRun r = RunExport(module, far);
    ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
    EXPECT_EQ(r.outcome->trap, wasm::TrapKind::kOutOfBounds)
        << far << ": a page the instance before grew into is reachable";
  }
}

// Many instances at once: each has a memory of its own, those past the pool's size are unmapped.
TEST(MemoryReuse, instances_alive_together_never_share_a_memory) {
  auto module = CompileOrDie("traps/memory_reuse.wasm");
  ASSERT_NE(module, nullptr);
  std::vector<GuestRun> alive;
  std::set<const void*> seen;
  for (int i = 0; i < 20; ++i) {
    alive.push_back(RunExport(module, "read_low"));
    ASSERT_TRUE(alive.back().outcome.ok());
    EXPECT_EQ(alive.back().outcome->exit_code, 0);
    EXPECT_TRUE(seen.insert(alive.back().instance->memory()->data).second) << "two live instances share a memory";
  }
  alive.clear();
  EXPECT_LE(wasm::rt::KeptMemories(), 8u);
}

}  // namespace
}  // namespace gpuwasm::testing
