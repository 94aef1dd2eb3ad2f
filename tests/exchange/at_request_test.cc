// Exchange::AtRequest (the chaos tests' kill at a request) against two stand-in bidders that
// answer every bid request with no bid: the hook runs once, on the worker about to send its
// request, before that request goes out; a bidder stopped by the hook gets nothing after it
// (its requests go to the other one, counted as rerouted, none lost); a hook the day does not
// reach is dropped when the day ends; several hooks (two kills in one step, or one hook setting
// the next) each run once, at their own request.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "rtb/exchange/exchange.h"
#include "rtb/simulator/simulate.h"

namespace rtb::exchange {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// An HTTP/1.1 keep-alive server on 127.0.0.1 that answers POSTs with 204 (no bid) and anything
// else with 200, counting the POSTs. Stop() closes the listener and every open connection, as
// a killed process would.
class StandInBidder {
 public:
  StandInBidder() : acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    accept_ = std::thread([this] { AcceptLoop(); });
  }
  ~StandInBidder() {
    Stop();
    for (auto& t : served_) t.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int64_t bid_requests() const { return bid_requests_.load(); }

  void Stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stopped_) return;
      stopped_ = true;
      ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // wakes the accept, refuses new ones
      for (int fd : open_) ::shutdown(fd, SHUT_RDWR);    // ends every open connection
    }
    accept_.join();
    beast::error_code ec;
    acceptor_.close(ec);
  }

 private:
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
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (stopped_) return;
        if (req.method() == http::verb::post) ++bid_requests_;
      }
      http::response<http::string_body> res{
          req.method() == http::verb::post ? http::status::no_content : http::status::ok,
          req.version()};
      res.keep_alive(true);
      res.prepare_payload();
      http::write(s, res, ec);
      if (ec) return;
    }
  }

  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::thread accept_;
  std::mutex mu_;
  bool stopped_ = false;
  std::vector<int> open_;
  std::vector<std::thread> served_;
  std::atomic<int64_t> bid_requests_{0};
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

}  // namespace
}  // namespace rtb::exchange
