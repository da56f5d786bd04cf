// Wasm backtraces of traps: each kind of trap (a fault in linear memory, wasm_rt_trap, stack
// exhaustion, a deadline) names the guest functions on the stack from the module's name section,
// innermost first; a module without names gets wasm-function[N]; the name-section reader takes
// any bytes without failing.
#include "wasm/backtrace.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "../common/wasm_bytes.h"
#include "test_support.h"

namespace gpuwasm::testing {
namespace {

using std::chrono::milliseconds;

std::vector<std::string> Names(const wasm::CallOutcome& o) {
  std::vector<std::string> out;
  for (const wasm::TrapFrame& f : o.backtrace) out.push_back(f.Display());
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : " <- ") + x;
  return s;
}

// Runs `entry` of the backtrace guest, which must trap with `kind`: its backtrace's names.
std::vector<std::string> TrapFrames(const char* entry, wasm::TrapKind kind,
                                    std::optional<wasm::Clock::duration> timeout = {}) {
  auto module = CompileOrDie("guests/backtrace.wasm");
  if (module == nullptr) return {"(no module)"};
  GuestRun r = RunExport(module, entry, {}, {}, timeout);
  if (!r.outcome.ok()) return {r.outcome.status().ToString()};
  EXPECT_EQ(r.outcome->trap, kind) << entry << ": " << wasm::TrapKindName(r.outcome->trap);
  return Names(*r.outcome);
}

TEST(Backtrace, a_fault_in_linear_memory_names_each_function_demangled) {
  std::vector<std::string> got = TrapFrames("oob", wasm::TrapKind::kOutOfBounds);
  EXPECT_EQ(got, (std::vector<std::string>{"demo::load_past_the_end(unsigned int)", "walk_table", "oob"})) << Join(got);
}

TEST(Backtrace, a_trap_raised_by_generated_code_names_where) {
  std::vector<std::string> got = TrapFrames("div_zero", wasm::TrapKind::kIntegerDivideByZero);
  EXPECT_EQ(got, (std::vector<std::string>{"divide", "div_zero"})) << Join(got);
}

TEST(Backtrace, a_deadline_says_where_the_guest_was_looping) {
  std::vector<std::string> got = TrapFrames("spin", wasm::TrapKind::kDeadlineExceeded, milliseconds(50));
  EXPECT_EQ(got, (std::vector<std::string>{"spin_forever", "spin"})) << Join(got);
}

TEST(Backtrace, stack_exhaustion_shows_the_recursion_as_one_line) {
  std::vector<std::string> got = TrapFrames("deep", wasm::TrapKind::kStackExhausted);
  // The innermost frames recorded (the capture keeps kMaxTrapAddresses): all of them recurse.
  ASSERT_GE(got.size(), 40u) << Join(got);
  for (const std::string& f : got) EXPECT_EQ(f, "recurse");
  std::string text = wasm::FormatBacktrace("stack_exhausted", got);
  EXPECT_EQ(text, "gpuwasm: wasm backtrace of the trap (stack_exhausted), innermost call first:\n  #0-#" +
                      std::to_string(got.size() - 1) + " recurse (" + std::to_string(got.size()) + " frames)\n");
}

TEST(Backtrace, a_module_without_names_gets_function_indices) {
  auto module = CompileOrDie("traps/traps.wasm");  // wat2wasm writes no name section
  ASSERT_NE(module, nullptr);
  GuestRun r = RunExport(module, "oob_load");
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
  ASSERT_EQ(r.outcome->trap, wasm::TrapKind::kOutOfBounds);
  ASSERT_FALSE(r.outcome->backtrace.empty());
  const wasm::TrapFrame& f = r.outcome->backtrace[0];
  EXPECT_EQ(f.name, "");
  EXPECT_EQ(f.Display(), "wasm-function[" + std::to_string(f.function_index) + "]");
}

TEST(Backtrace, a_call_that_returns_has_none) {
  auto module = CompileOrDie("traps/traps.wasm");
  ASSERT_NE(module, nullptr);
  GuestRun r = RunExport(module, "ok");
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
  EXPECT_TRUE(r.outcome->ok());
  EXPECT_TRUE(r.outcome->backtrace.empty());
}

TEST(Backtrace, format_lists_frames_and_folds_runs_of_three_or_more) {
  EXPECT_EQ(wasm::FormatBacktrace("unreachable", {}), "");
  EXPECT_EQ(wasm::FormatBacktrace("unreachable", {"a", "b", "b", "c", "c", "c", "d"}),
            "gpuwasm: wasm backtrace of the trap (unreachable), innermost call first:\n"
            "  #0 a\n  #1 b\n  #2 b\n  #3-#5 c (3 frames)\n  #6 d\n");
}

// A module of only a name section (the reader needs no other section).
std::string WithNames(const std::string& subsections) {
  std::string header("\0asm\1\0\0\0", 8);
  return header + Section(0, Leb(4) + "name" + subsections);
}

std::string FunctionNames(const std::vector<std::pair<uint32_t, std::string>>& names) {
  std::string body = Leb(names.size());
  for (const auto& [index, name] : names) body += Leb(index) + Leb(name.size()) + name;
  return std::string(1, '\1') + Leb(body.size()) + body;
}

std::vector<wasm::FunctionName> Read(const std::string& bytes) {
  return wasm::ReadFunctionNames(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

TEST(FunctionNames, are_read_demangled_and_made_printable) {
  std::string module_name = std::string(1, '\0') + Leb(5) + Leb(4) + "demo";  // subsection 0 first
  auto names = Read(WithNames(module_name + FunctionNames({{0, "main"},
                                                           {3, "_ZN4demo5innerEi"},
                                                           {4, "_ZN4core3ptr13drop_in_place17h0123456789abcdefE"},
                                                           {7, "tab\there\nnew\x01\xff"},
                                                           {9, "_Znot_really_mangled"},
                                                           {10,
                                                            "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$"
                                                            "17hdccb57e0523d390bE.llvm.17431876281127629768"},
                                                           {11,
                                                            "_ZN49_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$Drop$GT$"
                                                            "4drop17h0123456789abcdefE"}})));
  ASSERT_EQ(names.size(), 7u);
  EXPECT_EQ(names[0].index, 0u);
  EXPECT_EQ(names[0].name, "main");
  EXPECT_EQ(names[1].name, "demo::inner(int)");
  EXPECT_EQ(names[2].name, "core::ptr::drop_in_place");  // Rust's hash suffix dropped
  EXPECT_EQ(names[3].name, "tab?here?new??");
  EXPECT_EQ(names[4].name, "_Znot_really_mangled");
  // Rust legacy names (rustc's wasm32-wasi std): escapes decoded, LLVM's local suffix dropped.
  EXPECT_EQ(names[5].name, "std::rt::lang_start::{{closure}}");
  EXPECT_EQ(names[6].name, "<alloc::vec::Vec<T> as Drop>::drop");
  // Through <key>.names and back, with an export wrapper's symbol.
  auto again = wasm::ParseModuleNames(wasm::FormatModuleNames({names, {{3, "Z_guestZ_run"}}}));
  ASSERT_EQ(again.functions.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(again.functions[i].index, names[i].index);
    EXPECT_EQ(again.functions[i].name, names[i].name);
  }
  ASSERT_EQ(again.export_symbols.size(), 1u);
  EXPECT_EQ(again.export_symbols[0].index, 3u);
  EXPECT_EQ(again.export_symbols[0].name, "Z_guestZ_run");
}

TEST(FunctionNames, long_names_are_cut) {
  auto names = Read(WithNames(FunctionNames({{1, std::string(5000, 'x')}})));
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].name.size(), wasm::kMaxFunctionNameBytes);
  EXPECT_EQ(names[0].name.substr(names[0].name.size() - 3), "...");
}

TEST(FunctionNames, malformed_sections_give_what_was_read_and_never_fail) {
  std::string good = FunctionNames({{1, "alpha"}, {2, "beta"}});
  EXPECT_EQ(Read(WithNames(good)).size(), 2u);
  // Every truncation of a valid module: no crash, never more names than it holds.
  std::string whole = WithNames(good);
  for (size_t n = 0; n <= whole.size(); ++n) EXPECT_LE(Read(whole.substr(0, n)).size(), 2u) << n;
  // A count far above what follows; a name length past the end; a 6-byte LEB.
  std::string huge_count = std::string(1, '\1') + Leb(8) + Leb(1u << 30) + Leb(1) + Leb(1) + "a";
  EXPECT_LE(Read(WithNames(huge_count)).size(), 1u);
  std::string long_len = std::string(1, '\1') + Leb(4) + Leb(1) + Leb(1) + Leb(100);
  EXPECT_TRUE(Read(WithNames(long_len)).empty());
  std::string bad_leb = std::string(1, '\1') + Leb(7) + std::string("\xff\xff\xff\xff\xff\xff\x01", 7);
  EXPECT_TRUE(Read(WithNames(bad_leb)).empty());
  // Not a name section, and a section size past the end.
  EXPECT_TRUE(Read(std::string("\0asm\1\0\0\0", 8) + Section(0, Leb(4) + "nope" + good)).empty());
  EXPECT_TRUE(Read(std::string("\0asm\1\0\0\0\0\x7f", 10)).empty());
  // Lines of <key>.names that do not parse are skipped.
  auto parsed = wasm::ParseModuleNames("1\tone\nx\tbad\n\tnoindex\n99999999999\ttoo big\ne\tno\n2\ttwo");
  ASSERT_EQ(parsed.functions.size(), 2u);
  EXPECT_EQ(parsed.functions[1].name, "two");
  EXPECT_TRUE(parsed.export_symbols.empty());
}

}  // namespace
}  // namespace gpuwasm::testing
