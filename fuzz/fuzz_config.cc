// Fuzz target: the TOML configuration (tenants, quotas, tokens, server settings).
#include <cstdint>
#include <string_view>

#include "runtime/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = gpuwasm::runtime::ParseConfig(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.toml");
  if (c.ok()) (void)c->FindTenantByToken("token");
  return 0;
}
