// Names for temporary files that no other thread, process or node picks at the same time: on a
// volume shared by several nodes, process ids repeat (every container's server may be pid 1).
#pragma once

#include <filesystem>
#include <string>

namespace gpuwasm {

// 16 hex digits of fresh randomness (getrandom), different on every call.
std::string UniqueSuffix();

// Removes a working directory (and everything in it) when it goes out of scope.
class RemoveOnExit {
 public:
  explicit RemoveOnExit(std::filesystem::path p) : path_(std::move(p)) {}
  ~RemoveOnExit() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;

 private:
  std::filesystem::path path_;
};

}  // namespace gpuwasm
