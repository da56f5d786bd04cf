// What a supervisor (`gpuwasm serve`) and a tenant worker process (`gpuwasm __worker`) share:
//
//   Messages on a Unix stream socket (the worker's fd 3): a type, an optional JSON header and binary
//   blobs, length-prefixed. The run and result headers, which cross once per invocation, are a
//   binary blob (EncodeRun, EncodeResult) instead of JSON. Chosen over shared-memory rings: an
//   invocation crosses once each way, its bytes are copied once by the kernel, and a dead peer is
//   an EOF (docs/adr/0005-tenant-worker-processes.md has the figures).
//
//     supervisor -> worker   init {tenant, device, cache dir, runaway grace, tmpdir}   (first)
//                            run [RunHeader: id, slot, artifact, entry, function, deadline, args, env; input]
//                            interrupt {}   (shutdown: every running instance stops)
//                            stop {}        (finish what runs, then exit)
//     worker -> supervisor   ready {device, pid}
//                            result [result header: id, status, exit status, ..., metrics; output,
//                                    stdout, stderr]
//                            fatal {why, lost}   (the process must end: a process-fatal device error
//                                                 when lost, else a kernel that cannot be stopped)
//
//   SharedMetrics, a memfd mapped by both (the worker's fd 4): a header the worker refreshes
//   (heartbeat, its tenant's device-context usage) and one slot per running invocation, holding
//   its live InstanceMetricsSnapshot and GPU time as relaxed atomics. The supervisor's
//   /v1/instances, /metrics and `top` read them with plain loads: never a message, never a lock.
//
// Thread-safety: Send and Receive need one writer and one reader per socket at a time; the shared
// counters may be read and written from any thread of either process.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"
#include "host/metrics.h"
#include "runtime/config.h"
#include "runtime/invocation.h"

namespace gpuwasm::runtime::worker {

enum class MessageType : uint32_t {
  kInit = 1,
  kReady = 2,
  kRun = 3,
  kResult = 4,
  kInterrupt = 5,
  kStop = 6,
  kFatal = 7,
};

struct Message {
  MessageType type = MessageType::kInit;
  nlohmann::json header = nlohmann::json::object();
  std::vector<std::string> blobs;
};

// Writes the whole message (IoError when the peer is gone).
Status Send(int fd, const Message& m);
// Reads one message; Unavailable on a clean EOF, InvalidArgument for a malformed frame or one
// over `max_bytes`. Reads exactly its bytes (a handshake before a Receiver takes the socket).
Result<Message> Receive(int fd, uint64_t max_bytes);

// Reads a socket's messages through a buffer: one system call brings whatever the peer has sent
// (often several small messages), where Receive makes three per message. Next as Receive. Once a
// Receiver reads a socket, nothing else may. Not thread-safe: one reader at a time.
class Receiver {
 public:
  explicit Receiver(int fd) : fd_(fd), buf_(64 << 10) {}
  Result<Message> Next(uint64_t max_bytes);

 private:
  bool Read(void* out, size_t n, bool* clean);
  int fd_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;  // the buffered bytes not yet taken
  bool started_ = false;        // a byte of the current message was taken
};

// The fd numbers the worker finds its socket and shared memory on.
inline constexpr int kSocketFd = 3;
inline constexpr int kSharedFd = 4;

struct alignas(64) LiveInstanceMetrics {
  std::atomic<uint64_t> invocation{0};  // 0: free
  std::atomic<uint64_t> kernels_launched{0}, bytes_pinned{0}, back_pressure_rejections{0}, device_bytes{0};
  std::atomic<uint64_t> kernel_faults{0}, quota_refusals{0};
  std::atomic<uint64_t> gpu_time_ns{0};
  std::atomic<uint32_t> yields{0};

  void Publish(const host::InstanceMetricsSnapshot& m, uint64_t gpu_ns);
  host::InstanceMetricsSnapshot Read() const;
  void Clear();
};

struct alignas(64) SharedHeader {
  uint32_t magic = 0;
  uint32_t slots = 0;
  std::atomic<uint64_t> heartbeat_ns{0};  // steady clock of the worker's last round
  std::atomic<uint64_t> context_bytes{0}, context_reserved{0}, context_resets{0}, context_modules{0};
  std::atomic<uint32_t> out_of_memory{0};  // set by the worker's new-handler before it aborts
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters must be address-free");

// The shared segment: created by the supervisor (memfd), mapped again by the worker from its fd.
class SharedMetrics {
 public:
  static Result<std::unique_ptr<SharedMetrics>> Create(uint32_t slots);
  // Maps the segment `fd` refers to; the result owns the descriptor (closed on failure too).
  static Result<std::unique_ptr<SharedMetrics>> Map(UniqueFd fd);
  ~SharedMetrics();
  SharedMetrics(const SharedMetrics&) = delete;
  SharedMetrics& operator=(const SharedMetrics&) = delete;

  SharedHeader& header() { return *header_; }
  const SharedHeader& header() const { return *header_; }
  uint32_t slots() const { return header_->slots; }
  LiveInstanceMetrics& slot(uint32_t i) { return slots_[i]; }
  const LiveInstanceMetrics& slot(uint32_t i) const { return slots_[i]; }
  int fd() const { return fd_.get(); }

 private:
  SharedMetrics() = default;
  UniqueFd fd_;
  size_t bytes_ = 0;
  void* base_ = nullptr;
  SharedHeader* header_ = nullptr;
  LiveInstanceMetrics* slots_ = nullptr;
};

// The run and result headers in a compact binary form, carried as a message's first blob: they cross
// once each way per invocation, and building, printing and parsing them as JSON cost ~15 us each.
struct RunHeader {
  uint64_t id = 0;
  uint32_t slot = 0;
  std::string key, sha256, function_id, function_name, entry;
  int64_t version = 0;
  int64_t deadline_ns = 0;  // steady clock (CLOCK_MONOTONIC, the same in both processes)
  std::vector<std::string> args;
  std::vector<std::string> env;
};
std::string EncodeRun(const RunHeader& h);
Result<RunHeader> DecodeRun(std::string_view bytes);
// Everything of a result but output/stdout/stderr (their own blobs).
std::string EncodeResult(uint64_t id, const InvokeResult& r);
Result<uint64_t> DecodeResult(std::string_view bytes, InvokeResult* r);

// JSON forms carried in headers.
nlohmann::json TenantToJson(const TenantConfig& t);
Result<TenantConfig> TenantFromJson(const nlohmann::json& j);

}  // namespace gpuwasm::runtime::worker
