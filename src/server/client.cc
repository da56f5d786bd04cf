#include "server/client.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace gpuwasm::server {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct HttpClient::Impl {
  std::string host, port, token;
  std::chrono::milliseconds timeout;
  net::io_context io;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  Status Open() {
    beast::error_code ec;
    tcp::resolver resolver(io);
    auto results = resolver.resolve(host, port, ec);
    if (ec) return Status::Unavailable("cannot resolve " + host + ": " + ec.message());
    stream.emplace(io);
    stream->expires_after(timeout);
    stream->connect(results, ec);
    if (ec) {
      stream.reset();
      return Status::Unavailable("cannot connect to " + host + ":" + port + ": " + ec.message() +
                                 " (is `gpuwasm serve` running there?)");
    }
    buffer.clear();
    return Status::Ok();
  }

  Result<Response> Once(const http::request<http::string_body>& req) {
    if (!stream) GPUWASM_RETURN_IF_ERROR(Open());
    beast::error_code ec;
    stream->expires_after(timeout);
    http::write(*stream, req, ec);
    if (ec) return Status::IoError("sending to " + host + ":" + port + ": " + ec.message());
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 32);
    http::read(*stream, buffer, parser, ec);
    if (ec) return Status::IoError("reading from " + host + ":" + port + ": " + ec.message());
    Response res = parser.release();
    if (!res.keep_alive()) stream.reset();
    return res;
  }
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

Result<std::unique_ptr<HttpClient>> HttpClient::Connect(std::string_view url, std::string token,
                                                        std::chrono::milliseconds timeout) {
  std::string_view rest = url;
  if (rest.substr(0, 7) == "http://")
    rest.remove_prefix(7);
  else if (rest.find("://") != std::string_view::npos)
    return Status::InvalidArgument("only http:// URLs are supported: " + std::string(url));
  rest = rest.substr(0, rest.find('/'));
  size_t colon = rest.rfind(':');
  auto impl = std::make_unique<Impl>();
  impl->host = std::string(colon == std::string_view::npos ? rest : rest.substr(0, colon));
  impl->port = colon == std::string_view::npos ? "80" : std::string(rest.substr(colon + 1));
  if (impl->host.empty()) return Status::InvalidArgument("no host in server URL '" + std::string(url) + "'");
  impl->token = std::move(token);
  impl->timeout = timeout;
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

Result<Response> HttpClient::Send(http::verb method, std::string_view target, std::string body,
                                  std::vector<std::pair<std::string, std::string>> headers) {
  http::request<http::string_body> req{method, std::string(target), 11};
  req.set(http::field::host, impl_->host + ":" + impl_->port);
  req.set(http::field::user_agent, "gpuwasm-cli");
  if (!impl_->token.empty()) req.set(http::field::authorization, "Bearer " + impl_->token);
  for (auto& [k, v] : headers) req.set(k, v);
  req.keep_alive(true);
  req.body() = std::move(body);
  req.prepare_payload();
  bool reused = impl_->stream.has_value();
  Result<Response> res = impl_->Once(req);
  if (!res.ok() && reused) {
    impl_->stream.reset();  // the server may have closed an idle connection: once more, fresh
    res = impl_->Once(req);
  }
  return res;
}

std::string ErrorText(const Response& res) {
  auto j = nlohmann::json::parse(res.body(), nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>() + " (" + j.value("code", "") + ", HTTP " + std::to_string(res.result_int()) +
           ")";
  }
  return "HTTP " + std::to_string(res.result_int()) + ": " + res.body();
}

}  // namespace gpuwasm::server
