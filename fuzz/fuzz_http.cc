// Fuzz target: HTTP request handling. The input is the raw bytes a client sends; whatever Beast
// parses goes through Api::Admit (routing, authentication, rate limit, body limits) and Api::Handle
// against a real runtime with two tenants. Every answer must be a well-formed response.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "device/cpu/cpu_device.h"
#include "server/api.h"

namespace {

using namespace gpuwasm;
namespace http = boost::beast::http;

std::filesystem::path g_dir;

runtime::Runtime& Node() {
  static std::unique_ptr<runtime::Runtime> rt = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpuwasm-fuzz-http-XXXXXX").string();
    g_dir = ::mkdtemp(tmpl.data());
    std::atexit([] { std::filesystem::remove_all(g_dir); });
    runtime::RuntimeConfig c;
    c.store_dir = g_dir / "store";
    c.workers = 2;
    c.compile_workers = 1;
    for (const char* name : {"acme", "beta"}) {
      runtime::TenantConfig t;
      t.name = name;
      t.token_sha256.push_back(runtime::HashToken(std::string(name) + "-token").substr(7));
      t.max_module_size = 4096;
      t.max_deadline = std::chrono::milliseconds(200);
      c.tenants.push_back(t);
    }
    runtime::RuntimeOptions o;
    o.device = device::cpu::CreateCpuDevice();
    o.engine.cache_dir = g_dir / "cache";
    auto r = runtime::Runtime::Create(std::move(c), std::move(o));
    if (!r.ok()) std::abort();
    return std::move(*r);
  }();
  return *rt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static server::Api api(Node(), nullptr, "fuzz");
  http::request_parser<http::string_body> parser;
  parser.eager(true);
  parser.header_limit(16 * 1024);
  parser.body_limit(1 << 20);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_header_done()) return 0;
  server::Request req = parser.release();
  server::Admission a = api.Admit(req);
  server::Response res = a.reject ? std::move(*a.reject) : api.Handle(req, a);
  res.prepare_payload();
  if (res.result_int() < 200 || res.result_int() > 599) std::abort();
  api.Record(a.route, "GET", res.result_int(), 0.001);
  return 0;
}
