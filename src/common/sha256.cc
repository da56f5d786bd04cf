#include "common/sha256.h"

#include <openssl/evp.h>

#include <memory>

namespace gpuwasm {

std::string Sha256Hex(std::span<const std::string_view> parts) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  for (std::string_view p : parts) EVP_DigestUpdate(ctx.get(), p.data(), p.size());
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

}  // namespace gpuwasm
