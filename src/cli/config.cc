// `gpuwasm config check FILE`: validate a configuration before rolling it out (to every node of
// a cluster, say) and print what it sets, without starting anything or connecting anywhere.
#include "runtime/config.h"

#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "cli/output.h"
#include "store/local_store.h"
#include "store/postgres_store.h"

namespace gpuwasm::cli {
namespace {

int Check(const std::string& path) {
  Result<runtime::RuntimeConfig> c = runtime::LoadConfig(path);
  if (!c.ok()) {
    return Fail("config check", c.status().ToString(), ExitForConfigError(c.status()));
  }
  const std::string store_dir = store::StoreDir(c->store_dir).string();
  // `serve` takes the database from --database or $GPUWASM_DATABASE_URL before the file.
  std::string database = c->database, from = "the file";
  if (const char* env = std::getenv("GPUWASM_DATABASE_URL"); env != nullptr && *env != '\0') {
    database = env;
    from = "$GPUWASM_DATABASE_URL";
  }
  if (JsonOutput()) {
    nlohmann::json tenants = nlohmann::json::array();
    for (const runtime::TenantConfig& t : c->tenants) {
      tenants.push_back({{"name", t.name},
                         {"tokens", t.token_sha256.size()},
                         {"gpu", t.gpu},
                         {"device_bytes", t.device_bytes},
                         {"concurrent_invocations", t.concurrent_invocations},
                         {"max_deadline_ms", t.max_deadline.count()},
                         {"rate_limit", t.rate_limit}});
    }
    PrintJson(
        {{"file", path},
         {"valid", true},
         {"store", store_dir},
         {"database", database.empty() ? nlohmann::json(nullptr) : nlohmann::json(store::RedactConninfo(database))},
         {"device", c->device},
         {"listen", c->server.listen},
         {"shutdown_grace_ms", c->shutdown_grace.count()},
         {"metrics_token", !c->server.metrics_token_sha256.empty()},
         {"admin_token", !c->server.admin_token_sha256.empty()},
         {"isolation",
          c->isolation ? nlohmann::json(std::string(runtime::IsolationName(*c->isolation))) : nlohmann::json(nullptr)},
         {"tenants", tenants},
         {"warnings", runtime::ConfigWarnings(*c)}});
    return 0;
  }
  std::printf("%s: valid\n", path.c_str());
  std::printf("store: %s%s\n", store_dir.c_str(), c->store_dir.empty() ? " (default)" : "");
  if (database.empty()) {
    std::printf(
        "metadata: SQLite in the store directory (one node; serve --database or $GPUWASM_DATABASE_URL "
        "would choose PostgreSQL)\n");
  } else {
    std::printf("metadata: PostgreSQL %s (from %s; shared by the nodes)\n", store::RedactConninfo(database).c_str(),
                from.c_str());
  }
  std::printf("device: %s\nlisten: %s\n", c->device.c_str(), c->server.listen.c_str());
  std::printf("shutdown grace: %lld ms\n", static_cast<long long>(c->shutdown_grace.count()));
  std::printf("metrics token: %s\nadmin token: %s\n", c->server.metrics_token_sha256.empty() ? "none" : "set",
              c->server.admin_token_sha256.empty() ? "none (no cross-tenant view)" : "set");
  std::printf("isolation: %s\n", c->isolation ? std::string(runtime::IsolationName(*c->isolation)).c_str()
                                              : "the command's default (serve: process, run: none)");
  std::printf("tenants: %zu\n", c->tenants.size());
  for (const runtime::TenantConfig& t : c->tenants) {
    std::printf("  %s: %zu token(s), gpu %s, device_bytes %llu, concurrent_invocations %u, max_deadline %lld ms",
                t.name.c_str(), t.token_sha256.size(), t.gpu ? "on" : "off",
                static_cast<unsigned long long>(t.device_bytes), t.concurrent_invocations,
                static_cast<long long>(t.max_deadline.count()));
    if (t.rate_limit > 0) std::printf(", rate_limit %g/s", t.rate_limit);
    std::printf("\n");
  }
  if (c->tenants.empty()) std::printf("  (none: one open tenant named \"default\")\n");
  for (const std::string& w : runtime::ConfigWarnings(*c)) std::printf("warning: %s\n", w.c_str());
  return 0;
}

}  // namespace

void RegisterConfig(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("config", "Work with configuration files (docs/operator-guide.md)");
  cmd->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  CLI::App* check = cmd->add_subcommand(
      "check", "Validate a configuration file and print what it sets (passwords hidden); exit 65 when it is invalid");
  check->add_option("file", *path, "The TOML file")->required();
  check->callback([path] { SetExitCode(Check(*path)); });
}

}  // namespace gpuwasm::cli
