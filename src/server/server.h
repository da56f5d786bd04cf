// Server: the HTTP/1.1 front end of a gpuwasm node (Boost.Beast), serving Api on one listening
// socket. I/O runs asynchronously on a few threads; request handlers, which may block for the
// length of an invocation, run on a separate pool, so slow invocations never stall I/O.
//
// Connections are kept alive between requests. A client has read_timeout to send a whole request
// and idle_timeout between requests, and read_timeout to take each answer; then the connection is
// closed (deadlines are checked a tenth of the shortest timeout apart, at most 250 ms; ADR 0027).
// Shutdown(grace) stops accepting, lets every request already received finish and be answered (up
// to grace), then stops the runtime.
//
// Thread-safety: Shutdown() and port() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "runtime/runtime.h"
#include "server/api.h"

namespace gpuwasm::server {

class Server {
 public:
  // Listens on runtime.config().server.listen ("host:port"; port 0 picks a free port).
  static Result<std::unique_ptr<Server>> Start(runtime::Runtime& runtime, const telemetry::MetricRegistry* gpm,
                                               std::string version);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  Api& api();
  // Blocks until the server has stopped.
  void Shutdown(std::chrono::milliseconds grace);
  // Blocks until Shutdown() has completed (from another thread or a signal).
  void Wait();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuwasm::server
