// WindowRanges: where an instance window's buffers go (device::Window), shared by the CPU and CUDA
// windows: first fit in [0, size), each buffer taking the `need` bytes its device lays it out in;
// a freed range merges with its free neighbours. Offsets are the window's. Used by one thread at a
// time, as its window is.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"

namespace gpuwasm::device {

class WindowRanges {
 public:
  explicit WindowRanges(uint64_t size) : size_(size) { free_[0] = size; }

  // The offset of a free range of `need` bytes, now taken; ResourceExhausted naming `bytes` (what
  // the caller asked for) when no free range is that large.
  Result<uint64_t> Take(uint64_t need, uint64_t bytes) {
    auto it = free_.begin();
    while (it != free_.end() && it->second < need) ++it;
    if (it == free_.end()) {
      return Status::ResourceExhausted("no free range of " + std::to_string(bytes) +
                                       " bytes left in the instance's address window of " + std::to_string(size_) +
                                       " bytes");
    }
    const uint64_t off = it->first, len = it->second;
    free_.erase(it);
    if (len > need) free_[off + need] = len - need;
    used_[off] = need;
    return off;
  }

  bool Taken(uint64_t offset) const { return used_.count(offset) != 0; }

  // Gives back the range taken at `offset` (nothing when none was).
  void Give(uint64_t offset) {
    auto it = used_.find(offset);
    if (it == used_.end()) return;
    uint64_t off = offset, len = it->second;
    used_.erase(it);
    auto next = free_.lower_bound(off);
    if (next != free_.end() && next->first == off + len) {
      len += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        prev->second += len;
        return;
      }
    }
    free_[off] = len;
  }

  // Calls f(offset) for each range taken.
  template <class F>
  void ForEachTaken(F&& f) const {
    for (const auto& [off, len] : used_) f(off);
  }

 private:
  uint64_t size_;
  std::map<uint64_t, uint64_t> free_;  // offset -> length of free ranges
  std::map<uint64_t, uint64_t> used_;  // offset -> length of taken ones
};

}  // namespace gpuwasm::device
