// conformance_reference: the C++ reference of every PTX conformance case (cases.h).
//   conformance_reference --write DIR   writes DIR/<file>.expected for every .cu in DIR
//   conformance_reference --check DIR   fails when a committed .expected differs from the reference
// Each reference computes what the CUDA source means (the PTX ISA's semantics), independently of
// the CPU device; the runner compares the device's results with what is written here.
#include "reference.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "cases.h"

namespace gpuwasm::conformance {

std::map<std::string, Reference>& References() {
  static std::map<std::string, Reference> m;
  return m;
}

}  // namespace gpuwasm::conformance

int main(int argc, char** argv) {
  using namespace gpuwasm::conformance;
  if (argc != 3 || (std::strcmp(argv[1], "--write") != 0 && std::strcmp(argv[1], "--check") != 0)) {
    std::fprintf(stderr, "usage: conformance_reference --write|--check DIR\n");
    return 2;
  }
  const bool write = std::strcmp(argv[1], "--write") == 0;
  const std::string dir = argv[2];
  const std::vector<uint32_t> in = Input();
  std::map<std::string, std::string> files;  // stem -> expected text
  int bad = 0;
  for (const Case& c : LoadCases(dir)) {
    if (!c.error.empty()) {
      std::fprintf(stderr, "%s.cu: case %s: %s\n", c.file.c_str(), c.kernel.c_str(), c.error.c_str());
      ++bad;
      continue;
    }
    auto r = References().find(c.file + "/" + c.kernel);
    if (r == References().end()) {
      std::fprintf(stderr, "%s.cu: case %s has no reference in tests/conformance/*_ref.cc\n", c.file.c_str(),
                   c.kernel.c_str());
      ++bad;
      continue;
    }
    std::vector<uint32_t> out(c.out_words, 0);
    r->second(c, in, out);
    files[c.file] += FormatExpected(c.kernel, out);
  }
  for (const auto& [stem, text] : files) {
    const std::string path = dir + "/" + stem + ".expected";
    if (write) {
      std::ofstream(path) << text;
      std::printf("wrote %s\n", path.c_str());
    } else {
      std::ifstream f(path);
      std::stringstream ss;
      ss << f.rdbuf();
      if (ss.str() != text) {
        std::fprintf(stderr, "%s differs from the reference: run conformance_reference --write %s\n", path.c_str(),
                     dir.c_str());
        ++bad;
      }
    }
  }
  return bad == 0 ? 0 : 1;
}
