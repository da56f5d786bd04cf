#include "runtime/worker_protocol.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "wasm/backtrace.h"

namespace gpuwasm::runtime::worker {
namespace {

constexpr uint32_t kFrameMagic = 0x534d5747;   // "GWMS"
constexpr uint32_t kSharedMagic = 0x48535747;  // "GWSH"

Status SendAll(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::IoError(std::string("the peer process is gone: ") + std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// false on EOF before any byte (*clean = true) or in the middle.
bool RecvAll(int fd, void* data, size_t n, bool* clean) {
  auto* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd, p + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      *clean = got == 0;
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

Status Send(int fd, const Message& m) {
  std::string json = m.header.is_null() || m.header.empty()
                         ? std::string()
                         : m.header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  uint32_t head[4] = {kFrameMagic, static_cast<uint32_t>(m.type), static_cast<uint32_t>(json.size()),
                      static_cast<uint32_t>(m.blobs.size())};
  std::string frame(reinterpret_cast<const char*>(head), sizeof head);
  frame += json;
  size_t blob_bytes = 0;
  for (const std::string& b : m.blobs) {
    uint64_t n = b.size();
    frame.append(reinterpret_cast<const char*>(&n), sizeof n);
    blob_bytes += b.size();
  }
  // Small messages (every run and result of a small function) go out in one system call.
  if (blob_bytes <= (256u << 10)) {
    for (const std::string& b : m.blobs) frame += b;
    return SendAll(fd, frame.data(), frame.size());
  }
  GPUWASM_RETURN_IF_ERROR(SendAll(fd, frame.data(), frame.size()));
  for (const std::string& b : m.blobs) GPUWASM_RETURN_IF_ERROR(SendAll(fd, b.data(), b.size()));
  return Status::Ok();
}

namespace {

// Reads exactly what it is asked for, straight from the socket: for a handshake, after which
// another reader (a Receiver) takes the socket over and must find every byte still there.
struct ExactReads {
  int fd;
  bool Read(void* out, size_t n, bool* clean) { return RecvAll(fd, out, n, clean); }
};

template <typename Reads>
Result<Message> ReceiveWith(Reads& in, uint64_t max_bytes) {
  uint32_t head[4];
  bool clean = false;
  if (!in.Read(head, sizeof head, &clean)) {
    return clean ? Status::Unavailable("the peer closed the connection")
                 : Status::IoError("the peer closed the connection in the middle of a message");
  }
  if (head[0] != kFrameMagic || head[3] > 16 || head[2] > max_bytes) {
    return Status::InvalidArgument("malformed message from the peer process");
  }
  Message m;
  m.type = static_cast<MessageType>(head[1]);
  // The JSON and the blob sizes in one read.
  std::string meta(head[2] + size_t{head[3]} * sizeof(uint64_t), '\0');
  if (!meta.empty() && !in.Read(meta.data(), meta.size(), &clean)) {
    return Status::IoError("the peer closed the connection in the middle of a message");
  }
  std::vector<uint64_t> sizes(head[3]);
  if (!sizes.empty()) std::memcpy(sizes.data(), meta.data() + head[2], sizes.size() * sizeof(uint64_t));
  uint64_t total = head[2];
  for (uint64_t n : sizes) {
    if (n > max_bytes || total + n > max_bytes)
      return Status::InvalidArgument("message from the peer process too large");
    total += n;
  }
  if (head[2] != 0) {
    try {
      m.header = nlohmann::json::parse(meta.begin(), meta.begin() + head[2]);
    } catch (const nlohmann::json::exception&) {
      return Status::InvalidArgument("malformed message header from the peer process");
    }
  }
  for (uint64_t n : sizes) {
    std::string b(n, '\0');
    if (n != 0 && !in.Read(b.data(), n, &clean)) {
      return Status::IoError("the peer closed the connection in the middle of a message");
    }
    m.blobs.push_back(std::move(b));
  }
  return m;
}

}  // namespace

Result<Message> Receive(int fd, uint64_t max_bytes) {
  ExactReads in{fd};
  return ReceiveWith(in, max_bytes);
}

bool Receiver::Read(void* out, size_t n, bool* clean) {
  auto* p = static_cast<char*>(out);
  bool any = false;  // a byte of this message taken: an EOF now is in the middle of it
  while (n > 0) {
    size_t have = end_ - begin_;
    if (have > 0) {
      size_t take = std::min(have, n);
      std::memcpy(p, buf_.data() + begin_, take);
      begin_ += take;
      p += take;
      n -= take;
      any = true;
      continue;
    }
    begin_ = end_ = 0;
    if (n >= buf_.size() / 2) {  // a large blob: straight into it
      bool eof_clean = false;
      if (!RecvAll(fd_, p, n, &eof_clean)) {
        *clean = eof_clean && !any && !started_;
        return false;
      }
      return true;
    }
    ssize_t r = ::recv(fd_, buf_.data(), buf_.size(), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      *clean = !any && !started_;
      return false;
    }
    end_ = static_cast<size_t>(r);
  }
  return true;
}

Result<Message> Receiver::Next(uint64_t max_bytes) {
  struct Reads {
    Receiver& r;
    bool Read(void* out, size_t n, bool* clean) {
      bool ok = r.Read(out, n, clean);
      r.started_ = true;
      return ok;
    }
  } in{*this};
  started_ = false;
  Result<Message> m = ReceiveWith(in, max_bytes);
  started_ = false;
  return m;
}

namespace {

// A little-endian, length-prefixed writer and reader for the binary headers.
class Writer {
 public:
  Writer& U64(uint64_t v) {
    s_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Writer& Str(std::string_view v) {
    U64(v.size());
    s_.append(v);
    return *this;
  }
  std::string Take() { return std::move(s_); }

 private:
  std::string s_;
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  bool U64(uint64_t* v) {
    if (s_.size() < sizeof *v) return ok_ = false;
    std::memcpy(v, s_.data(), sizeof *v);
    s_.remove_prefix(sizeof *v);
    return true;
  }
  bool Str(std::string* v) {
    uint64_t n = 0;
    if (!U64(&n) || n > s_.size()) return ok_ = false;
    v->assign(s_.data(), n);
    s_.remove_prefix(n);
    return true;
  }
  bool ok() const { return ok_ && s_.empty(); }

 private:
  std::string_view s_;
  bool ok_ = true;
};

}  // namespace

std::string EncodeRun(const RunHeader& h) {
  Writer w;
  w.U64(h.id).U64(h.slot).Str(h.key).Str(h.sha256).Str(h.function_id).Str(h.function_name).Str(h.entry);
  w.U64(static_cast<uint64_t>(h.version)).U64(static_cast<uint64_t>(h.deadline_ns)).U64(h.args.size());
  for (const std::string& a : h.args) w.Str(a);
  w.U64(h.env.size());
  for (const std::string& e : h.env) w.Str(e);
  return w.Take();
}

Result<RunHeader> DecodeRun(std::string_view bytes) {
  Reader r(bytes);
  RunHeader h;
  uint64_t slot = 0, version = 0, deadline = 0, nargs = 0;
  r.U64(&h.id) && r.U64(&slot) && r.Str(&h.key) && r.Str(&h.sha256) && r.Str(&h.function_id) &&
      r.Str(&h.function_name) && r.Str(&h.entry) && r.U64(&version) && r.U64(&deadline) && r.U64(&nargs);
  for (uint64_t i = 0; i < nargs && nargs <= 65536; ++i) {
    std::string a;
    if (!r.Str(&a)) break;
    h.args.push_back(std::move(a));
  }
  uint64_t nenv = 0;
  r.U64(&nenv);
  for (uint64_t i = 0; i < nenv && nenv <= 65536; ++i) {
    std::string e;
    if (!r.Str(&e)) break;
    h.env.push_back(std::move(e));
  }
  if (!r.ok() || h.args.size() != nargs || h.env.size() != nenv)
    return Status::InvalidArgument("malformed run message");
  h.slot = static_cast<uint32_t>(slot);
  h.version = static_cast<int64_t>(version);
  h.deadline_ns = static_cast<int64_t>(deadline);
  return h;
}

std::string EncodeResult(uint64_t id, const InvokeResult& r) {
  Writer w;
  w.U64(id).U64(static_cast<uint64_t>(r.status)).U64(static_cast<uint64_t>(static_cast<int64_t>(r.exit_status)));
  w.Str(r.trap).Str(r.error).Str(r.device);
  w.U64((r.stdout_truncated ? 1 : 0) | (r.stderr_truncated ? 2 : 0));
  w.U64(r.metrics.kernels_launched).U64(r.metrics.bytes_pinned).U64(r.metrics.back_pressure_rejections);
  w.U64(r.metrics.yield_count).U64(r.metrics.device_bytes_allocated).U64(static_cast<uint64_t>(r.gpu_time.count()));
  w.U64(r.metrics.kernel_faults).U64(r.discarded_launches).U64(r.metrics.quota_refusals);
  w.U64(r.backtrace.size());
  for (const std::string& f : r.backtrace) w.Str(f);
  return w.Take();
}

Result<uint64_t> DecodeResult(std::string_view bytes, InvokeResult* out) {
  Reader r(bytes);
  uint64_t id = 0, status = 0, exit_status = 0, flags = 0, yields = 0, gpu = 0, discarded = 0;
  InvokeResult& x = *out;
  r.U64(&id) && r.U64(&status) && r.U64(&exit_status) && r.Str(&x.trap) && r.Str(&x.error) && r.Str(&x.device) &&
      r.U64(&flags) && r.U64(&x.metrics.kernels_launched) && r.U64(&x.metrics.bytes_pinned) &&
      r.U64(&x.metrics.back_pressure_rejections) && r.U64(&yields) && r.U64(&x.metrics.device_bytes_allocated) &&
      r.U64(&gpu) && r.U64(&x.metrics.kernel_faults) && r.U64(&discarded) && r.U64(&x.metrics.quota_refusals);
  uint64_t frames = 0;
  if (r.U64(&frames) && frames <= wasm::kMaxTrapAddresses) {
    for (uint64_t i = 0; i < frames; ++i) {
      std::string f;
      if (!r.Str(&f) || f.size() > wasm::kMaxFunctionNameBytes + 32) break;
      x.backtrace.push_back(std::move(f));
    }
  }
  if (!r.ok() || status >= kInvocationStatusCount || x.backtrace.size() != frames) {
    return Status::InvalidArgument("malformed result message");
  }
  x.status = static_cast<InvocationStatus>(status);
  x.exit_status = static_cast<int>(static_cast<int64_t>(exit_status));
  x.stdout_truncated = (flags & 1) != 0;
  x.stderr_truncated = (flags & 2) != 0;
  x.metrics.yield_count = static_cast<uint32_t>(yields);
  x.discarded_launches = static_cast<uint32_t>(std::min<uint64_t>(discarded, UINT32_MAX));
  x.gpu_time = std::chrono::nanoseconds(static_cast<int64_t>(gpu));
  return id;
}

void LiveInstanceMetrics::Publish(const host::InstanceMetricsSnapshot& m, uint64_t gpu_ns) {
  kernels_launched.store(m.kernels_launched, std::memory_order_relaxed);
  bytes_pinned.store(m.bytes_pinned, std::memory_order_relaxed);
  back_pressure_rejections.store(m.back_pressure_rejections, std::memory_order_relaxed);
  device_bytes.store(m.device_bytes_allocated, std::memory_order_relaxed);
  kernel_faults.store(m.kernel_faults, std::memory_order_relaxed);
  quota_refusals.store(m.quota_refusals, std::memory_order_relaxed);
  yields.store(m.yield_count, std::memory_order_relaxed);
  gpu_time_ns.store(gpu_ns, std::memory_order_relaxed);
}

host::InstanceMetricsSnapshot LiveInstanceMetrics::Read() const {
  host::InstanceMetricsSnapshot s;
  s.kernels_launched = kernels_launched.load(std::memory_order_relaxed);
  s.bytes_pinned = bytes_pinned.load(std::memory_order_relaxed);
  s.back_pressure_rejections = back_pressure_rejections.load(std::memory_order_relaxed);
  s.yield_count = yields.load(std::memory_order_relaxed);
  s.device_bytes_allocated = device_bytes.load(std::memory_order_relaxed);
  s.kernel_faults = kernel_faults.load(std::memory_order_relaxed);
  s.quota_refusals = quota_refusals.load(std::memory_order_relaxed);
  return s;
}

void LiveInstanceMetrics::Clear() {
  Publish({}, 0);
  invocation.store(0, std::memory_order_release);
}

Result<std::unique_ptr<SharedMetrics>> SharedMetrics::Create(uint32_t slots) {
  UniqueFd fd(::memfd_create("gpuwasm-worker-metrics", MFD_CLOEXEC));
  if (!fd.valid()) return Status::IoError(std::string("memfd_create: ") + std::strerror(errno));
  size_t bytes = sizeof(SharedHeader) + size_t{slots} * sizeof(LiveInstanceMetrics);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return Status::IoError(std::string("ftruncate: ") + std::strerror(errno));
  }
  GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<SharedMetrics> m, Map(std::move(fd)));
  new (m->header_) SharedHeader();
  m->header_->slots = slots;
  for (uint32_t i = 0; i < slots; ++i) new (&m->slots_[i]) LiveInstanceMetrics();
  m->header_->magic = kSharedMagic;
  return m;
}

Result<std::unique_ptr<SharedMetrics>> SharedMetrics::Map(UniqueFd fd) {
  off_t end = ::lseek(fd.get(), 0, SEEK_END);
  if (end < static_cast<off_t>(sizeof(SharedHeader))) {
    return Status::InvalidArgument("the shared metrics segment is too small");
  }
  void* base = ::mmap(nullptr, static_cast<size_t>(end), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) return Status::IoError(std::string("mmap: ") + std::strerror(errno));
  std::unique_ptr<SharedMetrics> m(new SharedMetrics());
  m->fd_ = std::move(fd);
  m->bytes_ = static_cast<size_t>(end);
  m->base_ = base;
  m->header_ = static_cast<SharedHeader*>(base);
  m->slots_ = reinterpret_cast<LiveInstanceMetrics*>(static_cast<char*>(base) + sizeof(SharedHeader));
  if (m->header_->magic == kSharedMagic &&
      sizeof(SharedHeader) + size_t{m->header_->slots} * sizeof(LiveInstanceMetrics) > m->bytes_) {
    return Status::InvalidArgument("the shared metrics segment is smaller than its slots");
  }
  return m;
}

SharedMetrics::~SharedMetrics() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

nlohmann::json TenantToJson(const TenantConfig& t) {
  return {{"name", t.name},
          {"gpu", t.gpu},
          {"instrument_ptx", t.instrument_ptx},
          {"device_bytes", t.device_bytes},
          {"concurrent_invocations", t.concurrent_invocations},
          {"inflight_launches", t.inflight_launches},
          {"max_deadline_ms", t.max_deadline.count()},
          {"max_module_size", t.max_module_size},
          {"max_input_size", t.max_input_size},
          {"max_output_size", t.max_output_size},
          {"max_memory", t.max_memory},
          {"worker_memory", t.worker_memory},
          {"worker_cpu_seconds", t.worker_cpu_seconds},
          {"worker_open_files", t.worker_open_files}};
}

Result<TenantConfig> TenantFromJson(const nlohmann::json& j) {
  try {
    TenantConfig t;
    t.name = j.at("name").get<std::string>();
    t.gpu = j.at("gpu").get<bool>();
    t.instrument_ptx = j.at("instrument_ptx").get<bool>();
    t.device_bytes = j.at("device_bytes").get<uint64_t>();
    t.concurrent_invocations = j.at("concurrent_invocations").get<uint32_t>();
    t.inflight_launches = j.at("inflight_launches").get<uint32_t>();
    t.max_deadline = std::chrono::milliseconds(j.at("max_deadline_ms").get<int64_t>());
    t.max_module_size = j.at("max_module_size").get<uint64_t>();
    t.max_input_size = j.at("max_input_size").get<uint64_t>();
    t.max_output_size = j.at("max_output_size").get<uint64_t>();
    t.max_memory = j.at("max_memory").get<uint64_t>();
    t.worker_memory = j.at("worker_memory").get<uint64_t>();
    t.worker_cpu_seconds = j.at("worker_cpu_seconds").get<uint64_t>();
    t.worker_open_files = j.at("worker_open_files").get<uint32_t>();
    return t;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("malformed tenant in the worker's init message: ") + e.what());
  }
}

}  // namespace gpuwasm::runtime::worker
