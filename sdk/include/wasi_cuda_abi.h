/* wasi_cuda_abi.h: the values and layouts of the gpuwasm guest interface (ABI version 1): error
 * codes, the kernel argument record and the device_info record. The one definition of each:
 * guests get it through wasi_cuda.h, and the host (src/host/) compiles against this same file and
 * checks the layouts with static_asserts. Plain C, the same on wasm32 and the host. See docs/abi.md. */
#ifndef GPUWASM_WASI_CUDA_ABI_H_
#define GPUWASM_WASI_CUDA_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WCU_OK 0
#define WCU_ERR_NOT_PERMITTED (-1)  /* GPU capability is off for this tenant */
#define WCU_ERR_BAD_POINTER (-2)    /* a (pointer, length) is outside linear memory */
#define WCU_ERR_BAD_HANDLE (-3)     /* unknown, freed or foreign handle */
#define WCU_ERR_BAD_PTX (-4)        /* PTX failed to parse/validate/compile */
#define WCU_ERR_NOT_FOUND (-5)      /* no such kernel in the module */
#define WCU_ERR_BAD_ARGS (-6)       /* arguments do not match the kernel's parameters */
#define WCU_ERR_BAD_DIMENSIONS (-7) /* grid/block/shared memory outside the device's limits */
#define WCU_ERR_QUOTA (-8)          /* a per-instance or per-tenant limit would be exceeded */
#define WCU_ERR_BUSY (-9)           /* back-pressure: no launch slot before the wait limit */
#define WCU_ERR_DEADLINE (-10)      /* the invocation's deadline has passed */
#define WCU_ERR_DEVICE (-11)        /* the device faulted; the instance's GPU state is lost */
#define WCU_ERR_OUT_OF_RANGE (-12)  /* offset/length outside a device buffer */
#define WCU_ERR_UNSUPPORTED (-13)   /* valid, but this device cannot do it */
#define WCU_ERR_INTERNAL (-14)      /* a host bug */

/* Kernel argument record: one per .param of the kernel, in order. */
typedef struct wcu_arg {
  uint32_t kind;   /* WCU_ARG_* */
  uint32_t handle; /* buffer handle for WCU_ARG_BUFFER; the byte count for WCU_ARG_BYTES */
  uint64_t value;  /* the value (little-endian, low bytes used), the byte offset into the buffer, or
                      the guest address of WCU_ARG_BYTES's bytes */
} wcu_arg;

#define WCU_ARG_B8 1u
#define WCU_ARG_B16 2u
#define WCU_ARG_B32 3u    /* int, unsigned, float */
#define WCU_ARG_B64 4u    /* long long, double */
#define WCU_ARG_BUFFER 5u /* device address of a buffer plus a byte offset */
#define WCU_ARG_BYTES \
  6u /* a parameter of any size (a struct passed by value): `handle` bytes at guest address `value` */

/* Filled by wcu_device_info (little-endian, 120 bytes). */
typedef struct wcu_device_info_t {
  uint32_t kind; /* 0 CPU device, 1 CUDA */
  uint32_t compute_major, compute_minor;
  uint32_t sm_count;
  uint32_t max_threads_per_block;
  uint32_t max_block_dim[3];
  uint32_t max_grid_dim[3];
  uint32_t max_shared_per_block;
  uint64_t total_memory;
  char name[64];
} wcu_device_info_t;

#ifdef __cplusplus
}
#endif

#endif /* GPUWASM_WASI_CUDA_ABI_H_ */
