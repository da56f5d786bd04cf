// Each trap kind ends its call cleanly, poisons only that instance, and the process carries on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

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

}  // namespace
}  // namespace gpuwasm::testing
