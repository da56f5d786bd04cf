// Api: the HTTP API of a gpuwasm node on top of a Runtime, independent of sockets (the Server
// feeds it parsed requests). Docs: docs/http-api.md.
//
// A request goes through two steps: Admit() on its header (route, authentication, rate limit, the
// body size it may send), then Handle() with the whole request (may block: invocations run until
// they finish). Errors are JSON objects {"code": <stable string>, "message": <human text>}.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/runtime.h"
#include "telemetry/histogram.h"
#include "telemetry/registry.h"

namespace gpuwasm::server {

class IoThreads;

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

// What Admit() decided about a request, from its header.
// NOLINTNEXTLINE(bugprone-exception-escape): its moves throw only if a Beast message's do
struct Admission {
  std::optional<Response> reject;  // answer this instead of reading the body
  std::string tenant;
  bool admin = false;  // the admin token: every tenant's instances and functions, no tenant's work
  std::string route;   // route template, the label of HTTP metrics
  uint64_t body_limit = 0;
  // The tenant's limit body_limit is, when it is one (counted when a body without a length, or
  // longer than its length said, runs past it).
  std::optional<runtime::RefusedLimit> body_limit_of_tenant;
  std::vector<std::string> path;  // the target's path segments, decoded
  std::map<std::string, std::string> query;
};

// One route of the HTTP API: its path template ("/v1/functions/{id}") and the methods it takes.
struct Route {
  const char* path;
  std::vector<const char*> methods;
};

class Api {
 public:
  // Every route, as the server matches them (docs/openapi.json describes the same ones; a test
  // compares them).
  static const std::vector<Route>& Routes();

  // `gpm`: registry the GPM monitor publishes into (may be null).
  Api(runtime::Runtime& runtime, const telemetry::MetricRegistry* gpm, std::string version);

  Admission Admit(const Request& req);
  // Counts a body that ran past admission.body_limit while it was read (413 after Admit).
  void CountBodyOverLimit(const Admission& admission);
  Response Handle(const Request& req, const Admission& admission);
  // Whether the request is an invocation: InvokeAsync answers it without a thread waiting for it.
  static bool IsInvoke(const Admission& admission);
  // Starts an invocation route's request; `reply` gets the response, on this thread when it is
  // refused before it starts or ran here, else on a runtime thread once it ends. From an event
  // loop (`caller` not kMayBlock) it returns false and calls nothing when starting would block (a
  // store read, a compile, a worker start): ask again from a thread that may block.
  bool InvokeAsync(const Request& req, const Admission& admission, std::function<void(Response)> reply,
                   runtime::Runtime::Caller caller);
  // The server's I/O threads, whose hand-overs /metrics reports (null: none counted).
  void set_io_threads(const IoThreads* t) { io_threads_ = t; }
  // A JSON error response.
  static Response Error(unsigned status, const std::string& code, const std::string& message, unsigned version,
                        bool keep_alive);
  // Counts one finished request for /metrics.
  void Record(const std::string& route, const std::string& method, unsigned status, double seconds);
  // Counts a connection refused: "total" or "per_client" (a cap), "descriptors" (accept failed).
  void CountRefusedConnection(const std::string& reason);
  // While draining, /readyz answers 503.
  void set_draining(bool d) { draining_ = d; }

  std::string RenderMetrics() const;

 private:
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled;
  };
  bool TakeRateToken(const runtime::TenantConfig& t, const std::string& key, double* retry_after);
  Response Invoke(const Request& req, const Admission& a);  // InvokeAsync, waited for
  // What an invocation's response depends on besides its result.
  struct InvokeShape {
    unsigned version = 11;
    bool keep_alive = true;
    bool json = false;  // ?format=json
    std::string tenant;
  };
  static std::optional<Response> ParseInvoke(const Request& req, const Admission& a, runtime::InvokeRequest* ir);
  Response InvokeResponse(const InvokeShape& shape, Result<runtime::InvokeResult> r);

  runtime::Runtime& rt_;
  const telemetry::MetricRegistry* gpm_;
  std::string version_;
  std::atomic<bool> draining_{false};
  const IoThreads* io_threads_ = nullptr;
  std::mutex rate_mu_;
  std::map<std::string, Bucket> buckets_;  // by token digest (or tenant without tokens)
  telemetry::HistogramFamily invocation_seconds_;
  telemetry::HistogramFamily http_seconds_;
  telemetry::MetricRegistry http_;  // request counters
};

}  // namespace gpuwasm::server
