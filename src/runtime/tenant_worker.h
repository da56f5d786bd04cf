// TenantWorkers: the supervisor's side of process isolation. Each tenant's instances and device
// context live in a worker process of its own (worker_main.h), started on the tenant's first
// invocation, kept warm, stopped after an idle time, at most max_workers at once (the least
// recently used idle one is stopped to make room). Requests and results cross a Unix socket; each
// running instance's live counters are in shared memory (worker_protocol.h).
//
// The supervisor watches every worker (a monitor thread, every 50 ms) and ends one, never any
// other, when it
//   - reports a process-fatal device error: its running invocations fail with `device_fault`
//     naming the fault;
//   - still runs an invocation runaway_grace + 1 s after its deadline (a kernel no call can stop;
//     "runs" as the worker's shared memory says, so a result not yet read by a busy supervisor
//     does not count), or has not answered one a heartbeat timeout after that: that invocation
//     ends `deadline`, the worker's others `worker_lost`;
//   - exceeds the tenant's worker_memory (resident), stops refreshing its heartbeat, crashes, or is
//     killed: its running invocations fail with `worker_lost` saying why.
// The tenant's next invocation starts a fresh worker. A worker asked to be replaced without losing
// the GPU (a kernel it had to abandon) finishes what it runs while new invocations go to a new one.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/config.h"
#include "runtime/instance_runner.h"
#include "runtime/invocation.h"
#include "runtime/worker_protocol.h"

namespace gpuwasm::runtime {

struct WorkerSettings {
  std::string program;              // a gpuwasm executable, run as `gpuwasm __worker`
  std::string device = "auto";      // the device spec each worker opens
  std::filesystem::path cache_dir;  // where the supervisor's artifacts are
  std::chrono::milliseconds runaway_grace{1000};
  std::filesystem::path compile_slots_dir;  // the node's compile slots (compile_slots.h); "" = own
  uint32_t compile_slots = 1;
  std::chrono::milliseconds idle_timeout{60'000};
  uint32_t max_workers = 64;
  std::chrono::milliseconds heartbeat_timeout{5'000};
  std::chrono::milliseconds start_timeout{30'000};
  bool deny_network = true;
};

// One invocation for a worker: the artifact to run and what the instance gets.
struct WorkerRun {
  std::string key, sha256;  // the compiled module (Engine::Build's artifact)
  std::string function_id, function_name, entry;
  int64_t version = 0;
  std::string input;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::chrono::steady_clock::time_point deadline;
};

class WorkerProcess;
class WorkerReaper;
// An invocation's end: its result, called exactly once.
using WorkerDone = std::function<void(InvokeResult)>;
// Given the invocation's shared counters while it runs, then nullptr (may be empty).
using WorkerLive = std::function<void(const worker::LiveInstanceMetrics*)>;

class TenantWorkers {
 public:
  explicit TenantWorkers(WorkerSettings settings);
  ~TenantWorkers();  // Stop()
  TenantWorkers(const TenantWorkers&) = delete;
  TenantWorkers& operator=(const TenantWorkers&) = delete;

  // Sends `run` to the tenant's worker (started when there is none) and returns without waiting:
  // `done` gets its result on a supervisor thread (the worker's reader), or on this thread before
  // Start returns when it cannot be sent. While it runs, `live` is given the invocation's shared
  // counters, then nullptr. With `may_start` false a tenant whose worker is not running (starting
  // one takes milliseconds to seconds) is left alone: Start returns false and calls nothing.
  bool Start(const TenantConfig& tenant, WorkerRun run, WorkerLive live, WorkerDone done, bool may_start = true);

  // The tenant's device-context usage as its current worker last published it (zeros without one).
  TenantDevice::Usage ContextUsage(const std::string& tenant) const;

  struct Counters {
    uint64_t started = 0;  // worker processes started
    uint64_t lost = 0;     // ended by a fault, a limit, a crash or a kill while running invocations
    uint64_t idle_stopped = 0;
  };
  Counters counters() const;
  struct Info {
    std::string tenant;
    pid_t pid = 0;
    size_t running = 0;
    std::chrono::milliseconds age{0};
    uint64_t resident_bytes = 0;
  };
  std::vector<Info> Workers() const;

  // Every running instance of every worker stops at its next check (shutdown).
  void InterruptAll();
  // Stops every worker (running invocations finish within `grace`, then the processes are killed).
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

 private:
  struct TenantEntry;
  class Spawner;
  Result<std::shared_ptr<WorkerProcess>> Acquire(const TenantConfig& tenant);
  // The tenant's worker when one runs and takes work, else nullptr (never starts one).
  Result<std::shared_ptr<WorkerProcess>> Running(const TenantConfig& tenant);
  void Monitor();

  WorkerSettings settings_;
  // Workers are started from one thread that lives as long as this: a worker dies with the thread
  // that started it (PR_SET_PDEATHSIG is per thread), and an invocation's thread may end first.
  std::unique_ptr<Spawner> spawner_;
  // Where workers go when their last reference is dropped, to be ended by the monitor.
  std::shared_ptr<WorkerReaper> reaper_;
  mutable std::mutex mu_;  // tenants_, retiring_, stopped_
  std::map<std::string, std::unique_ptr<TenantEntry>> tenants_;
  std::vector<std::shared_ptr<WorkerProcess>> retiring_;  // finishing what they run, then stopped
  bool stopped_ = false;
  std::condition_variable monitor_cv_;
  std::thread monitor_;
  std::atomic<uint64_t> started_{0}, lost_{0}, idle_stopped_{0};
};

}  // namespace gpuwasm::runtime
