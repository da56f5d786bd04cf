// `gpuwasm run app.wasm`: compile (or hit the cache), instantiate, run the entry point, print the
// guest's stdout (and output), exit with the guest's status.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/output.h"
#include "common/duration.h"
#include "runtime/runtime.h"

namespace gpuwasm::cli {
namespace {

constexpr int kExitDeadline = 124;  // like timeout(1); the others are in commands.h

struct RunFlags {
  EngineFlags engine;
  std::string wasm;
  std::string input;
  std::string timeout = "30s";
  std::string entry;
  uint32_t max_memory_pages = 0;  // 0: the tenant's max_memory
  std::vector<std::string> args;
  std::vector<std::string> env;  // KEY=value
  std::string device = "auto";
  std::string report;         // "" or "json"
  std::string report_file;    // "" = stderr
  uint32_t max_inflight = 0;  // 0: the tenant's inflight_launches
  std::string config;         // "" = the default single-tenant configuration
  std::string tenant;         // "" = the configuration's first tenant
  bool no_gpu = false;
  std::string isolation;  // "" = the configuration's, else none
};

int ExitFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnsupported: return kExitBadModule;
    case StatusCode::kNotFound:
    case StatusCode::kIoError: return kExitNoInput;
    case StatusCode::kDeadlineExceeded: return kExitDeadline;
    default: return kExitSoftware;
  }
}

int Run(const RunFlags& f) {
  auto fail = [](const Status& s) { return Fail("run", s.ToString(), ExitFor(s)); };
  Result<std::chrono::milliseconds> timeout = ParseDuration(f.timeout);
  if (!timeout.ok()) return fail(timeout.status());
  Result<std::string> bytes = ReadWholeFile(f.wasm);
  if (!bytes.ok()) return fail(bytes.status());
  runtime::InvokeRequest request;
  if (!f.input.empty()) {
    Result<std::string> in = f.input == "-"
                                 ? Result<std::string>(std::string(std::istreambuf_iterator<char>(std::cin), {}))
                                 : ReadWholeFile(f.input);
    if (!in.ok()) return fail(in.status());
    request.input = std::move(*in);
  }
  request.deadline = *timeout;
  request.args = f.args;
  request.env = f.env;
  request.entry = f.entry;

  // The same runtime as `gpuwasm serve`, without a function store: the tenant's quotas, the
  // device context per tenant, admission and the instance lifecycle all apply.
  Result<runtime::RuntimeConfig> config = f.config.empty() ? runtime::DefaultConfig() : runtime::LoadConfig(f.config);
  if (!config.ok()) return fail(config.status());
  std::string tenant_name = f.tenant.empty() ? config->tenants.front().name : f.tenant;
  runtime::TenantConfig* tenant = nullptr;
  for (runtime::TenantConfig& t : config->tenants) {
    if (t.name == tenant_name) tenant = &t;
  }
  if (tenant == nullptr) {
    std::string names;
    for (const runtime::TenantConfig& t : config->tenants) names += (names.empty() ? "" : ", ") + t.name;
    return fail(Status::NotFound("no tenant named '" + tenant_name + "' in " + f.config + "; its tenants: " + names));
  }
  if (f.config.empty()) {
    // Without a configuration the person running the command sets the limits.
    tenant->max_deadline = std::max(tenant->max_deadline, *timeout);
    tenant->max_module_size = std::max<uint64_t>(tenant->max_module_size, bytes->size());
    tenant->max_input_size = std::max<uint64_t>(tenant->max_input_size, request.input.size());
  }
  if (f.max_inflight != 0) tenant->inflight_launches = f.max_inflight;
  if (f.max_memory_pages != 0) tenant->max_memory = uint64_t{f.max_memory_pages} * 65536;
  if (f.no_gpu) tenant->gpu = false;
  if (f.device != "auto" || f.config.empty()) config->device = f.device;
  if (f.isolation == "process") {
    config->isolation = runtime::Isolation::kProcess;
  } else if (f.isolation == "none") {
    config->isolation = runtime::Isolation::kNone;
  }
  runtime::RuntimeOptions options;
  options.use_store = false;
  options.worker_program = "/proc/self/exe";
  auto engine = EngineOptionsFrom(f.engine);
  if (!engine.ok()) return fail(engine.status());
  options.engine = std::move(*engine);
  // One run ends long before a large module's optimising compile would: `gpuwasm compile` makes
  // that artifact, and a later run uses it.
  options.engine.optimize_in_background = false;
  auto rt = runtime::Runtime::Create(*config, std::move(options));
  if (!rt.ok()) return fail(rt.status());

  // In this process the guest's stdout and stderr are streamed as it writes them (stdout line by
  // line, as its C library flushes it); a worker process's come with the result.
  const bool live = config->isolation == runtime::Isolation::kNone && !JsonOutput();
  if (live) {
    request.live_output = [](int fd, std::string_view bytes) {
      std::FILE* to = fd == 1 ? stdout : stderr;
      std::fwrite(bytes.data(), 1, bytes.size(), to);
      std::fflush(to);
    };
  }
  auto result =
      (*rt)->InvokeModule(tenant_name, std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()),
                          std::filesystem::path(f.wasm).filename().string(), std::move(request));
  if (!result.ok()) return fail(result.status());
  const runtime::InvokeResult& r = *result;
  if (JsonOutput()) {  // the result document, as `invoke --json` prints it; its status tells a trap
    nlohmann::json j = r;
    j["output"] = r.output;
    j["stdout"] = r.stdout_text;
    j["stderr"] = r.stderr_text;
    j["device_note"] = (*rt)->device_note().empty() ? nlohmann::json(nullptr) : nlohmann::json((*rt)->device_note());
    PrintJson(j);
    return r.status == runtime::InvocationStatus::kError ? kExitSoftware : r.exit_status;
  }
  if (!live) std::fwrite(r.stdout_text.data(), 1, r.stdout_text.size(), stdout);
  std::fwrite(r.output.data(), 1, r.output.size(), stdout);
  std::fflush(stdout);  // before stderr: one terminal (or 2>&1) shows them in the order written
  if (!live) std::fwrite(r.stderr_text.data(), 1, r.stderr_text.size(), stderr);
  int code = r.exit_status;
  switch (r.status) {
    case runtime::InvocationStatus::kTrap:
    case runtime::InvocationStatus::kDeadline: std::fprintf(stderr, "trap: %s\n", r.trap.c_str()); break;
    case runtime::InvocationStatus::kError:
      std::fprintf(stderr, "gpuwasm run: %s\n", r.error.c_str());
      code = kExitSoftware;
      break;
    default: break;
  }
  if (f.report == "json") {
    nlohmann::json report = r;
    report["device_note"] =
        (*rt)->device_note().empty() ? nlohmann::json(nullptr) : nlohmann::json((*rt)->device_note());
    std::string text = report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (f.report_file.empty()) {
      std::fwrite(text.data(), 1, text.size(), stderr);
    } else {
      std::ofstream out(f.report_file, std::ios::trunc);
      out << text;
      if (!out) std::fprintf(stderr, "gpuwasm run: cannot write %s\n", f.report_file.c_str());
    }
  }
  return code;
}

}  // namespace

void RegisterRun(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd =
      app.add_subcommand("run",
                         "Run a guest module once, without deploying it: compile (or reuse the cached build), "
                         "instantiate under the tenant's limits, call its entry point, print its stdout and exit "
                         "with its status. A trap prints 'trap: <kind>' and exits 134 (124 for a deadline); an "
                         "invalid module exits 65.");
  cmd->add_option("wasm", flags->wasm, "The guest .wasm file")->required();
  cmd->add_option("--input,-i", flags->input, "File whose bytes are the guest's stdin and input ('-': stdin)");
  cmd->add_option("--timeout,-t", flags->timeout,
                  "Deadline of the run (e.g. 500ms, 5s, 2m; a bare number is seconds; at least 1ms)")
      ->capture_default_str();
  cmd->add_option("--entry,-e", flags->entry, "Export to call: () -> () or () -> i32 (default: _start, else run)");
  cmd->add_option("--max-memory-pages", flags->max_memory_pages,
                  "Cap on the guest's linear memory, in 64 KiB pages (default: the tenant's max_memory, 1 GiB)");
  cmd->add_option("args", flags->args, "Arguments passed to the guest (after --)");
  cmd->add_option("--env", flags->env, "An environment variable of the guest, KEY=value (repeatable)");
  cmd->add_option("--device,-d", flags->device, "Device for wasi_cuda: auto (CUDA if usable, else CPU), cpu, cuda:N")
      ->capture_default_str();
  cmd->add_option(
         "--report", flags->report,
         "Print a report of the run: json (exit status, wall time, device and why auto chose it, final metrics)")
      ->check(CLI::IsMember({"json"}));
  cmd->add_option("--report-file", flags->report_file, "Write the report here instead of stderr");
  cmd->add_option(
      "--max-inflight", flags->max_inflight,
      "Launches the guest may have in flight before back-pressure (default: the tenant's inflight_launches, 64)");
  cmd->add_option("--config,-c", flags->config,
                  "Configuration file (TOML): run as one of its tenants, under its quotas (docs/operator-guide.md)");
  cmd->add_option("--tenant", flags->tenant, "Tenant of the configuration to run as (default: its first)");
  cmd->add_flag("--no-gpu", flags->no_gpu, "Deny GPU access: every wasi_cuda call returns WCU_ERR_NOT_PERMITTED");
  cmd->add_option(
         "--isolation", flags->isolation,
         "Where the instance runs: none (in this process, the default) or process (in a tenant worker process, "
         "as gpuwasm serve runs every invocation)")
      ->check(CLI::IsMember({"none", "process"}));
  AddEngineFlags(cmd, &flags->engine);
  cmd->callback([flags] {
    if (!flags->report_file.empty() && flags->report.empty()) flags->report = "json";
    SetExitCode(Run(*flags));
  });
}

}  // namespace gpuwasm::cli
