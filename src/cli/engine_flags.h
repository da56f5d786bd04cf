// Flags shared by the commands that compile guests (run, compile).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "wasm/engine.h"

namespace gpuwasm::cli {

struct EngineFlags {
  std::string cache_dir;  // empty: wasm::DefaultCacheDir()
  std::string cc = "cc";
  std::string compile_timeout = "120s";
  std::string quick_tier_min = "4MiB";  // C source size from which the quick tier compiles first; 0: never
  std::string quick_cc = "tcc";
};

void AddEngineFlags(CLI::App* cmd, EngineFlags* flags);
Result<wasm::EngineOptions> EngineOptionsFrom(const EngineFlags& flags);
Result<std::unique_ptr<wasm::Engine>> MakeEngine(const EngineFlags& flags);
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace gpuwasm::cli
