#include "store/postgres_store.h"

#include <libpq-fe.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <regex>
#include <vector>

#include "common/sha256.h"

namespace gpuwasm::store {
namespace {

constexpr int kSchemaVersion = 1;
constexpr size_t kPoolSize = 4;
// pg_advisory_xact_lock key that serializes schema creation among nodes starting together.
constexpr const char* kSchemaLockKey = "7164419395741902437";

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS gpuwasm_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS gpuwasm_tenants (
  name TEXT PRIMARY KEY,
  created_ms BIGINT NOT NULL
);
-- The highest version ever given to a name, so versions are never reused after a delete.
CREATE TABLE IF NOT EXISTS gpuwasm_function_names (
  tenant TEXT NOT NULL,
  name TEXT NOT NULL,
  last_version BIGINT NOT NULL,
  PRIMARY KEY (tenant, name)
);
CREATE TABLE IF NOT EXISTS gpuwasm_functions (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  name TEXT NOT NULL,
  version BIGINT NOT NULL,
  sha256 TEXT NOT NULL,
  size BIGINT NOT NULL,
  entry TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('compiling', 'ready', 'failed')),
  error TEXT NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL,
  UNIQUE (tenant, name, version)
);
CREATE INDEX IF NOT EXISTS gpuwasm_functions_by_sha ON gpuwasm_functions (sha256);
)sql";

// A query result, cleared on scope exit.
class PgResult {
 public:
  explicit PgResult(PGresult* r) : r_(r) {}
  ~PgResult() { PQclear(r_); }
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;

  PGresult* raw() const { return r_; }
  int rows() const { return PQntuples(r_); }
  std::string Text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
  }
  int64_t Int(int row, int col) const { return std::stoll(Text(row, col)); }
  // Rows changed by an INSERT, UPDATE or DELETE.
  int64_t changed() const {
    const char* n = PQcmdTuples(r_);
    return *n != '\0' ? std::stoll(n) : 0;
  }

 private:
  PGresult* r_;
};

// libpq's messages end in a newline.
std::string Message(const char* text) {
  std::string msg = text;
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return msg;
}

Status ConnectionError(PGconn* c, std::string_view what) {
  std::string msg = c != nullptr ? Message(PQerrorMessage(c)) : "out of memory";
  return Status::Unavailable("postgresql: " + std::string(what) + ": " + msg);
}

// A connection, closed (PQfinish) when its owner goes.
struct PgFinish {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using PgConnection = std::unique_ptr<PGconn, PgFinish>;

Result<PgConnection> Connect(const std::string& conninfo) {
  PgConnection c(PQconnectdb(conninfo.c_str()));
  if (c == nullptr || PQstatus(c.get()) != CONNECTION_OK) {
    return ConnectionError(c.get(), "cannot connect to " + RedactConninfo(conninfo));
  }
  // Notices (e.g. "relation already exists, skipping") are not errors: keep them off stderr.
  PQsetNoticeProcessor(
      c.get(), [](void*, const char*) {}, nullptr);
  return c;
}

// Runs one statement with text parameters. A connection that dropped (the server restarted, a
// proxy closed it) is re-established once and the statement retried: every statement here is a
// single atomic one, so a retry after a failure to connect cannot apply it twice.
Result<PgResult> Exec(PGconn* c, const char* sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  for (int attempt = 0;; ++attempt) {
    if (PQstatus(c) != CONNECTION_OK) {
      PQreset(c);
      if (PQstatus(c) != CONNECTION_OK) return ConnectionError(c, "the connection to the server is lost");
    }
    // Without parameters, the simple protocol: it takes several statements at once (the schema).
    PgResult r(values.empty() ? PQexec(c, sql)
                              : PQexecParams(c, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                                             nullptr, 0));
    ExecStatusType st = PQresultStatus(r.raw());
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    if (attempt == 0 && PQstatus(c) != CONNECTION_OK) continue;  // dropped before the statement ran
    std::string msg = Message(PQresultErrorMessage(r.raw()));
    if (PQstatus(c) != CONNECTION_OK) return Status::Unavailable("postgresql: " + msg);
    return Status::IoError("postgresql: " + msg);
  }
}

// A 64-bit advisory-lock key from a lock name.
std::string LockKey(std::string_view name) {
  std::string h = Sha256Hex(std::string("gpuwasm-lock:") + std::string(name));
  uint64_t v = std::stoull(h.substr(0, 16), nullptr, 16);
  return std::to_string(static_cast<int64_t>(v));
}

Result<FunctionRecord> ReadRecord(const PgResult& r, int row) {
  FunctionRecord f;
  f.id = r.Text(row, 0);
  f.tenant = r.Text(row, 1);
  f.name = r.Text(row, 2);
  f.version = r.Int(row, 3);
  f.sha256 = r.Text(row, 4);
  f.size = static_cast<uint64_t>(r.Int(row, 5));
  f.entry = r.Text(row, 6);
  GPUWASM_ASSIGN_OR_RETURN(f.status, ParseDeployStatus(r.Text(row, 7)));
  f.error = r.Text(row, 8);
  f.created_ms = r.Int(row, 9);
  return f;
}

Result<std::vector<FunctionRecord>> ReadAll(const PgResult& r) {
  std::vector<FunctionRecord> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    GPUWASM_ASSIGN_OR_RETURN(FunctionRecord f, ReadRecord(r, i));
    out.push_back(std::move(f));
  }
  return out;
}

// An advisory lock on a connection of its own: unlocking is closing it.
class AdvisoryLock final : public StoreLock {
 public:
  explicit AdvisoryLock(PgConnection c) : c_(std::move(c)) {}
  PGconn* connection() const { return c_.get(); }

 private:
  PgConnection c_;
};

class PostgresStore final : public Store {
 public:
  explicit PostgresStore(std::string conninfo) : conninfo_(std::move(conninfo)) {}

  Status Init() {
    return WithConnection([&](PGconn* c) -> Status {
      GPUWASM_RETURN_IF_ERROR(Exec(c, "BEGIN", {}).status());
      Status s = InitLocked(c);
      if (!s.ok()) {
        (void)Exec(c, "ROLLBACK", {});
        return s;
      }
      return Exec(c, "COMMIT", {}).status();
    });
  }

  Status AddTenant(std::string_view tenant) override {
    return Run("INSERT INTO gpuwasm_tenants (name, created_ms) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
               {std::string(tenant), std::to_string(NowUnixMs())})
        .status();
  }

  Result<std::vector<std::string>> ListTenants() override {
    GPUWASM_ASSIGN_OR_RETURN(PgResult r, Run("SELECT name FROM gpuwasm_tenants ORDER BY name", {}));
    std::vector<std::string> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(r.Text(i, 0));
    return out;
  }

  Result<FunctionRecord> CreateFunction(const NewFunction& f) override {
    // One statement: the version bump and the new row commit together or not at all.
    FunctionRecord rec;
    rec.id = NewFunctionId();
    rec.tenant = f.tenant;
    rec.name = f.name;
    rec.sha256 = f.sha256;
    rec.size = f.size;
    rec.entry = f.entry;
    rec.status = DeployStatus::kCompiling;
    rec.created_ms = NowUnixMs();
    GPUWASM_ASSIGN_OR_RETURN(
        PgResult r,
        Run("WITH v AS (INSERT INTO gpuwasm_function_names (tenant, name, last_version) VALUES ($2, $3, 1) "
            "ON CONFLICT (tenant, name) DO UPDATE SET last_version = gpuwasm_function_names.last_version + 1 "
            "RETURNING last_version) "
            "INSERT INTO gpuwasm_functions (id, tenant, name, version, sha256, size, entry, status, error, created_ms) "
            "SELECT $1, $2, $3, v.last_version, $4, $5, $6, 'compiling', '', $7 FROM v RETURNING version",
            {rec.id, rec.tenant, rec.name, rec.sha256, std::to_string(rec.size), rec.entry,
             std::to_string(rec.created_ms)}));
    if (r.rows() != 1) return Status::Internal("postgresql: no version returned");
    rec.version = r.Int(0, 0);
    return rec;
  }

  Status SetStatus(std::string_view id, DeployStatus status, std::string_view error) override {
    GPUWASM_ASSIGN_OR_RETURN(PgResult r,
                             Run("UPDATE gpuwasm_functions SET status = $2, error = $3 WHERE id = $1",
                                 {std::string(id), std::string(DeployStatusName(status)), std::string(error)}));
    if (r.changed() == 0) return Status::NotFound("no function with id " + std::string(id));
    return Status::Ok();
  }

  Result<FunctionRecord> GetFunction(std::string_view id) override {
    GPUWASM_ASSIGN_OR_RETURN(PgResult r, Run(Select("WHERE id = $1").c_str(), {std::string(id)}));
    if (r.rows() == 0) return Status::NotFound("no function with id " + std::string(id));
    return ReadRecord(r, 0);
  }

  Result<std::vector<FunctionRecord>> ListFunctions(std::optional<std::string_view> tenant) override {
    if (!tenant) {
      GPUWASM_ASSIGN_OR_RETURN(PgResult r, Run(Select("ORDER BY tenant, name, version").c_str(), {}));
      return ReadAll(r);
    }
    GPUWASM_ASSIGN_OR_RETURN(
        PgResult r, Run(Select("WHERE tenant = $1 ORDER BY tenant, name, version").c_str(), {std::string(*tenant)}));
    return ReadAll(r);
  }

  Result<std::vector<FunctionRecord>> Versions(std::string_view tenant, std::string_view name) override {
    GPUWASM_ASSIGN_OR_RETURN(PgResult r, Run(Select("WHERE tenant = $1 AND name = $2 ORDER BY version DESC").c_str(),
                                             {std::string(tenant), std::string(name)}));
    return ReadAll(r);
  }

  Result<bool> DeleteFunction(std::string_view id) override {
    GPUWASM_ASSIGN_OR_RETURN(PgResult r, Run("DELETE FROM gpuwasm_functions WHERE id = $1", {std::string(id)}));
    return r.changed() > 0;
  }

  Result<bool> BlobReferenced(std::string_view sha256) override {
    GPUWASM_ASSIGN_OR_RETURN(PgResult r,
                             Run("SELECT 1 FROM gpuwasm_functions WHERE sha256 = $1 LIMIT 1", {std::string(sha256)}));
    return r.rows() > 0;
  }

  Result<std::unique_ptr<StoreLock>> Lock(std::string_view key) override {
    GPUWASM_ASSIGN_OR_RETURN(PgConnection c, Connect(conninfo_));
    auto lock = std::make_unique<AdvisoryLock>(std::move(c));  // closes the connection on every path
    GPUWASM_RETURN_IF_ERROR(Exec(lock->connection(), "SELECT pg_advisory_lock($1::bigint)", {LockKey(key)}).status());
    return std::unique_ptr<StoreLock>(std::move(lock));
  }

  bool shared() const override { return true; }
  std::string description() const override { return "postgresql " + RedactConninfo(conninfo_); }

 private:
  static std::string Select(const char* rest) {
    return std::string(
               "SELECT id, tenant, name, version, sha256, size, entry, status, error, created_ms "
               "FROM gpuwasm_functions ") +
           rest;
  }

  Status InitLocked(PGconn* c) {
    GPUWASM_RETURN_IF_ERROR(Exec(c, "SELECT pg_advisory_xact_lock($1::bigint)", {kSchemaLockKey}).status());
    GPUWASM_RETURN_IF_ERROR(Exec(c, kSchema, {}).status());
    GPUWASM_ASSIGN_OR_RETURN(PgResult r, Exec(c, "SELECT value FROM gpuwasm_meta WHERE key = 'schema_version'", {}));
    if (r.rows() == 0) {
      return Exec(c, "INSERT INTO gpuwasm_meta (key, value) VALUES ('schema_version', $1)",
                  {std::to_string(kSchemaVersion)})
          .status();
    }
    if (std::stoi(r.Text(0, 0)) > kSchemaVersion) {
      return Status::Unsupported("the store's schema version " + r.Text(0, 0) + " is newer than this gpuwasm's (" +
                                 std::to_string(kSchemaVersion) + "): upgrade gpuwasm");
    }
    return Status::Ok();
  }

  // Takes a pooled connection (opening one while fewer than kPoolSize are open) for `fn`.
  template <typename Fn>
  auto WithConnection(Fn&& fn) -> decltype(fn(static_cast<PGconn*>(nullptr))) {
    PgConnection c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !idle_.empty() || open_ < kPoolSize; });
      if (!idle_.empty()) {
        c = std::move(idle_.back());
        idle_.pop_back();
      } else {
        ++open_;
      }
    }
    if (c == nullptr) {
      Result<PgConnection> fresh = Connect(conninfo_);
      if (!fresh.ok()) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          --open_;
        }
        cv_.notify_one();
        return fresh.status();
      }
      c = std::move(*fresh);
    }
    auto result = fn(c.get());
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle_.push_back(std::move(c));
    }
    cv_.notify_one();
    return result;
  }

  Result<PgResult> Run(const char* sql, const std::vector<std::string>& params) {
    return WithConnection([&](PGconn* c) { return Exec(c, sql, params); });
  }

  std::string conninfo_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PgConnection> idle_;
  size_t open_ = 0;
};

}  // namespace

std::string RedactConninfo(const std::string& conninfo) {
  // URI form: postgresql://user:secret@host/db; key-value form: password=secret (maybe quoted).
  static const std::regex uri_password(R"(^(postgres(?:ql)?://[^:@/]*):[^@/]*@)");
  static const std::regex kv_password(R"((^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+))");
  std::string s = std::regex_replace(conninfo, uri_password, "$1:***@");
  s = std::regex_replace(s, kv_password, "$1password=***");
  static const std::regex query_password(R"(([?&]password=)[^&]*)");
  return std::regex_replace(s, query_password, "$1***");
}

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& conninfo) {
  auto store = std::make_unique<PostgresStore>(conninfo);
  GPUWASM_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace gpuwasm::store
