// Lists of names in messages: what an error about a missing name shows of the names there are.
#pragma once

#include <string>
#include <vector>

namespace gpuwasm {

// "a, b, c": the names sorted, at most `shown` of them, then ", ... (N in all)" when there are more.
std::string ListNames(std::vector<std::string> names, size_t shown = 20);

}  // namespace gpuwasm
