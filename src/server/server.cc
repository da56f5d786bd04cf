#include "server/server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace gpuwasm::server {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Server::Impl {
  runtime::Runtime& rt;
  Api api;
  net::io_context io;
  // The acceptor is touched by its completion handlers and by Shutdown's close: all of them run on
  // this strand, so never at once (TSan saw close race an async_accept on 4 io threads).
  net::strand<net::io_context::executor_type> accept_strand = net::make_strand(io);
  tcp::acceptor acceptor{io};
  net::thread_pool handlers;
  std::vector<std::thread> io_threads;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::condition_variable cv;
  uint64_t in_flight = 0;  // requests received whose response is not yet written
  bool stopped = false;
  std::atomic<bool> shutdown_started{false};

  Impl(runtime::Runtime& r, const telemetry::MetricRegistry* gpm, std::string version, size_t handler_threads)
      : rt(r), api(r, gpm, std::move(version)), handlers(handler_threads) {}

  void Accept();
  void BeginRequest() {
    std::lock_guard<std::mutex> lock(mu);
    ++in_flight;
  }
  void EndRequest() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
    }
    cv.notify_all();
  }
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, Server::Impl* srv) : stream_(std::move(socket)), srv_(srv) {}

  void Start() {
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::ReadHeader, shared_from_this()));
  }

 private:
  void ReadHeader() {
    if (srv_->stopping) return Close();
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    // Waiting for the first byte of a request is idle time; the rest of it must come within
    // read_timeout (checked again once the header is in).
    stream_.expires_after(first_ ? srv_->rt.config().server.read_timeout : srv_->rt.config().server.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  void OnHeader(beast::error_code ec, size_t) {
    if (ec) return Close();
    first_ = false;
    started_ = Clock::now();
    srv_->BeginRequest();
    counted_ = true;
    admission_ = srv_->api.Admit(parser_->get());
    method_ = std::string(parser_->get().method_string().data(), parser_->get().method_string().size());
    if (admission_.reject) return Send(std::move(*admission_.reject));
    parser_->body_limit(admission_.body_limit);
    stream_.expires_after(srv_->rt.config().server.read_timeout);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnBody, shared_from_this()));
  }

  void OnBody(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      return Send(Api::Error(413, "payload_too_large",
                             "request body exceeds the limit of " + std::to_string(admission_.body_limit) + " bytes",
                             parser_->get().version(), false));
    }
    if (ec) return Close();
    stream_.expires_never();  // the handler may run as long as the invocation's deadline
    auto self = shared_from_this();
    auto req = std::make_shared<Request>(parser_->release());
    net::post(srv_->handlers, [self, req] {
      Response res;
      try {
        res = self->srv_->api.Handle(*req, self->admission_);
      } catch (const std::exception& e) {
        res = Api::Error(500, "internal", std::string("request failed: ") + e.what(), req->version(), false);
      }
      if (self->srv_->stopping) res.keep_alive(false);
      net::post(self->stream_.get_executor(), [self, res = std::move(res)]() mutable { self->Send(std::move(res)); });
    });
  }

  void Send(Response res) {
    res_ = std::make_shared<Response>(std::move(res));
    res_->prepare_payload();
    stream_.expires_after(srv_->rt.config().server.read_timeout);
    http::async_write(stream_, *res_, beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t) {
    bool close = ec || !res_->keep_alive();
    double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    srv_->api.Record(admission_.route, method_, res_->result_int(), seconds);
    res_.reset();
    if (counted_) {
      counted_ = false;
      srv_->EndRequest();
    }
    if (close) return Close();
    ReadHeader();
  }

  void Close() {
    if (counted_) {
      counted_ = false;
      srv_->EndRequest();
    }
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  Server::Impl* srv_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<Response> res_;
  Admission admission_;
  std::string method_;
  Clock::time_point started_;
  bool first_ = true;
  bool counted_ = false;
};

}  // namespace

void Server::Impl::Accept() {
  acceptor.async_accept(net::make_strand(io), net::bind_executor(accept_strand, [this](beast::error_code ec,
                                                                                       tcp::socket socket) {
    if (stopping) return;
    if (!ec) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Session>(std::move(socket), this)->Start();
    }
    Accept();
  }));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Server>> Server::Start(runtime::Runtime& runtime, const telemetry::MetricRegistry* gpm,
                                              std::string version) {
  const runtime::RuntimeConfig& cfg = runtime.config();
  std::string listen = cfg.server.listen;
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("listen address '" + listen + "' must be host:port");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  unsigned long port = std::strtoul(listen.c_str() + colon + 1, &end, 10);
  if (end == listen.c_str() + colon + 1 || *end != '\0' || port > 65535) {
    return Status::InvalidArgument("listen address '" + listen + "' has no valid port");
  }
  beast::error_code ec;
  auto addr = net::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (ec) return Status::InvalidArgument("listen address '" + listen + "': '" + host + "' is not an IP address");
  size_t concurrent = 8;
  for (const auto& t : cfg.tenants) concurrent += t.concurrent_invocations;
  auto impl = std::make_unique<Impl>(runtime, gpm, std::move(version), std::min<size_t>(concurrent, 512));
  tcp::endpoint ep(addr, static_cast<uint16_t>(port));
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Status::IoError("cannot listen on " + listen + ": " + ec.message());
  impl->Accept();
  for (uint32_t i = 0; i < std::max(1u, cfg.server.io_threads); ++i) {
    impl->io_threads.emplace_back([io = &impl->io] { io->run(); });
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

uint16_t Server::port() const { return impl_->acceptor.local_endpoint().port(); }
Api& Server::api() { return impl_->api; }

void Server::Shutdown(std::chrono::milliseconds grace) {
  Impl& s = *impl_;
  if (s.shutdown_started.exchange(true)) return Wait();
  auto until = Clock::now() + grace;
  s.api.set_draining(true);
  // No new connections; requests already received are answered (their connections close after).
  net::post(s.accept_strand, [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
  });
  s.stopping = true;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait_until(lock, until, [&] { return s.in_flight == 0; });
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
  s.rt.Shutdown(std::max(left, std::chrono::milliseconds(0)));  // interrupts what is still running
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait_for(lock, std::chrono::seconds(5), [&] { return s.in_flight == 0; });  // their answers go out
  }
  s.io.stop();
  for (std::thread& t : s.io_threads) t.join();
  s.io_threads.clear();
  s.handlers.join();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stopped = true;
  }
  s.cv.notify_all();
}

void Server::Wait() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->stopped; });
}

Server::~Server() { Shutdown(std::chrono::milliseconds(0)); }

}  // namespace gpuwasm::server
