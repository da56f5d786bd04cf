#include "cli/output.h"

#include <cstdio>

namespace gpuwasm::cli {
namespace {
bool g_json = false;
}  // namespace

bool JsonOutput() { return g_json; }
bool& JsonFlag() { return g_json; }

void PrintJson(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

int Fail(std::string_view command, const std::string& message, int code) {
  if (g_json) {
    PrintJson({{"error",
                {{"command", command.empty() ? "gpuwasm" : std::string(command)},
                 {"message", message},
                 {"exit_code", code}}}});
  } else if (command.empty()) {
    std::fprintf(stderr, "gpuwasm: %s\n", message.c_str());
  } else {
    std::fprintf(stderr, "gpuwasm %.*s: %s\n", static_cast<int>(command.size()), command.data(), message.c_str());
  }
  return code;
}

}  // namespace gpuwasm::cli
