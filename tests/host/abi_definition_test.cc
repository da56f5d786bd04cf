// The guest ABI has one definition (sdk/include/wasi_cuda_abi.h, and the host functions whose C++
// types give each import's wasm signature): the Rust crate, written in another language, is
// checked against it here, code by code and import by import.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "host/guest_io.h"
#include "host/wasi_cuda.h"

namespace gpuwasm::host {
namespace {

std::string RustCrate() {
  std::ifstream in(std::string(GPUWASM_SOURCE_DIR) + "/sdk/rust/wasi-cuda/src/lib.rs");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AbiDefinition, the_rust_crates_error_codes_are_the_headers) {
  const std::map<int, std::string> codes = {
      {WCU_ERR_NOT_PERMITTED, "NotPermitted"},
      {WCU_ERR_BAD_POINTER, "BadPointer"},
      {WCU_ERR_BAD_HANDLE, "BadHandle"},
      {WCU_ERR_BAD_PTX, "BadPtx"},
      {WCU_ERR_NOT_FOUND, "NotFound"},
      {WCU_ERR_BAD_ARGS, "BadArgs"},
      {WCU_ERR_BAD_DIMENSIONS, "BadDimensions"},
      {WCU_ERR_QUOTA, "Quota"},
      {WCU_ERR_BUSY, "Busy"},
      {WCU_ERR_DEADLINE, "Deadline"},
      {WCU_ERR_DEVICE, "Device"},
      {WCU_ERR_OUT_OF_RANGE, "OutOfRange"},
      {WCU_ERR_UNSUPPORTED, "Unsupported"},
      {WCU_ERR_INTERNAL, "Internal"},
  };
  const std::string rs = RustCrate();
  ASSERT_FALSE(rs.empty());
  std::map<int, std::string> found;
  const std::regex arm(R"((-\d+) => ErrorKind::(\w+),)");
  for (auto it = std::sregex_iterator(rs.begin(), rs.end(), arm); it != std::sregex_iterator(); ++it) {
    found[std::stoi((*it)[1])] = (*it)[2];
  }
  EXPECT_EQ(found, codes);
  const std::map<std::string, uint32_t> kinds = {{"B8", WCU_ARG_B8},         {"B16", WCU_ARG_B16},
                                                 {"B32", WCU_ARG_B32},       {"B64", WCU_ARG_B64},
                                                 {"BUFFER", WCU_ARG_BUFFER}, {"BYTES", WCU_ARG_BYTES}};
  for (const auto& [name, value] : kinds) {
    EXPECT_NE(rs.find("pub const ARG_" + name + ": u32 = " + std::to_string(value) + ";"), std::string::npos) << name;
  }
  EXPECT_NE(rs.find("[0u8; " + std::to_string(sizeof(wcu_device_info_t)) + "]"), std::string::npos);
  EXPECT_NE(rs.find("info[" + std::to_string(offsetof(wcu_device_info_t, name)) + ".."), std::string::npos);
}

TEST(AbiDefinition, the_rust_crates_imports_have_the_hosts_signatures) {
  std::map<std::string, std::string> host;  // wasi_cuda name -> "params>results"
  for (const wasm::ImportSpec& s : GuestImports()) {
    if (s.module == "wasi_cuda") host[s.name] = s.params + ">" + s.results;
  }
  ASSERT_EQ(host.size(), 13u);
  const std::string rs = RustCrate();
  std::map<std::string, std::string> rust;
  const std::regex fn(R"(pub fn (\w+)\(([^)]*)\) -> (\w+);)");
  const std::regex param(R"(\w+: ([^,]+))");
  for (auto it = std::sregex_iterator(rs.begin(), rs.end(), fn); it != std::sregex_iterator(); ++it) {
    const std::string params = (*it)[2];
    std::string sig;
    for (auto p = std::sregex_iterator(params.begin(), params.end(), param); p != std::sregex_iterator(); ++p) {
      const std::string type = (*p)[1];
      sig += type == "i64" || type == "u64" ? 'I' : 'i';  // i32, u32 and wasm32 pointers are i32
    }
    rust[(*it)[1]] = sig + ">" + ((*it)[3] == "i64" ? "I" : "i");
  }
  EXPECT_EQ(rust, host);
}

}  // namespace
}  // namespace gpuwasm::host
