// Names for temporary files that no other thread, process or node picks at the same time: on a
// volume shared by several nodes, process ids repeat (every container's server may be pid 1).
#pragma once

#include <string>

namespace gpuwasm {

// 16 hex digits of fresh randomness (getrandom), different on every call.
std::string UniqueSuffix();

}  // namespace gpuwasm
