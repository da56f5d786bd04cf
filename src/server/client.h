// HttpClient: a small blocking HTTP/1.1 client for gpuwasm servers (the CLI's deploy, invoke, ls,
// rm and top, and the tests). One connection, kept alive between requests; reconnects when the
// server closed it. Not thread-safe: one client per thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "server/api.h"

namespace gpuwasm::server {

class HttpClient {
 public:
  // `url`: "http://host:port" (a path after it is ignored).
  static Result<std::unique_ptr<HttpClient>> Connect(std::string_view url, std::string token = "",
                                                     std::chrono::milliseconds timeout = std::chrono::seconds(120));
  ~HttpClient();

  // Sends one request; any HTTP status is a successful Result (check result()).
  Result<Response> Send(boost::beast::http::verb method, std::string_view target, std::string body = "",
                        std::vector<std::pair<std::string, std::string>> headers = {});

  struct Impl;

 private:
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "message" of a JSON error response, else the body (for CLI messages).
std::string ErrorText(const Response& res);

}  // namespace gpuwasm::server
