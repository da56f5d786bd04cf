// GuestIo: the invocation I/O of one instance. It implements the `gpuwasm` module of the ABI
// (input_len, input_read, output_write) and the WASI preview1 subset that wasi-libc guests need
// (fd_write/fd_read on stdio, args, environ, clocks, random, proc_exit, ...).
//
// stdin is the input bytes; stdout and stderr are captured per instance up to their caps (the
// rest is dropped and the *_truncated flag set; the guest still sees a full write), and, with
// on_write, handed on as they are written. stdout and stderr look like terminals to the guest
// (fd_fdstat_get: a character device), so its C library writes stdout line by line: a line it
// printed is the host's at once, also when the guest traps or runs out of time after it. Every guest
// pointer is bounds-checked against the instance's linear memory before use: a bad pointer gives
// EFAULT (WASI) or WCU_ERR_BAD_POINTER (gpuwasm module), never a host fault.
//
// Thread-safety: used by the one thread running the instance; read results after the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "wasm/engine.h"
#include "wasm/instance.h"

namespace gpuwasm::host {

struct GuestIoOptions {
  std::string input;              // request body: stdin and gpuwasm.input_read
  std::vector<std::string> args;  // argv, argv[0] first
  std::vector<std::string> env;   // "KEY=value"
  uint64_t max_stdout = 1 << 20;
  uint64_t max_stderr = 1 << 20;
  uint64_t max_output = 16 << 20;  // gpuwasm.output_write total
  // Called with what the guest writes to stdout (fd 1) or stderr (fd 2), within the caps, as it
  // writes it (on the instance's thread): `gpuwasm run` streams it live.
  std::function<void(int fd, std::string_view bytes)> on_write;
};

class GuestIo {
 public:
  explicit GuestIo(GuestIoOptions options) : options_(std::move(options)) {}

  // The instance whose memory guest pointers refer to. Call before running the guest.
  void Attach(const wasm::Instance* instance) { instance_ = instance; }

  const std::string& stdout_text() const { return stdout_; }
  const std::string& stderr_text() const { return stderr_; }
  const std::string& output() const { return output_; }
  bool stdout_truncated() const { return stdout_truncated_; }
  bool stderr_truncated() const { return stderr_truncated_; }
  // output_write calls refused for exceeding max_output (WCU_ERR_QUOTA). Safe from any thread: the
  // instance's live metrics read it.
  uint64_t output_refusals() const { return output_refusals_.load(std::memory_order_relaxed); }

  // --- used by the import functions ---
  // Host address of guest [ptr, ptr + len), or nullptr when any of it is outside memory.
  uint8_t* GuestPtr(uint32_t ptr, uint64_t len) const {  // inline: every import with a pointer calls it
    const wasm_rt_memory_t* m = instance_ != nullptr ? instance_->memory() : nullptr;
    if (m == nullptr || static_cast<uint64_t>(ptr) + len > m->size) return nullptr;
    return m->data + ptr;
  }
  const GuestIoOptions& options() const { return options_; }
  uint64_t stdin_pos = 0;
  bool stdio_closed[3] = {false, false, false};
  void AppendStdout(const uint8_t* p, uint64_t n);
  void AppendStderr(const uint8_t* p, uint64_t n);
  bool AppendOutput(const uint8_t* p, uint64_t n);  // false (and counted): would exceed max_output

 private:
  GuestIoOptions options_;
  const wasm::Instance* instance_ = nullptr;
  std::string stdout_, stderr_, output_;
  bool stdout_truncated_ = false, stderr_truncated_ = false;
  std::atomic<uint64_t> output_refusals_{0};
};

// Every import the host provides today, with its wasm signature: what the engine accepts.
std::vector<wasm::ImportSpec> GuestImports();

}  // namespace gpuwasm::host
