// The PTX conformance cases: tests/conformance/<file>.cu holds kernels, each announced by a line
//
//   // case: <kernel> grid=<x>[,<y>,<z>] block=<x>[,<y>,<z>] out=<words> [cmp=exact|f32ulp:<n>|f64ulp:<n>]
//            [native=no]
//
// A file compiled for other architectures than sm_80 and sm_90 says which, before its cases, in a
// line `// archs: sm_100a` (the build reads the same line).
//
// native=no: the kernel uses an instruction the native-code translation does not cover yet, so
// in the native tier it runs interpreted (the test checks that it does, with the reason); without
// it the native tier must really run native code.
//
// Every kernel is `(unsigned* out, const unsigned* in)`: `in` holds kInputWords words of
// InputWord(i), `out` starts zeroed. <file>.expected holds, per kernel, the words `out` must end
// with (one line: the kernel's name, then the words in hex), written by conformance_reference from
// its C++ reference of the kernel. A new case is a kernel in a .cu, its reference, and the
// regenerated .expected: no list of cases is kept anywhere else.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace gpuwasm::conformance {

inline constexpr uint32_t kInputWords = 4096;

// The runner's input pattern: well mixed, every bit pattern likely.
inline uint32_t InputWord(uint32_t i) {
  uint32_t x = i * 0x9E3779B9u + 0x7F4A7C15u;
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  return x ^ (x >> 16);
}

inline std::vector<uint32_t> Input() {
  std::vector<uint32_t> in(kInputWords);
  for (uint32_t i = 0; i < kInputWords; ++i) in[i] = InputWord(i);
  return in;
}

enum class Compare { kExact, kF32Ulp, kF64Ulp };

struct Case {
  std::string file;  // stem of the .cu
  std::string kernel;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t out_words = 0;
  Compare cmp = Compare::kExact;
  uint32_t ulps = 0;
  bool native = true;  // the native tier runs native code (native=no: interpreted, for a reason)
  std::string error;   // a malformed case line: the runner fails the case with it
  std::vector<std::string> archs = {"sm_80", "sm_90"};  // the file's `// archs:` line, if any
};

inline bool ParseDims(const std::string& v, uint32_t (&d)[3]) {
  std::stringstream ss(v);
  std::string part;
  int i = 0;
  while (std::getline(ss, part, ',')) {
    if (i == 3 || part.empty()) return false;
    d[i++] = static_cast<uint32_t>(std::stoul(part));
  }
  return i > 0;
}

inline Case ParseCase(const std::string& file, const std::string& spec) {
  Case c;
  c.file = file;
  std::stringstream ss(spec);
  ss >> c.kernel;
  std::string kv;
  while (ss >> kv) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) {
      c.error = "'" + kv + "' is not key=value";
      return c;
    }
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    bool ok = true;
    if (k == "grid") {
      ok = ParseDims(v, c.grid);
    } else if (k == "block") {
      ok = ParseDims(v, c.block);
    } else if (k == "out") {
      c.out_words = static_cast<uint32_t>(std::stoul(v));
    } else if (k == "native") {
      ok = v == "yes" || v == "no";
      c.native = v == "yes";
    } else if (k == "cmp") {
      if (v == "exact") {
        c.cmp = Compare::kExact;
      } else if (v.rfind("f32ulp:", 0) == 0) {
        c.cmp = Compare::kF32Ulp;
        c.ulps = static_cast<uint32_t>(std::stoul(v.substr(7)));
      } else if (v.rfind("f64ulp:", 0) == 0) {
        c.cmp = Compare::kF64Ulp;
        c.ulps = static_cast<uint32_t>(std::stoul(v.substr(7)));
      } else {
        ok = false;
      }
    } else {
      ok = false;
    }
    if (!ok) {
      c.error = "bad '" + kv + "'";
      return c;
    }
  }
  if (c.kernel.empty() || c.out_words == 0) c.error = "a case needs a kernel name and out=<words>";
  return c;
}

// Every case of every .cu in `dir`, in file then line order.
inline std::vector<Case> LoadCases(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".cu") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  const std::string tag = "// case:", archs_tag = "// archs:";
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line;
    std::vector<std::string> archs = Case{}.archs;
    while (std::getline(in, line)) {
      if (line.rfind(archs_tag, 0) == 0) {  // the architectures this file is compiled for
        std::stringstream ss(line.substr(archs_tag.size()));
        archs.clear();
        for (std::string a; ss >> a;) archs.push_back(a);
      }
      if (line.rfind(tag, 0) == 0) {
        cases.push_back(ParseCase(f.stem().string(), line.substr(tag.size())));
        cases.back().archs = archs;
      }
    }
  }
  return cases;
}

// <file>.expected: kernel -> words.
inline std::map<std::string, std::vector<uint32_t>> ReadExpected(const std::string& path) {
  std::map<std::string, std::vector<uint32_t>> m;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string name, w;
    if (!(ss >> name)) continue;
    auto& words = m[name];
    while (ss >> w) words.push_back(static_cast<uint32_t>(std::stoul(w, nullptr, 16)));
  }
  return m;
}

inline std::string FormatExpected(const std::string& kernel, const std::vector<uint32_t>& words) {
  std::ostringstream o;
  o << kernel;
  char buf[16];
  for (uint32_t w : words) {
    std::snprintf(buf, sizeof buf, " %x", w);
    o << buf;
  }
  o << "\n";
  return o.str();
}

}  // namespace gpuwasm::conformance
