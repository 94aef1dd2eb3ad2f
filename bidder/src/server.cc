#include "rtb/bidder/server.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rtb/bidder/gzip.h"
#include "rtb/core/log.h"

namespace rtb::bidder {

namespace {
// An I/O thread keeps its inflated-body buffer up to this size between requests.
constexpr size_t kKeptInflatedBytes = 256 * 1024;
}  // namespace

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// A session as the drain sees it: closed at once when it waits for a request (idle keep-alive),
// else after the answer in flight.
struct Closable {
  virtual ~Closable() = default;
  virtual void CloseIfIdle() = 0;
};

struct Server::Impl {
  Bidder& bidder;
  std::string listen;
  // One io_context per I/O thread (config `threads`): a connection lives on one thread from
  // accept to close, so its handlers need no strand and no other thread is woken to run them.
  // iocs[0] also runs the acceptor, the ticker and the signal handler.
  std::vector<std::unique_ptr<net::io_context>> iocs;
  std::vector<net::executor_work_guard<net::io_context::executor_type>> guards;
  size_t next_ioc = 0;  // round-robin over iocs for accepted connections (acceptor thread only)
  std::optional<tcp::acceptor> acceptor;
  std::optional<net::steady_timer> ticker;
  std::optional<net::steady_timer> backoff;  // accept retries when out of descriptors
  static constexpr int kAcceptBackoffMs = 50;
  log::RateLimit accept_warnings{3, std::chrono::seconds(60)};
  std::atomic<uint64_t> accept_backoffs{0};
  std::optional<net::signal_set> signals;
  std::vector<std::thread> threads;
  std::atomic<int> connections{0};
  std::atomic<bool> stopped{false};
  // The drain (Server::Drain): draining since the first signal; closing once drain_ms passed
  // (no new connections, every answer closes its connection).
  bool draining = false;  // iocs[0] only
  std::atomic<bool> closing{false};
  std::optional<net::steady_timer> drain_timer;
  std::chrono::steady_clock::time_point close_deadline;
  std::mutex sessions_mu;
  std::vector<std::weak_ptr<Closable>> sessions;  // GUARDED_BY(sessions_mu); pruned as it grows
  void Register(const std::shared_ptr<Closable>& s) {
    std::lock_guard<std::mutex> l(sessions_mu);
    if (sessions.size() >= 64 && sessions.size() >= 2 * static_cast<size_t>(connections.load())) {
      std::erase_if(sessions, [](const std::weak_ptr<Closable>& w) { return w.expired(); });
    }
    sessions.push_back(s);
  }
  // Open connections per client address (max_connections_per_client): added at accept, removed
  // when the session ends (on its I/O thread). Per connection, never per request.
  std::mutex clients_mu;
  std::unordered_map<net::ip::address, int> per_client;  // GUARDED_BY(clients_mu)
  log::RateLimit client_cap_warnings{3, std::chrono::seconds(60)};

  // Whether `client` may open one more connection (and counts it if so).
  bool AdmitClient(const net::ip::address& client) {
    const int cap =
        std::min(bidder.config().max_connections_per_client, bidder.config().max_connections);
    std::lock_guard<std::mutex> l(clients_mu);
    int& n = per_client[client];
    if (n >= cap) return false;
    ++n;
    return true;
  }
  void ReleaseClient(const net::ip::address& client) {
    std::lock_guard<std::mutex> l(clients_mu);
    auto it = per_client.find(client);
    if (it != per_client.end() && --it->second <= 0) per_client.erase(it);
  }

  Impl(Bidder& b, std::string l) : bidder(b), listen(std::move(l)) {
    for (int t = 0; t < std::max(1, b.config().threads); ++t) {
      iocs.push_back(std::make_unique<net::io_context>(1));  // 1: run by one thread
      guards.push_back(net::make_work_guard(*iocs.back()));
    }
  }
  void StopAll() {
    for (auto& ioc : iocs) ioc->stop();
  }
  // The drain's steps, on iocs[0]: BeginDrain at the first signal, StopAccepting drain_ms later,
  // then WaitIdle until no connection is left or shutdown_timeout_ms passed.
  void BeginDrain();
  void StopAccepting();
  void WaitIdle();

  void Accept();
  void Tick() {
    ticker->expires_after(std::chrono::milliseconds(100));
    ticker->async_wait([this](beast::error_code ec) {
      if (ec) return;
      bidder.Tick();
      Tick();
    });
  }
};

namespace {

// One thread-local decoder per I/O thread (its parser buffers are reused).
RequestDecoder& Decoder(const DecodeLimits& limits) {
  thread_local std::unique_ptr<RequestDecoder> d;
  if (!d) d = std::make_unique<RequestDecoder>(limits);
  return *d;
}

class Session : public Closable, public std::enable_shared_from_this<Session> {
 public:
  static constexpr size_t kReadBufferBytes = 16 * 1024;
  Session(tcp::socket&& s, net::ip::address client, Server::Impl& srv)
      : stream_(std::move(s)), client_(std::move(client)), srv_(srv) {
    srv_.connections.fetch_add(1);
    // Beast reads at most max(512, free capacity) bytes per call: with room for a typical
    // request (headers and a few-KB body) one recvmsg reads it whole instead of 2-3.
    buffer_.reserve(kReadBufferBytes);
  }
  ~Session() {
    srv_.ReleaseClient(client_);
    srv_.connections.fetch_sub(1);
  }

  void Run() {
    srv_.Register(shared_from_this());
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

  // On its own I/O thread: a session waiting for a request with nothing of one read yet ends
  // now; one with a request in flight ends after its answer (Write sees `closing`).
  void CloseIfIdle() override {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->idle_ || self->buffer_.size() != 0) return;
      beast::error_code ec;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      self->stream_.cancel();
    });
  }

 private:
  void Read() {
    if (srv_.closing.load()) return Close();
    const BidderConfig& cfg = srv_.bidder.config();
    idle_ = true;
    parser_.emplace();
    parser_->body_limit(cfg.max_body_bytes);
    parser_->header_limit(static_cast<std::uint32_t>(cfg.max_header_bytes));
    stream_.expires_after(std::chrono::milliseconds(cfg.read_timeout_ms));
    // The header first: a client that sent `Expect: 100-continue` waits for an interim answer
    // before it sends the body (curl waits a second, others forever).
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    idle_ = false;
    if (ec || parser_->is_done()) return OnRead(ec);
    const auto& req = parser_->get();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                     req.version());
      http::async_write(stream_, *cont,
                        [self = shared_from_this(), cont](beast::error_code wec, size_t) {
                          if (wec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::eof) {
      return Close();
    }
    if (ec) {
      // Oversized header or body, or a malformed request line: 400 and close (the rest of the
      // request was not read, so the connection cannot be reused).
      if (ec == http::error::body_limit || ec == http::error::header_limit ||
          ec.category() == http::make_error_code(http::error::bad_target).category()) {
        HttpResult r{400, "", "text/plain", {}};
        return Write(std::move(r), false, 11);
      }
      return Close();
    }
    const int64_t received = NowSteadyUs();
    auto& req = parser_->get();
    const auto version_it = req.find("x-openrtb-version");
    const std::string_view version =
        version_it == req.end() ? std::string_view() : std::string_view(version_it->value());
    // A gzip body (Content-Encoding: gzip, as Prebid Server sends with compression on) is
    // inflated first, to at most max_body_bytes: the limit is on what the decoder reads.
    std::string_view body = req.body();
    const std::string_view encoding = req[http::field::content_encoding];
    if (!encoding.empty() && !beast::iequals(encoding, "identity")) {
      if (!beast::iequals(encoding, "gzip") && !beast::iequals(encoding, "x-gzip")) {
        return Write(Refused(415, "Content-Encoding " + std::string(encoding) +
                                      " is not supported (gzip or identity)"),
                     req.keep_alive(), req.version());
      }
      // One buffer per I/O thread (as the decoder), not per connection: a thousand connections
      // that each sent one large body hold one buffer per thread, not a thousand.
      thread_local std::string inflated;
      const Status st = GzipInflate(req.body(), srv_.bidder.config().max_body_bytes, &inflated);
      if (!st.ok()) {
        if (inflated.capacity() > kKeptInflatedBytes) std::string().swap(inflated);
        return Write(Refused(400, st.message()), req.keep_alive(), req.version());
      }
      body = inflated;
    }
    HttpResult r =
        srv_.bidder.Route(std::string_view(req.method_string()), std::string_view(req.target()),
                          body, received, Decoder(srv_.bidder.decode_limits()), version);
    if (!r.body.empty() && AcceptsGzip(req[http::field::accept_encoding])) {
      if (std::string gz = GzipDeflate(r.body); !gz.empty()) {
        r.body = std::move(gz);
        r.headers.emplace_back("content-encoding", "gzip");
      }
    }
    Write(std::move(r), req.keep_alive(), req.version());
  }

  // A request refused before the bidder saw it: the reason in the body and in x-rtb-error.
  static HttpResult Refused(int status, const std::string& why) {
    return HttpResult{status, why + "\n", "text/plain", {{"x-rtb-error", why}}};
  }

  void Write(HttpResult r, bool keep_alive, unsigned version) {
    keep_alive = keep_alive && !srv_.closing.load();  // draining: this answer is the last
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version);
    res->set(http::field::server, "rtb");
    if (!r.content_type.empty() && !r.body.empty())
      res->set(http::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive);
    res->prepare_payload();
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  net::ip::address client_;  // counted in srv_.per_client while the session lives
  Server::Impl& srv_;
  bool idle_ = false;  // waiting for a request's header (its I/O thread only)
};

}  // namespace

void Server::Impl::Accept() {
  net::io_context& target = *iocs[next_ioc];
  next_ioc = (next_ioc + 1) % iocs.size();
  acceptor->async_accept(target, [this](beast::error_code ec, tcp::socket s) {
    if (stopped.load() || closing.load()) return;
    if (ec == net::error::no_descriptors || ec == net::error::no_buffer_space ||
        ec == net::error::no_memory) {
      // Out of file descriptors (EMFILE/ENFILE) or memory: the pending connection stays in the
      // backlog, so accepting again at once would spin. Back off, say so (rate-limited), retry.
      uint64_t skipped = 0;
      if (accept_warnings.Allow(&skipped)) {
        log::Get("server").warn("accept: {}; retrying in {} ms ({} more since)", ec.message(),
                                kAcceptBackoffMs, skipped);
      }
      ++accept_backoffs;
      backoff->expires_after(std::chrono::milliseconds(kAcceptBackoffMs));
      backoff->async_wait([this](beast::error_code) {
        if (!stopped.load()) Accept();
      });
      return;
    }
    if (!ec) {
      beast::error_code peer_ec;
      const tcp::endpoint peer = s.remote_endpoint(peer_ec);
      beast::error_code ignored;
      if (peer_ec || connections.load() >= bidder.config().max_connections) {
        s.close(ignored);  // over the connection cap (or already gone)
      } else if (!AdmitClient(peer.address())) {
        s.close(ignored);  // over this client's cap
        uint64_t skipped = 0;
        if (client_cap_warnings.Allow(&skipped)) {
          log::Get("server").warn(
              "client {} is at max_connections_per_client ({}): new connection closed ({} more "
              "since)",
              peer.address().to_string(), bidder.config().max_connections_per_client, skipped);
        }
      } else {
        s.set_option(tcp::no_delay(true), ec);
        std::make_shared<Session>(std::move(s), peer.address(), *this)->Run();
      }
    }
    Accept();
  });
}

Server::Server(Bidder& bidder, const std::string& listen)
    : impl_(std::make_unique<Impl>(bidder, listen)) {}

Server::~Server() { Stop(); }

Result<int> Server::Start() {
  Impl& m = *impl_;
  const size_t colon = m.listen.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("listen must be host:port");
  beast::error_code ec;
  const auto addr = net::ip::make_address(m.listen.substr(0, colon), ec);
  if (ec) return Status::InvalidArgument("bad listen address " + m.listen);
  int port = 0;
  try {
    port = std::stoi(m.listen.substr(colon + 1));
  } catch (const std::exception&) {
    return Status::InvalidArgument("bad listen port in " + m.listen);
  }
  // Every connection holds a descriptor: max_connections must fit the process's limit, with room
  // for RocksDB, Kafka and the spill files. Raise the soft limit to the hard one if needed;
  // beyond it, refuse to start rather than fail on the 1,000th client.
  constexpr rlim_t kReserve = 256;
  const rlim_t want = static_cast<rlim_t>(m.bidder.config().max_connections) + kReserve;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < want) {
    if (lim.rlim_max >= want || lim.rlim_max == RLIM_INFINITY) {
      lim.rlim_cur = want;
      ::setrlimit(RLIMIT_NOFILE, &lim);
      log::Get("server").info("raised the open-file limit to {} for max_connections {}", want,
                              m.bidder.config().max_connections);
    } else {
      return Status::InvalidArgument(
          "max_connections " + std::to_string(m.bidder.config().max_connections) + " needs " +
          std::to_string(want) + " file descriptors; the limit is " + std::to_string(lim.rlim_max) +
          " (ulimit -n): lower max_connections or raise it");
    }
  }
  m.acceptor.emplace(*m.iocs[0]);
  m.backoff.emplace(*m.iocs[0]);
  const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  m.acceptor->open(ep.protocol(), ec);
  if (!ec) m.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor->bind(ep, ec);
  if (!ec) m.acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Status::Unavailable("cannot listen on " + m.listen + ": " + ec.message());
  const int bound = m.acceptor->local_endpoint().port();
  m.Accept();
  m.ticker.emplace(*m.iocs[0]);
  m.Tick();
  // CPUs this process may use (taskset, cgroups), for pin_threads.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    }
  }
  for (size_t t = 0; t < m.iocs.size(); ++t) {
    m.threads.emplace_back([&ioc = m.iocs[t]] { ioc->run(); });
    const std::string name = "rtb-io-" + std::to_string(t);  // top -H, perf sched
    ::pthread_setname_np(m.threads.back().native_handle(), name.c_str());
    if (m.bidder.config().pin_threads && cpus.size() > 1) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[t % cpus.size()], &one);
      ::pthread_setaffinity_np(m.threads.back().native_handle(), sizeof one, &one);  // best effort
    }
  }
  return bound;
}

void Server::Impl::BeginDrain() {
  if (draining) {  // a second signal: stop now
    log::Get("server").warn("second stop signal: stopping at once, {} connections open",
                            connections.load());
    stopped.store(true);
    StopAll();
    return;
  }
  draining = true;
  bidder.SetDraining();
  const int ms = bidder.config().drain_ms;
  log::Get("server").info("draining: /readyz answers 503; answering requests for {} ms more", ms);
  drain_timer.emplace(*iocs[0]);
  drain_timer->expires_after(std::chrono::milliseconds(ms));
  drain_timer->async_wait([this](beast::error_code ec) {
    if (!ec) StopAccepting();
  });
}

void Server::Impl::StopAccepting() {
  closing.store(true);
  beast::error_code ec;
  acceptor->close(ec);
  std::vector<std::weak_ptr<Closable>> open;
  {
    std::lock_guard<std::mutex> l(sessions_mu);
    open = sessions;
  }
  for (const auto& w : open) {
    if (auto s = w.lock()) s->CloseIfIdle();
  }
  const int ms = bidder.config().shutdown_timeout_ms;
  log::Get("server").info(
      "drained: no new connections; {} open, each closing after its answer (at most {} ms)",
      connections.load(), ms);
  close_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  WaitIdle();
}

void Server::Impl::WaitIdle() {
  const int left = connections.load();
  if (left == 0 || std::chrono::steady_clock::now() >= close_deadline) {
    if (left > 0) {
      log::Get("server").warn("shutdown_timeout_ms passed with {} connections open: stopping",
                              left);
    }
    stopped.store(true);
    StopAll();
    return;
  }
  drain_timer->expires_after(std::chrono::milliseconds(10));
  drain_timer->async_wait([this](beast::error_code ec) {
    if (!ec) WaitIdle();
  });
}

void Server::Drain() {
  Impl& m = *impl_;
  net::post(*m.iocs[0], [&m] { m.BeginDrain(); });
}

void Server::Wait(bool handle_signals) {
  Impl& m = *impl_;
  if (handle_signals) {
    m.signals.emplace(*m.iocs[0], SIGINT, SIGTERM);
    // On an I/O thread: the first signal drains, a second stops at once; the threads are
    // joined below.
    struct Rearm {
      Impl& m;
      void operator()(beast::error_code ec, int) const {
        if (ec) return;
        m.BeginDrain();
        if (!m.stopped.load()) m.signals->async_wait(Rearm{m});
      }
    };
    m.signals->async_wait(Rearm{m});
  }
  for (auto& t : m.threads) {
    if (t.joinable()) t.join();
  }
}

void Server::Stop() {
  Impl& m = *impl_;
  m.stopped.store(true);
  m.StopAll();  // thread-safe; every run() returns
  for (auto& t : m.threads) {
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
  }
}

int Server::active_connections() const { return impl_->connections.load(); }

}  // namespace rtb::bidder
