/* wasi_cuda.h: the gpuwasm guest interface (ABI version 1), for C and C++ guests compiled with
 * clang --target=wasm32-wasi (sdk/cmake/wasm32-wasi.cmake).
 *
 * Every call returns an int32: >= 0 success (a handle, a byte count or 0), < 0 one of the
 * WCU_ERR_* codes below; after a failure, wcu_last_error() gives a human-readable reason.
 * Pointers are addresses in the guest's linear memory; the host checks every (pointer, length)
 * before touching it. Handles are local to the running instance. See docs/abi.md. */
#ifndef GPUWASM_WASI_CUDA_H_
#define GPUWASM_WASI_CUDA_H_

#include <stddef.h>
#include <stdint.h>

/* Error codes, argument records and the device_info layout: one definition, shared with the host. */
#include "wasi_cuda_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WCU_IMPORT(name) __attribute__((import_module("wasi_cuda"), import_name(#name)))
#define WCU_SCHED_IMPORT(name) __attribute__((import_module("wasi_scheduler"), import_name(#name)))
#define GPUWASM_IO_IMPORT(name) __attribute__((import_module("gpuwasm"), import_name(#name)))

int32_t wcu_device_info(void* out, int32_t out_len) WCU_IMPORT(device_info);
int32_t wcu_module_load(const void* ptx, int32_t ptx_len) WCU_IMPORT(module_load);
int32_t wcu_module_unload(int32_t module) WCU_IMPORT(module_unload);
int32_t wcu_function_get(int32_t module, const char* name, int32_t name_len) WCU_IMPORT(function_get);
int32_t wcu_mem_alloc(int64_t size) WCU_IMPORT(mem_alloc);
int32_t wcu_mem_free(int32_t buffer) WCU_IMPORT(mem_free);
int32_t wcu_memcpy_htod(int32_t buffer, int64_t dst_offset, const void* src, int32_t len) WCU_IMPORT(memcpy_htod);
int32_t wcu_memcpy_dtoh(void* dst, int32_t buffer, int64_t src_offset, int32_t len) WCU_IMPORT(memcpy_dtoh);
int32_t wcu_memcpy_dtod(int32_t dst, int64_t dst_offset, int32_t src, int64_t src_offset, int64_t len)
    WCU_IMPORT(memcpy_dtod);
int32_t wcu_memset_d8(int32_t buffer, int64_t offset, int32_t value, int64_t len) WCU_IMPORT(memset_d8);
int32_t wcu_launch(int32_t kernel, int32_t gx, int32_t gy, int32_t gz, int32_t bx, int32_t by, int32_t bz,
                   int32_t shared_bytes, const wcu_arg* args, int32_t args_count) WCU_IMPORT(launch);
int32_t wcu_synchronize(void) WCU_IMPORT(synchronize);
int32_t wcu_last_error(char* out, int32_t out_len) WCU_IMPORT(last_error);

/* wasi_scheduler: yield returns 0 continue, 1 deadline near, 2 deadline passed (stop now). */
int32_t wcu_yield(void) WCU_SCHED_IMPORT(yield);
int64_t wcu_deadline_remaining_ms(void) WCU_SCHED_IMPORT(deadline_remaining_ms);

/* gpuwasm: the invocation's input (request body) and output (response body). */
int32_t gpuwasm_input_len(void) GPUWASM_IO_IMPORT(input_len);
int32_t gpuwasm_input_read(void* dst, int32_t len, int32_t offset) GPUWASM_IO_IMPORT(input_read);
int32_t gpuwasm_output_write(const void* src, int32_t len) GPUWASM_IO_IMPORT(output_write);

/* ---- helpers ---- */

static inline wcu_arg wcu_arg_buffer(int32_t buffer, uint64_t offset) {
  wcu_arg a = {WCU_ARG_BUFFER, (uint32_t)buffer, offset};
  return a;
}
static inline wcu_arg wcu_arg_u32(uint32_t v) {
  wcu_arg a = {WCU_ARG_B32, 0, v};
  return a;
}
static inline wcu_arg wcu_arg_i32(int32_t v) { return wcu_arg_u32((uint32_t)v); }
static inline wcu_arg wcu_arg_f32(float v) {
  union {
    float f;
    uint32_t u;
  } x;
  x.f = v;
  return wcu_arg_u32(x.u);
}
static inline wcu_arg wcu_arg_u64(uint64_t v) {
  wcu_arg a = {WCU_ARG_B64, 0, v};
  return a;
}
static inline wcu_arg wcu_arg_f64(double v) {
  union {
    double d;
    uint64_t u;
  } x;
  x.d = v;
  return wcu_arg_u64(x.u);
}

/* A struct (or any parameter) passed by value: its bytes, exactly as large as the parameter. */
static inline wcu_arg wcu_arg_bytes(const void* p, uint32_t len) {
  wcu_arg a = {WCU_ARG_BYTES, len, (uint64_t)(uintptr_t)p};
  return a;
}

/* Kernel handle for `name` in `module`. */
static inline int32_t wcu_function(int32_t module, const char* name) {
  size_t n = 0;
  while (name[n] != 0) n++;
  return wcu_function_get(module, name, (int32_t)n);
}

/* The last error as a NUL-terminated string in `buf`. */
static inline const char* wcu_error_text(char* buf, int32_t len) {
  int32_t n = wcu_last_error(buf, len - 1);
  if (n < 0) n = 0;
  buf[n < len - 1 ? n : len - 1] = 0;
  return buf;
}

#ifdef __cplusplus
}
#endif

#endif /* GPUWASM_WASI_CUDA_H_ */
