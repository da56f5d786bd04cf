#include "store/sqlite_store.h"

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include "common/unique_name.h"

namespace gpuwasm::store {
namespace {

constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tenants (
  name TEXT PRIMARY KEY,
  created_ms INTEGER NOT NULL
);
-- The highest version ever given to a name, so versions are never reused after a delete.
CREATE TABLE IF NOT EXISTS function_names (
  tenant TEXT NOT NULL,
  name TEXT NOT NULL,
  last_version INTEGER NOT NULL,
  PRIMARY KEY (tenant, name)
);
CREATE TABLE IF NOT EXISTS functions (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL,
  entry TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('compiling', 'ready', 'failed')),
  error TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  UNIQUE (tenant, name, version)
);
CREATE INDEX IF NOT EXISTS functions_by_sha ON functions (sha256);
)sql";

// One prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Status prepared() const { return rc_ == SQLITE_OK ? Status::Ok() : Error("prepare"); }
  Statement& Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // SQLITE_ROW: true; SQLITE_DONE: false; else an error.
  Result<bool> Step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return Error("step");
  }
  std::string Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p != nullptr ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  Status Error(const char* what) const {
    return Status::IoError(std::string("sqlite ") + what + ": " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

constexpr const char* kColumns = "id, tenant, name, version, sha256, size, entry, status, error, created_ms";

Result<FunctionRecord> ReadRecord(const Statement& st) {
  FunctionRecord r;
  r.id = st.Text(0);
  r.tenant = st.Text(1);
  r.name = st.Text(2);
  r.version = st.Int(3);
  r.sha256 = st.Text(4);
  r.size = static_cast<uint64_t>(st.Int(5));
  r.entry = st.Text(6);
  GPUWASM_ASSIGN_OR_RETURN(r.status, ParseDeployStatus(st.Text(7)));
  r.error = st.Text(8);
  r.created_ms = st.Int(9);
  return r;
}

// Named locks within this process: a SQLite store is used by one process at a time (LocalStore
// holds a file lock), so that is every user.
class LocalLocks {
 public:
  class Held final : public StoreLock {
   public:
    Held(LocalLocks* owner, std::string key) : owner_(owner), key_(std::move(key)) {}
    ~Held() override { owner_->Release(key_); }

   private:
    LocalLocks* owner_;
    std::string key_;
  };
  std::unique_ptr<StoreLock> Acquire(std::string_view key) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return held_.count(key) == 0; });
    held_.emplace(key);
    return std::make_unique<Held>(this, std::string(key));
  }

 private:
  void Release(const std::string& key) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_.erase(key);
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string, std::less<>> held_;
};

class SqliteStore final : public Store {
 public:
  SqliteStore(sqlite3* db, std::filesystem::path path) : db_(db), path_(std::move(path)) {}
  ~SqliteStore() override { sqlite3_close_v2(db_); }

  Status Init() {
    GPUWASM_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
    GPUWASM_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
    GPUWASM_RETURN_IF_ERROR(Exec("PRAGMA foreign_keys=ON"));
    sqlite3_busy_timeout(db_, 5000);
    GPUWASM_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Status s = Exec(kSchema);
    if (s.ok()) {
      Statement st(db_, "SELECT value FROM meta WHERE key = 'schema_version'");
      GPUWASM_RETURN_IF_ERROR(st.prepared());
      Result<bool> row = st.Step();
      if (!row.ok()) {
        s = row.status();
      } else if (*row && std::stoi(st.Text(0)) > kSchemaVersion) {
        s = Status::Unsupported("the store's schema version " + st.Text(0) + " is newer than this gpuwasm's (" +
                                std::to_string(kSchemaVersion) + "): upgrade gpuwasm");
      } else if (!*row) {
        s = Exec("INSERT INTO meta (key, value) VALUES ('schema_version', '" + std::to_string(kSchemaVersion) + "')");
      }
    }
    if (!s.ok()) {
      (void)Exec("ROLLBACK");
      return s;
    }
    return Exec("COMMIT");
  }

  Status AddTenant(std::string_view tenant) override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement st(db_, "INSERT OR IGNORE INTO tenants (name, created_ms) VALUES (?1, ?2)");
    GPUWASM_RETURN_IF_ERROR(st.prepared());
    st.Bind(1, tenant).Bind(2, NowUnixMs());
    return st.Step().status();
  }

  Result<std::vector<std::string>> ListTenants() override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement st(db_, "SELECT name FROM tenants ORDER BY name");
    GPUWASM_RETURN_IF_ERROR(st.prepared());
    std::vector<std::string> out;
    for (;;) {
      GPUWASM_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.push_back(st.Text(0));
    }
    return out;
  }

  Result<FunctionRecord> CreateFunction(const NewFunction& f) override {
    std::lock_guard<std::mutex> lock(mu_);
    GPUWASM_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Result<FunctionRecord> r = CreateLocked(f);
    if (!r.ok()) {
      (void)Exec("ROLLBACK");
      return r;
    }
    GPUWASM_RETURN_IF_ERROR(Exec("COMMIT"));
    return r;
  }

  Status SetStatus(std::string_view id, DeployStatus status, std::string_view error) override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement st(db_, "UPDATE functions SET status = ?2, error = ?3 WHERE id = ?1");
    GPUWASM_RETURN_IF_ERROR(st.prepared());
    st.Bind(1, id).Bind(2, DeployStatusName(status)).Bind(3, error);
    GPUWASM_RETURN_IF_ERROR(st.Step().status());
    if (sqlite3_changes(db_) == 0) return Status::NotFound("no function with id " + std::string(id));
    return Status::Ok();
  }

  Result<FunctionRecord> GetFunction(std::string_view id) override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement st(db_, (std::string("SELECT ") + kColumns + " FROM functions WHERE id = ?1").c_str());
    GPUWASM_RETURN_IF_ERROR(st.prepared());
    st.Bind(1, id);
    GPUWASM_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return Status::NotFound("no function with id " + std::string(id));
    return ReadRecord(st);
  }

  Result<std::vector<FunctionRecord>> ListFunctions(std::optional<std::string_view> tenant) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string sql = std::string("SELECT ") + kColumns + " FROM functions" + (tenant ? " WHERE tenant = ?1" : "") +
                      " ORDER BY tenant, name, version";
    Statement st(db_, sql.c_str());
    GPUWASM_RETURN_IF_ERROR(st.prepared());
    if (tenant) st.Bind(1, *tenant);
    return ReadAll(st);
  }

  Result<std::vector<FunctionRecord>> Versions(std::string_view tenant, std::string_view name) override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement st(db_, (std::string("SELECT ") + kColumns +
                       " FROM functions WHERE tenant = ?1 AND name = ?2 ORDER BY version DESC")
                          .c_str());
    GPUWASM_RETURN_IF_ERROR(st.prepared());
    st.Bind(1, tenant).Bind(2, name);
    return ReadAll(st);
  }

  Result<bool> DeleteFunction(std::string_view id) override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement st(db_, "DELETE FROM functions WHERE id = ?1");
    GPUWASM_RETURN_IF_ERROR(st.prepared());
    st.Bind(1, id);
    GPUWASM_RETURN_IF_ERROR(st.Step().status());
    return sqlite3_changes(db_) > 0;
  }

  Result<bool> BlobReferenced(std::string_view sha256) override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement st(db_, "SELECT 1 FROM functions WHERE sha256 = ?1 LIMIT 1");
    GPUWASM_RETURN_IF_ERROR(st.prepared());
    st.Bind(1, sha256);
    return st.Step();
  }

  Result<std::unique_ptr<StoreLock>> Lock(std::string_view key) override { return locks_.Acquire(key); }
  bool shared() const override { return false; }
  std::string description() const override { return "sqlite " + path_.string(); }

 private:
  Status Exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err != nullptr ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      return Status::IoError("sqlite: " + msg);
    }
    return Status::Ok();
  }

  Result<std::vector<FunctionRecord>> ReadAll(Statement& st) {
    std::vector<FunctionRecord> out;
    for (;;) {
      GPUWASM_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      GPUWASM_ASSIGN_OR_RETURN(FunctionRecord r, ReadRecord(st));
      out.push_back(std::move(r));
    }
    return out;
  }

  Result<FunctionRecord> CreateLocked(const NewFunction& f) {
    Statement bump(db_,
                   "INSERT INTO function_names (tenant, name, last_version) VALUES (?1, ?2, 1) "
                   "ON CONFLICT (tenant, name) DO UPDATE SET last_version = last_version + 1 "
                   "RETURNING last_version");
    GPUWASM_RETURN_IF_ERROR(bump.prepared());
    bump.Bind(1, f.tenant).Bind(2, f.name);
    GPUWASM_ASSIGN_OR_RETURN(bool row, bump.Step());
    if (!row) return Status::Internal("sqlite: no version returned");
    FunctionRecord r;
    r.id = NewFunctionId();
    r.tenant = f.tenant;
    r.name = f.name;
    r.version = bump.Int(0);
    r.sha256 = f.sha256;
    r.size = f.size;
    r.entry = f.entry;
    r.status = DeployStatus::kCompiling;
    r.created_ms = NowUnixMs();
    Statement ins(db_,
                  "INSERT INTO functions (id, tenant, name, version, sha256, size, entry, status, error, created_ms) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'compiling', '', ?8)");
    GPUWASM_RETURN_IF_ERROR(ins.prepared());
    ins.Bind(1, r.id).Bind(2, r.tenant).Bind(3, r.name).Bind(4, r.version).Bind(5, r.sha256);
    ins.Bind(6, static_cast<int64_t>(r.size)).Bind(7, r.entry).Bind(8, r.created_ms);
    GPUWASM_RETURN_IF_ERROR(ins.Step().status());
    return r;
  }

  std::mutex mu_;  // one connection: statements and transactions are serialized
  sqlite3* db_;
  std::filesystem::path path_;
  LocalLocks locks_;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::filesystem::path& path) {
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return Status::IoError("cannot open store database " + path.string() + ": " + msg);
  }
  auto store = std::make_unique<SqliteStore>(db, path);
  Status s = store->Init();
  if (!s.ok()) return Status(s.code(), "store database " + path.string() + ": " + s.message());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace gpuwasm::store
