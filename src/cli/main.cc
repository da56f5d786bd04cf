// gpuwasm: the command-line front door. Each subcommand lives in its own file under src/cli/.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
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

  if (argc == 1) {  // nothing asked: what there is to ask
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  if (argv[1][0] != '-') {
    try {
      (void)app.get_subcommand(argv[1]);
    } catch (const CLI::OptionNotFound&) {
      std::fprintf(stderr, "gpuwasm: unknown command '%s' (gpuwasm --help lists them)\n", argv[1]);
      return gpuwasm::cli::kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error (a missing or unknown flag, a bad value) the
    // same code, EX_USAGE, whatever CLI11 numbers it.
    int code = app.exit(e);
    return code == 0 ? 0 : gpuwasm::cli::kExitUsage;
  } catch (const nlohmann::json::exception& e) {
    // The client commands read the server's JSON answers: whatever answered (another service on
    // that address, a proxy's error page) gets a clear error, not an abort.
    std::fprintf(stderr,
                 "gpuwasm: the server's answer is not what this client expects (%s): is --server a gpuwasm server?\n",
                 e.what());
    return gpuwasm::cli::kExitUnavailable;  // as for an unreachable server
  }
  return gpuwasm::cli::ExitCode();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    // A bug (or memory exhausted): say so and exit with EX_SOFTWARE rather than abort.
    std::fprintf(stderr, "gpuwasm: internal error: %s\n", e.what());
    return gpuwasm::cli::kExitSoftware;
  }
}
