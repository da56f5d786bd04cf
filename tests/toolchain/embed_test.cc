// gpuwasm_embed_ptx() turns a file into a header whose array holds exactly the file's bytes.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "embedded_bytes.h"
#include "embedded_ptx.h"

namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(EmbedPtx, header_holds_exact_ptx_bytes) {
  std::string file = ReadFile(GPUWASM_EMBEDDED_PTX_FILE);
  ASSERT_EQ(embedded_ptx_len, file.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(embedded_ptx), embedded_ptx_len), file);
  EXPECT_EQ(embedded_ptx[embedded_ptx_len], 0) << "a NUL follows the bytes, not counted";
  EXPECT_NE(file.find(".entry vector_add("), std::string::npos);
}

TEST(EmbedPtx, binary_bytes_including_nul_survive) {
  std::string file = ReadFile(GPUWASM_EMBEDDED_BYTES_FILE);
  ASSERT_EQ(file.size(), 512u);
  ASSERT_EQ(embedded_bytes_len, 512u);
  for (unsigned i = 0; i < 256; ++i) {
    EXPECT_EQ(embedded_bytes[i], i);
    EXPECT_EQ(embedded_bytes[511 - i], i);
  }
}

}  // namespace
