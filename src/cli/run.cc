// `gpuwasm run app.wasm`: compile (or hit the cache), instantiate, run the entry point, print the
// guest's stdout (and output), exit with the guest's status.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "common/duration.h"
#include "host/host_env.h"
#include "wasm/instance.h"

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

  host::GuestIoOptions io;
  io.input = std::move(input);
  io.args.push_back(f.wasm);
  io.args.insert(io.args.end(), f.args.begin(), f.args.end());
  host::HostEnv env(std::move(io));
  auto deadline = wasm::Clock::now() + *timeout;
  wasm::InstanceLimits limits;
  limits.max_memory_pages = f.max_memory_pages;
  auto instance = wasm::Instance::Create(*module, &env, limits, deadline);
  if (!instance.ok()) return fail(instance.status());
  env.io.Attach(instance->get());

  std::string entry = f.entry;
  if (entry.empty()) entry = (*module)->FindExport("_start") != nullptr ? "_start" : "run";
  auto outcome = (*instance)->Call(entry, deadline);
  std::fwrite(env.io.stdout_text().data(), 1, env.io.stdout_text().size(), stdout);
  std::fwrite(env.io.output().data(), 1, env.io.output().size(), stdout);
  std::fwrite(env.io.stderr_text().data(), 1, env.io.stderr_text().size(), stderr);
  std::fflush(stdout);
  if (!outcome.ok()) return fail(outcome.status());
  if (!outcome->ok()) {
    std::fprintf(stderr, "trap: %.*s\n", static_cast<int>(wasm::TrapKindName(outcome->trap).size()),
                 wasm::TrapKindName(outcome->trap).data());
    return outcome->trap == wasm::TrapKind::kDeadlineExceeded ? kExitDeadline : kExitTrap;
  }
  return outcome->exit_code & 0xff;
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
  AddEngineFlags(cmd, &flags->engine);
  cmd->callback([flags] { SetExitCode(Run(*flags)); });
}

}  // namespace gpuwasm::cli
