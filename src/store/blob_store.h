// BlobStore: content-addressed files on disk: <root>/blobs/<sha256>. A blob is written to
// <root>/tmp/ first, flushed to disk, then renamed into place, so a reader (or another node on a
// shared volume) never sees a half-written blob, and a crash leaves at most a temporary file,
// which CleanTemporary() removes at the next start. Temporary names carry fresh randomness, so
// nodes writing to one shared volume never collide.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpuwasm::store {

class BlobStore {
 public:
  // Creates <root>/blobs and <root>/tmp when missing.
  static Result<BlobStore> Open(const std::filesystem::path& root);

  // Stores `bytes` and returns their sha256; durable when it returns. Storing bytes that are
  // already there is a no-op.
  Result<std::string> Put(std::span<const uint8_t> bytes);
  // The same, for a caller that has already hashed the bytes (`sha256` must be their digest).
  Status Put(std::span<const uint8_t> bytes, const std::string& sha256);
  // The bytes of a blob; NotFound when absent, IoError when its content no longer matches its
  // hash (damaged on disk).
  Result<std::string> Get(std::string_view sha256) const;
  bool Has(std::string_view sha256) const;
  // Size of a stored blob, or NotFound.
  Result<uint64_t> Size(std::string_view sha256) const;
  Status Remove(std::string_view sha256);
  // The hashes of every stored blob.
  Result<std::vector<std::string>> List() const;
  // Removes leftovers of interrupted writes last modified at least `older_than` ago (0: all);
  // returns how many.
  Result<size_t> CleanTemporary(std::chrono::seconds older_than = std::chrono::seconds{0});

  const std::filesystem::path& root() const { return root_; }

 private:
  explicit BlobStore(std::filesystem::path root) : root_(std::move(root)) {}
  Result<std::filesystem::path> PathOf(std::string_view sha256) const;
  std::filesystem::path root_;
};

}  // namespace gpuwasm::store
