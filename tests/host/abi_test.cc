// Every wasi_cuda / wasi_scheduler call, driven by guests: success paths, every error path, the
// error texts, quotas, back-pressure and the metrics each leaves behind.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "host_harness.h"

namespace gpuwasm::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

#define EXPECT_GUEST_OK(g, name) \
  EXPECT_EQ((g).Call(name), 0) << name << ": the guest check at this line of abi.c failed"

TEST(Abi, device_info) {
  GuestInstance g("abi.wasm");
  EXPECT_GUEST_OK(g, "test_device_info");
  EXPECT_EQ(g.Errors(),
            std::vector<std::string>{"device_info: guest range [4294967280, +120) is outside linear memory"});
}

TEST(Abi, modules_and_functions) {
  GuestInstance g("abi.wasm");
  EXPECT_GUEST_OK(g, "test_modules_and_functions");
  auto errors = g.Errors();
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0], "no kernel named 'no_such_kernel' in the module; its kernels: vector_add");
  EXPECT_EQ(errors[1], "line 1, column 1: unknown or unsupported directive 'this' at module scope");
  EXPECT_EQ(errors[2],
            "line 6: unsupported instruction 'bar.arrive': only barrier 0 without a thread count is supported");
  // Two live modules of the same PTX: both retained, compiled once.
  host::InstanceMetricsSnapshot m = g.Metrics();
  EXPECT_EQ(m.bytes_pinned, 2 * PtxBytes("vector_add")) << m;  // retained twice
  // vector_add, the two rejected texts, and vector_add again: its first module was unloaded while
  // nothing else held it, so the cache let it go.
  EXPECT_EQ(g.modules->compiles(), 4u);
}

TEST(Abi, memory) {
  GuestInstance g("abi.wasm");
  EXPECT_GUEST_OK(g, "test_memory");
  auto errors = g.Errors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0], "memcpy_htod: range [1000, +100) is outside the buffer of 1024 bytes");
  EXPECT_NE(errors[1].find("mem_free: bad buffer handle"), std::string::npos) << errors[1];
  EXPECT_EQ(g.Metrics().device_bytes_allocated, 1024u);  // 512-byte buffer freed
}

TEST(Abi, launch_runs_kernels_with_buffer_offsets) {
  GuestInstance g("abi.wasm");
  EXPECT_GUEST_OK(g, "test_launch");
  host::InstanceMetricsSnapshot m = g.Metrics();
  EXPECT_EQ(m.kernels_launched, 2u);
  EXPECT_EQ(m.device_bytes_allocated, 3 * 4000u);
  EXPECT_EQ(m.back_pressure_rejections, 0u);
}

TEST(Abi, launch_errors_name_the_problem) {
  GuestInstance g("abi.wasm");
  EXPECT_GUEST_OK(g, "test_launch_errors");
  auto errors = g.Errors();
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0], "launch of 'vector_add': the kernel takes 4 arguments, got 3");
  EXPECT_EQ(errors[1],
            "launch of 'vector_add': argument 0 (vector_add_param_0, 8 bytes): got a 4-byte value, the "
            "parameter is 8 bytes (a pointer parameter takes a buffer: wcu_arg_buffer(buffer, offset))");
  EXPECT_EQ(errors[2], "launch of 'vector_add': block x = 2048 exceeds the device limit 1024");
  EXPECT_EQ(g.Metrics().kernels_launched, 1u);  // only the good launch reached the dispatch path
}

TEST(Abi, a_struct_passed_by_value_is_copied_from_guest_memory) {
  GuestInstance g("abi.wasm");
  EXPECT_GUEST_OK(g, "test_struct_argument");
  auto errors = g.Errors();
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0],
            "launch of 'affine': argument 0 (affine_param_0, 24 bytes): got 16 bytes, the parameter is 24 bytes");
  EXPECT_EQ(errors[1], "launch argument bytes: guest range [4294967280, +24) is outside linear memory");
  EXPECT_EQ(errors[2],
            "launch of 'affine': argument 0 (affine_param_0, 24 bytes): got a 8-byte value, the parameter is 24 bytes");
  EXPECT_EQ(g.Metrics().kernels_launched, 2u);
}

TEST(Abi, quotas_on_bytes_and_buffers) {
  host::WasiCudaOptions o;
  o.max_device_bytes = 3 << 20;
  o.max_buffers = 4;
  GuestInstance g("abi.wasm", o);
  EXPECT_GUEST_OK(g, "test_quota");
  auto errors = g.Errors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0], "allocating 1 bytes would exceed the instance's quota of 3145728 device bytes (3145728 in use)");
  EXPECT_EQ(errors[1], "buffer quota of 4 reached");
  EXPECT_EQ(g.Metrics().device_bytes_allocated, 3u << 20);
  EXPECT_EQ(g.Metrics().quota_refusals, 2u);  // one per refused call
}

// What a launch costs the host beyond its buffers is charged to the tenant's context: a guest
// gets WCU_ERR_QUOTA naming it, and nothing was allocated.
TEST(Abi, launch_scratch_counts_against_the_context_quota) {
  auto shared = std::make_shared<host::TenantContext>(*Cpu()->CreateContext({256ull << 20}));
  GuestInstance g("abi.wasm", {}, "", shared);
  EXPECT_GUEST_OK(g, "test_scratch_quota");
  auto errors = g.Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("the launch of 'regs' (registers, local and shared memory of "), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[0].find("would exceed the context's quota of 268435456 bytes"), std::string::npos) << errors[0];
  EXPECT_EQ(g.Metrics().kernels_launched, 1u);
  EXPECT_EQ(g.Metrics().quota_refusals, 1u);
}

TEST(Abi, quota_on_modules) {
  host::WasiCudaOptions o;
  o.max_modules = 2;
  GuestInstance g("abi.wasm", o);
  EXPECT_GUEST_OK(g, "test_module_quota");
  EXPECT_EQ(g.Errors(), std::vector<std::string>{"module quota of 2 reached"});
  EXPECT_EQ(g.Metrics().quota_refusals, 1u);
}

TEST(Abi, quota_on_retained_ptx) {
  host::WasiCudaOptions o;
  o.max_ptx_bytes = 1500;  // vector_add fits, oob_write does not
  GuestInstance g("abi.wasm", o);
  EXPECT_NE(g.Call("test_module_quota"), 0);  // its second load is refused
  EXPECT_EQ(g.env->cuda->last_error(),
            "retaining " + std::to_string(PtxBytes("oob_write")) + " more PTX bytes would exceed the quota of 1500");
  EXPECT_EQ(g.Metrics().bytes_pinned, PtxBytes("vector_add"));
}

TEST(Abi, device_fault_is_reported_and_sticks) {
  GuestInstance g("abi.wasm");
  EXPECT_GUEST_OK(g, "test_device_fault");
  auto errors = g.Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("kernel 'oob_write' (PTX line"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("is outside the instance's buffers"), std::string::npos) << errors[0];
}

TEST(Abi, back_pressure_rejections_are_counted_exactly) {
  host::WasiCudaOptions o;
  o.max_inflight_launches = 2;
  o.admission_wait = milliseconds(50);
  GuestInstance g("abi.wasm", o);
  EXPECT_GUEST_OK(g, "test_back_pressure");
  host::InstanceMetricsSnapshot m = g.Metrics();
  EXPECT_EQ(m.back_pressure_rejections, 2u);
  EXPECT_EQ(m.kernels_launched, 3u);
  EXPECT_EQ(g.Errors(),
            std::vector<std::string>{"launch of 'delay': no launch slot (2 in flight) within the wait limit"});
  EXPECT_EQ(g.env->cuda->inflight_launches(), 0u);  // every permit was released by completion
}

TEST(Abi, deadline_during_admission) {
  host::WasiCudaOptions o;
  o.max_inflight_launches = 1;
  o.admission_wait = milliseconds(10000);
  o.deadline = Clock::now() + milliseconds(200);
  GuestInstance g("abi.wasm", o);
  auto t0 = Clock::now();
  EXPECT_GUEST_OK(g, "test_deadline_in_admission");
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
  EXPECT_LT(took, 2000) << "admission must give up at the deadline, not the 10 s wait limit";
  EXPECT_EQ(g.Metrics().back_pressure_rejections, 2u);
  EXPECT_EQ(g.Metrics().kernels_launched, 1u);
  EXPECT_EQ(g.Errors(), std::vector<std::string>{"launch of 'delay': the invocation's deadline has passed"});
}

TEST(Abi, launch_after_the_deadline_is_refused_with_free_slots) {
  // Nothing waits here: the deadline passes between two launches, and the second must be
  // refused (the launch path asks a flag the Watchdog sets, not the clock).
  host::WasiCudaOptions o;
  o.deadline = Clock::now() + milliseconds(100);
  GuestInstance g("abi.wasm", o);
  host::WasiCudaContext& cuda = *g.env->cuda;
  const std::string ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry noop()\n{\n ret;\n}\n";
  int32_t m = cuda.ModuleLoad({reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size()});
  ASSERT_GT(m, 0) << cuda.last_error();
  int32_t k = cuda.FunctionGet(m, "noop");
  ASSERT_GT(k, 0) << cuda.last_error();
  const uint32_t one[3] = {1, 1, 1};
  EXPECT_EQ(cuda.Launch(k, one, one, 0, {}, 0), WCU_OK) << cuda.last_error();
  EXPECT_EQ(cuda.Synchronize(), WCU_OK);
  std::this_thread::sleep_until(*o.deadline + milliseconds(50));
  EXPECT_EQ(cuda.Launch(k, one, one, 0, {}, 0), WCU_ERR_DEADLINE);
  EXPECT_EQ(cuda.last_error(), "launch of 'noop': the invocation's deadline has passed");
  EXPECT_EQ(g.Metrics().kernels_launched, 1u);
  EXPECT_EQ(g.Metrics().back_pressure_rejections, 1u);
  // A context created after its deadline refuses its first launch.
  o.deadline = Clock::now() - milliseconds(1);
  GuestInstance late("abi.wasm", o);
  host::WasiCudaContext& c2 = *late.env->cuda;
  m = c2.ModuleLoad({reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size()});
  k = c2.FunctionGet(m, "noop");
  EXPECT_EQ(c2.Launch(k, one, one, 0, {}, 0), WCU_ERR_DEADLINE);
}

TEST(Abi, errors_say_what_to_do) {
  GuestInstance g("abi.wasm");
  host::WasiCudaContext& cuda = *g.env->cuda;
  auto load = [&](const std::string& ptx) {
    return cuda.ModuleLoad({reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size()});
  };
  const std::string head = ".version 8.0\n.target sm_80\n.address_size 64\n";
  // nvcc without extern "C" mangles the name: the error lists the kernels and says so.
  int32_t m = load(head +
                   ".visible .entry _Z5ScalePfi(.param .u64 p, .param .u32 n)\n{\n ret;\n}\n"
                   ".visible .entry other()\n{\n ret;\n}\n");
  ASSERT_GT(m, 0) << cuda.last_error();
  EXPECT_EQ(cuda.FunctionGet(m, "Scale"), WCU_ERR_NOT_FOUND);
  EXPECT_EQ(cuda.last_error(),
            "no kernel named 'Scale' in the module; its kernels: _Z5ScalePfi, other ('_Z5ScalePfi' is "
            "'Scale' as C++ names it: declare the kernel extern \"C\" to keep its name, or ask for "
            "'_Z5ScalePfi')");
  // A store past a buffer's end names the buffer and how far past (the CPU device faults there).
  m = load(head +
           ".visible .entry poke(.param .u64 p, .param .u64 off)\n{\n .reg .b64 %rd<4>;\n"
           " ld.param.u64 %rd1, [p];\n ld.param.u64 %rd2, [off];\n add.s64 %rd3, %rd1, %rd2;\n"
           " st.global.u32 [%rd3], 0;\n ret;\n}\n");
  ASSERT_GT(m, 0) << cuda.last_error();
  int32_t k = cuda.FunctionGet(m, "poke"), b = cuda.MemAlloc(1024);
  uint8_t records[32] = {};
  const uint32_t buffer_kind = WCU_ARG_BUFFER, u64_kind = WCU_ARG_B64;
  const uint64_t off = 1024 + 12;
  std::memcpy(records, &buffer_kind, 4);
  std::memcpy(records + 4, &b, 4);
  std::memcpy(records + 16, &u64_kind, 4);
  std::memcpy(records + 24, &off, 8);
  const uint32_t one[3] = {1, 1, 1};
  ASSERT_EQ(cuda.Launch(k, one, one, 0, records, 2), WCU_OK) << cuda.last_error();
  EXPECT_EQ(cuda.Synchronize(), WCU_ERR_DEVICE);
  EXPECT_NE(cuda.last_error().find("is outside the instance's buffers (12 bytes past the end of buffer " +
                                   std::to_string(b) + ", of 1024 bytes)"),
            std::string::npos)
      << cuda.last_error();
  // With nvcc's line information (-lineinfo: .file and .loc), the fault names the .cu line too.
  GuestInstance g2("abi.wasm");
  host::WasiCudaContext& c2 = *g2.env->cuda;
  const std::string lined = head +
                            ".file 1 \"/home/dev/kernels/poke.cu\"\n"
                            ".visible .entry poke2(.param .u64 p, .param .u64 off)\n{\n .reg .b64 %rd<4>;\n"
                            " .loc 1 7 3\n ld.param.u64 %rd1, [p];\n ld.param.u64 %rd2, [off];\n"
                            " add.s64 %rd3, %rd1, %rd2;\n .loc 1 9 5\n st.global.u32 [%rd3], 0;\n ret;\n}\n";
  m = c2.ModuleLoad({reinterpret_cast<const uint8_t*>(lined.data()), lined.size()});
  ASSERT_GT(m, 0) << c2.last_error();
  k = c2.FunctionGet(m, "poke2");
  b = c2.MemAlloc(1024);
  std::memcpy(records + 4, &b, 4);
  ASSERT_EQ(c2.Launch(k, one, one, 0, records, 2), WCU_OK) << c2.last_error();
  EXPECT_EQ(c2.Synchronize(), WCU_ERR_DEVICE);
  EXPECT_EQ(c2.last_error().rfind("kernel 'poke2' (PTX line 13, poke.cu:9): global store of 4 bytes at 0x", 0), 0u)
      << c2.last_error();
}

TEST(Abi, a_shape_that_fit_one_kernel_is_checked_again_for_another) {
  // The launch path remembers the last shape that fit, per kernel: the same shape on a kernel
  // with a smaller .maxntid, and the same kernel after its module was unloaded, are refused.
  GuestInstance g("abi.wasm", {});
  host::WasiCudaContext& cuda = *g.env->cuda;
  auto load = [&](const std::string& ptx) {
    return cuda.ModuleLoad({reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size()});
  };
  const std::string head = ".version 8.0\n.target sm_80\n.address_size 64\n";
  int32_t m =
      load(head + ".visible .entry wide()\n{\n ret;\n}\n.visible .entry narrow() .maxntid 32, 1, 1\n{\n ret;\n}\n");
  ASSERT_GT(m, 0) << cuda.last_error();
  int32_t wide = cuda.FunctionGet(m, "wide"), narrow = cuda.FunctionGet(m, "narrow");
  ASSERT_GT(wide, 0);
  ASSERT_GT(narrow, 0);
  const uint32_t one[3] = {1, 1, 1}, b64[3] = {64, 1, 1};
  EXPECT_EQ(cuda.Launch(wide, one, b64, 0, {}, 0), WCU_OK) << cuda.last_error();
  EXPECT_EQ(cuda.Launch(wide, one, b64, 0, {}, 0), WCU_OK) << cuda.last_error();
  EXPECT_EQ(cuda.Launch(narrow, one, b64, 0, {}, 0), WCU_ERR_BAD_DIMENSIONS);
  EXPECT_EQ(cuda.last_error(), "launch of 'narrow': block of 64 threads exceeds the kernel's .maxntid of 32");
  const uint32_t too_much_shared = 1u << 30;
  EXPECT_EQ(cuda.Launch(wide, one, b64, too_much_shared, {}, 0), WCU_ERR_BAD_DIMENSIONS);
  EXPECT_EQ(cuda.Launch(wide, one, b64, 0, {}, 0), WCU_OK) << cuda.last_error();
  EXPECT_EQ(cuda.ModuleUnload(m), WCU_OK);
  EXPECT_EQ(cuda.Launch(wide, one, b64, 0, {}, 0), WCU_ERR_BAD_HANDLE);
  EXPECT_EQ(cuda.Synchronize(), WCU_OK);
  EXPECT_EQ(g.Metrics().kernels_launched, 3u);
}

TEST(Abi, a_parameter_no_record_fits_is_refused_for_every_kind) {
  // A 16-byte .param (a struct passed by value) takes neither a scalar record nor a BUFFER.
  GuestInstance g("abi.wasm", {});
  host::WasiCudaContext& cuda = *g.env->cuda;
  const std::string ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry take(.param .align 8 .b8 take_param_0[16])\n{\n ret;\n}\n";
  int32_t m = cuda.ModuleLoad({reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size()});
  ASSERT_GT(m, 0) << cuda.last_error();
  int32_t k = cuda.FunctionGet(m, "take");
  ASSERT_GT(k, 0) << cuda.last_error();
  int32_t buf = cuda.MemAlloc(64);
  const uint32_t one[3] = {1, 1, 1};
  for (uint32_t kind : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 0xffffffffu}) {
    uint8_t record[16] = {};
    std::memcpy(record, &kind, 4);
    std::memcpy(record + 4, &buf, 4);
    EXPECT_NE(cuda.Launch(k, one, one, 0, record, 1), WCU_OK) << "record kind " << kind;
  }
  EXPECT_EQ(cuda.last_error(),
            "launch of 'take': argument 0 (take_param_0, 16 bytes): unknown argument kind 4294967295");
  // The C++ entry point: a span shorter than `count` records is refused before any is read.
  uint8_t half[8] = {};
  EXPECT_EQ(cuda.Launch(k, one, one, 0, half, 1), WCU_ERR_BAD_ARGS);
  EXPECT_EQ(cuda.last_error(), "launch: fewer argument bytes than records");
  EXPECT_EQ(g.Metrics().kernels_launched, 0u);
}

TEST(Abi, scheduler_counts_yields) {
  host::WasiCudaOptions o;
  o.deadline = Clock::now() + std::chrono::seconds(60);
  GuestInstance g("abi.wasm", o);
  EXPECT_GUEST_OK(g, "test_scheduler");
  EXPECT_EQ(g.Metrics().yield_count, 25u);
}

TEST(Abi, gpu_capability_off) {
  host::WasiCudaOptions o;
  o.gpu_enabled = false;
  GuestInstance g("abi.wasm", o);
  EXPECT_GUEST_OK(g, "test_not_permitted");
  EXPECT_EQ(g.Errors(), std::vector<std::string>{"GPU access is not enabled for this function's tenant"});
  EXPECT_EQ(g.Metrics(), (host::InstanceMetricsSnapshot{0, 0, 0, 1, 0}));  // not permitted is no quota refusal
}

TEST(Abi, raw_argument_edge_cases) {
  GuestInstance g("raw.wasm");
  EXPECT_EQ(g.Call("huge_alloc"), WCU_ERR_QUOTA);
  EXPECT_EQ(g.Call("negative_alloc"), WCU_ERR_BAD_ARGS);
  EXPECT_EQ(g.Call("negative_handle"), WCU_ERR_BAD_HANDLE);
  EXPECT_EQ(g.Call("zero_handle"), WCU_ERR_BAD_HANDLE);
  EXPECT_EQ(g.Call("htod_length_wraps"), WCU_ERR_BAD_POINTER);
  EXPECT_EQ(g.Call("memset_huge_offset"), WCU_ERR_OUT_OF_RANGE);
  EXPECT_EQ(g.Call("launch_absurd_count"), WCU_ERR_BAD_ARGS);
  EXPECT_EQ(g.Call("last_error_bad_pointer"), WCU_ERR_BAD_POINTER);
  EXPECT_EQ(g.Call("remaining_without_deadline"), -1);
}

TEST(Abi, teardown_releases_every_buffer_and_module) {
  auto context = *Cpu()->CreateContext();
  auto modules = std::make_shared<host::TenantContext>(context);
  {
    GuestInstance g("abi.wasm", {}, "", modules);
    EXPECT_GUEST_OK(g, "test_launch");
    EXPECT_EQ(context->allocated_bytes(), 12000u);
  }
  EXPECT_EQ(context->allocated_bytes(), 0u);
  {  // also when the instance dies with work in flight
    host::WasiCudaOptions o;
    o.deadline = Clock::now() + milliseconds(100);
    GuestInstance g("abi.wasm", o, "", modules);
    (void)g.Call("test_deadline_in_admission");
  }
  EXPECT_EQ(context->allocated_bytes(), 0u);
}

TEST(Metrics, snapshot_is_a_value) {
  host::InstanceMetricsSnapshot a, b{1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(a, (host::InstanceMetricsSnapshot{0, 0, 0, 0, 0, 0, 0}));
  EXPECT_NE(a, b);
  host::InstanceMetricsSnapshot c = b;
  EXPECT_EQ(c, b);
  EXPECT_EQ(host::ToString(b),
            "{kernels_launched=1, bytes_pinned=2, back_pressure_rejections=3, yield_count=4, device_bytes_allocated=5, "
            "kernel_faults=6, quota_refusals=7}");
  nlohmann::json j = b;
  EXPECT_EQ(j.dump(), R"({"back_pressure_rejections":3,"bytes_pinned":2,"device_bytes_allocated":5,"kernel_faults":6,)"
                      R"("kernels_launched":1,"quota_refusals":7,"yield_count":4})");
  EXPECT_EQ(j.get<host::InstanceMetricsSnapshot>(), b);
  EXPECT_EQ(host::ToJson(b), j.dump());
  host::InstanceMetricsSnapshot big{~0ull, 0, 1ull << 40, ~0u, 9, 0, 12345678901234ull};
  EXPECT_EQ(host::ToJson(big), nlohmann::json(big).dump());
  EXPECT_EQ(host::ToJson(a), nlohmann::json(a).dump());
  // A snapshot written before kernel_faults or quota_refusals existed still reads.
  j.erase("kernel_faults");
  j.erase("quota_refusals");
  EXPECT_EQ(j.get<host::InstanceMetricsSnapshot>().kernel_faults, 0u);
  EXPECT_EQ(j.get<host::InstanceMetricsSnapshot>().quota_refusals, 0u);
}

}  // namespace
}  // namespace gpuwasm::testing
