// The runtime against real guests on the CPU device: deploy -> invoke for every example, compile
// failures, quotas and isolation between tenants, teardown after traps, deadlines and device
// faults, restart with the same store, concurrency, shutdown.
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>

#include "../common/guests.h"
#include "../common/temp_dir.h"
#include "device/cpu/native.h"

namespace gpuwasm::runtime {
namespace {
namespace fs = std::filesystem;
using gpuwasm::testing::Cpu;
using gpuwasm::testing::Example;
using gpuwasm::testing::Lifecycle;
using gpuwasm::testing::ReadFile;
using gpuwasm::testing::RunNeverEndingKernel;
using gpuwasm::testing::Span;
using gpuwasm::testing::TempDir;
using gpuwasm::testing::U64;
using std::chrono::milliseconds;

TenantConfig Tenant(const std::string& name) {
  TenantConfig t;
  t.name = name;
  return t;
}

std::unique_ptr<Runtime> Make(const fs::path& store, std::vector<TenantConfig> tenants = {Tenant("acme")},
                              uint32_t workers = 6, wasm::EngineOptions engine = {}) {
  RuntimeConfig c;
  c.store_dir = store;
  c.workers = workers;
  c.tenants = std::move(tenants);
  RuntimeOptions o;
  o.device = Cpu();
  o.engine = std::move(engine);
  if (o.engine.cache_dir.empty()) o.engine.cache_dir = GPUWASM_RUNTIME_TEST_CACHE;
  auto rt = Runtime::Create(std::move(c), std::move(o));
  EXPECT_TRUE(rt.ok()) << rt.status();
  return rt.ok() ? std::move(*rt) : nullptr;
}

store::FunctionRecord DeployReady(Runtime& rt, const std::string& tenant, const std::string& name, const fs::path& wasm,
                                  const std::string& entry = "") {
  std::string bytes = ReadFile(wasm);
  auto rec = rt.Deploy(tenant, name, Span(bytes), entry);
  EXPECT_TRUE(rec.ok()) << rec.status();
  if (!rec.ok()) return {};
  EXPECT_EQ(rec->status, store::DeployStatus::kCompiling);
  auto ready = rt.WaitReady(tenant, rec->id, milliseconds(120'000));
  EXPECT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, store::DeployStatus::kReady) << ready->error;
  return *ready;
}

InvokeResult MustInvoke(Runtime& rt, const std::string& tenant, const std::string& fn, InvokeRequest req = {}) {
  auto r = rt.Invoke(tenant, fn, std::move(req));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : InvokeResult{};
}

size_t ThreadCount() {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/task")) n += e.is_directory() ? 1 : 0;
  return n;
}

// Nothing of the tenant is left on the device or in the live view.
void ExpectNothingLeft(Runtime& rt, const std::string& tenant) {
  EXPECT_TRUE(rt.Instances().empty());
  for (const TenantStats& t : rt.Stats().tenants) {
    if (t.tenant != tenant) continue;
    EXPECT_EQ(t.totals.running, 0u);
    EXPECT_EQ(t.context_device_bytes, 0u);
    EXPECT_EQ(t.context_modules, 0u);
    EXPECT_EQ(t.totals.device_bytes_allocated, 0u);
  }
}

// Waits until a running instance has device memory, or until `run` has ended (false).
template <typename Future>
bool WaitForLiveBytes(Runtime& rt, Future& run) {
  for (;;) {
    auto live = rt.Instances();
    if (!live.empty() && live[0].metrics.device_bytes_allocated != 0) return true;
    if (run.wait_for(milliseconds(5)) == std::future_status::ready) {
      auto r = run.get();
      ADD_FAILURE() << "the invocation ended early: " << (r.ok() ? nlohmann::json(*r).dump() : r.status().ToString());
      return false;
    }
  }
}

TEST(Runtime, every_example_deploys_and_runs) {
  TempDir dir;
  auto rt = Make(dir.path());
  auto hello = DeployReady(*rt, "acme", "hello", Example("hello"));
  InvokeRequest req;
  req.input = "abc";
  InvokeResult r = MustInvoke(*rt, "acme", "hello", req);
  EXPECT_EQ(r.status, InvocationStatus::kOk);
  EXPECT_EQ(r.stdout_text, "hello from a gpuwasm guest: 3 input bytes, checksum 00017862\n");
  EXPECT_EQ(r.function_id, hello.id);
  EXPECT_EQ(r.version, 1);
  EXPECT_EQ(r.deadline, milliseconds(30'000));
  for (const char* name : {"vector_add", "saxpy", "reduction", "matmul", "softmax"}) {
    auto rec = DeployReady(*rt, "acme", name, Example(name));
    InvokeResult e = MustInvoke(*rt, "acme", rec.id);  // by id
    EXPECT_EQ(e.status, InvocationStatus::kOk) << name << ": " << e.stderr_text;
    EXPECT_NE(e.stdout_text.find(" OK"), std::string::npos) << e.stdout_text;
    EXPECT_GE(e.metrics.kernels_launched, 1u) << name;
    EXPECT_GT(e.metrics.bytes_pinned, 0u) << name;
    EXPECT_GT(e.metrics.device_bytes_allocated, 0u) << name;  // the final snapshot, before teardown
    EXPECT_GT(e.gpu_time.count(), 0) << name;
    EXPECT_EQ(e.device, Cpu()->info().name);
  }
  RuntimeStats s = rt->Stats();
  ASSERT_EQ(s.tenants.size(), 1u);
  EXPECT_EQ(s.tenants[0].totals.invocations[0], 6u);
  EXPECT_GE(s.tenants[0].totals.kernels_launched, 5u);
  EXPECT_GT(s.tenants[0].totals.gpu_time_ns, 0u);
  EXPECT_EQ(s.functions.size(), 6u);
  ExpectNothingLeft(*rt, "acme");
}

TEST(Runtime, compile_failures_are_reported_with_the_reason) {
  TempDir dir;
  auto rt = Make(dir.path());
  std::string simd = ReadFile(fs::path(GPUWASM_WASM_TEST_MODULES) / "reject" / "simd.wasm");
  auto rec = rt->Deploy("acme", "vector", Span(simd));
  ASSERT_TRUE(rec.ok()) << rec.status();
  auto done = rt->WaitReady("acme", rec->id, milliseconds(60'000));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->status, store::DeployStatus::kFailed);
  EXPECT_NE(done->error.find("SIMD"), std::string::npos) << done->error;
  auto inv = rt->Invoke("acme", "vector", {});
  EXPECT_EQ(inv.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(inv.status().message().find("failed to compile"), std::string::npos) << inv.status();

  // The reactor exports neither _start nor run: without an entry point it cannot be invoked.
  auto reactor = rt->Deploy("acme", "lifecycle", Span(ReadFile(Lifecycle())));
  auto r2 = rt->WaitReady("acme", reactor->id, milliseconds(120'000));
  EXPECT_EQ(r2->status, store::DeployStatus::kFailed);
  EXPECT_NE(r2->error.find("neither _start nor run"), std::string::npos) << r2->error;
  auto r3 = rt->WaitReady("acme", rt->Deploy("acme", "lifecycle", Span(ReadFile(Lifecycle())), "nope")->id,
                          milliseconds(120'000));
  EXPECT_NE(r3->error.find("no export named 'nope'"), std::string::npos) << r3->error;
}

// A large module (here: any, with the threshold at one byte) answers from quick-tier code, and
// its invocations switch to the optimised code once the background compile has stored it.
TEST(Runtime, a_large_function_switches_to_optimised_code_when_it_is_built) {
  if (std::system("command -v tcc >/dev/null 2>&1") != 0) GTEST_SKIP() << "tcc is not installed: no quick tier";
  TempDir dir;
  wasm::EngineOptions engine;
  engine.cache_dir = dir.path() / "cache";
  engine.quick_tier_min_bytes = 1;
  auto rt = Make(dir.path() / "store", {Tenant("acme")}, 4, engine);
  DeployReady(*rt, "acme", "hello", Example("hello"));
  InvokeRequest req;
  req.input = "abc";
  InvokeResult first = MustInvoke(*rt, "acme", "hello", req);
  EXPECT_EQ(first.status, InvocationStatus::kOk);
  EXPECT_FALSE(first.stdout_text.empty());
  EXPECT_EQ(rt->Stats().module_quick_compiles, 1u);
  InvokeResult later = first;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (rt->Stats().module_tier_upgrades == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(50));
    later = MustInvoke(*rt, "acme", "hello", req);
  }
  EXPECT_EQ(rt->Stats().module_tier_upgrades, 1u);
  later = MustInvoke(*rt, "acme", "hello", req);
  EXPECT_EQ(later.status, InvocationStatus::kOk);
  EXPECT_EQ(later.output, first.output);
  EXPECT_EQ(later.stdout_text, first.stdout_text);
  EXPECT_EQ(rt->Stats().module_tier_upgrades, 1u);  // once
}

TEST(Runtime, compiler_errors_reach_the_deploy_status) {
  TempDir dir;
  fs::path cc = dir.path() / "broken-cc";
  std::ofstream(cc) << "#!/bin/sh\necho 'broken-cc: error: out of registers' >&2\nexit 1\n";
  fs::permissions(cc, fs::perms::owner_all);
  wasm::EngineOptions engine;
  engine.cc = cc.string();
  engine.cache_dir = dir.path() / "cache";  // empty: the compiler must run
  auto rt = Make(dir.path() / "store", {Tenant("acme")}, 4, engine);
  auto rec = rt->Deploy("acme", "hello", Span(ReadFile(Example("hello"))));
  auto done = rt->WaitReady("acme", rec->id, milliseconds(60'000));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->status, store::DeployStatus::kFailed);
  EXPECT_NE(done->error.find("out of registers"), std::string::npos) << done->error;
}

TEST(Runtime, entry_points_input_and_output) {
  TempDir dir;
  auto rt = Make(dir.path());
  DeployReady(*rt, "acme", "echo", Lifecycle(), "echo");
  InvokeRequest req;
  req.input = std::string("binary\0input", 12);
  InvokeResult r = MustInvoke(*rt, "acme", "echo", req);
  EXPECT_EQ(r.status, InvocationStatus::kOk);
  EXPECT_EQ(r.output, req.input);
  req.entry = "alloc";  // a request may name another export
  req.input = U64(4096);
  EXPECT_EQ(MustInvoke(*rt, "acme", "echo", req).exit_status, 0);
  req.entry = "missing";
  InvokeResult m = MustInvoke(*rt, "acme", "echo", req);
  EXPECT_EQ(m.status, InvocationStatus::kError);
  EXPECT_NE(m.error.find("missing"), std::string::npos) << m.error;
}

TEST(Runtime, a_guests_lines_reach_the_host_as_printed_and_a_forgotten_synchronize_is_said) {
  TempDir dir;
  auto rt = Make(dir.path());
  DeployReady(*rt, "acme", "life", Lifecycle(), "echo");
  InvokeRequest req;
  req.entry = "print_then_trap";
  std::string live[3];  // by fd
  req.live_output = [&live](int fd, std::string_view bytes) { live[fd] += bytes; };
  InvokeResult r = MustInvoke(*rt, "acme", "life", req);
  EXPECT_EQ(r.status, InvocationStatus::kTrap);
  // stdio wrote each line as it ended (a fully buffered stdout loses both to the trap).
  EXPECT_EQ(r.stdout_text, "first line\nsecond line\n");
  EXPECT_EQ(live[1], "first line\nsecond line\n");
  // stderr carries only the trap's wasm backtrace, live and in the result.
  EXPECT_EQ(live[2],
            "gpuwasm: wasm backtrace of the trap (unreachable), innermost call first:\n  #0 print_then_trap\n");
  EXPECT_EQ(r.stderr_text, live[2]);
  EXPECT_EQ(r.backtrace, std::vector<std::string>{"print_then_trap"});
  EXPECT_EQ(r.discarded_launches, 0u);
  req.entry = "forgets_synchronize";
  live[1].clear();
  live[2].clear();
  r = MustInvoke(*rt, "acme", "life", req);
  EXPECT_EQ(r.status, InvocationStatus::kOk);
  EXPECT_EQ(r.discarded_launches, 1u);
  const std::string note =
      "gpuwasm: 1 kernel launch(es) had not finished when the guest returned and were discarded "
      "(call wcu_synchronize() before returning)\n";
  EXPECT_EQ(r.stderr_text, note);
  EXPECT_EQ(live[2], note);
  EXPECT_EQ(live[1], "");
  EXPECT_EQ(nlohmann::json(r)["discarded_launches"], 1);
}

TEST(Runtime, an_invocation_carries_arguments_and_environment_within_limits) {
  TempDir dir;
  auto rt = Make(dir.path());
  DeployReady(*rt, "acme", "life", Lifecycle(), "echo");
  InvokeRequest req;
  req.entry = "print_args_env";
  req.args = {"blur", "two words"};
  req.env = {"MODE=fast", "EMPTY="};
  InvokeResult r = MustInvoke(*rt, "acme", "life", req);
  EXPECT_EQ(r.status, InvocationStatus::kOk) << r.error;
  EXPECT_EQ(r.stdout_text, "arg: life\narg: blur\narg: two words\nenv: MODE=fast\nenv: EMPTY=\n");
  auto refused = [&](std::vector<std::string> args, std::vector<std::string> env) {
    InvokeRequest bad;
    bad.entry = "print_args_env";
    bad.args = std::move(args);
    bad.env = std::move(env);
    auto x = rt->Invoke("acme", "life", bad);
    EXPECT_EQ(x.status().code(), StatusCode::kInvalidArgument);
    return x.status().message();
  };
  EXPECT_EQ(refused(std::vector<std::string>(65, "a"), {}), "65 arguments: at most 64 are allowed");
  EXPECT_EQ(refused({std::string(4097, 'x')}, {}), "argument 1 is 4097 bytes: at most 4096 are allowed");
  EXPECT_EQ(refused({}, {"1X=y"}),
            "environment entry 1 '1X=y' is not KEY=value with KEY of letters, digits and _ (not first a digit)");
  EXPECT_EQ(refused({}, {"NOVALUE"}),
            "environment entry 1 'NOVALUE' is not KEY=value with KEY of letters, digits and _ (not first a digit)");
  EXPECT_EQ(refused(std::vector<std::string>(5, std::string(4000, 'x')), {}),
            "arguments and environment are 20000 bytes: at most 16384 are allowed");
}

TEST(Runtime, traps_deadlines_and_device_faults_leave_nothing_behind) {
  TempDir dir;
  auto rt = Make(dir.path());
  auto f = DeployReady(*rt, "acme", "life", Lifecycle(), "echo");
  MustInvoke(*rt, "acme", f.id);  // the pools' threads exist from here on
  size_t threads = ThreadCount() - device::cpu::NativeCompileThreads();

  InvokeRequest fault;
  fault.entry = "fault";
  InvokeResult r = MustInvoke(*rt, "acme", f.id, fault);
  EXPECT_EQ(r.status, InvocationStatus::kExitError);
  EXPECT_EQ(r.exit_status, 3);  // the guest saw WCU_ERR_DEVICE
  EXPECT_EQ(r.metrics.device_bytes_allocated, 1024u);
  ExpectNothingLeft(*rt, "acme");

  InvokeRequest trap;
  trap.entry = "trap_mid_launch";
  r = MustInvoke(*rt, "acme", f.id, trap);
  EXPECT_EQ(r.status, InvocationStatus::kTrap);
  EXPECT_EQ(r.exit_status, 134);
  EXPECT_EQ(r.trap, "unreachable");
  EXPECT_EQ(r.backtrace, std::vector<std::string>{"trap_mid_launch"});
  EXPECT_EQ(r.metrics.kernels_launched, 1u);
  EXPECT_LT(r.duration, milliseconds(4000));  // the 5 s kernel was stopped, not waited for
  ExpectNothingLeft(*rt, "acme");

  InvokeRequest spin;
  spin.entry = "spin_holding";
  spin.deadline = milliseconds(1000);  // time to reach its allocation under a sanitizer
  r = MustInvoke(*rt, "acme", f.id, spin);
  EXPECT_EQ(r.status, InvocationStatus::kDeadline);
  EXPECT_EQ(r.exit_status, 124);
  EXPECT_EQ(r.deadline, milliseconds(1000));
  EXPECT_EQ(r.metrics.device_bytes_allocated, 1u << 20);
  ExpectNothingLeft(*rt, "acme");

  RuntimeStats s = rt->Stats();
  const Totals& t = s.tenants[0].totals;
  EXPECT_EQ(t.invocations[static_cast<int>(InvocationStatus::kExitError)], 1u);
  EXPECT_EQ(t.invocations[static_cast<int>(InvocationStatus::kTrap)], 1u);
  EXPECT_EQ(t.invocations[static_cast<int>(InvocationStatus::kDeadline)], 1u);

  milliseconds deadline(300);
  r = RunNeverEndingKernel(
      [&](milliseconds d) {
        InvokeRequest forever;
        forever.entry = "never_ending_kernel";
        forever.deadline = d;
        return MustInvoke(*rt, "acme", f.id, forever);
      },
      &deadline);
  EXPECT_EQ(r.exit_status, 10);  // the guest's synchronize returned WCU_ERR_DEADLINE
  EXPECT_EQ(r.metrics.kernels_launched, 1u);
  EXPECT_GE(r.duration, deadline - milliseconds(10));
  EXPECT_LT(r.duration, deadline + milliseconds(4700));
  ExpectNothingLeft(*rt, "acme");

  // Every instance's stream thread is gone. Polled for up to 2 s: in about one run in ten (seen
  // with --gtest_repeat, before and after this session's executor changes) a thread that ran the
  // last launch is still finishing when the invocation returns; a leaked thread never goes.
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
       ThreadCount() != threads + device::cpu::NativeCompileThreads() && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  // The native-code compile thread (started once a kernel ran often enough) lives with the process.
  EXPECT_EQ(ThreadCount(), threads + device::cpu::NativeCompileThreads());

  // The tenant carries on.
  InvokeRequest echo;
  echo.input = "still here";
  EXPECT_EQ(MustInvoke(*rt, "acme", f.id, echo).output, "still here");
}

TEST(Runtime, deadline_is_capped_by_the_tenant) {
  TempDir dir;
  TenantConfig t = Tenant("acme");
  t.max_deadline = milliseconds(200);
  auto rt = Make(dir.path(), {t});
  DeployReady(*rt, "acme", "life", Lifecycle(), "spin_holding");
  InvokeRequest req;
  req.deadline = milliseconds(60'000);
  InvokeResult r = MustInvoke(*rt, "acme", "life", req);
  EXPECT_EQ(r.status, InvocationStatus::kDeadline);
  EXPECT_EQ(r.deadline, milliseconds(200));
  req.deadline = milliseconds(0);
  EXPECT_EQ(rt->Invoke("acme", "life", req).status().code(), StatusCode::kInvalidArgument);
}

TEST(Runtime, quotas_are_per_tenant) {
  TempDir dir;
  TenantConfig small = Tenant("small");
  small.device_bytes = 2 << 20;
  small.max_input_size = 64;
  TenantConfig nogpu = Tenant("nogpu");
  nogpu.gpu = false;
  auto rt = Make(dir.path(), {small, Tenant("big"), nogpu});
  for (const char* t : {"small", "big", "nogpu"}) DeployReady(*rt, t, "life", Lifecycle(), "alloc");
  InvokeRequest req;
  req.input = U64(4 << 20);
  EXPECT_EQ(MustInvoke(*rt, "small", "life", req).exit_status, 8);  // WCU_ERR_QUOTA
  EXPECT_EQ(MustInvoke(*rt, "big", "life", req).exit_status, 0);
  EXPECT_EQ(MustInvoke(*rt, "nogpu", "life", req).exit_status, 1);  // WCU_ERR_NOT_PERMITTED
  req.input = U64(1 << 20);
  EXPECT_EQ(MustInvoke(*rt, "small", "life", req).exit_status, 0);

  // The byte quota is the tenant's, across its instances: one holds 1.5 MiB while another asks.
  TempDir dir2;
  rt.reset();
  rt = Make(dir2.path(), {small});
  DeployReady(*rt, "small", "life", Lifecycle(), "alloc");
  InvokeRequest hold;
  hold.entry = "spin_holding";
  hold.input = U64(3 << 19);
  hold.deadline = milliseconds(1500);
  auto holder = std::async(std::launch::async, [&] { return rt->Invoke("small", "life", hold); });
  ASSERT_TRUE(WaitForLiveBytes(*rt, holder));
  req.input = U64(1 << 20);
  EXPECT_EQ(MustInvoke(*rt, "small", "life", req).exit_status, 8);
  EXPECT_EQ(holder.get()->status, InvocationStatus::kDeadline);
  EXPECT_EQ(MustInvoke(*rt, "small", "life", req).exit_status, 0);  // released with the holder
  // The refused allocation is counted: in the instance's snapshot, folded into the tenant's totals.
  EXPECT_EQ(rt->Stats().tenants.at(0).totals.quota_refusals, 1u);

  req.input = std::string(65, 'x');
  auto big_input = rt->Invoke("small", "life", req);
  EXPECT_EQ(big_input.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big_input.status().message().find("max_input_size"), std::string::npos);
  EXPECT_EQ(rt->Stats().tenants.at(0).totals.limit_refusals[static_cast<size_t>(RefusedLimit::kMaxInputSize)], 1u);
  rt.reset();
  TempDir dir3;
  TenantConfig tiny = Tenant("tiny");
  tiny.max_module_size = 1024;
  rt = Make(dir3.path(), {tiny});
  auto big_module = rt->Deploy("tiny", "hello", Span(ReadFile(Example("hello"))));
  EXPECT_EQ(big_module.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big_module.status().message().find("max_module_size"), std::string::npos);
  EXPECT_EQ(rt->Stats().tenants.at(0).totals.limit_refusals[static_cast<size_t>(RefusedLimit::kMaxModuleSize)], 1u);
}

TEST(Runtime, a_tenant_at_its_limit_does_not_slow_another) {
  TempDir dir;
  TenantConfig busy = Tenant("busy");
  busy.concurrent_invocations = 2;
  auto rt = Make(dir.path(), {busy, Tenant("calm")}, 3);
  DeployReady(*rt, "busy", "spin", Lifecycle(), "spin_holding");
  DeployReady(*rt, "calm", "echo", Lifecycle(), "echo");
  InvokeRequest spin;
  spin.deadline = milliseconds(3000);
  auto a = std::async(std::launch::async, [&] { return rt->Invoke("busy", "spin", spin); });
  auto b = std::async(std::launch::async, [&] { return rt->Invoke("busy", "spin", spin); });
  for (int i = 0; rt->Instances("busy").size() < 2; ++i) {
    ASSERT_LT(i, 2000) << "the spinners did not start";
    std::this_thread::sleep_for(milliseconds(5));
  }

  auto third = rt->Invoke("busy", "spin", spin);
  EXPECT_EQ(third.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(third.status().message().find("overloaded"), std::string::npos) << third.status();

  InvokeRequest echo;
  echo.input = "quick";
  InvokeResult calm = MustInvoke(*rt, "calm", "echo", echo);
  EXPECT_EQ(calm.output, "quick");
  // It ran while both spinners held their workers (they end at their 3 s deadline).
  EXPECT_EQ(rt->Instances("busy").size(), 2u);
  EXPECT_TRUE(rt->Instances("calm").empty());

  EXPECT_EQ(a.get()->status, InvocationStatus::kDeadline);
  EXPECT_EQ(b.get()->status, InvocationStatus::kDeadline);
  RuntimeStats s = rt->Stats();
  for (const TenantStats& t : s.tenants) {
    EXPECT_EQ(t.totals.rejected, t.tenant == "busy" ? 1u : 0u) << t.tenant;
  }
}

TEST(Runtime, live_view_shows_running_instances_with_their_snapshots) {
  TempDir dir;
  auto rt = Make(dir.path());
  auto f = DeployReady(*rt, "acme", "spin", Lifecycle(), "spin_holding");
  InvokeRequest spin;
  spin.deadline = milliseconds(1000);
  spin.input = U64(12345);
  auto run = std::async(std::launch::async, [&] { return rt->Invoke("acme", "spin", spin); });
  ASSERT_TRUE(WaitForLiveBytes(*rt, run));
  std::vector<LiveInstance> live = rt->Instances("acme");
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].function_id, f.id);
  EXPECT_EQ(live[0].function_name, "spin");
  EXPECT_EQ(live[0].metrics.device_bytes_allocated, 12345u);
  EXPECT_GT(live[0].metrics.bytes_pinned, 0u);
  EXPECT_TRUE(rt->Instances("someone-else").empty());
  RuntimeStats s = rt->Stats();
  EXPECT_EQ(s.tenants[0].totals.running, 1u);
  EXPECT_EQ(s.tenants[0].totals.device_bytes_allocated, 12345u);
  ASSERT_EQ(s.functions.size(), 1u);
  EXPECT_EQ(s.functions[0].totals.device_bytes_allocated, 12345u);
  EXPECT_EQ(run.get()->status, InvocationStatus::kDeadline);
  EXPECT_TRUE(rt->Instances().empty());
}

TEST(Runtime, bad_names_and_ids_are_refused_with_the_reason) {
  TempDir dir;
  auto rt = Make(dir.path());
  std::string bytes = ReadFile(Lifecycle());
  for (const char* name : {"", "fn_lookalike", "has space", "semi;colon"}) {
    auto r = rt->Deploy("acme", name, Span(bytes), "echo");
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(
        r.status().message().find("must be 1-128 characters of A-Z, a-z, 0-9, '-', '_' and '.', not starting with fn_"),
        std::string::npos)
        << r.status();
  }
  auto long_entry = rt->Deploy("acme", "echo", Span(bytes), std::string(257, 'e'));
  EXPECT_EQ(long_entry.status().ToString(), "invalid_argument: entry point name is longer than 256 bytes");
  EXPECT_EQ(rt->Deploy("nobody", "echo", Span(bytes)).status().ToString(), "not_found: no tenant named 'nobody'");
  EXPECT_EQ(rt->DeleteFunction("acme", "echo").ToString(),
            "invalid_argument: delete takes a function id (fn_...), not a name");
}

TEST(Runtime, tenants_see_only_their_own_functions) {
  TempDir dir;
  auto rt = Make(dir.path(), {Tenant("acme"), Tenant("beta")});
  auto f = DeployReady(*rt, "acme", "echo", Lifecycle(), "echo");
  EXPECT_EQ(rt->GetFunction("beta", f.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rt->GetFunction("beta", "echo").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rt->Invoke("beta", f.id, {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rt->DeleteFunction("beta", f.id).code(), StatusCode::kNotFound);
  EXPECT_TRUE(rt->ListFunctions("beta")->empty());
  EXPECT_EQ(rt->ListFunctions("acme")->size(), 1u);
  EXPECT_EQ(rt->Invoke("nobody", f.id, {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(MustInvoke(*rt, "acme", f.id).status, InvocationStatus::kOk);
}

// An invocation resolves a name without reading the store while nothing changed (the runtime's
// resolution cache): every deploy, finished compile and delete is still seen by the next one.
TEST(Runtime, a_name_resolves_to_its_newest_ready_version_after_every_change) {
  TempDir dir;
  auto rt = Make(dir.path());
  auto v1 = DeployReady(*rt, "acme", "greet", Example("hello"));
  InvokeRequest req;
  req.input = "abc";
  EXPECT_EQ(MustInvoke(*rt, "acme", "greet", req).function_id, v1.id);
  EXPECT_EQ(MustInvoke(*rt, "acme", v1.id, req).function_id, v1.id);
  auto v2 = DeployReady(*rt, "acme", "greet", Lifecycle(), "echo");
  InvokeResult newest = MustInvoke(*rt, "acme", "greet", req);
  EXPECT_EQ(newest.function_id, v2.id);
  EXPECT_EQ(newest.output, "abc");
  ASSERT_TRUE(rt->DeleteFunction("acme", v2.id).ok());
  EXPECT_EQ(MustInvoke(*rt, "acme", "greet", req).function_id, v1.id);
  EXPECT_EQ(rt->Invoke("acme", v2.id, {}).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(rt->DeleteFunction("acme", v1.id).ok());
  EXPECT_EQ(rt->Invoke("acme", "greet", {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rt->Invoke("acme", v1.id, {}).status().code(), StatusCode::kNotFound);
}

TEST(Runtime, versions_delete_and_restart_keep_the_store) {
  TempDir dir;
  std::string v1_id, v2_id;
  {
    auto rt = Make(dir.path());
    v1_id = DeployReady(*rt, "acme", "greet", Example("hello")).id;
    auto v2 = DeployReady(*rt, "acme", "greet", Lifecycle(), "echo");
    v2_id = v2.id;
    EXPECT_EQ(v2.version, 2);
    DeployReady(*rt, "acme", "gone", Lifecycle(), "echo");
    InvokeRequest req;
    req.input = "v2";
    EXPECT_EQ(MustInvoke(*rt, "acme", "greet", req).output, "v2");  // the name runs the newest version
    auto gone = rt->GetFunction("acme", "gone");
    ASSERT_TRUE(rt->DeleteFunction("acme", gone->id).ok());
    EXPECT_EQ(rt->Invoke("acme", "gone", {}).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(rt->DeleteFunction("acme", gone->id).code(), StatusCode::kNotFound);
  }
  auto rt = Make(dir.path());
  auto all = rt->ListFunctions("acme");
  ASSERT_EQ(all->size(), 2u);
  for (const auto& f : *all) EXPECT_EQ(f.status, store::DeployStatus::kReady) << f.id;
  InvokeRequest req;
  req.input = "abc";
  EXPECT_EQ(MustInvoke(*rt, "acme", v1_id, req).stdout_text,
            "hello from a gpuwasm guest: 3 input bytes, checksum 00017862\n");
  EXPECT_EQ(MustInvoke(*rt, "acme", v2_id, req).output, "abc");
  EXPECT_EQ(DeployReady(*rt, "acme", "greet", Lifecycle(), "echo").version, 3);
}

TEST(Runtime, loaded_modules_are_capped_and_dropped_ones_load_again) {
  TempDir dir;
  RuntimeConfig c;
  c.store_dir = dir.path();
  c.workers = 4;
  c.loaded_modules = 2;
  c.tenants = {Tenant("acme")};
  RuntimeOptions o;
  o.device = Cpu();
  o.engine.cache_dir = GPUWASM_RUNTIME_TEST_CACHE;
  auto rt = Runtime::Create(std::move(c), std::move(o));
  ASSERT_TRUE(rt.ok()) << rt.status();
  DeployReady(**rt, "acme", "a", Lifecycle(), "echo");
  DeployReady(**rt, "acme", "b", Lifecycle(), "echo");
  DeployReady(**rt, "acme", "hello", Example("hello"));
  EXPECT_EQ((*rt)->loaded_module_count(), 2u);  // the first deploy's module was dropped
  for (int round = 0; round < 2; ++round) {
    for (const char* fn : {"a", "b", "hello"}) {  // each call drops the least recently used
      InvokeRequest req;
      req.input = std::string(fn) + std::to_string(round);
      auto r = MustInvoke(**rt, "acme", fn, req);
      if (std::string(fn) == "hello") {
        EXPECT_NE(r.stdout_text.find("hello from a gpuwasm guest: 6 input bytes"), std::string::npos) << r.stdout_text;
      } else {
        EXPECT_EQ(r.output, req.input);
      }
      EXPECT_LE((*rt)->loaded_module_count(), 2u);
    }
  }
}

TEST(Runtime, compile_interrupted_by_a_crash_resumes_at_start) {
  TempDir dir;
  std::string id;
  {
    auto store = store::LocalStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    std::string bytes = ReadFile(Example("hello"));
    id = (*store)->AddFunction({"acme", "hello", "", 0, ""}, Span(bytes))->id;  // "compiling", no compile ran
  }
  auto rt = Make(dir.path());
  auto rec = rt->WaitReady("acme", id, milliseconds(120'000));
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->status, store::DeployStatus::kReady);
  EXPECT_EQ(MustInvoke(*rt, "acme", id).status, InvocationStatus::kOk);
}

TEST(Runtime, thirty_two_concurrent_invocations_are_all_correct) {
  TempDir dir;
  TenantConfig t = Tenant("acme");
  t.concurrent_invocations = 64;
  auto rt = Make(dir.path(), {t});
  DeployReady(*rt, "acme", "hello", Example("hello"));
  DeployReady(*rt, "acme", "saxpy", Example("saxpy"));
  DeployReady(*rt, "acme", "echo", Lifecycle(), "echo");
  std::vector<std::future<bool>> runs;
  for (int i = 0; i < 32; ++i) {
    runs.push_back(std::async(std::launch::async, [&, i]() -> bool {
      InvokeRequest req;
      req.input = "request " + std::to_string(i) + std::string(static_cast<size_t>(i) * 100, 'z');
      const char* fn = i % 3 == 0 ? "saxpy" : i % 3 == 1 ? "echo" : "hello";
      auto r = rt->Invoke("acme", fn, req);
      if (!r.ok() || r->status != InvocationStatus::kOk) return false;
      if (i % 3 == 0) return r->stdout_text.find(" OK") != std::string::npos;
      if (i % 3 == 1) return r->output == req.input;
      uint32_t sum = 0;
      for (unsigned char c : req.input) sum = sum * 31u + c;
      char want[128];
      std::snprintf(want, sizeof want, "hello from a gpuwasm guest: %zu input bytes, checksum %08x\n", req.input.size(),
                    sum);
      return r->stdout_text == want;
    }));
  }
  int correct = 0;
  for (auto& r : runs) correct += r.get() ? 1 : 0;
  EXPECT_EQ(correct, 32);
  EXPECT_EQ(rt->Stats().tenants[0].totals.invocations[0], 32u);
  ExpectNothingLeft(*rt, "acme");
}

TEST(Runtime, shutdown_finishes_within_grace_then_interrupts) {
  TempDir dir;
  auto rt = Make(dir.path());
  DeployReady(*rt, "acme", "spin", Lifecycle(), "spin_holding");
  InvokeRequest shortly;
  shortly.deadline = milliseconds(300);
  InvokeRequest long_one;
  long_one.deadline = milliseconds(20'000);
  auto a = std::async(std::launch::async, [&] { return rt->Invoke("acme", "spin", shortly); });
  auto b = std::async(std::launch::async, [&] { return rt->Invoke("acme", "spin", long_one); });
  for (int i = 0; rt->Instances().size() < 2; ++i) {
    ASSERT_LT(i, 2000) << "the spinners did not start";
    std::this_thread::sleep_for(milliseconds(5));
  }
  auto started = std::chrono::steady_clock::now();
  std::thread stopper([&] { rt->Shutdown(milliseconds(1000)); });
  while (rt->accepting()) std::this_thread::sleep_for(milliseconds(1));
  auto refused = rt->Invoke("acme", "spin", shortly);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("shutting down"), std::string::npos);
  stopper.join();
  auto stopped_after = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(a.get()->status, InvocationStatus::kDeadline);  // finished on its own within the grace
  auto rb = b.get();
  EXPECT_EQ(rb->status, InvocationStatus::kError);  // interrupted when the grace ran out
  EXPECT_NE(rb->error.find("shutting down"), std::string::npos) << rb->error;
  EXPECT_LT(stopped_after, milliseconds(10'000));
  ExpectNothingLeft(*rt, "acme");
}

}  // namespace
}  // namespace gpuwasm::runtime
