#include "runtime/worker_protocol.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

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
  std::string json = m.header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  uint32_t head[4] = {kFrameMagic, static_cast<uint32_t>(m.type), static_cast<uint32_t>(json.size()),
                      static_cast<uint32_t>(m.blobs.size())};
  std::string frame(reinterpret_cast<const char*>(head), sizeof head);
  frame += json;
  for (const std::string& b : m.blobs) {
    uint64_t n = b.size();
    frame.append(reinterpret_cast<const char*>(&n), sizeof n);
  }
  GPUWASM_RETURN_IF_ERROR(SendAll(fd, frame.data(), frame.size()));
  for (const std::string& b : m.blobs) GPUWASM_RETURN_IF_ERROR(SendAll(fd, b.data(), b.size()));
  return Status::Ok();
}

Result<Message> Receive(int fd, uint64_t max_bytes) {
  uint32_t head[4];
  bool clean = false;
  if (!RecvAll(fd, head, sizeof head, &clean)) {
    return clean ? Status::Unavailable("the peer closed the connection")
                 : Status::IoError("the peer closed the connection in the middle of a message");
  }
  if (head[0] != kFrameMagic || head[3] > 16 || head[2] > max_bytes) {
    return Status::InvalidArgument("malformed message from the peer process");
  }
  Message m;
  m.type = static_cast<MessageType>(head[1]);
  std::string json(head[2], '\0');
  std::vector<uint64_t> sizes(head[3]);
  if (!RecvAll(fd, json.data(), json.size(), &clean) ||
      (!sizes.empty() && !RecvAll(fd, sizes.data(), sizes.size() * sizeof(uint64_t), &clean))) {
    return Status::IoError("the peer closed the connection in the middle of a message");
  }
  uint64_t total = json.size();
  for (uint64_t n : sizes) {
    if (n > max_bytes || total + n > max_bytes) return Status::InvalidArgument("message from the peer process too large");
    total += n;
  }
  try {
    m.header = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception&) {
    return Status::InvalidArgument("malformed message header from the peer process");
  }
  for (uint64_t n : sizes) {
    std::string b(n, '\0');
    if (n != 0 && !RecvAll(fd, b.data(), n, &clean)) {
      return Status::IoError("the peer closed the connection in the middle of a message");
    }
    m.blobs.push_back(std::move(b));
  }
  return m;
}

void SlotMetrics::Publish(const host::InstanceMetricsSnapshot& m, uint64_t gpu_ns) {
  kernels_launched.store(m.kernels_launched, std::memory_order_relaxed);
  bytes_pinned.store(m.bytes_pinned, std::memory_order_relaxed);
  back_pressure_rejections.store(m.back_pressure_rejections, std::memory_order_relaxed);
  device_bytes.store(m.device_bytes_allocated, std::memory_order_relaxed);
  yields.store(m.yield_count, std::memory_order_relaxed);
  gpu_time_ns.store(gpu_ns, std::memory_order_relaxed);
}

host::InstanceMetricsSnapshot SlotMetrics::Read() const {
  host::InstanceMetricsSnapshot s;
  s.kernels_launched = kernels_launched.load(std::memory_order_relaxed);
  s.bytes_pinned = bytes_pinned.load(std::memory_order_relaxed);
  s.back_pressure_rejections = back_pressure_rejections.load(std::memory_order_relaxed);
  s.yield_count = yields.load(std::memory_order_relaxed);
  s.device_bytes_allocated = device_bytes.load(std::memory_order_relaxed);
  return s;
}

void SlotMetrics::Clear() {
  Publish({}, 0);
  invocation.store(0, std::memory_order_release);
}

Result<std::unique_ptr<SharedMetrics>> SharedMetrics::Create(uint32_t slots) {
  int fd = ::memfd_create("gpuwasm-worker-metrics", MFD_CLOEXEC);
  if (fd < 0) return Status::IoError(std::string("memfd_create: ") + std::strerror(errno));
  size_t bytes = sizeof(SharedHeader) + size_t{slots} * sizeof(SlotMetrics);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    ::close(fd);
    return Status::IoError(std::string("ftruncate: ") + std::strerror(e));
  }
  GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<SharedMetrics> m, Map(fd));
  new (m->header_) SharedHeader();
  m->header_->slots = slots;
  for (uint32_t i = 0; i < slots; ++i) new (&m->slots_[i]) SlotMetrics();
  m->header_->magic = kSharedMagic;
  return m;
}

Result<std::unique_ptr<SharedMetrics>> SharedMetrics::Map(int fd) {
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < static_cast<off_t>(sizeof(SharedHeader))) return Status::InvalidArgument("the shared metrics segment is too small");
  void* base = ::mmap(nullptr, static_cast<size_t>(end), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return Status::IoError(std::string("mmap: ") + std::strerror(errno));
  std::unique_ptr<SharedMetrics> m(new SharedMetrics());
  m->fd_ = fd;
  m->bytes_ = static_cast<size_t>(end);
  m->base_ = base;
  m->header_ = static_cast<SharedHeader*>(base);
  m->slots_ = reinterpret_cast<SlotMetrics*>(static_cast<char*>(base) + sizeof(SharedHeader));
  if (m->header_->magic == kSharedMagic &&
      sizeof(SharedHeader) + size_t{m->header_->slots} * sizeof(SlotMetrics) > m->bytes_) {
    return Status::InvalidArgument("the shared metrics segment is smaller than its slots");
  }
  return m;
}

SharedMetrics::~SharedMetrics() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
  if (fd_ >= 0) ::close(fd_);
}

nlohmann::json TenantToJson(const TenantConfig& t) {
  return {{"name", t.name},
          {"gpu", t.gpu},
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

nlohmann::json ResultToJson(const InvokeResult& r) {
  return {{"status", static_cast<int>(r.status)},
          {"exit_status", r.exit_status},
          {"trap", r.trap},
          {"error", r.error},
          {"stdout_truncated", r.stdout_truncated},
          {"stderr_truncated", r.stderr_truncated},
          {"metrics", r.metrics},
          {"gpu_time_ns", r.gpu_time.count()},
          {"device", r.device}};
}

void ResultFromJson(const nlohmann::json& j, InvokeResult* r) {
  int status = j.value("status", static_cast<int>(InvocationStatus::kError));
  r->status = status >= 0 && status < static_cast<int>(kInvocationStatusCount) ? static_cast<InvocationStatus>(status)
                                                                               : InvocationStatus::kError;
  r->exit_status = j.value("exit_status", 70);
  r->trap = j.value("trap", "");
  r->error = j.value("error", "");
  r->stdout_truncated = j.value("stdout_truncated", false);
  r->stderr_truncated = j.value("stderr_truncated", false);
  if (j.contains("metrics")) r->metrics = j.at("metrics").get<host::InstanceMetricsSnapshot>();
  r->gpu_time = std::chrono::nanoseconds(j.value("gpu_time_ns", int64_t{0}));
  r->device = j.value("device", "");
}

}  // namespace gpuwasm::runtime::worker
