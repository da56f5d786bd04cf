// SHA-256 of byte strings (OpenSSL), as lower-case hex: the content address of modules, PTX and
// compiled artifacts. Thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace gpuwasm {

// Hex digest of the concatenation of `parts`.
std::string Sha256Hex(std::span<const std::string_view> parts);
inline std::string Sha256Hex(std::string_view data) { return Sha256Hex(std::span(&data, 1)); }

}  // namespace gpuwasm
