#include "rtb/exchange/exchange.h"

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "rtb/bidder/openrtb.h"
#include "rtb/core/ab.h"
#include "rtb/core/auction.h"
#include "rtb/core/clock.h"
#include "rtb/core/log.h"
#include "rtb/core/rng.h"
#include "rtb/core/text.h"
#include "rtb/kafka/kafka.h"

namespace rtb::exchange {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             SteadyClock::now().time_since_epoch())
      .count();
}

// Micros as a decimal of currency units ("1.250000"), exact: the ${AUCTION_PRICE} and value=
// of the notices.
std::string Decimal(int64_t micros) { return MicrosDecimal(micros, MicrosFraction::kSixDigits); }

// The fields every simulated request has: its id, one w x h banner impression (id "1") with
// the floor (micros CPM) when > 0, USD. The caller adds the rest.
bidder::BidRequest SimRequest(std::string id, int w, int h, int64_t floor_cpm) {
  bidder::BidRequest req;
  req.id = std::move(id);
  bidder::Imp& imp = req.imps.emplace_back();
  imp.id = "1";
  imp.banner = true;
  imp.formats.push_back({w, h});
  imp.bidfloor = Micros(floor_cpm);
  req.cur = {"USD"};
  return req;
}

// A count for a notice's n= (expected clicks or conversions), 9 significant digits.
std::string Count9(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

void ReplaceAll(std::string& s, std::string_view from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
}

// The path and query of a URL (the exchange always talks to its configured bidder address).
std::string PathOf(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t slash = url.find('/', scheme + 3);
  return slash == std::string::npos ? "/" : url.substr(slash);
}

// One keep-alive HTTP/1.1 connection, reconnecting on failure. Not thread-safe.
class Conn {
 public:
  Conn(std::string host, std::string port, int timeout_ms)
      : host_(std::move(host)), port_(std::move(port)), timeout_ms_(timeout_ms) {}

  struct Reply {
    int status = 0;
    std::string body;
  };

  // Whether the last Do found nothing listening (it could not connect).
  bool refused() const { return refused_; }
  // Whether the last Do could not connect and wrote nothing on any attempt: the request
  // certainly never reached the bidder (a write on a kept-alive connection may have).
  bool sent_nothing() const { return refused_ && !wrote_; }

  Result<Reply> Do(http::verb verb, const std::string& target, const std::string& body) {
    wrote_ = false;
    for (int attempt = 0; attempt < 2; ++attempt) {  // one silent reconnect (idle close)
      beast::error_code ec;
      if (!stream_) {
        stream_ = std::make_unique<beast::tcp_stream>(ioc_);
        tcp::resolver resolver(ioc_);
        auto eps = resolver.resolve(host_, port_, ec);
        if (!ec) {
          stream_->expires_after(std::chrono::milliseconds(timeout_ms_));
          stream_->connect(eps, ec);
        }
        if (ec) {
          stream_.reset();
          refused_ = true;
          return Status::Unavailable("connect " + host_ + ":" + port_ + ": " + ec.message());
        }
        refused_ = false;
        stream_->socket().set_option(tcp::no_delay(true));
      }
      http::request<http::string_body> req{verb, target, 11};
      req.set(http::field::host, host_);
      req.set(http::field::connection, "keep-alive");
      if (verb == http::verb::post) {
        req.set(http::field::content_type, "application/json");
        req.set("x-openrtb-version", "2.6");
        req.body() = body;
        req.prepare_payload();
      }
      stream_->expires_after(std::chrono::milliseconds(timeout_ms_));
      wrote_ = true;
      http::write(*stream_, req, ec);
      if (!ec) {
        http::response<http::string_body> res;
        http::read(*stream_, buf_, res, ec);
        if (!ec) {
          if (!res.keep_alive()) stream_.reset();
          return Reply{static_cast<int>(res.result_int()), std::move(res.body())};
        }
      }
      stream_.reset();
      buf_.clear();
      if (attempt == 1) return Status::Unavailable(target + ": " + ec.message());
    }
    return Status::Unavailable("unreachable");
  }

 private:
  asio::io_context ioc_;
  std::string host_, port_;
  int timeout_ms_;
  std::unique_ptr<beast::tcp_stream> stream_;
  beast::flat_buffer buf_;
  bool refused_ = false;
  bool wrote_ = false;
};

// Deterministic uniform draws per (seed, day, request, advertiser, purpose).
double Draw(uint64_t seed, int64_t day, size_t r, uint32_t adv, uint64_t purpose) {
  uint64_t h = Rng::Mix(seed, static_cast<uint64_t>(day) * 0x9e3779b97f4a7c15ULL + r);
  h = Rng::Mix(h, (static_cast<uint64_t>(adv) << 8) | purpose);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace

struct Exchange::Impl {
  ExchangeConfig cfg;
  const sim::Scenario* sc = nullptr;  // the generated world, or
  const TrafficMarket* tm = nullptr;  // a market the simulator did not generate
  int agents = 0;
  std::vector<std::pair<std::string, std::string>> targets;  // each bidder's host and port
  std::vector<double> spread_cum;                            // cumulative request shares
  std::unique_ptr<std::atomic<int64_t>[]> sent_to;           // requests per bidder
  // Per bidder: out of the rotation (it refused a connection), as a load balancer's health
  // check takes out a backend whose process is gone, until a readiness probe passes (Probe); when
  // (steady ms) it may next be probed; and when it came back (0: never out), for slow start.
  std::unique_ptr<std::atomic<bool>[]> is_out;
  std::unique_ptr<std::atomic<int64_t>[]> down_until;
  std::unique_ptr<std::atomic<int64_t>[]> back_ms;
  static constexpr int64_t kDownMs = 250;
  // The rotation's time (ExchangeConfig::clock): probes and slow start.
  int64_t RotationMs() const { return cfg.clock != nullptr ? cfg.clock->SteadyMs() : SteadyMs(); }
  // AtRequest's and HoldAtRequest's hooks, each with its request and whether the other workers
  // wait while it runs, and the lowest of those requests (kNoHook: none).
  struct Hook {
    size_t request = 0;
    std::function<void()> fn;
    bool hold = false;
  };
  static constexpr size_t kNoHook = SIZE_MAX;
  std::atomic<size_t> hook_at{kNoHook};
  std::mutex hook_mu;
  std::vector<Hook> hooks;
  // Holding hooks running: while above 0, no worker sends its next request.
  std::atomic<int> holds{0};
  std::atomic<int> held_workers{0};     // workers waiting in WaitWhileHeld
  std::condition_variable hold_cv;      // with hook_mu
  std::atomic<int64_t> day_playing{0};  // the day PlaySteps plays (for a held hook's probe)
  // Runs (outside the lock) every hook whose request is r or one already sent.
  void RunHookAt(size_t r) {
    if (r < hook_at.load(std::memory_order_acquire)) return;
    std::vector<Hook> due;
    {
      std::lock_guard<std::mutex> lk(hook_mu);
      size_t lowest = kNoHook;
      for (auto it = hooks.begin(); it != hooks.end();) {
        if (it->request <= r) {
          if (it->hold) holds.fetch_add(1);
          due.push_back(std::move(*it));
          it = hooks.erase(it);
        } else {
          lowest = std::min(lowest, it->request);
          ++it;
        }
      }
      hook_at.store(lowest, std::memory_order_release);
    }
    for (auto& h : due) {
      // A held hook's hold ends when it does, however it ends.
      struct Release {
        Impl* m;
        bool hold;
        ~Release() {
          if (!hold) return;
          std::lock_guard<std::mutex> lk(m->hook_mu);
          m->holds.fetch_sub(1);
          m->hold_cv.notify_all();
        }
      } release{this, h.hold};
      if (h.fn) h.fn();
    }
  }
  void AddHook(size_t request, std::function<void()> hook, bool hold);
  // Waits while a holding hook runs on another worker.
  void WaitWhileHeld() {
    if (holds.load(std::memory_order_acquire) == 0) return;
    std::unique_lock<std::mutex> lk(hook_mu);
    held_workers.fetch_add(1);
    hold_cv.wait(lk, [this] { return holds.load() == 0; });
    held_workers.fetch_sub(1);
  }

  // The bidder request r goes to: its draw, or the next one in the rotation when that one is
  // out or, in its slow start, does not take this request (all out: its draw).
  size_t Route(int64_t day_index, size_t r, int64_t now_ms) const {
    const size_t first = BidderOf(day_index, r);
    for (size_t k = 0; k < targets.size(); ++k) {
      const size_t b = (first + k) % targets.size();
      if (is_out[b].load(std::memory_order_relaxed)) continue;
      const int64_t since = now_ms - back_ms[b].load(std::memory_order_relaxed);
      if (k == 0 && since < cfg.slow_start_ms &&
          Draw(cfg.seed, day_index, r, 0, 10) * cfg.slow_start_ms >= static_cast<double>(since)) {
        continue;
      }
      return b;
    }
    return first;
  }
  // Takes bidder b out of the rotation (it refused a connection).
  void TakeOut(size_t b) {
    down_until[b].store(RotationMs() + kDownMs, std::memory_order_relaxed);
    if (!is_out[b].exchange(true)) {
      log::Get("exchange")
          .warn("bidder {}:{} refused a connection: out of the rotation", targets[b].first,
                targets[b].second);
    }
  }
  // If bidder b is out and its probe is due, one worker probes it (on its own connection): the
  // day's opening request (a restarted bidder learns the day and asks for its leases), then its
  // readiness check; ready, it is back in the rotation.
  void ProbeIfDue(Conn& conn, size_t b, int64_t day_index) {
    if (!is_out[b].load(std::memory_order_relaxed)) return;
    const int64_t now = RotationMs();
    int64_t due = down_until[b].load(std::memory_order_relaxed);
    if (now < due || !down_until[b].compare_exchange_strong(due, now + kDownMs)) return;
    if (cfg.open_days && !conn.Do(http::verb::post, cfg.bid_path, OpenDayBody(day_index)).ok()) {
      return;
    }
    if (const auto ready = Ready(conn); ready.ok() && *ready) BringBack(b);
  }
  // Whether the bidder's readiness check passes (GET /readyz: 200, or 404 for a bidder without
  // one); an error when it does not answer.
  static Result<bool> Ready(Conn& conn) {
    const auto r = conn.Do(http::verb::get, "/readyz", "");
    if (!r.ok()) return r.status();
    return r->status == 200 || r->status == 404;
  }
  // Bidder b, if out of the rotation, is back in it (its slow start begins).
  void BringBack(size_t b) {
    if (!is_out[b].exchange(false)) return;
    back_ms[b].store(RotationMs(), std::memory_order_relaxed);
    log::Get("exchange")
        .info("bidder {}:{} is ready: back in the rotation", targets[b].first, targets[b].second);
  }
  // A test request (never charged, no candidates) at day_index's first instant: the bidder
  // starts the day's budgets and, sharing them, asks for its leases.
  static std::string OpenDayBody(int64_t day_index) {
    bidder::BidRequest req = SimRequest("open-d" + std::to_string(day_index), 300, 250, 0);
    req.has_site = true;
    req.site_id = "sim";
    req.test = true;
    req.sim = bidder::SimHints{day_index * kDayMs, /*has_candidates=*/true, {}};
    return bidder::EncodeBidRequest(req);
  }
  std::unique_ptr<kafka::Producer> producer;    // step markers (none without brokers)
  std::vector<std::unique_ptr<Conn>> controls;  // /metrics polls, one per bidder

  // The bidder of request r of a day (deterministic per seed).
  size_t BidderOf(int64_t day_index, size_t r) const {
    if (targets.size() == 1) return 0;
    const double u = Draw(cfg.seed, day_index, r, 0, 9);
    size_t b = 0;
    while (b + 1 < spread_cum.size() && u >= spread_cum[b]) ++b;
    return b;
  }

  ~Impl() {
    if (producer != nullptr) (void)producer->Flush(5000);
  }

  struct Local {                                                    // one worker's share of a step
    std::vector<Outcome> by_arm_agent;                              // [arm * agents + agent]
    std::map<std::pair<int, uint32_t>, Outcome> by_arm_advertiser;  // as DayAccount's
    int64_t requests = 0, bids = 0, events = 0, lost = 0, failed_notices = 0;
    int64_t rerouted = 0;       // requests answered by another bidder than their draw (it refused)
    bool ask_refused = false;   // the last request's bidder refused the connection (Ask)
    int64_t moved_notices = 0;  // notices another bidder took (the bidder that bid was gone)
    // The worker's connection to every bidder, and the bidder of the request being played.
    std::vector<std::unique_ptr<Conn>>* conns = nullptr;
    size_t bidder = 0;
  };

  // One of our bids in an auction, with the world's truth for it.
  struct Offer {
    const bidder::Bid* bid;
    uint32_t adv;
    int agent;
    double pctr, pcvr;
    int64_t value;  // order value of a conversion, micros
  };

  // Sends one notice, retrying while the bidder is unreachable; true when acknowledged (200)
  // and booked (a charge the bidder refused, say past its budget after a restart, is logged but
  // not booked: its body starts "refused").
  // Several bidders: a notice that certainly never reached the bidder that bid, because its
  // process is gone (the connection refused, nothing written), goes to the next bidder in the
  // rotation instead, with no wait: they share the notice secret, so any of them checks any
  // notice and books a charge inside its own lease (what the dead bidder had reserved for the
  // bid stays counted until the coordinator reclaims it, so nothing is spent twice). A notice
  // that may have reached a bidder is only ever retried on that bidder, whose dedupe applies
  // it once.
  bool Notice(Conn& first, const std::string& target, Local& loc) {
    Conn* conn = &first;
    size_t at = loc.bidder, moves = 0;
    const size_t n = loc.conns == nullptr ? 1 : loc.conns->size();
    for (int a = 0; a <= cfg.notice_retries; ++a) {
      auto r = conn->Do(http::verb::get, target, "");
      if (!r.ok() && n > 1 && conn->sent_nothing() && moves + 1 < n) {
        TakeOut(at);
        at = (at + 1) % n;
        ++moves;
        conn = (*loc.conns)[at].get();
        if (moves == 1) ++loc.moved_notices;
        --a;  // moving on is not a retry
        continue;
      }
      if (r.ok()) {
        if (r->status == 200) {
          ++loc.events;
          return r->body.rfind("refused", 0) != 0;
        }
        if (r->status < 500) break;  // refused: retrying will not help
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(cfg.notice_retry_ms));
    }
    ++loc.failed_notices;
    return false;
  }

  // Calls fn(bid, advertiser id) for every bid of an answer whose cid is an advertiser id.
  template <typename Fn>
  static void ForEachBid(const bidder::BidResponse& resp, Fn&& fn) {
    for (const auto& sb : resp.seatbid) {
      for (const auto& b : sb.bids) {
        uint32_t adv = 0;
        const auto [end, ec] = std::from_chars(b.cid.data(), b.cid.data() + b.cid.size(), adv);
        if (ec == std::errc() && end == b.cid.data() + b.cid.size()) fn(b, adv);
      }
    }
  }

  // POSTs the request; the bids of the answer (none on no-bid or failure), counted.
  std::optional<bidder::BidResponse> Ask(Conn& conn, const std::string& body, Local& loc) {
    ++loc.requests;
    auto reply = conn.Do(http::verb::post, cfg.bid_path, body);
    if (!reply.ok()) {
      ++loc.lost;
      loc.ask_refused = conn.refused();
      return std::nullopt;
    }
    if (reply->status == 204) ++loc.events;  // the bidder's no-bid event
    if (reply->status != 200) return std::nullopt;
    auto resp = bidder::DecodeBidResponse(reply->body);
    if (!resp.ok()) return std::nullopt;
    for (const auto& sb : resp->seatbid) {
      loc.bids += static_cast<int64_t>(sb.bids.size());
      loc.events += static_cast<int64_t>(sb.bids.size());  // one bid event each
    }
    return std::move(*resp);
  }

  // The auction over eCPM per impression (micros) among our offers and the competitors' eCPMs:
  // the top `slots` win, each pays the next or the reserve (second price) or its own eCPM (first
  // price). Then the notices the outcome implies.
  // `value_on_notice`: conversions carry value= (else the bidder books conversion_value).
  void Settle(Conn& conn, const std::string& id, const std::string& t, int arm, int slots,
              Pricing pricing, double reserve_ecpm, const std::vector<Offer>& offers,
              const double* competitor_cpm, size_t competitors, int64_t day_index, size_t r,
              bool value_on_notice, Local& loc);

  // The lowest policy version the bidders in the rotation serve (their /metrics). `skip_gone`
  // (the step-end wait): a bidder that refuses the connection is taken out of the rotation and
  // left out. An error when no bidder answers.
  Result<uint64_t> PolicyVersion(bool skip_gone = false);
  Result<uint64_t> VersionOf(size_t b);  // bidder b's (its /metrics)
  // Before a day's traffic: every bidder starts the day and (with wait_for_policy), if it shares
  // budgets, has its leases for it (its readiness check passes), up to policy_wait_ms.
  Status OpenDay(int64_t day_index);
  void PlayRequest(Conn& conn, const sim::Day& day, int64_t day_index, size_t r, Local& loc);
  void PlayTrafficRequest(Conn& conn, const TrafficDay& day, int64_t day_index, size_t r,
                          Local& loc);

  // The step loop shared by both kinds of day: `play(conn, r, loc)` for every request, step by
  // step over `concurrency` connections, then each step's marker and policy wait.
  Result<DayAccount> PlaySteps(const std::vector<size_t>& begins, int steps, int64_t step_ms,
                               int64_t day_index,
                               const std::function<void(Conn&, size_t, Local&)>& play,
                               const std::function<void(const StepAccount&)>& on_step);
};

Exchange::Exchange(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Exchange::~Exchange() = default;

namespace {

Status CheckConfig(const ExchangeConfig& cfg) {
  for (const std::string& b :
       cfg.bidders.empty() ? std::vector<std::string>{cfg.bidder} : cfg.bidders) {
    if (b.rfind(':') == std::string::npos) {
      return Status::InvalidArgument("exchange: a bidder must be host:port, got '" + b + "'");
    }
  }
  if (!cfg.spread.empty() && cfg.spread.size() != cfg.bidders.size()) {
    return Status::InvalidArgument("exchange: spread needs one weight per bidder");
  }
  for (double w : cfg.spread) {
    if (!(w > 0)) return Status::InvalidArgument("exchange: spread weights must be positive");
  }
  if (cfg.outcomes != "expected" && cfg.outcomes != "sampled") {
    return Status::InvalidArgument("exchange: outcomes must be expected or sampled");
  }
  if (cfg.concurrency < 1) return Status::InvalidArgument("exchange: concurrency must be >= 1");
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Exchange>> Exchange::Create(std::unique_ptr<Impl> m) {
  const ExchangeConfig& cfg = m->cfg;
  RTB_RETURN_IF_ERROR(CheckConfig(cfg));
  const std::vector<std::string> bidders =
      cfg.bidders.empty() ? std::vector<std::string>{cfg.bidder} : cfg.bidders;
  double total = 0;
  for (size_t b = 0; b < bidders.size(); ++b) {
    const size_t colon = bidders[b].rfind(':');
    m->targets.emplace_back(bidders[b].substr(0, colon), bidders[b].substr(colon + 1));
    m->controls.push_back(
        std::make_unique<Conn>(m->targets[b].first, m->targets[b].second, cfg.io_timeout_ms));
    total += cfg.spread.empty() ? 1.0 : cfg.spread[b];
    m->spread_cum.push_back(total);
  }
  for (double& c : m->spread_cum) c /= total;
  m->sent_to.reset(new std::atomic<int64_t>[bidders.size()]);
  m->is_out.reset(new std::atomic<bool>[bidders.size()]);
  m->down_until.reset(new std::atomic<int64_t>[bidders.size()]);
  m->back_ms.reset(new std::atomic<int64_t>[bidders.size()]);
  for (size_t b = 0; b < bidders.size(); ++b) {
    m->is_out[b] = false;
    m->sent_to[b] = m->down_until[b] = 0;
    m->back_ms[b] = INT64_MIN / 2;  // never out: no slow start
  }
  if (!cfg.brokers.empty()) {
    kafka::Producer::Options po;
    po.bootstrap = cfg.brokers;
    po.properties = {{"enable.idempotence", "true"}, {"linger.ms", "0"}};
    po.properties.insert(po.properties.end(), cfg.kafka_properties.begin(),
                         cfg.kafka_properties.end());
    auto p = kafka::Producer::Create(std::move(po));
    if (!p.ok()) return Status::Unavailable("exchange: " + p.status().message());
    m->producer = std::move(*p);
    if (cfg.market_keys == nullptr) {
      log::Get("exchange")
          .warn("market_keys not set: messages on {} are not authenticated", cfg.clock_topic);
    }
  }
  return std::unique_ptr<Exchange>(new Exchange(std::move(m)));
}

Result<std::unique_ptr<Exchange>> Exchange::Create(const ExchangeConfig& cfg,
                                                   const sim::Scenario& sc) {
  auto m = std::make_unique<Impl>();
  m->cfg = cfg;
  m->sc = &sc;
  m->agents = sc.market.agents;
  return Create(std::move(m));
}

Result<std::unique_ptr<Exchange>> Exchange::Create(const ExchangeConfig& cfg,
                                                   const TrafficMarket& market) {
  auto m = std::make_unique<Impl>();
  m->cfg = cfg;
  m->cfg.learned_share = market.learned_share;
  m->cfg.ab_salt = market.ab_salt;
  m->tm = &market;
  m->agents = market.agents;
  return Create(std::move(m));
}

void Exchange::Impl::Settle(Conn& conn, const std::string& id, const std::string& t, int arm,
                            int slots, Pricing pricing, double reserve_ecpm,
                            const std::vector<Offer>& offers, const double* competitor_cpm,
                            size_t competitors, int64_t day_index, size_t r, bool value_on_notice,
                            Local& loc) {
  SlotAuction auction(slots, reserve_ecpm, pricing);
  for (uint32_t o = 0; o < offers.size(); ++o) {
    auction.Offer({static_cast<double>(offers[o].bid->price.value()) / 1000.0, offers[o].adv, o});
  }
  for (size_t b = 0; b < competitors; ++b) {  // other bidders' seats (never ours)
    auction.Offer({competitor_cpm[b] * 1000.0, UINT32_MAX - static_cast<uint32_t>(b),
                   static_cast<uint32_t>(offers.size() + b)});
  }
  SlotResult won[kMaxSlots];
  const int winners = auction.Resolve(won);
  std::vector<char> is_winner(offers.size(), 0);
  int64_t lowest_clearing = 0;
  for (int s = 0; s < winners; ++s) {
    const int64_t clearing_cpm = std::llround(won[s].price_ecpm * 1000.0);
    lowest_clearing = clearing_cpm;
    if (won[s].index >= offers.size()) continue;  // a competitor's slot
    const Offer& o = offers[won[s].index];
    is_winner[won[s].index] = 1;
    std::string burl = PathOf(o.bid->burl);
    ReplaceAll(burl, "${AUCTION_ID}", id);
    ReplaceAll(burl, "${AUCTION_IMP_ID}", "1");
    ReplaceAll(burl, "${AUCTION_BID_ID}", o.bid->id);
    ReplaceAll(burl, "${AUCTION_PRICE}", Decimal(clearing_cpm));
    Outcome out;  // this win's outcome, booked to its agent and its advertiser below
    ++out.impressions;
    if (Notice(conn, burl + t, loc)) out.cost += Micros((clearing_cpm + 500) / 1000);
    // Clicks and conversions name the bid with the signed query of its billing URL.
    const size_t q = burl.find('?');
    const std::string who = q == std::string::npos ? "?" : burl.substr(q);
    int64_t value = 0;
    double conversions = 0;  // what the conversion notice books
    std::string count;       // its n= (expected outcomes)
    if (cfg.outcomes == "expected") {
      // Expected outcomes: one click notice with the expected clicks (n = pCTR) and one
      // conversion notice with the expected conversions (n = pCTR x pCVR) and their value, each
      // counted once the bidder acknowledged it, so that its events count what this counts.
      if (o.pctr > 0 && Notice(conn, "/notice/click" + who + "&n=" + Count9(o.pctr) + t, loc)) {
        out.clicks += o.pctr;
      }
      conversions = o.pctr * o.pcvr;
      value = std::llround(conversions * static_cast<double>(o.value));
      value_on_notice = true;  // an expected value is not the campaign's conversion value
      count = "&n=" + Count9(conversions);
    } else {
      const bool click = Draw(cfg.seed, day_index, r, o.adv, 1) < o.pctr;
      const bool buy = click && Draw(cfg.seed, day_index, r, o.adv, 2) < o.pcvr;
      if (click) {
        out.clicks += 1;
        Notice(conn, "/notice/click" + who + t, loc);
      }
      if (buy) {
        out.conversions += 1;
        value = o.value;
      }
    }
    if (value > 0) {
      const std::string target = "/notice/conversion" + who +
                                 (value_on_notice ? "&value=" + Decimal(value) : std::string()) +
                                 count + t;
      if (Notice(conn, target, loc)) {
        out.revenue += Micros(value);
        if (cfg.outcomes == "expected") out.conversions += conversions;
      }
    }
    loc.by_arm_agent[static_cast<size_t>(arm * agents + o.agent)] += out;
    loc.by_arm_advertiser[{arm, o.adv}] += out;
  }
  if (!cfg.send_loss_notices) return;
  for (size_t o = 0; o < offers.size(); ++o) {
    if (is_winner[o]) continue;
    std::string lurl = PathOf(offers[o].bid->lurl);
    ReplaceAll(lurl, "${AUCTION_ID}", id);
    ReplaceAll(lurl, "${AUCTION_IMP_ID}", "1");
    ReplaceAll(lurl, "${AUCTION_BID_ID}", offers[o].bid->id);
    ReplaceAll(lurl, "${AUCTION_PRICE}", Decimal(lowest_clearing));
    ReplaceAll(lurl, "${AUCTION_LOSS}", "102");  // lost to a higher bid
    Notice(conn, lurl + t, loc);
  }
}

void Exchange::Impl::PlayRequest(Conn& conn, const sim::Day& day, int64_t day_index, size_t r,
                                 Local& loc) {
  const sim::Market& market = sc->market;
  const int64_t sim_ms = day_index * kDayMs + day.time_ms[r];
  const std::string id = "d" + std::to_string(day_index) + "-r" + std::to_string(r);
  const std::string t = "&t=" + std::to_string(sim_ms);
  bidder::BidRequest req = SimRequest(id, 300, 250, day.floor_cpm[r]);
  req.has_site = true;
  req.site_id = "sim";
  req.site_domain = "sim.example";
  req.device_type = 2;
  req.user_id = sim::ConsumerUserId(day.consumer[r]);
  // The user's arm, as the bidder assigns it: this request's outcomes are that arm's.
  const int arm = static_cast<int>(ArmOf(req.user_id, cfg.ab_salt, cfg.learned_share));
  req.tmax_ms = cfg.tmax_ms;
  req.at = sc->cfg.auction.openrtb_at();
  bidder::SimHints& hints = req.sim.emplace();
  hints.t_ms = sim_ms;
  hints.has_candidates = true;
  for (uint32_t c = day.begin[r]; c < day.begin[r + 1]; ++c) {
    hints.candidates.push_back({day.adv[c], day.pctr[c], day.pcvr[c]});
  }
  const std::string body = bidder::EncodeBidRequest(req);
  const auto resp = Ask(conn, body, loc);
  if (!resp) return;
  // The bids, each tied to its candidate in the day (for the outcomes).
  std::vector<Offer> offers;
  ForEachBid(*resp, [&](const bidder::Bid& b, uint32_t adv) {
    for (uint32_t c = day.begin[r]; c < day.begin[r + 1]; ++c) {
      if (day.adv[c] == adv) {
        const int agent = adv < market.agent_of.size() ? market.agent_of[adv] : 0;
        offers.push_back({&b, adv, agent, day.pctr[c], day.pcvr[c], day.ppb[c]});
        return;
      }
    }
  });
  const auto& acfg = sc->cfg.auction;
  Settle(conn, id, t, arm, acfg.slots, acfg.pricing(),
         std::max(acfg.reserve_cpm * 1e6 / 1000.0, day.floor_cpm[r] / 1000.0), offers, nullptr, 0,
         day_index, r, true, loc);
}

void Exchange::Impl::PlayTrafficRequest(Conn& conn, const TrafficDay& day, int64_t day_index,
                                        size_t r, Local& loc) {
  const TrafficConfig& tc = tm->traffic;
  const size_t p = day.placement[r];
  const Placement& pl = tc.placements[p];
  const size_t seg = tm->segment_of_user[day.user[r]];
  const int64_t sim_ms = day_index * kDayMs + day.time_ms[r];
  const std::string id = "d" + std::to_string(day_index) + "-r" + std::to_string(r);
  const std::string t = "&t=" + std::to_string(sim_ms);
  bidder::BidRequest req = SimRequest(id, pl.w, pl.h, pl.floor_cpm.value());
  if (pl.app) {
    req.has_app = true;
    req.app_id = req.app_bundle = pl.domain;
  } else {
    req.has_site = true;
    req.site_id = req.site_domain = pl.domain;
  }
  req.cat = pl.cat;
  req.device_type = pl.device_type;
  req.country = pl.country;
  req.user_id = TrafficUserId(day.user[r]);
  const int arm = static_cast<int>(ArmOf(req.user_id, cfg.ab_salt, cfg.learned_share));
  req.tmax_ms = cfg.tmax_ms;
  req.sim = bidder::SimHints{sim_ms, /*has_candidates=*/false, {}};  // the clock alone
  const std::string body = bidder::EncodeBidRequest(req);
  const auto resp = Ask(conn, body, loc);
  std::vector<Offer> offers;
  const size_t S = tc.segments.size();
  if (resp) {
    ForEachBid(*resp, [&](const bidder::Bid& b, uint32_t adv) {
      const auto it = tm->advertisers.find(adv);
      if (it == tm->advertisers.end()) return;
      const TrafficMarket::Adv& a = it->second;
      offers.push_back(
          {&b, adv, a.agent, a.ctr[p * S + seg], a.cvr[p * S + seg], a.conversion_value.value()});
    });
  }
  const auto B = static_cast<size_t>(tc.competition.bidders);
  Settle(conn, id, t, arm, tc.slots, Pricing::kSecondPrice,
         std::max(tc.reserve_cpm * 1e6, static_cast<double>(pl.floor_cpm.value())) / 1000.0, offers,
         day.competitor_cpm.data() + r * B, B, day_index, r, false, loc);
}

Result<uint64_t> Exchange::BidderPolicyVersion() { return impl_->PolicyVersion(); }

Result<uint64_t> Exchange::BidderPolicyVersion(size_t bidder) {
  if (bidder >= impl_->controls.size()) return Status::InvalidArgument("no such bidder");
  return impl_->VersionOf(bidder);
}

Result<uint64_t> Exchange::Impl::VersionOf(size_t b) {
  auto r = controls[b]->Do(http::verb::get, "/metrics", "");
  if (!r.ok()) return r.status();
  const std::string key = "\nrtb_policy_version ";
  const size_t p = r->body.find(key);
  if (p == std::string::npos)
    return Status::Corruption("bidder /metrics has no rtb_policy_version");
  return std::strtoull(r->body.c_str() + p + key.size(), nullptr, 10);
}

Result<uint64_t> Exchange::Impl::PolicyVersion(bool skip_gone) {
  uint64_t lowest = UINT64_MAX;
  for (size_t b = 0; b < controls.size(); ++b) {
    if (is_out[b].load() && controls.size() > 1) continue;  // out of the rotation: serves nothing
    auto v = VersionOf(b);
    if (!v.ok() && skip_gone && controls[b]->refused() && controls.size() > 1) {
      TakeOut(b);  // its process is gone: it installs every table from the topic when back
      continue;
    }
    if (!v.ok()) return v.status();
    lowest = std::min(lowest, *v);
  }
  if (lowest == UINT64_MAX) return Status::Unavailable("no bidder in the rotation answers");
  return lowest;
}

Status Exchange::Impl::OpenDay(int64_t day_index) {
  const std::string body = OpenDayBody(day_index);
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(cfg.policy_wait_ms);
  for (size_t b = 0; b < controls.size(); ++b) {
    const auto& control = controls[b];
    if (auto st = control->Do(http::verb::post, cfg.bid_path, body).status(); !st.ok()) {
      // A bidder whose process is gone (killed across the day's end) is out of the rotation
      // until it is back and ready: the probe opens the day for it.
      if (!control->refused() || controls.size() == 1) return st;
      TakeOut(b);
      continue;
    }
    while (cfg.wait_for_policy) {
      RTB_ASSIGN_OR_RETURN(const bool ready, Ready(*control));
      if (ready) break;  // a bidder that shares no budget has no leases to wait for
      if (SteadyClock::now() > deadline) {
        log::Get("exchange")
            .warn("a bidder's leases for day {} were not ready in {} ms", day_index,
                  cfg.policy_wait_ms);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    BringBack(b);  // if it was out (restarted across the day's end)
  }
  return Status::Ok();
}

void Exchange::AtRequest(size_t request, std::function<void()> hook) {
  impl_->AddHook(request, std::move(hook), /*hold=*/false);
}

void Exchange::HoldAtRequest(size_t request, std::function<void()> hook) {
  impl_->AddHook(request, std::move(hook), /*hold=*/true);
}

int Exchange::WorkersHeld() const { return impl_->held_workers.load(); }

Status Exchange::BringBackWhenReady(size_t bidder, int64_t timeout_ms) {
  Impl& m = *impl_;
  if (bidder >= m.targets.size()) return Status::InvalidArgument("no such bidder");
  Conn conn(m.targets[bidder].first, m.targets[bidder].second, m.cfg.io_timeout_ms);
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  bool opened = !m.cfg.open_days;
  for (;;) {
    // The day's opening request first, until the bidder answers it (a restarted bidder learns
    // the day and asks for its leases), then its readiness check, as a probe does.
    if (!opened) {
      const auto r = conn.Do(http::verb::post, m.cfg.bid_path, Impl::OpenDayBody(m.day_playing));
      opened = r.ok() && r->status >= 200 && r->status < 300;
    }
    if (opened) {
      if (const auto ready = Impl::Ready(conn); ready.ok() && *ready) {
        m.BringBack(bidder);
        return Status::Ok();
      }
    }
    if (SteadyClock::now() > deadline) {
      return Status::Unavailable("bidder " + m.targets[bidder].first + ":" +
                                 m.targets[bidder].second + " was not ready in " +
                                 std::to_string(timeout_ms) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Exchange::Impl::AddHook(size_t request, std::function<void()> hook, bool hold) {
  Impl& m = *this;
  std::lock_guard<std::mutex> lk(m.hook_mu);
  m.hooks.push_back({request, std::move(hook), hold});
  m.hook_at.store(std::min(m.hook_at.load(std::memory_order_relaxed), request),
                  std::memory_order_release);
}

std::vector<int64_t> Exchange::RequestsPerBidder() const {
  std::vector<int64_t> v;
  for (size_t b = 0; b < impl_->targets.size(); ++b) v.push_back(impl_->sent_to[b].load());
  return v;
}

Result<DayAccount> Exchange::PlayDay(const sim::Day& day, int64_t day_index,
                                     const std::function<void(const StepAccount&)>& on_step) {
  if (impl_->sc == nullptr)
    return Status::InvalidArgument("exchange: not playing a generated world");
  Impl& m = *impl_;
  return m.PlaySteps(
      day.StepBegins(), day.steps, day.step_ms, day_index,
      [&](Conn& conn, size_t r, Impl::Local& loc) { m.PlayRequest(conn, day, day_index, r, loc); },
      on_step);
}

Result<DayAccount> Exchange::PlayDay(const TrafficDay& day, int64_t day_index,
                                     const std::function<void(const StepAccount&)>& on_step) {
  if (impl_->tm == nullptr)
    return Status::InvalidArgument("exchange: not playing a traffic market");
  Impl& m = *impl_;
  return m.PlaySteps(
      day.StepBegins(), day.steps, day.step_ms, day_index,
      [&](Conn& conn, size_t r, Impl::Local& loc) {
        m.PlayTrafficRequest(conn, day, day_index, r, loc);
      },
      on_step);
}

Result<DayAccount> Exchange::Impl::PlaySteps(
    const std::vector<size_t>& begins, int steps, int64_t step_ms, int64_t day_index,
    const std::function<void(Conn&, size_t, Local&)>& play,
    const std::function<void(const StepAccount&)>& on_step) {
  Impl& m = *this;
  const auto t0 = SteadyClock::now();
  const int N = m.agents;
  DayAccount acct;
  acct.day = day_index;
  acct.by_agent.assign(static_cast<size_t>(N), Outcome{});
  acct.by_arm_agent.assign(static_cast<size_t>(kArms * N), Outcome{});
  // Each worker keeps one connection to every bidder.
  std::vector<std::vector<std::unique_ptr<Conn>>> conns(static_cast<size_t>(m.cfg.concurrency));
  for (auto& per_bidder : conns) {
    for (const auto& [host, port] : m.targets) {
      per_bidder.push_back(std::make_unique<Conn>(host, port, m.cfg.io_timeout_ms));
    }
  }
  m.day_playing = day_index;
  // A hook this day did not reach is not carried into the next, however the day ends.
  struct DropHooks {
    Impl& m;
    ~DropHooks() {
      std::lock_guard<std::mutex> lk(m.hook_mu);
      m.hooks.clear();
      m.hook_at.store(Impl::kNoHook, std::memory_order_relaxed);
    }
  } drop_hooks{m};
  if (m.cfg.open_days) RTB_RETURN_IF_ERROR(m.OpenDay(day_index));
  for (int step = 0; step < steps; ++step) {
    std::atomic<size_t> next{begins[static_cast<size_t>(step)]};
    const size_t end = begins[static_cast<size_t>(step) + 1];
    std::vector<Local> locals(conns.size());
    std::vector<std::thread> workers;
    for (size_t w = 0; w < conns.size(); ++w) {
      locals[w].by_arm_agent.assign(static_cast<size_t>(kArms * N), Outcome{});
      workers.emplace_back([&, w] {
        locals[w].conns = &conns[w];  // for a notice moved to another bidder
        for (size_t r = next.fetch_add(1); r < end; r = next.fetch_add(1)) {
          m.WaitWhileHeld();
          m.RunHookAt(r);
          for (size_t b = 0; b < m.targets.size(); ++b) m.ProbeIfDue(*conns[w][b], b, day_index);
          // A bidder that refuses the connection (its process is gone) is taken out of the
          // rotation and the request goes to the next one: it never reached a bidder, so it is
          // not counted (as a load balancer's retry on another backend).
          for (size_t tries = 0;; ++tries) {
            const size_t b = m.Route(day_index, r, m.RotationMs());
            locals[w].ask_refused = false;
            locals[w].bidder = b;
            play(*conns[w][b], r, locals[w]);
            if (!locals[w].ask_refused || tries + 1 >= m.targets.size()) {
              m.sent_to[b].fetch_add(1, std::memory_order_relaxed);
              if (!locals[w].ask_refused && b != m.BidderOf(day_index, r)) ++locals[w].rerouted;
              break;
            }
            m.TakeOut(b);
            --locals[w].requests;
            --locals[w].lost;
          }
        }
      });
    }
    for (auto& th : workers) th.join();
    StepAccount sa;
    sa.by_agent.assign(static_cast<size_t>(N), Outcome{});
    sa.by_arm_agent.assign(static_cast<size_t>(kArms * N), Outcome{});
    StepMarker& mk = sa.marker;
    mk.day = day_index;
    mk.step = step;
    mk.steps_per_day = steps;
    mk.step_ms = step_ms;
    for (const auto& l : locals) {
      for (const auto& [key, o] : l.by_arm_advertiser) acct.by_arm_advertiser[key] += o;
      for (int x = 0; x < kArms * N; ++x) {
        sa.by_arm_agent[static_cast<size_t>(x)] += l.by_arm_agent[static_cast<size_t>(x)];
        sa.by_agent[static_cast<size_t>(x % N)] += l.by_arm_agent[static_cast<size_t>(x)];
      }
      mk.requests += l.requests;
      mk.bids += l.bids;
      mk.expected_events += l.events;
      sa.lost_requests += l.lost;
      sa.rerouted_requests += l.rerouted;
      sa.failed_notices += l.failed_notices;
      sa.moved_notices += l.moved_notices;
    }
    for (const Outcome& o : sa.by_agent) {
      mk.impressions += o.impressions;
      mk.cost_micros += o.cost.value();
      mk.revenue_micros += o.revenue.value();
      mk.clicks += static_cast<int64_t>(std::llround(o.clicks));
      mk.conversions += static_cast<int64_t>(std::llround(o.conversions));
    }
    if (m.producer != nullptr) {
      mk.sent_unix_ms = NowUnixMs();
      const std::string msg = m.cfg.market_keys != nullptr
                                  ? m.cfg.market_keys->Seal(m.cfg.clock_topic, EncodeStepMarker(mk))
                                  : EncodeStepMarker(mk);
      const auto sent = SteadyClock::now();
      if (auto st = m.producer->Produce(m.cfg.clock_topic, 0, "", msg); !st.ok()) {
        return Status::Unavailable("step marker: " + st.message());
      }
      (void)m.producer->Flush(10000);
      if (m.cfg.wait_for_policy) {
        sa.next_version = 2 + static_cast<uint64_t>(day_index * steps + step);
        const auto deadline = sent + std::chrono::milliseconds(m.cfg.policy_wait_ms);
        while (SteadyClock::now() < deadline) {
          auto v = PolicyVersion(/*skip_gone=*/true);
          if (v.ok() && *v >= sa.next_version) {
            sa.policy_lag_ms =
                std::chrono::duration<double, std::milli>(SteadyClock::now() - sent).count();
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      }
    }
    for (int i = 0; i < N; ++i)
      acct.by_agent[static_cast<size_t>(i)] += sa.by_agent[static_cast<size_t>(i)];
    for (int x = 0; x < kArms * N; ++x)
      acct.by_arm_agent[static_cast<size_t>(x)] += sa.by_arm_agent[static_cast<size_t>(x)];
    if (on_step) on_step(sa);
    acct.steps.push_back(std::move(sa));
  }
  for (const Outcome& o : acct.by_agent) acct.total += o;
  acct.seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  return acct;
}

}  // namespace rtb::exchange
