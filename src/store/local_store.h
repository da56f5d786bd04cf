// LocalStore: the store of one gpuwasm node in one directory:
//
//   <dir>/gpuwasm.db   SQLite metadata (functions, versions, tenants, deploy status)
//   <dir>/blobs/       content-addressed module bytes
//   <dir>/tmp/         blobs being written
//   <dir>/artifacts/   the engine's compiled modules (content-addressed, see wasm/engine.h)
//   <dir>/lock         held (flock) while a process has the store open
//
// Opening recovers from a crash at any point of a deploy or delete: leftovers in tmp/ are removed,
// blobs no function refers to are removed, and a function whose blob is missing is marked failed.
// Functions still "compiling" are listed in the report: their compile was interrupted and must be
// started again.
//
// Thread-safety: metadata() and blobs() may be used from any thread.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "store/blob_store.h"
#include "store/store.h"

namespace gpuwasm::store {

struct RecoveryReport {
  size_t temporary_files_removed = 0;
  size_t orphan_blobs_removed = 0;
  std::vector<std::string> failed_missing_blob;  // ids marked failed
  std::vector<std::string> interrupted_compiles;  // ids still "compiling"
};

// $GPUWASM_DATA_DIR, else $XDG_DATA_HOME/gpuwasm, else ~/.local/share/gpuwasm.
std::filesystem::path DefaultStoreDir();

class LocalStore {
 public:
  // Creates the directory when missing. Fails when another process has it open.
  static Result<std::unique_ptr<LocalStore>> Open(const std::filesystem::path& dir);
  ~LocalStore();
  LocalStore(const LocalStore&) = delete;
  LocalStore& operator=(const LocalStore&) = delete;

  Store& metadata() { return *metadata_; }
  BlobStore& blobs() { return blobs_; }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path artifacts_dir() const { return dir_ / "artifacts"; }
  const RecoveryReport& recovery() const { return recovery_; }

  // Stores the module bytes, then creates the function's next version (status compiling; the
  // sha256 and size of `f` are filled from `bytes`). A crash in between leaves an orphan blob.
  Result<FunctionRecord> AddFunction(NewFunction f, std::span<const uint8_t> bytes);
  // Deletes a function, then its blob when nothing else refers to it. A crash in between
  // leaves an orphan blob, removed at the next Open.
  Result<bool> DeleteFunction(const std::string& id);

 private:
  LocalStore(std::filesystem::path dir, int lock_fd, std::unique_ptr<Store> metadata, BlobStore blobs)
      : dir_(std::move(dir)), lock_fd_(lock_fd), metadata_(std::move(metadata)), blobs_(std::move(blobs)) {}
  Status Recover();

  std::filesystem::path dir_;
  int lock_fd_;
  std::unique_ptr<Store> metadata_;
  BlobStore blobs_;
  RecoveryReport recovery_;
  std::mutex blob_mu_;  // a blob is not removed between another deploy's Put and its record
};

}  // namespace gpuwasm::store
