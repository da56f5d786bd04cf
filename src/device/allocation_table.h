// AllocationTable: a context's live allocations and the quota they count against, shared by the
// CPU and CUDA devices so that both keep the same books and say the same things: the quota
// refusal, the free of something that is not a live allocation, the range outside every
// allocation. `Payload` is what a device keeps beside an allocation's size (the CPU device's host
// memory; the CUDA device whether a window placed it). Not thread-safe: the context's lock
// guards it.
#pragma once

#include <concepts>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>

#include "common/names.h"
#include "common/status.h"
#include "device/device.h"

namespace gpuwasm::device {

// ResourceExhausted: `bytes` more would pass `quota` with `used` in use (`note` ends the
// parenthesis: ", N of them held by ...").
inline Status QuotaExceeded(uint64_t bytes, uint64_t quota, uint64_t used, std::string_view note = {}) {
  return Status::ResourceExhausted("allocating " + std::to_string(bytes) +
                                   " bytes would exceed the context's quota of " + std::to_string(quota) + " bytes (" +
                                   std::to_string(used) + " in use" + std::string(note) + ")");
}

// InvalidArgument for a free of `ptr`, which is not a live allocation (`of`: " of the window").
inline Status NotALiveAllocation(DevicePtr ptr, std::string_view of = {}) {
  return Status::InvalidArgument("free of " + Hex(ptr) + ", which is not a live allocation" + std::string(of));
}

// OutOfRange for a copy, memset or view of [ptr, ptr + bytes) outside every live allocation.
inline Status NotInsideAnAllocation(DevicePtr ptr, uint64_t bytes) {
  return Status::OutOfRange("device range [" + Hex(ptr) + ", +" + std::to_string(bytes) +
                            ") is not inside one live allocation");
}

template <class Payload>
class AllocationTable {
 public:
  struct Entry {
    uint64_t size = 0;
    Payload payload{};
  };
  using Map = std::map<DevicePtr, Entry>;

  explicit AllocationTable(uint64_t quota) : quota_(quota) {}

  uint64_t quota() const { return quota_; }
  // Bytes charged: live allocations plus what a caller charged without an entry (Charge).
  uint64_t used() const { return used_; }

  // Charges `bytes` against the quota, `beside` more being held elsewhere (the CPU device's host
  // memory of modules and launches); QuotaExceeded when they would not fit.
  Status Charge(uint64_t bytes, uint64_t beside = 0, std::string_view note = {}) {
    const uint64_t in_use = used_ + beside;
    if (bytes > quota_ || in_use > quota_ - bytes) return QuotaExceeded(bytes, quota_, in_use, note);
    used_ += bytes;
    return Status::Ok();
  }
  // Charges bytes already spent, whatever the quota says (memory a device could not give back).
  void Hold(uint64_t bytes) { used_ += bytes; }
  // Gives back a charge (never below zero).
  void Uncharge(uint64_t bytes) { used_ -= bytes < used_ ? bytes : used_; }

  // Records an allocation whose bytes were charged.
  void Insert(DevicePtr p, uint64_t size, Payload payload) { map_[p] = Entry{size, std::move(payload)}; }

  // Removes the allocation at `p` and its charge; NotALiveAllocation when there is none (or when
  // `accept` refuses its payload).
  template <std::predicate<const Payload&> Accept>
  Result<Entry> Remove(DevicePtr p, Accept&& accept, std::string_view of = {}) {
    auto it = map_.find(p);
    if (it == map_.end() || !accept(it->second.payload)) return NotALiveAllocation(p, of);
    Entry e = std::move(it->second);
    map_.erase(it);
    Uncharge(e.size);
    return e;
  }
  Result<Entry> Remove(DevicePtr p, std::string_view of = {}) {
    return Remove(
        p, [](const Payload&) { return true; }, of);
  }

  // Remove() for teardown paths, which must not throw: no error message, only whether there was
  // such an allocation.
  template <std::predicate<const Payload&> Accept>
  bool Erase(DevicePtr p, Accept&& accept) noexcept {
    auto it = map_.find(p);
    if (it == map_.end() || !accept(it->second.payload)) return false;
    Uncharge(it->second.size);
    map_.erase(it);
    return true;
  }

  // The allocation holding all of [ptr, ptr + bytes), or nullptr.
  const typename Map::value_type* Find(DevicePtr ptr, uint64_t bytes) const {
    auto it = map_.upper_bound(ptr);
    if (it == map_.begin()) return nullptr;
    --it;
    const uint64_t off = ptr - it->first;
    return off <= it->second.size && bytes <= it->second.size - off ? &*it : nullptr;
  }

  // Whether [at, at + bytes) overlaps a live allocation.
  bool Overlaps(DevicePtr at, uint64_t bytes) const {
    auto next = map_.lower_bound(at);
    bool clash = next != map_.end() && next->first - at < bytes;
    if (next != map_.begin()) clash |= at - std::prev(next)->first < std::prev(next)->second.size;
    return clash;
  }

  // Forgets every allocation and its charge (their memory went with a reset context); other charges stay.
  void Clear() {
    for (const auto& [p, e] : map_) Uncharge(e.size);
    map_.clear();
  }

  const Map& entries() const { return map_; }
  size_t size() const { return map_.size(); }

 private:
  uint64_t quota_;
  uint64_t used_ = 0;
  Map map_;
};

}  // namespace gpuwasm::device
