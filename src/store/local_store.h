// LocalStore: the store of a gpuwasm node: metadata plus a directory:
//
//   <dir>/gpuwasm.db   SQLite metadata (functions, versions, tenants, deploy status), unless a
//                      PostgreSQL database is configured (StoreOptions::database)
//   <dir>/blobs/       content-addressed module bytes
//   <dir>/tmp/         blobs being written
//   <dir>/artifacts/   the engine's compiled modules (content-addressed, see wasm/engine.h)
//   <dir>/lock         with SQLite: held (flock) while a process has the store open
//
// With SQLite the directory belongs to one process. With PostgreSQL, several nodes share the
// database and may share the directory (a shared volume): blobs and artifacts are written to a
// temporary name and renamed, so no node sees a half-written file, and a blob is written or
// removed together with its records under the database's lock for that blob.
//
// Opening recovers from a crash at any point of a deploy or delete: leftovers in tmp/ are removed
// (on a shared store only those older than kSharedTemporaryGrace: another node may be writing),
// blobs no function refers to are removed, and a function whose blob is missing is marked failed.
// Functions still "compiling" are listed in the report: their compile was interrupted (or, on a
// shared store, may still run on another node) and must be started again.
//
// Thread-safety: metadata() and blobs() may be used from any thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "store/blob_store.h"
#include "store/store.h"

namespace gpuwasm::store {

struct RecoveryReport {
  size_t temporary_files_removed = 0;
  size_t orphan_blobs_removed = 0;
  std::vector<std::string> failed_missing_blob;   // ids marked failed
  std::vector<std::string> interrupted_compiles;  // ids still "compiling"
};

// $GPUWASM_DATA_DIR, else $XDG_DATA_HOME/gpuwasm, else ~/.local/share/gpuwasm.
std::filesystem::path DefaultStoreDir();

// The store directory a configuration names ([runtime].store), else DefaultStoreDir().
std::filesystem::path StoreDir(const std::filesystem::path& configured);

// Where the store in `store_dir` (empty: DefaultStoreDir()) keeps compiled modules: the artifact
// cache of a server using it, which `gpuwasm compile --config/--store` fills ahead of a deploy.
std::filesystem::path ArtifactsDir(const std::filesystem::path& store_dir);

// How old a temporary file on a shared store must be before a starting node removes it.
inline constexpr std::chrono::minutes kSharedTemporaryGrace{15};

struct StoreOptions {
  std::filesystem::path dir;  // required
  std::string database;       // "" = SQLite in dir; else a PostgreSQL connection string
};

class LocalStore {
 public:
  // Creates the directory when missing. With SQLite, fails when another process has it open.
  static Result<std::unique_ptr<LocalStore>> Open(const StoreOptions& options);
  static Result<std::unique_ptr<LocalStore>> Open(const std::filesystem::path& dir) {
    return Open(StoreOptions{dir, {}});
  }
  ~LocalStore();
  LocalStore(const LocalStore&) = delete;
  LocalStore& operator=(const LocalStore&) = delete;

  Store& metadata() { return *metadata_; }
  BlobStore& blobs() { return blobs_; }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path artifacts_dir() const { return ArtifactsDir(dir_); }
  const RecoveryReport& recovery() const { return recovery_; }
  bool shared() const { return metadata_->shared(); }
  // Where the metadata and the files are, for logs: "sqlite <path>" or "postgresql <host/db>, <dir>".
  std::string description() const;

  // Stores the module bytes, then creates the function's next version (status compiling; the
  // sha256 and size of `f` are filled from `bytes`). A crash in between leaves an orphan blob.
  Result<FunctionRecord> AddFunction(NewFunction f, std::span<const uint8_t> bytes);
  // Deletes a function, then its blob when nothing else refers to it. A crash in between
  // leaves an orphan blob, removed at the next Open.
  Result<bool> DeleteFunction(const std::string& id);

 private:
  LocalStore(std::filesystem::path dir, UniqueFd lock, std::unique_ptr<Store> metadata, BlobStore blobs)
      : dir_(std::move(dir)), lock_(std::move(lock)), metadata_(std::move(metadata)), blobs_(std::move(blobs)) {}
  Status Recover();
  static std::string BlobLockName(std::string_view sha256);

  std::filesystem::path dir_;
  UniqueFd lock_;  // <dir>/lock, flock'ed with SQLite (invalid with PostgreSQL)
  std::unique_ptr<Store> metadata_;
  BlobStore blobs_;
  RecoveryReport recovery_;
};

}  // namespace gpuwasm::store
