/* abi: exercises every wasi_cuda and wasi_scheduler call, on its success path and on every error
 * path it can produce. Each exported test_* returns 0 when all its checks hold, otherwise the
 * source line of the first failing check; the host side (tests/host/abi_test.cc) also inspects the
 * instance's metrics. Error texts are appended to the output so the host can assert them. */
#include <stdint.h>
#include <string.h>

#include "wasi_cuda.h"
#include "delay_ptx.h"
#include "oob_write_ptx.h"
#include "vector_add_ptx.h"

#define EXPECT(cond) \
  do {               \
    if (!(cond)) return __LINE__; \
  } while (0)
#define EXPORT(name) __attribute__((export_name(#name))) int32_t name(void)

static void emit_error(void) {  /* "<text>\n" of the last error into the output */
  char buf[300];
  int32_t n = wcu_last_error(buf, sizeof buf - 1);
  if (n > (int32_t)sizeof buf - 1) n = sizeof buf - 1;
  buf[n] = '\n';
  gpuwasm_output_write(buf, n + 1);
}

static const char kBadPtx[] = "this is not PTX";
static const char kUnsupportedPtx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n bar.arrive 1, 64;\n ret;\n}\n";

static int32_t load(const unsigned char* ptx, unsigned len, const char* kernel) {
  int32_t m = wcu_module_load(ptx, (int32_t)len);
  return m < 0 ? m : wcu_function(m, kernel);
}

EXPORT(test_device_info) {
  wcu_device_info_t info;
  EXPECT(wcu_device_info(&info, sizeof info) == 120);
  EXPECT(sizeof info == 120);
  EXPECT(info.kind == 0);
  EXPECT(info.max_threads_per_block == 1024);
  EXPECT(info.max_block_dim[2] == 64);
  EXPECT(info.sm_count >= 1);
  EXPECT(info.total_memory > 0);
  EXPECT(memcmp(info.name, "gpuwasm CPU device", 18) == 0);
  char small[8];
  EXPECT(wcu_device_info(small, sizeof small) == 8);
  EXPECT(wcu_device_info((void*)0xfffffff0, 120) == WCU_ERR_BAD_POINTER);
  emit_error();
  return 0;
}

EXPORT(test_modules_and_functions) {
  int32_t m = wcu_module_load(vector_add_ptx, (int32_t)vector_add_ptx_len);
  EXPECT(m > 0);
  EXPECT(wcu_function(m, "vector_add") > 0);
  EXPECT(wcu_function(m, "no_such_kernel") == WCU_ERR_NOT_FOUND);
  emit_error();
  EXPECT(wcu_function_get(m, (const char*)0xfffffff0, 10) == WCU_ERR_BAD_POINTER);
  EXPECT(wcu_module_unload(m) == 0);
  EXPECT(wcu_function(m, "vector_add") == WCU_ERR_BAD_HANDLE);  /* freed handle */
  EXPECT(wcu_module_unload(m) == WCU_ERR_BAD_HANDLE);
  EXPECT(wcu_module_unload(12345) == WCU_ERR_BAD_HANDLE);        /* never valid */
  EXPECT(wcu_module_load(kBadPtx, sizeof kBadPtx - 1) == WCU_ERR_BAD_PTX);
  emit_error();
  EXPECT(wcu_module_load(kUnsupportedPtx, sizeof kUnsupportedPtx - 1) == WCU_ERR_UNSUPPORTED);
  emit_error();
  EXPECT(wcu_module_load((const void*)0xffffff00, 4096) == WCU_ERR_BAD_POINTER);
  /* The same PTX twice: two handles, one compile (the host checks the cache). */
  int32_t a = wcu_module_load(vector_add_ptx, (int32_t)vector_add_ptx_len);
  int32_t b = wcu_module_load(vector_add_ptx, (int32_t)vector_add_ptx_len);
  EXPECT(a > 0 && b > 0 && a != b);
  return 0;
}

EXPORT(test_memory) {
  static unsigned char src[1024], dst[1024];
  for (int i = 0; i < 1024; i++) src[i] = (unsigned char)(i * 7);
  int32_t buf = wcu_mem_alloc(1024);
  EXPECT(buf > 0);
  EXPECT(wcu_memcpy_htod(buf, 0, src, 1024) == 0);
  EXPECT(wcu_memcpy_dtoh(dst, buf, 0, 1024) == 0);
  EXPECT(memcmp(src, dst, 1024) == 0);
  EXPECT(wcu_memset_d8(buf, 100, 0xab, 10) == 0);
  EXPECT(wcu_memcpy_dtoh(dst, buf, 100, 10) == 0);
  EXPECT(dst[0] == 0xab && dst[9] == 0xab);
  int32_t other = wcu_mem_alloc(512);
  EXPECT(other > 0);
  EXPECT(wcu_memcpy_dtod(other, 0, buf, 0, 512) == 0);
  EXPECT(wcu_memcpy_dtoh(dst, other, 0, 512) == 0);
  EXPECT(memcmp(dst, src, 100) == 0 && dst[100] == 0xab);
  EXPECT(wcu_memcpy_htod(buf, 1000, src, 100) == WCU_ERR_OUT_OF_RANGE);
  emit_error();
  EXPECT(wcu_memcpy_dtoh(dst, buf, -1, 10) == WCU_ERR_OUT_OF_RANGE);
  EXPECT(wcu_memset_d8(buf, 0, 0, 1025) == WCU_ERR_OUT_OF_RANGE);
  EXPECT(wcu_memcpy_dtod(other, 0, buf, 600, 512) == WCU_ERR_OUT_OF_RANGE);
  EXPECT(wcu_memcpy_htod(buf, 0, (const void*)0xfffffff0, 64) == WCU_ERR_BAD_POINTER);
  EXPECT(wcu_memcpy_dtoh((void*)0xfffffff0, buf, 0, 64) == WCU_ERR_BAD_POINTER);
  EXPECT(wcu_mem_alloc(0) == WCU_ERR_BAD_ARGS);
  EXPECT(wcu_mem_alloc(-5) == WCU_ERR_BAD_ARGS);
  EXPECT(wcu_mem_free(other) == 0);
  EXPECT(wcu_mem_free(other) == WCU_ERR_BAD_HANDLE);  /* double free */
  emit_error();
  EXPECT(wcu_memcpy_htod(other, 0, src, 1) == WCU_ERR_BAD_HANDLE);
  EXPECT(wcu_memcpy_dtod(buf, 0, other, 0, 1) == WCU_ERR_BAD_HANDLE);
  return 0;
}

EXPORT(test_launch) {
  enum { N = 1000 };
  static float a[N], b[N], c[N];
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)i;
  }
  int32_t k = load(vector_add_ptx, vector_add_ptx_len, "vector_add");
  EXPECT(k > 0);
  int32_t da = wcu_mem_alloc(sizeof a), db = wcu_mem_alloc(sizeof b), dc = wcu_mem_alloc(sizeof c);
  EXPECT(da > 0 && db > 0 && dc > 0);
  EXPECT(wcu_memcpy_htod(da, 0, a, sizeof a) == 0);
  EXPECT(wcu_memcpy_htod(db, 0, b, sizeof b) == 0);
  wcu_arg args[] = {wcu_arg_buffer(da, 0), wcu_arg_buffer(db, 0), wcu_arg_buffer(dc, 0), wcu_arg_u32(N)};
  EXPECT(wcu_launch(k, (N + 127) / 128, 1, 1, 128, 1, 1, 0, args, 4) == 0);
  EXPECT(wcu_synchronize() == 0);
  EXPECT(wcu_memcpy_dtoh(c, dc, 0, sizeof c) == 0);
  for (int i = 0; i < N; i++) EXPECT(c[i] == a[i] + b[i]);
  /* Offsets into a buffer: c[i] = a[i + 10] + b[i] for the first 990 elements. */
  wcu_arg shifted[] = {wcu_arg_buffer(da, 40), wcu_arg_buffer(db, 0), wcu_arg_buffer(dc, 0), wcu_arg_u32(N - 10)};
  EXPECT(wcu_launch(k, 8, 1, 1, 128, 1, 1, 0, shifted, 4) == 0);
  EXPECT(wcu_memcpy_dtoh(c, dc, 0, sizeof c) == 0);
  EXPECT(c[0] == a[10] + b[0] && c[989] == a[999] + b[989]);
  return 0;
}

EXPORT(test_launch_errors) {
  int32_t k = load(vector_add_ptx, vector_add_ptx_len, "vector_add");
  int32_t d = wcu_mem_alloc(64);
  EXPECT(k > 0 && d > 0);
  wcu_arg good[] = {wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_u32(16)};
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, good, 3) == WCU_ERR_BAD_ARGS);  /* count */
  emit_error();
  wcu_arg wrong_kind[] = {wcu_arg_u32(1), wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_u32(16)};
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, wrong_kind, 4) == WCU_ERR_BAD_ARGS);
  emit_error();
  wcu_arg wide_n[] = {wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_u64(16)};
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, wide_n, 4) == WCU_ERR_BAD_ARGS);
  wcu_arg unknown_kind[] = {{9, 0, 0}, wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_u32(16)};
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, unknown_kind, 4) == WCU_ERR_BAD_ARGS);
  wcu_arg past_end[] = {wcu_arg_buffer(d, 65), wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_u32(16)};
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, past_end, 4) == WCU_ERR_OUT_OF_RANGE);
  wcu_arg forged[] = {wcu_arg_buffer(d + 1, 0), wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_u32(16)};
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, forged, 4) == WCU_ERR_BAD_HANDLE);
  EXPECT(wcu_launch(k, 0, 1, 1, 32, 1, 1, 0, good, 4) == WCU_ERR_BAD_DIMENSIONS);
  EXPECT(wcu_launch(k, 1, 1, 1, 2048, 1, 1, 0, good, 4) == WCU_ERR_BAD_DIMENSIONS);
  emit_error();
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 32, 2, 0, good, 4) == WCU_ERR_BAD_DIMENSIONS);
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 1, 1, 1 << 24, good, 4) == WCU_ERR_BAD_DIMENSIONS);
  EXPECT(wcu_launch(k, -1, 1, 1, 32, 1, 1, 0, good, 4) == WCU_ERR_BAD_DIMENSIONS);
  EXPECT(wcu_launch(k + 1, 1, 1, 1, 32, 1, 1, 0, good, 4) == WCU_ERR_BAD_HANDLE);
  EXPECT(wcu_launch(d, 1, 1, 1, 32, 1, 1, 0, good, 4) == WCU_ERR_BAD_HANDLE);  /* a buffer is no kernel */
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, (const wcu_arg*)0xfffffff0, 4) == WCU_ERR_BAD_POINTER);
  EXPECT(wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, good, 4) == 0);
  EXPECT(wcu_synchronize() == 0);
  return 0;
}

/* nvcc -ptx -O3 -arch=sm_80 of: struct Affine { float scale, shift; unsigned long long tag; unsigned n; };
 * extern "C" __global__ void affine(Affine a, float* out) { out[i] = a.scale * i + a.shift for i < a.n;
 * out[a.n] = (float)(a.tag >> 32) }: a 24-byte struct passed by value. */
static const char kAffinePtx[] =
    ".version 9.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry affine(\n"
    " .param .align 8 .b8 affine_param_0[24],\n"
    " .param .u64 affine_param_1\n"
    ")\n"
    "{\n"
    " .reg .pred  %p<3>;\n"
    " .reg .b16  %rs<9>;\n"
    " .reg .f32  %f<8>;\n"
    " .reg .b32  %r<4>;\n"
    " .reg .b64  %rd<9>;\n"
    " ld.param.v2.f32  {%f3, %f4}, [affine_param_0];\n"
    " ld.param.u64  %rd3, [affine_param_1];\n"
    " ld.param.u32  %r3, [affine_param_0+16];\n"
    " ld.param.u64  %rd2, [affine_param_0+8];\n"
    " cvta.to.global.u64  %rd1, %rd3;\n"
    " mov.u32  %r1, %tid.x;\n"
    " setp.ge.u32  %p1, %r1, %r3;\n"
    " @%p1 bra  $L__BB0_2;\n"
    " cvt.rn.f32.u32  %f5, %r1;\n"
    " fma.rn.f32  %f6, %f3, %f5, %f4;\n"
    " mul.wide.u32  %rd4, %r1, 4;\n"
    " add.s64  %rd5, %rd1, %rd4;\n"
    " st.global.f32  [%rd5], %f6;\n"
    "$L__BB0_2:\n"
    " setp.ne.s32  %p2, %r1, 0;\n"
    " @%p2 bra  $L__BB0_4;\n"
    " shr.u64  %rd6, %rd2, 32;\n"
    " cvt.rn.f32.u64  %f7, %rd6;\n"
    " mul.wide.u32  %rd7, %r3, 4;\n"
    " add.s64  %rd8, %rd1, %rd7;\n"
    " st.global.f32  [%rd8], %f7;\n"
    "$L__BB0_4:\n"
    " ret;\n"
    "}\n";

struct affine { float scale, shift; unsigned long long tag; unsigned n; };

EXPORT(test_struct_argument) {
  int32_t m = wcu_module_load(kAffinePtx, sizeof kAffinePtx - 1);
  EXPECT(m > 0);
  int32_t k = wcu_function(m, "affine");
  EXPECT(k > 0);
  EXPECT(sizeof(struct affine) == 24);
  int32_t d = wcu_mem_alloc(64 * 4);
  EXPECT(d > 0);
  struct affine a = {0.5f, 3.0f, 7ull << 32, 40};
  wcu_arg args[] = {wcu_arg_bytes(&a, sizeof a), wcu_arg_buffer(d, 0)};
  EXPECT(wcu_launch(k, 1, 1, 1, 64, 1, 1, 0, args, 2) == 0);
  EXPECT(wcu_synchronize() == 0);
  float out[41];
  EXPECT(wcu_memcpy_dtoh(out, d, 0, sizeof out) == 0);
  for (int i = 0; i < 40; i++) EXPECT(out[i] == 0.5f * (float)i + 3.0f);
  EXPECT(out[40] == 7.0f);
  /* The byte count must be the parameter's size; the bytes must be in linear memory. */
  wcu_arg short_struct[] = {wcu_arg_bytes(&a, 16), wcu_arg_buffer(d, 0)};
  EXPECT(wcu_launch(k, 1, 1, 1, 64, 1, 1, 0, short_struct, 2) == WCU_ERR_BAD_ARGS);
  emit_error();
  wcu_arg outside[] = {wcu_arg_bytes((const void*)0xfffffff0, 24), wcu_arg_buffer(d, 0)};
  EXPECT(wcu_launch(k, 1, 1, 1, 64, 1, 1, 0, outside, 2) == WCU_ERR_BAD_POINTER);
  emit_error();
  /* A scalar record cannot fill a struct; BYTES of the right size fill a scalar too. */
  wcu_arg scalar[] = {wcu_arg_u64(1), wcu_arg_buffer(d, 0)};
  EXPECT(wcu_launch(k, 1, 1, 1, 64, 1, 1, 0, scalar, 2) == WCU_ERR_BAD_ARGS);
  emit_error();
  uint64_t where = 0;
  wcu_arg ptr_as_bytes[] = {wcu_arg_bytes(&a, sizeof a), wcu_arg_bytes(&where, 8)};
  EXPECT(wcu_launch(k, 1, 1, 1, 64, 1, 1, 0, ptr_as_bytes, 2) == 0);  /* a null pointer: the kernel faults */
  EXPECT(wcu_synchronize() == WCU_ERR_DEVICE);
  return 0;
}

EXPORT(test_quota) {  /* the host allows 3 MiB and 4 buffers */
  int32_t b[4];
  for (int i = 0; i < 3; i++) EXPECT((b[i] = wcu_mem_alloc(1 << 20)) > 0);
  EXPECT(wcu_mem_alloc(1) == WCU_ERR_QUOTA);
  emit_error();
  EXPECT(wcu_mem_free(b[0]) == 0);
  EXPECT((b[0] = wcu_mem_alloc(1 << 19)) > 0);
  EXPECT((b[3] = wcu_mem_alloc(1 << 19)) > 0);
  EXPECT(wcu_mem_alloc(1) == WCU_ERR_QUOTA);  /* 4 buffers */
  emit_error();
  return 0;
}

EXPORT(test_module_quota) {  /* the host allows 2 modules */
  EXPECT(wcu_module_load(vector_add_ptx, (int32_t)vector_add_ptx_len) > 0);
  EXPECT(wcu_module_load(oob_write_ptx, (int32_t)oob_write_ptx_len) > 0);
  EXPECT(wcu_module_load(delay_ptx, (int32_t)delay_ptx_len) == WCU_ERR_QUOTA);
  emit_error();
  return 0;
}

/* 200,000 registers a thread: a CTA of 1024 threads would zero-fill 1.6 GB of register file. */
static const unsigned char huge_regs_ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry regs(.param .u64 out)\n{\n"
    "  .reg .b64 %rd<200000>;\n  ld.param.u64 %rd1, [out];\n  ret;\n}\n";

EXPORT(test_scratch_quota) {  /* the host's context allows 256 MiB */
  int32_t k = load(huge_regs_ptx, sizeof huge_regs_ptx - 1, "regs");
  EXPECT(k > 0);
  wcu_arg args[] = {wcu_arg_u64(0)};
  EXPECT(wcu_launch(k, 4, 1, 1, 1024, 1, 1, 0, args, 1) == WCU_ERR_QUOTA);
  emit_error();
  EXPECT(wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, args, 1) == 0);  /* one warp's worth: 51 MB, within it */
  EXPECT(wcu_synchronize() == 0);
  return 0;
}

EXPORT(test_device_fault) {
  int32_t k = load(oob_write_ptx, oob_write_ptx_len, "oob_write");
  int32_t d = wcu_mem_alloc(256 * 4);
  EXPECT(k > 0 && d > 0);
  wcu_arg args[] = {wcu_arg_buffer(d, 0), wcu_arg_u32(256), wcu_arg_u32(1)};  /* one past the end */
  EXPECT(wcu_launch(k, 2, 1, 1, 128, 1, 1, 0, args, 3) == 0);                 /* asynchronous */
  EXPECT(wcu_synchronize() == WCU_ERR_DEVICE);
  emit_error();
  EXPECT(wcu_mem_alloc(16) == WCU_ERR_DEVICE);  /* the instance's GPU state is lost */
  return 0;
}

/* Slow launches against max_inflight_launches = 2 and a 50 ms admission wait (set by the host). */
EXPORT(test_back_pressure) {
  int32_t k = load(delay_ptx, delay_ptx_len, "delay");
  EXPECT(k > 0);
  wcu_arg slow[] = {wcu_arg_u64(300 * 1000 * 1000ull)};  /* 300 ms */
  EXPECT(wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, slow, 1) == 0);
  EXPECT(wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, slow, 1) == 0);
  EXPECT(wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, slow, 1) == WCU_ERR_BUSY);
  emit_error();
  EXPECT(wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, slow, 1) == WCU_ERR_BUSY);
  EXPECT(wcu_synchronize() == 0);
  wcu_arg quick[] = {wcu_arg_u64(1000)};
  EXPECT(wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, quick, 1) == 0);  /* slots are free again */
  EXPECT(wcu_synchronize() == 0);
  return 0;
}

/* max_inflight_launches = 1, a long admission wait, and a 200 ms invocation deadline. */
EXPORT(test_deadline_in_admission) {
  int32_t k = load(delay_ptx, delay_ptx_len, "delay");
  EXPECT(k > 0);
  wcu_arg slow[] = {wcu_arg_u64(5000ull * 1000 * 1000)};  /* 5 s: stopped by the deadline */
  EXPECT(wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, slow, 1) == 0);
  EXPECT(wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, slow, 1) == WCU_ERR_DEADLINE);  /* waits until the deadline */
  emit_error();
  EXPECT(wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, slow, 1) == WCU_ERR_DEADLINE);  /* already passed */
  EXPECT(wcu_synchronize() == WCU_ERR_DEADLINE);  /* the running launch was stopped at the deadline */
  return 0;
}

EXPORT(test_scheduler) {
  int64_t left = wcu_deadline_remaining_ms();
  EXPECT(left > 1000 && left <= 60000);  /* the host gives a 60 s deadline */
  for (int i = 0; i < 25; i++) EXPECT(wcu_yield() == 0);
  return 0;
}

EXPORT(test_not_permitted) {  /* the host turned GPU access off */
  wcu_device_info_t info;
  EXPECT(wcu_device_info(&info, sizeof info) == WCU_ERR_NOT_PERMITTED);
  EXPECT(wcu_module_load(vector_add_ptx, (int32_t)vector_add_ptx_len) == WCU_ERR_NOT_PERMITTED);
  EXPECT(wcu_mem_alloc(16) == WCU_ERR_NOT_PERMITTED);
  EXPECT(wcu_synchronize() == WCU_ERR_NOT_PERMITTED);
  emit_error();
  EXPECT(wcu_yield() == 0);  /* the scheduler is not a GPU capability */
  return 0;
}

/* Launches `input` vector_add kernels with a yield between each: for counters and concurrency. */
EXPORT(test_launch_many) {
  int32_t count = 0;
  gpuwasm_input_read(&count, 4, 0);
  int32_t k = load(vector_add_ptx, vector_add_ptx_len, "vector_add");
  int32_t d = wcu_mem_alloc(4096);
  EXPECT(k > 0 && d > 0);
  wcu_arg args[] = {wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_buffer(d, 0), wcu_arg_u32(1024)};
  for (int i = 0; i < count; i++) {
    EXPECT(wcu_launch(k, 8, 1, 1, 128, 1, 1, 0, args, 4) == 0);
    EXPECT(wcu_yield() == 0);
  }
  EXPECT(wcu_synchronize() == 0);
  return 0;
}
