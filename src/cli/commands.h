// Registration of the gpuwasm subcommands. Each Register* adds one subcommand to the app; the
// subcommand's callback runs it and stores the process exit code, read back by ExitCode().
#pragma once

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace gpuwasm::cli {

void RegisterVersion(CLI::App& app);
void RegisterDoctor(CLI::App& app);
void RegisterRun(CLI::App& app);
void RegisterCompile(CLI::App& app);
void RegisterGpm(CLI::App& app);
void RegisterToken(CLI::App& app);
void RegisterConfig(CLI::App& app);
void RegisterServe(CLI::App& app);
void RegisterClient(CLI::App& app);
void RegisterNew(CLI::App& app);

// gpuwasm's own exit statuses (sysexits.h values; a guest's own status passes through otherwise).
inline constexpr int kExitUsage = 64;        // EX_USAGE: bad flags or configuration
inline constexpr int kExitBadModule = 65;    // EX_DATAERR: invalid or rejected module
inline constexpr int kExitNoInput = 66;      // EX_NOINPUT: a file could not be read
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: the server cannot be reached or used
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE: engine error

// A configuration file that could not be loaded: missing (66) or invalid (65).
inline int ExitForConfigError(const Status& s) {
  return s.code() == StatusCode::kNotFound ? kExitNoInput : kExitBadModule;
}

// Exit status chosen by the subcommand that ran (0 when none set one).
int ExitCode();
void SetExitCode(int code);

}  // namespace gpuwasm::cli
