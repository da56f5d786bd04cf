// `gpuwasm run app.wasm`: compile (or hit the cache), instantiate, run the entry point, print the
// guest's stdout (and output), exit with the guest's status.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "common/duration.h"
#include "device/select.h"
#include "host/host_env.h"
#include "wasm/instance.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace gpuwasm::cli {
namespace {

// Exit statuses of gpuwasm itself (the guest's own status passes through otherwise).
constexpr int kExitBadModule = 65;   // EX_DATAERR: invalid or rejected module
constexpr int kExitNoInput = 66;     // EX_NOINPUT: a file could not be read
constexpr int kExitSoftware = 70;    // EX_SOFTWARE: engine error
constexpr int kExitDeadline = 124;   // like timeout(1)
constexpr int kExitTrap = 134;       // like an abort

struct RunFlags {
  EngineFlags engine;
  std::string wasm;
  std::string input;
  std::string timeout = "30s";
  std::string entry;
  uint32_t max_memory_pages = 16384;
  std::vector<std::string> args;
  std::string device = "auto";
  std::string report;       // "" or "json"
  std::string report_file;  // "" = stderr
  uint32_t max_inflight = 64;
  bool no_gpu = false;
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
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "gpuwasm run: %s\n", s.ToString().c_str());
    return ExitFor(s);
  };
  Result<std::chrono::milliseconds> timeout = ParseDuration(f.timeout);
  if (!timeout.ok()) return fail(timeout.status());
  Result<std::string> bytes = ReadWholeFile(f.wasm);
  if (!bytes.ok()) return fail(bytes.status());
  std::string input;
  if (!f.input.empty()) {
    Result<std::string> in = f.input == "-" ? Result<std::string>(std::string(
                                                   std::istreambuf_iterator<char>(std::cin), {}))
                                            : ReadWholeFile(f.input);
    if (!in.ok()) return fail(in.status());
    input = std::move(*in);
  }
  auto engine = MakeEngine(f.engine);
  if (!engine.ok()) return fail(engine.status());
  auto span = std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
  auto module = (*engine)->Compile(span);
  if (!module.ok()) return fail(module.status());

  auto started = wasm::Clock::now();
  auto deadline = started + *timeout;
  std::string why_cpu;  // why "auto" chose the CPU device; goes into the report
  auto dev = device::OpenDevice(f.device, &why_cpu);
  if (!dev.ok()) return fail(dev.status());
  auto context = (*dev)->CreateContext();
  if (!context.ok()) return fail(context.status());
  host::WasiCudaOptions cuda_options;
  cuda_options.gpu_enabled = !f.no_gpu;
  cuda_options.max_inflight_launches = f.max_inflight;
  cuda_options.deadline = deadline;
  auto cuda = std::make_unique<host::WasiCudaContext>(*dev, std::make_shared<host::ModuleCache>(*context), cuda_options);

  host::GuestIoOptions io;
  io.input = std::move(input);
  io.args.push_back(f.wasm);
  io.args.insert(io.args.end(), f.args.begin(), f.args.end());
  host::HostEnv env(std::move(io), std::move(cuda), deadline);
  wasm::InstanceLimits limits;
  limits.max_memory_pages = f.max_memory_pages;
  auto instance = wasm::Instance::Create(*module, &env, limits, deadline);
  if (!instance.ok()) return fail(instance.status());
  env.io.Attach(instance->get());

  std::string entry = f.entry;
  if (entry.empty()) entry = (*module)->FindExport("_start") != nullptr ? "_start" : "run";
  auto outcome = (*instance)->Call(entry, deadline);
  // The final snapshot is taken before teardown (which releases every buffer and module).
  host::InstanceMetricsSnapshot metrics = env.metrics();
  double wall_ms = std::chrono::duration<double, std::milli>(wasm::Clock::now() - started).count();
  std::fwrite(env.io.stdout_text().data(), 1, env.io.stdout_text().size(), stdout);
  std::fwrite(env.io.output().data(), 1, env.io.output().size(), stdout);
  std::fwrite(env.io.stderr_text().data(), 1, env.io.stderr_text().size(), stderr);
  std::fflush(stdout);
  if (!outcome.ok()) return fail(outcome.status());
  int code;
  std::string trap;
  if (!outcome->ok()) {
    trap = std::string(wasm::TrapKindName(outcome->trap));
    std::fprintf(stderr, "trap: %s\n", trap.c_str());
    code = outcome->trap == wasm::TrapKind::kDeadlineExceeded ? kExitDeadline : kExitTrap;
  } else {
    code = outcome->exit_code & 0xff;
  }
  if (f.report == "json") {
    nlohmann::json r = {{"exit_status", code},
                        {"trap", trap.empty() ? nlohmann::json(nullptr) : nlohmann::json(trap)},
                        {"wall_time_ms", wall_ms},
                        {"device", (*dev)->info().name},
                        {"device_note", why_cpu.empty() ? nlohmann::json(nullptr) : nlohmann::json(why_cpu)},
                        {"metrics", metrics}};
    std::string text = r.dump() + "\n";
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
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a guest module once: compile (or reuse the cached build), instantiate, call its "
             "entry point, print its stdout and exit with its status. A trap prints 'trap: <kind>' "
             "and exits 134 (124 for a deadline); an invalid module exits 65.");
  cmd->add_option("wasm", flags->wasm, "The guest .wasm file")->required();
  cmd->add_option("--input,-i", flags->input, "File whose bytes are the guest's stdin and input ('-': stdin)");
  cmd->add_option("--timeout,-t", flags->timeout, "Deadline of the run (e.g. 500ms, 5s)")->capture_default_str();
  cmd->add_option("--entry,-e", flags->entry, "Export to call: () -> () or () -> i32 (default: _start, else run)");
  cmd->add_option("--max-memory-pages", flags->max_memory_pages, "Cap on the guest's linear memory, in 64 KiB pages")
      ->capture_default_str();
  cmd->add_option("args", flags->args, "Arguments passed to the guest (after --)");
  cmd->add_option("--device,-d", flags->device, "Device for wasi_cuda: auto (CUDA if usable, else CPU), cpu, cuda:N")
      ->capture_default_str();
  cmd->add_option("--report", flags->report, "Print a report of the run: json (exit status, wall time, device and why auto chose it, final metrics)")
      ->check(CLI::IsMember({"json"}));
  cmd->add_option("--report-file", flags->report_file, "Write the report here instead of stderr");
  cmd->add_option("--max-inflight", flags->max_inflight, "Launches the guest may have in flight before back-pressure")
      ->capture_default_str();
  cmd->add_flag("--no-gpu", flags->no_gpu, "Deny GPU access: every wasi_cuda call returns WCU_ERR_NOT_PERMITTED");
  AddEngineFlags(cmd, &flags->engine);
  cmd->callback([flags] {
    if (!flags->report_file.empty() && flags->report.empty()) flags->report = "json";
    SetExitCode(Run(*flags));
  });
}

}  // namespace gpuwasm::cli
