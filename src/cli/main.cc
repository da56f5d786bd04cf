// gpuwasm: the command-line front door. Each subcommand lives in its own file under src/cli/.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/version.h"
#include "runtime/worker_main.h"
#include "wasm/translate.h"

namespace {

int Main(int argc, char** argv) {
  // Internal entry points of the children gpuwasm starts from itself, not listed in --help.
  if (argc >= 2 && std::strcmp(argv[1], "__translate") == 0) return gpuwasm::wasm::TranslatorMain(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "__worker") == 0) return gpuwasm::runtime::WorkerMain(argc, argv);
  CLI::App app{
      "gpuwasm: a multi-tenant serverless WebAssembly runtime whose guests launch GPU kernels.\n"
      "Guests are wasm32 modules that reach the GPU (or the CPU device) through wasi_cuda.",
      "gpuwasm"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(gpuwasm::cli::kVersionLine));
  // --json before or after the command's name (a subcommand's unknown options fall through to
  // here). Read from argv first as well: a usage error is reported before parsing ends.
  app.add_flag("--json", gpuwasm::cli::JsonFlag(),
               "Print one JSON document on stdout instead of text: the result, or {\"error\": ...} when the "
               "command fails");
  app.fallthrough();
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) gpuwasm::cli::JsonFlag() = true;
  }

  gpuwasm::cli::RegisterVersion(app);
  gpuwasm::cli::RegisterRun(app);
  gpuwasm::cli::RegisterCompile(app);
  gpuwasm::cli::RegisterGpm(app);
  gpuwasm::cli::RegisterServe(app);
  gpuwasm::cli::RegisterClient(app);
  gpuwasm::cli::RegisterToken(app);
  gpuwasm::cli::RegisterConfig(app);
  gpuwasm::cli::RegisterDoctor(app);
  gpuwasm::cli::RegisterNew(app);
  // Each command's --help names the flag it takes from here.
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    sub->footer(
        "--json (before or after the command): one JSON document on stdout, the result or {\"error\": ...} "
        "(docs/operator-guide.md, \"Exit codes\")");
  }

  if (argc == 1) {  // nothing asked: what there is to ask
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  // The command is the first word that is not a flag (--json may come before it).
  int first = 1;
  while (first < argc && std::strcmp(argv[first], "--json") == 0) ++first;
  if (first < argc && argv[first][0] != '-') {
    try {
      (void)app.get_subcommand(argv[first]);
    } catch (const CLI::OptionNotFound&) {
      return gpuwasm::cli::Fail("", std::string("unknown command '") + argv[first] + "' (gpuwasm --help lists them)",
                                gpuwasm::cli::kExitUsage);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error (a missing or unknown flag, a bad value) the
    // same code, EX_USAGE, whatever CLI11 numbers it.
    if (e.get_exit_code() != 0 && gpuwasm::cli::JsonOutput()) {
      const CLI::App* cmd = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front();
      return gpuwasm::cli::Fail(cmd != nullptr ? cmd->get_name() : "", e.what(), gpuwasm::cli::kExitUsage);
    }
    int code = app.exit(e);
    return code == 0 ? 0 : gpuwasm::cli::kExitUsage;
  } catch (const nlohmann::json::exception& e) {
    // The client commands read the server's JSON answers: whatever answered (another service on
    // that address, a proxy's error page) gets a clear error, not an abort.
    return gpuwasm::cli::Fail("",  // as for an unreachable server
                              std::string("the server's answer is not what this client expects (") + e.what() +
                                  "): is --server a gpuwasm server?",
                              gpuwasm::cli::kExitUnavailable);
  }
  return gpuwasm::cli::ExitCode();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    // A bug (or memory exhausted): say so and exit with EX_SOFTWARE rather than abort.
    return gpuwasm::cli::Fail("", std::string("internal error: ") + e.what(), gpuwasm::cli::kExitSoftware);
  }
}
