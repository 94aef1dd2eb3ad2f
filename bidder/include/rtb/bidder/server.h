// The HTTP/1.1 server (Boost.Beast, keep-alive). Each connection is a session that reads a
// request (bounded header and body, a deadline on every read), hands it to Bidder::Route, and
// writes the answer. A fixed number of I/O threads each run their own io_context; accepted
// connections are dealt to them in turn and stay on that thread (no strands, no cross-thread
// wake-ups). Beyond max_connections new connections are closed at once. SIGINT/SIGTERM drain
// it (Drain) and a second signal stops it at once.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "rtb/bidder/bidder.h"

namespace rtb::bidder {

class Server {
 public:
  Server(Bidder& bidder, const std::string& listen);
  ~Server();
  // Binds and starts the threads; returns the bound port (0 = pick one, for tests).
  Result<int> Start();
  // Blocks until Stop(), the end of a drain (Drain, or SIGINT/SIGTERM when handle_signals: a
  // second signal stops at once).
  void Wait(bool handle_signals);
  // Starts the drain (BidderConfig::drain_ms, shutdown_timeout_ms): /readyz 503 at once,
  // requests answered for drain_ms, then no new connections and every connection closed after
  // its answer in flight; Wait returns once none is left or shutdown_timeout_ms passed.
  void Drain();
  void Stop();
  int active_connections() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtb::bidder
