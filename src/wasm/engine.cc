#include "wasm/engine.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>

#include "common/compile_slots.h"
#include "common/names.h"
#include "common/sha256.h"
#include "common/unique_name.h"
#include "wasm/split.h"
#include "wasm/translate.h"
#include "wasm/wasm_rt.h"

namespace gpuwasm::wasm {
namespace fs = std::filesystem;

namespace {

std::mutex g_init_module_mu;  // wasm2c's init_module writes module-global state

// A quick-tier artifact's key: the module's key with this after it.
constexpr const char* kQuickSuffix = "-quick";

Status WriteFile(const fs::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return Status::IoError("cannot write " + path.string());
  return Status::Ok();
}

std::string Tail(const std::string& s, size_t n) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

}  // namespace

fs::path DefaultCacheDir() {
  if (const char* d = std::getenv("GPUWASM_CACHE_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return fs::path(x) / "gpuwasm" / "modules";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return fs::path(h) / ".cache" / "gpuwasm" / "modules";
  }
  return fs::temp_directory_path() / "gpuwasm-modules";
}

std::string DescribeEntryPoints(const std::vector<ExportInfo>& exports) {
  std::vector<std::string> names;
  for (const ExportInfo& e : exports) {
    // _initialize is a reactor's constructor call, which the engine makes itself: not an entry point.
    if (e.kind != ExportKind::kUnsupported && e.name != "_initialize") names.push_back(e.name);
  }
  if (names.empty()) return "it exports no entry point (a function () -> () or () -> i32)";
  return "its entry points: " + ListNames(std::move(names));
}

const ExportInfo* Module::FindExport(std::string_view name) const {
  for (const ExportInfo& e : exports_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::vector<TrapFrame> Module::Backtrace(std::span<const uintptr_t> addresses) const {
  return Symbolize(addresses, path_, load_base_, names_path_);
}

void (*Module::ExportFunction(std::string_view name) const)() {
  for (const Glue::Export* e = glue_.exports; e != nullptr && e->name != nullptr; ++e) {
    if (name == e->name) return e->fn;
  }
  return nullptr;
}

Engine::Engine(EngineOptions options) : options_(std::move(options)) {
  if (options_.cache_dir.empty()) options_.cache_dir = DefaultCacheDir();
  rt::EnsureInitialized();
  RemoveStaleWorkDirs();
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(background_mu_);
    background_stop_.store(true);
  }
  background_cv_.notify_all();
  if (background_.joinable()) background_.join();
}

void Engine::CancelCompiles() {
  cancel_.store(true);
  {
    std::lock_guard<std::mutex> lock(background_mu_);
    background_stop_.store(true);
  }
  background_cv_.notify_all();
}

size_t Engine::RemoveStaleWorkDirs() {
  // Work directories of compiles cut short by a crash. The cache directory may be shared by
  // several processes or nodes, so only those older than any compile may run are removed: the
  // compiler is killed at its wall-clock limit, and a quarter of an hour covers clock skew.
  auto limit = std::max<fs::file_time_type::duration>(std::chrono::minutes(15), 2 * options_.compile_limits.wall);
  auto now = fs::file_time_type::clock::now();
  size_t removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(options_.cache_dir, ec)) {
    if (e.path().filename().string().rfind("tmp-", 0) != 0) continue;
    std::error_code rm;
    auto written = fs::last_write_time(e.path(), rm);
    if (rm || now - written < limit) continue;
    if (fs::remove_all(e.path(), rm) > 0 && !rm) ++removed;
  }
  return removed;
}

Status Engine::Validate(std::span<const uint8_t> wasm) const { return wasm::Validate(wasm, options_.imports); }

const ExportInfo* Artifact::FindExport(std::string_view name) const {
  for (const ExportInfo& e : exports) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::string Engine::KeyOf(std::string_view bytes) const {
  std::string abi;
  for (const ImportSpec& s : options_.imports) abi += s.module + "." + s.name + ":" + s.params + ">" + s.results + ";";
  std::string compiler = options_.cc;
  for (const std::string& f : options_.cc_flags) compiler += " " + f;
  std::string_view parts[] = {bytes, kEngineVersion, options_.abi_tag,
                              abi,   compiler,       options_.interrupt_checks ? "checks" : "no-checks"};
  return Sha256Hex(parts);
}

namespace {

// <key>.exports: one "<kind> <name>" line per export (written before <key>.so, whose presence
// makes an artifact a cache hit).
std::string FormatExports(const std::vector<ExportInfo>& exports) {
  std::string s;
  for (const ExportInfo& e : exports) s += std::to_string(static_cast<int>(e.kind)) + " " + e.name + "\n";
  return s;
}

std::optional<std::vector<ExportInfo>> ParseExports(const std::string& text) {
  std::vector<ExportInfo> out;
  size_t p = 0;
  while (p < text.size()) {
    size_t nl = text.find('\n', p);
    if (nl == std::string::npos) return std::nullopt;
    std::string line = text.substr(p, nl - p);
    p = nl + 1;
    if (line.size() < 3 || line[1] != ' ' || line[0] < '0' || line[0] > '2') return std::nullopt;
    out.push_back({line.substr(2), static_cast<ExportKind>(line[0] - '0')});
  }
  return out;
}

std::optional<std::string> ReadSmallFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return data;
}

}  // namespace

Result<Artifact> Engine::Build(std::span<const uint8_t> wasm) {
  std::string key = KeyOf(std::string_view(reinterpret_cast<const char*>(wasm.data()), wasm.size()));
  // One compile per key at a time, in this process; other keys proceed in parallel.
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<const Artifact> a, built_.Get(key, [&] { return BuildOnce(wasm, key); }));
  return *a;
}

Result<std::shared_ptr<const Artifact>> Engine::BuildOnce(std::span<const uint8_t> wasm, const std::string& key) {
  std::string sha = Sha256Hex(std::string_view(reinterpret_cast<const char*>(wasm.data()), wasm.size()));
  fs::path so = options_.cache_dir / (key + ".so");
  std::error_code ec;
  if (fs::exists(so, ec)) {
    std::optional<std::string> text = ReadSmallFile(options_.cache_dir / (key + ".exports"));
    std::optional<std::vector<ExportInfo>> exports = text ? ParseExports(*text) : std::nullopt;
    if (exports) {
      cache_loads_.fetch_add(1, std::memory_order_relaxed);
      return std::make_shared<const Artifact>(Artifact{key, sha, std::move(*exports), /*from_cache=*/true});
    }
  }
  // A quick artifact stored before this process last stopped: used, and its optimising
  // compile queued again.
  if (options_.quick_tier_min_bytes > 0 && fs::exists(options_.cache_dir / (key + kQuickSuffix + ".so"), ec)) {
    std::optional<std::string> text = ReadSmallFile(options_.cache_dir / (key + kQuickSuffix + ".exports"));
    std::optional<std::vector<ExportInfo>> exports = text ? ParseExports(*text) : std::nullopt;
    if (exports) {
      cache_loads_.fetch_add(1, std::memory_order_relaxed);
      QueueOptimize(wasm, key, sha);
      Artifact a{key + kQuickSuffix, sha, std::move(*exports), /*from_cache=*/true};
      a.quick = true;
      return std::make_shared<const Artifact>(std::move(a));
    }
  }
  GPUWASM_ASSIGN_OR_RETURN(Artifact built, CompileUncached(wasm, key, sha, /*allow_quick=*/true));
  compiles_.fetch_add(1, std::memory_order_relaxed);
  return std::make_shared<const Artifact>(std::move(built));
}

std::optional<Artifact> Engine::Optimized(const Artifact& quick) {
  if (!quick.quick || !quick.key.ends_with(kQuickSuffix)) return std::nullopt;
  std::string key = quick.key.substr(0, quick.key.size() - std::string_view(kQuickSuffix).size());
  std::lock_guard<std::mutex> lock(background_mu_);
  auto it = optimized_.find(key);
  if (it == optimized_.end()) return std::nullopt;
  return it->second;
}

void Engine::WaitForBackgroundCompiles() {
  std::unique_lock<std::mutex> lock(background_mu_);
  background_cv_.wait(lock, [&] { return (queue_.empty() && !background_busy_) || background_stop_.load(); });
}

void Engine::QueueOptimize(std::span<const uint8_t> wasm, const std::string& key, const std::string& sha) {
  if (!options_.optimize_in_background) return;
  std::lock_guard<std::mutex> lock(background_mu_);
  if (background_stop_.load() || !queued_.insert(key).second) return;
  queue_.push_back({std::string(reinterpret_cast<const char*>(wasm.data()), wasm.size()), key, sha});
  if (!background_.joinable()) background_ = std::thread([this] { BackgroundLoop(); });
  background_cv_.notify_all();
}

void Engine::BackgroundLoop() {
  std::unique_lock<std::mutex> lock(background_mu_);
  for (;;) {
    background_cv_.wait(lock, [&] { return !queue_.empty() || background_stop_.load(); });
    if (background_stop_.load()) break;
    Optimize job = std::move(queue_.front());
    queue_.pop_front();
    background_busy_ = true;
    lock.unlock();
    std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(job.wasm.data()), job.wasm.size());
    Result<Artifact> built = CompileUncached(bytes, job.key, job.sha, /*allow_quick=*/false);
    if (built.ok()) {
      background_compiles_.fetch_add(1, std::memory_order_relaxed);
      built_.Erase(job.key);  // the next Build of these bytes finds the optimised artifact
    } else if (built.status().code() != StatusCode::kCancelled) {
      // The quick artifact keeps serving; the next start of this node tries again.
      std::fprintf(stderr, "gpuwasm: the optimising compile of module %s failed: %s\n", job.key.c_str(),
                   built.status().ToString().c_str());
    }
    lock.lock();
    if (built.ok()) optimized_[job.key] = std::move(*built);
    queued_.erase(job.key);
    background_busy_ = false;
    background_cv_.notify_all();
  }
  background_busy_ = false;
  background_cv_.notify_all();
}

Result<std::shared_ptr<const Module>> Engine::Load(const Artifact& a) {
  return loaded_.Get(a.key, [&]() -> Result<std::shared_ptr<const Module>> {
    fs::path so = options_.cache_dir / (a.key + ".so");
    std::error_code ec;
    if (!fs::exists(so, ec)) {
      return Status::NotFound("compiled module " + a.key + " is not in " + options_.cache_dir.string());
    }
    return LoadSo(so, a.key, a.sha256, a.from_cache);
  });
}

Result<std::shared_ptr<const Module>> Engine::Compile(std::span<const uint8_t> wasm) {
  std::string key = KeyOf(std::string_view(reinterpret_cast<const char*>(wasm.data()), wasm.size()));
  if (std::shared_ptr<const Module> m = loaded_.Find(key)) return m;
  GPUWASM_ASSIGN_OR_RETURN(Artifact a, Build(wasm));
  Result<std::shared_ptr<const Module>> m = Load(a);
  if (m.ok() || !a.from_cache) return m;
  // A damaged cache entry is rebuilt rather than failing the deploy.
  std::error_code ec;
  fs::remove(options_.cache_dir / (a.key + ".so"), ec);
  fs::remove(options_.cache_dir / (a.key + ".exports"), ec);
  fs::remove(options_.cache_dir / (a.key + ".names"), ec);
  built_.Erase(key);
  GPUWASM_ASSIGN_OR_RETURN(a, Build(wasm));
  return Load(a);
}

Result<Translation> Engine::TranslateInChild(std::span<const uint8_t> wasm, const fs::path& work) {
  GPUWASM_RETURN_IF_ERROR(
      WriteFile(work / "module.wasm", std::string_view(reinterpret_cast<const char*>(wasm.data()), wasm.size())));
  std::vector<std::string> argv = {options_.translator, "__translate", work.string(), EncodeImports(options_.imports),
                                   options_.interrupt_checks ? "1" : "0"};
  ProcessLimits l = options_.compile_limits;
  l.cancel = &cancel_;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  l.address_space_bytes = 0;  // a sanitized translator reserves terabytes of shadow memory at start
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  l.address_space_bytes = 0;
#endif
#endif
  GPUWASM_ASSIGN_OR_RETURN(ProcessResult pr, RunLimited(argv, l));
  if (pr.cancelled) return Status::Cancelled("the compile was cancelled (gpuwasm is shutting down)");
  if (pr.timed_out) {
    return Status::ResourceExhausted("translating the module exceeded the wall-clock limit of " +
                                     std::to_string(l.wall.count()) + " ms");
  }
  if (pr.cpu_limit || pr.output.find("CPU time limit exceeded") != std::string::npos) {
    return Status::ResourceExhausted("translating the module exceeded the CPU limit of " +
                                     std::to_string(l.cpu_seconds) + " s");
  }
  if (pr.output.find("bad_alloc") != std::string::npos ||
      pr.output.find("Cannot allocate memory") != std::string::npos) {
    return Status::ResourceExhausted("translating the module exceeded the memory limit of " +
                                     std::to_string(l.address_space_bytes >> 20) + " MiB");
  }
  if (!pr.signaled && pr.exit_code == 65) {
    std::optional<std::string> e = ReadSmallFile(work / "error.txt");
    if (!e || e->find('\n') == std::string::npos)
      return Status::Internal("the translator child failed without saying why");
    std::string code = e->substr(0, e->find('\n')), message = e->substr(e->find('\n') + 1);
    for (int c = 1; c <= static_cast<int>(StatusCode::kInternal); ++c) {
      if (StatusCodeName(static_cast<StatusCode>(c)) == code) return Status(static_cast<StatusCode>(c), message);
    }
    return Status::Internal(message);
  }
  if (pr.signaled) {
    // libwabt asserts on some malformed input (the reader child's reason): the module's fault.
    return Status::InvalidArgument("malformed wasm module: translating it failed (signal " + std::to_string(pr.signal) +
                                   ")");
  }
  if (pr.exit_code != 0) {
    if (pr.exit_code == 127 && pr.output.find("exec failed") != std::string::npos) {
      return Status::Unavailable("the translator '" + options_.translator + "' could not be started");
    }
    return Status::Internal("the translator child failed (exit " + std::to_string(pr.exit_code) +
                            "): " + Tail(pr.output, 2000));
  }
  Translation t;
  std::optional<std::string> c = ReadSmallFile(work / "module.c"), h = ReadSmallFile(work / "module.h"),
                             ex = ReadSmallFile(work / "exports.txt"), names = ReadSmallFile(work / "names.txt");
  std::optional<std::vector<ExportInfo>> exports = ex ? ParseExports(*ex) : std::nullopt;
  if (!c || !h || !exports)
    return Status::Internal("the translator child left no complete translation in " + work.string());
  t.c_source = std::move(*c);
  t.header = std::move(*h);
  t.exports = std::move(*exports);
  if (names) t.function_names = std::move(*names);
  return t;
}

Result<Artifact> Engine::CompileUncached(std::span<const uint8_t> wasm, const std::string& key, const std::string& sha,
                                         bool allow_quick) {
  // A background compile ends with the engine; one for a deploy when compiles are cancelled.
  const std::atomic<bool>* cancel = allow_quick ? &cancel_ : &background_stop_;
  std::error_code ec;
  fs::create_directories(options_.cache_dir, ec);
  if (ec) return Status::IoError("cannot create cache directory " + options_.cache_dir.string() + ": " + ec.message());
  // A fresh random name: nodes sharing the cache directory on a volume may have the same pid.
  fs::path work = options_.cache_dir / ("tmp-" + key.substr(0, 16) + "-" + UniqueSuffix());
  fs::create_directories(work, ec);
  if (ec) return Status::IoError("cannot create " + work.string() + ": " + ec.message());
  RemoveOnExit cleanup(work);
  // A compile slot of the node for the translator and the C compiler together (compile_slots.h):
  // however many deploys arrive, only so many compilers run at once; the rest wait their turn.
  // A deploy waits as long as it takes (the node is busy, the module is not at fault), until cancelled.
  GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<CompileSlot> slot,
                           AcquireCompileSlot(std::chrono::steady_clock::time_point::max(), cancel));
  Result<Translation> translated = options_.translator.empty()
                                       ? Translate(wasm, options_.imports, options_.interrupt_checks)
                                       : TranslateInChild(wasm, work);
  GPUWASM_RETURN_IF_ERROR(translated.status());
  Translation& t = *translated;
  GPUWASM_RETURN_IF_ERROR(WriteFile(work / "module.h", t.header));

  if (allow_quick && options_.quick_tier_min_bytes > 0 && t.c_source.size() >= options_.quick_tier_min_bytes &&
      !options_.quick_cc.empty()) {
    GPUWASM_RETURN_IF_ERROR(WriteFile(work / "quick.c", t.c_source));
    Status quick =
        CompileC(work, {work / "quick.c"}, options_.quick_cc, options_.quick_cc_flags, work / "quick.so", cancel);
    if (quick.ok()) {
      GPUWASM_RETURN_IF_ERROR(Store(work, key + kQuickSuffix, t, work / "quick.so"));
      quick_compiles_.fetch_add(1, std::memory_order_relaxed);
      QueueOptimize(wasm, key, sha);
      Artifact a{key + kQuickSuffix, sha, std::move(t.exports), /*from_cache=*/false};
      a.quick = true;
      return a;
    }
    if (quick.code() == StatusCode::kCancelled) return quick;
    // The module is still compiled, by cc (slower to deploy, not refused).
    std::fprintf(stderr, "gpuwasm: the quick tier could not compile module %s; compiling it with %s: %s\n", key.c_str(),
                 options_.cc.c_str(), quick.ToString().c_str());
  }

  size_t parts = std::clamp<size_t>(t.c_source.size() / std::max<size_t>(options_.part_bytes, 1), 1,
                                    std::max<size_t>(options_.max_parts, 1));
  std::vector<std::string> sources = SplitTranslation(t.c_source, parts);
  std::vector<fs::path> paths;
  for (size_t i = 0; i < sources.size(); ++i) {
    paths.push_back(work / (i == 0 ? std::string("module.c") : "module-" + std::to_string(i) + ".c"));
    GPUWASM_RETURN_IF_ERROR(WriteFile(paths.back(), sources[i]));
  }
  sources.clear();
  Status compiled = CompileC(work, paths, options_.cc, options_.cc_flags, work / "module.so", cancel);
  if (!compiled.ok() && compiled.code() == StatusCode::kInternal && paths.size() > 1) {
    // The compiler refused the split C (the split only knows wasm2c's shape): the module as one
    // file is what it would have compiled.
    std::fprintf(stderr, "gpuwasm: module %s did not compile in %zu parts; compiling it whole: %s\n", key.c_str(),
                 paths.size(), compiled.ToString().c_str());
    GPUWASM_RETURN_IF_ERROR(WriteFile(work / "whole.c", t.c_source));
    compiled = CompileC(work, {work / "whole.c"}, options_.cc, options_.cc_flags, work / "module.so", cancel);
  }
  GPUWASM_RETURN_IF_ERROR(compiled);
  GPUWASM_RETURN_IF_ERROR(Store(work, key, t, work / "module.so"));
  return Artifact{key, sha, std::move(t.exports), /*from_cache=*/false};
}

Status Engine::CompileC(const fs::path& work, const std::vector<fs::path>& sources, const std::string& cc,
                        const std::vector<std::string>& flags, const fs::path& out, const std::atomic<bool>* cancel) {
  ProcessLimits limits = options_.compile_limits;
  limits.cancel = cancel;
  auto failed = [&](const ProcessResult& pr, const std::string& what) -> Status {
    if (pr.cancelled) return Status::Cancelled("the compile was cancelled (gpuwasm is shutting down)");
    if (pr.timed_out) {
      return Status::ResourceExhausted(what + " exceeded the wall-clock limit of " +
                                       std::to_string(options_.compile_limits.wall.count()) + " ms");
    }
    if (pr.cpu_limit || pr.output.find("CPU time limit exceeded") != std::string::npos) {
      return Status::ResourceExhausted(what + " exceeded the CPU limit of " +
                                       std::to_string(options_.compile_limits.cpu_seconds) + " s");
    }
    if (pr.output.find("out of memory") != std::string::npos ||
        pr.output.find("virtual memory exhausted") != std::string::npos ||
        pr.output.find("Cannot allocate memory") != std::string::npos) {
      return Status::ResourceExhausted(what + " exceeded the memory limit of " +
                                       std::to_string(options_.compile_limits.address_space_bytes >> 20) + " MiB");
    }
    if (pr.signaled || pr.exit_code != 0) {
      if (pr.exit_code == 127 && pr.output.find("exec failed") != std::string::npos) {
        return Status::Unavailable("C compiler '" + cc + "' could not be started");
      }
      return Status::Internal(
          "C compiler failed (" +
          (pr.signaled ? "signal " + std::to_string(pr.signal) : "exit " + std::to_string(pr.exit_code)) +
          "): " + Tail(pr.output, 2000));
    }
    return Status::Ok();
  };
  std::vector<std::string> common = {cc};
  for (const std::string& f : flags) common.push_back(f);
  // After the operator's flags, so that they cannot be overridden: -ffp-contract=off because
  // wasm rounds a multiply and an add separately, and GCC fuses them into an FMA by default on
  // every target that has one (aarch64; x86-64 with -march=x86-64-v3 or native).
  for (const char* f : {"-fPIC", "-fvisibility=hidden", "-fno-strict-aliasing", "-ffp-contract=off", "-w",
                        "-DWASM_RT_MEMCHECK_SIGNAL_HANDLER=1", "-g0"}) {
    common.push_back(f);
  }
  common.push_back("-I" + work.string());
  if (sources.size() == 1) {  // compile and link in one process
    std::vector<std::string> argv = common;
    argv.insert(argv.begin() + 1 + static_cast<std::ptrdiff_t>(flags.size()), "-shared");
    argv.push_back(sources[0].string());
    argv.push_back("-o");
    argv.push_back(out.string());
    GPUWASM_ASSIGN_OR_RETURN(ProcessResult pr, RunLimited(argv, limits));
    return failed(pr, "compiling the module");
  }
  // Parts in parallel: as many at once as this compile's slot and the slots free now allow (the
  // node's bound on compilers holds); each part is a compiler process under the limits.
  std::vector<std::unique_ptr<CompileSlot>> extra;
  while (extra.size() + 1 < sources.size()) {
    Result<std::unique_ptr<CompileSlot>> s = AcquireCompileSlot(std::chrono::steady_clock::now(), cancel);
    if (!s.ok()) break;
    extra.push_back(std::move(*s));
  }
  std::vector<fs::path> objects;
  for (const fs::path& src : sources) objects.push_back(fs::path(src).replace_extension(".o"));
  std::vector<Status> results(sources.size());
  std::atomic<size_t> next{0};
  auto compile_parts = [&] {
    for (size_t i = next.fetch_add(1); i < sources.size(); i = next.fetch_add(1)) {
      std::vector<std::string> argv = common;
      argv.push_back("-c");
      argv.push_back(sources[i].string());
      argv.push_back("-o");
      argv.push_back(objects[i].string());
      Result<ProcessResult> pr = RunLimited(argv, limits);
      results[i] = pr.ok() ? failed(*pr, "compiling part " + std::to_string(i + 1) + " of the module") : pr.status();
      if (!results[i].ok()) next.store(sources.size());  // the others not started are not needed
    }
  };
  std::vector<std::thread> threads;
  for (size_t k = 0; k < extra.size(); ++k) threads.emplace_back(compile_parts);
  compile_parts();
  for (std::thread& th : threads) th.join();
  extra.clear();
  for (const Status& s : results) GPUWASM_RETURN_IF_ERROR(s);
  std::vector<std::string> link = {cc, "-shared"};
  for (const fs::path& o : objects) link.push_back(o.string());
  link.push_back("-o");
  link.push_back(out.string());
  GPUWASM_ASSIGN_OR_RETURN(ProcessResult pr, RunLimited(link, limits));
  return failed(pr, "linking the module");
}

Status Engine::Store(const fs::path& work, const std::string& key, const Translation& t, const fs::path& so) {
  // The names and exports first, then the artifact (atomic renames): a reader that sees the .so
  // sees them too.
  std::error_code ec;
  fs::path names_tmp = work / (key + ".names");
  GPUWASM_RETURN_IF_ERROR(WriteFile(names_tmp, t.function_names));
  fs::rename(names_tmp, options_.cache_dir / (key + ".names"), ec);
  if (ec) return Status::IoError("cannot store " + key + ".names: " + ec.message());
  fs::path exports_tmp = work / (key + ".exports");
  GPUWASM_RETURN_IF_ERROR(WriteFile(exports_tmp, FormatExports(t.exports)));
  fs::rename(exports_tmp, options_.cache_dir / (key + ".exports"), ec);
  if (ec) return Status::IoError("cannot store " + key + ".exports: " + ec.message());
  fs::path stored = options_.cache_dir / (key + ".so");
  fs::rename(so, stored, ec);  // atomic: readers see no half-written artifact
  if (ec) return Status::IoError("cannot store " + stored.string() + ": " + ec.message());
  return Status::Ok();
}

Result<std::shared_ptr<const Module>> Engine::LoadSo(const fs::path& so, const std::string& key, const std::string& sha,
                                                     bool from_cache) {
  Result<SharedLibrary> library = SharedLibrary::Open(so.string());
  if (!library.ok()) return Status::Internal("cannot load compiled module: " + library.status().message());
  std::shared_ptr<Module> m(new Module());
  m->library_ = std::move(*library);
  void* h = m->library_.handle();
  m->key_ = key;
  m->sha256_ = sha;
  m->path_ = so.string();
  m->names_path_ = fs::path(so).replace_extension(".names").string();
  if (link_map* lm = nullptr; dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr) m->load_base_ = lm->l_addr;
  m->from_cache_ = from_cache;
  auto sym = [&](const char* name) { return m->library_.Symbol(name); };
  auto* version = static_cast<const uint32_t*>(sym("gpuwasm_glue_version"));
  auto init = reinterpret_cast<void (*)()>(sym("gpuwasm_init_module"));
  m->glue_.instance_size = reinterpret_cast<size_t (*)()>(sym("gpuwasm_instance_size"));
  m->glue_.instantiate = reinterpret_cast<void (*)(void*, void*)>(sym("gpuwasm_instantiate"));
  m->glue_.free = reinterpret_cast<void (*)(void*)>(sym("gpuwasm_free"));
  m->glue_.memory = reinterpret_cast<wasm_rt_memory_t* (*)(void*)>(sym("gpuwasm_memory"));
  m->glue_.exports = static_cast<const Module::Glue::Export*>(sym("gpuwasm_exports"));
  if (version == nullptr || *version != 1 || init == nullptr || m->glue_.instance_size == nullptr ||
      m->glue_.instantiate == nullptr || m->glue_.free == nullptr || m->glue_.memory == nullptr ||
      m->glue_.exports == nullptr) {
    return Status::Internal("compiled module " + so.string() + " lacks gpuwasm glue");
  }
  for (const Module::Glue::Export* e = m->glue_.exports; e->name != nullptr; ++e) {
    m->exports_.push_back({e->name, e->kind == 0   ? ExportKind::kVoid
                                    : e->kind == 1 ? ExportKind::kI32
                                                   : ExportKind::kUnsupported});
  }
  {
    std::lock_guard<std::mutex> lock(g_init_module_mu);
    init();
  }
  return std::shared_ptr<const Module>(std::move(m));
}

}  // namespace gpuwasm::wasm
