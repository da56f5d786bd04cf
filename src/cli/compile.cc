// `gpuwasm compile app.wasm`: validate, translate and compile a guest into the module cache.
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/output.h"
#include "runtime/config.h"
#include "store/local_store.h"

namespace gpuwasm::cli {
namespace {

struct CompileFlags {
  EngineFlags engine;
  std::string wasm;
  bool check_only = false;
  std::string config;  // a server's configuration: compile into its store's artifact cache
  std::string store;   // ... or this store directory's
};

int Compile(const CompileFlags& f) {
  Result<std::string> bytes = ReadWholeFile(f.wasm);
  if (!bytes.ok()) return Fail("compile", bytes.status().ToString(), kExitNoInput);
  // Ahead of time means optimised: the quick tier is for deploys that must answer soon.
  EngineFlags engine_flags = f.engine;
  engine_flags.quick_tier_min = "0";
  if (engine_flags.cache_dir.empty() && (!f.store.empty() || !f.config.empty())) {
    // The cache `serve` would use with the same configuration and --store: a deploy of these bytes
    // there then finds optimised code at once (the cache key is the bytes and the engine's flags).
    std::filesystem::path store_dir = f.store;
    if (store_dir.empty()) {
      Result<runtime::RuntimeConfig> c = runtime::LoadConfig(f.config);
      if (!c.ok()) {
        return Fail("compile", c.status().ToString(), ExitForConfigError(c.status()));
      }
      store_dir = c->store_dir;
    }
    engine_flags.cache_dir = store::ArtifactsDir(store_dir).string();
  }
  auto engine = MakeEngine(engine_flags);
  if (!engine.ok()) return Fail("compile", engine.status().ToString(), kExitUsage);
  auto span = std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
  if (f.check_only) {
    Status s = (*engine)->Validate(span);
    if (!s.ok()) return Fail("compile", s.ToString(), kExitBadModule);
    if (JsonOutput()) {
      PrintJson({{"file", f.wasm}, {"valid", true}});
    } else {
      std::printf("%s: valid\n", f.wasm.c_str());
    }
    return 0;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto module = (*engine)->Compile(span);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!module.ok()) {
    const StatusCode code = module.status().code();
    return Fail(
        "compile", module.status().ToString(),
        code == StatusCode::kInvalidArgument || code == StatusCode::kUnsupported ? kExitBadModule : kExitSoftware);
  }
  if (JsonOutput()) {
    nlohmann::json exports = nlohmann::json::array();
    for (const auto& e : (*module)->exports()) exports.push_back(e.name);
    PrintJson({{"file", f.wasm},
               {"cache_hit", (*module)->from_cache()},
               {"ms", ms},
               {"sha256", (*module)->sha256()},
               {"artifact", (*module)->artifact_path()},
               {"exports", exports}});
    return 0;
  }
  std::printf("%s: %s in %.1f ms\n", f.wasm.c_str(), (*module)->from_cache() ? "cache hit" : "compiled", ms);
  std::printf("  sha256   %s\n  artifact %s\n  exports ", (*module)->sha256().c_str(),
              (*module)->artifact_path().c_str());
  for (const auto& e : (*module)->exports()) std::printf(" %s", e.name.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace

void RegisterCompile(CLI::App& app) {
  auto flags = std::make_shared<CompileFlags>();
  CLI::App* cmd = app.add_subcommand("compile",
                                     "Validate a guest module and compile it ahead of time into the module cache "
                                     "(a second compile of the same bytes is a cache hit)");
  cmd->add_option("wasm", flags->wasm, "The guest .wasm file")->required();
  cmd->add_flag("--check", flags->check_only, "Only validate (features, imports, exports); compile nothing");
  cmd->add_option("--config,-c", flags->config,
                  "Compile into the artifact cache of the server this configuration describes (its store's "
                  "artifacts/ directory): a deploy of the module there is then ready at once, with optimised code");
  cmd->add_option("--store", flags->store, "The same for the server started with this --store directory");
  AddEngineFlags(cmd, &flags->engine);
  cmd->callback([flags] { SetExitCode(Compile(*flags)); });
}

}  // namespace gpuwasm::cli
