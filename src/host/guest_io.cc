#include "host/guest_io.h"

#include <sys/random.h>
#include <time.h>

#include <cstring>

#include "host/host_env.h"

namespace gpuwasm::host {

uint8_t* GuestIo::GuestPtr(uint32_t ptr, uint64_t len) const {
  if (instance_ == nullptr || instance_->memory() == nullptr) return nullptr;
  const wasm_rt_memory_t* m = instance_->memory();
  if (static_cast<uint64_t>(ptr) + len > m->size) return nullptr;
  return m->data + ptr;
}

void GuestIo::AppendStdout(const uint8_t* p, uint64_t n) {
  uint64_t room = options_.max_stdout - std::min<uint64_t>(options_.max_stdout, stdout_.size());
  if (n > room) stdout_truncated_ = true;
  stdout_.append(reinterpret_cast<const char*>(p), std::min(n, room));
}

void GuestIo::AppendStderr(const uint8_t* p, uint64_t n) {
  uint64_t room = options_.max_stderr - std::min<uint64_t>(options_.max_stderr, stderr_.size());
  if (n > room) stderr_truncated_ = true;
  stderr_.append(reinterpret_cast<const char*>(p), std::min(n, room));
}

bool GuestIo::AppendOutput(const uint8_t* p, uint64_t n) {
  if (output_.size() + n > options_.max_output) return false;
  output_.append(reinterpret_cast<const char*>(p), n);
  return true;
}

std::vector<wasm::ImportSpec> GuestImports() {
  return {
      {"wasi_snapshot_preview1", "fd_write", "iiii", "i"},
      {"wasi_snapshot_preview1", "fd_read", "iiii", "i"},
      {"wasi_snapshot_preview1", "fd_close", "i", "i"},
      {"wasi_snapshot_preview1", "fd_seek", "iIii", "i"},
      {"wasi_snapshot_preview1", "fd_fdstat_get", "ii", "i"},
      {"wasi_snapshot_preview1", "args_sizes_get", "ii", "i"},
      {"wasi_snapshot_preview1", "args_get", "ii", "i"},
      {"wasi_snapshot_preview1", "environ_sizes_get", "ii", "i"},
      {"wasi_snapshot_preview1", "environ_get", "ii", "i"},
      {"wasi_snapshot_preview1", "clock_time_get", "iIi", "i"},
      {"wasi_snapshot_preview1", "random_get", "ii", "i"},
      {"wasi_snapshot_preview1", "proc_exit", "i", ""},
      {"gpuwasm", "input_len", "", "i"},
      {"gpuwasm", "input_read", "iii", "i"},
      {"gpuwasm", "output_write", "ii", "i"},
  };
}

}  // namespace gpuwasm::host

// ---- the import functions, under the names wasm2c gives them (Z_<module>Z_<name>) ----
using gpuwasm::host::GuestIo;
using gpuwasm::host::HostEnv;

namespace {

// WASI errno values (preview1).
constexpr uint32_t kSuccess = 0, kBadf = 8, kFault = 21, kInval = 28;
constexpr int32_t kWcuBadPointer = -2, kWcuQuota = -8;

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
  if (!Store32(io, count_ptr, static_cast<uint32_t>(v.size())) || !Store32(io, size_ptr, static_cast<uint32_t>(total))) {
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
    if (fd == 1) io.AppendStdout(p, len); else io.AppendStderr(p, len);
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
    std::memcpy(p, in.data() + io.stdin_pos, n);
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
  std::memset(p, 0, 24);  // filetype 0 (unknown): not a tty, so stdio is fully buffered
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

uint32_t Z_gpuwasmZ_input_len(void* env) {
  return static_cast<uint32_t>(Io(env).options().input.size());
}

uint32_t Z_gpuwasmZ_input_read(void* env, uint32_t dst, uint32_t len, uint32_t offset) {
  GuestIo& io = Io(env);
  uint8_t* p = io.GuestPtr(dst, len);
  if (p == nullptr) return static_cast<uint32_t>(kWcuBadPointer);
  const std::string& in = io.options().input;
  if (offset >= in.size()) return 0;
  uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(len, in.size() - offset));
  std::memcpy(p, in.data() + offset, n);
  return n;
}

uint32_t Z_gpuwasmZ_output_write(void* env, uint32_t src, uint32_t len) {
  GuestIo& io = Io(env);
  const uint8_t* p = io.GuestPtr(src, len);
  if (p == nullptr) return static_cast<uint32_t>(kWcuBadPointer);
  if (!io.AppendOutput(p, len)) return static_cast<uint32_t>(kWcuQuota);
  return len;
}

}  // extern "C"
