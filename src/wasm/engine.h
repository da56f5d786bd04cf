// The wasm engine: turns guest .wasm files into loaded native modules (wasm2c ahead-of-time
// compilation), with a content-addressed on-disk cache.
//
// Compile() validates the module with libwabt, rejects what gpuwasm cannot run safely (SIMD,
// threads, memory64, tail calls, exceptions, imports outside the host ABI, unsafe export names),
// translates it with wasm2c, inserts an interrupt check at every function entry and loop
// header, and compiles the C with the system compiler in a child process under CPU, memory and
// wall-clock limits. The shared object is stored as <cache>/<key>.so where key = sha256(wasm,
// engine version, ABI); a later Compile of the same bytes loads it without compiling.
//
// Thread-safety: every method may be called from any thread; concurrent Compile() calls of the
// same module compile it once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/content_cache.h"
#include "common/status.h"
#include "common/subprocess.h"
#include "wasm/module.h"

namespace gpuwasm::wasm {

// One function a guest may import: module, name and wasm signature, written with one letter
// per value type: i = i32, I = i64, f = f32, F = f64 (e.g. params "iiii", results "i").
struct ImportSpec {
  std::string module;
  std::string name;
  std::string params;
  std::string results;
};

struct EngineOptions {
  std::filesystem::path cache_dir;  // default: DefaultCacheDir()
  std::string cc = "cc";            // the C compiler (searched on PATH)
  // Functions called once stay functions: each wasm call has its own frame for trap backtraces
  // (backtrace.h); bench_engine measures what it costs.
  std::vector<std::string> cc_flags = {"-O1", "-fno-inline-functions-called-once"};
  ProcessLimits compile_limits;           // for the compiler process
  std::vector<ImportSpec> imports;        // what the host provides; anything else is refused
  std::string abi_tag = "gpuwasm-abi-1";  // part of the cache key
  // Insert interrupt checks (deadlines). Off only to measure their cost: without them a guest
  // loop cannot be stopped.
  bool interrupt_checks = true;
  // Large modules (ADR 0019). A module whose C is at least quick_tier_min_bytes is compiled
  // first by quick_cc (a fast compiler of slow code: Debian's tcc compiles a 1.4 MB module's
  // 15 MB of C in a quarter of a second), so that it deploys in seconds; the optimising compile
  // with cc then runs in the background, and Optimized() says when its artifact is ready. 0 turns
  // the quick tier off; so does a quick compiler that fails (the module is then compiled by cc).
  size_t quick_tier_min_bytes = 4u << 20;
  std::string quick_cc = "tcc";
  std::vector<std::string> quick_cc_flags = {};
  // Off: quick artifacts are not followed by an optimising compile (a one-shot `gpuwasm run`,
  // which would end before it does).
  bool optimize_in_background = true;
  // C compiled by one compiler process: a larger translation is split (split.h) into at most
  // max_parts parts, compiled in parallel in the compile slots free at the time.
  size_t part_bytes = 2u << 20;
  size_t max_parts = 8;
  // A gpuwasm executable that validates and translates modules in a child process
  // (`gpuwasm __translate`) under compile_limits, like the C compiler: a module that makes libwabt
  // or wasm2c use memory or time without bound costs that child, not this process. "" does it in
  // this process (tools and tests of the engine itself).
  std::string translator;
};

// What compiling a module produced, without loading it: the artifact's content address and what
// it exports. A supervisor builds artifacts; the worker process that runs them loads them.
struct Artifact {
  std::string key;     // <cache_dir>/<key>.so
  std::string sha256;  // of the .wasm bytes
  std::vector<ExportInfo> exports;
  bool from_cache = false;  // found already compiled
  // Compiled by the quick tier (key "<sha-key>-quick"): correct, slower code, no wasm backtraces
  // through its frames; Engine::Optimized() gives the optimised artifact once it is built.
  bool quick = false;
  const ExportInfo* FindExport(std::string_view name) const;
};

// $GPUWASM_CACHE_DIR, else $XDG_CACHE_HOME/gpuwasm/modules, else ~/.cache/gpuwasm/modules.
std::filesystem::path DefaultCacheDir();

// Version of the translation pipeline, part of every cache key: bump it with any change to what
// Translate() emits (prelude, interrupt checks, glue) or to the fixed compiler flags, so stale
// artifacts are never loaded.
inline constexpr const char* kEngineVersion = "gpuwasm-engine-5/wasm2c-1.0.32";

class Engine {
 public:
  explicit Engine(EngineOptions options);
  // Ends the background compile (its compiler children are killed) and waits for its thread.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Compiles (or loads from the cache) and returns the loaded module.
  Result<std::shared_ptr<const Module>> Compile(std::span<const uint8_t> wasm);

  // Compiles the module unless its artifact is in the cache; never loads it into this process.
  Result<Artifact> Build(std::span<const uint8_t> wasm);
  // Loads an artifact of this engine's cache (once per process while someone holds it). NotFound
  // when it is not there (another node's cache, or removed).
  Result<std::shared_ptr<const Module>> Load(const Artifact& artifact);

  // The optimised artifact of a quick one, once the background compile has stored it (nullopt
  // before, and for an artifact that is not quick). Cheap: called at every invocation of a
  // quick-tier function.
  std::optional<Artifact> Optimized(const Artifact& quick);
  // Waits until no background compile is queued or running (`gpuwasm compile`, tests).
  void WaitForBackgroundCompiles();

  // Validation only: the checks Compile applies before translating.
  Status Validate(std::span<const uint8_t> wasm) const;

  const EngineOptions& options() const { return options_; }

  // Lifetime counts: modules this engine translated and ran the C compiler on (successfully),
  // and modules it loaded from an artifact already in the cache directory (maybe written by
  // another process or node).
  uint64_t compiles() const { return compiles_.load(std::memory_order_relaxed); }
  uint64_t cache_loads() const { return cache_loads_.load(std::memory_order_relaxed); }
  // Of compiles(): those made by the quick tier, and optimising compiles that replaced one.
  uint64_t quick_compiles() const { return quick_compiles_.load(std::memory_order_relaxed); }
  uint64_t background_compiles() const { return background_compiles_.load(std::memory_order_relaxed); }

  // Ends every compile of this engine now (its compiler children are killed, one waiting for a
  // compile slot gives up): each fails with Cancelled. For shutdown; later compiles fail too.
  void CancelCompiles();

  // Removes work directories of compiles that a crash cut short (older than any compile may
  // run); returns how many. Done once at construction.
  size_t RemoveStaleWorkDirs();

 private:
  std::string KeyOf(std::string_view bytes) const;
  // Translates and compiles: with the quick tier when `allow_quick` and the module is large
  // enough (the optimising compile is then queued), else optimised.
  Result<Artifact> CompileUncached(std::span<const uint8_t> wasm, const std::string& key, const std::string& sha,
                                   bool allow_quick);
  // Runs the C compiler over `sources` (parts in parallel, then one link) into `out`.
  Status CompileC(const std::filesystem::path& work, const std::vector<std::filesystem::path>& sources,
                  const std::string& cc, const std::vector<std::string>& flags, const std::filesystem::path& out,
                  const std::atomic<bool>* cancel);
  Status Store(const std::filesystem::path& work, const std::string& key, const struct Translation& t,
               const std::filesystem::path& so);
  void QueueOptimize(std::span<const uint8_t> wasm, const std::string& key, const std::string& sha);
  void BackgroundLoop();
  Result<struct Translation> TranslateInChild(std::span<const uint8_t> wasm, const std::filesystem::path& work);
  Result<std::shared_ptr<const Module>> LoadSo(const std::filesystem::path& so, const std::string& key,
                                               const std::string& sha, bool from_cache);

  Result<std::shared_ptr<const Artifact>> BuildOnce(std::span<const uint8_t> wasm, const std::string& key);

  EngineOptions options_;
  ContentCache<const Module> loaded_{ContentCache<const Module>::Keep::kWhileHeld};
  // Artifacts known in this process, by key (a miss looks in the cache directory first).
  ContentCache<const Artifact> built_{ContentCache<const Artifact>::Keep::kRecent, 4096};
  std::atomic<uint64_t> compiles_{0}, cache_loads_{0}, quick_compiles_{0}, background_compiles_{0};
  std::atomic<bool> cancel_{false};

  // The background optimising compiles, one at a time, oldest first.
  struct Optimize {
    std::string wasm, key, sha;
  };
  std::mutex background_mu_;  // everything below
  std::condition_variable background_cv_;
  std::deque<Optimize> queue_;
  std::set<std::string> queued_;               // keys queued or compiling
  std::map<std::string, Artifact> optimized_;  // sha-key -> its optimised artifact, once built
  bool background_busy_ = false;
  std::atomic<bool> background_stop_{false};
  std::thread background_;
};

}  // namespace gpuwasm::wasm
