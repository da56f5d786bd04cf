// What the PTX tests share: reading files, the corpus and conformance PTX, and assembling text
// with the toolkit's ptxas (GPUWASM_PTXAS from the build, or $GPUWASM_PTXAS).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace gpuwasm::ptx {

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every .ptx of the corpus and the conformance cases, sorted.
inline std::vector<std::filesystem::path> CorpusAndConformancePtx() {
  std::vector<std::filesystem::path> files;
  for (const char* dir : {GPUWASM_KERNEL_PTX_DIR, GPUWASM_CONFORMANCE_PTX_DIR}) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".ptx") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// "sm_90" of "scan.sm_90.ptx".
inline std::string ArchOf(const std::filesystem::path& p) {
  const std::string stem = p.stem().string();
  return stem.substr(stem.rfind('.') + 1);
}

// Assembles PTX texts with ptxas in a directory of their own (removed at the end); "" without the
// toolkit.
class Ptxas {
 public:
  explicit Ptxas(const std::string& tag) {
    const char* env = std::getenv("GPUWASM_PTXAS");
    path_ = env != nullptr && *env != '\0' ? env : GPUWASM_PTXAS;
    dir_ = std::filesystem::temp_directory_path() / ("gpuwasm_" + tag + "_" + std::to_string(::getpid()));
    if (!path_.empty()) std::filesystem::create_directories(dir_);
  }
  ~Ptxas() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  bool available() const { return !path_.empty(); }
  // Expects ptxas to take `text` (named `name` in its messages) for `arch`.
  void ExpectAccepts(const std::string& text, const std::string& name, const std::string& arch) const {
    const std::filesystem::path file = dir_ / name;
    std::ofstream(file) << text;
    auto r = RunLimited({path_, "-arch=" + arch, "-o", (dir_ / "out.cubin").string(), file.string()}, {});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 0) << name << ":\n" << r->output;
  }

 private:
  std::string path_;
  std::filesystem::path dir_;
};

}  // namespace gpuwasm::ptx
