// Runs every PTX conformance case (cases.h) for the PTX nvcc produces (sm_80 and sm_90, or the
// architectures its file names), on the
// interpreter and with native code, and compares `out` with the C++ reference's words in
// <file>.expected. On $GPUWASM_TEST_DEVICE=cuda:0 the cases run on that device (native code is
// the CPU device's tier: those instances skip).
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cases.h"
#include "device/cpu/cpu_device.h"
#include "device/cpu/native.h"
#include "device/cpu/program.h"
#include "kernel_harness.h"
#include "ptx/parser.h"

namespace gpuwasm::testing {
namespace {

using conformance::Case;
using conformance::Compare;

// Where the cases (.cu, .expected) and their PTX are: the build's directories, or one directory
// named by $GPUWASM_CONFORMANCE_DIR holding all of them (the GPU check's bundle).
std::string CaseDir() {
  const char* d = std::getenv("GPUWASM_CONFORMANCE_DIR");
  return d != nullptr ? d : GPUWASM_CONFORMANCE_SOURCE_DIR;
}
std::string PtxDir() {
  const char* d = std::getenv("GPUWASM_CONFORMANCE_DIR");
  return d != nullptr ? d : GPUWASM_CONFORMANCE_PTX_DIR;
}

struct Param {
  Case c;
  std::string arch;
  bool native = false;
  bool fenced = false;  // instrumented as the host instruments a guest's module (ptx/instrument.h)
};

std::vector<Param> AllParams() {
  std::vector<Param> out;
  for (const Case& c : conformance::LoadCases(CaseDir())) {
    for (const std::string& arch : c.archs) {
      for (bool native : {false, true}) out.push_back({c, arch, native});
    }
    // Instrumented, for the first architecture of the file: the same results in both tiers.
    for (bool native : {false, true}) out.push_back({c, c.archs.front(), native, true});
  }
  return out;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.c.file << ".cu " << p.c.kernel << " " << p.arch << (p.native ? " native" : " interpreted")
      << (p.fenced ? " fenced" : "");
}

class Conformance : public ::testing::TestWithParam<Param> {};

TEST_P(Conformance, matches_the_reference) {
  const Param& p = GetParam();
  ASSERT_TRUE(p.c.error.empty()) << p.c.file << ".cu, case " << p.c.kernel << ": " << p.c.error;
  if (p.native && !KernelHarness::TestDeviceIsCpu()) GTEST_SKIP() << "native code is the CPU device's tier";
  if (!KernelHarness::TestDeviceIsCpu() && p.arch != "sm_80" && p.arch != "sm_90") {
    GTEST_SKIP() << p.arch << " PTX needs a GPU of that architecture; the GPU check's is sm_90";
  }
  auto expected = conformance::ReadExpected(CaseDir() + "/" + p.c.file + ".expected");
  auto want = expected.find(p.c.kernel);
  ASSERT_NE(want, expected.end()) << p.c.file << ".expected has no line for " << p.c.kernel
                                  << ": run conformance_reference --write";
  ASSERT_EQ(want->second.size(), p.c.out_words) << p.c.file << ".expected: " << p.c.kernel;

  KernelHarness h{p.native ? KernelHarness::SharedNativeCpuDevice() : nullptr,
                  p.fenced ? PtxForm::kInstrumented : PtxForm::kAsGiven};
  auto k = h.LoadFrom(PtxDir() + "/" + p.c.file + "." + p.arch + ".ptx", p.c.kernel);
  ASSERT_NE(k, nullptr);
  auto in = h.Upload(conformance::Input());
  auto out = h.Zeros<uint32_t>(p.c.out_words);
  Status s = h.Run(*k, {p.c.grid[0], p.c.grid[1], p.c.grid[2]}, {p.c.block[0], p.c.block[1], p.c.block[2]},
                   Params(k->signature()).Add(out).Add(in).Build());
  ASSERT_TRUE(s.ok()) << s;
  if (p.native && !p.fenced) {  // the tier this case is said to run in
    const std::string why = device::cpu::NativeCodeWhyNot(*k);
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), p.c.native)
        << p.c.kernel << (p.c.native ? ": no native code: " + why : ": has native code now: drop native=no");
    if (!p.c.native) RecordProperty("interpreted_because", why);
  }
  auto got = h.Download<uint32_t>(out, p.c.out_words);
  int wrong = 0;
  for (uint32_t i = 0; i < p.c.out_words && wrong < 8; ++i) {
    bool ok = false;
    switch (p.c.cmp) {
      case Compare::kExact: ok = got[i] == want->second[i]; break;
      case Compare::kF32Ulp:
        ok = UlpDiff(std::bit_cast<float>(got[i]), std::bit_cast<float>(want->second[i])) <= p.c.ulps;
        break;
      case Compare::kF64Ulp: {
        uint32_t j = i & ~1u;
        uint64_t g = got[j] | uint64_t{got[j + 1]} << 32, w = want->second[j] | uint64_t{want->second[j + 1]} << 32;
        ok = UlpDiff(std::bit_cast<double>(g), std::bit_cast<double>(w)) <= p.c.ulps;
        break;
      }
    }
    if (!ok) {
      ++wrong;
      ADD_FAILURE() << p.c.kernel << " out[" << i << "] = 0x" << std::hex << got[i] << ", reference 0x"
                    << want->second[i];
    }
  }
}

// Native code covers what real kernels use: of every kernel in the corpus (tests/kernels) and the
// conformance cases, for both architectures, at least 95 % translate (the rest are listed).
TEST(NativeCoverage, at_least_95_percent_of_the_kernels_translate) {
  int kernels = 0, translated = 0;
  std::string missing;
  for (const char* dir : {GPUWASM_KERNEL_PTX_DIR, GPUWASM_CONFORMANCE_PTX_DIR}) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() != ".ptx") continue;
      std::ifstream f(e.path());
      std::stringstream text;
      text << f.rdbuf();
      auto m = ptx::Parse(text.str());
      ASSERT_TRUE(m.ok()) << e.path() << ": " << m.status();
      auto p = device::cpu::Decode(*m);
      if (!p.ok()) {  // refused for this device altogether (the corpus keeps a few such on purpose)
        continue;
      }
      for (const auto& k : p->kernels) {
        ++kernels;
        auto src = device::cpu::TranslateKernel(*p, k);
        if (src.ok())
          ++translated;
        else
          missing += "\n  " + e.path().filename().string() + " " + k.name + ": " + src.status().message();
      }
    }
  }
  ASSERT_GT(kernels, 80);  // both directories were read
  RecordProperty("kernels", kernels);
  RecordProperty("translated", translated);
  std::printf("native code for %d of %d kernels (%.1f %%)%s\n", translated, kernels, 100.0 * translated / kernels,
              missing.c_str());
  EXPECT_GE(translated * 100, kernels * 95) << missing;
}

INSTANTIATE_TEST_SUITE_P(Ptx, Conformance, ::testing::ValuesIn(AllParams()), [](const auto& info) {
  const Param& p = info.param;
  std::string n = p.c.file + "_" + p.c.kernel + "_" + p.arch + (p.native ? "_native" : "_interpreted") +
                  (p.fenced ? "_fenced" : "");
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
});

}  // namespace
}  // namespace gpuwasm::testing
