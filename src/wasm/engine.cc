#include "wasm/engine.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "common/sha256.h"
#include "common/unique_name.h"
#include "wasm/runtime.h"
#include "wasm/translate.h"

namespace gpuwasm::wasm {
namespace fs = std::filesystem;

namespace {

std::mutex g_init_module_mu;  // wasm2c's init_module writes module-global state

Status WriteFile(const fs::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return Status::IoError("cannot write " + path.string());
  return Status::Ok();
}

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

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

Module::~Module() {
  if (handle_ != nullptr) dlclose(handle_);
}

const ExportInfo* Module::FindExport(std::string_view name) const {
  for (const ExportInfo& e : exports_) {
    if (e.name == name) return &e;
  }
  return nullptr;
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

Status Engine::Validate(std::span<const uint8_t> wasm) const {
  return wasm::Validate(wasm, options_.imports);
}

Result<std::shared_ptr<const Module>> Engine::Compile(std::span<const uint8_t> wasm) {
  std::string_view bytes(reinterpret_cast<const char*>(wasm.data()), wasm.size());
  std::string sha = Sha256Hex(bytes);
  std::string abi;
  for (const ImportSpec& s : options_.imports) abi += s.module + "." + s.name + ":" + s.params + ">" + s.results + ";";
  std::string compiler = options_.cc;
  for (const std::string& f : options_.cc_flags) compiler += " " + f;
  std::string_view parts[] = {bytes, kEngineVersion, options_.abi_tag, abi, compiler,
                              options_.interrupt_checks ? "checks" : "no-checks"};
  std::string key = Sha256Hex(parts);

  // One compile per key at a time, in this process; other keys proceed in parallel.
  std::shared_ptr<std::mutex> key_mu;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = loaded_.find(key); it != loaded_.end()) {
      if (auto m = it->second.lock()) return std::shared_ptr<const Module>(m);
    }
    auto& slot = in_flight_[key];
    if (!slot) slot = std::make_shared<std::mutex>();
    key_mu = slot;
  }
  std::lock_guard<std::mutex> compile_lock(*key_mu);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = loaded_.find(key); it != loaded_.end()) {
      if (auto m = it->second.lock()) return std::shared_ptr<const Module>(m);
    }
  }
  Result<std::shared_ptr<const Module>> result = Status::Internal("unset");
  fs::path so = options_.cache_dir / (key + ".so");
  std::error_code ec;
  if (fs::exists(so, ec)) {
    result = Load(so, key, sha, /*from_cache=*/true);
    // A damaged cache entry is rebuilt rather than failing the deploy.
    if (!result.ok()) fs::remove(so, ec);
  }
  if (result.ok()) {
    cache_loads_.fetch_add(1, std::memory_order_relaxed);
  } else {
    result = CompileUncached(wasm, key, sha);
    if (result.ok()) compiles_.fetch_add(1, std::memory_order_relaxed);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (result.ok()) loaded_[key] = *result;
  in_flight_.erase(key);
  return result;
}

Result<std::shared_ptr<const Module>> Engine::CompileUncached(std::span<const uint8_t> wasm,
                                                              const std::string& key,
                                                              const std::string& sha) {
  GPUWASM_ASSIGN_OR_RETURN(Translation t, Translate(wasm, options_.imports, options_.interrupt_checks));
  std::error_code ec;
  fs::create_directories(options_.cache_dir, ec);
  if (ec) return Status::IoError("cannot create cache directory " + options_.cache_dir.string() + ": " + ec.message());
  // A fresh random name: nodes sharing the cache directory on a volume may have the same pid.
  fs::path work = options_.cache_dir / ("tmp-" + key.substr(0, 16) + "-" + UniqueSuffix());
  fs::create_directories(work, ec);
  if (ec) return Status::IoError("cannot create " + work.string() + ": " + ec.message());
  RemoveOnExit cleanup(work);

  GPUWASM_RETURN_IF_ERROR(WriteFile(work / "module.c", t.c_source));
  GPUWASM_RETURN_IF_ERROR(WriteFile(work / "module.h", t.header));
  fs::path out = work / "module.so";
  std::vector<std::string> argv = {options_.cc};
  for (const std::string& f : options_.cc_flags) argv.push_back(f);
  for (const char* f : {"-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing", "-w",
                        "-DWASM_RT_MEMCHECK_SIGNAL_HANDLER=1", "-g0"}) {
    argv.push_back(f);
  }
  argv.push_back("-I" + work.string());
  argv.push_back((work / "module.c").string());
  argv.push_back("-o");
  argv.push_back(out.string());
  GPUWASM_ASSIGN_OR_RETURN(ProcessResult pr, RunLimited(argv, options_.compile_limits));
  if (pr.timed_out) {
    return Status::ResourceExhausted("compiling the module exceeded the wall-clock limit of " +
                                     std::to_string(options_.compile_limits.wall.count()) + " ms");
  }
  bool cpu = pr.cpu_limit || pr.output.find("CPU time limit exceeded") != std::string::npos;
  if (cpu) {
    return Status::ResourceExhausted("compiling the module exceeded the CPU limit of " +
                                     std::to_string(options_.compile_limits.cpu_seconds) + " s");
  }
  if (pr.output.find("out of memory") != std::string::npos ||
      pr.output.find("virtual memory exhausted") != std::string::npos ||
      pr.output.find("Cannot allocate memory") != std::string::npos) {
    return Status::ResourceExhausted("compiling the module exceeded the memory limit of " +
                                     std::to_string(options_.compile_limits.address_space_bytes >> 20) +
                                     " MiB");
  }
  if (pr.signaled || pr.exit_code != 0) {
    if (pr.exit_code == 127 && pr.output.find("exec failed") != std::string::npos) {
      return Status::Unavailable("C compiler '" + options_.cc + "' could not be started");
    }
    return Status::Internal("C compiler failed (" +
                            (pr.signaled ? "signal " + std::to_string(pr.signal)
                                         : "exit " + std::to_string(pr.exit_code)) +
                            "): " + Tail(pr.output, 2000));
  }
  fs::path so = options_.cache_dir / (key + ".so");
  fs::rename(out, so, ec);  // atomic: readers see no half-written artifact
  if (ec) return Status::IoError("cannot store " + so.string() + ": " + ec.message());
  return Load(so, key, sha, /*from_cache=*/false);
}

Result<std::shared_ptr<const Module>> Engine::Load(const fs::path& so, const std::string& key,
                                                   const std::string& sha, bool from_cache) {
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    return Status::Internal(std::string("cannot load compiled module: ") + (e ? e : "dlopen failed"));
  }
  std::shared_ptr<Module> m(new Module());
  m->handle_ = h;
  m->key_ = key;
  m->sha256_ = sha;
  m->path_ = so.string();
  m->from_cache_ = from_cache;
  auto sym = [&](const char* name) { return dlsym(h, name); };
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
