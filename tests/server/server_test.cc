// The HTTP API against a real `Server` on loopback: deploy and invoke every example, auth, the
// 413/429/503/504 paths, slow and idle clients, 64 concurrent invocations, /metrics as Prometheus
// text matching what was done, and a graceful shutdown that loses no accepted request.
#include "server/server.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <boost/asio.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "../common/guests.h"
#include "../common/temp_dir.h"
#include "server/client.h"
#include "server/metric_list.h"

namespace gpuwasm::server {
namespace {
namespace fs = std::filesystem;
using gpuwasm::testing::Cpu;
using gpuwasm::testing::Example;
using gpuwasm::testing::Lifecycle;
using gpuwasm::testing::ReadFile;
using gpuwasm::testing::TempDir;
using gpuwasm::testing::U64;
namespace http = boost::beast::http;
using nlohmann::json;
using std::chrono::milliseconds;

runtime::TenantConfig Tenant(const std::string& name, const std::string& token = "") {
  runtime::TenantConfig t;
  t.name = name;
  if (!token.empty()) t.token_sha256.push_back(runtime::HashToken(token).substr(7));
  t.concurrent_invocations = 64;
  return t;
}

// A runtime and a server on a free loopback port.
struct Node {
  TempDir dir;
  std::unique_ptr<runtime::Runtime> rt;
  std::unique_ptr<Server> server;

  explicit Node(std::vector<runtime::TenantConfig> tenants = {Tenant("default")},
                std::function<void(runtime::RuntimeConfig&)> tweak = {}) {
    runtime::RuntimeConfig c;
    c.store_dir = dir.path();
    c.tenants = std::move(tenants);
    c.server.listen = "127.0.0.1:0";
    c.workers = 8;
    if (tweak) tweak(c);
    runtime::RuntimeOptions o;
    o.device = Cpu();
    o.engine.cache_dir = GPUWASM_SERVER_TEST_CACHE;
    if (c.isolation == runtime::Isolation::kProcess) {
      o.worker_program = GPUWASM_BINARY;
      o.engine.translator = GPUWASM_BINARY;
    }
    auto r = runtime::Runtime::Create(std::move(c), std::move(o));
    EXPECT_TRUE(r.ok()) << r.status();
    rt = std::move(*r);
    auto s = Server::Start(*rt, nullptr, "test");
    EXPECT_TRUE(s.ok()) << s.status();
    server = std::move(*s);
  }
  ~Node() {
    server.reset();
    rt.reset();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server->port()); }
  std::unique_ptr<HttpClient> Client(const std::string& token = "") const {
    return std::move(*HttpClient::Connect(url(), token));
  }
};

Response Must(Result<Response> r) {
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : Response{};
}

std::string Header(const Response& r, const char* name) {
  auto it = r.find(name);
  return it == r.end() ? "" : std::string(it->value().data(), it->value().size());
}

// Deploys and waits until ready; returns the function's id.
std::string Deploy(HttpClient& c, const std::string& name, const fs::path& wasm, const std::string& entry = "") {
  Response r = Must(c.Send(http::verb::post, "/v1/functions?name=" + name + (entry.empty() ? "" : "&entry=" + entry),
                           ReadFile(wasm)));
  EXPECT_EQ(r.result_int(), 202u) << r.body();
  json fn = json::parse(r.body());
  EXPECT_EQ(fn["status"], "compiling");
  EXPECT_EQ(fn["name"], name);
  EXPECT_EQ(fn["sha256"].get<std::string>().size(), 64u);
  std::string id = fn["id"];
  for (int i = 0; i < 1200 && fn["status"] == "compiling"; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    fn = json::parse(Must(c.Send(http::verb::get, "/v1/functions/" + id)).body());
  }
  EXPECT_EQ(fn["status"], "ready") << fn.dump();
  return id;
}

TEST(Server, deploys_and_invokes_every_example) {
  Node node;
  auto c = node.Client();
  Deploy(*c, "hello", Example("hello"));
  Response r = Must(c->Send(http::verb::post, "/v1/functions/hello/invoke", "abc"));
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r.body(), "hello from a gpuwasm guest: 3 input bytes, checksum 00017862\n");
  EXPECT_EQ(Header(r, "X-Gpuwasm-Status"), "ok");
  EXPECT_EQ(Header(r, "X-Gpuwasm-Exit-Status"), "0");
  EXPECT_FALSE(Header(r, "X-Gpuwasm-Duration-Ms").empty());
  EXPECT_EQ(json::parse(Header(r, "X-Gpuwasm-Metrics"))["kernels_launched"], 0);
  for (const char* name : {"vector_add", "saxpy", "reduction", "matmul", "softmax"}) {
    std::string id = Deploy(*c, name, Example(name));
    Response e = Must(c->Send(http::verb::post, "/v1/functions/" + id + "/invoke?format=json"));
    EXPECT_EQ(e.result_int(), 200u) << name;
    json j = json::parse(e.body());
    EXPECT_EQ(j["status"], "ok") << j.dump();
    EXPECT_EQ(j["function_id"], id);
    EXPECT_NE(j["stdout"].get<std::string>().find(" OK"), std::string::npos) << j.dump();
    EXPECT_GE(j["metrics"]["kernels_launched"].get<int>(), 1);
    EXPECT_GT(j["gpu_time_ms"].get<double>(), 0);
  }
  json list = json::parse(Must(c->Send(http::verb::get, "/v1/functions")).body());
  EXPECT_EQ(list["functions"].size(), 6u);
}

TEST(Server, bad_listen_addresses_are_refused) {
  for (auto [listen, message] : std::vector<std::pair<std::string, std::string>>{
           {"127.0.0.1",
            "invalid_argument: listen address '127.0.0.1' must be host:port (\"127.0.0.1:8080\", \":8080\")"},
           {"127.0.0.1:http", "invalid_argument: listen address '127.0.0.1:http' has no valid port (0 to 65535)"},
           {"127.0.0.1:70000", "invalid_argument: listen address '127.0.0.1:70000' has no valid port (0 to 65535)"},
           {"example.com:80",
            "invalid_argument: listen address 'example.com:80': 'example.com' is not an IPv4 "
            "address, an IPv6 address in brackets or localhost"}}) {
    TempDir dir;
    runtime::RuntimeConfig c;
    c.store_dir = dir.path();
    c.server.listen = listen;
    runtime::RuntimeOptions o;
    o.device = Cpu();
    o.engine.cache_dir = GPUWASM_SERVER_TEST_CACHE;
    auto rt = runtime::Runtime::Create(std::move(c), std::move(o));
    ASSERT_TRUE(rt.ok()) << rt.status();
    auto s = Server::Start(**rt, nullptr, "test");
    ASSERT_FALSE(s.ok()) << listen;
    EXPECT_EQ(s.status().ToString(), message);
  }
}

// `localhost` is 127.0.0.1 (no name is looked up), and port 0 picks a free port.
TEST(Server, localhost_port_zero_listens_on_loopback) {
  Node node({Tenant("default")}, [](runtime::RuntimeConfig& c) { c.server.listen = "localhost:0"; });
  ASSERT_NE(node.server, nullptr);
  EXPECT_NE(node.server->port(), 0);
  EXPECT_EQ(Must(node.Client()->Send(http::verb::get, "/healthz")).result_int(), 200u);  // on 127.0.0.1
}

TEST(Server, an_invocation_takes_arguments_and_environment_as_json_in_the_query) {
  Node node;
  auto c = node.Client();
  Deploy(*c, "env", Lifecycle(), "print_args_env");
  // ?args=["blur","two words"]&env={"MODE":"fast"}
  Response r = Must(c->Send(http::verb::post,
                            "/v1/functions/env/invoke?args=%5B%22blur%22%2C%22two%20words%22%5D"
                            "&env=%7B%22MODE%22%3A%22fast%22%7D"));
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r.body(), "arg: env\narg: blur\narg: two words\nenv: MODE=fast\n");
  Response not_json = Must(c->Send(http::verb::post, "/v1/functions/env/invoke?args=blur"));
  EXPECT_EQ(not_json.result_int(), 400u);
  EXPECT_EQ(json::parse(not_json.body())["message"], "args: a JSON array of strings, e.g. [\"blur\",\"3\"]");
  Response bad_key = Must(c->Send(http::verb::post, "/v1/functions/env/invoke?env=%7B%22A%20B%22%3A%221%22%7D"));
  EXPECT_EQ(bad_key.result_int(), 400u);
  EXPECT_EQ(json::parse(bad_key.body())["message"],
            "environment entry 1 'A B=1' is not KEY=value with KEY of letters, digits and _ (not first a digit)");
}

TEST(Server, binary_output_and_errors_as_json) {
  Node node;
  auto c = node.Client();
  Deploy(*c, "echo", Lifecycle(), "echo");
  std::string bytes(
      "\x00\xff\x01"
      "binary",
      9);
  Response raw = Must(c->Send(http::verb::post, "/v1/functions/echo/invoke", bytes));
  EXPECT_EQ(raw.body(), bytes);
  json j = json::parse(Must(c->Send(http::verb::post, "/v1/functions/echo/invoke?format=json", bytes)).body());
  EXPECT_TRUE(j["output"].is_null());
  EXPECT_EQ(j["output_base64"], "AP8BYmluYXJ5");

  Response missing = Must(c->Send(http::verb::post, "/v1/functions/nothing/invoke"));
  EXPECT_EQ(missing.result_int(), 404u);
  EXPECT_EQ(json::parse(missing.body())["code"], "not_found");
  Response bad_method = Must(c->Send(http::verb::put, "/v1/functions"));
  EXPECT_EQ(bad_method.result_int(), 405u);
  EXPECT_EQ(Header(bad_method, "Allow"), "GET, POST");
  Response no_name = Must(c->Send(http::verb::post, "/v1/functions", "x"));
  EXPECT_EQ(no_name.result_int(), 400u);
  EXPECT_NE(json::parse(no_name.body())["message"].get<std::string>().find("?name="), std::string::npos);
  Response bad_timeout = Must(c->Send(http::verb::post, "/v1/functions/echo/invoke?timeout=soon"));
  EXPECT_EQ(bad_timeout.result_int(), 400u);
  EXPECT_EQ(Must(c->Send(http::verb::get, "/healthz")).result_int(), 200u);
  EXPECT_EQ(Must(c->Send(http::verb::get, "/readyz")).result_int(), 200u);

  // Delete: gone for invoke and get, and twice is 404.
  std::string id = json::parse(Must(c->Send(http::verb::get, "/v1/functions/echo")).body())["id"];
  EXPECT_EQ(Must(c->Send(http::verb::delete_, "/v1/functions/" + id)).result_int(), 200u);
  EXPECT_EQ(Must(c->Send(http::verb::get, "/v1/functions/" + id)).result_int(), 404u);
  EXPECT_EQ(Must(c->Send(http::verb::delete_, "/v1/functions/" + id)).result_int(), 404u);
}

TEST(Server, tokens_map_to_tenants_and_tenants_stay_apart) {
  Node node({Tenant("acme", "acme-token"), Tenant("beta", "beta-token")},
            [](runtime::RuntimeConfig& c) { c.server.metrics_token_sha256 = runtime::HashToken("scrape").substr(7); });
  auto acme = node.Client("acme-token");
  std::string id = Deploy(*acme, "echo", Lifecycle(), "echo");
  auto anonymous = node.Client();
  Response r = Must(anonymous->Send(http::verb::get, "/v1/functions"));
  EXPECT_EQ(r.result_int(), 401u);
  EXPECT_EQ(Header(r, "WWW-Authenticate"), "Bearer");
  EXPECT_EQ(json::parse(r.body())["code"], "unauthorized");
  EXPECT_EQ(Must(node.Client("wrong")->Send(http::verb::get, "/v1/functions")).result_int(), 401u);
  auto beta = node.Client("beta-token");
  EXPECT_EQ(Must(beta->Send(http::verb::get, "/v1/functions/" + id)).result_int(), 404u);
  EXPECT_EQ(Must(beta->Send(http::verb::post, "/v1/functions/" + id + "/invoke", "x")).result_int(), 404u);
  EXPECT_EQ(Must(beta->Send(http::verb::delete_, "/v1/functions/" + id)).result_int(), 404u);
  EXPECT_EQ(json::parse(Must(beta->Send(http::verb::get, "/v1/functions")).body())["functions"].size(), 0u);
  EXPECT_EQ(Must(acme->Send(http::verb::post, "/v1/functions/" + id + "/invoke", "mine")).body(), "mine");
  EXPECT_EQ(Must(anonymous->Send(http::verb::get, "/metrics")).result_int(), 401u);
  EXPECT_EQ(Must(node.Client("scrape")->Send(http::verb::get, "/metrics")).result_int(), 200u);
  EXPECT_EQ(Must(anonymous->Send(http::verb::get, "/healthz")).result_int(), 200u);  // probes need no token
}

// The admin token ([server].admin_token) lists every tenant's functions and running instances,
// and acts for no tenant: deploys, invocations and deletes with it are refused (403). A tenant's
// token still sees only its own.
TEST(Server, the_admin_token_sees_every_tenant_and_acts_for_none) {
  Node node({Tenant("acme", "acme-token"), Tenant("beta", "beta-token")},
            [](runtime::RuntimeConfig& c) { c.server.admin_token_sha256 = runtime::HashToken("ops").substr(7); });
  auto acme = node.Client("acme-token"), beta = node.Client("beta-token"), admin = node.Client("ops");
  std::string a = Deploy(*acme, "life", Lifecycle(), "spin_holding");
  std::string b = Deploy(*beta, "echo", Lifecycle(), "echo");
  std::set<std::string> tenants;
  Response all = Must(admin->Send(http::verb::get, "/v1/functions"));
  ASSERT_EQ(all.result_int(), 200u) << all.body();
  const json listed = json::parse(all.body());
  for (const json& f : listed["functions"]) {
    tenants.insert(f["tenant"].get<std::string>());
  }
  EXPECT_EQ(tenants, (std::set<std::string>{"acme", "beta"}));
  EXPECT_EQ(json::parse(Must(beta->Send(http::verb::get, "/v1/functions")).body())["functions"].size(), 1u);
  auto spinner = std::async(std::launch::async, [&] {
    return Must(node.Client("acme-token")->Send(http::verb::post, "/v1/functions/life/invoke?timeout=1s"));
  });
  while (node.rt->Instances().empty()) std::this_thread::sleep_for(milliseconds(5));
  json seen = json::parse(Must(admin->Send(http::verb::get, "/v1/instances")).body())["instances"];
  ASSERT_EQ(seen.size(), 1u) << seen.dump();
  EXPECT_EQ(seen[0]["tenant"], "acme");
  EXPECT_EQ(json::parse(Must(beta->Send(http::verb::get, "/v1/instances")).body())["instances"].size(), 0u);
  for (auto [method, target] : {std::pair{http::verb::post, "/v1/functions?name=x"},
                                {http::verb::post, "/v1/functions/life/invoke"},
                                {http::verb::delete_, "/v1/functions/fn_0000000000000000"},
                                {http::verb::get, "/v1/functions/life"}}) {
    Response r = Must(admin->Send(method, target));
    EXPECT_EQ(r.result_int(), 403u) << target;
    EXPECT_EQ(json::parse(r.body())["code"], "forbidden") << target;
  }
  EXPECT_EQ(Must(node.Client("not-ops")->Send(http::verb::get, "/v1/instances")).result_int(), 401u);
  EXPECT_EQ(spinner.get().result_int(), 504u);
  (void)a, (void)b;
}

TEST(Server, limits_answer_413_429_503_504) {
  runtime::TenantConfig t = Tenant("default");
  t.max_input_size = 1024;
  t.max_module_size = 4096;
  t.concurrent_invocations = 1;
  runtime::TenantConfig limited = Tenant("limited", "limited-token");
  limited.rate_limit = 1;
  limited.rate_burst = 2;
  runtime::TenantConfig open = t;
  open.token_sha256.push_back(runtime::HashToken("open-token").substr(7));
  Node node({open, limited});
  auto c = node.Client("open-token");
  // 413: the body is refused from its Content-Length, before it is read.
  Response big = Must(c->Send(http::verb::post, "/v1/functions?name=hello", ReadFile(Example("hello"))));
  EXPECT_EQ(big.result_int(), 413u);
  EXPECT_NE(json::parse(big.body())["message"].get<std::string>().find("max_module_size"), std::string::npos);
  auto l = node.Client("limited-token");
  // 429: a burst of 2, then one request per second.
  EXPECT_EQ(Must(l->Send(http::verb::get, "/v1/functions")).result_int(), 200u);
  EXPECT_EQ(Must(l->Send(http::verb::get, "/v1/functions")).result_int(), 200u);
  Response limited_r = Must(l->Send(http::verb::get, "/v1/functions"));
  EXPECT_EQ(limited_r.result_int(), 429u);
  EXPECT_EQ(Header(limited_r, "Retry-After"), "1");
  EXPECT_EQ(json::parse(limited_r.body())["code"], "rate_limited");
  EXPECT_EQ(Must(c->Send(http::verb::get, "/v1/functions")).result_int(), 200u);  // other tokens are not limited
}

TEST(Server, overload_is_503_and_deadline_is_504) {
  runtime::TenantConfig t = Tenant("default");
  t.concurrent_invocations = 1;
  t.max_input_size = 16;
  Node node({t});
  auto c = node.Client();
  Deploy(*c, "life", Lifecycle(), "spin_holding");
  Response late = Must(c->Send(http::verb::post, "/v1/functions/life/invoke?timeout=200ms"));
  EXPECT_EQ(late.result_int(), 504u);
  EXPECT_EQ(Header(late, "X-Gpuwasm-Status"), "deadline");
  EXPECT_EQ(Header(late, "X-Gpuwasm-Exit-Status"), "124");
  auto spinner = std::async(std::launch::async, [&] {
    return Must(node.Client()->Send(http::verb::post, "/v1/functions/life/invoke?timeout=2s"));
  });
  while (node.rt->Instances().empty()) std::this_thread::sleep_for(milliseconds(5));
  Response busy = Must(c->Send(http::verb::post, "/v1/functions/life/invoke?timeout=2s"));
  EXPECT_EQ(busy.result_int(), 503u);
  EXPECT_EQ(Header(busy, "Retry-After"), "1");
  EXPECT_NE(json::parse(busy.body())["message"].get<std::string>().find("overloaded"), std::string::npos);
  EXPECT_EQ(spinner.get().result_int(), 504u);
  Response big = Must(c->Send(http::verb::post, "/v1/functions/life/invoke", std::string(17, 'x')));
  EXPECT_EQ(big.result_int(), 413u);
  EXPECT_EQ(json::parse(big.body())["code"], "payload_too_large");
}

// In-process instances run on the I/O thread that read their request (ADR 0026): guests spinning
// to their deadlines on the only I/O thread leave the node answering, each hold handed over and
// counted.
TEST(Server, guests_holding_every_io_thread_leave_the_node_answering) {
  Node node({Tenant("default")}, [](runtime::RuntimeConfig& c) {
    c.isolation = runtime::Isolation::kNone;
    c.server.io_threads = 1;
  });
  auto c = node.Client();
  Deploy(*c, "life", Lifecycle(), "spin_holding");
  // Loaded by a first invocation (on a handler thread): the next ones start on the I/O thread.
  EXPECT_EQ(Must(c->Send(http::verb::post, "/v1/functions/life/invoke?timeout=20ms")).result_int(), 504u);
  std::vector<std::future<Response>> spinners;
  for (int i = 0; i < 2; ++i) {
    spinners.push_back(std::async(std::launch::async, [&] {
      return Must(node.Client()->Send(http::verb::post, "/v1/functions/life/invoke?timeout=2s"));
    }));
    // Each is read (and so started) only when a thread serves the loop.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (node.rt->Instances().size() < static_cast<size_t>(i) + 1 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(2));
    }
    ASSERT_EQ(node.rt->Instances().size(), static_cast<size_t>(i) + 1);
  }
  auto asked = std::chrono::steady_clock::now();
  EXPECT_EQ(Must(c->Send(http::verb::get, "/healthz")).result_int(), 200u);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, milliseconds(500));
  for (auto& s : spinners) EXPECT_EQ(s.get().result_int(), 504u);
  std::string metrics = Must(c->Send(http::verb::get, "/metrics")).body();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics, m, std::regex("\ngpuwasm_io_thread_handoffs_total ([0-9]+)\n")));
  EXPECT_GE(std::stoi(m[1]), 2);
}

// Raw socket helpers for slow clients.
struct RawConnection {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket{io};
  explicit RawConnection(uint16_t port) { socket.connect({boost::asio::ip::make_address("127.0.0.1"), port}); }
  void Write(const std::string& s) { boost::asio::write(socket, boost::asio::buffer(s)); }
  // Everything until the server closes the connection (or 5 s).
  std::string ReadUntilClosed() {
    std::string out;
    char buf[4096];
    socket.non_blocking(false);
    timeval tv{5, 0};
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (;;) {
      ssize_t n = ::recv(socket.native_handle(), buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
};

TEST(Server, slow_and_idle_clients_are_disconnected) {
  Node node({Tenant("default")}, [](runtime::RuntimeConfig& c) {
    c.server.read_timeout = milliseconds(300);
    c.server.idle_timeout = milliseconds(300);
    c.tenants[0].max_module_size = 4096;
  });
  auto started = std::chrono::steady_clock::now();
  RawConnection slow(node.server->port());
  slow.Write("GET /healthz HTTP/1.1\r\nHost: x\r\n");  // and never the end of the header
  EXPECT_EQ(slow.ReadUntilClosed(), "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(3000));

  RawConnection idle(node.server->port());
  idle.Write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string answer = idle.ReadUntilClosed();  // one answer, then closed when idle
  EXPECT_NE(answer.find("HTTP/1.1 200 OK"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"ok\""), std::string::npos);

  // Keep-alive: several requests on one connection.
  RawConnection keep(node.server->port());
  keep.Write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string two = keep.ReadUntilClosed();
  EXPECT_NE(two.find("\"ready\""), std::string::npos) << two;

  // A chunked body (no Content-Length) is cut off at the tenant's limit: 413.
  RawConnection chunked(node.server->port());
  std::string head = "POST /v1/functions?name=x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  chunked.Write(head + "2000\r\n" + std::string(8192, 'a'));
  std::string refused = chunked.ReadUntilClosed();
  EXPECT_NE(refused.find("413"), std::string::npos) << refused.substr(0, 200);
  // Counted like a refusal from the header: every limit has a counter.
  EXPECT_EQ(
      node.rt->Stats().tenants.at(0).totals.limit_refusals[static_cast<int>(runtime::RefusedLimit::kMaxModuleSize)],
      1u);
}

// A client that sends requests and never reads the answers holds the connection only for
// read_timeout: an answer's write has the same deadline as a request's read. (Fails with that
// deadline removed: the poll times out.)
TEST(Server, a_client_that_never_reads_its_answers_is_disconnected) {
  Node node({Tenant("default")}, [](runtime::RuntimeConfig& c) {
    c.server.read_timeout = milliseconds(300);
    c.server.idle_timeout = milliseconds(300);
  });
  auto c = node.Client();
  const size_t answer = Must(c->Send(http::verb::get, "/metrics")).body().size();
  // Pipelined: more answers than the kernel buffers of both ends hold.
  const size_t asked = (32u << 20) / answer + 1;
  RawConnection reader(node.server->port());
  std::string requests;
  for (size_t i = 0; i < asked; ++i) requests += "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  reader.Write(requests);
  // Not reading: once the kernel buffers are full the answers' writes stall, and the server must
  // close the connection (the client sees it hang up) without a byte read here. However slow the
  // machine (a sanitizer build fills the buffers in seconds), 30 s is far beyond read_timeout.
  pollfd hangup{reader.socket.native_handle(), POLLRDHUP, 0};
  int n = ::poll(&hangup, 1, 30'000);
  EXPECT_EQ(n, 1) << "the connection of a client that read none of its answers stayed open";
  // The node goes on serving.
  EXPECT_EQ(Must(c->Send(http::verb::get, "/healthz")).result_int(), 200u);
}

// 64 clients at once, three invocations each, with inputs of their own sizes (to the hello example
// some of 96 KiB, more than an I/O thread sends to a worker), half to hello, half to an echo.
void SixtyFourConcurrentInvocations(const Node& node) {
  auto c = node.Client();
  Deploy(*c, "hello", Example("hello"));
  Deploy(*c, "echo", Lifecycle(), "echo");
  std::vector<std::future<bool>> runs;
  for (int i = 0; i < 64; ++i) {
    runs.push_back(std::async(std::launch::async, [&, i] {
      auto client = node.Client();
      size_t pad = i % 8 == 4 ? (96u << 10) : static_cast<size_t>(i) * 37;
      std::string input = "client " + std::to_string(i) + std::string(pad, 'q');
      bool hello = i % 2 == 0;
      for (int round = 0; round < 3; ++round) {
        auto r = client->Send(http::verb::post, std::string("/v1/functions/") + (hello ? "hello" : "echo") + "/invoke",
                              input);
        if (!r.ok() || r->result_int() != 200) {
          ADD_FAILURE() << "client " << i << ": " << (r.ok() ? r->body() : r.status().ToString());
          return false;
        }
        if (!hello) {
          if (r->body() != input) return false;
          continue;
        }
        uint32_t sum = 0;
        for (unsigned char ch : input) sum = sum * 31u + ch;
        char want[128];
        std::snprintf(want, sizeof want, "hello from a gpuwasm guest: %zu input bytes, checksum %08x\n", input.size(),
                      sum);
        if (r->body() != want) return false;
      }
      return true;
    }));
  }
  int correct = 0;
  for (auto& r : runs) correct += r.get() ? 1 : 0;
  EXPECT_EQ(correct, 64);
}

TEST(Server, sixty_four_concurrent_invocations_are_all_correct) { SixtyFourConcurrentInvocations(Node()); }

// The same through tenant worker processes with a pool of 2: invocations start on the I/O threads,
// queue behind the pool and start in the slot a finished one frees, or from a pool thread (the
// first one, which starts the worker; large inputs). Every answer is right and nothing is left
// running or admitted.
TEST(Server, sixty_four_concurrent_invocations_in_worker_processes_are_all_correct) {
  Node node({Tenant("default")}, [](runtime::RuntimeConfig& c) {
    c.isolation = runtime::Isolation::kProcess;
    c.workers = 2;
  });
  SixtyFourConcurrentInvocations(node);
  EXPECT_TRUE(node.rt->Instances().empty());
  for (const runtime::TenantStats& t : node.rt->Stats().tenants) EXPECT_EQ(t.totals.running, 0u) << t.tenant;
}

// Minimal Prometheus text-format check: HELP/TYPE before samples, valid names, labels and values.
std::map<std::string, double> ParsePrometheus(const std::string& text) {
  std::map<std::string, double> samples;
  std::regex sample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*)?\})? ([-+]?([0-9.]+([eE][-+]?[0-9]+)?|Inf|NaN))$)");
  std::regex meta(R"(^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$)");
  std::set<std::string> typed;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, meta)) {
      if (m[1] == "TYPE") typed.insert(m[2]);
      continue;
    }
    EXPECT_TRUE(std::regex_match(line, m, sample)) << "not a sample line: " << line;
    if (m.empty()) continue;
    std::string name = m[1];
    std::string family = std::regex_replace(name, std::regex("_(bucket|sum|count)$"), "");
    EXPECT_TRUE(typed.count(name) || typed.count(family)) << "no TYPE before " << name;
    samples[name + std::string(m[2])] = std::stod(m[7]);
  }
  return samples;
}

TEST(Server, metrics_are_prometheus_text_matching_what_was_done) {
  Node node;
  auto c = node.Client();
  std::string id = Deploy(*c, "va", Example("vector_add"));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Must(c->Send(http::verb::post, "/v1/functions/va/invoke")).result_int(), 200u);
  std::string echo = Deploy(*c, "life", Lifecycle(), "fault");
  EXPECT_EQ(Header(Must(c->Send(http::verb::post, "/v1/functions/life/invoke")), "X-Gpuwasm-Status"), "exit_error");
  Response m = Must(c->Send(http::verb::get, "/metrics"));
  EXPECT_EQ(m.result_int(), 200u);
  EXPECT_NE(Header(m, "Content-Type").find("text/plain; version=0.0.4"), std::string::npos);
  auto s = ParsePrometheus(m.body());
  std::string fl = "{tenant=\"default\",function=\"va\",function_id=\"" + id + "\"";
  EXPECT_EQ(s["gpuwasm_invocations_total" + fl + ",status=\"ok\"}"], 3);
  EXPECT_EQ(s["gpuwasm_function_kernels_launched_total" + fl + "}"], 3);
  EXPECT_EQ(s["gpuwasm_kernels_launched_total{tenant=\"default\"}"], 4);  // + the faulting launch
  EXPECT_GT(s["gpuwasm_gpu_time_seconds_total{tenant=\"default\"}"], 0);
  EXPECT_EQ(s["gpuwasm_running_instances{tenant=\"default\"}"], 0);
  EXPECT_EQ(s["gpuwasm_device_bytes_allocated{tenant=\"default\"}"], 0);
  EXPECT_EQ(s["gpuwasm_device_context_bytes{tenant=\"default\"}"], 0);
  EXPECT_EQ(s["gpuwasm_invocation_duration_seconds_count{tenant=\"default\"}"], 4);
  EXPECT_EQ(s["gpuwasm_http_requests_total{route=\"/v1/functions/{id}/invoke\",method=\"POST\",code=\"200\"}"], 4);
  EXPECT_EQ(s["gpuwasm_build_info{version=\"test\",device=\"" + Cpu()->info().name + "\"}"], 1);
}

// The rows of docs/metrics.md's /metrics table generated from the list (what to paste when the
// check below fails; the meaning column may then say more than the help text).
std::string GeneratedRows() {
  std::string rows;
  for (const MetricDef& d : kMetricList) {
    rows += "| `" + std::string(d.name) + "` | " + std::string(MetricTypeName(d.type)) + " | " +
            (d.labels.empty() ? std::string("—") : std::string(d.labels)) + " | " + std::string(d.help) + " |\n";
  }
  return rows;
}

// docs/openapi.json describes exactly the routes the server matches, with their methods; and a
// real server answers each described path and method with something else than "no such route"
// (404 unknown endpoint) or 405.
TEST(OpenApi, describes_exactly_the_routes_the_server_matches) {
  std::ifstream in(std::string(GPUWASM_SOURCE_DIR) + "/docs/openapi.json");
  ASSERT_TRUE(in) << "docs/openapi.json not found";
  const json spec = json::parse(in);
  std::map<std::string, std::set<std::string>> described, served;
  for (const auto& [path, item] : spec.at("paths").items()) {
    for (const auto& [key, op] : item.items()) {
      if (key == "parameters") continue;
      std::string method = key;
      for (char& ch : method) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      described[path].insert(method);
      EXPECT_TRUE(op.contains("responses") && op.contains("operationId")) << method << " " << path;
    }
  }
  for (const Route& r : Api::Routes()) served[r.path].insert(r.methods.begin(), r.methods.end());
  ASSERT_GE(served.size(), 7u);
  EXPECT_EQ(described, served);

  Node node;
  for (const auto& [path, methods] : described) {
    const std::string target = std::regex_replace(path, std::regex(R"(\{id\})"), "fn_0000000000000000");
    for (const std::string& method : methods) {
      RawConnection c(node.server->port());
      c.Write(method + " " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      const std::string answer = c.ReadUntilClosed();
      EXPECT_EQ(answer.find("HTTP/1.1 405"), std::string::npos) << method << " " << target << ": " << answer;
      EXPECT_EQ(answer.find("no such endpoint"), std::string::npos) << method << " " << target << ": " << answer;
      EXPECT_EQ(answer.rfind("HTTP/1.1 ", 0), 0u) << method << " " << target << ": " << answer;
    }
  }
}

TEST(MetricList, docs_metrics_md_documents_exactly_the_list) {
  std::ifstream in(std::string(GPUWASM_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_TRUE(in) << "docs/metrics.md not found";
  // | `name` | type | labels | meaning |, the GPM families (named from NVML's list) aside.
  std::regex row(R"(^\| `(gpuwasm_[a-z0-9_]+)` \| (counter|gauge|histogram) \| ([^|]+) \|)");
  std::map<std::string, std::pair<std::string, std::string>> documented;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      std::string labels = m[3];
      labels = labels.substr(0, labels.find_last_not_of(' ') + 1);
      documented[m[1]] = {m[2], labels == "—" ? "" : labels};
    }
  }
  std::map<std::string, std::pair<std::string, std::string>> listed;
  for (const MetricDef& d : kMetricList) {
    listed[std::string(d.name)] = {std::string(MetricTypeName(d.type)), std::string(d.labels)};
  }
  ASSERT_GE(listed.size(), 25u);
  EXPECT_EQ(documented, listed) << "docs/metrics.md differs from src/server/metric_list.h; its rows:\n"
                                << GeneratedRows();
}

TEST(MetricList, metrics_exports_only_listed_metrics_with_their_types_and_counts_limit_refusals) {
  runtime::TenantConfig small = Tenant("default");
  small.max_input_size = 16;
  Node node({small});
  auto c = node.Client();
  Deploy(*c, "life", Lifecycle(), "echo");
  EXPECT_EQ(Must(c->Send(http::verb::post, "/v1/functions/life/invoke", std::string(17, 'x'))).result_int(), 413u);
  EXPECT_EQ(Must(c->Send(http::verb::post, "/v1/functions/life/invoke", std::string(16, 'x'))).result_int(), 200u);
  std::string text = Must(c->Send(http::verb::get, "/metrics")).body();
  std::regex type_line(R"(^# TYPE (\S+) (\S+)$)");
  std::set<std::string> exported;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, type_line)) continue;
    const MetricDef* def = nullptr;
    for (const MetricDef& d : kMetricList) def = d.name == m[1].str() ? &d : def;
    ASSERT_NE(def, nullptr) << m[1] << " is exported but not in src/server/metric_list.h";
    EXPECT_EQ(MetricTypeName(def->type), m[2].str()) << m[1];
    exported.insert(m[1]);
  }
  EXPECT_TRUE(exported.count("gpuwasm_limit_refusals_total"));
  auto s = ParsePrometheus(text);
  EXPECT_EQ(s["gpuwasm_limit_refusals_total{tenant=\"default\",limit=\"max_input_size\"}"], 1);
  EXPECT_EQ(s["gpuwasm_limit_refusals_total{tenant=\"default\",limit=\"args_and_env\"}"], 0);
  EXPECT_EQ(s["gpuwasm_invocations_total{tenant=\"default\",function=\"life\",function_id=\"" +
              node.rt->Stats().functions.at(0).function_id + "\",status=\"ok\"}"],
            1);
}

TEST(Server, graceful_shutdown_answers_every_accepted_request) {
  auto node = std::make_unique<Node>();
  auto c = node->Client();
  Deploy(*c, "wait", Lifecycle(), "wait_kernel");
  std::vector<std::future<Result<Response>>> inflight;
  for (int i = 0; i < 4; ++i) {
    inflight.push_back(std::async(std::launch::async, [&] {
      return node->Client()->Send(http::verb::post, "/v1/functions/wait/invoke", U64(400));
    }));
  }
  while (node->rt->Instances().size() < 4) std::this_thread::sleep_for(milliseconds(5));
  uint16_t port = node->server->port();
  node->server->Shutdown(milliseconds(10'000));
  for (auto& f : inflight) {
    Result<Response> r = f.get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->result_int(), 200u);
    EXPECT_EQ(Header(*r, "X-Gpuwasm-Status"), "ok");
  }
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  boost::system::error_code ec;
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
  EXPECT_TRUE(ec) << "still accepting after shutdown";
}

}  // namespace
}  // namespace gpuwasm::server

namespace gpuwasm::server {
namespace {

TEST(ServerHardening, methods_are_matched_exactly) {
  Node node;
  for (const char* method : {"E", "OS", "T", "GE", "DELETEX", "get"}) {
    RawConnection c(node.server->port());
    c.Write(std::string(method) + " /v1/functions/x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    std::string answer = c.ReadUntilClosed();
    EXPECT_NE(answer.find("HTTP/1.1 405"), std::string::npos) << method << ": " << answer.substr(0, 120);
    EXPECT_NE(answer.find("Allow: GET, DELETE"), std::string::npos) << method;
  }
}

TEST(ServerHardening, bodies_at_the_documented_limits_get_answers) {
  Node node;
  auto c = node.Client();
  Deploy(*c, "echo", Lifecycle(), "echo");
  // 15 MiB of input (the tenant's max_input_size is 16 MiB) is read and run; the guest echoes the
  // first 64 KiB. Over 1 MiB, clients such as curl ask "Expect: 100-continue": answered too.
  std::string input(15 << 20, 'i');
  for (size_t i = 0; i < input.size(); i += 4096) input[i] = static_cast<char>(i / 4096);
  Response r = Must(c->Send(http::verb::post, "/v1/functions/echo/invoke", input));
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r.body(), input.substr(0, 65536));
  RawConnection expect(node.server->port());
  expect.Write(
      "POST /v1/functions/echo/invoke HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2097152\r\n\r\n");
  char buf[64] = {};
  timeval tv{5, 0};
  setsockopt(expect.socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ssize_t n = ::recv(expect.socket.native_handle(), buf, sizeof buf - 1, 0);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "HTTP/1.1 100 Continue\r\n\r\n");
  expect.Write(std::string(2 << 20, 'e'));
  EXPECT_NE(expect.ReadUntilClosed().find("HTTP/1.1 200 OK"), std::string::npos);
  // Past the limit: 413 at once, the body not read.
  Response big = Must(c->Send(http::verb::post, "/v1/functions/echo/invoke", std::string((16 << 20) + 1, 'x')));
  EXPECT_EQ(big.result_int(), 413u);
  EXPECT_NE(big.body().find("the tenant's max_input_size of 16777216 bytes"), std::string::npos) << big.body();
  // A 60 MiB deploy body (max_module_size 64 MiB) is read and judged (not a module: refused).
  Response deploy = Must(c->Send(http::verb::post, "/v1/functions?name=big", std::string(60 << 20, '\0')));
  EXPECT_EQ(deploy.result_int(), 400u) << deploy.body().substr(0, 200);
  Response huge = Must(c->Send(http::verb::post, "/v1/functions?name=huge", std::string((64 << 20) + 1, '\0')));
  EXPECT_EQ(huge.result_int(), 413u);
}

TEST(ServerHardening, connections_over_the_caps_are_refused_and_the_node_keeps_answering) {
  Node node({Tenant("default")}, [](runtime::RuntimeConfig& c) {
    c.server.max_connections = 6;
    c.server.max_connections_per_client = 4;
  });
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawConnection>(node.server->port()));
    held.back()->Write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");  // each stays open (keep-alive)
  }
  std::this_thread::sleep_for(milliseconds(100));
  RawConnection fifth(node.server->port());
  std::string refused = fifth.ReadUntilClosed();
  EXPECT_NE(refused.find("HTTP/1.1 503"), std::string::npos) << refused;
  EXPECT_NE(refused.find("max_connections_per_client"), std::string::npos) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos);
  held.clear();
  std::this_thread::sleep_for(milliseconds(100));
  auto c = node.Client();
  EXPECT_EQ(Must(c->Send(http::verb::get, "/healthz")).result_int(), 200u);
  std::string metrics = Must(c->Send(http::verb::get, "/metrics")).body();
  EXPECT_NE(metrics.find("gpuwasm_http_connections_refused_total{reason=\"per_client\"} 1"), std::string::npos);
}

TEST(ServerHardening, shutdown_answers_what_outlives_its_grace_within_it) {
  auto node = std::make_unique<Node>();
  auto c = node->Client();
  Deploy(*c, "spin", Lifecycle(), "spin_holding");
  auto inflight = std::async(std::launch::async, [&] {
    return node->Client()->Send(http::verb::post, "/v1/functions/spin/invoke?timeout=20s", U64(1 << 20));
  });
  while (node->rt->Instances().empty()) std::this_thread::sleep_for(milliseconds(5));
  auto t0 = std::chrono::steady_clock::now();
  std::thread stop([&] { node->server->Shutdown(milliseconds(500)); });
  Result<Response> r = inflight.get();
  auto took = std::chrono::steady_clock::now() - t0;
  stop.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->result_int(), 503u) << r->body();
  EXPECT_NE(r->body().find("shutting down"), std::string::npos) << r->body();
  EXPECT_GE(took, milliseconds(450));
  EXPECT_LT(took, milliseconds(1500));  // answered at the grace's end, not when the guest stops
}

TEST(ServerHardening, no_descriptor_of_the_server_reaches_a_child) {
  Node node;
  // One connection accepted and kept open (its own end made close-on-exec, like a real client's
  // in another process).
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(node.server->port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_GT(::send(fd, req, sizeof req - 1, 0), 0);
  char buf[256];
  ASSERT_GT(::recv(fd, buf, sizeof buf, 0), 0);
  // A child started now (as a compiler would be) lists the sockets it holds.
  std::string out;
  FILE* p = ::popen("ls -l /proc/self/fd 2>/dev/null | grep -c socket", "r");
  ASSERT_NE(p, nullptr);
  char line[64] = {};
  if (std::fgets(line, sizeof line, p) != nullptr) out = line;
  ::pclose(p);
  ::close(fd);
  EXPECT_EQ(out, "0\n") << "the child holds sockets of the server";
}

}  // namespace
}  // namespace gpuwasm::server
