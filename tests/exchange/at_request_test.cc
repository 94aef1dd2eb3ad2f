// Exchange::AtRequest (the chaos tests' kill at a request) against two stand-in bidders that
// answer every bid request with no bid: the hook runs once, on the worker about to send its
// request, before that request goes out; a bidder stopped by the hook gets nothing after it
// (its requests go to the other one, counted as rerouted, none lost); a hook the day does not
// reach is dropped when the day ends; several hooks (two kills in one step, or one hook setting
// the next) each run once, at their own request. And the rotation a killed bidder leaves: it is
// back only once its readiness check passes, then in slow start; the notices of its last bid go
// to the other bidder.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "../common/wait.h"
#include "rtb/core/clock.h"
#include "rtb/core/mac.h"
#include "rtb/core/step_marker.h"
#include "rtb/exchange/exchange.h"
#include "rtb/kafka/kafka.h"
#include "rtb/simulator/simulate.h"

namespace rtb::exchange {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// What a stand-in bidder does.
struct StandIn {
  unsigned short port = 0;  // 0: any free port (a restarted bidder: the old one's)
  bool ready = true;        // GET /readyz answers 200, else 503 (SetReady)
  bool bid = false;         // bid for the first candidate of every request (else no bid)
  // With `bid`: after answering this many bids, refuse every new connection and end the open
  // ones, as a killed process would (the last answer closes its connection: the notices of
  // that bid find the bidder gone).
  int64_t die_after_bids = -1;
};

// An HTTP/1.1 keep-alive server on 127.0.0.1 that answers POSTs with 204 (no bid) or a bid, its
// readiness check as told, and anything else with 200, counting what it answers. Stop() closes the
// listener and every open connection, as a killed process would.
class StandInBidder {
 public:
  explicit StandInBidder(StandIn opt = {})
      : opt_(opt),
        acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), opt.port)),
        ready_(opt.ready) {
    port_ = acceptor_.local_endpoint().port();
    accept_ = std::thread([this] { AcceptLoop(); });
  }
  ~StandInBidder() {
    Stop();
    for (auto& t : served_) t.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  unsigned short port() const { return port_; }
  int64_t bid_requests() const { return bid_requests_.load(); }
  int64_t readiness_checks() const { return readiness_checks_.load(); }
  int64_t notices() const { return notices_.load(); }
  // The `at` of every bid request and the price of every billing notice, as received.
  std::vector<int64_t> ats() const {
    std::lock_guard<std::mutex> lk(mu_);
    return ats_;
  }
  std::vector<std::string> billed() const {
    std::lock_guard<std::mutex> lk(mu_);
    return billed_;
  }
  void SetReady(bool ready) { ready_ = ready; }

  void Stop() {
    StopAllBut(-1);
    if (accept_.joinable()) accept_.join();
    beast::error_code ec;
    acceptor_.close(ec);  // the port is free for a restarted bidder
  }

 private:
  // Refuses new connections and ends every open one but `keep`.
  void StopAllBut(int keep) {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopped_) return;
    stopped_ = true;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // wakes the accept, refuses new ones
    for (int fd : open_) {
      if (fd != keep) ::shutdown(fd, SHUT_RDWR);
    }
  }
  void AcceptLoop() {
    for (;;) {
      tcp::socket s(ioc_);
      beast::error_code ec;
      acceptor_.accept(s, ec);
      std::lock_guard<std::mutex> lk(mu_);
      if (ec || stopped_) return;
      open_.push_back(s.native_handle());
      served_.emplace_back([this, sock = std::move(s)]() mutable { Serve(std::move(sock)); });
    }
  }
  void Serve(tcp::socket s) {
    beast::flat_buffer buf;
    for (;;) {
      http::request<http::string_body> req;
      beast::error_code ec;
      http::read(s, buf, req, ec);
      if (ec) return;
      const std::string target(req.target());
      http::response<http::string_body> res{http::status::ok, req.version()};
      res.keep_alive(true);
      bool last = false, bid = false;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (stopped_) return;
        if (req.method() == http::verb::post) {
          ++bid_requests_;
          bid = true;
          res.result(http::status::no_content);
          const auto body = nlohmann::json::parse(req.body(), nullptr, false);
          ats_.push_back(body.is_object() ? body.value("at", int64_t{0}) : -1);
          const auto* cand = body.is_object() ? &body["ext"]["sim"]["cand"] : nullptr;
          if (opt_.bid && cand != nullptr && cand->is_array() && !cand->empty()) {
            const std::string adv = std::to_string((*cand)[0][0].get<uint32_t>());
            const std::string q = "?a=" + body["id"].get<std::string>() + "&adv=" + adv;
            res.result(http::status::ok);
            res.body() =
                nlohmann::json{
                    {"id", body["id"]},
                    {"seatbid",
                     {{{"bid",
                        {{{"id", "1"},
                          {"impid", "1"},
                          {"price", 50.0},
                          {"cid", adv},
                          {"burl", "http://x/notice/billing" + q + "&price=${AUCTION_PRICE}"},
                          {"lurl", "http://x/notice/loss" + q}}}}}}}}
                    .dump();
            last = ++bids_ == opt_.die_after_bids;
            if (last) res.keep_alive(false);
          }
        } else if (target == "/readyz") {
          ++readiness_checks_;
          if (!ready_) res.result(http::status::service_unavailable);
        } else if (target.rfind("/notice/", 0) == 0) {
          ++notices_;
          const size_t p = target.find("&price=");
          if (target.rfind("/notice/billing", 0) == 0 && p != std::string::npos) {
            billed_.push_back(target.substr(p + 7, target.find('&', p + 7) - p - 7));
          }
        }
      }
      // Dying after this answer: nothing new connects from now on, so the answer's notices
      // certainly find the bidder gone.
      if (last) StopAllBut(s.native_handle());
      res.prepare_payload();
      http::write(s, res, ec);
      // Stopped between the count and the answer: the exchange never got it and sends the
      // request on to another bidder, so it is not counted here.
      if (ec && bid) --bid_requests_;
      if (ec || last) return;
    }
  }

  StandIn opt_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::thread accept_;
  mutable std::mutex mu_;
  bool stopped_ = false;
  std::vector<int64_t> ats_;         // GUARDED_BY(mu_)
  std::vector<std::string> billed_;  // GUARDED_BY(mu_)
  std::vector<int> open_;
  std::vector<std::thread> served_;
  std::atomic<bool> ready_;
  int64_t bids_ = 0;  // GUARDED_BY(mu_)
  std::atomic<int64_t> bid_requests_{0}, readiness_checks_{0}, notices_{0};
};

std::unique_ptr<sim::Scenario> SmallWorld(int requests) {
  sim::SimulatorConfig c;
  c.world.advertisers = 120;
  c.world.consumers = 800;
  c.day.requests = requests;
  auto sc = sim::BuildScenario(c, "", "", false);
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  return sc.ok() ? std::move(*sc) : nullptr;
}

ExchangeConfig TwoBidders(const StandInBidder& a, const StandInBidder& b) {
  ExchangeConfig cfg;
  cfg.bidders = {a.address(), b.address()};
  cfg.concurrency = 1;  // one request at a time: the hook sees exactly the requests before it
  cfg.wait_for_policy = false;
  cfg.open_days = false;
  cfg.notice_retries = 0;
  return cfg;
}

int64_t Sum(const DayAccount& d, int64_t StepAccount::*field) {
  int64_t n = 0;
  for (const auto& s : d.steps) n += s.*field;
  return n;
}

TEST(ExchangeAtRequest, TheHookRunsOnceBeforeItsRequestAndAStoppedBidderGetsNothingAfter) {
  auto sc = SmallWorld(900);
  ASSERT_NE(sc, nullptr);
  StandInBidder a, b;
  auto ex = Exchange::Create(TwoBidders(a, b), *sc);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  constexpr size_t kAt = 400;
  int runs = 0;
  int64_t before = -1, a_at_hook = -1;
  (*ex)->AtRequest(kAt, [&] {
    ++runs;
    a_at_hook = a.bid_requests();
    before = a_at_hook + b.bid_requests();
    a.Stop();
  });
  auto day = (*ex)->PlayDay(sc->test, 0);
  ASSERT_TRUE(day.ok()) << day.status().message();
  const auto requests = static_cast<int64_t>(sc->test.requests());
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(before, static_cast<int64_t>(kAt));  // every earlier request answered, none later
  EXPECT_GT(a_at_hook, 0);
  EXPECT_EQ(a.bid_requests(), a_at_hook);  // nothing reached the stopped bidder after the hook
  EXPECT_EQ(a.bid_requests() + b.bid_requests(), requests);
  EXPECT_EQ(Sum(*day, &StepAccount::lost_requests), 0);
  EXPECT_GT(Sum(*day, &StepAccount::rerouted_requests), 0);  // A's later draws went to B

  // Consumed: the next day runs no hook.
  auto again = (*ex)->PlayDay(sc->test, 1);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(b.bid_requests(), 2 * requests - a_at_hook);
}

TEST(ExchangeAtRequest, AHookTheDayDoesNotReachIsDroppedWhenItEnds) {
  auto small = SmallWorld(300);
  auto large = SmallWorld(900);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  StandInBidder a, b;
  auto ex = Exchange::Create(TwoBidders(a, b), *large);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  int runs = 0;
  (*ex)->AtRequest(600, [&] { ++runs; });  // past the short day's 300 requests
  auto short_day = (*ex)->PlayDay(small->test, 0);
  ASSERT_TRUE(short_day.ok()) << short_day.status().message();
  EXPECT_EQ(runs, 0);
  auto long_day = (*ex)->PlayDay(large->test, 1);  // reaches request 600: the hook is gone
  ASSERT_TRUE(long_day.ok()) << long_day.status().message();
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(a.bid_requests() + b.bid_requests(),
            static_cast<int64_t>(small->test.requests() + large->test.requests()));
  // A hook set again runs in the day that reaches it.
  (*ex)->AtRequest(600, [&] { ++runs; });
  ASSERT_TRUE((*ex)->PlayDay(large->test, 2).ok());
  EXPECT_EQ(runs, 1);
}

TEST(ExchangeAtRequest, SeveralHooksEachRunOnceAtTheirRequestAndAHookMayAddAnother) {
  auto sc = SmallWorld(900);
  ASSERT_NE(sc, nullptr);
  StandInBidder a, b;
  auto ex = Exchange::Create(TwoBidders(a, b), *sc);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  auto sent = [&] { return a.bid_requests() + b.bid_requests(); };
  std::vector<std::pair<int, int64_t>> ran;  // (hook, requests answered when it ran)
  (*ex)->AtRequest(500, [&] { ran.emplace_back(2, sent()); });
  (*ex)->AtRequest(200, [&] {
    ran.emplace_back(1, sent());
    // The chaos restart's way: a hook that sets the next one, a step later.
    (*ex)->AtRequest(700, [&] { ran.emplace_back(3, sent()); });
  });
  (*ex)->AtRequest(500, [&] { ran.emplace_back(4, sent()); });  // two at one request
  ASSERT_TRUE((*ex)->PlayDay(sc->test, 0).ok());
  const std::vector<std::pair<int, int64_t>> want = {{1, 200}, {2, 500}, {4, 500}, {3, 700}};
  EXPECT_EQ(ran, want);
  ASSERT_TRUE((*ex)->PlayDay(sc->test, 1).ok());  // each ran once
  EXPECT_EQ(ran.size(), want.size());
}

// Bidder a is stopped at request 300; at 400 a new process listens on its port, not ready; at
// 500 it turns ready. After each of the last two, the exchange's rotation clock moves 300 ms on
// (it probes a bidder out of the rotation every 250 ms, before a request). What the restarted
// bidder got: bid requests before it was ready, in all, and readiness checks before it was
// ready.
struct Restart {
  int64_t before_ready = -1, total = -1, checks_before_ready = -1;
  int64_t lost = -1;
};
Restart PlayWithARestart(int slow_start_ms) {
  Restart out;
  auto sc = SmallWorld(900);
  if (sc == nullptr) return out;
  StandInBidder a, b;
  ExchangeConfig cfg = TwoBidders(a, b);
  cfg.slow_start_ms = slow_start_ms;
  ManualClock clock;
  cfg.clock = &clock;
  auto ex = Exchange::Create(cfg, *sc);
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  if (!ex.ok()) return out;
  const unsigned short port = a.port();
  std::optional<StandInBidder> back;
  (*ex)->AtRequest(300, [&] { a.Stop(); });
  (*ex)->AtRequest(400, [&] {
    back.emplace(StandIn{.port = port, .ready = false});
    clock.Advance(300);  // its next probe is due
  });
  (*ex)->AtRequest(500, [&] {
    out.before_ready = back->bid_requests();
    out.checks_before_ready = back->readiness_checks();
    back->SetReady(true);
    clock.Advance(300);
  });
  auto day = (*ex)->PlayDay(sc->test, 0);
  EXPECT_TRUE(day.ok()) << day.status().message();
  if (!day.ok()) return out;
  out.total = back->bid_requests();
  out.lost = Sum(*day, &StepAccount::lost_requests);
  return out;
}

TEST(ExchangeRotation, ARestartedBidderGetsRequestsOnlyOnceItsReadinessCheckPasses) {
  const Restart r = PlayWithARestart(/*slow_start_ms=*/0);
  EXPECT_EQ(r.before_ready, 0);         // listening, but not ready: no requests
  EXPECT_GE(r.checks_before_ready, 1);  // it was asked
  EXPECT_GT(r.total, 100);              // ready: about half of the last 400 requests
  EXPECT_EQ(r.lost, 0);
}

TEST(ExchangeRotation, ABidderBackInTheRotationTakesItsRequestsInSlowStart) {
  // Over a minute, its part grows from none: the rotation's clock stands still over the last 400
  // requests, so it takes a few of the about 200 drawn for it at most.
  const Restart r = PlayWithARestart(/*slow_start_ms=*/60'000);
  EXPECT_EQ(r.before_ready, 0);
  EXPECT_LT(r.total, 20);
  EXPECT_EQ(r.lost, 0);
}

// A held hook: bidder a is stopped at request 300; at request 600 a held hook waits until the
// three other workers wait for it, then starts a new process on a's port that turns ready once
// asked and brings it back into the rotation. With four workers, none sends a request while the
// held hook runs, and the restarted bidder takes requests from the very next one. (A plain
// AtRequest hook, the same otherwise, lets the other three workers send on: they never wait, and
// the counts below differ.)
TEST(ExchangeAtRequest, AHeldHookStopsTheTrafficUntilItsRestartedBidderIsReady) {
  auto sc = SmallWorld(1500);
  ASSERT_NE(sc, nullptr);
  StandInBidder a, b;
  ExchangeConfig cfg = TwoBidders(a, b);
  cfg.concurrency = 4;
  auto ex = Exchange::Create(cfg, *sc);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  const unsigned short port = a.port();
  auto sent = [&](const StandInBidder* back) {
    return a.bid_requests() + b.bid_requests() + (back ? back->bid_requests() : 0);
  };
  std::optional<StandInBidder> back;
  int64_t at_hold = -1, at_ready = -1;
  bool all_held = false;
  Status brought;
  (*ex)->AtRequest(300, [&] { a.Stop(); });
  (*ex)->HoldAtRequest(600, [&] {
    // The others finish the request each had taken when the hook began, then wait.
    all_held = test::WaitUntil([&] { return (*ex)->WorkersHeld() == 3; });
    at_hold = sent(nullptr);
    back.emplace(StandIn{.port = port, .ready = false});
    std::thread ready([&] {
      test::WaitUntil([&] { return back->readiness_checks() >= 1; });  // asked while not ready
      back->SetReady(true);
    });
    brought = (*ex)->BringBackWhenReady(0, 10000);
    ready.join();
    at_ready = sent(&*back);
  });
  auto day = (*ex)->PlayDay(sc->test, 0);
  ASSERT_TRUE(day.ok()) << day.status().message();
  EXPECT_TRUE(brought.ok()) << brought.message();
  // The requests already out when the hook began complete (at most the three other workers'),
  // and then nothing goes out until the hook ends.
  EXPECT_TRUE(all_held) << (*ex)->WorkersHeld() << " workers wait for the hook";
  EXPECT_GE(at_hold, 597);
  EXPECT_LE(at_hold, 603);
  EXPECT_EQ(at_ready, at_hold);            // nor while the restarted bidder got ready
  EXPECT_GE(back->readiness_checks(), 2);  // asked while not ready, then ready
  EXPECT_GT(back->bid_requests(), 300);    // back at once: about half of the last 900
  EXPECT_EQ(sent(&*back), static_cast<int64_t>(sc->test.requests()));
  EXPECT_EQ(Sum(*day, &StepAccount::lost_requests), 0);

  // A bidder that never turns ready: an error past the timeout.
  StandInBidder never(StandIn{.ready = false});
  cfg.bidders = {never.address(), b.address()};
  auto ex2 = Exchange::Create(cfg, *sc);
  ASSERT_TRUE(ex2.ok()) << ex2.status().message();
  const Status late = (*ex2)->BringBackWhenReady(0, 100);
  EXPECT_FALSE(late.ok());
  EXPECT_NE(late.message().find("was not ready in 100 ms"), std::string::npos) << late.message();
}

// Bidder a dies right after answering its 50th bid (that answer closes its connection): the
// notices of that bid never reached it, so they go to bidder b, which acknowledges them; none
// fails (notice_retries is 0: on the bidder that bid, each would fail).
TEST(ExchangeRotation, TheNoticesOfADeadBiddersLastBidGoToAnotherBidder) {
  auto sc = SmallWorld(900);
  ASSERT_NE(sc, nullptr);
  StandInBidder a(StandIn{.bid = true, .die_after_bids = 50}), b(StandIn{.bid = true});
  auto ex = Exchange::Create(TwoBidders(a, b), *sc);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  auto day = (*ex)->PlayDay(sc->test, 0);
  ASSERT_TRUE(day.ok()) << day.status().message();
  EXPECT_EQ(Sum(*day, &StepAccount::failed_notices), 0);
  EXPECT_GE(Sum(*day, &StepAccount::moved_notices), 1);
  EXPECT_EQ(Sum(*day, &StepAccount::lost_requests), 0);
  EXPECT_GT(a.notices(), 0);  // its earlier bids' notices reached it
  EXPECT_GT(day->total.cost.value(), 0);
}

// The world's auction type on the wire: every request says `at` (2 under GSP, 1 under GFP), and
// under GFP every won bid is billed its own price (50 CPM; alone in its auction, under GSP it
// pays the request's reserve).
TEST(ExchangeAuction, RequestsCarryTheWorldsAtAndFirstPriceBillsTheBid) {
  for (const char* type : {"gsp", "gfp"}) {
    auto sc = SmallWorld(300);
    ASSERT_NE(sc, nullptr);
    ASSERT_TRUE(sim::OverrideAuctionType(&sc->cfg, type).ok());
    StandInBidder a({.bid = true}), b({.bid = true});
    auto ex = Exchange::Create(TwoBidders(a, b), *sc);
    ASSERT_TRUE(ex.ok()) << ex.status().message();
    auto day = (*ex)->PlayDay(sc->test, 0);
    ASSERT_TRUE(day.ok()) << day.status().message();
    std::vector<int64_t> ats = a.ats(), more = b.ats();
    ats.insert(ats.end(), more.begin(), more.end());
    ASSERT_EQ(ats.size(), 300u);
    const int64_t want = std::string(type) == "gsp" ? 2 : 1;
    for (int64_t at : ats) ASSERT_EQ(at, want) << type;
    std::vector<std::string> billed = a.billed(), b_billed = b.billed();
    billed.insert(billed.end(), b_billed.begin(), b_billed.end());
    ASSERT_GT(billed.size(), 200u) << type;
    int at_bid = 0;
    for (const std::string& p : billed) at_bid += p == "50.000000" || p == "50";
    if (want == 1) {
      EXPECT_EQ(at_bid, static_cast<int>(billed.size())) << billed.front();
    } else {
      EXPECT_LT(at_bid, static_cast<int>(billed.size()) / 10) << billed.front();
    }
  }
}

// With the market's key ring every step marker the exchange writes is sealed (the learner drops
// one that is not): each opens with the ring, for the clock topic, and decodes.
TEST(ExchangeMarkers, WithAKeyRingEveryStepMarkerIsSealed) {
  auto sc = SmallWorld(300);
  ASSERT_NE(sc, nullptr);
  auto mock = kafka::MockCluster::Start(1);
  ASSERT_TRUE(mock.ok());
  ASSERT_TRUE((*mock)->CreateTopic("rtb.clock", 1, 1).ok());
  auto keys = MarketKeys::Parse("k1=0123456789abcdef0123456789abcdef");
  ASSERT_TRUE(keys.ok());
  StandInBidder a, b;
  ExchangeConfig cfg = TwoBidders(a, b);
  cfg.brokers = (*mock)->bootstrap();
  cfg.market_keys = std::make_shared<const MarketKeys>(std::move(*keys));
  auto ex = Exchange::Create(cfg, *sc);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  ASSERT_TRUE((*ex)->PlayDay(sc->test, 0).ok());
  int markers = 0;
  ASSERT_TRUE(kafka::ReadWholeTopic(
                  {.bootstrap = (*mock)->bootstrap()}, "rtb.clock", 10000,
                  [&](int, int64_t, std::string_view v) {
                    std::string body;
                    ASSERT_EQ(cfg.market_keys->Open("rtb.clock", v, &body), SealCheck::kOk) << v;
                    auto m = DecodeStepMarker(body);
                    ASSERT_TRUE(m.ok()) << m.status().message();
                    EXPECT_EQ(m->step, markers);
                    ++markers;
                  })
                  .ok());
  EXPECT_EQ(markers, sc->test.steps);
}

}  // namespace
}  // namespace rtb::exchange
