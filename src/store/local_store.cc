#include "store/local_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "common/sha256.h"
#include "store/postgres_store.h"
#include "store/sqlite_store.h"

namespace gpuwasm::store {
namespace fs = std::filesystem;

fs::path DefaultStoreDir() {
  if (const char* d = std::getenv("GPUWASM_DATA_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x != '\0') return fs::path(x) / "gpuwasm";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : ".") / ".local" / "share" / "gpuwasm";
}

fs::path StoreDir(const fs::path& configured) { return configured.empty() ? DefaultStoreDir() : configured; }

fs::path ArtifactsDir(const fs::path& store_dir) { return StoreDir(store_dir) / "artifacts"; }

Result<std::unique_ptr<LocalStore>> LocalStore::Open(const StoreOptions& options) {
  const fs::path& dir = options.dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create store directory " + dir.string() + ": " + ec.message());
  UniqueFd lock;
  Result<std::unique_ptr<Store>> meta = Status::Internal("unset");
  if (options.database.empty()) {
    fs::path lock_path = dir / "lock";
    lock.Reset(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!lock.valid()) return Status::IoError("cannot open " + lock_path.string() + ": " + std::strerror(errno));
    if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
      return Status::Unavailable("store " + dir.string() + " is in use by another gpuwasm process");
    }
    meta = OpenSqliteStore(dir / "gpuwasm.db");
  } else {
    meta = OpenPostgresStore(options.database);
  }
  auto blobs = meta.ok() ? BlobStore::Open(dir) : Result<BlobStore>(meta.status());
  if (!blobs.ok()) return blobs.status();
  std::unique_ptr<LocalStore> store(new LocalStore(dir, std::move(lock), std::move(*meta), std::move(*blobs)));
  GPUWASM_RETURN_IF_ERROR(store->Recover());
  return store;
}

LocalStore::~LocalStore() {
  metadata_.reset();  // closed before the lock (lock_, last) is released
}

std::string LocalStore::description() const {
  if (!shared()) return metadata_->description();
  return metadata_->description() + ", files in " + dir_.string();
}

Status LocalStore::Recover() {
  // On a shared store another node may be writing a temporary file right now.
  std::chrono::seconds grace{0};
  if (shared()) grace = kSharedTemporaryGrace;
  GPUWASM_ASSIGN_OR_RETURN(recovery_.temporary_files_removed, blobs_.CleanTemporary(grace));
  GPUWASM_ASSIGN_OR_RETURN(std::vector<FunctionRecord> functions, metadata_->ListFunctions(std::nullopt));
  std::set<std::string> referenced;
  for (const FunctionRecord& f : functions) {
    referenced.insert(f.sha256);
    Result<uint64_t> size = blobs_.Size(f.sha256);
    if (!size.ok() || *size != f.size) {
      if (f.status != DeployStatus::kFailed) {
        GPUWASM_RETURN_IF_ERROR(metadata_->SetStatus(
            f.id, DeployStatus::kFailed, "the module's bytes are missing from the store (blob " + f.sha256 + ")"));
        recovery_.failed_missing_blob.push_back(f.id);
      }
      continue;
    }
    if (f.status == DeployStatus::kCompiling) recovery_.interrupted_compiles.push_back(f.id);
  }
  GPUWASM_ASSIGN_OR_RETURN(std::vector<std::string> blobs, blobs_.List());
  for (const std::string& sha : blobs) {
    if (referenced.count(sha) != 0) continue;
    // Under the blob's lock, asked again: on a shared store a deploy may have just recorded it.
    GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<StoreLock> lock, metadata_->Lock(BlobLockName(sha)));
    GPUWASM_ASSIGN_OR_RETURN(bool used, metadata_->BlobReferenced(sha));
    if (used) continue;
    GPUWASM_RETURN_IF_ERROR(blobs_.Remove(sha));
    ++recovery_.orphan_blobs_removed;
  }
  return Status::Ok();
}

// A blob and the records that refer to it change together under this lock, so that a delete
// never removes a blob that a deploy (of the same bytes, maybe on another node) just stored.
std::string LocalStore::BlobLockName(std::string_view sha256) { return "blob:" + std::string(sha256); }

Result<FunctionRecord> LocalStore::AddFunction(NewFunction f, std::span<const uint8_t> bytes) {
  f.sha256 = Sha256Hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  f.size = bytes.size();
  GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<StoreLock> lock, metadata_->Lock(BlobLockName(f.sha256)));
  GPUWASM_RETURN_IF_ERROR(blobs_.Put(bytes, f.sha256));
  return metadata_->CreateFunction(f);
}

Result<bool> LocalStore::DeleteFunction(const std::string& id) {
  auto record = metadata_->GetFunction(id);
  if (!record.ok()) return record.status().code() == StatusCode::kNotFound ? Result<bool>(false) : record.status();
  GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<StoreLock> lock, metadata_->Lock(BlobLockName(record->sha256)));
  GPUWASM_ASSIGN_OR_RETURN(bool deleted, metadata_->DeleteFunction(id));
  if (!deleted) return false;
  GPUWASM_ASSIGN_OR_RETURN(bool still_used, metadata_->BlobReferenced(record->sha256));
  if (!still_used) GPUWASM_RETURN_IF_ERROR(blobs_.Remove(record->sha256));
  return true;
}

}  // namespace gpuwasm::store
