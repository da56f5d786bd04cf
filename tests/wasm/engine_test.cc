// Compile: validation, rejection with clear errors, the content-addressed cache, compiler limits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "host/guest_io.h"
#include "test_support.h"
#include "wasm/translate.h"

namespace gpuwasm::testing {
namespace {

std::span<const uint8_t> Bytes(const std::string& s) {
  return std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

Status CompileStatus(const std::string& rel) {
  std::string bytes = ReadFile(ModulePath(rel));
  return SharedEngine().Compile(Bytes(bytes)).status();
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/gpuwasm-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

wasm::EngineOptions OptionsIn(const std::filesystem::path& dir) {
  wasm::EngineOptions o;
  o.cache_dir = dir;
  o.imports = host::GuestImports();
  return o;
}

// The rejection corpus (tests/wasm/reject/*.wat): each file says in its first lines what the
// engine must answer: ";; expect: = <message>" (the whole message) or ";; expect: ~ <part>", and
// optionally ";; code: <status code name>". A new file is a new case; no list to edit here.
class Reject : public ::testing::TestWithParam<std::string> {};

std::vector<std::string> RejectCorpus() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(GPUWASM_WASM_REJECT_DIR)) {
    if (e.path().extension() == ".wat") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST_P(Reject, the_engine_refuses_it_saying_why) {
  const std::string wat = ReadFile(std::string(GPUWASM_WASM_REJECT_DIR) + "/" + GetParam() + ".wat");
  std::string expect, code;
  std::istringstream lines(wat);
  for (std::string line; std::getline(lines, line) && line.rfind(";;", 0) == 0;) {
    if (line.rfind(";; expect: ", 0) == 0) expect = line.substr(11);
    if (line.rfind(";; code: ", 0) == 0) code = line.substr(9);
  }
  ASSERT_GT(expect.size(), 2u) << GetParam() << ".wat has no ';; expect: = ...' or ';; expect: ~ ...' line";
  Status s = CompileStatus("reject/" + GetParam() + ".wasm");
  ASSERT_FALSE(s.ok()) << GetParam() << " was accepted";
  if (expect[0] == '=') {
    EXPECT_EQ(s.message(), expect.substr(2));
  } else {
    EXPECT_NE(s.message().find(expect.substr(2)), std::string::npos) << s;
  }
  if (!code.empty()) {
    EXPECT_EQ(StatusCodeName(s.code()), code);
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, Reject, ::testing::ValuesIn(RejectCorpus()),
                         [](const auto& info) { return info.param; });

TEST(Compile, malformed_bytes_give_clear_errors) {
  EXPECT_EQ(SharedEngine().Compile(Bytes("")).status().message(), "not a wasm module: shorter than its header");
  Status garbage = SharedEngine().Compile(Bytes("this is not wasm at all")).status();
  EXPECT_EQ(garbage.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(garbage.message(), "invalid wasm module: at offset 0x4: bad magic value");
  std::string hello = ReadFile(GPUWASM_HELLO_WASM);
  Status truncated = SharedEngine().Compile(Bytes(hello.substr(0, hello.size() / 2))).status();
  EXPECT_EQ(truncated.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(truncated.message().find("invalid wasm module"), std::string::npos) << truncated;
}

TEST(Compile, second_compile_is_a_cache_hit) {
  TempDir dir;
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  {
    wasm::Engine first(OptionsIn(dir.path));
    auto a = first.Compile(Bytes(bytes));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_FALSE((*a)->from_cache());
    auto same = first.Compile(Bytes(bytes));  // already loaded: the same module
    EXPECT_EQ(a->get(), same->get());
  }
  wasm::Engine second(OptionsIn(dir.path));  // a new process would see the same
  auto b = second.Compile(Bytes(bytes));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE((*b)->from_cache());
  EXPECT_EQ(std::filesystem::path((*b)->artifact_path()).parent_path(), dir.path);
  GuestRun r = RunExport(*b, "ok");
  EXPECT_EQ(r.outcome->exit_code, 42);
  // Nothing but the artifact, its export list and its names is left behind (no temporary directories).
  std::set<std::string> entries;
  for (auto& e : std::filesystem::directory_iterator(dir.path)) entries.insert(e.path().filename().string());
  EXPECT_EQ(entries, (std::set<std::string>{(*b)->key() + ".so", (*b)->key() + ".exports", (*b)->key() + ".names"}));
}

// Work directories a crash left (older than any compile may run) go when an engine starts; a
// recent one may belong to a compile running in another process or node and stays.
TEST(Compile, stale_work_directories_are_removed_at_start) {
  TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directories(dir.path / "tmp-0123456789abcdef-stale");
  std::ofstream(dir.path / "tmp-0123456789abcdef-stale" / "module.c") << "int x;";
  fs::last_write_time(dir.path / "tmp-0123456789abcdef-stale",
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  fs::create_directories(dir.path / "tmp-0123456789abcdef-running");
  std::ofstream(dir.path / "keep.so") << "not a work directory";
  fs::last_write_time(dir.path / "keep.so", fs::file_time_type::clock::now() - std::chrono::hours(1));
  wasm::Engine engine(OptionsIn(dir.path));
  EXPECT_FALSE(fs::exists(dir.path / "tmp-0123456789abcdef-stale"));
  EXPECT_TRUE(fs::exists(dir.path / "tmp-0123456789abcdef-running"));
  EXPECT_TRUE(fs::exists(dir.path / "keep.so"));
}

TEST(Compile, damaged_cache_entry_is_rebuilt) {
  TempDir dir;
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  std::string path;
  {
    wasm::Engine e(OptionsIn(dir.path));
    path = (*e.Compile(Bytes(bytes)))->artifact_path();
  }
  { std::ofstream(path, std::ios::trunc) << "garbage"; }
  wasm::Engine e(OptionsIn(dir.path));
  auto m = e.Compile(Bytes(bytes));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE((*m)->from_cache());
}

TEST(Compile, compiler_failure_is_an_error_not_a_crash) {
  TempDir dir;
  wasm::EngineOptions o = OptionsIn(dir.path);
  o.cc = "false";
  wasm::Engine e(o);
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  Status s = e.Compile(Bytes(bytes)).status();
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("C compiler failed (exit 1)"), std::string::npos) << s;
}

// Wasm rounds a multiply and an add separately. The engine compiles with -ffp-contract=off after
// the operator's flags, so that even flags that enable FMA instructions cannot fuse them.
TEST(Compile, multiply_add_is_never_fused) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("fma") || !__builtin_cpu_supports("avx2")) {
    GTEST_SKIP() << "this CPU has no FMA: no flags could fuse a multiply-add here";
  }
#else
  GTEST_SKIP() << "the flags below are x86-64's";
#endif
  TempDir dir;
  wasm::EngineOptions o = OptionsIn(dir.path);
  o.cc_flags = {"-O2", "-march=x86-64-v3", "-ffp-contract=fast"};
  wasm::Engine e(o);
  std::string bytes = ReadFile(ModulePath("corpus/fp_contract.wasm"));
  auto m = e.Compile(Bytes(bytes));
  ASSERT_TRUE(m.ok()) << m.status();
  int cases = 0;
  for (const wasm::ExportInfo& x : (*m)->exports()) {
    if (x.name.rfind("test_", 0) != 0) continue;
    ++cases;
    GuestRun got = RunExport(*m, x.name);
    ASSERT_TRUE(got.outcome.ok() && got.outcome->ok()) << x.name;
    EXPECT_EQ(static_cast<uint32_t>(got.outcome->exit_code), InterpRun(bytes, x.name).value) << x.name;
  }
  EXPECT_EQ(cases, 5);
}

TEST(Compile, missing_compiler_is_reported) {
  TempDir dir;
  wasm::EngineOptions o = OptionsIn(dir.path);
  o.cc = "/nonexistent/cc";
  wasm::Engine e(o);
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  Status s = e.Compile(Bytes(bytes)).status();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "C compiler '/nonexistent/cc' could not be started");
}

TEST(Compile, wall_clock_limit_stops_the_compiler) {
  TempDir dir;
  wasm::EngineOptions o = OptionsIn(dir.path);
  o.compile_limits.wall = std::chrono::milliseconds(5);
  wasm::Engine e(o);
  std::string bytes = ReadFile(ModulePath("corpus/ops_f64.wasm"));
  Status s = e.Compile(Bytes(bytes)).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "compiling the module exceeded the wall-clock limit of 5 ms");
}

TEST(Compile, memory_limit_stops_the_compiler) {
  TempDir dir;
  wasm::EngineOptions o = OptionsIn(dir.path);
  o.compile_limits.address_space_bytes = 48ull << 20;  // cc1 runs out of memory early
  wasm::Engine e(o);
  std::string bytes = ReadFile(ModulePath("corpus/ops_f64.wasm"));
  Status s = e.Compile(Bytes(bytes)).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(s.message(), "compiling the module exceeded the memory limit of 48 MiB");
}

TEST(Compile, concurrent_compiles_of_one_module_share_the_result) {
  TempDir dir;
  wasm::Engine e(OptionsIn(dir.path));
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  std::vector<std::shared_ptr<const wasm::Module>> got(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { got[i] = *e.Compile(Bytes(bytes)); });
  }
  for (auto& t : threads) t.join();
  for (int i = 1; i < 4; ++i) EXPECT_EQ(got[0].get(), got[i].get());
}

TEST(Translate, inserts_interrupt_checks_at_functions_and_loops) {
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  auto t = wasm::Translate(Bytes(bytes), host::GuestImports());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->functions, 19u);              // every defined function gets an entry check
  EXPECT_EQ(t->interrupt_checks, 19u + 2u);  // plus one per loop (spin, spin_counting)
  EXPECT_NE(t->c_source.find("gpuwasm_exports[]"), std::string::npos);
}

TEST(Translate, a_module_that_aborts_the_wasm_reader_is_refused_not_fatal) {
  // libwabt 1.0.32 hits an assert() reading this fuzz-found module (its own wasm-validate aborts).
  std::string bytes = ReadFile(GPUWASM_WABT_ABORT_WASM);
  ASSERT_FALSE(bytes.empty());
  auto t = wasm::Translate(Bytes(bytes), host::GuestImports());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), "malformed wasm module: the wasm reader (wabt) fails on it (signal 6)");
  // The process is intact: a good module still translates.
  EXPECT_TRUE(wasm::Translate(Bytes(ReadFile(ModulePath("traps/traps.wasm"))), host::GuestImports()).ok());
}

TEST(Translate, reading_a_module_while_other_threads_allocate_never_hangs) {
  // The reader used to run in a fork()ed child: with other threads inside the allocator at the
  // fork, the child could wait forever on a lock nobody would release (CI's ASan run hung so in
  // `gpuwasm run`). It is a fresh process now. Four threads allocate throughout.
  std::atomic<bool> stop{false};
  std::vector<std::thread> churn;
  for (int i = 0; i < 4; ++i) {
    churn.emplace_back([&] {
      while (!stop.load()) {
        std::vector<std::unique_ptr<std::string>> v;
        for (int k = 0; k < 64; ++k) v.push_back(std::make_unique<std::string>(64 + k * 8, 'x'));
      }
    });
  }
  std::string good = ReadFile(ModulePath("traps/traps.wasm"));
  std::string bad = ReadFile(GPUWASM_WABT_ABORT_WASM);
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(wasm::Validate(Bytes(good), host::GuestImports()).ok());
    EXPECT_EQ(wasm::Validate(Bytes(bad), host::GuestImports()).message(),
              "malformed wasm module: the wasm reader (wabt) fails on it (signal 6)");
  }
  stop = true;
  for (std::thread& t : churn) t.join();
}

TEST(Exports, unknown_entry_is_not_found) {
  auto module = CompileOrDie("corpus/control.wasm");
  ASSERT_NE(module, nullptr);
  GuestRun r = RunExport(module, "no_such_export");
  EXPECT_EQ(r.outcome.status().code(), StatusCode::kNotFound);
  // The message names the entry points there are.
  EXPECT_EQ(
      r.outcome.status().message().rfind("module has no exported function 'no_such_export'; its entry points: ", 0), 0u)
      << r.outcome.status().message();
  std::vector<wasm::ExportInfo> exports = {{"run", wasm::ExportKind::kI32},
                                           {"add", wasm::ExportKind::kUnsupported},
                                           {"init", wasm::ExportKind::kVoid},
                                           {"_initialize", wasm::ExportKind::kVoid}};
  EXPECT_EQ(wasm::DescribeEntryPoints(exports), "its entry points: init, run");
  EXPECT_EQ(wasm::DescribeEntryPoints({}), "it exports no entry point (a function () -> () or () -> i32)");
}

}  // namespace
}  // namespace gpuwasm::testing
