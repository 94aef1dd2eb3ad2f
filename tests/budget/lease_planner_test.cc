// The bidder's lease planning (budget/lease_planner.h), rule by rule, without Kafka or a clock:
// a fake ledger of slots, holdings written as the coordinator writes them, and the time passed
// in. Each test names the rule it pins.
#include "rtb/budget/lease_planner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "../common/resident.h"

namespace rtb::budget {
namespace {

constexpr int64_t kT0 = 1'000'000;   // the planner's start (ms)
constexpr int64_t kDay = 5;          // the budget day played
constexpr uint32_t kAdv = 7;         // the one advertiser: slots 0 (learned) and 1 (manual)
constexpr int64_t kArm = 5'000'000;  // each arm's budget (micros)

// The bidder's ledger as the planner sees it: reservations move `committed`, a refused one
// moves `denied` and `last_refused`.
class FakeLedger final : public SlotLedger {
 public:
  struct Slot {
    int64_t committed = 0, spent = 0, limit = kArm, denied = 0, last_refused = 0, max_charge = 0;
    int64_t charge_sum = 0, charge_n = 0, headroom = 0;
    bool open = true;
  };
  std::vector<Slot> s = std::vector<Slot>(2);
  size_t slots() const override { return s.size(); }
  int64_t committed(size_t k) const override { return s[k].committed; }
  int64_t spent(size_t k) const override { return s[k].spent; }
  int64_t limit(size_t k) const override { return s[k].limit; }
  int64_t denied(size_t k) const override { return s[k].denied; }
  int64_t last_refused(size_t k) const override { return s[k].last_refused; }
  int64_t max_charge(size_t k) const override { return s[k].max_charge; }
  int64_t charge_sum(size_t k) const override { return s[k].charge_sum; }
  int64_t charge_n(size_t k) const override { return s[k].charge_n; }
  void SetLimit(size_t k, int64_t v) override { s[k].limit = v; }
  void SetHeadroom(size_t k, int64_t v) override { s[k].headroom = v; }
  void SetBidsOpen(size_t k, bool open) override { s[k].open = open; }
  bool TrySetAside(size_t k, int64_t amount) override {
    if (s[k].committed + amount > s[k].limit) return false;
    s[k].committed += amount;
    return true;
  }
  void ReleaseSetAside(size_t k, int64_t amount) override { s[k].committed -= amount; }
  // A bid's reservation: taken when it fits the limit, refused (and counted) when not.
  bool Reserve(size_t k, int64_t amount) {
    s[k].charge_sum += amount;
    ++s[k].charge_n;
    if (s[k].committed + amount > s[k].limit) {
      s[k].denied += amount;
      s[k].last_refused = amount;
      return false;
    }
    s[k].committed += amount;
    s[k].max_charge = std::max(s[k].max_charge, amount);
    return true;
  }
};

LeasePlannerOptions Options(bool share) {
  LeasePlannerOptions o;
  o.name = "b1";
  o.instance = "i2";
  o.lineage = {"i1"};
  o.share = share;
  o.horizon_ms = 10'000;
  o.min_lease = 100'000;
  o.report_every_ms = 1'000;
  o.full_report_every = 3;
  o.ttl_ms = 5'000;
  o.advertisers = {kAdv};
  o.arm_budget = {kArm, kArm};
  return o;
}

// A holding of the learned slot as the coordinator publishes it.
LeaseGrant Holding(int64_t held, int64_t seen, const std::string& instance = "i2") {
  LeaseGrant g;
  g.bidder = "b1";
  g.key = {kDay, kAdv, 0};
  g.held = held;
  g.granted = held;
  g.pool = 1'000'000;
  g.left = 2 * kArm;
  g.seen = seen;
  g.instance = instance;
  g.ts_ms = kT0;
  return g;
}

struct Planner {
  explicit Planner(bool share = true) : p(Options(share), kT0) {}
  LeasePlanner p;
  FakeLedger ledger;
  int64_t offset = 0;
  void Read(const LeaseGrant& g, int64_t now) {
    p.Apply(0, EncodeLeaseGrant(g), offset++, now, kDay, &ledger);
  }
  std::vector<LeaseMessage> Check(int64_t now) { return p.Check(kDay, ledger, now); }
  // A report taken by Kafka (or not) at `now`.
  LeasePlanner::Report Report(int64_t now, bool sent = true, bool periodic = true) {
    LeasePlanner::Report r = p.PlanReport(kDay, &ledger, now, periodic, 42);
    p.Reported(r, sent, now, 1);
    return r;
  }
  // Holdings of both arms' slots that include this process's messages up to `seen`.
  void ReadBoth(int64_t held, int64_t seen, int64_t now) {
    LeaseGrant g = Holding(held, seen);
    Read(g, now);
    g.key.arm = 1;
    Read(g, now);
  }
  // The seq of this process's first message (what a holding must have seen to sync it).
  int64_t FirstSeq(const std::vector<LeaseMessage>& sent) {
    int64_t first = INT64_MAX;
    for (const auto& m : sent) first = std::min(first, m.seq);
    return first;
  }
};

const LeaseMessage* Find(const std::vector<LeaseMessage>& out, LeaseMsgType type, int64_t day) {
  for (const auto& m : out) {
    if (m.type == type && m.day == day) return &m;
  }
  return nullptr;
}

// Until a holding includes this process's messages, its bids wait: a slot asks (for nothing,
// under share sizing) to learn what it holds, and stays closed.
TEST(LeasePlanner, AnUnansweredSlotAsksToLearnWhatItHoldsAndKeepsBidsClosed) {
  Planner t;
  const auto out = t.Check(kT0);
  const LeaseMessage* ask = Find(out, LeaseMsgType::kRequest, kDay);
  ASSERT_NE(ask, nullptr);
  ASSERT_EQ(ask->items.size(), 2u);  // both arms
  EXPECT_EQ(ask->items[0].want, 0);
  EXPECT_EQ(ask->bidder, "b1");
  EXPECT_EQ(ask->instance, "i2");
  EXPECT_EQ(ask->lineage, std::vector<std::string>{"i1"});
  EXPECT_EQ(ask->seq, kT0 * 1000);  // message numbers are microseconds of the clock
  EXPECT_FALSE(t.ledger.s[0].open);
  EXPECT_EQ(t.ledger.s[0].limit, 0);
  EXPECT_EQ(t.ledger.s[0].headroom, 0);
  // The next day's leases are asked for at once (PrepareDay).
  EXPECT_NE(Find(out, LeaseMsgType::kRequest, kDay + 1), nullptr);
  // Asked a moment ago: not again before kAskAgainMs.
  EXPECT_EQ(Find(t.Check(kT0 + 100), LeaseMsgType::kRequest, kDay), nullptr);
  EXPECT_NE(Find(t.Check(kT0 + LeasePlanner::kAskAgainMs + 100), LeaseMsgType::kRequest, kDay),
            nullptr);
}

// A holding that has seen this process's first message opens the slot, up to the cap of the
// last report Kafka took: nothing is spendable beyond what a dead-bidder reclaim would leave.
TEST(LeasePlanner, AHoldingThatSawThisProcessOpensBidsUpToTheReportedCap) {
  Planner t;
  const int64_t first = t.FirstSeq(t.Check(kT0));
  t.Read(Holding(2'000'000, first - 1), kT0 + 10);  // before this process's messages
  t.Check(kT0 + 20);
  EXPECT_FALSE(t.ledger.s[0].open);
  t.Read(Holding(2'000'000, first), kT0 + 30);
  t.Check(kT0 + 40);
  EXPECT_TRUE(t.ledger.s[0].open);
  EXPECT_EQ(t.ledger.s[0].limit, 0);  // no report on Kafka yet: no cap
  const LeasePlanner::Report r = t.Report(kT0 + 50);
  ASSERT_FALSE(r.caps.empty());
  const int64_t cap = r.caps[0].second;
  EXPECT_GT(cap, 0);
  EXPECT_LE(cap, 2'000'000);
  t.Check(kT0 + 60);
  EXPECT_EQ(t.ledger.s[0].limit, cap);
  EXPECT_EQ(r.messages[0].requests, 42);  // a periodic report carries the requests answered
  // Once every slot of the day is answered and capped, the day is ready (readiness check).
  EXPECT_EQ(t.p.ReadyDays().first, -1);  // the manual slot is not answered yet
  LeaseGrant manual = Holding(1'000'000, first);
  manual.key.arm = 1;
  t.Read(manual, kT0 + 70);
  t.Report(kT0 + 80);
  t.Check(kT0 + 90);
  EXPECT_EQ(t.p.ReadyDays().first, kDay);
}

// Kafka has taken no report for the TTL: every slot spends only what it has committed, and a
// new day's ledger opens nothing. The report that ends such a silence resyncs: bids wait for a
// holding that has seen it (the coordinator may have reclaimed meanwhile).
TEST(LeasePlanner, NoReportOnKafkaForTheTtlFreezesAndTheNextReportResyncs) {
  Planner t;
  const int64_t first = t.FirstSeq(t.Check(kT0));
  t.Read(Holding(2'000'000, first), kT0 + 10);
  t.Report(kT0 + 20);
  t.Check(kT0 + 30);
  ASSERT_TRUE(t.ledger.Reserve(0, 60'000));  // within the first cap (one minimum lease)
  t.p.CheckTtl(kT0 + 20 + 5'000);            // exactly the TTL: not yet
  EXPECT_FALSE(t.p.GetHealth().frozen);
  t.Report(kT0 + 1'000, /*sent=*/false);  // Kafka does not take it
  t.p.CheckTtl(kT0 + 20 + 5'001);
  EXPECT_TRUE(t.p.GetHealth().frozen);
  t.Check(kT0 + 5'100);
  EXPECT_EQ(t.ledger.s[0].limit, 60'000);  // what is committed
  EXPECT_EQ(t.p.View(kDay, 0).open_limit, -1);
  // Kafka takes a report again: no longer frozen, but not synced until a holding sees it.
  const LeasePlanner::Report back = t.Report(kT0 + 6'000);
  EXPECT_FALSE(t.p.GetHealth().frozen);
  EXPECT_EQ(t.p.GetHealth().resyncs, 1);
  t.Check(kT0 + 6'010);
  EXPECT_FALSE(t.ledger.s[0].open);
  t.Read(Holding(2'000'000, back.messages[0].seq), kT0 + 6'020);
  t.Check(kT0 + 6'030);
  EXPECT_TRUE(t.ledger.s[0].open);
}

// Share sizing: a reservation refused for want of lease asks the coordinator with its charge as
// the need; without a refusal a synced slot asks nothing (the coordinator tops it up).
TEST(LeasePlanner, ShareSizingAsksOnlyWithTheChargeOfARefusedBid) {
  Planner t(/*share=*/true);
  const int64_t first = t.FirstSeq(t.Check(kT0));
  t.ReadBoth(300'000, first, kT0 + 10);
  t.Report(kT0 + 20);
  t.Check(kT0 + 30);
  EXPECT_EQ(Find(t.Check(kT0 + 2'000), LeaseMsgType::kRequest, kDay), nullptr);
  const int64_t limit = t.ledger.s[0].limit;
  ASSERT_TRUE(t.ledger.Reserve(0, limit));     // fills the slot
  ASSERT_FALSE(t.ledger.Reserve(0, 400'000));  // refused
  const auto out = t.Check(kT0 + 2'100);
  const LeaseMessage* ask = Find(out, LeaseMsgType::kRequest, kDay);
  ASSERT_NE(ask, nullptr);
  EXPECT_EQ(ask->items[0].need, 400'000 - (300'000 - limit));
  EXPECT_EQ(ask->items[0].want, ask->items[0].need);
}

// Rate sizing: a slot whose lease would not last half a horizon at its commit rate asks for a
// horizon's worth; refusals double the ask, as TCP's slow start grows a window.
TEST(LeasePlanner, RateSizingAsksForAHorizonOfItsRateAndDoublesWhileRefused) {
  Planner t(/*share=*/false);
  const int64_t first = t.FirstSeq(t.Check(kT0));
  t.ReadBoth(150'000, first, kT0 + 10);
  t.Report(kT0 + 20);
  t.Check(kT0 + 1'000);
  ASSERT_TRUE(t.ledger.Reserve(0, 90'000));
  // What is left (60,000) is less than one such bid: low.
  const auto out = t.Check(kT0 + 2'000);
  const LeaseMessage* ask = Find(out, LeaseMsgType::kRequest, kDay);
  ASSERT_NE(ask, nullptr);
  ASSERT_EQ(ask->items.size(), 1u);  // the manual slot has no need
  const int64_t want = ask->items[0].want;
  EXPECT_GT(want, 100'000);
  // Answered with nothing; then refused: twice the last ask at least.
  t.Read(Holding(150'000, first), kT0 + 2'010);
  ASSERT_FALSE(t.ledger.Reserve(0, 150'000));
  const auto out2 = t.Check(kT0 + 3'100);
  const LeaseMessage* again = Find(out2, LeaseMsgType::kRequest, kDay);
  ASSERT_NE(again, nullptr);
  EXPECT_GE(again->items[0].want, std::min(2 * want, kArm - 200'000));
}

// A recall (others' unmet needs on the holding) is answered with a return: the amount is set
// aside in the ledger first (no bid can take it), sent again under the same seq after
// kResendMs without an answer, and let go only once a holding includes that return.
TEST(LeasePlanner, AReturnIsSetAsideResentUnderItsSeqAndLetGoOnceAHoldingIncludesIt) {
  Planner t(/*share=*/true);
  const int64_t first = t.FirstSeq(t.Check(kT0));
  t.ReadBoth(150'000, first, kT0 + 10);
  t.Report(kT0 + 20);
  t.Check(kT0 + 30);
  ASSERT_EQ(t.ledger.s[0].limit, 100'000);  // the cap: one minimum lease past nothing spent
  LeaseGrant recall = Holding(150'000, first);
  recall.wanted = 120'000;
  t.Read(recall, kT0 + 40);
  const auto out = t.Check(kT0 + 50);
  const LeaseMessage* ret = Find(out, LeaseMsgType::kReturn, kDay);
  ASSERT_NE(ret, nullptr);
  EXPECT_EQ(ret->items[0].amount, 120'000);
  // 50,000 of it is above the limit (no bid can take it); the other 70,000 is set aside as a
  // reservation, so that no bid takes it while the return travels.
  const int64_t set_aside = t.ledger.s[0].committed;
  EXPECT_EQ(set_aside, 70'000);
  EXPECT_FALSE(t.ledger.Reserve(0, 40'000));
  // No answer: nothing again before kResendMs, then the same seq again.
  EXPECT_EQ(Find(t.Check(kT0 + 50 + LeasePlanner::kResendMs - 1), LeaseMsgType::kReturn, kDay),
            nullptr);
  const auto resent = t.Check(kT0 + 50 + LeasePlanner::kResendMs);
  const LeaseMessage* again = Find(resent, LeaseMsgType::kReturn, kDay);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->seq, ret->seq);
  // A holding that has seen a later report but not the return changes nothing.
  LeaseGrant without = Holding(150'000, ret->seq + 1);
  without.returned = ret->seq - 1;
  t.Read(without, kT0 + 6'000);
  EXPECT_EQ(t.ledger.s[0].committed, set_aside);
  // One that includes it: the limit falls by the amount, then the set-aside part goes.
  LeaseGrant with = Holding(30'000, ret->seq);
  with.returned = ret->seq;
  t.Read(with, kT0 + 6'010);
  EXPECT_EQ(t.ledger.s[0].committed, 0);
  EXPECT_EQ(t.ledger.s[0].limit, 30'000);
  EXPECT_EQ(t.p.GetHealth().returns, 1);
}

// Another live process under this bidder's name (a holding of an instance neither this one nor
// in its lineage, published after this process started): nothing new is spent here, until a
// holding of this process's own comes again.
TEST(LeasePlanner, AnotherProcessUnderTheNameStopsNewMoneyUntilTheNameIsThisOnesAgain) {
  Planner t;
  const int64_t first = t.FirstSeq(t.Check(kT0));
  t.Read(Holding(2'000'000, first), kT0 + 10);
  t.Report(kT0 + 20);
  t.Check(kT0 + 30);
  EXPECT_GT(t.ledger.s[0].limit, 0);
  // The lineage's holding is this store's earlier process: no conflict.
  t.Read(Holding(2'000'000, first, "i1"), kT0 + 40);
  EXPECT_FALSE(t.p.GetHealth().name_conflict);
  t.Read(Holding(2'000'000, first, "other"), kT0 + 50);
  EXPECT_TRUE(t.p.GetHealth().name_conflict);
  t.Check(kT0 + 60);
  EXPECT_EQ(t.ledger.s[0].limit, 0);  // what it has committed
  EXPECT_EQ(t.p.View(kDay, 0).open_limit, -1);
  t.Read(Holding(2'000'000, first), kT0 + 70);
  EXPECT_FALSE(t.p.GetHealth().name_conflict);
}

// Reports: the first periodic one and every full_report_every-th carry every slot; the others
// only what changed since the last report Kafka took; an unsent report's slots go again.
TEST(LeasePlanner, PeriodicReportsCarryEverySlotOnlyEveryNth) {
  Planner t;
  const int64_t first = t.FirstSeq(t.Check(kT0));
  t.Read(Holding(2'000'000, first), kT0 + 10);
  bool periodic = false;
  EXPECT_TRUE(t.p.ReportDue(kT0 + 20, &periodic));
  EXPECT_TRUE(periodic);
  const LeasePlanner::Report full = t.Report(kT0 + 20);
  EXPECT_EQ(full.messages[0].items.size(), 2u);  // every slot
  // The next day's prepared slots report their caps too (once, then as they change).
  ASSERT_EQ(full.messages.size(), 2u);
  EXPECT_EQ(full.messages[1].day, kDay + 1);
  EXPECT_FALSE(t.p.ReportDue(kT0 + 500, &periodic));
  EXPECT_EQ(t.Report(kT0 + 1'020).messages[0].items.size(), 0u);  // nothing changed
  t.Check(kT0 + 1'030);
  ASSERT_TRUE(t.ledger.Reserve(0, 10'000));
  const LeasePlanner::Report r = t.Report(kT0 + 2'020, /*sent=*/false);
  EXPECT_EQ(r.messages[0].items.size(), 1u);
  EXPECT_EQ(t.Report(kT0 + 3'020).messages[0].items.size(), 2u);  // the third: full again
  EXPECT_EQ(t.Report(kT0 + 4'020).messages.size(), 1u);
}

// ---- Trust: holdings written by anyone but the coordinator move no money ----

std::shared_ptr<const MarketKeys> Ring() {
  auto keys = MarketKeys::Parse("k1=" + std::string(32, 's'));
  EXPECT_TRUE(keys.ok());
  return std::make_shared<const MarketKeys>(std::move(*keys));
}

// `k` bidders share the learned arm's budget, each holding budget / k (its genuine holding, number
// 1). Each then reads what a writer of the grants topic without the market's ring can publish:
// its holding again with `held` raised to the whole budget (same epoch and number), one with a
// later number (with a ring: unsealed, or under a wrong key), and its genuine holding once more.
// Then each spends all it may, a report a second, for two minutes. Returns the spend over the
// budget (micros); *refused: the records the bidders refused.
int64_t OverspendUnderForgedHoldings(int k, bool ring, int64_t* refused) {
  const std::shared_ptr<const MarketKeys> keys = ring ? Ring() : nullptr;
  const std::string topic = "rtb.lease.grants";
  auto seal = [&](const LeaseGrant& g) { return SealFor(keys.get(), topic, EncodeLeaseGrant(g)); };
  int64_t spent = 0;
  *refused = 0;
  for (int i = 0; i < k; ++i) {
    LeasePlannerOptions o = Options(/*share=*/true);
    o.name = "b" + std::to_string(i);
    o.instance = "i" + std::to_string(i);
    o.lineage = {};
    o.keys = keys;
    LeasePlanner p(o, kT0);
    FakeLedger ledger;
    int64_t offset = 0, seq = INT64_MAX;
    for (const auto& m : p.Check(kDay, ledger, kT0)) seq = std::min(seq, m.seq);
    LeaseGrant g = Holding(kArm / k, seq, o.instance);
    g.bidder = o.name;
    g.epoch = 1;
    g.n = 1;
    p.Apply(0, seal(g), offset++, kT0 + 10, kDay, &ledger);
    LeaseGrant raised = g;
    raised.held = kArm;
    p.Apply(0, ring ? EncodeLeaseGrant(raised) : seal(raised), offset++, kT0 + 20, kDay, &ledger);
    if (ring) {
      raised.n = 2;
      p.Apply(0, EncodeLeaseGrant(raised), offset++, kT0 + 30, kDay, &ledger);
      auto wrong = MarketKeys::Parse("k1=" + std::string(32, 'w'));
      p.Apply(0, wrong->Seal(topic, EncodeLeaseGrant(raised)), offset++, kT0 + 40, kDay, &ledger);
    }
    p.Apply(0, seal(g), offset++, kT0 + 50, kDay, &ledger);  // the genuine one, again
    int64_t mine = 0;
    for (int64_t t = kT0 + 1'000; t < kT0 + 121'000; t += 1'000) {
      p.Check(kDay, ledger, t);
      while (ledger.Reserve(0, 10'000)) mine += 10'000;
      ledger.s[0].spent = ledger.s[0].committed;
      const LeasePlanner::Report r = p.PlanReport(kDay, &ledger, t, true, 0);
      p.Reported(r, true, t, 1);
    }
    spent += mine;
    for (const auto& [reason, n] : p.GetHealth().refused) *refused += n;
  }
  return std::max<int64_t>(0, spent - kArm);
}

TEST(LeasePlanner, ForgedHoldingsWithARaisedAmountAndAReplayedOneGiveNoOverspend) {
  for (const int k : {2, 3}) {
    int64_t refused = 0;
    EXPECT_EQ(OverspendUnderForgedHoldings(k, /*ring=*/false, &refused), 0) << k << " bidders";
    EXPECT_EQ(refused, 2 * k) << k << " bidders";  // the raised copy and the replay, each
    EXPECT_EQ(OverspendUnderForgedHoldings(k, /*ring=*/true, &refused), 0) << k << " bidders";
    EXPECT_EQ(refused, 4 * k) << k << " bidders";  // and the two that do not open
  }
}

// A genuine earlier holding sent again (it held more before a return) does not take the slot
// back to it; a later one applies.
TEST(LeasePlanner, AnEarlierHoldingSentAgainChangesNothing) {
  Planner t;
  const int64_t first = t.FirstSeq(t.Check(kT0));
  LeaseGrant g1 = Holding(3'000'000, first);
  g1.epoch = 1;
  g1.n = 1;
  LeaseGrant g2 = g1;
  g2.held = 1'000'000;
  g2.n = 2;
  t.Read(g1, kT0 + 10);
  t.Read(g2, kT0 + 20);
  t.Report(kT0 + 30);
  t.Read(g1, kT0 + 40);
  t.Check(kT0 + 50);
  EXPECT_LE(t.ledger.s[0].limit, 1'000'000);
  EXPECT_EQ(t.p.View(kDay, 0).held, 1'000'000);
  EXPECT_EQ(t.p.GetHealth().refused["replay"], 1);
  LeaseGrant g3 = g1;  // a newer coordinator (a higher epoch) numbers on from the topic's
  g3.epoch = 2;
  g3.n = 3;
  g3.held = 2'000'000;
  t.Read(g3, kT0 + 60);
  EXPECT_EQ(t.p.View(kDay, 0).held, 2'000'000);
}

// Holdings for 20,000 far-future days (each a day of its own) grew each bidder by 10 MB: refused
// now, before the first request too (the window is then the clock's today +-1).
TEST(LeasePlanner, TwentyThousandFarFutureDaysLeaveTheBiddersMemoryFlat) {
  for (const int64_t day : {kDay, int64_t{-1}}) {
    Planner t;
    const int64_t before = test::ResidentBytes();
    for (int d = 0; d < 20'000; ++d) {
      LeaseGrant g = Holding(1'000, 0);
      g.key.day = (day >= 0 ? day : BudgetDayOf(kT0, -1)) + 2 + d;
      g.bidder = d % 2 ? "b1" : "other";
      t.p.Apply(0, EncodeLeaseGrant(g), d, kT0, day, &t.ledger);
    }
    const int64_t after = test::ResidentBytes();
    std::printf(
        "bidder (current day %lld): resident %lld -> %lld bytes (+%lld) over 20000 "
        "far-future days\n",
        static_cast<long long>(day), static_cast<long long>(before), static_cast<long long>(after),
        static_cast<long long>(after - before));
    EXPECT_LT(after - before, 5 << 20);
    EXPECT_EQ(t.p.GetHealth().refused["day"], 20'000);
  }
}

}  // namespace
}  // namespace rtb::budget
