// `rtb budget` over Kafka (librdkafka's mock cluster): bidders' concurrent requests never get
// more than the budget; a silent bidder's lease is reclaimed and the change published; a
// restarted coordinator reads every lease back from the grants topic and grants no money twice.
//
// Every coordinator here runs on a ManualClock: the time it judges (the bidders' silence, needs,
// reclaim pauses, the hand-over's beats and waits) passes only when the test moves the clock,
// and the messages the test writes carry that clock's time. An assertion that something did not
// happen by some time is made once the coordinator has checked for silent bidders at that time
// (ServingCoordinator::Step). Real time goes to waiting for Kafka's events only.
#include "rtb/budget/coordinator.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "../common/resident.h"
#include "../common/wait.h"
#include "rtb/budget/lease_msg.h"
#include "rtb/core/ab.h"
#include "rtb/core/clock.h"
#include "rtb/kafka/kafka.h"

namespace rtb::budget {
namespace {

using namespace std::chrono_literals;
using test::WaitUntil;

// The day of a ManualClock's start (the coordinator takes messages of its today +-1 only).
const int64_t kDay = BudgetDayOf(ManualClock().UnixMs(), -1);
const LeaseKey kKey{kDay, 7, 0};           // today, advertiser 7, learned arm
constexpr int64_t kArmBudget = 5'000'000;  // half of 10.00
// How often the coordinators here check for silent bidders (ms of their clock): the clock's step
// in ServingCoordinator::Pass.
constexpr int64_t kStepMs = 100;

// A client that reads a topic to its end (kafka::ReadWholeTopic) or tails it: it does not wait
// half a second (librdkafka's default) for more at the end.
kafka::ClientOptions Reader(const std::string& brokers) {
  return {.bootstrap = brokers, .properties = {{"fetch.wait.max.ms", "10"}}};
}

// Every holding on the grants topic, in order (it has one partition).
std::vector<LeaseGrant> AllHoldings(const std::string& brokers) {
  std::vector<LeaseGrant> all;
  GrantsReader reader;
  EXPECT_TRUE(kafka::ReadWholeTopic(Reader(brokers), "rtb.lease.grants", 10000,
                                    [&](int32_t p, int64_t, std::string_view v) {
                                      GrantsReader::Record r = reader.Take(p, v);
                                      ASSERT_NE(r.kind, GrantsReader::Kind::kMalformed) << r.error;
                                      if (r.kind != GrantsReader::Kind::kMarker) {
                                        all.push_back(r.grant);
                                      }
                                    })
                  .ok());
  return all;
}

// The latest holding per bidder on the grants topic.
std::map<std::string, int64_t> LatestHeld(const std::string& brokers) {
  std::map<std::string, int64_t> held;
  GrantsReader reader;
  EXPECT_TRUE(kafka::ReadWholeTopic(Reader(brokers), "rtb.lease.grants", 10000,
                                    [&](int32_t p, int64_t, std::string_view v) {
                                      GrantsReader::Record r = reader.Take(p, v);
                                      ASSERT_NE(r.kind, GrantsReader::Kind::kMalformed) << r.error;
                                      if (r.kind == GrantsReader::Kind::kHolding &&
                                          r.grant.key == kKey) {
                                        held[r.grant.bidder] = r.grant.held;
                                      }
                                    })
                  .ok());
  return held;
}

// The latest holding of one bidder on the grants topic, whole.
std::optional<LeaseGrant> LatestOf(const std::string& brokers, const std::string& bidder) {
  std::optional<LeaseGrant> last;
  EXPECT_TRUE(kafka::ReadWholeTopic(Reader(brokers), "rtb.lease.grants", 10000,
                                    [&](int32_t, int64_t, std::string_view v) {
                                      auto g = DecodeLeaseGrant(v);
                                      if (g.ok() && g->key == kKey && g->bidder == bidder)
                                        last = *g;
                                    })
                  .ok());
  return last;
}

// A bidder's message, sent at `ts_ms` (the coordinator's clock: the bidders' clocks are its).
void Send(kafka::Producer& p, LeaseMsgType type, const std::string& bidder,
          std::vector<LeaseItem> items, int64_t seq, int64_t ts_ms) {
  LeaseMessage m;
  m.type = type;
  m.bidder = bidder;
  m.instance = bidder + "-1";  // one process per bidder
  m.day = kDay;
  m.ts_ms = ts_ms;
  m.seq = seq;
  m.items = std::move(items);
  ASSERT_TRUE(
      p.Produce("rtb.lease.requests", kafka::kAnyPartition, bidder, EncodeLeaseMessage(m)).ok());
}

// The mock cluster with the two lease topics.
std::unique_ptr<kafka::MockCluster> LeaseCluster(int grants_partitions = 1) {
  auto mock = kafka::MockCluster::Start(3);
  EXPECT_TRUE(mock.ok()) << mock.status().message();
  if (!mock.ok()) return nullptr;
  EXPECT_TRUE((*mock)->CreateTopic("rtb.lease.requests", 4, 3).ok());
  EXPECT_TRUE((*mock)->CreateTopic("rtb.lease.grants", grants_partitions, 3).ok());
  return std::move(*mock);
}

// The market of these tests: advertiser 7, a budget of 10.00, half of it the learned arm's. The
// coordinator's time is `clock`'s; a turn of its loop waits at most 10 ms for a message.
CoordinatorOptions MarketOptions(const std::string& brokers, ManualClock* clock) {
  CoordinatorOptions opt;
  opt.brokers = brokers;
  opt.daily_budget = {{7, Micros::FromUnits(10.0)}};
  opt.learned_share = 0.5;
  opt.clock = clock;
  opt.poll_ms = 10;
  return opt;
}

std::unique_ptr<kafka::Producer> RequestsProducer(const std::string& brokers) {
  kafka::Producer::Options po;
  po.bootstrap = brokers;
  auto producer = kafka::Producer::Create(po);
  EXPECT_TRUE(producer.ok());
  return producer.ok() ? std::move(*producer) : nullptr;
}

// Stops and joins a coordinator's thread however the test ends.
struct Joiner {
  std::atomic<bool>& stop;
  std::thread& t;
  ~Joiner() {
    stop = true;
    if (t.joinable()) t.join();
  }
};

// A coordinator starting on a thread of its own: Create waits there for the coordinator serving
// the market to hand over (a Kafka event), or for the hand-over timeout of its clock.
class Starting {
 public:
  explicit Starting(CoordinatorOptions opt) : opt_(std::move(opt)) {
    opt_.stop = &give_up_;
    thread_ = std::thread([this] {
      result_ = Coordinator::Create(opt_);
      done_ = true;
    });
  }
  ~Starting() {
    give_up_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Create's result. Until it returns, `clock` (if given) moves on `step_ms` every 10 ms of real
  // time, so that a wait for the hand-over timeout ends; a start still waiting after `limit` of
  // real time gives up (and fails).
  Result<std::unique_ptr<Coordinator>> Finish(ManualClock* clock = nullptr, int64_t step_ms = 0,
                                              std::chrono::milliseconds limit = 30s) {
    WaitUntil(
        [&] {
          if (done_.load()) return true;
          if (clock != nullptr) clock->Advance(step_ms);
          return false;
        },
        limit);
    give_up_ = true;
    thread_.join();
    return std::move(result_);
  }

 private:
  CoordinatorOptions opt_;
  std::atomic<bool> give_up_{false}, done_{false};
  Result<std::unique_ptr<Coordinator>> result_ = Status::Internal("not started");
  std::thread thread_;
};

// A coordinator on a fresh mock cluster, serving on its own thread until destroyed, on a clock
// that the test moves; and a producer that sends one bidder message at a time (flushed before
// Put returns), at the clock's time.
struct ServingCoordinator {
  std::unique_ptr<kafka::MockCluster> mock;
  std::string brokers;
  ManualClock clock;
  std::unique_ptr<Coordinator> co;
  std::atomic<bool> stop{false};
  std::thread run;
  std::unique_ptr<kafka::Producer> producer;
  std::map<std::string, int64_t> heartbeat_seq;  // per bidder: its last heartbeat's seq

  CoordinatorOptions opt;
  int grants_partitions = 1;
  std::function<void(kafka::MockCluster&)> prepare;  // if set: the cluster, before the start
  std::string external_brokers;  // if set: a cluster elsewhere (ForkedLeaseCluster), not `mock`
  // A coordinator that checks for silent bidders every kStepMs, tuned by `tune`.
  void Start(const std::function<void(CoordinatorOptions&)>& tune) {
    if (external_brokers.empty()) {
      mock = LeaseCluster(grants_partitions);
      ASSERT_NE(mock, nullptr);
      if (prepare) {
        ASSERT_NO_FATAL_FAILURE(prepare(*mock));
      }
    }
    brokers = external_brokers.empty() ? mock->bootstrap() : external_brokers;
    opt = MarketOptions(brokers, &clock);
    opt.reclaim_every_ms = kStepMs;
    tune(opt);
    auto c = Coordinator::Create(opt);
    ASSERT_TRUE(c.ok()) << c.status().message();
    co = std::move(*c);
    run = std::thread([this] { EXPECT_TRUE(co->Run(stop).ok()); });
    producer = RequestsProducer(brokers);
    ASSERT_NE(producer, nullptr);
  }
  // A coordinator that takes a bidder silent for longer than `heartbeat_timeout_ms` for dead.
  void StartReclaiming(const std::string& group, int64_t heartbeat_timeout_ms) {
    Start([&](CoordinatorOptions& o) {
      o.group_id = group;
      o.lease.heartbeat_timeout_ms = heartbeat_timeout_ms;
    });
  }
  // The coordinator stops and a new one starts on the same topics (it reads the grants back).
  void Restart() {
    stop = true;
    if (run.joinable()) run.join();
    co.reset();  // its consumer leaves the group
    stop = false;
    auto c = Coordinator::Create(opt);
    ASSERT_TRUE(c.ok()) << c.status().message();
    co = std::move(*c);
    run = std::thread([this] { EXPECT_TRUE(co->Run(stop).ok()); });
  }
  void Put(LeaseMsgType type, const std::string& bidder, int64_t seq, const LeaseItem& item) {
    Send(*producer, type, bidder, {item}, seq, clock.UnixMs());
    ASSERT_TRUE(producer->Flush(5000).ok());
  }

  // Until the turn of the coordinator's loop under way is over.
  bool AwaitTurnOver() {
    const int64_t turns = co->counters().turns;
    return WaitUntil([&] { return co->counters().turns > turns; });
  }
  // Until `n` more turns are over, all but the first begun after the call (a fenced
  // coordinator's turns read and check nothing: they only look for its beats).
  bool AwaitTurns(int n) {
    const int64_t turns = co->counters().turns;
    return WaitUntil([&] { return co->counters().turns >= turns + n; });
  }
  // Until the coordinator has read `n` messages in all and the turn that read the last is over.
  bool AwaitRead(int64_t n, std::chrono::milliseconds limit = 10s) {
    return WaitUntil([&] { return co->counters().messages >= n; }, limit) && AwaitTurnOver();
  }
  // The `bidders` say they are alive: a heartbeat each at the clock's time, read by the
  // coordinator before this returns.
  bool Heartbeat(const std::vector<std::string>& bidders) {
    if (bidders.empty()) return true;
    const int64_t read = co->counters().messages;
    for (const std::string& b : bidders) {
      int64_t& seq = heartbeat_seq.try_emplace(b, 1'000).first->second;  // above the tests' own
      Send(*producer, LeaseMsgType::kHeartbeat, b, {}, ++seq, clock.UnixMs());
    }
    const auto n = static_cast<int64_t>(bidders.size());
    return producer->Flush(5000).ok() &&
           WaitUntil([&] { return co->counters().messages >= read + n; });
  }
  // A reclaim interval of the coordinator's clock passes; it checks for silent bidders at the new
  // time and finishes that turn (publishes what the check changed). No check is due before the
  // clock moves (Run's first is an interval after its start, and each step waits for its own),
  // so the check it waits for is at the new time.
  bool Step() {
    const int64_t checks = co->counters().reclaim_checks;
    clock.Advance(opt.reclaim_every_ms);
    return WaitUntil([&] { return co->counters().reclaim_checks > checks; }, 30s) &&
           AwaitTurnOver();
  }
  // `ms` of the coordinator's clock pass, a step at a time; before each step the `alive` bidders
  // say they are alive.
  bool Pass(int64_t ms, const std::vector<std::string>& alive = {}) {
    for (int64_t t = 0; t < ms; t += opt.reclaim_every_ms) {
      if (!Heartbeat(alive) || !Step()) return false;
    }
    return true;
  }
  // Steps as Pass does until `done` holds, at most `limit_ms` of the clock.
  template <typename F>
  bool PassUntil(F done, const std::vector<std::string>& alive, int64_t limit_ms) {
    for (int64_t t = 0; !done(); t += opt.reclaim_every_ms) {
      if (t >= limit_ms || !Heartbeat(alive) || !Step()) return false;
    }
    return true;
  }
  // `ms` pass with no reclaim check to wait for (a fenced coordinator takes none): in steps of
  // `step_ms`, each followed by two turns of its loop, the second begun at the new time. An
  // unfenced coordinator checks at each new time all the same (so Step's rule still holds); a
  // fenced one checks once it reads its beats back.
  bool PassInTurns(int64_t ms, int64_t step_ms) {
    for (int64_t t = 0; t < ms; t += step_ms) {
      clock.Advance(step_ms);
      if (!AwaitTurns(2)) return false;
    }
    return true;
  }
  ~ServingCoordinator() {
    stop = true;
    if (run.joinable()) run.join();
  }
};

TEST(Coordinator, GrantsNeverExceedTheBudgetReclaimsSilentBiddersAndResumesFromItsTopic) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.lease.heartbeat_timeout_ms = 3000;
    o.lease.billing_window_ms = 1000;
    o.lease.max_pool_share = 1.0;  // first come, first served: the pool empties
  }));
  const std::string& brokers = sc.brokers;
  kafka::Producer& p = *sc.producer;
  // Three bidders ask at once, 5 times each, for 0.40 each time: 6.00 asked of 5.00.
  std::vector<std::thread> bidders;
  for (int b = 0; b < 3; ++b) {
    bidders.emplace_back([&, b] {
      for (int n = 0; n < 5; ++n) {
        Send(p, LeaseMsgType::kRequest, "b" + std::to_string(b), {{7, 0, 400'000, 0, 0, 0}}, 0,
             sc.clock.UnixMs());
      }
    });
  }
  for (auto& t : bidders) t.join();
  Send(p, LeaseMsgType::kRequest, "b0", {{999, 0, 5, 0, 0, 0}}, 0, sc.clock.UnixMs());  // not ours
  ASSERT_TRUE(p.Produce("rtb.lease.requests", kafka::kAnyPartition, "x", "{not json").ok());
  ASSERT_TRUE(p.Flush(5000).ok());
  ASSERT_TRUE(sc.AwaitRead(17, 15s));
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Of(kKey).pool() == 0; }, 5s));
  EXPECT_EQ(sc.co->counters().malformed, 1);
  EXPECT_EQ(sc.co->counters().unknown_budget, 1);
  std::map<std::string, int64_t> held;
  ASSERT_TRUE(WaitUntil([&] {
    held = LatestHeld(brokers);
    int64_t sum = 0;
    for (const auto& [b, h] : held) sum += h;
    return sum == kArmBudget;
  }));
  ASSERT_EQ(held.size(), 3u);
  for (const auto& [b, h] : held) EXPECT_GT(h, 0) << b;  // everyone got a share

  // b1 reports 0.10 spent and 0.05 reserved, then falls silent; b0 and b2 keep talking.
  sc.Put(LeaseMsgType::kReport, "b1", 0, {7, 0, 0, 0, 100'000, 50'000});
  ASSERT_TRUE(sc.AwaitRead(18));
  const int64_t silent_from = sc.clock.UnixMs();
  const int64_t b1_held = sc.co->ledger().Held("b1", kKey);
  const std::vector<std::string> talking = {"b0", "b2"};
  // Silent for the heartbeat timeout, not longer: b1 keeps its lease.
  ASSERT_TRUE(sc.Pass(3000, talking));
  EXPECT_EQ(sc.co->counters().reclaims, 0);
  EXPECT_EQ(sc.co->ledger().Held("b1", kKey), b1_held);
  // Then what it neither spent nor reserved goes back to the pool; what it reserved stays its own
  // until the billing window is over too (4 s of silence in all): then only what it spent.
  ASSERT_TRUE(sc.PassUntil([&] { return sc.co->counters().reclaims >= 1; }, talking, 1000));
  EXPECT_EQ(sc.co->ledger().Held("b1", kKey), 150'000);
  ASSERT_TRUE(sc.Pass(silent_from + 4000 - sc.clock.UnixMs(), talking));
  EXPECT_EQ(sc.co->ledger().Held("b1", kKey), 150'000);
  ASSERT_TRUE(
      sc.PassUntil([&] { return sc.co->ledger().Held("b1", kKey) == 100'000; }, talking, 1000));
  EXPECT_GT(sc.clock.UnixMs() - silent_from, 4000);  // timeout + billing window
  EXPECT_TRUE(WaitUntil([&] { return LatestHeld(brokers)["b1"] == 100'000; }));  // published
  EXPECT_EQ(sc.co->counters().reclaims, 1);
  EXPECT_GT(sc.co->ledger().Of(kKey).pool(), 0);

  // A restarted coordinator: every lease as the topic says; the pool is what is not held.
  const auto before = LatestHeld(brokers);
  ASSERT_NO_FATAL_FAILURE(sc.Restart());
  EXPECT_EQ(sc.co->counters().restored, 3);
  int64_t held_before = 0;
  for (const auto& [b, h] : before) {
    EXPECT_EQ(sc.co->ledger().Held(b, kKey), h) << b;
    held_before += h;
  }
  for (int n = 0; n < 20; ++n) {
    // The most a bidder may ask (more than its arm's budget is refused as implausible).
    Send(p, LeaseMsgType::kRequest, "b3", {{7, 0, kArmBudget, 0, 0, 0}}, 0, sc.clock.UnixMs());
  }
  ASSERT_TRUE(p.Flush(5000).ok());
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Of(kKey).pool() == 0; }, 30s))
      << sc.co->counters().messages << " messages read";
  EXPECT_EQ(sc.co->ledger().Held("b3", kKey), kArmBudget - held_before);
  EXPECT_EQ(sc.co->ledger().Of(kKey).held, kArmBudget);
}

TEST(Coordinator, AReturnIsConfirmedByAHoldingThatHasSeenItAndItsMoneyGoesToTheNextAsker) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.lease.max_pool_share = 0.5;
    o.group_id = "rtb-budget-returns";
  }));
  const std::string& brokers = sc.brokers;
  auto send = [&](LeaseMsgType type, const std::string& bidder, int64_t seq, LeaseItem item) {
    sc.Put(type, bidder, seq, item);
  };
  // a asks for everything: the pool share cap gives it half; a need past the cap is met.
  send(LeaseMsgType::kRequest, "a", 10, {7, 0, kArmBudget, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == kArmBudget / 2; }));
  send(LeaseMsgType::kRequest, "a", 11, {7, 0, 100, 0, 0, 0, 2'000'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 4'500'000; }));
  std::optional<LeaseGrant> g;
  ASSERT_TRUE(WaitUntil([&] {
    g = LatestOf(brokers, "a");
    return g.has_value() && g->seen >= 11;
  }));
  EXPECT_EQ(g->pool, 500'000);
  // a returns 3.00 of what it holds (it has spent 0.50 and reserved 0.20): the holding that
  // confirms it has seen the return's seq and holds 1.50.
  send(LeaseMsgType::kReturn, "a", 12, {7, 0, 0, 3'000'000, 500'000, 200'000});
  ASSERT_TRUE(WaitUntil([&] {
    g = LatestOf(brokers, "a");
    return g.has_value() && g->seen >= 12;
  }));
  EXPECT_EQ(g->held, 1'500'000);
  EXPECT_EQ(g->pool, 3'500'000);
  EXPECT_EQ(g->left, kArmBudget - 500'000);
  // A return of more than is free gives back only what is neither spent nor reserved, and is
  // still answered (the bidder waits for it).
  send(LeaseMsgType::kReturn, "a", 13, {7, 0, 0, 5'000'000, 600'000, 100'000});
  ASSERT_TRUE(WaitUntil([&] {
    g = LatestOf(brokers, "a");
    return g.has_value() && g->seen >= 13;
  }));
  EXPECT_EQ(g->held, 700'000);
  // b gets the returned money; never more than the budget in all.
  send(LeaseMsgType::kRequest, "b", 1, {7, 0, kArmBudget, 0, 0, 0, kArmBudget});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Of(kKey).pool() == 0; }));
  EXPECT_EQ(sc.co->ledger().Held("b", kKey), kArmBudget - 700'000);
  EXPECT_EQ(sc.co->ledger().Of(kKey).held, kArmBudget);
}

// A return whose first copy was lost is sent again under its seq after a later message went
// through: that message's `seen` does not confirm the return, `returned` does once the copy is
// applied; a copy delivered twice gives nothing back twice; a restarted coordinator keeps it.
TEST(Coordinator, AReturnSentAgainAfterALaterMessageIsAppliedOnceAndConfirmedByReturned) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.lease.max_pool_share = 0.5;
    o.group_id = "rtb-budget-lost-return";
  }));
  // The latest holding of a once its `what` reaches `seq`.
  auto latest = [&](int64_t LeaseGrant::*what, int64_t seq) {
    std::optional<LeaseGrant> g;
    EXPECT_TRUE(WaitUntil([&] {
      g = LatestOf(sc.brokers, "a");
      return g.has_value() && (*g).*what >= seq;
    }));
    return g;
  };
  sc.Put(LeaseMsgType::kRequest, "a", 10, {7, 0, kArmBudget, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == kArmBudget / 2; }));
  // The return of 1.00 under seq 11 is lost; a request for nothing under seq 12 goes through
  // and is answered: seen 12, but the return is not in (the bidder keeps the amount aside).
  sc.Put(LeaseMsgType::kRequest, "a", 12, {7, 0, 0, 0, 300'000, 0});
  auto g = latest(&LeaseGrant::seen, 12);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->held, kArmBudget / 2);
  EXPECT_EQ(g->returned, 0);
  // Sent again under seq 11: applied, and `returned` says so.
  sc.Put(LeaseMsgType::kReturn, "a", 11, {7, 0, 0, 1'000'000, 300'000, 0});
  g = latest(&LeaseGrant::returned, 11);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->held, 1'500'000);
  // The same copy again (delivered twice): a report, nothing given back twice.
  sc.Put(LeaseMsgType::kReturn, "a", 11, {7, 0, 0, 1'000'000, 300'000, 0});
  ASSERT_TRUE(sc.AwaitRead(4));
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 1'500'000);
  // A restarted coordinator reads `returned` back with the holdings: its next answer still
  // confirms the return (a bidder waiting for it lets the amount go).
  ASSERT_NO_FATAL_FAILURE(sc.Restart());
  sc.Put(LeaseMsgType::kRequest, "a", 13, {7, 0, 0, 0, 300'000, 0});
  g = latest(&LeaseGrant::seen, 13);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->returned, 11);
  EXPECT_EQ(g->held, 1'500'000);
  // The restored lease counts as spent until a report newer than the holding says what was
  // spent (0.30): then a return of 0.50 gives it back.
  sc.Put(LeaseMsgType::kReport, "a", 14, {7, 0, 0, 0, 300'000, 0});
  sc.Put(LeaseMsgType::kReturn, "a", 15, {7, 0, 0, 500'000, 300'000, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 1'000'000; }));
}

// A need the pool cannot meet is a recall: the other holders' holdings are published with
// `wanted`, and what one of them gives back goes to the waiting bidder without its asking again.
TEST(Coordinator, AnUnmetNeedAsksTheOtherHoldersBackAndWhatComesBackGoesToTheWaitingBidder) {
  ServingCoordinator sc;
  // The need stands (2 s) throughout: the clock does not move in this test.
  ASSERT_NO_FATAL_FAILURE(
      sc.Start([](CoordinatorOptions& o) { o.group_id = "rtb-budget-recall"; }));
  const std::string& brokers = sc.brokers;
  auto send = [&](LeaseMsgType type, const std::string& bidder, int64_t seq, LeaseItem item) {
    sc.Put(type, bidder, seq, item);
  };
  std::optional<LeaseGrant> g;
  auto latest = [&](const std::string& bidder, int64_t seen) {
    return WaitUntil([&] {
      g = LatestOf(brokers, bidder);
      return g.has_value() && g->seen >= seen;
    });
  };
  // a takes the whole budget (its need); b then needs 1.00 of a dry pool.
  send(LeaseMsgType::kRequest, "a", 1, {7, 0, kArmBudget, 0, 0, 0, kArmBudget});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == kArmBudget; }));
  send(LeaseMsgType::kRequest, "b", 1, {7, 0, 1'000'000, 0, 0, 0, 1'000'000});
  ASSERT_TRUE(latest("b", 1));
  EXPECT_EQ(g->held, 0);
  EXPECT_EQ(g->wanted, 0);  // its own need is not asked of it
  // a's holding is published again, asking for b's need.
  ASSERT_TRUE(WaitUntil([&] {
    g = LatestOf(brokers, "a");
    return g.has_value() && g->wanted > 0;
  }));
  EXPECT_EQ(g->wanted, 1'000'000);
  EXPECT_EQ(g->held, kArmBudget);
  // a gives back 1.50: b gets its 1.00 at once, 0.50 stays in the pool, nobody waits any more.
  send(LeaseMsgType::kReturn, "a", 2, {7, 0, 0, 1'500'000, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("b", kKey) == 1'000'000; }));
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), kArmBudget - 1'500'000);
  EXPECT_EQ(sc.co->ledger().Of(kKey).pool(), 500'000);
  ASSERT_TRUE(latest("b", 1));
  ASSERT_TRUE(WaitUntil([&] {
    g = LatestOf(brokers, "b");
    return g.has_value() && g->held == 1'000'000;
  }));
  EXPECT_EQ(g->granted, 1'000'000);
  ASSERT_TRUE(latest("a", 2));
  EXPECT_EQ(g->wanted, 0);
  // A need the pool meets asks nobody back.
  send(LeaseMsgType::kRequest, "b", 2, {7, 0, 200'000, 0, 0, 0, 200'000});
  ASSERT_TRUE(latest("b", 2));
  EXPECT_EQ(g->held, 1'200'000);
  ASSERT_TRUE(latest("a", 2));
  EXPECT_EQ(g->wanted, 0);
}

// A need stands for need_stands_ms only: what comes back after that stays in the pool for the
// next asker, and the other holders are no longer asked for it.
TEST(Coordinator, AnUnmetNeedLapsesAfterItsTime) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.group_id = "rtb-budget-need-lapses";
    o.need_stands_ms = 300;
  }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, kArmBudget, 0, 0, 0, kArmBudget});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == kArmBudget; }));
  sc.Put(LeaseMsgType::kRequest, "b", 1, {7, 0, 1'000'000, 0, 0, 0, 1'000'000});
  ASSERT_TRUE(sc.AwaitRead(2));
  ASSERT_TRUE(sc.Pass(400));  // the need's 300 ms and then some
  sc.Put(LeaseMsgType::kReturn, "a", 2, {7, 0, 0, 1'500'000, 0, 0});
  ASSERT_TRUE(sc.AwaitRead(3));  // the return, and whatever its turn gave out
  // Had the need stood, b would hold 1.00 now.
  EXPECT_EQ(sc.co->ledger().Held("b", kKey), 0);
  EXPECT_EQ(sc.co->ledger().Of(kKey).pool(), 1'500'000);
}

// Every broker down for longer than the heartbeat timeout: when Kafka answers again, a bidder
// whose own client reconnects a while after the coordinator's is not taken for dead (the
// silence was the outage's); one that never speaks again is reclaimed a heartbeat timeout
// later. (Before, the coordinator read to the end at once and reclaimed both: the two-bidder
// Kafka outage loop failed so once in CI.)
void ALiveBidderThatReconnectsLateIsNotTakenForDead(int handover_timeout_ms) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([&](CoordinatorOptions& o) {
    o.group_id = "rtb-budget-own-outage";
    o.lease.heartbeat_timeout_ms = 3000;
    o.handover_timeout_ms = handover_timeout_ms;
  }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 2'000'000, 0, 0, 0, 2'000'000});
  sc.Put(LeaseMsgType::kRequest, "b", 1, {7, 0, 1'000'000, 0, 0, 0, 1'000'000});
  ASSERT_TRUE(WaitUntil([&] {
    return sc.co->ledger().Held("a", kKey) == 2'000'000 &&
           sc.co->ledger().Held("b", kKey) == 1'000'000;
  }));
  // 3.5 s of the coordinator's clock without Kafka, half a second at a time. Unfenced, it checks
  // for silent bidders meanwhile, and once both look silent it cannot ask the brokers where its
  // reading stands; fenced (its beats are not read back for half the hand-over timeout), it
  // checks nothing.
  const bool fenced = handover_timeout_ms / 2 < 3'500;
  for (int b = 1; b <= 3; ++b) sc.mock->SetBrokerDown(b);
  ASSERT_TRUE(sc.PassInTurns(3'500, 500));
  EXPECT_EQ(sc.co->counters().fences > 0, fenced);
  const int64_t checks = sc.co->counters().reclaim_checks;
  for (int b = 1; b <= 3; ++b) sc.mock->SetBrokerUp(b);
  if (fenced) {  // once it reads its beats back, it checks at the current time
    ASSERT_TRUE(WaitUntil([&] { return sc.co->counters().reclaim_checks > checks; }, 30s));
    ASSERT_TRUE(sc.AwaitTurnOver());
  }
  // a's client reconnects 1.5 s later; b's never. Nobody is reclaimed meanwhile.
  ASSERT_TRUE(sc.Pass(1'500));
  EXPECT_EQ(sc.co->counters().reclaims, 0);
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 2'000'000);
  EXPECT_EQ(sc.co->ledger().Held("b", kKey), 1'000'000);
  // From then on a says it is alive at every step. b is reclaimed once the pause after the
  // outage is over; a never is (what b held may then top a up: a holds at least what it had).
  const std::vector<std::string> a = {"a"};
  EXPECT_TRUE(sc.PassUntil([&] { return sc.co->ledger().Held("b", kKey) == 0; }, a, 5'000))
      << "b holds " << sc.co->ledger().Held("b", kKey);
  EXPECT_GE(sc.co->ledger().Held("a", kKey), 2'000'000);
  EXPECT_EQ(sc.co->counters().reclaims, 1);
  ASSERT_TRUE(sc.Pass(1'000, a));
  EXPECT_GE(sc.co->ledger().Held("a", kKey), 2'000'000);
  EXPECT_EQ(sc.co->counters().reclaims, 1);
}
TEST(Coordinator, AfterAKafkaOutageALiveBidderThatReconnectsLateIsNotTakenForDead) {
  ALiveBidderThatReconnectsLateIsNotTakenForDead(10'000);
}
// The same outage fences the coordinator (its beats are not read back for 1 s): it reads and
// reclaims nothing meanwhile, so no query of its own tells it of the outage; the pause after
// the fence does (without it, a is reclaimed as the brokers come back).
TEST(Coordinator,
     AfterAnOutageThatFencedTheCoordinatorALiveBidderThatReconnectsLateIsNotTakenForDead) {
  ALiveBidderThatReconnectsLateIsNotTakenForDead(2'000);
}

// What a reclaim frees goes at once to a bidder whose need waits for it (and the dead bidder's
// lowered holding is published): b does not have to ask again, and the others read that a
// holds nothing. Before, the money sat in the pool until b's next ask.
TEST(Coordinator, AReclaimedLeaseGoesToTheWaitingBidderAtOnce) {
  ServingCoordinator sc;
  // A need stands 5 s; a bidder is dead after 1.5 s of silence.
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.group_id = "rtb-budget-reclaim-serves";
    o.lease.heartbeat_timeout_ms = 1'500;
    o.need_stands_ms = 5'000;
  }));
  // a takes the whole budget; b then needs 1.00 of a dry pool, and a falls silent.
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, kArmBudget, 0, 0, 0, kArmBudget});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == kArmBudget; }));
  const int64_t asked_ms = sc.clock.UnixMs();
  sc.Put(LeaseMsgType::kRequest, "b", 1, {7, 0, 1'000'000, 0, 0, 0, 1'000'000});
  ASSERT_TRUE(sc.AwaitRead(2));
  // b only says it is alive (no item, no ask) until it holds its need.
  ASSERT_TRUE(
      sc.PassUntil([&] { return sc.co->ledger().Held("b", kKey) == 1'000'000; }, {"b"}, 5'000))
      << "b holds " << sc.co->ledger().Held("b", kKey);
  // Once a was silent for its timeout, within the 5 s the need stands, so the reclaim met it (b
  // never asked again).
  EXPECT_GT(sc.clock.UnixMs() - asked_ms, 1'500);
  EXPECT_LT(sc.clock.UnixMs() - asked_ms, 5'000);
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 0);
  // Both holdings are published (the clock stands while the test reads them back: b stays
  // alive).
  std::optional<LeaseGrant> g, gb;
  ASSERT_TRUE(WaitUntil([&] {
    g = LatestOf(sc.brokers, "a");
    return g.has_value() && g->held == 0;
  }));
  ASSERT_TRUE(WaitUntil([&] {
    gb = LatestOf(sc.brokers, "b");
    return gb.has_value() && gb->held == 1'000'000;
  }));
  EXPECT_EQ(gb->granted, 1'000'000);
  EXPECT_EQ(sc.co->counters().reclaims, 1);
}

// A killed bidder's last messages can be read after its lease was reclaimed. An ask among them
// was granted (the ask brought the bidder back), and the next check reclaimed it again. Sent
// before the death, such a message now counts its spend but gets nothing; the restart, which
// speaks later, is served.
TEST(Coordinator, AnAskSentBeforeTheBiddersDeathAndReadAfterItGetsNothing) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.StartReclaiming("rtb-budget-late-from-dead", 1'000));
  // b speaks at every step throughout; a takes 0.40 and falls silent.
  const std::vector<std::string> b = {"b"};
  ASSERT_TRUE(sc.Heartbeat(b));
  const int64_t a_last_ms = sc.clock.UnixMs();
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 400'000, 0, 0, 0, 400'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 400'000; }));
  ASSERT_TRUE(sc.PassUntil([&] { return sc.co->counters().reclaims == 1; }, b, 2'000));
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 0);
  // a's ask sent 50 ms after its first (before it died), read now.
  Send(*sc.producer, LeaseMsgType::kRequest, "a", {{7, 0, 500'000, 0, 0, 0, 500'000}}, 2,
       a_last_ms + 50);
  ASSERT_TRUE(sc.producer->Flush(5000).ok());
  ASSERT_TRUE(WaitUntil([&] { return sc.co->counters().late_from_dead == 1; }));
  ASSERT_TRUE(sc.Pass(400, b));  // four checks
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 0);
  EXPECT_EQ(sc.co->counters().reclaims, 1);  // nothing granted, nothing to take back
  // The restarted a asks again: served.
  sc.Put(LeaseMsgType::kRequest, "a", 3, {7, 0, 500'000, 0, 0, 0, 500'000});
  EXPECT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 500'000; }))
      << "a holds " << sc.co->ledger().Held("a", kKey);
}

// A need the pool could not meet waits for money to come back. When its bidder dies, the reclaim
// of its own lease brought money back, and serving the dead bidder's need brought the bidder
// back to life with a grant (in `rtb demo --chaos kill-bidder`, a second reclaim of 255 leases
// 0.2 s after the first). A dead bidder's needs are dropped.
TEST(Coordinator, ANeedOfABidderThatDiedIsNotServedByItsOwnReclaim) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.StartReclaiming("rtb-budget-dead-need", 1'000));
  const std::vector<std::string> b = {"b"};  // b says it is alive at every step
  // a holds 1.00, b the other 4.00; a then needs 1.00 more of a dry pool, and dies.
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0, 1'000'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 1'000'000; }));
  sc.Put(LeaseMsgType::kRequest, "b", 1, {7, 0, 4'000'000, 0, 0, 0, 4'000'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("b", kKey) == 4'000'000; }));
  sc.Put(LeaseMsgType::kRequest, "a", 2, {7, 0, 1'000'000, 0, 0, 0, 1'000'000});
  ASSERT_TRUE(sc.AwaitRead(3));
  ASSERT_TRUE(sc.PassUntil([&] { return sc.co->counters().reclaims >= 1; }, b, 2'000));
  ASSERT_TRUE(sc.Pass(500, b));  // five more checks
  EXPECT_EQ(sc.co->counters().reclaims, 1);
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 0);
  EXPECT_FALSE(sc.co->ledger().IsAlive("a"));
  EXPECT_EQ(sc.co->ledger().Of(kKey).pool(), 1'000'000);
}

// One process per bidder name. Two processes under one name (a config copied to two machines)
// would each spend the one lease. x's first process (i1) holds 1.00; a second process under the
// name (i2, another state store: no lineage) is refused while i1 lives: nothing granted, no spend
// taken, and it is shown i1's holding. A restart of i1 (i3, whose lineage names i1) takes the
// name at once. Once i3 is dead and reclaimed, i2 takes the name as a new process: it starts
// from nothing, and what i3 spent stays counted as "x~i3".
TEST(Coordinator, OneLiveProcessPerBidderNameARestartTakesItBackANewcomerOnlyFromTheDead) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.StartReclaiming("rtb-budget-one-process", 1'000));
  const std::vector<std::string> other = {"other"};  // speaks at every step
  auto put = [&](LeaseMsgType type, const std::string& instance, std::vector<std::string> lineage,
                 int64_t seq, const LeaseItem& item) {
    LeaseMessage m;
    m.type = type;
    m.bidder = "x";
    m.instance = instance;
    m.lineage = std::move(lineage);
    m.day = kDay;
    m.ts_ms = sc.clock.UnixMs();
    m.seq = seq;
    m.items = {item};
    ASSERT_TRUE(
        sc.producer->Produce("rtb.lease.requests", kafka::kAnyPartition, "x", EncodeLeaseMessage(m))
            .ok());
    ASSERT_TRUE(sc.producer->Flush(5000).ok());
  };
  auto latest_instance = [&](int64_t after_ms) {
    std::optional<LeaseGrant> g = LatestOf(sc.brokers, "x");
    return g.has_value() && g->ts_ms >= after_ms ? g->instance : std::string("-");
  };
  put(LeaseMsgType::kRequest, "i1", {}, 1, {7, 0, 1'000'000, 0, 0, 0, 1'000'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("x", kKey) == 1'000'000; }));
  EXPECT_TRUE(WaitUntil([&] { return latest_instance(0) == "i1"; }));

  // i2 asks while i1 lives: refused, and shown i1's holding (published after i1's own).
  ASSERT_TRUE(sc.Pass(kStepMs, other));
  int64_t t = sc.clock.UnixMs();
  put(LeaseMsgType::kRequest, "i2", {}, 2, {7, 0, 2'000'000, 0, 0, 0, 2'000'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->counters().refused == 1; }));
  EXPECT_TRUE(WaitUntil([&] { return latest_instance(t) == "i1"; }));
  EXPECT_EQ(sc.co->ledger().Held("x", kKey), 1'000'000);
  EXPECT_EQ(sc.co->ledger().Of(kKey).held, 1'000'000);

  // i1's restart (i3) takes the name at once, and reports 0.30 spent.
  ASSERT_TRUE(sc.Pass(kStepMs, other));
  t = sc.clock.UnixMs();
  put(LeaseMsgType::kRequest, "i3", {"i1"}, 3, {7, 0, 500'000, 0, 0, 0, 500'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("x", kKey) == 1'500'000; }));
  EXPECT_TRUE(WaitUntil([&] { return latest_instance(t) == "i3"; }));
  put(LeaseMsgType::kReport, "i3", {"i1"}, 4, {7, 0, 0, 0, 300'000, 0});
  // i2 again, while i3 lives: refused.
  put(LeaseMsgType::kRequest, "i2", {}, 5, {7, 0, 2'000'000, 0, 0, 0, 2'000'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->counters().refused == 2; }));
  ASSERT_TRUE(sc.Pass(kStepMs, other));
  EXPECT_EQ(sc.co->counters().reclaims, 0);

  // i3 falls silent and is reclaimed down to its spend; then i2 takes the name, from nothing.
  ASSERT_TRUE(sc.PassUntil([&] { return sc.co->counters().reclaims == 1; }, other, 2'000));
  EXPECT_EQ(sc.co->ledger().Held("x", kKey), 300'000);
  ASSERT_TRUE(sc.Pass(kStepMs, other));
  t = sc.clock.UnixMs();
  put(LeaseMsgType::kRequest, "i2", {}, 6, {7, 0, 500'000, 0, 0, 0, 500'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("x", kKey) == 500'000; }))
      << "x holds " << sc.co->ledger().Held("x", kKey);
  EXPECT_TRUE(WaitUntil([&] { return latest_instance(t) == "i2"; }));
  EXPECT_EQ(sc.co->ledger().Held("x~i3", kKey), 300'000);
  EXPECT_EQ(sc.co->ledger().Of(kKey).held, 800'000);
  EXPECT_EQ(sc.co->ledger().Of(kKey).spent, 300'000);
  EXPECT_EQ(sc.co->counters().refused, 2);

  // i2 dies too; a restart of i3's store (i4, lineage i3) takes the name and gets i3's record
  // back (its spend is in that store); i2's goes aside.
  ASSERT_TRUE(sc.PassUntil([&] { return sc.co->counters().reclaims == 2; }, other, 2'000));
  put(LeaseMsgType::kReport, "i4", {"i3", "i1"}, 7, {7, 0, 0, 0, 300'000, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("x~i3", kKey) == 0; }));
  EXPECT_EQ(sc.co->ledger().Held("x", kKey), 300'000);
  EXPECT_EQ(sc.co->ledger().Held("x~i2", kKey), 0);  // it spent nothing
  EXPECT_EQ(sc.co->ledger().Of(kKey).held, 300'000);
  EXPECT_EQ(sc.co->ledger().Of(kKey).spent, 300'000);

  // A restarted coordinator takes each name's owner from the grants topic: while i4 lives, a
  // process of another store (i5) is refused.
  ASSERT_NO_FATAL_FAILURE(sc.Restart());
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("x", kKey) == 300'000; }));
  EXPECT_EQ(sc.co->ledger().Held("x~i3", kKey), 0);
  // The set-aside records are dead processes' from the start: no traffic share.
  EXPECT_FALSE(sc.co->ledger().IsAlive("x~i2"));
  EXPECT_FALSE(sc.co->ledger().IsAlive("x~i3"));
  EXPECT_TRUE(sc.co->ledger().IsAlive("x"));
  put(LeaseMsgType::kRequest, "i5", {}, 8, {7, 0, 500'000, 0, 0, 0, 500'000});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->counters().refused == 1; }));
  EXPECT_EQ(sc.co->ledger().Held("x", kKey), 300'000);
  EXPECT_EQ(sc.co->ledger().Of(kKey).held, 300'000);
}

// Share sizing over Kafka: two bidders report their traffic (a 3,000 requests a second, b 1,000,
// timed by their own clocks); their reports and one ask each leave each holding its share (3/4,
// 1/4: half each while b's rate is not known yet, then b's quarter, then a's ask tops a up). a then
// reports spend that leaves it below half its part of what is left: the pool is dry, so b's holding
// is published asking back its excess, and what b returns tops a up.
TEST(Coordinator, ShareSizingGivesEachBidderItsTrafficShareAndMovesTheExcessToWhoRunsShort) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.lease.sizing = LeaseSizing::kShare;
    o.lease.max_pool_share = 1.0;
    o.group_id = "rtb-budget-share";
  }));
  // Every message on one partition (one key), so the coordinator takes them in this order.
  auto put = [&](LeaseMessage m) {
    m.day = kDay;
    m.instance = m.bidder + "-1";
    ASSERT_TRUE(
        sc.producer
            ->Produce("rtb.lease.requests", kafka::kAnyPartition, "in-order", EncodeLeaseMessage(m))
            .ok());
    ASSERT_TRUE(sc.producer->Flush(5000).ok());
  };
  auto report = [&](const std::string& bidder, int64_t seq, int64_t ts, int64_t requests,
                    int64_t spent) {
    LeaseMessage m;
    m.type = LeaseMsgType::kReport;
    m.bidder = bidder;
    m.ts_ms = ts;
    m.seq = seq;
    m.requests = requests;
    m.items = {{7, 0, 0, 0, spent, 0}};
    put(m);
  };
  auto ask = [&](LeaseMsgType type, const std::string& bidder, int64_t seq, LeaseItem item) {
    LeaseMessage m;
    m.type = type;
    m.bidder = bidder;
    m.ts_ms = sc.clock.UnixMs();
    m.seq = seq;
    m.items = {item};
    put(m);
  };
  const int64_t t0 = sc.clock.UnixMs();
  report("a", 1, t0, 0, 0);
  report("b", 1, t0, 0, 0);
  report("a", 2, t0 + 1000, 3000, 0);
  report("b", 2, t0 + 1000, 1000, 0);
  // Both second reports read: a's alone, with b's count not yet rated, gives a share of 1.
  ASSERT_TRUE(WaitUntil([&] { return std::abs(sc.co->ledger().TrafficShare("a") - 0.75) < 1e-9; }))
      << sc.co->ledger().TrafficShare("a");
  EXPECT_DOUBLE_EQ(sc.co->ledger().TrafficShare("a"), 0.75);
  ask(LeaseMsgType::kRequest, "a", 3, {7, 0, 1, 0, 0, 0});
  ask(LeaseMsgType::kRequest, "b", 3, {7, 0, 1, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] {
    return sc.co->ledger().Held("a", kKey) == kArmBudget * 3 / 4 &&
           sc.co->ledger().Held("b", kKey) == kArmBudget / 4;
  })) << "a holds "
      << sc.co->ledger().Held("a", kKey) << ", b " << sc.co->ledger().Held("b", kKey);
  EXPECT_EQ(sc.co->ledger().Of(kKey).pool(), 0);
  // a spent 3.20 of its 3.75: 0.55 unused, below half its target of 3/4 x 1.80.
  report("a", 4, t0 + 1200, 3600, 3'200'000);
  std::optional<LeaseGrant> g;
  ASSERT_TRUE(WaitUntil([&] {
    g = LatestOf(sc.brokers, "b");
    return g.has_value() && g->wanted > 0;
  }));
  EXPECT_EQ(g->wanted, 800'000);  // b holds 1.25 against its 0.45: a misses 0.80 of its 1.35
  EXPECT_EQ(g->held, kArmBudget / 4);
  ask(LeaseMsgType::kReturn, "b", 5, {7, 0, 0, 800'000, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) > kArmBudget * 3 / 4; }));
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), kArmBudget * 3 / 4 + 800'000);
  EXPECT_EQ(sc.co->ledger().Held("b", kKey), kArmBudget / 4 - 800'000);
  EXPECT_LE(sc.co->ledger().Of(kKey).held, kArmBudget);
}

// The coordinators' topic: every record, in order (without the serving coordinators' beats
// unless `beats`).
std::vector<CoordinatorRecord> CoordinatorRecords(const std::string& brokers, bool beats = true) {
  std::vector<CoordinatorRecord> out;
  EXPECT_TRUE(kafka::ReadWholeTopic(Reader(brokers), "rtb.lease.grants.coordinators", 10000,
                                    [&](int32_t, int64_t, std::string_view v) {
                                      auto r = DecodeCoordinatorRecord(v);
                                      ASSERT_TRUE(r.ok()) << r.status().message();
                                      if (beats || r->state != CoordinatorState::kServing) {
                                        out.push_back(*r);
                                      }
                                    })
                  .ok());
  return out;
}

// A coordinator record written by the test at `clock`'s time (a coordinator process that is not
// there).
void PutRecord(kafka::Producer& p, const Clock& clock, CoordinatorState state,
               const std::string& instance, int64_t seq = 0, const std::string& by = "") {
  CoordinatorRecord r;
  r.state = state;
  r.seq = seq;
  r.by = by;
  r.instance = instance;
  r.host = "elsewhere";
  r.ts_ms = clock.UnixMs();
  ASSERT_TRUE(
      p.Produce("rtb.lease.grants.coordinators", 0, instance, EncodeCoordinatorRecord(r)).ok());
  ASSERT_TRUE(p.Flush(5000).ok());
}

// A rolling update: a second coordinator starts while the first serves. It serves only once the
// first has stopped granting and handed over, and reads the first one's last grants back: while
// bidders ask for more than the budget throughout, the two never grant more than the budget
// between them. Without the hand-over both served at once, each from its own ledger.
TEST(Coordinator, ASecondCoordinatorServesOnlyOnceTheFirstHandsOverAndNeverGrantsTwice) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.group_id = "rtb-budget-handover";
    o.lease.max_pool_share = 0.25;
  }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 1'000'000; }));
  // Bidders b and c ask for a little, again and again, through the hand-over, each ask once the
  // one before it is answered (a holding of b or c that has seen it), whoever answers: the
  // budget lasts 200 asks.
  std::atomic<int64_t> answered{0};
  auto answers = kafka::TopicTail::Start(
      Reader(sc.brokers), "rtb.lease.grants", 10'000, [&](int32_t, int64_t, std::string_view v) {
        const auto g = DecodeLeaseGrant(v);
        if (g.ok() && (g->bidder == "b" || g->bidder == "c") && g->seen > answered.load()) {
          answered = g->seen;
        }
      });
  ASSERT_TRUE(answers.ok()) << answers.status().message();
  std::atomic<bool> asked_enough{false};
  std::thread askers([&] {
    auto p = RequestsProducer(sc.brokers);
    for (int64_t n = 1; p != nullptr && !asked_enough.load(); ++n) {
      Send(*p, LeaseMsgType::kRequest, n % 2 ? "b" : "c", {{7, 0, 20'000, 0, 0, 0}}, n,
           sc.clock.UnixMs());
      (void)p->Flush(5000);
      // An ask the first read as it handed over is never answered: the next one after a second.
      (void)WaitUntil([&] { return answered.load() >= n || asked_enough.load(); }, 1s);
    }
  });
  Joiner stop_asking{asked_enough, askers};
  ASSERT_TRUE(WaitUntil([&] { return answered.load() >= 10; }));  // the first is granting
  const int64_t granted_before = sc.co->counters().grants_published;
  // The clock stands: the second waits for the first to hand over, however long that takes.
  auto second = Starting(sc.opt).Finish();
  ASSERT_TRUE(second.ok()) << second.status().message();
  // The first has handed over: its Run returned, naming the second.
  EXPECT_TRUE(WaitUntil([&] { return !sc.co->counters().handed_over_to.empty(); }, 5s));
  sc.stop = true;
  sc.run.join();
  const std::string second_instance = sc.co->counters().handed_over_to;
  EXPECT_GT(sc.co->counters().grants_published, granted_before);  // it granted meanwhile
  sc.co.reset();  // its consumer leaves the requests' group, as when its process exits
  EXPECT_EQ((*second)->counters().waited_for, 1);
  EXPECT_EQ((*second)->counters().taken_for_dead, 0);
  // Everything the first granted, to its last grant, is in the second's ledger.
  for (const auto& [bidder, held] : LatestHeld(sc.brokers)) {
    EXPECT_EQ((*second)->ledger().Held(bidder, kKey), held) << bidder;
  }
  EXPECT_EQ((*second)->ledger().Held("a", kKey), 1'000'000);
  std::atomic<bool> stop{false};
  std::thread run([&] { EXPECT_TRUE((*second)->Run(stop).ok()); });
  Joiner join_run{stop, run};
  ASSERT_TRUE(WaitUntil([&] { return (*second)->ledger().Of(kKey).pool() == 0; }, 30s));
  asked_enough = true;
  askers.join();
  // What the bidders were told, over both coordinators: the budget, not more.
  int64_t sum = 0;
  ASSERT_TRUE(WaitUntil([&] {
    sum = 0;
    for (const auto& [b, h] : LatestHeld(sc.brokers)) sum += h;
    return sum == kArmBudget;
  })) << sum;
  EXPECT_EQ((*second)->ledger().Of(kKey).held, kArmBudget);
  // On the grants topic the first's holdings all come before the second's first: the two never
  // granted at the same time.
  const std::vector<LeaseGrant> holdings = AllHoldings(sc.brokers);
  size_t firsts = 0, seconds = 0, first_after_second = 0;
  for (const LeaseGrant& g : holdings) {
    if (g.coordinator == second_instance) {
      ++seconds;
    } else {
      EXPECT_FALSE(g.coordinator.empty());
      ++firsts;
      if (seconds > 0) ++first_after_second;
    }
  }
  EXPECT_GT(firsts, 0u);
  EXPECT_GT(seconds, 0u);
  EXPECT_EQ(first_after_second, 0u);
  // The coordinators' topic: the first's claim, the second's, the first's hand-over; and the
  // first's beats while it served, numbered from 1.
  const auto all = CoordinatorRecords(sc.brokers);
  int64_t beats = 0;
  for (const CoordinatorRecord& r : all) {
    if (r.state == CoordinatorState::kServing && r.instance == all[0].instance) {
      EXPECT_EQ(r.seq, ++beats);
    }
  }
  EXPECT_GE(beats, 1);  // one at its loop's first turn
  const auto records = CoordinatorRecords(sc.brokers, /*beats=*/false);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].state, CoordinatorState::kClaim);
  EXPECT_EQ(records[1].state, CoordinatorState::kClaim);
  EXPECT_EQ(records[1].instance, second_instance);
  EXPECT_EQ(records[2].state, CoordinatorState::kYield);
  EXPECT_EQ(records[2].instance, records[0].instance);
}

// A claim that never hands over (its process was killed) is taken for dead after the timeout,
// and marked gone, so the next start does not wait for it again; a coordinator that stops hands
// over. A newer claim while a coordinator waits wins: the waiting one fails and hands over.
TEST(Coordinator, AClaimThatNeverHandsOverIsTakenForDeadAndANewerClaimWins) {
  auto mock = LeaseCluster();
  ASSERT_NE(mock, nullptr);
  const std::string brokers = mock->bootstrap();
  ManualClock clock;
  auto producer = RequestsProducer(brokers);
  ASSERT_NE(producer, nullptr);
  PutRecord(*producer, clock, CoordinatorState::kClaim, "killed-1");
  // Its last record is a beat: it served (a beat stands for its claim).
  PutRecord(*producer, clock, CoordinatorState::kServing, "killed-1", 3);
  CoordinatorOptions opt = MarketOptions(brokers, &clock);
  opt.handover_timeout_ms = 1'500;
  {
    // Its wait is on its clock, which stands until the claim is on the topic and then moves on
    // 50 ms every 10 ms of real time (the coordinator reads its claim back about when the test
    // does: a later read only ends its wait later).
    Starting start(opt);
    ASSERT_TRUE(WaitUntil([&] { return CoordinatorRecords(brokers).size() == 3; }));
    auto co = start.Finish(&clock, 50);
    ASSERT_TRUE(co.ok()) << co.status().message();
    EXPECT_EQ((*co)->counters().waited_for, 1);
    EXPECT_EQ((*co)->counters().taken_for_dead, 1);
  }  // destroyed without Run: hands over
  opt.handover_timeout_ms = 60'000;
  {
    const int64_t t0 = clock.UnixMs();
    auto co = Starting(opt).Finish(&clock, 100);
    ASSERT_TRUE(co.ok()) << co.status().message();
    EXPECT_EQ((*co)->counters().waited_for, 0);
    EXPECT_LT(clock.UnixMs() - t0, 60'000);  // it did not wait out a timeout
    std::atomic<bool> stop{true};
    EXPECT_TRUE((*co)->Run(stop).ok());
    EXPECT_TRUE((*co)->counters().handed_over_to.empty());
  }
  auto records = CoordinatorRecords(brokers);
  ASSERT_EQ(records.size(), 7u);
  EXPECT_EQ(records[3].state, CoordinatorState::kGone);
  EXPECT_EQ(records[3].instance, "killed-1");
  EXPECT_EQ(records[3].by, records[2].instance);
  // Taken for dead a whole timeout of the clock after its claim was read back, not before.
  EXPECT_GE(records[3].ts_ms - records[2].ts_ms, 1'500);
  EXPECT_EQ(records[4].state, CoordinatorState::kYield);
  EXPECT_EQ(records[6].state, CoordinatorState::kYield);
  EXPECT_EQ(records[6].instance, records[5].instance);

  // Another killed claim; a coordinator waits for it (the clock stands: for as long as it
  // takes), and a newer claim comes meanwhile.
  PutRecord(*producer, clock, CoordinatorState::kClaim, "killed-2");
  Starting start(opt);
  const bool claimed = WaitUntil([&] { return CoordinatorRecords(brokers).size() == 9; }, 20s);
  PutRecord(*producer, clock, CoordinatorState::kClaim, "newer");
  auto waiting = start.Finish();
  ASSERT_TRUE(claimed);
  ASSERT_FALSE(waiting.ok());
  EXPECT_EQ(waiting.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(waiting.status().message().find("coordinator newer (elsewhere) claimed the market"),
            std::string::npos)
      << waiting.status().message();
  records = CoordinatorRecords(brokers);
  ASSERT_EQ(records.size(), 11u);
  EXPECT_EQ(records[10].state, CoordinatorState::kYield);
  EXPECT_EQ(records[10].instance, records[8].instance);
}

// The self-fence: a serving coordinator cut off from the coordinators' topic (its partition's
// leader is down, the requests' and grants' are up) cannot read a newer claim, and after the
// hand-over timeout a newer coordinator would take it for dead and serve. It reads its own beats
// back no more, so half that timeout after its last one it grants nothing (it reads no requests
// either: they wait on their topic); once its beats come back it serves the waiting requests.
// Without the fence it grants on through the outage. Then, cut off again, a newer coordinator
// claims the market meanwhile: once the topic is back the first hands over, and the newer one's
// ledger holds everything granted.
TEST(Coordinator, ACoordinatorCutOffFromTheCoordinatorsTopicGrantsNothingUntilItReadsItsBeats) {
  const std::string control = "rtb.lease.grants.coordinators";
  ServingCoordinator sc;
  sc.prepare = [&](kafka::MockCluster& mock) {
    ASSERT_TRUE(mock.CreateTopic(control, 1, 3).ok());
    for (int32_t p = 0; p < 4; ++p) {
      ASSERT_TRUE(mock.SetPartitionLeader("rtb.lease.requests", p, 1).ok());
    }
    ASSERT_TRUE(mock.SetPartitionLeader("rtb.lease.grants", 0, 1).ok());
    ASSERT_TRUE(mock.SetPartitionLeader(control, 0, 3).ok());
    ASSERT_TRUE(mock.SetGroupCoordinator("rtb-budget-fence", 1).ok());
  };
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.group_id = "rtb-budget-fence";
    o.handover_timeout_ms = 4'000;  // fenced 2 s after the last beat it read back; one in 400 ms
  }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 500'000, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 500'000; }));
  EXPECT_EQ(sc.co->counters().fences, 0);  // serving, its beats read back
  // Cut off for 3.2 s of its clock, a beat's interval at a time.
  sc.mock->SetBrokerDown(3);
  ASSERT_TRUE(sc.PassInTurns(3'200, 400));
  EXPECT_GE(sc.co->counters().fences, 1);
  sc.Put(LeaseMsgType::kRequest, "b", 1, {7, 0, 500'000, 0, 0, 0});
  ASSERT_TRUE(sc.AwaitTurns(20));  // an unfenced coordinator would have granted it by now
  EXPECT_EQ(sc.co->ledger().Held("b", kKey), 0) << "granted while fenced";
  const int64_t published = sc.co->counters().grants_published;
  sc.mock->SetBrokerUp(3);
  EXPECT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("b", kKey) == 500'000; }, 20s));
  EXPECT_TRUE(WaitUntil([&] { return sc.co->counters().grants_published > published; }, 5s));
  EXPECT_TRUE(sc.co->counters().handed_over_to.empty());
  const int64_t fences = sc.co->counters().fences;

  sc.mock->SetBrokerDown(3);
  ASSERT_TRUE(sc.PassInTurns(3'200, 400));
  EXPECT_GT(sc.co->counters().fences, fences);
  sc.Put(LeaseMsgType::kRequest, "c", 1, {7, 0, 500'000, 0, 0, 0});
  // Its claim waits for the topic; with the clock standing it waits for the first to hand over.
  Starting second(sc.opt);
  ASSERT_TRUE(sc.AwaitTurns(20));
  EXPECT_EQ(sc.co->ledger().Held("c", kKey), 0) << "granted while fenced";
  sc.mock->SetBrokerUp(3);
  auto started = second.Finish();
  ASSERT_TRUE(started.ok()) << started.status().message();
  EXPECT_EQ((*started)->counters().waited_for, 1);
  EXPECT_EQ((*started)->counters().taken_for_dead, 0);
  EXPECT_TRUE(WaitUntil([&] { return !sc.co->counters().handed_over_to.empty(); }, 5s));
  // Whatever the first granted (c too, if its beats came back before the newer claim), the
  // newer one read it back.
  for (const auto& [bidder, held] : LatestHeld(sc.brokers)) {
    EXPECT_EQ((*started)->ledger().Held(bidder, kKey), held) << bidder;
  }
  EXPECT_EQ((*started)->ledger().Held("a", kKey), 500'000);
  EXPECT_EQ((*started)->ledger().Held("b", kKey), 500'000);
}

// A serving coordinator that reads itself marked gone (a newer one took it for dead, and
// compaction may have removed that one's claim since) stops granting and hands over, as on a
// newer claim. Without that it would serve on beside the newer one.
TEST(Coordinator, ACoordinatorThatReadsItselfMarkedGoneHandsOver) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) { o.group_id = "rtb-budget-gone"; }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 500'000, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 500'000; }));
  const auto records = CoordinatorRecords(sc.brokers, /*beats=*/false);
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(records[0].state, CoordinatorState::kClaim);
  EXPECT_TRUE(sc.co->counters().handed_over_to.empty());
  PutRecord(*sc.producer, sc.clock, CoordinatorState::kGone, records[0].instance, 0, "newer");
  EXPECT_TRUE(WaitUntil([&] { return sc.co->counters().handed_over_to == "newer"; }))
      << sc.co->counters().handed_over_to;
}

// The grants topic's epochs (docs/budget-leases.md, section 2). A holding queued by a
// coordinator fenced off since (cut off or stalled while its successor took over) lands after
// the successor's epoch marker: no later coordinator restores it. A holding of the current
// epoch that lands the same way is restored (the control: the fence tells the two apart).
TEST(Coordinator, AHoldingThatLandsAfterANewerCoordinatorsEpochMarkerIsIgnored) {
  ServingCoordinator sc;
  sc.grants_partitions = 2;  // every partition has its marker
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) { o.group_id = "rtb-budget-epoch"; }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 1'000'000; }));
  const int64_t first = sc.co->counters().epoch;
  EXPECT_GE(first, 1);
  auto a = LatestOf(sc.brokers, "a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->epoch, first);
  ASSERT_NO_FATAL_FAILURE(sc.Restart());
  const int64_t second = sc.co->counters().epoch;
  EXPECT_GT(second, first);
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 1'000'000);
  // The first coordinator's late holding, a's lease raised to 4.00 (on each partition), and b's
  // of the current epoch.
  LeaseGrant late = *a;
  late.held = 4'000'000;
  late.granted = 3'000'000;
  for (const int32_t p : {0, 1}) {
    ASSERT_TRUE(
        sc.producer
            ->Produce("rtb.lease.grants", p, LeaseGrantKey(kKey, "a"), EncodeLeaseGrant(late))
            .ok());
  }
  LeaseGrant current = *a;
  current.bidder = "b";
  current.held = 500'000;
  current.epoch = second;
  ASSERT_TRUE(
      sc.producer
          ->Produce("rtb.lease.grants", 0, LeaseGrantKey(kKey, "b"), EncodeLeaseGrant(current))
          .ok());
  ASSERT_TRUE(sc.producer->Flush(5000).ok());
  ASSERT_NO_FATAL_FAILURE(sc.Restart());
  EXPECT_GT(sc.co->counters().epoch, second);
  EXPECT_EQ(sc.co->counters().stale, 2);
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 1'000'000);
  EXPECT_EQ(sc.co->ledger().Held("b", kKey), 500'000);
  // What it grants next leaves room for both holdings: a third bidder gets the rest, no more.
  sc.Put(LeaseMsgType::kRequest, "c", 1, {7, 0, kArmBudget, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("c", kKey) > 0; }, 30s));
  EXPECT_LE(sc.co->ledger().Held("c", kKey), kArmBudget - 1'500'000);
  EXPECT_EQ(LatestHeld(sc.brokers)["a"], 1'000'000);  // a reader of the topic skips it too
}

// A restart keeps only the simulated days in the window as it stands once the whole grants topic
// is read: the last day and the two before it. Read in order, older days came first and were
// kept before a later one moved the window on (a real-cluster run restored 2,383 holdings of 62
// days where the coordinator before held 648 of the last 3).
TEST(Coordinator, ARestartRestoresOnlyTheSimulatedDaysInTheWindowOnceTheTopicIsRead) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.group_id = "rtb-budget-sim-window";
    o.sim_days = true;
  }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 1'000'000; }));
  auto a = LatestOf(sc.brokers, "a");
  ASSERT_TRUE(a.has_value());
  for (int64_t d = 0; d < 10; ++d) {  // simulated days 0..9, oldest first
    LeaseGrant g = *a;
    g.key.day = kSimDay + d;
    g.held = 10'000 * (d + 1);
    ASSERT_TRUE(
        sc.producer->Produce("rtb.lease.grants", 0, LeaseGrantKey(g.key, "a"), EncodeLeaseGrant(g))
            .ok());
  }
  ASSERT_TRUE(sc.producer->Flush(5000).ok());
  ASSERT_NO_FATAL_FAILURE(sc.Restart());
  for (int64_t d = 0; d < 10; ++d) {
    const LeaseKey key{kSimDay + d, kKey.advertiser, kKey.arm};
    EXPECT_EQ(sc.co->ledger().Held("a", key), d >= 7 ? 10'000 * (d + 1) : 0) << "day " << d;
  }
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 1'000'000);  // today's, a calendar day
  EXPECT_EQ(sc.co->counters().restored, 4);
}

// A grants topic fenced with a higher epoch than a starting coordinator's (a newer coordinator
// serves, or the coordinators' topic was recreated and its offsets started again): it refuses to
// serve with an error rather than publish holdings every reader would ignore.
// A coordinator started on a fresh market whose grants topic already holds one record (its
// claim is the first: epoch 1): how Create ends.
Status StartOnAGrantsTopicWith(const std::string& key, const std::string& record) {
  auto mock = LeaseCluster();
  if (mock == nullptr) return Status::Internal("no cluster");
  auto producer = RequestsProducer(mock->bootstrap());
  if (producer == nullptr) return Status::Internal("no producer");
  RTB_RETURN_IF_ERROR(producer->Produce("rtb.lease.grants", 0, key, record));
  RTB_RETURN_IF_ERROR(producer->Flush(5000));
  ManualClock clock;
  CoordinatorOptions opt = MarketOptions(mock->bootstrap(), &clock);
  opt.group_id = "rtb-budget-taken-epoch";
  auto c = Coordinator::Create(opt);
  return c.ok() ? Status::Ok() : c.status();
}

TEST(Coordinator, ACoordinatorRefusesAGrantsTopicWithAHigherEpochThanItsOwn) {
  const Status st = StartOnAGrantsTopicWith(
      EpochMarkerKey(0, 1000), EncodeEpochMarker({.epoch = 1000, .coordinator = "elsewhere"}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("carries epoch 1000"), std::string::npos) << st.message();
}

// The coordinators' topic recreated while the grants topic kept its records: the first claim
// on the new topic takes epoch 1 again, which an earlier coordinator's marker and holdings
// carry. Its own marker would not fence their late holdings off: it must not serve.
TEST(Coordinator, ACoordinatorRefusesAGrantsTopicWhereAnotherCoordinatorHasItsEpoch) {
  LeaseGrant h{"bidder-1", {20'000, 3, 1}, 900, 100, 50, 400, 7, 123'456};
  h.coordinator = "earlier";
  h.epoch = 1;
  for (const bool by_marker : {true, false}) {
    SCOPED_TRACE(by_marker ? "marker" : "holding");
    const Status st =
        by_marker
            ? StartOnAGrantsTopicWith(EpochMarkerKey(0, 1),
                                      EncodeEpochMarker({.epoch = 1, .coordinator = "earlier"}))
            : StartOnAGrantsTopicWith(LeaseGrantKey(h.key, h.bidder), EncodeLeaseGrant(h));
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
    EXPECT_NE(st.message().find("carries epoch 1 from coordinator earlier"), std::string::npos)
        << st.message();
  }
}

// A marker that cannot land leaves that partition unfenced: the coordinator does not serve (a
// holding its predecessor still had queued for that partition would count for every reader).
// Once the partition's broker is back, the next start fences both partitions and serves.
TEST(Coordinator, ACoordinatorWhoseEpochMarkerCannotLandDoesNotServe) {
  auto mock = LeaseCluster(2);
  ASSERT_NE(mock, nullptr);
  const std::string control = "rtb.lease.grants.coordinators";
  ASSERT_TRUE(mock->CreateTopic(control, 1, 3).ok());
  for (int32_t p = 0; p < 4; ++p) {
    ASSERT_TRUE(mock->SetPartitionLeader("rtb.lease.requests", p, 1).ok());
  }
  ASSERT_TRUE(mock->SetPartitionLeader(control, 0, 1).ok());
  ASSERT_TRUE(mock->SetPartitionLeader("rtb.lease.grants", 0, 1).ok());
  ASSERT_TRUE(mock->SetPartitionLeader("rtb.lease.grants", 1, 3).ok());
  ASSERT_TRUE(mock->SetGroupCoordinator("rtb-budget-unfenced", 1).ok());
  ManualClock clock;
  CoordinatorOptions opt = MarketOptions(mock->bootstrap(), &clock);
  opt.group_id = "rtb-budget-unfenced";
  opt.handover_timeout_ms = 3'000;
  mock->SetBrokerDown(3);
  auto first = Coordinator::Create(opt);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(first.status().message().find("cannot fence rtb.lease.grants"), std::string::npos)
      << first.status().message();
  mock->SetBrokerUp(3);
  // The clock moves on meanwhile: had the first not handed over, the second would take it for
  // dead after 3 s of it.
  auto second = Starting(opt).Finish(&clock, 100);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_GT((*second)->counters().epoch, 1);           // the first's claim came before
  EXPECT_EQ((*second)->counters().taken_for_dead, 0);  // the first handed over as it failed
}

// A coordinator whose grants topic could drop a day's holdings refuses before it claims the
// market: the one serving goes on serving (no hand-over), and one whose topic keeps them takes
// over as usual. (The embedded cluster describes no configuration: `describe_topic` stands in
// for the brokers' answer.)
TEST(Coordinator, ACoordinatorRefusesAGrantsTopicThatMayDropADaysHoldingsBeforeItClaims) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) { o.group_id = "rtb-budget-cfg"; }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 1'000'000; }));
  CoordinatorOptions bad = sc.opt;
  bad.describe_topic = [](const std::string& topic) -> Result<std::map<std::string, std::string>> {
    EXPECT_EQ(topic, "rtb.lease.grants");
    return std::map<std::string, std::string>{{"cleanup.policy", "compact"}};
  };
  auto refused = Coordinator::Create(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("rtb.lease.grants: min.compaction.lag.ms is 0"),
            std::string::npos)
      << refused.status().message();
  sc.Put(LeaseMsgType::kRequest, "b", 1, {7, 0, 1'000'000, 0, 0, 0});
  EXPECT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("b", kKey) == 1'000'000; }));
  EXPECT_TRUE(sc.co->counters().handed_over_to.empty());
  CoordinatorOptions good = sc.opt;
  good.describe_topic = [](const std::string&) -> Result<std::map<std::string, std::string>> {
    return std::map<std::string, std::string>{{"cleanup.policy", "compact"},
                                              {"min.compaction.lag.ms", "172800000"}};
  };
  auto next = Starting(good).Finish();  // the clock stands: it waits for the hand-over
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_TRUE(WaitUntil([&] { return !sc.co->counters().handed_over_to.empty(); }, 5s));
  EXPECT_EQ((*next)->counters().taken_for_dead, 0);
  EXPECT_EQ((*next)->ledger().Held("b", kKey), 1'000'000);  // read back from the topic
}

// What a grants topic must keep: compaction and deletion both wait two days (the brokers'
// defaults, for a setting the description leaves out: delete, 7 days).
TEST(Coordinator, TheGrantsTopicMustKeepADaysHoldingsUntilTheDayIsOver) {
  using Config = std::map<std::string, std::string>;
  EXPECT_TRUE(CheckGrantsTopicConfig({}).ok());                        // delete, 7 days
  EXPECT_TRUE(CheckGrantsTopicConfig({{"cleanup.policy", ""}}).ok());  // nothing ever removed
  EXPECT_TRUE(CheckGrantsTopicConfig(
                  {{"cleanup.policy", "compact"}, {"min.compaction.lag.ms", "172800000"}})
                  .ok());
  EXPECT_TRUE(CheckGrantsTopicConfig({{"cleanup.policy", "compact,delete"},
                                      {"min.compaction.lag.ms", "259200000"},
                                      {"retention.ms", "-1"},
                                      {"retention.bytes", "-1"}})
                  .ok());
  // A size limit matters only where deletion runs.
  EXPECT_TRUE(CheckGrantsTopicConfig({{"cleanup.policy", "compact"},
                                      {"min.compaction.lag.ms", "172800000"},
                                      {"retention.bytes", "1073741824"}})
                  .ok());
  struct Bad {
    Config config;
    std::string says;
  };
  for (const Bad& b : std::vector<Bad>{
           {{{"cleanup.policy", "compact"}}, "min.compaction.lag.ms is 0"},
           {{{"cleanup.policy", "compact"}, {"min.compaction.lag.ms", "172799999"}},
            "min.compaction.lag.ms is 172799999"},
           {{{"retention.ms", "86400000"}}, "retention.ms is 86400000"},
           {{{"cleanup.policy", "compact,delete"},
             {"min.compaction.lag.ms", "172800000"},
             {"retention.ms", "3600000"}},
            "retention.ms is 3600000"},
           {{{"cleanup.policy", "compact"}, {"min.compaction.lag.ms", "2d"}},
            "min.compaction.lag.ms is \"2d\", not a whole number"},
           {{{"cleanup.policy", "none"}}, "neither compact nor delete"},
           {{{"retention.bytes", "1073741824"}}, "retention.bytes is 1073741824"},
       }) {
    const Status st = CheckGrantsTopicConfig(b.config);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << b.says;
    EXPECT_NE(st.message().find(b.says), std::string::npos) << st.message();
  }
  // A simulated market whose days last 5 s: two of them, 10 s, are enough.
  const Config sim{{"cleanup.policy", "compact"}, {"min.compaction.lag.ms", "10000"}};
  EXPECT_TRUE(CheckGrantsTopicConfig(sim, 5'000).ok());
  const Status st = CheckGrantsTopicConfig(sim, 6'000);
  EXPECT_NE(st.message().find("min.compaction.lag.ms is 10000"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("12000 (two of its days)"), std::string::npos) << st.message();
  EXPECT_FALSE(CheckGrantsTopicConfig(sim).ok());  // a calendar day
}

TEST(LeaseMessages, EpochMarkersAndTheGrantsReadersFence) {
  auto m = DecodeEpochMarker(EncodeEpochMarker({.epoch = 9, .coordinator = "c1", .ts_ms = 3}));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->epoch, 9);
  EXPECT_EQ(m->coordinator, "c1");
  EXPECT_EQ(m->ts_ms, 3);
  EXPECT_EQ(EpochMarkerKey(2, 9), "~epoch/2/9");
  for (const char* bad :
       {R"({"format":"rtb.lease_epoch","schema_version":1})",
        R"({"format":"rtb.lease_epoch","schema_version":1,"epoch":0})",
        R"({"format":"rtb.lease_epoch","schema_version":1,"epoch":"9"})",
        R"({"format":"rtb.lease_epoch","schema_version":1,"epoch":9,"coordinator":4})",
        R"({"format":"rtb.lease_epoch","schema_version":2,"epoch":9})"}) {
    EXPECT_FALSE(DecodeEpochMarker(bad).ok()) << bad;
  }
  LeaseGrant g{"bidder-1", {20'000, 3, 1}, 900, 100, 50, 400, 7, 123'456};
  auto gb = DecodeLeaseGrant(EncodeLeaseGrant(g));
  ASSERT_TRUE(gb.ok());
  EXPECT_EQ(gb->epoch, 0);  // not said
  EXPECT_EQ(EncodeLeaseGrant(g).find("epoch"), std::string::npos);
  g.epoch = 6;
  gb = DecodeLeaseGrant(EncodeLeaseGrant(g));
  ASSERT_TRUE(gb.ok());
  EXPECT_EQ(gb->epoch, 6);
  std::string text = EncodeLeaseGrant(g);
  const std::string six = "\"epoch\":6";
  ASSERT_NE(text.find(six), std::string::npos);
  for (const char* wrong : {"\"epoch\":0", "\"epoch\":\"6\"", "\"epoch\":-1"}) {
    std::string t = text;
    t.replace(t.find(six), six.size(), wrong);
    EXPECT_FALSE(DecodeLeaseGrant(t).ok()) << t;
  }
  // The reader, record by record in partition order.
  auto holding = [&](int64_t epoch) {
    LeaseGrant h = g;
    h.epoch = epoch;
    return EncodeLeaseGrant(h);
  };
  using Kind = GrantsReader::Kind;
  GrantsReader r;
  EXPECT_EQ(r.Take(0, holding(0)).kind, Kind::kHolding);  // before any epoch (older coordinators)
  EXPECT_EQ(r.Take(0, EncodeEpochMarker({.epoch = 5})).kind, Kind::kMarker);
  EXPECT_EQ(r.Take(0, holding(0)).kind, Kind::kStale);
  EXPECT_EQ(r.Take(0, holding(4)).kind, Kind::kStale);
  EXPECT_EQ(r.Take(0, holding(5)).kind, Kind::kHolding);
  EXPECT_EQ(r.Take(0, holding(7)).kind, Kind::kHolding);  // its marker is on another partition
  EXPECT_EQ(r.Take(0, holding(5)).kind, Kind::kStale);    // ... and raises this one's fence
  EXPECT_EQ(r.Take(0, EncodeEpochMarker({.epoch = 6})).kind, Kind::kMarker);  // lower: no change
  EXPECT_EQ(r.Take(0, holding(6)).kind, Kind::kStale);
  EXPECT_EQ(r.Take(1, holding(4)).kind, Kind::kHolding);  // each partition has its own fence
  const GrantsReader::Record bad = r.Take(1, "{\"format\":\"rtb.lease_epoch\"}");
  EXPECT_EQ(bad.kind, Kind::kMalformed);
  EXPECT_FALSE(bad.error.empty());
  EXPECT_EQ(r.Take(1, "not json").kind, Kind::kMalformed);
  EXPECT_EQ(r.Take(1, holding(4)).kind, Kind::kHolding);  // a malformed record moves nothing
  EXPECT_EQ(r.MaxEpoch(), 7);
  EXPECT_EQ(r.Epoch(0), 7);
  EXPECT_EQ(r.Epoch(1), 4);
  EXPECT_EQ(r.Epoch(2), 0);
  LeaseGrant named = g;  // a holding that names the marker's format is still a holding
  named.bidder = "rtb.lease_epoch";
  named.epoch = 4;
  EXPECT_EQ(r.Take(1, EncodeLeaseGrant(named)).kind, Kind::kHolding);
  EXPECT_EQ(r.Take(1, R"({"format":7})").kind, Kind::kMalformed);
  // A starting coordinator's check of its read-back: its epoch (or a higher one) everywhere.
  EXPECT_TRUE(r.Fenced(2, 4).ok());
  EXPECT_TRUE(r.Fenced(1, 7).ok());
  const Status unfenced = r.Fenced(2, 7);
  EXPECT_EQ(unfenced.code(), Status::Code::kUnavailable);
  EXPECT_NE(unfenced.message().find("partition 1 shows epoch 4, not 7"), std::string::npos)
      << unfenced.message();
  EXPECT_FALSE(r.Fenced(3, 4).ok());  // partition 2: nothing read
  // With offsets: a partition read again from an earlier offset starts its fence again, so the
  // holding before the marker is a holding the second time too.
  GrantsReader o;
  EXPECT_EQ(o.Take(0, holding(1), 0).kind, Kind::kHolding);
  EXPECT_EQ(o.Take(0, EncodeEpochMarker({.epoch = 5}), 1).kind, Kind::kMarker);
  EXPECT_EQ(o.Take(0, holding(1), 2).kind, Kind::kStale);
  EXPECT_EQ(o.Take(0, holding(1), 0).kind, Kind::kHolding);  // reset to the start
  EXPECT_EQ(o.Take(0, EncodeEpochMarker({.epoch = 5}), 1).kind, Kind::kMarker);
  EXPECT_EQ(o.Take(0, holding(1), 2).kind, Kind::kStale);
  // Who wrote each epoch: markers and holdings name their coordinator.
  GrantsReader w;
  w.Take(0, EncodeEpochMarker({.epoch = 3, .coordinator = "c3"}));
  EXPECT_EQ(w.OtherAt(3, "c3"), "");
  EXPECT_EQ(w.OtherAt(3, "c9"), "c3");
  EXPECT_EQ(w.OtherAt(4, "c9"), "");
  LeaseGrant by = g;
  by.epoch = 4;
  by.coordinator = "c4";
  w.Take(1, EncodeLeaseGrant(by));
  EXPECT_EQ(w.OtherAt(4, "c9"), "c4");
  EXPECT_EQ(w.OtherAt(4, "c4"), "");
  by.coordinator.clear();  // a holding that names no coordinator says nothing of its epoch's
  by.epoch = 8;
  w.Take(1, EncodeLeaseGrant(by));
  EXPECT_EQ(w.OtherAt(8, "c9"), "");
}

TEST(LeaseMessages, CoordinatorRecordsRoundTripAndBadOnesAreErrors) {
  CoordinatorRecord r;
  r.state = CoordinatorState::kGone;
  r.instance = "0123abcd";
  r.host = "host-1";
  r.ts_ms = 77;
  r.by = "fedc";
  auto back = DecodeCoordinatorRecord(EncodeCoordinatorRecord(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->state, CoordinatorState::kGone);
  EXPECT_EQ(back->instance, "0123abcd");
  EXPECT_EQ(back->host, "host-1");
  EXPECT_EQ(back->ts_ms, 77);
  EXPECT_EQ(back->by, "fedc");
  r.state = CoordinatorState::kServing;
  r.by.clear();
  r.seq = 12;
  back = DecodeCoordinatorRecord(EncodeCoordinatorRecord(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->state, CoordinatorState::kServing);
  EXPECT_EQ(back->seq, 12);
  for (const char* bad :
       {"", "{", "[]", R"({"format":"rtb.lease_grant","schema_version":1})",
        R"({"format":"rtb.lease_coordinator","schema_version":2,"state":"claim","instance":"a"})",
        R"({"format":"rtb.lease_coordinator","schema_version":1,"state":"claim"})",
        R"({"format":"rtb.lease_coordinator","schema_version":1,"state":"claim","instance":""})",
        R"({"format":"rtb.lease_coordinator","schema_version":1,"state":"stop","instance":"a"})",
        R"({"format":"rtb.lease_coordinator","schema_version":1,"state":1,"instance":"a"})",
        R"({"format":"rtb.lease_coordinator","schema_version":1,"state":"serving","instance":"a"})",
        R"({"format":"rtb.lease_coordinator","schema_version":1,"state":"serving","instance":"a",)"
        R"("seq":0})",
        R"({"format":"rtb.lease_coordinator","schema_version":1,"state":"serving","instance":"a",)"
        R"("seq":"1"})"}) {
    EXPECT_FALSE(DecodeCoordinatorRecord(bad).ok()) << bad;
  }
  // A field of the wrong type is an error value, not an exception, in every lease message.
  for (
      const char* bad :
      {R"({"format":1,"schema_version":1,"state":"claim","instance":"a"})",
       R"({"format":"rtb.lease_coordinator","schema_version":"1","state":"claim","instance":"a"})"}) {
    EXPECT_FALSE(DecodeCoordinatorRecord(bad).ok()) << bad;
  }
  EXPECT_FALSE(DecodeLeaseGrant(R"({"format":7,"schema_version":1})").ok());
  EXPECT_FALSE(DecodeLeaseGrant(R"({"format":"rtb.lease_grant","schema_version":1,"bidder":"b",)"
                                R"("day":1,"adv":2,"arm":"learned","held":3,"granted":"x"})")
                   .ok());
  EXPECT_FALSE(DecodeLeaseMessage(R"({"format":[],"schema_version":1})").ok());
  EXPECT_FALSE(DecodeLeaseMessage(R"({"format":"rtb.lease","schema_version":1,"type":5})").ok());
  // A wrong type of an optional field is not an exception.
  EXPECT_TRUE(DecodeCoordinatorRecord(
                  R"({"format":"rtb.lease_coordinator","schema_version":1,"state":"yield",)"
                  R"("instance":"a","ts_ms":"x","host":3})")
                  .ok());
}

TEST(LeaseMessages, RoundTripAndClearErrors) {
  LeaseMessage m;
  m.type = LeaseMsgType::kReport;
  m.bidder = "bidder-1";
  m.day = 20'000;
  m.ts_ms = 5;
  m.items = {{3, 1, 0, 0, 70, 30}};
  auto back = DecodeLeaseMessage(EncodeLeaseMessage(m));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->type, LeaseMsgType::kReport);
  EXPECT_EQ(back->items[0].arm, 1);
  EXPECT_EQ(back->items[0].spent, 70);
  EXPECT_EQ(back->items[0].reserved, 30);
  EXPECT_EQ(back->requests, -1);  // not said
  m.requests = 123'456;
  back = DecodeLeaseMessage(EncodeLeaseMessage(m));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->requests, 123'456);
  LeaseGrant g{"bidder-1", {20'000, 3, 1}, 900, 100, 50, 400, 7, 123'456};
  auto gb = DecodeLeaseGrant(EncodeLeaseGrant(g));
  ASSERT_TRUE(gb.ok());
  EXPECT_EQ(gb->key, g.key);
  EXPECT_EQ(gb->held, 900);
  EXPECT_EQ(gb->left, 400);
  EXPECT_EQ(gb->seen, 123'456);
  EXPECT_EQ(gb->wanted, 0);
  g.wanted = 250;
  gb = DecodeLeaseGrant(EncodeLeaseGrant(g));
  ASSERT_TRUE(gb.ok());
  EXPECT_EQ(gb->wanted, 250);
  // A holding's target (-1: not said; 0 is a target: hold nothing) and a report's mean bid
  // charge.
  EXPECT_EQ(gb->target, -1);
  g.target = 0;
  gb = DecodeLeaseGrant(EncodeLeaseGrant(g));
  ASSERT_TRUE(gb.ok());
  EXPECT_EQ(gb->target, 0);
  g.target = -1;
  EXPECT_EQ(back->items[0].unit, 0);
  m.items[0].unit = 12'000;
  back = DecodeLeaseMessage(EncodeLeaseMessage(m));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->items[0].unit, 12'000);
  EXPECT_FALSE(DecodeLeaseGrant(R"({"format":"rtb.lease_grant","schema_version":1,"bidder":"a",)"
                                R"("day":1,"adv":3,"arm":"learned","held":5,"target":-2})")
                   .ok());
  // A request's need and every message's seq; a return carries what it leaves spent/reserved.
  m.type = LeaseMsgType::kRequest;
  m.seq = 99;
  m.items = {{3, 0, 500, 0, 0, 0, 200}};
  back = DecodeLeaseMessage(EncodeLeaseMessage(m));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->seq, 99);
  EXPECT_EQ(back->items[0].want, 500);
  EXPECT_EQ(back->items[0].need, 200);
  m.type = LeaseMsgType::kReturn;
  m.items = {{3, 0, 0, 250, 70, 30}};
  back = DecodeLeaseMessage(EncodeLeaseMessage(m));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->items[0].amount, 250);
  EXPECT_EQ(back->items[0].spent, 70);
  EXPECT_EQ(back->items[0].reserved, 30);
  EXPECT_EQ(LeaseGrantKey(g.key, g.bidder), "20000/3/manual/bidder-1");
  // The process and its state store's earlier ones; the holding's owner.
  EXPECT_TRUE(back->instance.empty());
  EXPECT_TRUE(back->lineage.empty());
  m.instance = "p3";
  m.lineage = {"p2", "p1"};
  back = DecodeLeaseMessage(EncodeLeaseMessage(m));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->instance, "p3");
  EXPECT_EQ(back->lineage, (std::vector<std::string>{"p2", "p1"}));
  g.instance = "p3";
  gb = DecodeLeaseGrant(EncodeLeaseGrant(g));
  ASSERT_TRUE(gb.ok());
  EXPECT_EQ(gb->instance, "p3");
  EXPECT_TRUE(gb->coordinator.empty());
  g.coordinator = "c9";
  gb = DecodeLeaseGrant(EncodeLeaseGrant(g));
  ASSERT_TRUE(gb.ok());
  EXPECT_EQ(gb->coordinator, "c9");
  EXPECT_FALSE(DecodeLeaseGrant(R"({"format":"rtb.lease_grant","schema_version":1,"bidder":"a",)"
                                R"("day":1,"adv":3,"arm":"learned","held":5,"coordinator":4})")
                   .ok());
  for (
      const char* bad :
      {"", "[]",
       R"({"format":"rtb.lease","schema_version":2,"type":"request","bidder":"a","day":1})",
       R"({"format":"rtb.lease","schema_version":1,"type":"grab","bidder":"a","day":1})",
       R"({"format":"rtb.lease","schema_version":1,"type":"request","bidder":"","day":1})",
       R"({"format":"rtb.lease","schema_version":1,"type":"request","bidder":"a","day":1,"items":[{"adv":1,"arm":"x"}]})",
       R"({"format":"rtb.lease","schema_version":1,"type":"request","bidder":"a","day":1,"items":[{"adv":1,"arm":"learned","want":-1}]})",
       R"({"format":"rtb.lease","schema_version":1,"type":"request","bidder":"a","day":1,"items":[{"adv":1,"arm":"learned","need":-5}]})",
       R"({"format":"rtb.lease","schema_version":1,"type":"report","bidder":"a","day":1,"items":[{"adv":1,"arm":"learned","unit":-5}]})",
       R"({"format":"rtb.lease","schema_version":1,"type":"request","bidder":"a","day":1,"seq":-1})",
       R"({"format":"rtb.lease","schema_version":1,"type":"report","bidder":"a","day":1,"requests":-3})",
       R"({"format":"rtb.lease","schema_version":1,"type":"report","bidder":"a","day":1,"requests":"many"})",
       R"({"format":"rtb.lease","schema_version":1,"type":"report","bidder":"a","day":1,"instance":""})",
       R"({"format":"rtb.lease","schema_version":1,"type":"report","bidder":"a","day":1,"instance":7})",
       R"({"format":"rtb.lease","schema_version":1,"type":"report","bidder":"a","day":1,"lineage":"p1"})",
       R"({"format":"rtb.lease","schema_version":1,"type":"report","bidder":"a","day":1,"lineage":["p1",""]})",
       R"({"format":"rtb.lease","schema_version":1,"type":"report","bidder":"a","day":1,"lineage":["1","2","3","4","5","6","7","8","9"]})"}) {
    auto r = DecodeLeaseMessage(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("lease message"), std::string::npos);
    }
  }
  auto neg = DecodeLeaseGrant(
      R"({"format":"rtb.lease_grant","schema_version":1,"bidder":"a","day":1,"adv":3,"arm":"learned","held":5,"wanted":-1})");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("wanted"), std::string::npos);
}

// A reclaim check reads to where the topic ended at the previous check, if that was recent:
// under steady traffic some partition nearly always has a message in flight.
TEST(ReadToTheEnd, ASoonNextCheckReadsToThePreviousChecksWatermarks) {
  ReadToTheEnd r;
  using W = std::map<int32_t, int64_t>;
  EXPECT_EQ(r.Target(W{{0, 10}, {1, 5}}, 1'000, 200), (W{{0, 10}, {1, 5}}));  // none before
  EXPECT_EQ(r.Target(W{{0, 12}, {1, 5}}, 1'200, 200), (W{{0, 10}, {1, 5}}));
  EXPECT_EQ(r.Target(W{{0, 15}, {1, 6}}, 1'600, 200), (W{{0, 12}, {1, 5}}));  // 2 intervals
  EXPECT_EQ(r.Target(W{{0, 20}, {1, 9}}, 5'000, 200), (W{{0, 20}, {1, 9}}));  // long ago: now's
  // Read to offset 20 of partition 0 while a message is in flight there (21): reached against
  // the previous check's 20, not against now's 21.
  const W read{{0, 20}, {1, 9}};
  EXPECT_TRUE(r.Reached(read, r.Target(W{{0, 21}, {1, 9}}, 5'200, 200)));
  EXPECT_FALSE(r.Reached(read, r.Target(W{{0, 22}, {1, 9}}, 5'400, 200)));  // 21 is unread
}

TEST(ReadToTheEnd, APartitionNeverReadCountsAsReadUntilItHoldsSomethingNewer) {
  ReadToTheEnd r;
  using W = std::map<int32_t, int64_t>;
  const W read{{0, 7}};
  EXPECT_TRUE(r.Reached(read, W{{0, 7}, {1, 4}}));  // partition 1: 4 when first asked
  EXPECT_TRUE(r.Reached(read, W{{0, 7}, {1, 4}}));
  EXPECT_FALSE(r.Reached(read, W{{0, 7}, {1, 5}}));  // a message newer than that
  EXPECT_FALSE(r.Reached(read, W{{0, 8}, {1, 4}}));  // partition 0 not read to 8
  EXPECT_TRUE(r.Reached(W{{0, 8}, {1, 5}}, W{{0, 8}, {1, 5}}));
}

// ---- Trust: what a writer of the lease topics can and cannot do (docs/reliability.md) ----

// A market key ring for the tests (a secret of 32 characters at least).
std::shared_ptr<const MarketKeys> Ring(const std::string& spec = "k1=" + std::string(32, 's')) {
  auto keys = MarketKeys::Parse(spec);
  EXPECT_TRUE(keys.ok()) << keys.status().message();
  return std::make_shared<const MarketKeys>(std::move(*keys));
}

// Bytes written to the requests topic as they are (a forger's message).
void PutRaw(ServingCoordinator& sc, const std::string& payload) {
  ASSERT_TRUE(sc.producer->Produce("rtb.lease.requests", kafka::kAnyPartition, "x", payload).ok());
  ASSERT_TRUE(sc.producer->Flush(5000).ok());
}

LeaseMessage Forged(LeaseMsgType type, const std::string& bidder, const std::string& instance,
                    int64_t seq, const LeaseItem& item, int64_t ts_ms) {
  LeaseMessage m;
  m.type = type;
  m.bidder = bidder;
  m.instance = instance;
  m.day = kDay;
  m.ts_ms = ts_ms;
  m.seq = seq;
  m.items = {item};
  return m;
}

int64_t Refused(const Coordinator& co, const std::string& reason) {
  const auto r = co.counters().refusals;
  const auto it = r.find(reason);
  return it == r.end() ? 0 : it->second;
}

// A made-up bidder's request for INT64_MAX (no instance: it was served, and held the pool for a
// heartbeat timeout), a report of INT64_MAX spent (it pinned the budget for the day), a `return`
// in another bidder's name (it stripped that bidder's lease) and a genuine request sent again
// (granted twice): all refused and counted, and the market keeps granting.
TEST(Coordinator, AMadeUpBiddersRequestAReportOfInt64MaxAReturnInAnothersNameAndAReplayAreRefused) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) { o.group_id = "rtb-budget-vet"; }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(sc.AwaitRead(1));
  ASSERT_EQ(sc.co->ledger().Held("a", kKey), 1'000'000);
  const int64_t now = sc.clock.UnixMs();
  LeaseMessage made_up =
      Forged(LeaseMsgType::kRequest, "mallory", "", 1, {7, 0, INT64_MAX, 0, 0, 0, INT64_MAX}, now);
  PutRaw(sc, EncodeLeaseMessage(made_up));
  made_up.instance = "m-1";  // with an instance, the amount is refused
  PutRaw(sc, EncodeLeaseMessage(made_up));
  PutRaw(sc, EncodeLeaseMessage(
                 Forged(LeaseMsgType::kReport, "a", "a-1", 2, {7, 0, 0, 0, INT64_MAX, 0}, now)));
  PutRaw(sc, EncodeLeaseMessage(
                 Forged(LeaseMsgType::kReturn, "a", "", 3, {7, 0, 0, 1'000'000, 0, 0}, now)));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0});  // the first, again
  ASSERT_TRUE(sc.AwaitRead(6));
  EXPECT_EQ(sc.co->ledger().Held("mallory", kKey), 0);
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 1'000'000);
  EXPECT_EQ(sc.co->ledger().Of(kKey).spent, 0);
  EXPECT_EQ(sc.co->ledger().Of(kKey).held, 1'000'000);
  // The market keeps granting.
  sc.Put(LeaseMsgType::kRequest, "b", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("b", kKey) == 1'000'000; }));
  EXPECT_EQ(Refused(*sc.co, "no_instance"), 2);
  EXPECT_EQ(Refused(*sc.co, "amount"), 2);
  EXPECT_EQ(Refused(*sc.co, "replay"), 1);
}

// A genuine report whose bid unit and cap are above a small arm budget (one bid can cost more
// than the whole budget of a tiny world) is applied, its spend taken: refused, the spend it
// carried was lost, and a reclaim after that bidder died handed out money it had spent.
TEST(Coordinator, AReportWithAUnitAboveTheBudgetIsTakenWithItsSpend) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) { o.group_id = "rtb-budget-unit"; }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(sc.AwaitRead(1));
  ASSERT_EQ(sc.co->ledger().Held("a", kKey), 1'000'000);
  LeaseItem report{7, 0, 0, 0, 600'000, 0};
  report.cap = 2 * kArmBudget;
  report.unit = kArmBudget + 1;
  sc.Put(LeaseMsgType::kReport, "a", 2, report);
  ASSERT_TRUE(sc.AwaitRead(2));
  EXPECT_EQ(sc.co->ledger().Of(kKey).spent, 600'000);
  EXPECT_EQ(Refused(*sc.co, "amount"), 0);
}

// A traffic count of 10^12 (it recalled every real bidder's lease): not taken, the shares stand.
TEST(Coordinator, ATrafficCountFarAboveAPlausibleRateIsNotTaken) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) {
    o.lease.sizing = LeaseSizing::kShare;
    o.group_id = "rtb-budget-count";
  }));
  auto report = [&](const std::string& bidder, int64_t seq, int64_t ts, int64_t requests) {
    LeaseMessage m = Forged(LeaseMsgType::kReport, bidder, bidder + "-1", seq, {7, 0}, ts);
    m.requests = requests;
    PutRaw(sc, EncodeLeaseMessage(m));
  };
  const int64_t t0 = sc.clock.UnixMs();
  report("a", 1, t0, 0);
  report("b", 1, t0, 0);
  report("a", 2, t0 + 1000, 3000);
  report("b", 2, t0 + 1000, 1000);
  ASSERT_TRUE(WaitUntil([&] { return std::abs(sc.co->ledger().TrafficShare("a") - 0.75) < 1e-9; }));
  report("b", 3, t0 + 2000, 1'000'000'000'000);
  ASSERT_TRUE(sc.AwaitRead(5));
  EXPECT_DOUBLE_EQ(sc.co->ledger().TrafficShare("a"), 0.75);
  EXPECT_EQ(Refused(*sc.co, "requests"), 1);
}

// One epoch marker of 2^62 froze the market: bidders ignored every later holding, and a restarted
// coordinator refused to serve. Refused by every reader now: the market keeps granting.
TEST(Coordinator, AnEpochMarkerOfTwoToThe62IsRefusedAndARestartedCoordinatorServes) {
  ServingCoordinator sc;
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) { o.group_id = "rtb-budget-2p62"; }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(sc.AwaitRead(1));
  const int64_t huge = int64_t{1} << 62;
  ASSERT_TRUE(sc.producer
                  ->Produce("rtb.lease.grants", 0, EpochMarkerKey(0, huge),
                            EncodeEpochMarker({.epoch = huge, .coordinator = "forged"}))
                  .ok());
  ASSERT_TRUE(sc.producer->Flush(5000).ok());
  sc.Put(LeaseMsgType::kRequest, "b", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(sc.AwaitRead(2));
  // A bidder reading the topic takes b's holding, published after the marker.
  ASSERT_TRUE(WaitUntil([&] { return LatestHeld(sc.brokers)["b"] == 1'000'000; }));
  ASSERT_NO_FATAL_FAILURE(sc.Restart());
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 1'000'000);
  EXPECT_EQ(sc.co->ledger().Held("b", kKey), 1'000'000);
  EXPECT_EQ(Refused(*sc.co, "epoch_jump"), 1);
  sc.Put(LeaseMsgType::kRequest, "c", 1, {7, 0, 1'000'000, 0, 0, 0});
  EXPECT_TRUE(WaitUntil([&] { return LatestHeld(sc.brokers)["c"] == 1'000'000; }));
}

// A marker within the plausible jump but written by no coordinator (above every claim's epoch):
// a start refuses the market, and one told to take it over fences it above that marker and
// serves; bidders then take its holdings.
TEST(Coordinator, ACoordinatorToldToTakeOverFencesAboveAMarkerNoCoordinatorWrote) {
  auto mock = LeaseCluster();
  ASSERT_NE(mock, nullptr);
  auto producer = RequestsProducer(mock->bootstrap());
  ASSERT_TRUE(producer
                  ->Produce("rtb.lease.grants", 0, EpochMarkerKey(0, 1000),
                            EncodeEpochMarker({.epoch = 1000, .coordinator = "elsewhere"}))
                  .ok());
  ASSERT_TRUE(producer->Flush(5000).ok());
  ManualClock clock;
  CoordinatorOptions opt = MarketOptions(mock->bootstrap(), &clock);
  opt.group_id = "rtb-budget-take-over";
  ASSERT_FALSE(Coordinator::Create(opt).ok());
  opt.take_over = true;
  auto c = Coordinator::Create(opt);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_GT((*c)->counters().epoch, 1000);
  EXPECT_EQ((*c)->counters().refusals["epoch_above"], 1);
}

// With a market key ring, only messages sealed under it are served (an unsealed one, one under
// an unknown key and one with a bad MAC are refused and counted), and every record the
// coordinator writes to the grants topic opens under the ring: a restarted one reads them back.
TEST(Coordinator, WithAKeyRingOnlySealedMessagesAreServedAndEverythingItWritesIsSealed) {
  ServingCoordinator sc;
  const auto ring = Ring();
  ASSERT_NO_FATAL_FAILURE(sc.Start([&](CoordinatorOptions& o) {
    o.group_id = "rtb-budget-sealed";
    o.keys = ring;
  }));
  const int64_t now = sc.clock.UnixMs();
  const std::string ask = EncodeLeaseMessage(
      Forged(LeaseMsgType::kRequest, "a", "a-1", 1, {7, 0, 1'000'000, 0, 0, 0}, now));
  PutRaw(sc, ask);
  PutRaw(sc, Ring("k2=" + std::string(32, 's'))->Seal("rtb.lease.requests", ask));
  PutRaw(sc, Ring("k1=" + std::string(32, 't'))->Seal("rtb.lease.requests", ask));
  PutRaw(sc, ring->Seal("rtb.lease.grants", ask));  // sealed for another topic
  ASSERT_TRUE(sc.AwaitRead(4));
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 0);
  EXPECT_EQ(Refused(*sc.co, "unsealed"), 1);
  EXPECT_EQ(Refused(*sc.co, "unknown_key"), 1);
  EXPECT_EQ(Refused(*sc.co, "bad_mac"), 2);
  PutRaw(sc, ring->Seal("rtb.lease.requests", ask));
  ASSERT_TRUE(WaitUntil([&] { return sc.co->ledger().Held("a", kKey) == 1'000'000; }));
  ASSERT_TRUE(sc.AwaitTurns(2));
  // Every record on the grants topic is sealed: a reader with the ring refuses none of them.
  int holdings = 0, refused = 0;
  GrantsReader reader(ring.get());
  ASSERT_TRUE(kafka::ReadWholeTopic(Reader(sc.brokers), "rtb.lease.grants", 10000,
                                    [&](int32_t p, int64_t o, std::string_view v) {
                                      const auto r = reader.Take(p, v, o);
                                      holdings += r.kind == GrantsReader::Kind::kHolding;
                                      refused += r.kind == GrantsReader::Kind::kRefused;
                                    })
                  .ok());
  EXPECT_GE(holdings, 1);
  EXPECT_EQ(refused, 0);
  ASSERT_NO_FATAL_FAILURE(sc.Restart());
  EXPECT_EQ(sc.co->ledger().Held("a", kKey), 1'000'000);
}

// The lease topics on a mock cluster in a child process (forked before this process starts any
// thread), so that what the brokers hold is not counted in this process's resident memory.
class ForkedLeaseCluster {
 public:
  ForkedLeaseCluster() {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {  // the child: serves until the parent closes its end
      close(up[0]);
      close(down[1]);
      auto mock = LeaseCluster();
      const std::string b = (mock != nullptr ? mock->bootstrap() : std::string()) + "\n";
      if (write(up[1], b.data(), b.size()) < 0) _exit(1);
      close(up[1]);
      char c = 0;
      while (read(down[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(up[1]);
    close(down[0]);
    to_child_ = down[1];
    char c = 0;
    while (read(up[0], &c, 1) == 1 && c != '\n') bootstrap_ += c;
    close(up[0]);
  }
  ~ForkedLeaseCluster() {
    if (to_child_ >= 0) close(to_child_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  const std::string& bootstrap() const { return bootstrap_; }

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  std::string bootstrap_;
};

// Resident bytes after giving back to the system what the allocator keeps free.
int64_t TrimmedResident() {
  malloc_trim(0);
  return test::ResidentBytes();
}

// 20,000 messages for far-future days (each a day of its own) grew the coordinator by 27 MB:
// refused now, and no state is kept for them. The brokers run in another process: this one's
// resident memory is the coordinator's (with its consumer and the test's producer).
TEST(Coordinator, TwentyThousandFarFutureDaysLeaveTheCoordinatorsMemoryFlat) {
  ForkedLeaseCluster cluster;
  ASSERT_FALSE(cluster.bootstrap().empty()) << "the child's mock cluster did not start";
  ServingCoordinator sc;
  sc.external_brokers = cluster.bootstrap();
  ASSERT_NO_FATAL_FAILURE(sc.Start([](CoordinatorOptions& o) { o.group_id = "rtb-budget-days"; }));
  sc.Put(LeaseMsgType::kRequest, "a", 1, {7, 0, 1'000'000, 0, 0, 0});
  ASSERT_TRUE(sc.AwaitRead(1));
  constexpr int kDays = 20'000;
  const int64_t before = TrimmedResident();
  const int64_t now = sc.clock.UnixMs();
  int64_t bytes = 0;
  for (int d = 0; d < kDays; ++d) {
    LeaseMessage m = Forged(LeaseMsgType::kRequest, "a", "a-1", 2 + d, {7, 0, 1'000, 0, 0, 0}, now);
    m.day = kDay + 2 + d;
    const std::string v = EncodeLeaseMessage(m);
    bytes += static_cast<int64_t>(v.size());
    ASSERT_TRUE(sc.producer->Produce("rtb.lease.requests", kafka::kAnyPartition, "a", v).ok());
  }
  ASSERT_TRUE(sc.producer->Flush(30000).ok());
  ASSERT_TRUE(sc.AwaitRead(1 + kDays, 120s));
  const int64_t after = TrimmedResident();
  std::printf(
      "coordinator: resident %lld -> %lld bytes (+%lld) over %d far-future days "
      "(%lld bytes of messages, held by the brokers in the child process)\n",
      static_cast<long long>(before), static_cast<long long>(after),
      static_cast<long long>(after - before), kDays, static_cast<long long>(bytes));
  // Every far-future day refused before it made any state: the ledger holds today's one lease.
  EXPECT_EQ(Refused(*sc.co, "day"), kDays);
  EXPECT_EQ(sc.co->ledger().Leases().size(), 1u);
  EXPECT_LT(after - before, 5 << 20);
}

}  // namespace
}  // namespace rtb::budget
