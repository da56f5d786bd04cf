#include "server/server.h"

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "server/io_threads.h"

namespace gpuwasm::server {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// Descriptors of the server are never inherited by a child (a compiler, a worker): one that
// outlived a crash would hold the port.
void CloseOnExec(int fd) {
  int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// What Shutdown and the deadline sweep can ask of a connection.
class InFlight {
 public:
  virtual ~InFlight() = default;
  // Answers the request being handled with a 503 now (its handler's answer, later, is dropped).
  virtual void AnswerShuttingDown() = 0;
  // The connection's deadline (Clock ticks since its epoch; 0 = none), read from any thread.
  int64_t deadline() const { return deadline_.load(std::memory_order_relaxed); }
  // Closes the connection on its own executor if its deadline has passed by then.
  virtual void TimeOut() = 0;

 protected:
  std::atomic<int64_t> deadline_{0};
};

int64_t Ticks(Clock::time_point t) { return t.time_since_epoch().count(); }

}  // namespace

struct Server::Impl {
  runtime::Runtime& rt;
  Api api;
  // Connections: open ones in all and per client address, against the caps. Before io_context:
  // sessions its destruction frees still leave these.
  uint32_t max_connections = 1024;
  std::mutex conn_mu;
  uint32_t connections = 0;
  std::map<std::string, uint32_t> per_client;
  std::map<InFlight*, std::weak_ptr<InFlight>> sessions;  // guarded by conn_mu
  net::io_context io;
  // The acceptor is touched by its completion handlers and by Shutdown's close: all of them run on
  // this strand, so never at once (TSan saw close race an async_accept on 4 io threads).
  net::strand<net::io_context::executor_type> accept_strand = net::make_strand(io);
  tcp::acceptor acceptor{io};
  net::thread_pool handlers;
  std::unique_ptr<IoThreads> io_threads;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::condition_variable cv;
  uint64_t in_flight = 0;  // requests received whose response is not yet written
  bool stopped = false;
  std::atomic<bool> shutdown_started{false};
  net::steady_timer backoff{io};
  // Connection deadlines: one timer for all of them (ADR 0027).
  net::steady_timer sweep{io};
  Clock::duration sweep_every{std::chrono::milliseconds(250)};

  Impl(runtime::Runtime& r, const telemetry::MetricRegistry* gpm, std::string version, size_t handler_threads)
      : rt(r), api(r, gpm, std::move(version)), handlers(handler_threads) {}

  void Accept();
  // The open connections that `pick` chooses (read under conn_mu), kept alive for the caller.
  template <typename Pick>
  std::vector<std::shared_ptr<InFlight>> Sessions(Pick pick) {
    std::vector<std::shared_ptr<InFlight>> out;
    std::lock_guard<std::mutex> lock(conn_mu);
    for (auto& [raw, weak] : sessions) {
      if (!pick(*raw)) continue;
      if (auto p = weak.lock()) out.push_back(std::move(p));
    }
    return out;
  }
  // Every sweep_every: each connection past its deadline is closed (on its own executor).
  void Sweep();
  // Counts a new connection from `client`; false (and nothing counted) when a cap is reached.
  bool Admit(const std::string& client, std::string* why) {
    std::lock_guard<std::mutex> lock(conn_mu);
    if (connections >= max_connections) {
      *why = "the node has " + std::to_string(max_connections) + " connections open (max_connections)";
      return false;
    }
    uint32_t& n = per_client[client];
    if (n >= rt.config().server.max_connections_per_client) {
      if (n == 0) per_client.erase(client);
      *why = "this client has " + std::to_string(rt.config().server.max_connections_per_client) +
             " connections open (max_connections_per_client)";
      return false;
    }
    ++n;
    ++connections;
    return true;
  }
  void Leave(const std::string& client) {
    std::lock_guard<std::mutex> lock(conn_mu);
    --connections;
    auto it = per_client.find(client);
    if (it != per_client.end() && --it->second == 0) per_client.erase(it);
  }
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

class Session : public InFlight, public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, Server::Impl* srv, std::string client)
      : stream_(std::move(socket)), srv_(srv), client_(std::move(client)) {}
  ~Session() override {
    {
      std::lock_guard<std::mutex> lock(srv_->conn_mu);
      srv_->sessions.erase(this);
    }
    srv_->Leave(client_);
  }

  void Start() {
    {
      std::lock_guard<std::mutex> lock(srv_->conn_mu);
      srv_->sessions[this] = shared_from_this();
    }
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::ReadHeader, shared_from_this()));
  }

  void TimeOut() override {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      const int64_t due = self->deadline();
      if (due == 0 || Ticks(Clock::now()) < due) return;  // moved on since the sweep looked
      beast::error_code ec;
      self->stream_.socket().close(ec);  // its pending read or write ends with an error: Close()
    });
  }

  void AnswerShuttingDown() override {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->handling_ || self->answered_) return;
      self->answered_ = true;
      Response r =
          Api::Error(503, "unavailable", "gpuwasm is shutting down: the request could not finish within the grace",
                     self->version_, false);
      self->Send(std::move(r));
    });
  }

 private:
  // A deadline, not a Beast timeout: Beast arms and cancels a timer on the reactor for every read
  // and write, which cost a fifth of a trivial invocation's throughput; this is one store.
  void ExpireAfter(Clock::duration d) { deadline_.store(Ticks(Clock::now() + d), std::memory_order_relaxed); }

  void ReadHeader() {
    if (srv_->stopping) return Close();
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    // Beast checks Content-Length against the body limit when the header completes (its default is
    // 1 MiB, which silently dropped every larger request): the node's max_body here, the route's and
    // tenant's limit once Admit() has seen the header.
    parser_->body_limit(srv_->rt.config().server.max_body);
    // Waiting for the first byte of a request is idle time; the rest of it must come within
    // read_timeout (checked again once the header is in).
    ExpireAfter(first_ ? srv_->rt.config().server.read_timeout : srv_->rt.config().server.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  void OnHeader(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      first_ = false;
      started_ = Clock::now();
      srv_->BeginRequest();
      counted_ = true;
      method_ = "?";
      admission_.route = "other";
      return Send(Api::Error(
          413, "payload_too_large",
          "request body exceeds the node's max_body of " + std::to_string(srv_->rt.config().server.max_body) + " bytes",
          11, false));
    }
    if (ec) return Close();
    first_ = false;
    started_ = Clock::now();
    srv_->BeginRequest();
    counted_ = true;
    admission_ = srv_->api.Admit(parser_->get());
    method_ = std::string(parser_->get().method_string().data(), parser_->get().method_string().size());
    if (admission_.reject) return Send(std::move(*admission_.reject));
    parser_->body_limit(admission_.body_limit);
    // The whole request within read_timeout, plus a second per MiB of body: a 64 MiB deploy over a
    // modest link (or from a loaded machine) is not cut, a client dripping bytes still is.
    uint64_t body = parser_->content_length().value_or(0);
    ExpireAfter(srv_->rt.config().server.read_timeout + std::chrono::seconds(body >> 20));
    // A client that asked (curl does for bodies over 1 MiB) is told to send the body now.
    auto expect = parser_->get().find(http::field::expect);
    if (expect != parser_->get().end() && beast::iequals(expect->value(), "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, parser_->get().version());
      return http::async_write(stream_, *cont, [self = shared_from_this(), cont](beast::error_code wec, size_t) {
        if (wec) return self->Close();
        http::async_read(self->stream_, self->buffer_, *self->parser_,
                         beast::bind_front_handler(&Session::OnBody, self));
      });
    }
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnBody, shared_from_this()));
  }

  void OnBody(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      srv_->api.CountBodyOverLimit(admission_);
      return Send(Api::Error(413, "payload_too_large",
                             "request body exceeds the limit of " + std::to_string(admission_.body_limit) + " bytes",
                             parser_->get().version(), false));
    }
    if (ec) return Close();
    deadline_.store(0, std::memory_order_relaxed);  // the handler may run as long as the invocation's deadline
    auto self = shared_from_this();
    auto req = std::make_shared<Request>(parser_->release());
    handling_ = true;
    answered_ = false;
    version_ = req->version();
    // The answer goes out on this connection's strand, from whichever thread it was made on: at
    // once when made in the strand (an instance run here, a refusal), else posted to it.
    auto reply = [self](Response res) {
      if (self->srv_->stopping) res.keep_alive(false);
      net::dispatch(self->stream_.get_executor(), [self, res = std::move(res)]() mutable {
        self->handling_ = false;
        if (self->answered_) return;  // shutdown answered it already
        self->Send(std::move(res));
      });
    };
    auto internal = [req](const std::exception& e) {
      return Api::Error(500, "internal", std::string("request failed: ") + e.what(), req->version(), false);
    };
    // An invocation of a function this process has at hand starts here, on the I/O thread, and
    // its answer comes back from the runtime: no thread waits for it. In-process, the instance
    // runs here to its end when a pool slot is free, this thread's place in the loop going to a
    // spare if it lasts (ADR 0026). Anything else (a store read, a compile, a worker start, every
    // other route) runs on a handler thread.
    const bool invoke = Api::IsInvoke(admission_);
    if (invoke) {
      try {
        IoThreads::Held held;
        if (srv_->api.InvokeAsync(*req, admission_, reply, runtime::Runtime::Caller::kEventLoop)) return;
      } catch (const std::exception& e) {
        return reply(internal(e));
      }
    }
    net::post(srv_->handlers, [self, req, reply, internal, invoke] {
      try {
        if (invoke) {
          self->srv_->api.InvokeAsync(*req, self->admission_, reply, runtime::Runtime::Caller::kMayBlock);
          return;
        }
        reply(self->srv_->api.Handle(*req, self->admission_));
      } catch (const std::exception& e) {
        reply(internal(e));
      }
    });
  }

  void Send(Response res) {
    res_ = std::make_shared<Response>(std::move(res));
    res_->prepare_payload();
    ExpireAfter(srv_->rt.config().server.read_timeout);
    http::async_write(stream_, *res_, beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t) {
    bool close = ec || !res_->keep_alive();
    double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    srv_->api.Record(admission_.route, method_, res_->result_int(), seconds);
    // Answered before its body was read (413 and other refusals): the client may still be sending.
    bool unread = parser_ && !parser_->is_done();
    res_.reset();
    if (counted_) {
      counted_ = false;
      srv_->EndRequest();
    }
    if (!ec && unread) return Linger();
    if (close) return Close();
    ReadHeader();
  }

  // Closing at once while the client still sends its body makes the kernel reset the connection,
  // and the client may never read the answer. So: stop sending, read and discard what the client
  // still sends until it stops (EOF), or at most 64 MiB, 5 s without a byte or 30 s in all, then
  // close. (A slow client, a loaded machine, takes more than 5 s to send 16 MiB.)
  void Linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    linger_left_ = 64u << 20;
    linger_until_ = Clock::now() + std::chrono::seconds(30);
    Drain();
  }
  void Drain() {
    ExpireAfter(std::min<Clock::duration>(std::chrono::seconds(5), linger_until_ - Clock::now()));
    drain_.resize(64 << 10);
    stream_.async_read_some(net::buffer(drain_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec || n >= self->linger_left_) return self->Close();
      self->linger_left_ -= n;
      self->Drain();
    });
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
  std::string client_;
  std::vector<char> drain_;
  uint64_t linger_left_ = 0;
  Clock::time_point linger_until_;
  bool handling_ = false;  // a handler runs for the current request (on the session's executor)
  bool answered_ = false;  // ... and shutdown answered it
  unsigned version_ = 11;
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

// A connection over a cap: answered 503 at once and closed, without reading its request.
static void Refuse(tcp::socket socket, const std::string& why) {
  auto body = std::make_shared<std::string>("{\"code\":\"unavailable\",\"message\":\"" + why + "\"}\n");
  auto text = std::make_shared<std::string>(
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body->size()) + "\r\n\r\n" + *body);
  auto s = std::make_shared<tcp::socket>(std::move(socket));
  net::async_write(*s, net::buffer(*text), [s, text](beast::error_code, size_t) {
    beast::error_code ignored;
    s->shutdown(tcp::socket::shutdown_both, ignored);
    s->close(ignored);
  });
}

void Server::Impl::Accept() {
  acceptor.async_accept(
      net::make_strand(io), net::bind_executor(accept_strand, [this](beast::error_code ec, tcp::socket socket) {
        if (stopping) return;
        if (ec == net::error::no_descriptors || ec.value() == ENFILE || ec.value() == ENOBUFS || ec.value() == ENOMEM) {
          // Out of descriptors (or memory): accepting again at once would spin. Wait a little.
          api.CountRefusedConnection("descriptors");
          backoff.expires_after(std::chrono::milliseconds(50));
          backoff.async_wait(net::bind_executor(accept_strand, [this](beast::error_code) {
            if (!stopping) Accept();
          }));
          return;
        }
        if (!ec) {
          CloseOnExec(socket.native_handle());
          beast::error_code ignored;
          socket.set_option(tcp::no_delay(true), ignored);
          auto remote = socket.remote_endpoint(ignored);
          std::string client = ignored ? "?" : remote.address().to_string();
          std::string why;
          if (!Admit(client, &why)) {
            api.CountRefusedConnection(why.find("this client") != std::string::npos ? "per_client" : "total");
            Refuse(std::move(socket), why);
          } else {
            std::make_shared<Session>(std::move(socket), this, std::move(client))->Start();
          }
        }
        Accept();
      }));
}

void Server::Impl::Sweep() {
  sweep.expires_after(sweep_every);
  sweep.async_wait([this](beast::error_code ec) {
    if (ec) return;
    const int64_t now = Ticks(Clock::now());
    auto late = Sessions([now](const InFlight& c) {
      const int64_t due = c.deadline();
      return due != 0 && due <= now;
    });
    for (auto& p : late) p->TimeOut();
    Sweep();
  });
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Server>> Server::Start(runtime::Runtime& runtime, const telemetry::MetricRegistry* gpm,
                                              std::string version) {
  const runtime::RuntimeConfig& cfg = runtime.config();
  const std::string& listen = cfg.server.listen;
  GPUWASM_ASSIGN_OR_RETURN(runtime::ListenAddress where, runtime::ParseListen(listen));
  beast::error_code ec;
  auto addr = net::ip::make_address(where.host, ec);
  if (ec) return Status::InvalidArgument("listen address '" + listen + "': " + ec.message());
  size_t concurrent = 8;
  for (const auto& t : cfg.tenants) concurrent += t.concurrent_invocations;
  auto impl = std::make_unique<Impl>(runtime, gpm, std::move(version), std::min<size_t>(concurrent, 512));
  impl->max_connections = cfg.server.max_connections;
  if (impl->max_connections == 0) {
    rlimit files{};
    ::getrlimit(RLIMIT_NOFILE, &files);
    uint64_t usable = files.rlim_cur > 512 ? files.rlim_cur - 256 : files.rlim_cur / 2;
    impl->max_connections = static_cast<uint32_t>(std::min<uint64_t>(usable, 4096));
  }
  tcp::endpoint ep(addr, where.port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Status::IoError("cannot listen on " + listen + ": " + ec.message());
  CloseOnExec(impl->acceptor.native_handle());
  impl->Accept();
  // Deadlines are checked a tenth of the shortest timeout apart, at least every 250 ms.
  auto shortest = std::min(cfg.server.read_timeout, cfg.server.idle_timeout);
  impl->sweep_every =
      std::clamp<Clock::duration>(shortest / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(250));
  impl->Sweep();
  // A held I/O thread runs a guest in a pool slot: at most `workers` are held at once.
  impl->io_threads = std::make_unique<IoThreads>(impl->io, cfg.server.io_threads, runtime.workers());
  impl->api.set_io_threads(impl->io_threads.get());
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
  // The grace is over: every request still being handled is answered now (503), whatever its
  // handler does later; then the runtime interrupts what still runs.
  for (auto& p : s.Sessions([](const InFlight&) { return true; })) p->AnswerShuttingDown();
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait_for(lock, std::chrono::seconds(2), [&] { return s.in_flight == 0; });  // the answers go out
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
  s.rt.Shutdown(std::max(left, std::chrono::milliseconds(0)));  // interrupts what is still running
  s.io.stop();
  s.io_threads->Join();
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
