#include "server/api.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <optional>

#include "common/duration.h"
#include "common/sha256.h"
#include "server/io_threads.h"
#include "server/metric_list.h"

namespace gpuwasm::server {
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

std::string_view Sv(boost::beast::string_view v) { return {v.data(), v.size()}; }

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && Hex(s[i + 1]) >= 0 && Hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(Hex(s[i + 1]) * 16 + Hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

struct Target {
  std::vector<std::string> segments;  // "/v1/functions/x" -> {"v1", "functions", "x"}
  std::map<std::string, std::string> query;
};

Target ParseTarget(std::string_view target) {
  Target t;
  size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  for (size_t p = 0; p < path.size();) {
    size_t e = path.find('/', p);
    if (e == std::string_view::npos) e = path.size();
    if (e > p) t.segments.push_back(UrlDecode(path.substr(p, e - p)));
    p = e + 1;
  }
  if (q != std::string_view::npos) {
    std::string_view qs = target.substr(q + 1);
    for (size_t p = 0; p < qs.size();) {
      size_t e = qs.find('&', p);
      if (e == std::string_view::npos) e = qs.size();
      std::string_view kv = qs.substr(p, e - p);
      size_t eq = kv.find('=');
      if (!kv.empty()) {
        t.query[UrlDecode(kv.substr(0, eq))] = eq == std::string_view::npos ? "" : UrlDecode(kv.substr(eq + 1));
      }
      p = e + 1;
    }
  }
  return t;
}

// Api::Routes() split into segments once, with the Allow header each answers 405 with.
struct MatchedRoute {
  std::string path;
  std::vector<std::string> parts;  // "{id}" matches any one segment
  std::string allowed;             // "GET, DELETE"
};

const std::vector<MatchedRoute>& MatchedRoutes() {
  static const std::vector<MatchedRoute> routes = [] {
    std::vector<MatchedRoute> out;
    for (const Route& r : Api::Routes()) {
      MatchedRoute m{r.path, {}, {}};
      for (std::string_view p = std::string_view(r.path).substr(1); !p.empty();) {
        const size_t slash = p.find('/');
        m.parts.emplace_back(p.substr(0, slash));
        p = slash == std::string_view::npos ? std::string_view() : p.substr(slash + 1);
      }
      for (const char* method : r.methods) m.allowed += (m.allowed.empty() ? "" : ", ") + std::string(method);
      out.push_back(std::move(m));
    }
    return out;
  }();
  return routes;
}

// The route template of a path and the methods it accepts ("" when unknown).
std::string RouteOf(const Target& t, std::string* allowed) {
  for (const MatchedRoute& r : MatchedRoutes()) {
    if (r.parts.size() != t.segments.size()) continue;
    bool match = true;
    for (size_t i = 0; i < r.parts.size() && match; ++i) match = r.parts[i][0] == '{' || r.parts[i] == t.segments[i];
    if (!match) continue;
    *allowed = r.allowed;
    return r.path;
  }
  return "";
}

unsigned HttpStatusFor(StatusCode c) {
  switch (c) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kResourceExhausted: return 413;
    case StatusCode::kUnavailable:
    case StatusCode::kCancelled: return 503;
    case StatusCode::kDeadlineExceeded: return 504;
    case StatusCode::kUnsupported: return 501;
    default: return 500;
  }
}

json FunctionJson(const store::FunctionRecord& f) {
  return {{"id", f.id},
          {"name", f.name},
          {"version", f.version},
          {"tenant", f.tenant},
          {"sha256", f.sha256},
          {"size", f.size},
          {"entry", f.entry.empty() ? json(nullptr) : json(f.entry)},
          {"status", store::DeployStatusName(f.status)},
          {"error", f.error.empty() ? json(nullptr) : json(f.error)},
          {"created_ms", f.created_ms}};
}

std::string Base64(const std::string& in) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out.push_back(tbl[(v >> k) & 63]);
  }
  if (i < in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (i + 1 < in.size()) v |= uint8_t(in[i + 1]) << 8;
    out.push_back(tbl[(v >> 18) & 63]);
    out.push_back(tbl[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? tbl[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

bool ValidUtf8(const std::string& s) {
  try {
    (void)json(s).dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

// Exports metric `id` of the list (metric_list.h), as the type the list gives it.
void Put(telemetry::MetricRegistry& m, Metric id, const telemetry::Labels& labels, double value) {
  const MetricDef& d = Def(id);
  if (d.type == MetricType::kCounter) {
    m.AddCounter(d.name, d.help, labels, value);
  } else {
    m.SetGauge(d.name, d.help, labels, value);
  }
}

telemetry::HistogramFamily Histogram(Metric id) {
  return telemetry::HistogramFamily(std::string(Def(id).name), std::string(Def(id).help),
                                    telemetry::HistogramFamily::LatencyBounds());
}

}  // namespace

Api::Api(runtime::Runtime& runtime, const telemetry::MetricRegistry* gpm, std::string version)
    : rt_(runtime),
      gpm_(gpm),
      version_(std::move(version)),
      invocation_seconds_(Histogram(Metric::kInvocationDuration)),
      http_seconds_(Histogram(Metric::kHttpRequestDuration)) {}

Response Api::Error(unsigned status, const std::string& code, const std::string& message, unsigned version,
                    bool keep_alive) {
  Response res{static_cast<http::status>(status), version};
  res.set(http::field::content_type, "application/json");
  res.keep_alive(keep_alive);
  res.body() = Dump({{"code", code}, {"message", message}});
  if (status == 503) res.set(http::field::retry_after, "1");
  if (status == 401) res.set(http::field::www_authenticate, "Bearer");
  res.prepare_payload();
  return res;
}

bool Api::TakeRateToken(const runtime::TenantConfig& t, const std::string& key, double* retry_after) {
  if (t.rate_limit <= 0) return true;
  double burst = t.rate_burst != 0 ? t.rate_burst : std::max(1.0, t.rate_limit);
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(rate_mu_);
  auto [it, fresh] = buckets_.try_emplace(key);
  Bucket& b = it->second;
  if (fresh) {
    b.tokens = burst;
  } else {
    double elapsed = std::chrono::duration<double>(now - b.refilled).count();
    b.tokens = std::min(burst, b.tokens + elapsed * t.rate_limit);
  }
  b.refilled = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  *retry_after = (1 - b.tokens) / t.rate_limit;
  return false;
}

Admission Api::Admit(const Request& req) {
  Admission a;
  const runtime::RuntimeConfig& cfg = rt_.config();
  Target t = ParseTarget(Sv(req.target()));
  std::string allowed;
  a.route = RouteOf(t, &allowed);
  a.path = std::move(t.segments);
  a.query = std::move(t.query);
  a.body_limit = 64 * 1024;
  auto reject = [&](unsigned status, const std::string& code, const std::string& message) {
    a.reject = Error(status, code, message, req.version(), false);  // the body is not read: close
    return a;
  };
  if (a.route.empty()) {
    a.route = "other";
    return reject(404, "not_found", "no such endpoint: " + std::string(Sv(req.target())));
  }
  std::string method(req.method_string());
  // Exactly one of the allowed methods ("E" is not DELETE, "OS" is not POST).
  bool method_ok = false;
  for (size_t p = 0; p <= allowed.size();) {
    size_t e = allowed.find(", ", p);
    if (e == std::string::npos) e = allowed.size();
    if (allowed.compare(p, e - p, method) == 0 && !method.empty()) method_ok = true;
    p = e + 2;
  }
  if (!method_ok) {
    Admission r =
        reject(405, "method_not_allowed", method + " is not allowed on " + a.route + " (allowed: " + allowed + ")");
    r.reject->set(http::field::allow, allowed);
    return r;
  }
  std::string token;
  auto auth = req.find(http::field::authorization);
  if (auth != req.end()) {
    std::string_view v = Sv(auth->value());
    if (v.size() > 7 && (v.substr(0, 7) == "Bearer " || v.substr(0, 7) == "bearer ")) token = std::string(v.substr(7));
  }
  if (a.route == "/healthz" || a.route == "/readyz") return a;
  // The token is hashed once, when a configured token is compared with it (in constant time).
  std::string digest;
  auto Digest = [&]() -> const std::string& {
    if (digest.empty()) digest = Sha256Hex(token);
    return digest;
  };
  if (a.route == "/metrics") {
    if (!cfg.server.metrics_token_sha256.empty() && !runtime::DigestEquals(Digest(), cfg.server.metrics_token_sha256)) {
      return reject(401, "unauthorized", "/metrics needs the metrics bearer token");
    }
    return a;
  }
  if (!cfg.server.admin_token_sha256.empty() && !token.empty() &&
      runtime::DigestEquals(Digest(), cfg.server.admin_token_sha256)) {
    // The operator's view across tenants; it acts for no tenant (nothing to charge a deploy or an
    // invocation to).
    a.admin = true;
    if (req.method() == http::verb::get && (a.route == "/v1/instances" || a.route == "/v1/functions")) return a;
    return reject(403, "forbidden",
                  "the admin token lists every tenant's instances and functions (GET /v1/instances, GET "
                  "/v1/functions); deploy, invoke and delete with a tenant's token");
  }
  const runtime::TenantConfig* tenant = nullptr;
  std::string rate_key;
  if (cfg.tokens_configured()) {
    if (token.empty()) return reject(401, "unauthorized", "missing bearer token (Authorization: Bearer <token>)");
    tenant = cfg.FindTenantByDigest(Digest());
    if (tenant == nullptr) return reject(401, "unauthorized", "invalid token");
    rate_key = Digest();
  } else {
    tenant = &cfg.tenants.front();  // no tokens anywhere: one open tenant
    rate_key = "tenant:" + tenant->name;
  }
  a.tenant = tenant->name;
  double retry = 0;
  if (!TakeRateToken(*tenant, rate_key, &retry)) {
    Admission r = reject(429, "rate_limited",
                         "rate limit of " + telemetry::MetricRegistry::FormatSample(tenant->rate_limit) +
                             " requests per second exceeded");
    r.reject->set(http::field::retry_after, std::to_string(static_cast<long>(std::ceil(std::max(retry, 0.001)))));
    r.reject->keep_alive(true);
    return r;
  }
  std::string limit_name = "max_body";
  std::optional<runtime::RefusedLimit> tenant_limit;  // counted when it refuses
  a.body_limit = cfg.server.max_body;
  if (a.route == "/v1/functions" && req.method() == http::verb::post && tenant->max_module_size < a.body_limit) {
    a.body_limit = tenant->max_module_size;
    limit_name = "the tenant's max_module_size";
    tenant_limit = runtime::RefusedLimit::kMaxModuleSize;
  } else if (a.route == "/v1/functions/{id}/invoke" && tenant->max_input_size < a.body_limit) {
    a.body_limit = tenant->max_input_size;
    limit_name = "the tenant's max_input_size";
    tenant_limit = runtime::RefusedLimit::kMaxInputSize;
  }
  auto length = req.find(http::field::content_length);
  if (length != req.end()) {
    uint64_t n = std::strtoull(std::string(Sv(length->value())).c_str(), nullptr, 10);
    if (n > a.body_limit) {
      if (tenant_limit) rt_.CountLimitRefusal(tenant->name, *tenant_limit);
      return reject(413, "payload_too_large",
                    "request body of " + std::to_string(n) + " bytes exceeds " + limit_name + " of " +
                        std::to_string(a.body_limit) + " bytes");
    }
  }
  a.body_limit_of_tenant = tenant_limit;
  return a;
}

void Api::CountBodyOverLimit(const Admission& a) {
  if (a.body_limit_of_tenant) rt_.CountLimitRefusal(a.tenant, *a.body_limit_of_tenant);
}

Response Api::Handle(const Request& req, const Admission& a) {
  auto ok = [&](unsigned status, const json& body) {
    Response res{static_cast<http::status>(status), req.version()};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = Dump(body);
    res.prepare_payload();
    return res;
  };
  auto fail = [&](const Status& s) {
    return Error(HttpStatusFor(s.code()), std::string(StatusCodeName(s.code())), s.message(), req.version(),
                 req.keep_alive());
  };
  if (a.route == "/healthz") return ok(200, {{"status", "ok"}});
  if (a.route == "/readyz") {
    if (draining_ || !rt_.accepting()) {
      return Error(503, "unavailable", "gpuwasm is shutting down", req.version(), req.keep_alive());
    }
    // A node that cannot reach its store (the shared database) cannot serve: out of rotation.
    if (Status st = rt_.CheckStore(); !st.ok()) {
      return Error(503, "unavailable", "the function store is unreachable: " + st.message(), req.version(),
                   req.keep_alive());
    }
    return ok(200, {{"status", "ready"}});
  }
  if (a.route == "/metrics") {
    Response res{http::status::ok, req.version()};
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.keep_alive(req.keep_alive());
    res.body() = RenderMetrics();
    res.prepare_payload();
    return res;
  }
  const std::optional<std::string_view> whose =
      a.admin ? std::nullopt : std::optional<std::string_view>(a.tenant);  // the admin: every tenant's
  if (a.route == "/v1/instances") {
    json list = json::array();
    for (const runtime::LiveInstance& i : rt_.Instances(whose)) list.push_back(i);
    return ok(200, {{"instances", list}});
  }
  if (a.route == "/v1/functions" && req.method() == http::verb::get) {
    auto fs = rt_.ListFunctions(whose);
    if (!fs.ok()) return fail(fs.status());
    json list = json::array();
    for (const auto& f : *fs) list.push_back(FunctionJson(f));
    return ok(200, {{"functions", list}});
  }
  if (a.route == "/v1/functions") {  // POST: deploy
    auto name = a.query.find("name");
    if (name == a.query.end() || name->second.empty()) {
      return fail(Status::InvalidArgument("deploy needs ?name=<function name>"));
    }
    auto entry_it = a.query.find("entry");
    std::string entry = entry_it != a.query.end() ? entry_it->second : "";
    const std::string& body = req.body();
    auto rec = rt_.Deploy(a.tenant, name->second, std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size()),
                          entry);
    if (!rec.ok()) return fail(rec.status());
    Response res = ok(202, FunctionJson(*rec));
    res.set(http::field::location, "/v1/functions/" + rec->id);
    return res;
  }
  const std::string& id = a.path[2];
  if (a.route == "/v1/functions/{id}" && req.method() == http::verb::get) {
    auto rec = rt_.GetFunction(a.tenant, id);
    if (!rec.ok()) return fail(rec.status());
    return ok(200, FunctionJson(*rec));
  }
  if (a.route == "/v1/functions/{id}") {  // DELETE
    Status s = rt_.DeleteFunction(a.tenant, id);
    if (!s.ok()) return fail(s);
    return ok(200, {{"deleted", id}});
  }
  return Invoke(req, a);
}

const std::vector<Route>& Api::Routes() {
  static const std::vector<Route> routes = {
      {"/healthz", {"GET"}},
      {"/readyz", {"GET"}},
      {"/metrics", {"GET"}},
      {"/v1/functions", {"GET", "POST"}},
      {"/v1/functions/{id}", {"GET", "DELETE"}},
      {"/v1/functions/{id}/invoke", {"POST"}},
      {"/v1/instances", {"GET"}},
  };
  return routes;
}

bool Api::IsInvoke(const Admission& a) { return a.route == "/v1/functions/{id}/invoke"; }

std::optional<Response> Api::ParseInvoke(const Request& req, const Admission& a, runtime::InvokeRequest* ir) {
  ir->input = req.body();
  if (auto timeout = a.query.find("timeout"); timeout != a.query.end()) {
    auto d = ParseDuration(timeout->second);
    if (!d.ok()) {
      return Error(400, "invalid_argument", "timeout: " + d.status().message(), req.version(), req.keep_alive());
    }
    ir->deadline = *d;
  }
  // ?args=["a","b"] (argv after argv[0]) and ?env={"KEY":"value"}, both JSON; the runtime checks
  // their limits (runtime::CheckArgsAndEnv).
  if (auto args = a.query.find("args"); args != a.query.end()) {
    json j = json::parse(args->second, nullptr, false);
    if (!j.is_array() || !std::all_of(j.begin(), j.end(), [](const json& x) { return x.is_string(); })) {
      return Error(400, "invalid_argument", "args: a JSON array of strings, e.g. [\"blur\",\"3\"]", req.version(),
                   req.keep_alive());
    }
    for (const json& x : j) ir->args.push_back(x.get<std::string>());
  }
  if (auto env = a.query.find("env"); env != a.query.end()) {
    json j = json::parse(env->second, nullptr, false);
    if (!j.is_object() || !std::all_of(j.begin(), j.end(), [](const json& x) { return x.is_string(); })) {
      return Error(400, "invalid_argument", "env: a JSON object of strings, e.g. {\"MODE\":\"fast\"}", req.version(),
                   req.keep_alive());
    }
    for (auto it = j.begin(); it != j.end(); ++it) ir->env.push_back(it.key() + "=" + it.value().get<std::string>());
  }
  return std::nullopt;
}

bool Api::InvokeAsync(const Request& req, const Admission& a, std::function<void(Response)> reply,
                      runtime::Runtime::Caller caller) {
  runtime::InvokeRequest ir;
  if (std::optional<Response> bad = ParseInvoke(req, a, &ir)) {
    reply(std::move(*bad));
    return true;
  }
  InvokeShape shape;
  shape.version = req.version();
  shape.keep_alive = req.keep_alive();
  auto format = a.query.find("format");
  shape.json = format != a.query.end() && format->second == "json";
  shape.tenant = a.tenant;
  return rt_.InvokeAsync(
      a.tenant, a.path[2], std::move(ir),
      [this, shape = std::move(shape), reply = std::move(reply)](Result<runtime::InvokeResult> r) {
        Response res;
        try {
          res = InvokeResponse(shape, std::move(r));
        } catch (const std::exception& e) {
          res = Error(500, "internal", std::string("request failed: ") + e.what(), shape.version, false);
        }
        reply(std::move(res));
      },
      caller);
}

Response Api::Invoke(const Request& req, const Admission& a) {
  std::promise<Response> answer;
  std::future<Response> done = answer.get_future();
  InvokeAsync(
      req, a, [&](Response res) { answer.set_value(std::move(res)); }, runtime::Runtime::Caller::kMayBlock);
  return done.get();
}

Response Api::InvokeResponse(const InvokeShape& shape, Result<runtime::InvokeResult> r) {
  if (!r.ok()) {
    return Error(HttpStatusFor(r.status().code()), std::string(StatusCodeName(r.status().code())), r.status().message(),
                 shape.version, shape.keep_alive);
  }
  invocation_seconds_.Observe({{"tenant", shape.tenant}}, std::chrono::duration<double>(r->duration).count());
  unsigned status = r->status == runtime::InvocationStatus::kDeadline ? 504
                    : r->status == runtime::InvocationStatus::kError ||
                            r->status == runtime::InvocationStatus::kDeviceFault ||
                            r->status == runtime::InvocationStatus::kWorkerLost
                        ? 500
                        : 200;
  Response res{static_cast<http::status>(status), shape.version};
  res.keep_alive(shape.keep_alive);
  res.set("X-Gpuwasm-Status", std::string(runtime::InvocationStatusName(r->status)));
  res.set("X-Gpuwasm-Exit-Status", std::to_string(r->exit_status));
  res.set("X-Gpuwasm-Function-Id", r->function_id);
  res.set("X-Gpuwasm-Duration-Ms",
          telemetry::MetricRegistry::FormatSample(static_cast<double>(r->duration.count()) / 1e3));
  res.set("X-Gpuwasm-Gpu-Time-Ms",
          telemetry::MetricRegistry::FormatSample(static_cast<double>(r->gpu_time.count()) / 1e6));
  res.set("X-Gpuwasm-Metrics", host::ToJson(r->metrics));
  if (!r->trap.empty()) res.set("X-Gpuwasm-Trap", r->trap);
  if (!r->error.empty()) res.set("X-Gpuwasm-Error", r->error.substr(0, 1024));
  if (shape.json) {
    json j = *r;
    auto text = [](const std::string& s, const char* key, json& out) {
      if (ValidUtf8(s)) {
        out[key] = s;
      } else {
        out[key] = nullptr;
        out[std::string(key) + "_base64"] = Base64(s);
      }
    };
    text(r->output, "output", j);
    text(r->stdout_text, "stdout", j);
    text(r->stderr_text, "stderr", j);
    res.set(http::field::content_type, "application/json");
    res.body() = Dump(j);
  } else {
    // The body is what `gpuwasm run` prints on stdout: the guest's stdout, then its output.
    res.set(http::field::content_type, "application/octet-stream");
    res.body() = r->stdout_text + r->output;
  }
  res.prepare_payload();
  return res;
}

void Api::CountRefusedConnection(const std::string& reason) {
  Put(http_, Metric::kHttpConnectionsRefused, {{"reason", reason}}, 1);
}

void Api::Record(const std::string& route, const std::string& method, unsigned status, double seconds) {
  Put(http_, Metric::kHttpRequests, {{"route", route}, {"method", method}, {"code", std::to_string(status)}}, 1);
  http_seconds_.Observe({{"route", route}}, seconds);
}

std::string Api::RenderMetrics() const {
  telemetry::MetricRegistry m;
  Put(m, Metric::kBuildInfo, {{"version", version_}, {"device", rt_.device_info().name}}, 1);
  runtime::RuntimeStats s = rt_.Stats();
  auto n = [](uint64_t v) { return static_cast<double>(v); };
  Put(m, Metric::kModuleCompiles, {}, n(s.module_compiles));
  if (rt_.isolation() == runtime::Isolation::kProcess) {
    Put(m, Metric::kWorkers, {}, n(s.workers.size()));
    Put(m, Metric::kWorkersStarted, {}, n(s.workers_started));
    Put(m, Metric::kWorkersLost, {}, n(s.workers_lost));
    Put(m, Metric::kWorkersIdleStopped, {}, n(s.workers_idle_stopped));
    for (const runtime::WorkerStats& w : s.workers) {
      if (w.tenant.empty()) continue;
      Put(m, Metric::kWorkerResidentBytes, {{"tenant", w.tenant}}, n(w.resident_bytes));
    }
  }
  Put(m, Metric::kCompilesCrashed, {}, n(s.compiles_crashed));
  Put(m, Metric::kModuleCacheLoads, {}, n(s.module_cache_loads));
  Put(m, Metric::kModuleQuickCompiles, {}, n(s.module_quick_compiles));
  Put(m, Metric::kModuleTierUpgrades, {}, n(s.module_tier_upgrades));
  Put(m, Metric::kIoHandoffs, {}, n(io_threads_ != nullptr ? io_threads_->handoffs() : 0));
  for (const runtime::FunctionStats& f : s.functions) {
    telemetry::Labels fl = {{"tenant", f.tenant}, {"function", f.function_name}, {"function_id", f.function_id}};
    for (size_t i = 0; i < runtime::kInvocationStatusCount; ++i) {
      telemetry::Labels l = fl;
      l.emplace_back("status", std::string(runtime::InvocationStatusName(static_cast<runtime::InvocationStatus>(i))));
      Put(m, Metric::kInvocations, l, n(f.totals.invocations[i]));
    }
    Put(m, Metric::kFunctionKernelsLaunched, fl, n(f.totals.kernels_launched));
    Put(m, Metric::kFunctionGpuTime, fl, n(f.totals.gpu_time_ns) / 1e9);
  }
  for (const runtime::TenantStats& t : s.tenants) {
    telemetry::Labels l = {{"tenant", t.tenant}};
    const runtime::Totals& x = t.totals;
    Put(m, Metric::kInvocationsRejected, l, n(x.rejected));
    Put(m, Metric::kDeploysRefused, l, n(x.deploys_refused));
    for (size_t i = 0; i < runtime::kRefusedLimitCount; ++i) {
      Put(m, Metric::kLimitRefusals,
          {{"tenant", t.tenant},
           {"limit", std::string(runtime::RefusedLimitName(static_cast<runtime::RefusedLimit>(i)))}},
          n(x.limit_refusals[i]));
    }
    Put(m, Metric::kKernelsLaunched, l, n(x.kernels_launched));
    Put(m, Metric::kBackPressureRejections, l, n(x.back_pressure_rejections));
    Put(m, Metric::kYields, l, n(x.yields));
    Put(m, Metric::kKernelFaults, l, n(x.kernel_faults));
    Put(m, Metric::kQuotaRefusals, l, n(x.quota_refusals));
    Put(m, Metric::kGpuTime, l, n(x.gpu_time_ns) / 1e9);
    Put(m, Metric::kRunningInstances, l, x.running);
    Put(m, Metric::kDeviceBytesAllocated, l, n(x.device_bytes_allocated));
    Put(m, Metric::kPtxBytesRetained, l, n(x.bytes_pinned));
    Put(m, Metric::kDeviceContextBytes, l, n(t.context_device_bytes));
    Put(m, Metric::kDeviceContextReservedBytes, l, n(t.context_reserved_bytes));
    Put(m, Metric::kDeviceContextResets, l, n(t.context_resets));
  }
  std::string out = m.RenderPrometheus() + http_.RenderPrometheus() + http_seconds_.RenderPrometheus() +
                    invocation_seconds_.RenderPrometheus();
  if (gpm_ != nullptr) out += gpm_->RenderPrometheus();
  return out;
}

}  // namespace gpuwasm::server
