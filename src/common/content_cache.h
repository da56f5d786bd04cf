// ContentCache<V>: values by content key (a hash of what they were made from), each made once.
// Concurrent Get()s of one key share the one make() in flight (single-flight); a failed make() is
// not kept, so the next Get() tries again. Two ways to keep what was made:
//  - Keep::kWhileHeld: only while some caller holds the value (the cache's reference is weak).
//    Entries of released values are swept whenever the map has doubled since the last sweep, so
//    endless distinct keys leave nothing behind.
//  - Keep::kRecent: the `capacity` most recently used values, held by the cache; the least
//    recently used goes first.
// Used for every content-hash cache: a tenant's device modules, each device's modules, compiled
// guest modules and their artifacts, and the CPU device's native kernels.
// Thread-safe; make() runs without the cache's lock.
#pragma once

#include <cstdint>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/status.h"

namespace gpuwasm {

template <typename V>
class ContentCache {
 public:
  using Value = std::shared_ptr<V>;
  enum class Keep : uint8_t { kWhileHeld, kRecent };

  explicit ContentCache(Keep keep = Keep::kWhileHeld, size_t capacity = 0) : keep_(keep), capacity_(capacity) {}
  ContentCache(const ContentCache&) = delete;
  ContentCache& operator=(const ContentCache&) = delete;

  // The value for `key`: a kept one, the one being made now, or what `make` (a callable returning
  // Result<Value>) makes in this call.
  template <typename Make>
  Result<Value> Get(const std::string& key, Make&& make) {
    std::promise<Result<Value>> promise;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (Value v = FindLocked(key)) return v;
      if (auto it = in_flight_.find(key); it != in_flight_.end()) {
        std::shared_future<Result<Value>> made_elsewhere = it->second;
        lock.unlock();
        return made_elsewhere.get();
      }
      in_flight_.emplace(key, promise.get_future().share());
    }
    auto finish = [&](const Result<Value>& result) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (result.ok()) InsertLocked(key, *result);
        in_flight_.erase(key);
      }
      promise.set_value(result);
    };
    try {
      Result<Value> result = make();
      finish(result);
      return result;
    } catch (...) {
      finish(Status::Internal("making a cached value failed"));  // the waiters must not wait forever
      throw;
    }
  }

  // The kept value for `key`, or nullptr (a kRecent hit counts as a use).
  Value Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return FindLocked(key);
  }

  // Forgets `key` (a value made but found damaged); holders keep theirs.
  void Erase(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return;
    if (keep_ == Keep::kRecent) uses_.erase(it->second.use);
    map_.erase(it);
  }

  // Values kept now (with kWhileHeld, entries of released values are dropped first).
  size_t Live() {
    std::lock_guard<std::mutex> lock(mu_);
    SweepLocked();
    return map_.size();
  }

  // Entries in the map, those of released values included (for tests of the sweep).
  size_t entries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }

 private:
  struct Entry {
    std::weak_ptr<V> weak;                          // kWhileHeld
    Value strong;                                   // kRecent
    typename std::list<std::string>::iterator use;  // kRecent: its place in uses_
  };

  Value FindLocked(const std::string& key) {
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    if (keep_ == Keep::kWhileHeld) return it->second.weak.lock();
    uses_.splice(uses_.begin(), uses_, it->second.use);
    return it->second.strong;
  }

  void InsertLocked(const std::string& key, const Value& v) {
    if (keep_ == Keep::kWhileHeld) {
      map_[key].weak = v;
      if (map_.size() >= sweep_at_) {
        SweepLocked();
        sweep_at_ = std::max<size_t>(kFirstSweep, map_.size() * 2);
      }
      return;
    }
    if (auto it = map_.find(key); it != map_.end()) {
      it->second.strong = v;
      uses_.splice(uses_.begin(), uses_, it->second.use);
      return;
    }
    uses_.push_front(key);
    map_[key] = Entry{{}, v, uses_.begin()};
    while (map_.size() > capacity_ && !uses_.empty()) {
      map_.erase(uses_.back());
      uses_.pop_back();
    }
  }

  void SweepLocked() {
    if (keep_ == Keep::kWhileHeld) std::erase_if(map_, [](const auto& e) { return e.second.weak.expired(); });
  }

  static constexpr size_t kFirstSweep = 64;
  const Keep keep_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> map_;
  std::list<std::string> uses_;  // kRecent: most recently used first
  std::map<std::string, std::shared_future<Result<Value>>> in_flight_;
  size_t sweep_at_ = kFirstSweep;
};

}  // namespace gpuwasm
