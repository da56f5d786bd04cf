#include "runtime/config.h"

#include <arpa/inet.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "common/duration.h"
#include "common/sha256.h"
#include "runtime/toml.h"

namespace gpuwasm::runtime {
namespace {

// Reads one TOML table, remembering which keys were used so the rest can be reported.
class TableReader {
 public:
  TableReader(const toml::table& t, std::string where, std::string_view source)
      : t_(t), where_(std::move(where)), source_(source) {}

  Status Unknown() const {
    for (const auto& [key, node] : t_) {
      if (used_.count(std::string(key.str())) == 0) {
        return Error(node, "unknown key '" + std::string(key.str()) + "' in " + where_);
      }
    }
    return Status::Ok();
  }

  Status String(const char* key, std::string* out) {
    const toml::node* n = Get(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_string()) return Error(*n, where_ + "." + key + " must be a string");
    *out = n->as_string()->get();
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) {
    const toml::node* n = Get(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_boolean()) return Error(*n, where_ + "." + key + " must be true or false");
    *out = n->as_boolean()->get();
    return Status::Ok();
  }
  Status Count(const char* key, uint32_t* out, uint32_t min) {
    const toml::node* n = Get(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_integer()) return Error(*n, where_ + "." + key + " must be an integer");
    int64_t v = n->as_integer()->get();
    if (v < min || v > 1'000'000) {
      return Error(*n, where_ + "." + key + " must be between " + std::to_string(min) + " and 1000000");
    }
    *out = static_cast<uint32_t>(v);
    return Status::Ok();
  }
  // A count that may be large (up to 2^53).
  Status Count64(const char* key, uint64_t* out) {
    const toml::node* n = Get(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_integer() || n->as_integer()->get() < 0 || n->as_integer()->get() > (int64_t{1} << 53)) {
      return Error(*n, where_ + "." + key + " must be a non-negative integer");
    }
    *out = static_cast<uint64_t>(n->as_integer()->get());
    return Status::Ok();
  }
  // A size: an integer (bytes) or a string such as "16MiB".
  Status Size(const char* key, uint64_t* out) {
    const toml::node* n = Get(key);
    if (n == nullptr) return Status::Ok();
    if (n->is_integer() && n->as_integer()->get() >= 0) {
      *out = static_cast<uint64_t>(n->as_integer()->get());
    } else if (n->is_string()) {
      Result<uint64_t> v = ParseSize(n->as_string()->get());
      if (!v.ok()) return Error(*n, where_ + "." + key + ": " + v.status().message());
      *out = *v;
    } else {
      return Error(*n, where_ + "." + key + " must be a size in bytes or a string such as \"16MiB\"");
    }
    if (*out == 0) return Error(*n, where_ + "." + key + " must not be zero");
    return Status::Ok();
  }
  Status Duration(const char* key, std::chrono::milliseconds* out) {
    const toml::node* n = Get(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_string()) return Error(*n, where_ + "." + key + " must be a duration string such as \"30s\"");
    Result<std::chrono::milliseconds> v = ParseDuration(n->as_string()->get());
    if (!v.ok()) return Error(*n, where_ + "." + key + ": " + v.status().message());
    if (v->count() <= 0) return Error(*n, where_ + "." + key + " must be longer than zero");
    *out = *v;
    return Status::Ok();
  }
  Status Rate(const char* key, double* out) {
    const toml::node* n = Get(key);
    if (n == nullptr) return Status::Ok();
    if (n->is_integer()) {
      *out = static_cast<double>(n->as_integer()->get());
    } else if (n->is_floating_point()) {
      *out = n->as_floating_point()->get();
    } else {
      return Error(*n, where_ + "." + key + " must be a number (requests per second)");
    }
    if (!(*out >= 0) || *out > 1e9) return Error(*n, where_ + "." + key + " must be between 0 and 1e9");
    return Status::Ok();
  }
  Status Strings(const char* key, std::vector<std::string>* out) {
    const toml::node* n = Get(key);
    if (n == nullptr) return Status::Ok();
    const toml::array* a = n->as_array();
    if (a == nullptr) return Error(*n, where_ + "." + key + " must be an array of strings");
    for (const toml::node& e : *a) {
      if (!e.is_string()) return Error(e, where_ + "." + key + " must be an array of strings");
      out->push_back(e.as_string()->get());
    }
    return Status::Ok();
  }
  const toml::node* Get(const char* key) {
    used_.insert(key);
    return t_.get(key);
  }
  // `s` (about the value of `key`, which is set) with the key's line.
  Status Check(const char* key, const Status& s) {
    if (s.ok()) return s;
    const toml::node* n = Get(key);
    return Error(*n, where_ + "." + key + ": " + s.message());
  }
  Status Error(const toml::node& n, const std::string& what) const {
    return Status::InvalidArgument(std::string(source_) + ":" + std::to_string(n.source().begin.line) + ": " + what);
  }

 private:
  const toml::table& t_;
  std::string where_;
  std::string_view source_;
  std::set<std::string> used_;
};

bool ValidTenantName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  }
  return true;
}

bool ValidDigest(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string_view IsolationName(Isolation i) { return i == Isolation::kProcess ? "process" : "none"; }

namespace {

Status ReadTenant(TableReader& r, TenantConfig* t) {
  GPUWASM_RETURN_IF_ERROR(r.String("name", &t->name));
  std::vector<std::string> tokens;
  GPUWASM_RETURN_IF_ERROR(r.Strings("tokens", &tokens));
  for (const std::string& tok : tokens) {
    if (tok.rfind("sha256:", 0) != 0 || !ValidDigest(std::string_view(tok).substr(7))) {
      return r.Error(*r.Get("tokens"), "tenant '" + t->name +
                                           "': tokens must be written hashed, as \"sha256:<64 lower-case hex digits>\" "
                                           "(`gpuwasm token new` makes a token and its line)");
    }
    t->token_sha256.push_back(tok.substr(7));
  }
  GPUWASM_RETURN_IF_ERROR(r.Bool("gpu", &t->gpu));
  GPUWASM_RETURN_IF_ERROR(r.Bool("instrument_ptx", &t->instrument_ptx));
  GPUWASM_RETURN_IF_ERROR(r.Size("device_bytes", &t->device_bytes));
  GPUWASM_RETURN_IF_ERROR(r.Count("concurrent_invocations", &t->concurrent_invocations, 1));
  GPUWASM_RETURN_IF_ERROR(r.Count("inflight_launches", &t->inflight_launches, 1));
  GPUWASM_RETURN_IF_ERROR(r.Duration("max_deadline", &t->max_deadline));
  GPUWASM_RETURN_IF_ERROR(r.Size("max_module_size", &t->max_module_size));
  GPUWASM_RETURN_IF_ERROR(r.Size("max_input_size", &t->max_input_size));
  GPUWASM_RETURN_IF_ERROR(r.Size("max_output_size", &t->max_output_size));
  GPUWASM_RETURN_IF_ERROR(r.Size("max_memory", &t->max_memory));
  GPUWASM_RETURN_IF_ERROR(r.Rate("rate_limit", &t->rate_limit));
  GPUWASM_RETURN_IF_ERROR(r.Count("rate_burst", &t->rate_burst, 0));
  GPUWASM_RETURN_IF_ERROR(r.Size("worker_memory", &t->worker_memory));
  GPUWASM_RETURN_IF_ERROR(r.Count64("worker_cpu_seconds", &t->worker_cpu_seconds));
  GPUWASM_RETURN_IF_ERROR(r.Count("max_versions", &t->max_versions, 1));
  GPUWASM_RETURN_IF_ERROR(r.Size("max_stored_bytes", &t->max_stored_bytes));
  GPUWASM_RETURN_IF_ERROR(r.Count("worker_open_files", &t->worker_open_files, 64));
  return r.Unknown();
}

// TOML allows non-ASCII characters only inside strings and comments. Anywhere else toml++ 3.3
// (Debian 12) asks its is_non_ascii_*_whitespace tables about them, and for many code points those
// reach __builtin_unreachable() (found by fuzz_config). That defect is defused where it is, in
// runtime/toml.h; this check stays for its message: such characters are refused here, with the
// line, as the invalid TOML they are.
//
// A quote opens a string only where TOML allows one (a key or a value): at the start of a line or
// after '=', '[', ',', '{' or '.'. Elsewhere (`x = 3s'...`) toml++ reads on through a bare value,
// so what follows is outside any string (the second input fuzz_config found).
Status CheckNonAsciiPlacement(std::string_view text, std::string_view source) {
  size_t line = 1;
  char prev = '\n';  // the last character on this line that is not a space or tab
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    auto opens_string = [&] {
      return prev == '\n' || prev == '=' || prev == '[' || prev == ',' || prev == '{' || prev == '.';
    };
    if (c == '\n') {
      ++line;
      ++i;
      prev = '\n';
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if ((c == '"' || c == '\'') && opens_string()) {
      prev = c;
      bool multi = text.substr(i, 3) == std::string_view(c == '"' ? "\"\"\"" : "'''");
      std::string_view close = multi ? text.substr(i, 3) : text.substr(i, 1);
      i += close.size();
      while (i < text.size()) {
        if (c == '"' && text[i] == '\\') {
          i += 2;
          continue;
        }
        if (text.substr(i, close.size()) == close) {
          i += close.size();
          break;
        }
        if (text[i] == '\n') {
          ++line;
          if (!multi) break;  // an unterminated string: the parser reports it
        }
        ++i;
      }
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      return Status::InvalidArgument(std::string(source) + ":" + std::to_string(line) +
                                     ": a non-ASCII character outside a string or comment");
    } else {
      prev = c;
      ++i;
    }
  }
  return Status::Ok();
}

}  // namespace

const TenantConfig* RuntimeConfig::FindTenant(std::string_view name) const {
  for (const TenantConfig& t : tenants) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool DigestEquals(std::string_view a, std::string_view b) {
  // Constant time in the digests' content: no early exit on the first differing byte.
  unsigned diff = static_cast<unsigned>(a.size() ^ b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= static_cast<unsigned>(a[i] ^ b[i]);
  return diff == 0;
}

const TenantConfig* RuntimeConfig::FindTenantByToken(std::string_view token) const {
  return FindTenantByDigest(Sha256Hex(token));
}

const TenantConfig* RuntimeConfig::FindTenantByDigest(std::string_view digest) const {
  const TenantConfig* found = nullptr;
  for (const TenantConfig& t : tenants) {
    for (const std::string& h : t.token_sha256) {
      if (DigestEquals(h, digest)) found = &t;  // (every digest compared: no early exit either)
    }
  }
  return found;
}

bool RuntimeConfig::tokens_configured() const {
  for (const TenantConfig& t : tenants) {
    if (!t.token_sha256.empty()) return true;
  }
  return false;
}

uint32_t DefaultWorkers() {
  unsigned hw = std::thread::hardware_concurrency();
  return std::max(4u, 2 * std::max(1u, hw));
}

RuntimeConfig DefaultConfig() {
  RuntimeConfig c;
  TenantConfig t;
  t.name = "default";
  c.tenants.push_back(t);
  return c;
}

std::string HashToken(std::string_view token) { return "sha256:" + Sha256Hex(token); }

Result<ListenAddress> ParseListen(std::string_view listen) {
  const std::string text(listen);
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("listen address '" + text + "' must be host:port (\"127.0.0.1:8080\", \":8080\")");
  }
  ListenAddress a;
  a.host = text.substr(0, colon);
  bool bracketed = a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']';
  if (bracketed) a.host = a.host.substr(1, a.host.size() - 2);
  std::string port = text.substr(colon + 1);
  // At most 5 digits: no overflow, no exception.
  unsigned long number = port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos
                             ? 65536
                             : std::stoul(port);
  if (number > 65535) return Status::InvalidArgument("listen address '" + text + "' has no valid port (0 to 65535)");
  a.port = static_cast<uint16_t>(number);
  if (a.host.empty()) a.host = "0.0.0.0";
  if (a.host == "localhost") a.host = "127.0.0.1";
  unsigned char buf[16];
  bool v4 = !bracketed && ::inet_pton(AF_INET, a.host.c_str(), buf) == 1;
  bool v6 = bracketed && ::inet_pton(AF_INET6, a.host.c_str(), buf) == 1;
  if (!v4 && !v6) {
    return Status::InvalidArgument("listen address '" + text + "': '" + a.host +
                                   "' is not an IPv4 address, an IPv6 address in brackets or localhost");
  }
  return a;
}

std::vector<std::string> ConfigWarnings(const RuntimeConfig& c) {
  std::vector<std::string> out;
  if (!c.tokens_configured()) return out;
  for (const TenantConfig& t : c.tenants) {
    if (t.token_sha256.empty()) {
      out.push_back("tenant '" + t.name +
                    "' has no tokens while other tenants have some: requests must carry a token, so none can reach it");
    }
  }
  return out;
}

Result<RuntimeConfig> ParseConfig(std::string_view text, std::string_view source) {
  GPUWASM_RETURN_IF_ERROR(CheckNonAsciiPlacement(text, source));
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(std::string(source) + ":" + std::to_string(e.source().begin.line) + ": " +
                                   std::string(e.description()));
  }
  RuntimeConfig c;
  TableReader top(root, "the top level", source);
  if (const toml::node* n = top.Get("runtime")) {
    if (!n->is_table()) return top.Error(*n, "runtime must be a table ([runtime])");
    TableReader r(*n->as_table(), "[runtime]", source);
    std::string store;
    GPUWASM_RETURN_IF_ERROR(r.String("store", &store));
    c.store_dir = store;
    GPUWASM_RETURN_IF_ERROR(r.String("database", &c.database));
    GPUWASM_RETURN_IF_ERROR(r.String("device", &c.device));
    GPUWASM_RETURN_IF_ERROR(r.Count("workers", &c.workers, 0));
    GPUWASM_RETURN_IF_ERROR(r.Count("compile_workers", &c.compile_workers, 0));
    GPUWASM_RETURN_IF_ERROR(r.Duration("default_deadline", &c.default_deadline));
    GPUWASM_RETURN_IF_ERROR(r.Duration("shutdown_grace", &c.shutdown_grace));
    GPUWASM_RETURN_IF_ERROR(r.Count("loaded_modules", &c.loaded_modules, 1));
    std::string isolation;
    GPUWASM_RETURN_IF_ERROR(r.String("isolation", &isolation));
    if (isolation == "process") {
      c.isolation = Isolation::kProcess;
    } else if (isolation == "none") {
      c.isolation = Isolation::kNone;
    } else if (!isolation.empty()) {
      return r.Error(*r.Get("isolation"), "[runtime] isolation is '" + isolation + "': use \"process\" or \"none\"");
    }
    GPUWASM_RETURN_IF_ERROR(r.Duration("worker_idle_timeout", &c.worker_idle_timeout));
    GPUWASM_RETURN_IF_ERROR(r.Count("max_workers", &c.max_workers, 1));
    GPUWASM_RETURN_IF_ERROR(r.Duration("worker_heartbeat_timeout", &c.worker_heartbeat_timeout));
    GPUWASM_RETURN_IF_ERROR(r.Duration("runaway_grace", &c.runaway_grace));
    GPUWASM_RETURN_IF_ERROR(r.Unknown());
  }
  if (const toml::node* n = top.Get("server")) {
    if (!n->is_table()) return top.Error(*n, "server must be a table ([server])");
    TableReader r(*n->as_table(), "[server]", source);
    GPUWASM_RETURN_IF_ERROR(r.String("listen", &c.server.listen));
    if (n->as_table()->contains("listen")) {
      GPUWASM_RETURN_IF_ERROR(r.Check("listen", ParseListen(c.server.listen).status()));
    }
    GPUWASM_RETURN_IF_ERROR(r.Size("max_body", &c.server.max_body));
    GPUWASM_RETURN_IF_ERROR(r.Duration("read_timeout", &c.server.read_timeout));
    GPUWASM_RETURN_IF_ERROR(r.Duration("idle_timeout", &c.server.idle_timeout));
    GPUWASM_RETURN_IF_ERROR(r.Count("io_threads", &c.server.io_threads, 1));
    GPUWASM_RETURN_IF_ERROR(r.Count("max_connections", &c.server.max_connections, 0));
    GPUWASM_RETURN_IF_ERROR(r.Count("max_connections_per_client", &c.server.max_connections_per_client, 1));
    // Node-wide tokens, written hashed like the tenants' (`gpuwasm token new` prints the form).
    for (const auto& [key, digest] :
         {std::pair<const char*, std::string*>{"metrics_token", &c.server.metrics_token_sha256},
          {"admin_token", &c.server.admin_token_sha256}}) {
      std::string token;
      GPUWASM_RETURN_IF_ERROR(r.String(key, &token));
      if (token.empty()) continue;
      if (token.rfind("sha256:", 0) != 0 || !ValidDigest(std::string_view(token).substr(7))) {
        return r.Error(*r.Get(key), std::string("[server].") + key + " must be written hashed, as \"sha256:<hex>\"");
      }
      *digest = token.substr(7);
    }
    GPUWASM_RETURN_IF_ERROR(r.Unknown());
  }
  if (const toml::node* n = top.Get("tenants")) {
    const toml::array* a = n->as_array();
    if (a == nullptr) return top.Error(*n, "tenants must be an array of tables ([[tenants]])");
    std::set<std::string> names, digests;
    for (const toml::node& e : *a) {
      if (!e.is_table()) return top.Error(e, "each entry of tenants must be a table ([[tenants]])");
      TableReader r(*e.as_table(), "[[tenants]]", source);
      TenantConfig t;
      GPUWASM_RETURN_IF_ERROR(ReadTenant(r, &t));
      if (!ValidTenantName(t.name)) {
        return r.Error(e, "tenant name '" + t.name + "' must be 1-64 characters of a-z, 0-9, '-' and '_'");
      }
      if (!names.insert(t.name).second) return r.Error(e, "tenant '" + t.name + "' is defined twice");
      for (const std::string& d : t.token_sha256) {
        if (!digests.insert(d).second) return r.Error(e, "tenant '" + t.name + "': a token is given to two tenants");
      }
      c.tenants.push_back(std::move(t));
    }
  }
  GPUWASM_RETURN_IF_ERROR(top.Unknown());
  if (c.tenants.empty()) c.tenants = DefaultConfig().tenants;
  if (c.device != "auto" && c.device != "cpu" && c.device.rfind("cuda:", 0) != 0) {
    return Status::InvalidArgument(std::string(source) + ": [runtime].device must be auto, cpu or cuda:N, not '" +
                                   c.device + "'");
  }
  return c;
}

Result<RuntimeConfig> LoadConfig(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open configuration " + path.string());
  std::string text((std::istreambuf_iterator<char>(in)), {});
  return ParseConfig(text, path.string());
}

}  // namespace gpuwasm::runtime
