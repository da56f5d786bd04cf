// `gpuwasm serve`: run a gpuwasm node: the runtime with its store, the HTTP API, /metrics with the
// GPM monitor when NVML is there. SIGINT or SIGTERM shut it down gracefully.
#include <signal.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/output.h"
#include "cli/version.h"
#include "common/duration.h"
#include "nvml/nvml.h"
#include "runtime/runtime.h"
#include "server/server.h"
#include "telemetry/gpm_monitor.h"

namespace gpuwasm::cli {
namespace {

struct ServeFlags {
  EngineFlags engine;
  std::string config;
  std::string listen;
  std::string store;
  std::string database;
  std::string device;
  std::string gpm_interval = "1s";
  bool no_gpm = false;
};

int Serve(const ServeFlags& f) {
  auto fail = [](const Status& s) {
    return Fail(
        "serve", s.ToString(),
        s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? kExitUsage : kExitSoftware);
  };
  Result<runtime::RuntimeConfig> config = f.config.empty() ? runtime::DefaultConfig() : runtime::LoadConfig(f.config);
  if (!config.ok()) return fail(config.status());
  if (!f.listen.empty()) config->server.listen = f.listen;
  // Before anything starts: a bad --listen is a usage error (the file's was checked when read).
  Result<runtime::ListenAddress> where = runtime::ParseListen(config->server.listen);
  if (!where.ok()) return fail(where.status());
  for (const std::string& w : runtime::ConfigWarnings(*config))
    std::fprintf(stderr, "gpuwasm serve: warning: %s\n", w.c_str());
  if (!f.store.empty()) config->store_dir = f.store;
  if (!f.database.empty()) config->database = f.database;
  if (!f.device.empty()) config->device = f.device;

  // SIGINT/SIGTERM are taken with sigwait below: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // A supervisor with a worker process per tenant, unless the configuration says otherwise.
  if (!config->isolation) config->isolation = runtime::Isolation::kProcess;
  runtime::RuntimeOptions options;
  options.worker_program = "/proc/self/exe";
  auto engine = EngineOptionsFrom(f.engine);
  if (!engine.ok()) return fail(engine.status());
  options.engine = std::move(*engine);
  auto rt = runtime::Runtime::Create(*config, std::move(options));
  if (!rt.ok()) return fail(rt.status());
  if (!(*rt)->device_note().empty()) std::fprintf(stderr, "gpuwasm serve: %s\n", (*rt)->device_note().c_str());
  const store::RecoveryReport& rec = (*rt)->store()->recovery();
  if (rec.temporary_files_removed + rec.orphan_blobs_removed + rec.failed_missing_blob.size() +
          rec.interrupted_compiles.size() !=
      0) {
    std::fprintf(stderr,
                 "gpuwasm serve: store recovered: %zu temporary files and %zu orphan blobs removed, %zu functions "
                 "without bytes marked failed, %zu interrupted compiles restarted\n",
                 rec.temporary_files_removed, rec.orphan_blobs_removed, rec.failed_missing_blob.size(),
                 rec.interrupted_compiles.size());
  }

  telemetry::MetricRegistry gpm_registry;
  std::unique_ptr<telemetry::GpmMonitor> gpm;
  if (!f.no_gpm) {
    auto interval = ParseDuration(f.gpm_interval);
    if (!interval.ok()) return fail(interval.status());
    auto nvml = nvml::Nvml::Open();
    if (!nvml.ok()) {
      std::fprintf(stderr, "gpuwasm serve: no GPU telemetry: %s\n", nvml.status().message().c_str());
    } else {
      telemetry::GpmMonitorOptions o;
      o.interval = *interval;
      auto mon = telemetry::GpmMonitor::Start(*nvml, gpm_registry, o);
      if (!mon.ok()) {
        std::fprintf(stderr, "gpuwasm serve: no GPU telemetry: %s\n", mon.status().message().c_str());
      } else {
        gpm = std::move(*mon);
      }
    }
  }

  auto server = server::Server::Start(**rt, gpm ? &gpm_registry : nullptr, kVersion);
  if (!server.ok()) return fail(server.status());
  std::string host = where->host.find(':') != std::string::npos ? "[" + where->host + "]" : where->host;
  if (JsonOutput()) {  // what a supervisor reads to learn the port (diagnostics stay on stderr)
    PrintJson({{"listening", "http://" + host + ":" + std::to_string((*server)->port())},
               {"device", (*rt)->device_info().name},
               {"store", (*rt)->store()->description()},
               {"tenants", (*rt)->config().tenants.size()},
               {"isolation", std::string(runtime::IsolationName((*rt)->isolation()))}});
  } else {
    std::printf("gpuwasm serve: listening on http://%s:%u (device: %s; store: %s; %zu tenant(s); isolation: %s)\n",
                host.c_str(), (*server)->port(), (*rt)->device_info().name.c_str(),
                (*rt)->store()->description().c_str(), (*rt)->config().tenants.size(),
                std::string(runtime::IsolationName((*rt)->isolation())).c_str());
    std::fflush(stdout);
  }

  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "gpuwasm serve: %s: shutting down (grace %lld ms)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
               static_cast<long long>((*rt)->config().shutdown_grace.count()));
  (*server)->Shutdown((*rt)->config().shutdown_grace);
  gpm.reset();
  std::fprintf(stderr, "gpuwasm serve: stopped\n");
  return 0;
}

}  // namespace

void RegisterServe(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run a gpuwasm node: the HTTP API (deploy, invoke, list, delete functions; running instances), "
      "/metrics for Prometheus, /healthz and /readyz. SIGINT/SIGTERM stop it gracefully.");
  cmd->add_option("--config,-c", flags->config,
                  "Configuration file (TOML; docs/operator-guide.md). Default: one open tenant");
  cmd->add_option("--listen,-l", flags->listen,
                  "Address to listen on, host:port (default: [server].listen, 127.0.0.1:8080)");
  cmd->add_option("--store", flags->store,
                  "Function store directory (default: [runtime].store, else ~/.local/share/gpuwasm)");
  cmd->add_option("--database", flags->database,
                  "PostgreSQL connection string shared by every node (postgresql://user@host/db); the store "
                  "directory then holds only blobs and compiled modules and may be a shared volume "
                  "(default: [runtime].database, else SQLite in the store directory)")
      ->envname("GPUWASM_DATABASE_URL");
  cmd->add_option("--device,-d", flags->device, "auto, cpu or cuda:N (default: [runtime].device, auto)");
  cmd->add_option("--gpm-interval", flags->gpm_interval, "NVML GPM sampling interval for /metrics")
      ->capture_default_str();
  cmd->add_flag("--no-gpm", flags->no_gpm, "Do not sample GPU metrics");
  AddEngineFlags(cmd, &flags->engine);
  cmd->get_option("--cache-dir")
      ->description("Where compiled modules are cached (default: the store's artifacts/ directory)");
  cmd->callback([flags] { SetExitCode(Serve(*flags)); });
}

}  // namespace gpuwasm::cli
