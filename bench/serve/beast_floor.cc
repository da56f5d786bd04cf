// The HTTP floor for bench_serve.sh: a minimal Boost.Beast server (the library gpuwasm serve is
// built on) that answers every request with "ok\n", as the trivial function does, and does nothing
// else: no routing, no authentication, no instance. What gpuwasm serve does per request on top of
// parsing and writing HTTP is the difference between the two.
//   beast_floor PORT [THREADS]   (prints "beast floor listening on PORT" once it accepts)
// clang-format off
#include <utility>  // before Asio: 1.74's awaitable.hpp uses std::exchange without including it
// clang-format on
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket&& socket) : stream_(std::move(socket)) {}
  void Read() {
    req_ = {};
    http::async_read(stream_, buffer_, req_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

 private:
  void OnRead(beast::error_code ec, size_t) {
    if (ec) return;
    res_ = {};
    res_.result(http::status::ok);
    res_.version(req_.version());
    res_.set(http::field::content_type, "application/octet-stream");
    res_.keep_alive(req_.keep_alive());
    res_.body() = "ok\n";
    res_.prepare_payload();
    http::async_write(stream_, res_, beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }
  void OnWrite(beast::error_code ec, size_t) {
    if (ec || !res_.keep_alive()) return;
    Read();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
};

void Accept(tcp::acceptor& acceptor, net::io_context& io) {
  acceptor.async_accept(net::make_strand(io), [&](beast::error_code ec, tcp::socket socket) {
    if (!ec) {
      socket.set_option(tcp::no_delay(true), ec);
      std::make_shared<Session>(std::move(socket))->Read();
    }
    Accept(acceptor, io);
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: beast_floor PORT [THREADS]\n");
    return argc < 2 ? 2 : 0;
  }
  auto port = static_cast<unsigned short>(std::atoi(argv[1]));
  int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2;
  net::io_context io(threads);
  tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), port});
  Accept(acceptor, io);
  std::printf("beast floor listening on %u\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&] { io.run(); });
  io.run();
}
