// Native code compiled and cached (native.h): the system C compiler in a limited child, the
// per-kernel native tier that decides when to compile, and the compile queue.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "common/compile_slots.h"
#include "common/content_cache.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "common/unique_name.h"
#include "device/cpu/native.h"

namespace gpuwasm::device::cpu {

namespace fs = std::filesystem;

namespace {

// Work directories of compiles running now: removed at exit() too, when a compile is cut short.
class LiveWorkDirs {
 public:
  static LiveWorkDirs& Get() {
    static auto* dirs = [] {
      auto* d = new LiveWorkDirs();  // never destroyed: a compile thread may outlive main
      std::atexit([] { LiveWorkDirs::Get().RemoveAll(); });
      return d;
    }();
    return *dirs;
  }
  void Add(const fs::path& p) {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.insert(p);
  }
  void Remove(const fs::path& p) {
    std::error_code ec;
    fs::remove_all(p, ec);
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.erase(p);
  }

 private:
  void RemoveAll() {
    std::lock_guard<std::mutex> lock(mu_);
    std::error_code ec;
    for (const fs::path& p : dirs_) fs::remove_all(p, ec);
    dirs_.clear();
  }
  std::mutex mu_;
  std::set<fs::path> dirs_;
};

struct WorkDir {
  explicit WorkDir(fs::path p) : path(std::move(p)) { LiveWorkDirs::Get().Add(path); }
  ~WorkDir() { LiveWorkDirs::Get().Remove(path); }
  fs::path path;
};

}  // namespace

namespace {

// Compile time grows with the source: about 9.5 us a byte at -O2, 5.5 at -O1, 3.2 at -Og on a small
// machine (the corpus's largest kernel, a 137-block sorting network, is 353 KB), plus the
// compiler's start. The level is chosen so that a kernel compiles within about 2 s.
struct OptLevel {
  const char* flag;
  double ns_per_byte;
};

OptLevel LevelFor(size_t bytes) {
  if (bytes < (128u << 10)) return {"-O2", 9500};
  if (bytes < (256u << 10)) return {"-O1", 5500};
  return {"-Og", 3200};
}

std::chrono::nanoseconds ModelCost(size_t bytes) {
  return std::chrono::milliseconds(40) +
         std::chrono::nanoseconds(static_cast<int64_t>(LevelFor(bytes).ns_per_byte * bytes));
}

// How this machine's compiles compare with the model: the measured CPU time over the model's, a
// moving average of the compiles of this process (starting at 1), bounded to [1/4, 8].
std::atomic<double> g_cost_scale{1.0};

void RecordCompileCost(size_t bytes, std::chrono::nanoseconds cpu) {
  const double ratio = std::clamp(static_cast<double>(cpu.count()) / ModelCost(bytes).count(), 0.25, 8.0);
  double old = g_cost_scale.load();
  while (!g_cost_scale.compare_exchange_weak(old, 0.5 * old + 0.5 * ratio)) {
  }
}

}  // namespace

std::chrono::nanoseconds EstimatedCompileCost(size_t c_bytes) {
  return std::chrono::nanoseconds(static_cast<int64_t>(ModelCost(c_bytes).count() * g_cost_scale.load()));
}

Result<std::shared_ptr<const NativeCode>> NativeCode::Compile(const NativeSource& src, const std::string& cc,
                                                              bool background) {
  // A compile slot of the node (compile_slots.h): native code and Wasm modules share the bound.
  GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<CompileSlot> slot,
                           AcquireCompileSlot(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  std::error_code ec;
  fs::path dir = fs::temp_directory_path(ec) / ("gpuwasm-native-" + UniqueSuffix());
  if (ec || !fs::create_directories(dir, ec)) {
    return Status::IoError("cannot create a directory for native code: " + ec.message());
  }
  WorkDir cleanup(dir);
  const fs::path& work = cleanup.path;
  {
    std::ofstream out(work / "kernel.c", std::ios::binary);
    out << src.c;
    if (!out) return Status::IoError("cannot write " + (work / "kernel.c").string());
  }
  const fs::path so = work / "kernel.so";
  const char* level = LevelFor(src.c.size()).flag;
  std::vector<std::string> argv = {cc, level, "-march=native",
                                   // -O2's very-cheap model vectorises only loops of a known trip
                                   // count: the thread loops' counts are the block's size.
                                   "-fvect-cost-model=dynamic", "-ffp-contract=off", "-fno-strict-aliasing", "-fPIC",
                                   "-shared", "-w", "-g0", (work / "kernel.c").string(), "-o", so.string(), "-lm"};
  ProcessLimits limits;
  limits.cpu_seconds = 60;
  limits.wall = std::chrono::milliseconds(60'000);
  limits.nice = background ? 19 : 0;
  GPUWASM_ASSIGN_OR_RETURN(ProcessResult pr, RunLimited(argv, limits));
  if (!pr.timed_out && !pr.signaled && pr.exit_code == 0) RecordCompileCost(src.c.size(), pr.cpu_time);
  if (background && pr.timed_out) {
    return Status::Unavailable("the background compile of a kernel's native code did not finish in 60 s");
  }
  if (pr.timed_out || pr.signaled || pr.exit_code != 0) {
    std::string tail = pr.output.size() > 1000 ? pr.output.substr(pr.output.size() - 1000) : pr.output;
    return Status::Internal("compiling a kernel's native code failed: " + tail);
  }
  Result<SharedLibrary> library = SharedLibrary::Open(so.string());
  if (!library.ok()) return Status::Internal("cannot load a kernel's native code: " + library.status().message());
  std::shared_ptr<NativeCode> code(new NativeCode());
  code->library_ = std::move(*library);
  auto* count = code->library_.Get<const uint32_t*>("gw_block_count");
  auto* table = code->library_.Get<NativeBlockFn const*>("gw_blocks");
  if (count == nullptr || table == nullptr || *count != src.blocks) {
    return Status::Internal("a kernel's native code lacks its block table");
  }
  code->blocks_.assign(table, table + *count);
  code->entry_ = src.entry_block;
  code->starts_ = src.starts;
  code->ctaid_registers_ = src.ctaid_registers;
  return std::shared_ptr<const NativeCode>(std::move(code));
}

namespace {

// Translations compiled in this process, by the hash of their C source. Bounded: the least
// recently used entries go first (their code stays loaded while a launch holds it).
ContentCache<NativeTier>& NativeTiers() {
  // Never destroyed: compile threads may outlive main.
  static auto* cache = new ContentCache<NativeTier>(ContentCache<NativeTier>::Keep::kRecent, 256);
  return *cache;
}

// Background compiles of this process, one at a time, in the order asked, on one thread that
// lives as long as the process (its cc children die with it: PR_SET_PDEATHSIG). A process runs one
// tenant's kernels (a worker) or one user's: one compile at a time each, and the node's compile
// slots bound them all together. At most kMaxQueued wait; beyond, a kernel stays interpreted.
class CompileQueue {
 public:
  static CompileQueue& Get() {
    static auto* q = new CompileQueue();  // never destroyed, like its thread
    return *q;
  }
  size_t threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_ ? 1 : 0;
  }
  bool Push(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (jobs_.size() >= kMaxQueued) return false;
      jobs_.push_back(std::move(job));
      if (!started_) {
        started_ = true;
        std::thread([this] { Loop(); }).detach();
      }
    }
    cv_.notify_one();
    return true;
  }

 private:
  static constexpr size_t kMaxQueued = 64;
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !jobs_.empty(); });
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool started_ = false;
};

}  // namespace

size_t NativeCompileThreads() { return CompileQueue::Get().threads(); }

std::shared_ptr<NativeTier> NativeTier::For(Result<NativeSource> source) {
  if (!source.ok()) {
    auto slot = std::make_shared<NativeTier>();
    slot->error_ = source.status().message();
    slot->failed_ = true;
    return slot;
  }
  auto src = std::make_shared<const NativeSource>(std::move(*source));
  Result<std::shared_ptr<NativeTier>> tier = NativeTiers().Get(Sha256Hex(src->c), [&] {
    auto made = std::make_shared<NativeTier>();
    made->source_ = src;
    return Result<std::shared_ptr<NativeTier>>(std::move(made));
  });
  return *tier;  // making one cannot fail
}

std::shared_ptr<const NativeCode> NativeTier::Get(NativeMode mode, const std::string& cc) {
  std::unique_lock<std::mutex> lock(mu_);
  if (mode == NativeMode::kOff) return nullptr;
  if (code_ || failed_) return code_;
  if (mode == NativeMode::kAlways) {
    if (!compiling_) {
      compiling_ = true;
      lock.unlock();
      StartCompile(/*wait=*/true, cc);
      lock.lock();
    }
    cv_.wait(lock, [&] { return !compiling_; });
    return code_;
  }
  return nullptr;
}

void NativeTier::AddInterpreted(uint64_t instructions, std::chrono::nanoseconds time, const NativePolicy& policy,
                                const std::string& cc) {
  if (policy.mode != NativeMode::kAuto) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (code_ || failed_ || compiling_) return;
    interpreted_ += instructions;
    interpreted_time_ += time;
    if (interpreted_ < policy.threshold) return;
    // Pay back first: the compile may cost the launches at most its CPU time, and waiting until the
    // kernel was interpreted payback times that long bounds the loss of a run that ends before
    // the code is ready to 1/payback (native code then wins it back).
    if (interpreted_time_.count() < policy.payback * EstimatedCompileCost(source_->c.size()).count()) return;
    compiling_ = true;
  }
  StartCompile(/*wait=*/false, cc);
}

void NativeTier::StartCompile(bool wait, const std::string& cc) {
  auto job = [self = shared_from_this(), cc, src = source_, wait]() {
    auto r = NativeCode::Compile(*src, cc, /*background=*/!wait);
    std::lock_guard<std::mutex> lock(self->mu_);
    if (!r.ok() && r.status().code() == StatusCode::kUnavailable) {
      // No compile slot in time (the node is busy): interpreted for now, asked again later.
      self->compiling_ = false;
      self->interpreted_ = 0;
      self->interpreted_time_ = {};
      self->cv_.notify_all();
      return;
    }
    if (r.ok()) {
      self->code_ = std::move(*r);
    } else {
      self->failed_ = true;
      self->error_ = r.status().message();
    }
    self->compiling_ = false;
    self->cv_.notify_all();
  };
  if (wait) {
    job();
  } else if (!CompileQueue::Get().Push(job)) {
    // The queue is full: the kernel stays interpreted, and may ask again after another threshold.
    std::lock_guard<std::mutex> lock(mu_);
    compiling_ = false;
    interpreted_ = 0;
    interpreted_time_ = {};
  }
}

std::string NativeTier::why_not() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

}  // namespace gpuwasm::device::cpu
