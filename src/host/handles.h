// HandleTable<T>: the per-instance map from guest handles (positive i32) to host objects.
//
// A handle packs a 2-bit type tag, a 13-bit generation and a 16-bit slot index. Freeing a slot
// bumps its generation, so a freed handle never becomes valid again (until 8192 reuses of the same
// slot); a handle of another type or of another instance resolves to nothing (tables are per
// instance: a forged handle can only ever name this instance's own objects). Single-threaded: owned
// by the instance's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace gpuwasm::host {

template <class T>
class HandleTable {
 public:
  HandleTable(uint32_t type_tag, uint32_t seed) : tag_(type_tag & 3), seed_(seed) {}

  // The new object's handle (> 0), or 0 when the table is full (65535 live objects).
  int32_t Add(T value) {
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      if (slots_.size() >= 65535) return 0;
      index = static_cast<uint32_t>(slots_.size());
      slots_.push_back({std::nullopt, (seed_ + index * 2654435761u) & 0x1fff, 0});
    }
    Slot& s = slots_[index];
    s.value = std::move(value);
    s.handle = Encode(index);
    ++live_;
    return s.handle;
  }

  // Inline and branch-light: every launch resolves three handles.
  T* Get(int32_t handle) {
    auto index = Decode(handle);
    return index ? &*slots_[*index].value : nullptr;
  }

  // Removes the object; false for an unknown, freed or foreign handle.
  bool Remove(int32_t handle) {
    auto index = Decode(handle);
    if (!index) return false;
    slots_[*index].value.reset();
    slots_[*index].generation = (slots_[*index].generation + 1) & 0x1fff;
    slots_[*index].handle = 0;
    free_.push_back(*index);
    --live_;
    return true;
  }

  size_t size() const { return live_; }

  template <class F>
  void ForEach(F&& f) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].value) f(Encode(static_cast<uint32_t>(i)), *slots_[i].value);
    }
  }

  void Clear() {
    slots_.clear();
    free_.clear();
    live_ = 0;
  }

 private:
  struct Slot {
    std::optional<T> value;
    uint32_t generation;
    int32_t handle;  // the live object's handle; 0 while the slot is free
  };

  int32_t Encode(uint32_t index) const {
    return static_cast<int32_t>((tag_ << 29) | (slots_[index].generation << 16) | (index + 1));
  }

  // A handle is valid when its slot is live and was handed out as exactly this value (tag,
  // generation and index in one comparison; a free slot holds 0, which no handle equals).
  std::optional<uint32_t> Decode(int32_t handle) const {
    const uint32_t index = (static_cast<uint32_t>(handle) & 0xffff) - 1;  // index 0 wraps to "too large"
    if (index >= slots_.size() || slots_[index].handle != handle) return std::nullopt;
    return index;
  }

  uint32_t tag_;
  uint32_t seed_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace gpuwasm::host
