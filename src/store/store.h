// Store: the metadata of deployed functions (which tenant, name, version, module hash, entry
// point, deploy status). Module bytes themselves live in a BlobStore, addressed by sha256.
//
// A function is a name plus versions: every deploy of a name creates the next version, with its
// own id ("fn_" + 16 hex digits). Version numbers of a name are never reused, even after delete.
// The SQLite implementation (store/sqlite_store.h) is the embedded default, for one process; the
// PostgreSQL one (store/postgres_store.h) is shared by every node of a cluster.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpuwasm::store {

enum class DeployStatus : uint8_t { kCompiling = 0, kReady = 1, kFailed = 2 };

// "compiling", "ready", "failed".
std::string_view DeployStatusName(DeployStatus s);
Result<DeployStatus> ParseDeployStatus(std::string_view name);

struct FunctionRecord {
  std::string id;
  std::string tenant;
  std::string name;
  int64_t version = 0;
  std::string sha256;  // of the module bytes: the key of its blob
  uint64_t size = 0;   // module bytes
  std::string entry;   // export to call; "" = _start, else run
  DeployStatus status = DeployStatus::kCompiling;
  std::string error;       // why compiling failed (status failed)
  int64_t created_ms = 0;  // Unix time, milliseconds

  friend bool operator==(const FunctionRecord&, const FunctionRecord&) = default;
};

struct NewFunction {
  std::string tenant;
  std::string name;
  std::string sha256;
  uint64_t size = 0;
  std::string entry;
};

// A named lock, held until destroyed. See Store::Lock.
class StoreLock {
 public:
  virtual ~StoreLock() = default;
};

class Store {
 public:
  virtual ~Store() = default;

  // Records that a tenant exists (idempotent).
  virtual Status AddTenant(std::string_view tenant) = 0;
  virtual Result<std::vector<std::string>> ListTenants() = 0;

  // Creates the next version of (tenant, name) with status compiling.
  virtual Result<FunctionRecord> CreateFunction(const NewFunction& f) = 0;
  // NotFound when the id is unknown.
  virtual Status SetStatus(std::string_view id, DeployStatus status, std::string_view error) = 0;
  virtual Result<FunctionRecord> GetFunction(std::string_view id) = 0;
  // Every version of every function of `tenant` (all tenants when nullopt), by name then version.
  virtual Result<std::vector<FunctionRecord>> ListFunctions(std::optional<std::string_view> tenant) = 0;
  // Versions of one name, newest first.
  virtual Result<std::vector<FunctionRecord>> Versions(std::string_view tenant, std::string_view name) = 0;
  // False when the id was not there.
  virtual Result<bool> DeleteFunction(std::string_view id) = 0;
  // Whether any function still refers to the blob.
  virtual Result<bool> BlobReferenced(std::string_view sha256) = 0;

  // Waits for, then holds, the lock named `key` among every user of this store: the threads of
  // this process and, for a shared database, the processes of every node (a node that dies
  // releases its locks). Used to write or remove a blob together with its records, and to
  // compile a module once.
  virtual Result<std::unique_ptr<StoreLock>> Lock(std::string_view key) = 0;
  // Whether processes on other nodes may use this store at the same time.
  virtual bool shared() const = 0;
  // "sqlite <path>" or "postgresql <host/db>": for logs, never with a password.
  virtual std::string description() const = 0;
};

// A fresh function id: "fn_" and 16 random hex digits.
std::string NewFunctionId();
// Unix time in milliseconds (FunctionRecord::created_ms, tenants' creation time).
int64_t NowUnixMs();

}  // namespace gpuwasm::store
