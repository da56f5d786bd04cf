// Names and numbers in messages: what an error about a missing name shows of the names there are,
// and addresses as messages write them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuwasm {

// "a, b, c": the names sorted, at most `shown` of them, then ", ... (N in all)" when there are more.
std::string ListNames(std::vector<std::string> names, size_t shown = 20);

// "0x1f00": an address or bit pattern in a message (lower-case hex, no padding).
std::string Hex(uint64_t v);

}  // namespace gpuwasm
