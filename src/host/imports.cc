// The host functions guests import, under the names wasm2c gives them (Z_<module>Z_<name>):
// WASI preview1 subset, the gpuwasm I/O module, wasi_cuda and wasi_scheduler. Every guest
// pointer is bounds-checked here, once, before a span reaches the implementation.
//
// GuestImports() lives in this file on purpose: a binary that accepts these imports (through the
// engine's import list) necessarily links every function the compiled guests will resolve.
#include <sys/random.h>
#include <time.h>

#include <cstring>
#include <string_view>
#include <type_traits>

#include "host/guest_io.h"
#include "host/host_env.h"
#include "wasm/instance.h"

// The rest of WASI preview1: what a program may link without needing it (files, directories,
// sockets, signals). Each fails as WASI specifies for a process whose only descriptors are stdio
// and that has no preopened directory: EBADF for any other descriptor (so wasi-libc finds no
// preopens and fopen fails with ENOENT-like errors), and for stdio the errno the call gives on a
// character device. X(name, errno on open stdio, C parameters: the first named a0); the wasm
// signature each is imported with is derived from its C parameters (GuestImports).
#define GPUWASM_WASI_REFUSED(X)                                                                                        \
  X(fd_advise, kSpipe, (uint32_t a0, uint64_t, uint64_t, uint32_t))                                                    \
  X(fd_allocate, kNotsup, (uint32_t a0, uint64_t, uint64_t))                                                           \
  X(fd_datasync, kInval, (uint32_t a0))                                                                                \
  X(fd_fdstat_set_flags, kNotsup, (uint32_t a0, uint32_t))                                                             \
  X(fd_fdstat_set_rights, kNotcapable, (uint32_t a0, uint64_t, uint64_t))                                              \
  X(fd_filestat_get, kNotsup, (uint32_t a0, uint32_t))                                                                 \
  X(fd_filestat_set_size, kInval, (uint32_t a0, uint64_t))                                                             \
  X(fd_filestat_set_times, kNotsup, (uint32_t a0, uint64_t, uint64_t, uint32_t))                                       \
  X(fd_pread, kSpipe, (uint32_t a0, uint32_t, uint32_t, uint64_t, uint32_t))                                           \
  X(fd_prestat_get, kBadf, (uint32_t a0, uint32_t))                                                                    \
  X(fd_prestat_dir_name, kBadf, (uint32_t a0, uint32_t, uint32_t))                                                     \
  X(fd_pwrite, kSpipe, (uint32_t a0, uint32_t, uint32_t, uint64_t, uint32_t))                                          \
  X(fd_readdir, kNotdir, (uint32_t a0, uint32_t, uint32_t, uint64_t, uint32_t))                                        \
  X(fd_renumber, kNotsup, (uint32_t a0, uint32_t))                                                                     \
  X(fd_sync, kInval, (uint32_t a0))                                                                                    \
  X(fd_tell, kSpipe, (uint32_t a0, uint32_t))                                                                          \
  X(path_create_directory, kNotdir, (uint32_t a0, uint32_t, uint32_t))                                                 \
  X(path_filestat_get, kNotdir, (uint32_t a0, uint32_t, uint32_t, uint32_t, uint32_t))                                 \
  X(path_filestat_set_times, kNotdir, (uint32_t a0, uint32_t, uint32_t, uint32_t, uint64_t, uint64_t, uint32_t))       \
  X(path_link, kNotdir, (uint32_t a0, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t))                     \
  X(path_open, kNotdir, (uint32_t a0, uint32_t, uint32_t, uint32_t, uint32_t, uint64_t, uint64_t, uint32_t, uint32_t)) \
  X(path_readlink, kNotdir, (uint32_t a0, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t))                           \
  X(path_remove_directory, kNotdir, (uint32_t a0, uint32_t, uint32_t))                                                 \
  X(path_rename, kNotdir, (uint32_t a0, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t))                             \
  X(path_symlink, kNotdir, (uint32_t, uint32_t, uint32_t a0, uint32_t, uint32_t))                                      \
  X(path_unlink_file, kNotdir, (uint32_t a0, uint32_t, uint32_t))                                                      \
  X(sock_accept, kNotsock, (uint32_t a0, uint32_t, uint32_t))                                                          \
  X(sock_recv, kNotsock, (uint32_t a0, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t))                              \
  X(sock_send, kNotsock, (uint32_t a0, uint32_t, uint32_t, uint32_t, uint32_t))                                        \
  X(sock_shutdown, kNotsock, (uint32_t a0, uint32_t))

using gpuwasm::host::GuestIo;
using gpuwasm::host::HostEnv;
using gpuwasm::host::WasiCudaContext;

// ---- the import functions, under the names wasm2c gives them (Z_<module>Z_<name>) ----

namespace {

// WASI errno values (preview1).
constexpr uint32_t kSuccess = 0, kBadf = 8, kFault = 21, kInval = 28;
// WASI errnos of the calls refused (GPUWASM_WASI_REFUSED).
constexpr uint32_t kNosys = 52, kNotdir = 54, kNotsock = 57, kNotsup = 58, kSpipe = 70, kNotcapable = 76;

GuestIo& Io(void* env) { return static_cast<HostEnv*>(env)->io; }

bool Store32(GuestIo& io, uint32_t ptr, uint32_t v) {
  uint8_t* p = io.GuestPtr(ptr, 4);
  if (p == nullptr) return false;
  std::memcpy(p, &v, 4);
  return true;
}

// args_* and environ_* share the layout: a pointer array plus a buffer of NUL-ended strings.
uint32_t SizesGet(GuestIo& io, const std::vector<std::string>& v, uint32_t count_ptr, uint32_t size_ptr) {
  uint64_t total = 0;
  for (const std::string& s : v) total += s.size() + 1;
  if (!Store32(io, count_ptr, static_cast<uint32_t>(v.size())) ||
      !Store32(io, size_ptr, static_cast<uint32_t>(total))) {
    return kFault;
  }
  return kSuccess;
}

uint32_t StringsGet(GuestIo& io, const std::vector<std::string>& v, uint32_t ptrs, uint32_t buf) {
  uint64_t total = 0;
  for (const std::string& s : v) total += s.size() + 1;
  uint8_t* b = io.GuestPtr(buf, total);
  if (b == nullptr || io.GuestPtr(ptrs, 4ull * v.size()) == nullptr) return kFault;
  uint32_t off = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    Store32(io, ptrs + 4 * static_cast<uint32_t>(i), buf + off);
    std::memcpy(b + off, v[i].c_str(), v[i].size() + 1);
    off += static_cast<uint32_t>(v[i].size() + 1);
  }
  return kSuccess;
}

}  // namespace

extern "C" {

uint32_t Z_wasi_snapshot_preview1Z_fd_write(void* env, uint32_t fd, uint32_t iovs, uint32_t iovs_len,
                                            uint32_t nwritten_ptr) {
  GuestIo& io = Io(env);
  if ((fd != 1 && fd != 2) || io.stdio_closed[fd]) return kBadf;
  uint8_t* vec = io.GuestPtr(iovs, 8ull * iovs_len);
  if (vec == nullptr) return kFault;
  uint64_t total = 0;
  for (uint32_t i = 0; i < iovs_len; ++i) {
    uint32_t buf, len;
    std::memcpy(&buf, vec + 8 * i, 4);
    std::memcpy(&len, vec + 8 * i + 4, 4);
    const uint8_t* p = io.GuestPtr(buf, len);
    if (p == nullptr) return kFault;
    if (fd == 1)
      io.AppendStdout(p, len);
    else
      io.AppendStderr(p, len);
    total += len;
  }
  return Store32(io, nwritten_ptr, static_cast<uint32_t>(total)) ? kSuccess : kFault;
}

uint32_t Z_wasi_snapshot_preview1Z_fd_read(void* env, uint32_t fd, uint32_t iovs, uint32_t iovs_len,
                                           uint32_t nread_ptr) {
  GuestIo& io = Io(env);
  if (fd != 0 || io.stdio_closed[0]) return kBadf;
  uint8_t* vec = io.GuestPtr(iovs, 8ull * iovs_len);
  if (vec == nullptr) return kFault;
  const std::string& in = io.options().input;
  uint64_t total = 0;
  for (uint32_t i = 0; i < iovs_len; ++i) {
    uint32_t buf, len;
    std::memcpy(&buf, vec + 8 * i, 4);
    std::memcpy(&len, vec + 8 * i + 4, 4);
    uint8_t* p = io.GuestPtr(buf, len);
    if (p == nullptr) return kFault;
    uint64_t n = std::min<uint64_t>(len, in.size() - io.stdin_pos);
    std::memcpy(p, in.data() + io.stdin_pos, n);  // NOLINT(bugprone-not-null-terminated-result): bytes, not a string
    io.stdin_pos += n;
    total += n;
  }
  return Store32(io, nread_ptr, static_cast<uint32_t>(total)) ? kSuccess : kFault;
}

uint32_t Z_wasi_snapshot_preview1Z_fd_close(void* env, uint32_t fd) {
  GuestIo& io = Io(env);
  if (fd > 2 || io.stdio_closed[fd]) return kBadf;
  io.stdio_closed[fd] = true;
  return kSuccess;
}

uint32_t Z_wasi_snapshot_preview1Z_fd_seek(void*, uint32_t, uint64_t, uint32_t, uint32_t) {
  return kBadf;  // no seekable descriptors exist
}

uint32_t Z_wasi_snapshot_preview1Z_fd_fdstat_get(void* env, uint32_t fd, uint32_t buf) {
  GuestIo& io = Io(env);
  if (fd > 2 || io.stdio_closed[fd]) return kBadf;
  uint8_t* p = io.GuestPtr(buf, 24);
  if (p == nullptr) return kFault;
  std::memset(p, 0, 24);
  // stdout and stderr are character devices without seek or tell: to wasi-libc a terminal, so it
  // buffers stdout by line (fully buffered, a trap or deadline would lose all but what filled its
  // buffer). stdin stays a plain descriptor (filetype unknown).
  if (fd != 0) p[0] = 2;  // __WASI_FILETYPE_CHARACTER_DEVICE
  uint64_t rights = fd == 0 ? (1u << 1) /* fd_read */ : (1u << 6) /* fd_write */;
  std::memcpy(p + 8, &rights, 8);
  return kSuccess;
}

uint32_t Z_wasi_snapshot_preview1Z_args_sizes_get(void* env, uint32_t argc_ptr, uint32_t size_ptr) {
  return SizesGet(Io(env), Io(env).options().args, argc_ptr, size_ptr);
}

uint32_t Z_wasi_snapshot_preview1Z_args_get(void* env, uint32_t argv, uint32_t buf) {
  return StringsGet(Io(env), Io(env).options().args, argv, buf);
}

uint32_t Z_wasi_snapshot_preview1Z_environ_sizes_get(void* env, uint32_t count_ptr, uint32_t size_ptr) {
  return SizesGet(Io(env), Io(env).options().env, count_ptr, size_ptr);
}

uint32_t Z_wasi_snapshot_preview1Z_environ_get(void* env, uint32_t ptrs, uint32_t buf) {
  return StringsGet(Io(env), Io(env).options().env, ptrs, buf);
}

uint32_t Z_wasi_snapshot_preview1Z_clock_time_get(void* env, uint32_t id, uint64_t, uint32_t out) {
  clockid_t clk;
  switch (id) {
    case 0: clk = CLOCK_REALTIME; break;
    case 1: clk = CLOCK_MONOTONIC; break;
    case 2: clk = CLOCK_PROCESS_CPUTIME_ID; break;
    case 3: clk = CLOCK_THREAD_CPUTIME_ID; break;
    default: return kInval;
  }
  uint8_t* p = Io(env).GuestPtr(out, 8);
  if (p == nullptr) return kFault;
  timespec ts{};
  clock_gettime(clk, &ts);
  uint64_t ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  std::memcpy(p, &ns, 8);
  return kSuccess;
}

uint32_t Z_wasi_snapshot_preview1Z_random_get(void* env, uint32_t buf, uint32_t len) {
  uint8_t* p = Io(env).GuestPtr(buf, len);
  if (p == nullptr) return kFault;
  uint32_t done = 0;
  while (done < len) {
    ssize_t n = getrandom(p + done, len - done, 0);
    if (n <= 0) return kInval;
    done += static_cast<uint32_t>(n);
  }
  return kSuccess;
}

void Z_wasi_snapshot_preview1Z_proc_exit(void*, uint32_t code) {
  gpuwasm::wasm::ExitCurrentCall(static_cast<int32_t>(code));
}

// The refused calls: EBADF unless `a0` is open stdio, then their errno on a character device.
#define GPUWASM_REFUSED_DEFINE(name, err, args)                                \
  uint32_t Z_wasi_snapshot_preview1Z_##name(void* env, GPUWASM_UNPAREN args) { \
    const GuestIo& io = Io(env);                                               \
    return a0 <= 2 && !io.stdio_closed[a0] ? err : kBadf;                      \
  }
#define GPUWASM_UNPAREN(...) __VA_ARGS__
GPUWASM_WASI_REFUSED(GPUWASM_REFUSED_DEFINE)
#undef GPUWASM_REFUSED_DEFINE
#undef GPUWASM_UNPAREN

uint32_t Z_wasi_snapshot_preview1Z_clock_res_get(void* env, uint32_t id, uint32_t out) {
  if (id > 3) return kInval;  // realtime, monotonic, process and thread CPU time
  uint8_t* p = Io(env).GuestPtr(out, 8);
  if (p == nullptr) return kFault;
  const uint64_t ns = 1;
  std::memcpy(p, &ns, 8);
  return kSuccess;
}

// Waiting for descriptors or clocks is not offered (nothing to wait for but the deadline): sleep()
// and poll() fail with ENOTSUP at once.
uint32_t Z_wasi_snapshot_preview1Z_poll_oneoff(void*, uint32_t, uint32_t, uint32_t, uint32_t) { return kNotsup; }

uint32_t Z_wasi_snapshot_preview1Z_proc_raise(void*, uint32_t) { return kNosys; }

uint32_t Z_wasi_snapshot_preview1Z_sched_yield(void*) { return kSuccess; }

uint32_t Z_gpuwasmZ_input_len(void* env) { return static_cast<uint32_t>(Io(env).options().input.size()); }

uint32_t Z_gpuwasmZ_input_read(void* env, uint32_t dst, uint32_t len, uint32_t offset) {
  GuestIo& io = Io(env);
  uint8_t* p = io.GuestPtr(dst, len);
  if (p == nullptr) return static_cast<uint32_t>(WCU_ERR_BAD_POINTER);
  const std::string& in = io.options().input;
  if (offset >= in.size()) return 0;
  uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(len, in.size() - offset));
  std::memcpy(p, in.data() + offset, n);  // NOLINT(bugprone-not-null-terminated-result): bytes, not a string
  return n;
}

uint32_t Z_gpuwasmZ_output_write(void* env, uint32_t src, uint32_t len) {
  GuestIo& io = Io(env);
  const uint8_t* p = io.GuestPtr(src, len);
  if (p == nullptr) return static_cast<uint32_t>(WCU_ERR_BAD_POINTER);
  if (!io.AppendOutput(p, len)) return static_cast<uint32_t>(WCU_ERR_QUOTA);
  return len;
}

}  // extern "C"

namespace {

using namespace gpuwasm::host;

// The instance's wasi_cuda context, or nullptr (GPU access not configured for this host).
WasiCudaContext* Cuda(void* env) { return static_cast<HostEnv*>(env)->cuda.get(); }

uint32_t Ret(int32_t v) { return static_cast<uint32_t>(v); }

[[gnu::noinline, gnu::cold]] int32_t BadPointer(void* env, uint32_t ptr, uint64_t len, const char* what) {
  return Cuda(env)->FailGuestRange(ptr, len, what);
}

// Resolves a guest (ptr, len) or records WCU_ERR_BAD_POINTER.
inline uint8_t* Guest(void* env, uint32_t ptr, uint64_t len, const char* what, int32_t* err) {
  uint8_t* p = static_cast<HostEnv*>(env)->io.GuestPtr(ptr, len);
  if (p == nullptr) [[unlikely]]
    *err = BadPointer(env, ptr, len, what);
  return p;
}

}  // namespace

#define GPUWASM_NEED_CUDA(env) \
  if (Cuda(env) == nullptr) return Ret(WCU_ERR_NOT_PERMITTED)

extern "C" {

uint32_t Z_wasi_cudaZ_device_info(void* env, uint32_t out, uint32_t len) {
  GPUWASM_NEED_CUDA(env);
  int32_t err;
  uint8_t* p = Guest(env, out, len, "device_info", &err);
  return p ? Ret(Cuda(env)->DeviceInfo({p, len})) : Ret(err);
}

uint32_t Z_wasi_cudaZ_module_load(void* env, uint32_t ptx, uint32_t len) {
  GPUWASM_NEED_CUDA(env);
  int32_t err;
  uint8_t* p = Guest(env, ptx, len, "module_load", &err);
  return p ? Ret(Cuda(env)->ModuleLoad({p, len})) : Ret(err);
}

uint32_t Z_wasi_cudaZ_module_unload(void* env, uint32_t module) {
  GPUWASM_NEED_CUDA(env);
  return Ret(Cuda(env)->ModuleUnload(static_cast<int32_t>(module)));
}

uint32_t Z_wasi_cudaZ_function_get(void* env, uint32_t module, uint32_t name, uint32_t len) {
  GPUWASM_NEED_CUDA(env);
  int32_t err;
  uint8_t* p = Guest(env, name, len, "function_get", &err);
  if (p == nullptr) return Ret(err);
  return Ret(Cuda(env)->FunctionGet(static_cast<int32_t>(module), std::string_view(reinterpret_cast<char*>(p), len)));
}

uint32_t Z_wasi_cudaZ_mem_alloc(void* env, uint64_t size) {
  GPUWASM_NEED_CUDA(env);
  return Ret(Cuda(env)->MemAlloc(static_cast<int64_t>(size)));
}

uint32_t Z_wasi_cudaZ_mem_free(void* env, uint32_t buf) {
  GPUWASM_NEED_CUDA(env);
  return Ret(Cuda(env)->MemFree(static_cast<int32_t>(buf)));
}

uint32_t Z_wasi_cudaZ_memcpy_htod(void* env, uint32_t buf, uint64_t off, uint32_t src, uint32_t len) {
  GPUWASM_NEED_CUDA(env);
  int32_t err;
  uint8_t* p = Guest(env, src, len, "memcpy_htod", &err);
  return p ? Ret(Cuda(env)->MemcpyHtoD(static_cast<int32_t>(buf), static_cast<int64_t>(off), {p, len})) : Ret(err);
}

uint32_t Z_wasi_cudaZ_memcpy_dtoh(void* env, uint32_t dst, uint32_t buf, uint64_t off, uint32_t len) {
  GPUWASM_NEED_CUDA(env);
  int32_t err;
  uint8_t* p = Guest(env, dst, len, "memcpy_dtoh", &err);
  return p ? Ret(Cuda(env)->MemcpyDtoH({p, len}, static_cast<int32_t>(buf), static_cast<int64_t>(off))) : Ret(err);
}

uint32_t Z_wasi_cudaZ_memcpy_dtod(void* env, uint32_t dst, uint64_t dst_off, uint32_t src, uint64_t src_off,
                                  uint64_t len) {
  GPUWASM_NEED_CUDA(env);
  return Ret(Cuda(env)->MemcpyDtoD(static_cast<int32_t>(dst), static_cast<int64_t>(dst_off), static_cast<int32_t>(src),
                                   static_cast<int64_t>(src_off), static_cast<int64_t>(len)));
}

uint32_t Z_wasi_cudaZ_memset_d8(void* env, uint32_t buf, uint64_t off, uint32_t value, uint64_t len) {
  GPUWASM_NEED_CUDA(env);
  return Ret(Cuda(env)->MemsetD8(static_cast<int32_t>(buf), static_cast<int64_t>(off), static_cast<int32_t>(value),
                                 static_cast<int64_t>(len)));
}

// Z_wasi_cudaZ_launch is in wasi_cuda.cc, where the launch path inlines into it.

uint32_t Z_wasi_cudaZ_synchronize(void* env) {
  GPUWASM_NEED_CUDA(env);
  return Ret(Cuda(env)->Synchronize());
}

uint32_t Z_wasi_cudaZ_last_error(void* env, uint32_t out, uint32_t len) {
  GPUWASM_NEED_CUDA(env);
  uint8_t* p = static_cast<HostEnv*>(env)->io.GuestPtr(out, len);
  if (p == nullptr) return Ret(WCU_ERR_BAD_POINTER);  // keeps the error being asked about
  return Ret(Cuda(env)->LastError({p, len}));
}

uint32_t Z_wasi_schedulerZ_yield(void* env) { return Ret(static_cast<HostEnv*>(env)->scheduler.Yield()); }

uint64_t Z_wasi_schedulerZ_deadline_remaining_ms(void* env) {
  return static_cast<uint64_t>(static_cast<HostEnv*>(env)->scheduler.DeadlineRemainingMs());
}

}  // extern "C"

// ---- what guests may import: each import's wasm signature derived from the C++ function that
// implements it (i32 is uint32_t, i64 uint64_t), so the two cannot disagree ----

namespace gpuwasm::host {
namespace {

template <class T>
constexpr char WasmType() {
  static_assert(std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>, "imports take and return i32 or i64");
  return std::is_same_v<T, uint32_t> ? 'i' : 'I';
}

template <class R, class... A>
wasm::ImportSpec Import(const char* module, const char* name, R (*)(void*, A...)) {
  std::string results;
  if constexpr (!std::is_void_v<R>) results = WasmType<R>();
  return {module, name, std::string{WasmType<A>()...}, results};
}

}  // namespace

std::vector<wasm::ImportSpec> GuestImports() {
#define GPUWASM_WASI(name) Import("wasi_snapshot_preview1", #name, &Z_wasi_snapshot_preview1Z_##name)
#define GPUWASM_REFUSED_SPEC(name, err, args) GPUWASM_WASI(name),
  return {
      GPUWASM_WASI_REFUSED(GPUWASM_REFUSED_SPEC)  //
      GPUWASM_WASI(clock_res_get),
      GPUWASM_WASI(poll_oneoff),
      GPUWASM_WASI(proc_raise),
      GPUWASM_WASI(sched_yield),
      GPUWASM_WASI(fd_write),
      GPUWASM_WASI(fd_read),
      GPUWASM_WASI(fd_close),
      GPUWASM_WASI(fd_seek),
      GPUWASM_WASI(fd_fdstat_get),
      GPUWASM_WASI(args_sizes_get),
      GPUWASM_WASI(args_get),
      GPUWASM_WASI(environ_sizes_get),
      GPUWASM_WASI(environ_get),
      GPUWASM_WASI(clock_time_get),
      GPUWASM_WASI(random_get),
      GPUWASM_WASI(proc_exit),
      Import("gpuwasm", "input_len", &Z_gpuwasmZ_input_len),
      Import("gpuwasm", "input_read", &Z_gpuwasmZ_input_read),
      Import("gpuwasm", "output_write", &Z_gpuwasmZ_output_write),
      Import("wasi_cuda", "device_info", &Z_wasi_cudaZ_device_info),
      Import("wasi_cuda", "module_load", &Z_wasi_cudaZ_module_load),
      Import("wasi_cuda", "module_unload", &Z_wasi_cudaZ_module_unload),
      Import("wasi_cuda", "function_get", &Z_wasi_cudaZ_function_get),
      Import("wasi_cuda", "mem_alloc", &Z_wasi_cudaZ_mem_alloc),
      Import("wasi_cuda", "mem_free", &Z_wasi_cudaZ_mem_free),
      Import("wasi_cuda", "memcpy_htod", &Z_wasi_cudaZ_memcpy_htod),
      Import("wasi_cuda", "memcpy_dtoh", &Z_wasi_cudaZ_memcpy_dtoh),
      Import("wasi_cuda", "memcpy_dtod", &Z_wasi_cudaZ_memcpy_dtod),
      Import("wasi_cuda", "memset_d8", &Z_wasi_cudaZ_memset_d8),
      Import("wasi_cuda", "launch", &Z_wasi_cudaZ_launch),
      Import("wasi_cuda", "synchronize", &Z_wasi_cudaZ_synchronize),
      Import("wasi_cuda", "last_error", &Z_wasi_cudaZ_last_error),
      Import("wasi_scheduler", "yield", &Z_wasi_schedulerZ_yield),
      Import("wasi_scheduler", "deadline_remaining_ms", &Z_wasi_schedulerZ_deadline_remaining_ms),
  };
#undef GPUWASM_REFUSED_SPEC
#undef GPUWASM_WASI
}

}  // namespace gpuwasm::host
