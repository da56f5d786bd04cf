// The configuration of a gpuwasm node: runtime settings and tenants, from a TOML file
// (docs/operator-guide.md shows every key). Without a file, DefaultConfig() is one tenant named
// "default" with no tokens and default quotas: `gpuwasm run` and `gpuwasm serve` work as is.
//
// Tokens are never stored in clear: the file holds "sha256:<hex>" of each token
// (`gpuwasm token new` makes one). Unknown keys, wrong types and bad values are errors naming the
// key and the line, so a typo never silently drops a quota.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpuwasm::runtime {

struct TenantConfig {
  std::string name;
  std::vector<std::string> token_sha256;  // lower-case hex digests of the tenant's API tokens
  bool gpu = true;                        // may its guests use wasi_cuda?
  // Every module its guests load is instrumented (fence and deadline passes, docs/adr/0009); off
  // only for a tenant trusted not to attack the others' memory (its kernels then run as written).
  bool instrument_ptx = true;
  uint64_t device_bytes = 1ull << 30;    // live device memory of all its instances together
  uint32_t concurrent_invocations = 16;  // running + queued; beyond: "overloaded"
  uint32_t inflight_launches = 64;       // per instance, before back-pressure
  std::chrono::milliseconds max_deadline{60'000};
  uint64_t max_module_size = 64ull << 20;
  uint64_t max_input_size = 16ull << 20;
  uint64_t max_output_size = 16ull << 20;  // output, and stdout and stderr each
  uint64_t max_memory = 1ull << 30;        // guest linear memory
  // What its deploys may keep in the store: versions of all its functions together, and their
  // module bytes together; a deploy beyond either is refused (403) until old versions are deleted.
  uint32_t max_versions = 1000;
  uint64_t max_stored_bytes = 4ull << 30;
  double rate_limit = 0;    // requests per second per token (server); 0 = unlimited
  uint32_t rate_burst = 0;  // requests allowed at once above the rate; 0 = rate_limit, at least 1
  // The tenant's worker process (isolation = "process"): its memory (resident bytes; beyond it the
  // worker is ended and its invocations fail with worker_lost), CPU seconds over its life (then it
  // is replaced between invocations; 0 = no limit) and open files.
  uint64_t worker_memory = 4ull << 30;
  uint64_t worker_cpu_seconds = 0;
  uint32_t worker_open_files = 1024;
};

// Where instances run. kNone: in the runtime's own process (one user, one guest: `gpuwasm run`).
// kProcess: each tenant's instances and device context in a worker process of its own, started
// on demand and supervised (`gpuwasm serve`): a process-fatal device error, a kernel that cannot
// be stopped, a crash or a memory bomb ends only that tenant's worker.
enum class Isolation : uint8_t { kNone, kProcess };
std::string_view IsolationName(Isolation i);

struct ServerConfig {
  std::string listen = "127.0.0.1:8080";
  uint64_t max_body = 64ull << 20;                 // any request body, before tenant limits
  std::chrono::milliseconds read_timeout{30'000};  // to receive one request, + 1 s per MiB of body
  std::chrono::milliseconds idle_timeout{60'000};  // keep-alive connection without a request
  std::string metrics_token_sha256;                // "" = /metrics needs no token
  // The operator's token: lists every tenant's instances and functions ("" = no such role).
  std::string admin_token_sha256;
  uint32_t io_threads = 2;
  // Open connections at once, in all and from one client address; beyond them a connection is
  // answered 503 and closed. 0 for max_connections: the open-file limit less 256 (spares for
  // workers' sockets, compiles and the store), at most 4096.
  uint32_t max_connections = 0;
  uint32_t max_connections_per_client = 256;
};

struct RuntimeConfig {
  std::filesystem::path store_dir;  // "" = store::DefaultStoreDir()
  // "" = SQLite in store_dir (one node); else a PostgreSQL connection string shared by every node,
  // with store_dir holding blobs and artifacts (a shared volume, or one directory per node).
  std::string database;
  std::string device = "auto";   // auto, cpu, cuda:N
  uint32_t workers = 0;          // instances running at once; 0 = DefaultWorkers()
  uint32_t compile_workers = 0;  // deploy compiles at once; 0 = max(1, cores / 2)
  std::chrono::milliseconds default_deadline{30'000};
  std::chrono::milliseconds shutdown_grace{10'000};
  // Compiled functions kept loaded (mapped code) for the next invocation; beyond it the least
  // recently used is dropped and loaded again from the artifact cache when invoked.
  uint32_t loaded_modules = 256;
  // Where instances run; unset: the command's default (serve: process, run: none).
  std::optional<Isolation> isolation;
  // Tenant workers: stopped after this long without an invocation; at most max_workers live at once
  // (the least recently used idle one is stopped first).
  std::chrono::milliseconds worker_idle_timeout{60'000};
  uint32_t max_workers = 64;
  // A worker that has not refreshed its heartbeat for this long is ended (worker_lost).
  std::chrono::milliseconds worker_heartbeat_timeout{5'000};
  // A kernel still running this long after its deadline (or cancellation) cannot be stopped on a
  // GPU: its context is abandoned and its worker replaced.
  std::chrono::milliseconds runaway_grace{1000};
  ServerConfig server;  // for `gpuwasm serve`
  std::vector<TenantConfig> tenants;

  const TenantConfig* FindTenant(std::string_view name) const;
  // The tenant owning `token`, or nullptr. Compares digests in constant time.
  const TenantConfig* FindTenantByToken(std::string_view token) const;
  // The same for a token's digest (Sha256Hex of it), for a caller that needs the digest anyway.
  const TenantConfig* FindTenantByDigest(std::string_view digest) const;
  // Whether any tenant has a token: then requests must carry one.
  bool tokens_configured() const;
};

// 2 x hardware threads, at least 4: instances mostly wait on devices and deadlines.
uint32_t DefaultWorkers();

RuntimeConfig DefaultConfig();
Result<RuntimeConfig> ParseConfig(std::string_view toml_text, std::string_view source_name = "config");
Result<RuntimeConfig> LoadConfig(const std::filesystem::path& path);

// "sha256:" + hex digest of a token, as written in the configuration.
std::string HashToken(std::string_view token);
// Whether two token digests are equal, in time independent of where they differ (every token check
// of the server: tenants', the metrics and the admin token).
bool DigestEquals(std::string_view a, std::string_view b);

// Where `serve` listens: "HOST:PORT" with HOST an IPv4 address, an IPv6 address in brackets,
// "localhost" (127.0.0.1) or empty (every IPv4 address); PORT 0 picks a free port. No name is
// looked up. Checked by ParseConfig, and by `serve` for its --listen flag.
struct ListenAddress {
  std::string host;  // an IP address
  uint16_t port = 0;
};
Result<ListenAddress> ParseListen(std::string_view listen);

// What is valid but surely not meant, one line each: a tenant without tokens beside tenants with
// tokens (requests must then carry a token, so none can reach it).
std::vector<std::string> ConfigWarnings(const RuntimeConfig& c);

}  // namespace gpuwasm::runtime
