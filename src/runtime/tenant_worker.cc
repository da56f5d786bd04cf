#include "runtime/tenant_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <set>

#include "common/unique_name.h"

extern char** environ;

namespace gpuwasm::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using worker::Message;
using worker::MessageType;

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

uint64_t ResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::string DescribeExit(int wstatus) {
  if (WIFSIGNALED(wstatus)) {
    const char* name = sigabbrev_np(WTERMSIG(wstatus));
    return "signal " + std::to_string(WTERMSIG(wstatus)) + (name != nullptr ? std::string(" (SIG") + name + ")" : "");
  }
  if (WIFEXITED(wstatus)) return "exit status " + std::to_string(WEXITSTATUS(wstatus));
  return "an unknown end";
}

}  // namespace

// One worker process of one tenant, as the supervisor sees it.
class WorkerProcess : public std::enable_shared_from_this<WorkerProcess> {
 public:
  // `spawn` runs the process start on the thread the worker's life is tied to.
  // `reaper` gets the worker when its last reference goes (WorkerReaper).
  static Result<std::shared_ptr<WorkerProcess>> Start(const TenantConfig& tenant, const WorkerSettings& s,
                                                      std::atomic<uint64_t>* lost,
                                                      const std::function<int(const std::function<int()>&)>& spawn,
                                                      const std::shared_ptr<WorkerReaper>& reaper);
  ~WorkerProcess() {
    Kill("the supervisor let go of it");
    if (reader_.joinable()) reader_.join();  // never its own reader (WorkerReaper::Add)
    std::error_code ec;
    if (!tmpdir_.empty()) std::filesystem::remove_all(tmpdir_, ec);
  }

  // Sends one invocation (moving from `run`) and returns; `done` gets its result on the reader
  // thread, or on this one when it cannot be sent. Sets *refused and calls nothing, leaving `run`
  // as it was, when the worker takes no new work any more (it retires, or was asked to stop): the
  // caller runs it in the tenant's next worker.
  void Start(WorkerRun& run, WorkerLive live, WorkerDone done, bool* refused);

  // Ends the process (SIGKILL to its group); `why` becomes the worker_lost reason.
  void Kill(const std::string& why) {
    // Under the lock: Died() reaps the process only after taking it, so the group still exists.
    std::lock_guard<std::mutex> lock(mu_);
    if (dead_ || killed_ || reaping_ || pid_ <= 0) return;
    killed_ = true;
    if (lost_why_.empty()) lost_why_ = why;
    ::kill(-pid_, SIGKILL);
  }
  // Asks it to finish what it runs and exit. It takes no new work from now on; the stop message
  // goes once nothing it was sent is unanswered, so no invocation can follow it on the socket (a
  // worker that sees a stop and runs nothing exits).
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    retiring_ = true;
    stop_wanted_ = true;
    SendStopIfIdleLocked();
  }
  void Interrupt() {
    std::lock_guard<std::mutex> lock(send_mu_);
    Message m;
    m.type = MessageType::kInterrupt;
    (void)worker::Send(sock_, m);
  }

  // What the monitor checks, every round.
  void Check(const WorkerSettings& s);
  bool dead() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dead_;
  }
  // Takes no new work: dead, killed, or asked to be replaced.
  bool retiring() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dead_ || killed_ || retiring_;
  }
  void Retire() {
    std::lock_guard<std::mutex> lock(mu_);
    retiring_ = true;
  }
  size_t running() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size();
  }
  Clock::time_point last_used() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_used_;
  }
  pid_t pid() const { return pid_; }
  // Its reader thread returned (or never started): ending it now waits for nothing.
  bool reader_returned() const { return !reader_.joinable() || reader_returned_.load(std::memory_order_acquire); }
  bool on_reader_thread() const { return reader_.get_id() == std::this_thread::get_id(); }
  Clock::time_point started() const { return started_; }
  const worker::SharedMetrics& shared() const { return *shared_; }
  const std::string& device() const { return device_; }

 private:
  struct Pending {
    WorkerLive live;
    WorkerDone done;
    Clock::time_point deadline;
    uint32_t slot = 0;
  };
  // Ends an invocation taken out of pending_ (mu_ not held): its live view, then its caller.
  static void Complete(Pending& p, InvokeResult r) {
    if (p.live) p.live(nullptr);
    p.done(std::move(r));
  }
  WorkerProcess() = default;
  void Read();
  void Died();
  void SendStopIfIdleLocked() {
    if (!stop_wanted_ || stop_sent_ || !pending_.empty()) return;
    stop_sent_ = true;
    std::lock_guard<std::mutex> lock(send_mu_);  // mu_ before send_mu_, never the other way
    Message m;
    m.type = MessageType::kStop;
    (void)worker::Send(sock_, m);
  }

  TenantConfig tenant_;
  pid_t pid_ = -1;
  int sock_ = -1;
  std::unique_ptr<worker::SharedMetrics> shared_;
  std::filesystem::path tmpdir_;
  std::string device_;
  Clock::time_point started_;
  std::thread reader_;
  std::atomic<bool> reader_returned_{false};
  std::mutex send_mu_;
  mutable std::mutex mu_;  // everything below
  std::map<uint64_t, Pending> pending_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_id_ = 1;
  Clock::time_point last_used_;
  bool dead_ = false, killed_ = false, retiring_ = false, reaping_ = false;
  bool stop_wanted_ = false, stop_sent_ = false;
  std::atomic<uint64_t>* lost_counter_ = nullptr;
  bool fatal_lost_ = false;
  std::string fatal_why_, lost_why_;
  std::set<uint64_t> past_deadline_;  // invocations whose overrun ended the worker
};

// Ending a worker joins its reader thread, and the thread that drops a worker's last reference
// may be one that reader waits for: a callback on the reader starts the next invocation through
// TenantWorkers (its lock), the monitor may hold that lock, the reader may drop the reference
// itself. So the last reference only hands the worker over; the monitor ends it, holding no lock,
// once its reader has returned (ending it then waits for nothing).
class WorkerReaper {
 public:
  ~WorkerReaper() { Close(); }
  void Add(WorkerProcess* w) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!closed_) {
      workers_.push_back(w);
      return;
    }
    lock.unlock();
    if (w->on_reader_thread()) {
      // Its own reader let go of it last (in a callback, after TenantWorkers stopped): another
      // thread waits for that reader to return, then ends it.
      std::thread([w] { delete w; }).detach();
    } else {
      delete w;
    }
  }
  // Ends the workers whose reader returned; returns how many are left.
  size_t Reap() {
    std::vector<WorkerProcess*> ready;
    size_t left = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto waiting =
          std::partition(workers_.begin(), workers_.end(), [](WorkerProcess* w) { return !w->reader_returned(); });
      ready.assign(waiting, workers_.end());
      workers_.erase(waiting, workers_.end());
      left = workers_.size();
    }
    for (WorkerProcess* w : ready) delete w;
    return left;
  }
  // From now on a worker is ended by whoever drops its last reference; those still here now.
  void Close() {
    std::vector<WorkerProcess*> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      all.swap(workers_);
    }
    for (WorkerProcess* w : all) delete w;
  }

 private:
  std::mutex mu_;
  std::vector<WorkerProcess*> workers_;
  bool closed_ = false;
};

Result<std::shared_ptr<WorkerProcess>> WorkerProcess::Start(
    const TenantConfig& tenant, const WorkerSettings& s, std::atomic<uint64_t>* lost,
    const std::function<int(const std::function<int()>&)>& spawn, const std::shared_ptr<WorkerReaper>& reaper) {
  std::shared_ptr<WorkerProcess> w(new WorkerProcess(), [reaper](WorkerProcess* p) { reaper->Add(p); });
  w->tenant_ = tenant;
  w->lost_counter_ = lost;
  const uint32_t slots = std::clamp<uint32_t>(tenant.concurrent_invocations, 1, 1024);
  GPUWASM_ASSIGN_OR_RETURN(w->shared_, worker::SharedMetrics::Create(slots));
  for (uint32_t i = slots; i > 0; --i) w->free_slots_.push_back(i - 1);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Status::IoError(std::string("socketpair: ") + std::strerror(errno));
  }
  w->sock_ = sv[0];
  // A private TMPDIR, made (and removed, whatever the worker's end) here.
  std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("gpuwasm-worker-" + std::to_string(::getpid()) + "-" + UniqueSuffix());
  std::error_code ec;
  std::filesystem::create_directory(tmp, ec);
  if (!ec) std::filesystem::permissions(tmp, std::filesystem::perms::owner_all, ec);
  if (!ec) w->tmpdir_ = tmp;

  // The child's fds 3 and 4 come from copies above them: a source that is itself fd 3 or 4 would
  // be overwritten by the first dup2.
  int sock_src = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 10), shared_src = ::fcntl(w->shared_->fd(), F_DUPFD_CLOEXEC, 10);
  ::close(sv[1]);
  sv[1] = sock_src;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sock_src, worker::kSocketFd);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&fa, shared_src, worker::kSharedFd);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: killed with whatever it started
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::string parent = std::to_string(::getpid());
  std::string arg0 = "gpuwasm-worker", verb = "__worker";
  std::string label = "--tenant=" + tenant.name;
  char* argv[] = {arg0.data(), verb.data(), parent.data(), label.data(), nullptr};
  int rc = spawn([&] { return ::posix_spawn(&w->pid_, s.program.c_str(), &fa, &attr, argv, environ); });
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  ::close(shared_src);
  if (rc != 0) {
    ::close(sv[0]);
    w->sock_ = -1;
    w->pid_ = -1;
    return Status::Unavailable("cannot start a worker process (" + s.program + "): " + std::strerror(rc));
  }
  w->started_ = w->last_used_ = Clock::now();
  Message init;
  init.type = MessageType::kInit;
  init.header = {{"tenant", worker::TenantToJson(tenant)},
                 {"device", s.device},
                 {"cache_dir", s.cache_dir.string()},
                 {"runaway_grace_ms", s.runaway_grace.count()},
                 {"compile_slots_dir", s.compile_slots_dir.string()},
                 {"compile_slots", s.compile_slots},
                 {"tmpdir", w->tmpdir_.string()},
                 {"deny_network", s.deny_network}};
  auto failed = [&](const std::string& why) -> Status {
    ::kill(-w->pid_, SIGKILL);
    int st = 0;
    while (::waitpid(w->pid_, &st, 0) < 0 && errno == EINTR) {
    }
    w->dead_ = true;
    return Status::Unavailable("the tenant's worker process did not start: " + why + " (" + DescribeExit(st) + ")");
  };
  if (!worker::Send(w->sock_, init).ok()) return failed("it closed its socket");
  pollfd p{w->sock_, POLLIN, 0};
  int n = 0;
  while ((n = ::poll(&p, 1, static_cast<int>(s.start_timeout.count()))) < 0 && errno == EINTR) {
  }
  if (n <= 0) return failed("no answer within " + std::to_string(s.start_timeout.count()) + " ms");
  Result<Message> ready = worker::Receive(w->sock_, 1 << 20);
  if (!ready.ok() || ready->type != MessageType::kReady) return failed("it exited before it was ready");
  if (ready->header.contains("error")) return failed(ready->header.value("error", ""));
  w->device_ = ready->header.value("device", "");
  w->reader_ = std::thread([raw = w.get()] {
    raw->Read();
    raw->reader_returned_.store(true, std::memory_order_release);
  });
  return w;
}

void WorkerProcess::Start(WorkerRun& run, WorkerLive live, WorkerDone done, bool* refused) {
  *refused = false;
  // Callbacks run with no lock of this worker held: `live` takes the runtime's lock, `done` may
  // start the next invocation (of any tenant) through TenantWorkers.
  auto lost = [&](const std::string& why) {
    InvokeResult r;
    r.tenant = tenant_.name;
    r.device = device_;
    r.status = InvocationStatus::kWorkerLost;
    r.exit_status = 70;
    r.error = why;
    done(std::move(r));
  };
  uint64_t id = 0;
  uint32_t slot = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (retiring_ && !dead_ && !killed_) {
      *refused = true;
      return;
    }
    if (dead_ || killed_ || free_slots_.empty()) {
      std::string why = dead_ || killed_
                            ? "the tenant's worker process ended before the invocation started: " + lost_why_
                            : "the tenant's worker has no free slot";
      lock.unlock();
      return lost(why);
    }
    id = next_id_++;
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  // The live view before the invocation can end: it is pending (and so can be answered, or ended
  // by Died) only from here on.
  if (live) live(&shared_->slot(slot));
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (dead_ || killed_) {
      std::string why = "the tenant's worker process ended before the invocation started: " + lost_why_;
      lock.unlock();
      if (live) live(nullptr);
      return lost(why);
    }
    Pending& p = pending_[id];
    p.deadline = run.deadline;
    p.slot = slot;
    p.live = std::move(live);
    p.done = std::move(done);
    last_used_ = Clock::now();
  }
  Message m;
  m.type = MessageType::kRun;
  worker::RunHeader h;
  h.id = id;
  h.slot = slot;
  h.key = std::move(run.key);
  h.sha256 = std::move(run.sha256);
  h.function_id = std::move(run.function_id);
  h.function_name = std::move(run.function_name);
  h.entry = std::move(run.entry);
  h.version = run.version;
  h.args = std::move(run.args);
  h.env = std::move(run.env);
  h.deadline_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(run.deadline.time_since_epoch()).count();
  m.blobs.push_back(worker::EncodeRun(h));
  m.blobs.push_back(std::move(run.input));
  Status sent;
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    sent = worker::Send(sock_, m);
  }
  if (!sent.ok()) Kill("its socket failed: " + sent.message());  // Died() answers the pending invocation
}

void WorkerProcess::Read() {
  worker::Receiver in(sock_);
  for (;;) {
    Result<Message> m = in.Next(1ull << 32);
    if (!m.ok()) {
      if (m.status().code() != StatusCode::kUnavailable) {
        std::lock_guard<std::mutex> lock(mu_);
        if (lost_why_.empty()) lost_why_ = "its socket failed: " + m.status().message();
      }
      break;
    }
    if (m->type == MessageType::kFatal) {
      std::lock_guard<std::mutex> lock(mu_);
      retiring_ = true;
      fatal_lost_ = m->header.value("lost", true);
      fatal_why_ = m->header.value("why", "");
      if (lost_why_.empty()) lost_why_ = "a process-fatal device error: " + fatal_why_;
      // A worker that must be restarted but still works (a context only abandoned) finishes what
      // it was sent and exits at the stop; a lost one exits by itself.
      stop_wanted_ = true;
      SendStopIfIdleLocked();
      continue;
    }
    if (m->type != MessageType::kResult) continue;
    InvokeResult r;
    Result<uint64_t> decoded = m->blobs.size() == 4
                                   ? worker::DecodeResult(m->blobs[0], &r)
                                   : Result<uint64_t>(Status::InvalidArgument("a result without its 4 parts"));
    if (!decoded.ok()) {
      // The worker is broken (or not ours): which invocation it answered is unknown, so every one
      // it holds ends now as worker_lost rather than waiting for its deadline.
      std::lock_guard<std::mutex> lock(mu_);
      if (lost_why_.empty()) lost_why_ = "it sent a malformed result (" + decoded.status().message() + ")";
      break;
    }
    r.tenant = tenant_.name;
    r.output = std::move(m->blobs[1]);
    r.stdout_text = std::move(m->blobs[2]);
    r.stderr_text = std::move(m->blobs[3]);
    uint64_t id = *decoded;
    Pending p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      p = std::move(it->second);
      pending_.erase(it);
      free_slots_.push_back(p.slot);
      last_used_ = Clock::now();
      SendStopIfIdleLocked();
    }
    Complete(p, std::move(r));
  }
  Died();
}

void WorkerProcess::Died() {
  // The socket closed: the process exited, or is about to. Make sure, and reap it.
  {
    std::lock_guard<std::mutex> lock(mu_);
    reaping_ = true;
  }
  ::kill(-pid_, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  ::close(sock_);
  std::map<uint64_t, Pending> pending;
  std::unique_lock<std::mutex> lock(mu_);
  dead_ = true;
  pending.swap(pending_);
  std::string why = lost_why_;
  if (why.empty()) {
    why = shared_->header().out_of_memory.load() != 0
              ? "it ran out of memory (worker_memory " + Mib(tenant_.worker_memory) + ")"
              : "it died (" + DescribeExit(wstatus) + ")";
  }
  if (!pending.empty() && lost_counter_ != nullptr) lost_counter_->fetch_add(1, std::memory_order_relaxed);
  std::vector<InvokeResult> results;
  for (auto& [id, p] : pending) {
    InvokeResult r;
    r.tenant = tenant_.name;
    r.device = device_;
    r.exit_status = 70;
    if (past_deadline_.count(id) != 0) {
      r.status = InvocationStatus::kDeadline;
      r.exit_status = 124;
      r.trap = "deadline_exceeded";
      r.error = why;
    } else if (fatal_lost_) {
      r.status = InvocationStatus::kDeviceFault;
      r.error = fatal_why_;
    } else {
      r.status = InvocationStatus::kWorkerLost;
      r.error = "the tenant's worker process was lost: " + why;
    }
    shared_->slot(p.slot).Clear();
    results.push_back(std::move(r));
  }
  lock.unlock();
  size_t i = 0;
  for (auto& [id, p] : pending) Complete(p, std::move(results[i++]));
}

void WorkerProcess::Check(const WorkerSettings& s) {
  std::string kill;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (dead_ || killed_) return;
    Clock::time_point now = Clock::now();
    auto limit = s.runaway_grace + std::chrono::seconds(1);
    for (const auto& [id, p] : pending_) {
      // Running in the worker (its slot names it): a runaway. Not (yet, or any more) running
      // there: its result may be waiting for a busy supervisor to read it, so only a heartbeat
      // timeout later (a worker that never starts it).
      bool running = shared_->slot(p.slot).invocation.load(std::memory_order_acquire) == id;
      if (now > p.deadline + limit + (running ? std::chrono::milliseconds(0) : s.heartbeat_timeout)) {
        past_deadline_.insert(id);
        kill = "an invocation was still running " + std::to_string(limit.count()) +
               " ms after its deadline (a kernel no call can stop): its worker was ended";
      }
    }
    if (kill.empty()) {
      uint64_t beat = shared_->header().heartbeat_ns.load(std::memory_order_relaxed);
      uint64_t age_ms = (NowNs() - std::min(beat, NowNs())) / 1'000'000;
      if (now - started_ > s.heartbeat_timeout && age_ms > static_cast<uint64_t>(s.heartbeat_timeout.count())) {
        kill = "it stopped answering (no heartbeat for " + std::to_string(age_ms) + " ms)";
      }
    }
  }
  if (kill.empty()) {
    uint64_t rss = ResidentBytes(pid_);
    if (rss > tenant_.worker_memory) {
      kill =
          "it exceeded its memory limit (worker_memory " + Mib(tenant_.worker_memory) + ", resident " + Mib(rss) + ")";
    }
  }
  if (!kill.empty()) Kill(kill);
}

class TenantWorkers::Spawner {
 public:
  Spawner() : thread_([this] { Loop(); }) {}
  ~Spawner() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // Runs `f` on the spawner's thread and returns what it returned.
  int Run(const std::function<int()>& f) {
    std::packaged_task<int()> task(f);
    std::future<int> result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_all();
    return result.get();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return done_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      std::packaged_task<int()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<int()>> tasks_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

struct TenantWorkers::TenantEntry {
  std::mutex start_mu;  // one start at a time per tenant
  std::shared_ptr<WorkerProcess> current;
};

TenantWorkers::TenantWorkers(WorkerSettings settings)
    : settings_(std::move(settings)), spawner_(std::make_unique<Spawner>()), reaper_(std::make_shared<WorkerReaper>()) {
  // TMPDIRs of workers whose supervisor was killed (its workers died with it): their pid is gone.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("gpuwasm-worker-", 0) != 0) continue;
    pid_t owner = static_cast<pid_t>(std::strtol(name.c_str() + 15, nullptr, 10));
    if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) std::filesystem::remove_all(e.path(), ec);
  }
  monitor_ = std::thread([this] { Monitor(); });
}

TenantWorkers::~TenantWorkers() {
  try {
    Stop(std::chrono::milliseconds(0));
  } catch (const std::exception& e) {  // a thread that cannot be joined, memory exhausted
    std::fprintf(stderr, "gpuwasm: stopping the tenant worker processes failed: %s\n", e.what());
  }
}

Result<std::shared_ptr<WorkerProcess>> TenantWorkers::Acquire(const TenantConfig& tenant) {
  TenantEntry* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return Status::Unavailable("gpuwasm is shutting down");
    auto& s = tenants_[tenant.name];
    if (!s) s = std::make_unique<TenantEntry>();
    slot = s.get();
    if (slot->current && !slot->current->retiring()) return slot->current;
  }
  std::lock_guard<std::mutex> start(slot->start_mu);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (slot->current && !slot->current->retiring()) return slot->current;
    // Room under max_workers (the tenant's retiring worker not counted): the least recently used
    // idle worker of another tenant goes.
    size_t live = retiring_.size();
    // The tenant's worker that retires finishes what it runs, whatever happens to this start.
    if (slot->current && !slot->current->dead()) retiring_.push_back(std::move(slot->current));
    slot->current.reset();
    std::shared_ptr<WorkerProcess>* lru = nullptr;
    for (auto& [name, t] : tenants_) {
      if (!t->current) continue;
      ++live;
      if (t->current->running() == 0 && (lru == nullptr || t->current->last_used() < (*lru)->last_used()))
        lru = &t->current;
    }
    if (live >= settings_.max_workers) {
      if (lru == nullptr) {
        return Status::Unavailable("all " + std::to_string(settings_.max_workers) +
                                   " tenant workers (max_workers) are busy: try again later");
      }
      (*lru)->Stop();
      retiring_.push_back(std::move(*lru));
      idle_stopped_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  GPUWASM_ASSIGN_OR_RETURN(
      std::shared_ptr<WorkerProcess> w,
      WorkerProcess::Start(
          tenant, settings_, &lost_, [this](const std::function<int()>& f) { return spawner_->Run(f); }, reaper_));
  started_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  slot->current = w;
  return w;
}

bool TenantWorkers::Start(const TenantConfig& tenant, WorkerRun run, WorkerLive live, WorkerDone done, bool may_start) {
  // A worker that began to retire after it was acquired refuses the run before sending it; the
  // tenant's next worker takes it. A handful of tries covers workers retiring one after another.
  for (int attempt = 0;; ++attempt) {
    Result<std::shared_ptr<WorkerProcess>> w = may_start ? Acquire(tenant) : Running(tenant);
    if (!may_start && w.ok() && *w == nullptr) return false;
    auto fail = [&](std::string why) {
      InvokeResult r;
      r.tenant = tenant.name;
      r.status = InvocationStatus::kError;
      r.exit_status = 70;
      r.error = std::move(why);
      done(std::move(r));
      return true;
    };
    if (!w.ok()) return fail(w.status().message());
    bool refused = false;
    (*w)->Start(run, live, done, &refused);
    if (!refused) return true;
    if (attempt >= 4) return fail("the tenant's workers kept retiring: try again");
  }
}

Result<std::shared_ptr<WorkerProcess>> TenantWorkers::Running(const TenantConfig& tenant) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return Status::Unavailable("gpuwasm is shutting down");
  auto it = tenants_.find(tenant.name);
  if (it == tenants_.end() || !it->second->current || it->second->current->retiring())
    return std::shared_ptr<WorkerProcess>();
  return it->second->current;
}

TenantDevice::Usage TenantWorkers::ContextUsage(const std::string& tenant) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end() || !it->second->current || it->second->current->dead()) return {};
  const worker::SharedHeader& h = it->second->current->shared().header();
  return {h.context_bytes.load(std::memory_order_relaxed), h.context_reserved.load(std::memory_order_relaxed),
          h.context_resets.load(std::memory_order_relaxed), h.context_modules.load(std::memory_order_relaxed)};
}

TenantWorkers::Counters TenantWorkers::counters() const {
  return {started_.load(std::memory_order_relaxed), lost_.load(std::memory_order_relaxed),
          idle_stopped_.load(std::memory_order_relaxed)};
}

std::vector<TenantWorkers::Info> TenantWorkers::Workers() const {
  std::vector<Info> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto add = [&](const std::string& tenant, const std::shared_ptr<WorkerProcess>& w) {
    if (!w || w->dead()) return;
    out.push_back({tenant, w->pid(), w->running(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - w->started()),
                   ResidentBytes(w->pid())});
  };
  for (const auto& [name, t] : tenants_) add(name, t->current);
  for (const auto& w : retiring_) add("", w);
  return out;
}

void TenantWorkers::InterruptAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, t] : tenants_) {
    if (t->current) t->current->Interrupt();
  }
  for (auto& w : retiring_) w->Interrupt();
}

void TenantWorkers::Monitor() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    monitor_cv_.wait_for(lock, std::chrono::milliseconds(50));
    if (stopped_) break;
    std::vector<std::shared_ptr<WorkerProcess>> all;
    for (auto& [name, t] : tenants_) {
      if (t->current) all.push_back(t->current);
    }
    all.insert(all.end(), retiring_.begin(), retiring_.end());
    lock.unlock();
    Clock::time_point now = Clock::now();
    for (auto& w : all) {
      w->Check(settings_);
      if (!w->retiring() && w->running() == 0 && now - w->last_used() > settings_.idle_timeout) {
        w->Retire();
        w->Stop();
        idle_stopped_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    lock.lock();
    // Workers that ended, or are asked to end and run nothing, leave the books (and are reaped).
    std::vector<std::shared_ptr<WorkerProcess>> gone;
    for (auto& [name, t] : tenants_) {
      if (t->current && t->current->retiring()) {
        if (!t->current->dead()) {
          retiring_.push_back(t->current);
        } else {
          gone.push_back(t->current);
        }
        t->current.reset();
      }
    }
    for (auto it = retiring_.begin(); it != retiring_.end();) {
      if ((*it)->dead()) {
        gone.push_back(std::move(*it));
        it = retiring_.erase(it);
      } else {
        if ((*it)->running() == 0) (*it)->Stop();
        ++it;
      }
    }
    lock.unlock();
    all.clear();
    gone.clear();
    reaper_->Reap();  // joins reader threads that returned, removes TMPDIRs: outside the lock
    lock.lock();
  }
}

void TenantWorkers::Stop(std::chrono::milliseconds grace) {
  std::vector<std::shared_ptr<WorkerProcess>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ && !monitor_.joinable()) return;
    stopped_ = true;
    for (auto& [name, t] : tenants_) {
      if (t->current) all.push_back(std::move(t->current));
    }
    all.insert(all.end(), retiring_.begin(), retiring_.end());
    retiring_.clear();
  }
  monitor_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  for (auto& w : all) w->Stop();
  auto until = Clock::now() + grace;
  for (auto& w : all) {
    while (!w->dead() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    w->Kill("gpuwasm is shutting down");
  }
  all.clear();
  // Their readers end once the processes are gone and the callbacks they run return (those see
  // the shutdown and start nothing).
  auto reaped_by = Clock::now() + std::chrono::seconds(30);
  while (reaper_->Reap() > 0 && Clock::now() < reaped_by) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  reaper_->Close();
}

}  // namespace gpuwasm::runtime
