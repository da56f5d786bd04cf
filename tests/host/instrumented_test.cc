// Instrumented PTX through the guest interface (docs/adr/0009-instrumented-ptx.md): every module a
// guest loads is instrumented, each instance's buffers lie in its own window, and what the passes
// catch reaches the guest as WCU_ERR_DEVICE / WCU_ERR_DEADLINE / WCU_ERR_UNSUPPORTED while another
// instance of the same tenant goes on.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "host_harness.h"

namespace gpuwasm::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// where(p): p[0] = p (a guest learns a buffer's device address this way, as on a GPU).
// poke(p, off, v): the u32 at p + off = v, on PTX line 19.
// spin(): loops forever. trapper(): traps on PTX line 29.
constexpr const char* kPtx =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry where(.param .u64 p)\n{\n  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [p];\n  st.global.u64 [%rd1], %rd1;\n  ret;\n}\n"
    ".visible .entry poke(.param .u64 p, .param .u64 off, .param .u32 v)\n{\n"
    "  .reg .b32 %r<2>;\n  .reg .b64 %rd<4>;\n  ld.param.u64 %rd1, [p];\n  ld.param.u64 %rd2, [off];\n"
    "  ld.param.u32 %r1, [v];\n  add.s64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r1;\n  ret;\n}\n"
    ".visible .entry spin()\n{\nL:\n  bra L;\n}\n"
    ".visible .entry trapper()\n{\n  trap;\n  ret;\n}\n";

constexpr uint32_t kOne[3] = {1, 1, 1};

struct Record {
  uint32_t kind, handle;
  uint64_t value;
};
static_assert(sizeof(Record) == host::kWcuArgSize);

// One guest instance driven through its wasi_cuda calls.
struct Tenant {
  GuestInstance g;
  host::WasiCudaContext& cuda;
  int32_t module = 0;

  explicit Tenant(std::shared_ptr<host::TenantContext> shared, host::WasiCudaOptions o = {})
      : g("abi.wasm", o, "", std::move(shared)), cuda(*g.env->cuda) {
    module = cuda.ModuleLoad({reinterpret_cast<const uint8_t*>(kPtx), std::strlen(kPtx)});
    EXPECT_GT(module, 0) << cuda.last_error();
  }
  int32_t Launch(const char* kernel, std::vector<Record> args) {
    int32_t k = cuda.FunctionGet(module, kernel);
    EXPECT_GT(k, 0) << cuda.last_error();
    return cuda.Launch(k, kOne, kOne, 0, {reinterpret_cast<const uint8_t*>(args.data()), args.size() * sizeof(Record)},
                       static_cast<uint32_t>(args.size()));
  }
  // The device address of `buffer`, as its kernels see it.
  uint64_t Address(int32_t buffer) {
    EXPECT_EQ(Launch("where", {{WCU_ARG_BUFFER, static_cast<uint32_t>(buffer), 0}}), WCU_OK) << cuda.last_error();
    uint64_t a = 0;
    EXPECT_EQ(cuda.MemcpyDtoH({reinterpret_cast<uint8_t*>(&a), 8}, buffer, 0), WCU_OK) << cuda.last_error();
    return a;
  }
  uint32_t Word(int32_t buffer, int64_t offset) {
    uint32_t v = 0;
    EXPECT_EQ(cuda.MemcpyDtoH({reinterpret_cast<uint8_t*>(&v), 4}, buffer, offset), WCU_OK) << cuda.last_error();
    return v;
  }
};

std::shared_ptr<host::TenantContext> TenantModules(bool instrument) {
  return std::make_shared<host::TenantContext>(*Cpu()->CreateContext(), instrument);
}

TEST(Instrumented, a_store_into_another_instances_buffer_is_a_fault_of_its_own_and_touches_nothing) {
  auto modules = TenantModules(true);
  Tenant victim(modules), attacker(modules);
  const int32_t b = victim.cuda.MemAlloc(4096), a = attacker.cuda.MemAlloc(4096);
  ASSERT_GT(b, 0);
  ASSERT_GT(a, 0);
  const uint64_t target = victim.Address(b) + 8, from = attacker.Address(a);
  ASSERT_EQ(attacker.Launch("poke", {{WCU_ARG_BUFFER, static_cast<uint32_t>(a), 0},
                                     {WCU_ARG_B64, 0, target - from},
                                     {WCU_ARG_B32, 0, 0xdead}}),
            WCU_OK);
  EXPECT_EQ(attacker.cuda.Synchronize(), WCU_ERR_DEVICE);
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(target));
  EXPECT_EQ(attacker.cuda.last_error(), "kernel 'poke' (PTX line 19): global store of 4 bytes at " + std::string(hex) +
                                            " is outside the instance's buffers");
  // Its GPU state is lost, as after any device fault; the victim's buffer is untouched and it goes on.
  EXPECT_EQ(attacker.cuda.MemAlloc(64), WCU_ERR_DEVICE);
  EXPECT_EQ(victim.Word(b, 8), 0u);
  ASSERT_EQ(
      victim.Launch("poke", {{WCU_ARG_BUFFER, static_cast<uint32_t>(b), 0}, {WCU_ARG_B64, 0, 16}, {WCU_ARG_B32, 0, 7}}),
      WCU_OK);
  EXPECT_EQ(victim.cuda.Synchronize(), WCU_OK) << victim.cuda.last_error();
  EXPECT_EQ(victim.Word(b, 16), 7u);
  EXPECT_EQ(attacker.g.Metrics().kernel_faults, 1u);
  EXPECT_EQ(victim.g.Metrics().kernel_faults, 0u);
}

TEST(Instrumented, without_the_passes_the_same_store_lands_in_the_other_instances_buffer) {
  // What the fence is for: one context per tenant, so its instances' buffers are all reachable.
  auto modules = TenantModules(false);
  Tenant victim(modules), attacker(modules);
  const int32_t b = victim.cuda.MemAlloc(4096), a = attacker.cuda.MemAlloc(4096);
  const uint64_t target = victim.Address(b) + 8, from = attacker.Address(a);
  ASSERT_EQ(attacker.Launch("poke", {{WCU_ARG_BUFFER, static_cast<uint32_t>(a), 0},
                                     {WCU_ARG_B64, 0, target - from},
                                     {WCU_ARG_B32, 0, 0xdead}}),
            WCU_OK);
  EXPECT_EQ(attacker.cuda.Synchronize(), WCU_OK);
  EXPECT_EQ(victim.Word(b, 8), 0xdeadu);
}

TEST(Instrumented, buffers_lie_in_the_instances_window_and_its_room_comes_back_when_freed) {
  host::WasiCudaOptions o;
  o.max_device_bytes = 1 << 20;
  Tenant t(TenantModules(true), o);
  // Allocating and freeing the whole quota again and again never runs out of window.
  for (int i = 0; i < 200; ++i) {
    const int32_t x = t.cuda.MemAlloc(1 << 19), y = t.cuda.MemAlloc(1 << 19);
    ASSERT_GT(x, 0) << i << ": " << t.cuda.last_error();
    ASSERT_GT(y, 0) << i << ": " << t.cuda.last_error();
    ASSERT_EQ(t.cuda.MemFree(x), WCU_OK);
    ASSERT_EQ(t.cuda.MemFree(y), WCU_OK);
  }
  const int32_t x = t.cuda.MemAlloc(1 << 19), y = t.cuda.MemAlloc(1 << 19);
  const uint64_t ax = t.Address(x), ay = t.Address(y);
  EXPECT_LT(ax > ay ? ax - ay : ay - ax, uint64_t{1} << 24) << "both in one window";
  EXPECT_EQ(t.cuda.MemAlloc(1), WCU_ERR_QUOTA);
}

TEST(Instrumented, a_kernel_spinning_forever_ends_at_the_deadline_and_the_tenant_goes_on) {
  auto modules = TenantModules(true);
  host::WasiCudaOptions o;
  o.deadline = Clock::now() + milliseconds(200);
  Tenant runaway(modules, o), other(modules);
  ASSERT_EQ(runaway.Launch("spin", {}), WCU_OK) << runaway.cuda.last_error();
  EXPECT_EQ(runaway.cuda.Synchronize(), WCU_ERR_DEADLINE);
  EXPECT_LT(Clock::now(), *o.deadline + milliseconds(150)) << "stopped late";
  EXPECT_NE(runaway.cuda.last_error().find("'spin'"), std::string::npos) << runaway.cuda.last_error();
  const int32_t b = other.cuda.MemAlloc(64);
  ASSERT_EQ(
      other.Launch("poke", {{WCU_ARG_BUFFER, static_cast<uint32_t>(b), 0}, {WCU_ARG_B64, 0, 4}, {WCU_ARG_B32, 0, 9}}),
      WCU_OK);
  EXPECT_EQ(other.cuda.Synchronize(), WCU_OK) << other.cuda.last_error();
  EXPECT_EQ(other.Word(b, 4), 9u);
}

TEST(Instrumented, a_trap_is_a_device_fault_naming_its_line) {
  auto modules = TenantModules(true);
  Tenant t(modules), other(modules);
  ASSERT_EQ(t.Launch("trapper", {}), WCU_OK);
  EXPECT_EQ(t.cuda.Synchronize(), WCU_ERR_DEVICE);
  EXPECT_EQ(t.cuda.last_error(), "kernel 'trapper' (PTX line 29): trap instruction executed");
  EXPECT_EQ(t.g.Metrics().kernel_faults, 1u);
  ASSERT_EQ(other.Launch("where", {{WCU_ARG_BUFFER, static_cast<uint32_t>(other.cuda.MemAlloc(8)), 0}}), WCU_OK);
  EXPECT_EQ(other.cuda.Synchronize(), WCU_OK) << other.cuda.last_error();
}

TEST(Instrumented, hidden_parameters_are_not_the_guests_to_pass) {
  Tenant t(TenantModules(true));
  const int32_t b = t.cuda.MemAlloc(64);
  EXPECT_EQ(t.Launch("where", {{WCU_ARG_BUFFER, static_cast<uint32_t>(b), 0},
                               {WCU_ARG_B64, 0, 0},
                               {WCU_ARG_B64, 0, 0},
                               {WCU_ARG_B64, 0, 0}}),
            WCU_ERR_BAD_ARGS);
  EXPECT_EQ(t.cuda.last_error(), "launch of 'where': the kernel takes 1 arguments, got 4");
}

TEST(Instrumented, refused_instructions_and_reserved_names_are_errors_naming_them) {
  Tenant t(TenantModules(true));
  auto load = [&](const std::string& body) {
    const std::string ptx =
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n" + body + "  ret;\n}\n";
    return t.cuda.ModuleLoad({reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size()});
  };
  EXPECT_EQ(load("  brkpt;\n"), WCU_ERR_UNSUPPORTED);
  EXPECT_NE(t.cuda.last_error().find("line 6"), std::string::npos) << t.cuda.last_error();
  EXPECT_NE(t.cuda.last_error().find("brkpt"), std::string::npos) << t.cuda.last_error();
  EXPECT_EQ(load("  .reg .b32 __gw_x;\n"), WCU_ERR_BAD_PTX);
  EXPECT_NE(t.cuda.last_error().find("__gw_"), std::string::npos) << t.cuda.last_error();
  EXPECT_GT(load(""), 0) << t.cuda.last_error();
}

TEST(Instrumented, the_cache_compiles_each_text_once_and_keys_it_apart_from_the_plain_form) {
  auto context = *Cpu()->CreateContext();
  auto instrumented = std::make_shared<host::TenantContext>(context, true);
  auto plain = std::make_shared<host::TenantContext>(context, false);
  Tenant a(instrumented), b(instrumented), c(plain);
  EXPECT_EQ(instrumented->compiles(), 1u);
  EXPECT_EQ(plain->compiles(), 1u);
  // The plain module's kernels take no hidden parameters; the instrumented ones do.
  auto ka = a.g.env->cuda->FunctionGet(a.module, "spin");
  auto kc = c.g.env->cuda->FunctionGet(c.module, "spin");
  EXPECT_GT(ka, 0);
  EXPECT_GT(kc, 0);
  EXPECT_EQ(device::cpu::ModuleEntries(*context), 2u);
}

}  // namespace
}  // namespace gpuwasm::testing
