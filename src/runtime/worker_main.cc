#include "runtime/worker_main.h"

#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "common/compile_slots.h"
#include "device/select.h"
#include "host/guest_io.h"
#include "runtime/instance_runner.h"
#include "runtime/worker_protocol.h"
#include "wasm/engine.h"

namespace gpuwasm::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using worker::Message;
using worker::MessageType;

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

[[noreturn]] void Die(const char* why) {
  std::fprintf(stderr, "gpuwasm worker: %s\n", why);
  std::_Exit(70);
}

worker::SharedHeader* g_header = nullptr;  // for the new-handler

void OutOfMemory() {
  if (g_header != nullptr) g_header->out_of_memory.store(1);
  static const char kMsg[] = "gpuwasm worker: out of memory\n";
  (void)!::write(2, kMsg, sizeof kMsg - 1);
  std::abort();
}

// Every socket but local ones (AF_UNIX, AF_NETLINK for the driver) is refused with EACCES, for the
// worker and every child it starts (the C compiler of native code).
Status DenyNetwork() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Status::IoError("PR_SET_NO_NEW_PRIVS failed");
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return Status::IoError("seccomp_init failed");
  int rc = 0;
  for (int family : {AF_INET, AF_INET6, AF_PACKET}) {
    scmp_arg_cmp first_is_family{};  // SCMP_A0(SCMP_CMP_EQ, family), every field named
    first_is_family.arg = 0;
    first_is_family.op = SCMP_CMP_EQ;
    first_is_family.datum_a = static_cast<scmp_datum_t>(family);
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1, first_is_family);
  }
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return Status::IoError("seccomp filter refused: " + std::string(std::strerror(-rc)));
  return Status::Ok();
}

class Worker : public std::enable_shared_from_this<Worker> {
 public:
  Worker(int sock, std::unique_ptr<worker::SharedMetrics> shared)
      : sock_(sock), in_(sock), shared_(std::move(shared)) {}

  Status Init(const nlohmann::json& h) {
    GPUWASM_ASSIGN_OR_RETURN(tenant_, worker::TenantFromJson(h.at("tenant")));
    device::OpenOptions o;
    o.runaway_grace = std::chrono::milliseconds(h.value("runaway_grace_ms", 1000));
    GPUWASM_RETURN_IF_ERROR(SetCompileSlots(h.value("compile_slots_dir", std::string()), h.value("compile_slots", 1u)));
    std::weak_ptr<Worker> self = weak_from_this();
    o.on_fatal = [self](const std::string& why) {
      if (auto w = self.lock()) w->Fatal(why);
    };
    std::string note;
    GPUWASM_ASSIGN_OR_RETURN(device_, device::OpenDevice(h.value("device", std::string("auto")), &note, o));
    tenant_device_ = std::make_unique<TenantDevice>(device_, tenant_.device_bytes, tenant_.instrument_ptx);
    wasm::EngineOptions eo;
    eo.cache_dir = h.value("cache_dir", std::string());
    eo.imports = host::GuestImports();
    engine_ = std::make_unique<wasm::Engine>(std::move(eo));
    return Status::Ok();
  }

  const device::DeviceInfo& device_info() const { return device_->info(); }

  // The device told us the process must end.
  void Fatal(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (fatal_) return;
    fatal_ = true;
    fatal_why_ = why;
    // The GPU is unusable (every call fails) unless a context was only abandoned: device_fault.
    fatal_lost_ =
        why.find("only ending the process") == std::string::npos && why.find("could not be freed") == std::string::npos;
  }

  // The worker's threads: readers that run what they read (whichever is reading takes the next
  // message off the socket and, when it is an invocation, runs it itself after handing the socket
  // to another: no thread hop between receiving and running), and this one, the ticker, which
  // refreshes the shared metrics and the heartbeat and ends the process when it must.
  int Loop() {
    StartReader();
    bool fatal_sent = false;
    Clock::time_point exit_by = Clock::time_point::max();
    for (;;) {
      bool live = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        live = !running_.empty();
      }
      {
        std::unique_lock<std::mutex> lock(tick_mu_);
        tick_cv_.wait_for(lock, std::chrono::milliseconds(live ? 5 : 100), [&] { return woken_; });
        woken_ = false;
      }
      if (closed_) return Exit(0);  // the supervisor is gone: nothing to report to
      Publish();
      bool fatal, lost;
      std::string why;
      size_t running;
      {
        std::lock_guard<std::mutex> lock(mu_);
        fatal = fatal_;
        lost = fatal_lost_;
        why = fatal_why_;
        running = running_.size();
      }
      if (fatal && !fatal_sent) {
        fatal_sent = true;
        Message f;
        f.type = MessageType::kFatal;
        f.header = {{"why", why}, {"lost", lost}};
        SendLocked(f);
        // Everything fails fast once the GPU is lost: let running guests report, briefly.
        if (lost) exit_by = Clock::now() + std::chrono::seconds(1);
      }
      // A worker whose GPU still works (a context only abandoned) waits for the supervisor's stop,
      // which follows the last invocation it was sent; one whose GPU is lost ends regardless.
      if ((stopping_ || (fatal && lost)) && running == 0) return Exit(0);
      if (Clock::now() >= exit_by) return Exit(0);
    }
  }

 private:
  static constexpr uint64_t kMaxMessage = 1ull << 30;

  struct Running {
    uint32_t slot = 0;
    const host::HostEnv* env = nullptr;
    wasm::Instance* instance = nullptr;
  };

  class Observer : public InstanceObserver {
   public:
    Observer(Worker& w, uint64_t id) : w_(w), id_(id) {}
    void Started(const host::HostEnv& env, wasm::Instance& instance) override {
      std::lock_guard<std::mutex> lock(w_.mu_);
      Running& r = w_.running_[id_];
      r.env = &env;
      r.instance = &instance;
      if (w_.interrupted_) instance.Interrupt();
    }
    void Finished() override {
      std::lock_guard<std::mutex> lock(w_.mu_);
      Running& r = w_.running_[id_];
      r.env = nullptr;
      r.instance = nullptr;
    }

   private:
    Worker& w_;
    uint64_t id_;
  };

  int Exit(int code) {
    // Threads still running (a guest stuck in a device wait) end with the process.
    std::fflush(stderr);
    std::_Exit(code);
  }

  void SendLocked(const Message& m) {
    std::lock_guard<std::mutex> lock(send_mu_);
    (void)worker::Send(sock_, m);
  }

  void Wake() {
    {
      std::lock_guard<std::mutex> lock(tick_mu_);
      woken_ = true;
    }
    tick_cv_.notify_one();
  }

  void StartReader() {
    ++readers_;
    std::thread([self = shared_from_this()] { self->Read(); }).detach();
  }

  // One reader thread: waits its turn at the socket, takes one message, and runs it when it is an
  // invocation (a waiting reader takes the socket meanwhile; one is started when none waits).
  void Read() {
    for (;;) {
      Message m;
      {
        std::lock_guard<std::mutex> turn(read_mu_);
        Result<Message> got = in_.Next(kMaxMessage);
        if (!got.ok()) {
          closed_ = true;
          Wake();
          return;
        }
        m = std::move(*got);
        if (m.type == MessageType::kRun && readers_.load() - running_readers_.load() <= 1) StartReader();
      }
      switch (m.type) {
        case MessageType::kRun:
          ++running_readers_;
          Run(std::move(m));
          --running_readers_;
          break;
        case MessageType::kInterrupt: {
          interrupting_ = true;
          std::lock_guard<std::mutex> lock(mu_);
          interrupted_ = true;
          for (auto& [id, r] : running_) {
            if (r.instance != nullptr) r.instance->Interrupt();
          }
          break;
        }
        case MessageType::kStop:
          stopping_ = true;
          Wake();
          break;
        default: break;
      }
    }
  }

  std::shared_ptr<const wasm::Module> ModuleFor(const std::string& key, const std::string& sha, Status* why) {
    wasm::Artifact a;
    a.key = key;
    a.sha256 = sha;
    a.from_cache = true;
    Result<std::shared_ptr<const wasm::Module>> m = engine_->Load(a);
    if (!m.ok()) {
      *why = m.status();
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mu_);
    // Kept loaded for the next invocations (the least recently used goes beyond 64).
    modules_.remove(*m);
    modules_.push_front(*m);
    if (modules_.size() > 64) modules_.pop_back();
    return *m;
  }

  void Run(Message m) {
    Result<worker::RunHeader> decoded = m.blobs.empty()
                                            ? Result<worker::RunHeader>(Status::InvalidArgument("empty run"))
                                            : worker::DecodeRun(m.blobs[0]);
    if (!decoded.ok()) return;  // nothing to answer to: the supervisor's socket is corrupt
    const worker::RunHeader& h = *decoded;
    const uint64_t id = h.id;
    {
      uint32_t slot = h.slot < shared_->slots() ? h.slot : 0;
      std::lock_guard<std::mutex> lock(mu_);
      running_[id].slot = slot;
      shared_->slot(slot).invocation.store(id, std::memory_order_release);
    }
    InstanceSpec spec;
    spec.tenant = &tenant_;
    spec.function_id = h.function_id;
    spec.function_name = h.function_name;
    spec.version = h.version;
    spec.entry = h.entry;
    spec.args = h.args;
    spec.env = h.env;
    spec.input = m.blobs.size() > 1 ? std::move(m.blobs[1]) : std::string();
    spec.deadline = Clock::time_point(std::chrono::nanoseconds(h.deadline_ns));
    InvokeResult r;
    Status why;
    spec.module = ModuleFor(h.key, h.sha256, &why);
    if (spec.module == nullptr) {
      r.status = InvocationStatus::kError;
      r.exit_status = 70;
      r.error = "the tenant's worker cannot load the compiled module: " + why.ToString();
      r.device = device_->info().name;
    } else {
      Observer observer(*this, id);
      r = RunInstance(*tenant_device_, spec, interrupting_, &observer);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fatal_ && fatal_lost_) {
        // The guest saw the device fail; the invocation failed because the GPU is lost.
        r.status = InvocationStatus::kDeviceFault;
        r.exit_status = 70;
        r.error = fatal_why_;
      }
    }
    Message out;
    out.type = MessageType::kResult;
    out.blobs = {worker::EncodeResult(id, r), std::move(r.output), std::move(r.stdout_text), std::move(r.stderr_text)};
    uint32_t slot = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      slot = running_[id].slot;
    }
    shared_->slot(slot).Clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.erase(id);
    }
    SendLocked(out);
    if (stopping_) Wake();  // the ticker sees at once that a stopping worker may exit
  }

  // The heartbeat, the device context's usage, and each running instance's live counters.
  void Publish() {
    worker::SharedHeader& hd = shared_->header();
    hd.heartbeat_ns.store(NowNs(), std::memory_order_relaxed);
    TenantDevice::Usage u = tenant_device_->usage();
    hd.context_bytes.store(u.bytes, std::memory_order_relaxed);
    hd.context_reserved.store(u.reserved, std::memory_order_relaxed);
    hd.context_resets.store(u.resets, std::memory_order_relaxed);
    hd.context_modules.store(u.modules, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, r] : running_) {
      if (r.env == nullptr) continue;
      uint64_t gpu = r.env->cuda ? static_cast<uint64_t>(r.env->cuda->gpu_time().count()) : 0;
      shared_->slot(r.slot).Publish(r.env->metrics(), gpu);
    }
  }

  int sock_;
  worker::Receiver in_;  // guarded by read_mu_
  std::unique_ptr<worker::SharedMetrics> shared_;
  TenantConfig tenant_;
  std::shared_ptr<device::Device> device_;
  std::unique_ptr<TenantDevice> tenant_device_;
  std::unique_ptr<wasm::Engine> engine_;
  std::atomic<bool> interrupting_{false};
  std::atomic<bool> stopping_{false};
  std::mutex send_mu_;
  std::mutex read_mu_;  // the turn at the socket
  std::atomic<int> readers_{0}, running_readers_{0};
  std::atomic<bool> closed_{false};
  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
  bool woken_ = false;
  std::mutex mu_;  // running_, modules_, interrupted_, fatal_*
  std::map<uint64_t, Running> running_;
  std::list<std::shared_ptr<const wasm::Module>> modules_;
  bool interrupted_ = false;
  bool fatal_ = false, fatal_lost_ = false;
  std::string fatal_why_;
};

}  // namespace

int WorkerMain(int argc, char** argv) {
  // Dies with the supervisor; one that died before this line is noticed by the parent check.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (argc < 3 || std::to_string(::getppid()) != argv[2])
    Die("not started by its supervisor (gpuwasm __worker is internal)");
  ::close_range(worker::kSharedFd + 1, ~0U, 0);
  signal(SIGPIPE, SIG_IGN);
  // One malloc arena: a worker's threads take turns running instances, and with an arena per thread
  // the memory one instance freed was not reused by the next (vector_add: 0.66x of in-process
  // requests/s with glibc's default of 8 per core, ~0.9x with one).
  mallopt(M_ARENA_MAX, 1);
  auto shared = worker::SharedMetrics::Map(UniqueFd(worker::kSharedFd));
  if (!shared.ok()) Die("cannot map the shared metrics segment");
  g_header = &(*shared)->header();
  std::set_new_handler(OutOfMemory);
  Result<Message> init = worker::Receive(worker::kSocketFd, 1 << 20);
  if (!init.ok() || init->type != MessageType::kInit) Die("no init message from the supervisor");
  const nlohmann::json& h = init->header;

  auto fail = [&](const Status& s) {
    Message f;
    f.type = MessageType::kReady;
    f.header = {{"error", s.ToString()}};
    (void)worker::Send(worker::kSocketFd, f);
    std::_Exit(70);
  };
  try {
    TenantConfig t = worker::TenantFromJson(h.at("tenant")).value_or(TenantConfig{});
    rlimit files{t.worker_open_files, t.worker_open_files};
    ::setrlimit(RLIMIT_NOFILE, &files);
    if (t.worker_cpu_seconds > 0) {
      rlimit cpu{t.worker_cpu_seconds, t.worker_cpu_seconds + 5};
      ::setrlimit(RLIMIT_CPU, &cpu);
    }
    std::string tmp = h.value("tmpdir", std::string());
    if (!tmp.empty()) ::setenv("TMPDIR", tmp.c_str(), 1);
    if (h.value("deny_network", true)) {
      if (Status s = DenyNetwork(); !s.ok()) fail(s);
    }
    auto w = std::make_shared<Worker>(worker::kSocketFd, std::move(*shared));
    if (Status s = w->Init(h); !s.ok()) fail(s);
    Message ready;
    ready.type = MessageType::kReady;
    ready.header = {{"device", w->device_info().name}, {"pid", ::getpid()}};
    if (!worker::Send(worker::kSocketFd, ready).ok()) std::_Exit(0);
    return w->Loop();
  } catch (const std::exception& e) {
    fail(Status::Internal(std::string("the worker failed to start: ") + e.what()));
  }
  return 70;
}

}  // namespace gpuwasm::runtime
