// Machine-readable output. `--json`, accepted by every command before or after its name, makes
// the command print one JSON document on stdout instead of text: its result, or, when it fails,
// {"error": {"command", "message", "exit_code"}}. That document, not the exit status, tells
// gpuwasm's own failures from a guest's exit status (run and invoke pass a guest's status through,
// and a guest may exit with any of gpuwasm's codes; docs/operator-guide.md, "Exit codes").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gpuwasm::cli {

// Whether --json was given (read from argv before parsing, so usage errors are JSON too).
bool JsonOutput();
// The flag's variable, for CLI11.
bool& JsonFlag();

// Reports that `command` failed: "gpuwasm COMMAND: MESSAGE" on stderr, or the error document on
// stdout with --json. Returns `code`, the exit status.
int Fail(std::string_view command, const std::string& message, int code);

// `j` on stdout, one line (invalid UTF-8 in strings replaced, never thrown on).
void PrintJson(const nlohmann::json& j);

}  // namespace gpuwasm::cli
