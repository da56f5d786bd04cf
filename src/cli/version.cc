#include "cli/version.h"

#include <cstdio>

#include "cli/commands.h"
#include "cli/output.h"

namespace gpuwasm::cli {
namespace {
int g_exit_code = 0;
}  // namespace

int ExitCode() { return g_exit_code; }
void SetExitCode(int code) { g_exit_code = code; }

void RegisterVersion(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("version", "Print the version and how this binary was built");
  cmd->callback([] {
    if (JsonOutput()) {
      PrintJson({{"version", kVersionLine}});
    } else {
      std::printf("%s\n", kVersionLine);
    }
  });
}

}  // namespace gpuwasm::cli
