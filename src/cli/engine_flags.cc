#include "cli/engine_flags.h"

#include <fstream>
#include <iterator>

#include "common/duration.h"
#include "host/guest_io.h"

namespace gpuwasm::cli {

void AddEngineFlags(CLI::App* cmd, EngineFlags* flags) {
  cmd->add_option("--cache-dir", flags->cache_dir,
                  "Where compiled modules are cached (default: $GPUWASM_CACHE_DIR, else "
                  "$XDG_CACHE_HOME/gpuwasm/modules or ~/.cache/gpuwasm/modules)");
  cmd->add_option("--cc", flags->cc, "C compiler used for wasm2c output")->capture_default_str();
  cmd->add_option("--compile-timeout", flags->compile_timeout, "Wall-clock limit of one compile")
      ->capture_default_str();
  cmd->add_option("--quick-tier-min", flags->quick_tier_min,
                  "A module whose C is at least this large deploys with the quick compiler first and is "
                  "optimised in the background (0: always compile optimised)")
      ->capture_default_str();
  cmd->add_option("--quick-cc", flags->quick_cc, "The quick tier's C compiler (Debian's tcc)")->capture_default_str();
}

Result<wasm::EngineOptions> EngineOptionsFrom(const EngineFlags& flags) {
  wasm::EngineOptions o;
  o.cache_dir = flags.cache_dir;  // empty: the runtime or engine default
  o.cc = flags.cc;
  GPUWASM_ASSIGN_OR_RETURN(o.compile_limits.wall, ParseDuration(flags.compile_timeout));
  Result<uint64_t> quick_min = ParseSize(flags.quick_tier_min);
  if (!quick_min.ok()) return Status::InvalidArgument("--quick-tier-min: " + quick_min.status().message());
  o.quick_tier_min_bytes = *quick_min;
  o.quick_cc = flags.quick_cc;
  o.imports = host::GuestImports();
  // This very program translates modules in a child process (`gpuwasm __translate`).
  o.translator = "/proc/self/exe";
  return o;
}

Result<std::unique_ptr<wasm::Engine>> MakeEngine(const EngineFlags& flags) {
  GPUWASM_ASSIGN_OR_RETURN(wasm::EngineOptions o, EngineOptionsFrom(flags));
  return std::make_unique<wasm::Engine>(std::move(o));
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::IoError("cannot read " + path);
  return data;
}

}  // namespace gpuwasm::cli
