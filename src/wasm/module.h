// A compiled guest module: the shared object wasm2c + cc produced from one .wasm, loaded.
// Immutable once loaded; shared (shared_ptr) by every Instance made from it. Thread-safe.
#pragma once

#include <wasm-rt.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/shared_library.h"
#include "wasm/backtrace.h"

namespace gpuwasm::wasm {

enum class ExportKind : uint8_t {
  kVoid,         // () -> ()
  kI32,          // () -> i32
  kUnsupported,  // any other signature: not callable as an entry point
};

struct ExportInfo {
  std::string name;
  ExportKind kind;
};

// "its entry points: a, b, c" (the exports callable as one, sorted, at most 20 named), or "it
// exports no entry point": what an error about a missing entry point adds.
std::string DescribeEntryPoints(const std::vector<ExportInfo>& exports);

class Module {
 public:
  ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& key() const { return key_; }        // content address (cache key)
  const std::string& sha256() const { return sha256_; }  // of the .wasm bytes alone
  const std::string& artifact_path() const { return path_; }
  bool from_cache() const { return from_cache_; }  // loaded without compiling
  const std::vector<ExportInfo>& exports() const { return exports_; }
  const ExportInfo* FindExport(std::string_view name) const;

  // Raw entry points of the glue appended to the generated code (used by Instance).
  struct Glue {
    size_t (*instance_size)();
    void (*instantiate)(void* instance, void* host);
    void (*free)(void* instance);
    wasm_rt_memory_t* (*memory)(void* instance);
    struct Export {
      const char* name;
      int kind;
      void (*fn)();
    };
    const Export* exports;
  };
  const Glue& glue() const { return glue_; }
  void (*ExportFunction(std::string_view name) const)();

  // The guest functions among native return addresses recorded at a trap in this module's code,
  // innermost first, named from its name section (backtrace.h). Reads the artifact's files.
  std::vector<TrapFrame> Backtrace(std::span<const uintptr_t> addresses) const;

 private:
  friend class Engine;
  Module() = default;
  SharedLibrary library_;  // what glue_ and the export functions point into
  std::string key_, sha256_, path_;
  std::string names_path_;   // <key>.names beside the .so
  uintptr_t load_base_ = 0;  // where dlopen mapped it (symbol values are offsets from here)
  bool from_cache_ = false;
  Glue glue_{};
  std::vector<ExportInfo> exports_;
};

}  // namespace gpuwasm::wasm
