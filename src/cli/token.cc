// `gpuwasm token new` and `gpuwasm token hash`: API tokens for tenants. The configuration stores
// only their sha256, so a leaked configuration file does not leak tokens.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <random>

#include "cli/commands.h"
#include "cli/output.h"
#include "runtime/config.h"

namespace gpuwasm::cli {
namespace {

// "gw_" + 43 URL-safe characters: 256 bits from the kernel's random source.
std::string NewToken() {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::random_device rd;
  std::string t = "gw_";
  uint32_t bits = 0;
  int have = 0;
  while (t.size() < 3 + 43) {
    if (have < 6) {
      bits = rd();
      have = 32;
    }
    t.push_back(alphabet[bits & 63]);
    bits >>= 6;
    have -= 6;
  }
  return t;
}

}  // namespace

void RegisterToken(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("token", "Make API tokens for tenants (the configuration keeps only their hash)");
  cmd->require_subcommand(1);
  CLI::App* make = cmd->add_subcommand(
      "new", "Print a fresh random token, and the line that gives it to a tenant in the configuration");
  make->callback([] {
    std::string token = NewToken();
    if (JsonOutput()) {
      PrintJson({{"token", token}, {"hash", runtime::HashToken(token)}});
      return;
    }
    std::printf("token: %s\nconfiguration: tokens = [\"%s\"]\n", token.c_str(), runtime::HashToken(token).c_str());
  });
  auto token = std::make_shared<std::string>();
  CLI::App* hash = cmd->add_subcommand("hash", "Print the configuration form (sha256:<hex>) of an existing token");
  hash->add_option("token", *token, "The token ('-' or nothing: read it from stdin)");
  hash->callback([token] {
    std::string t = *token;
    if (t.empty() || t == "-") {
      std::getline(std::cin, t);
    }
    if (t.empty()) {
      SetExitCode(Fail("token hash", "empty token", kExitUsage));
      return;
    }
    if (JsonOutput()) {
      PrintJson({{"hash", runtime::HashToken(t)}});
    } else {
      std::printf("%s\n", runtime::HashToken(t).c_str());
    }
  });
}

}  // namespace gpuwasm::cli
