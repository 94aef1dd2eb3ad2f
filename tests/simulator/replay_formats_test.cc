// The other log formats of docs/replay.md: raw iPinYou (header-ordered TSV), the engine's outcome
// events; Lin-Bid's b0 tuning; the pacing policy's table and strategy.
#include <gtest/gtest.h>

#include <cmath>

#include "rtb/core/events.h"
#include "rtb/simulator/fulllog.h"
#include "rtb/simulator/ipinyou.h"
#include "rtb/simulator/outcome_replay.h"
#include "rtb/simulator/pacing.h"
#include "rtb/simulator/replay.h"

namespace rtb::sim {
namespace {

// Columns in an unusual order, extra columns, CRLF line ends.
constexpr const char* kIpinyou =
    "bidid\tpayprice\tdomain\ttimestamp\tclick\tslotprice\tadvertiser\tcity\r\n"
    "a\t80\td1\t20130606000105123\t0\t5\t1458\t1\r\n"
    "b\t20\td2\t20130606000101000\t1\t0\t3358\t2\r\n"
    "c\t55\td1\t20130606000103000\t1\t60\t1458\t1\r\n";

TEST(Ipinyou, ColumnsFollowTheHeader) {
  auto log = ParseIpinyouLog(kIpinyou, "x.log", {});
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->auctions.size(), 3u);
  EXPECT_EQ(log->auctions[0].payprice, 80);
  EXPECT_EQ(log->auctions[0].floor, 5);
  EXPECT_EQ(log->auctions[0].click, 0);
  EXPECT_EQ(log->auctions[1].click, 1);
  EXPECT_TRUE(log->has_floor && log->has_timestamp && !log->has_pctr);
  // city and domain are default CTR features; the others are not.
  EXPECT_EQ(log->feature_count, 2);
  const CampaignInfo t = log->Totals();
  EXPECT_EQ(t.imp_train, 3);
  EXPECT_EQ(t.clk_train, 2);
  EXPECT_DOUBLE_EQ(t.cost_train, 155);
}

TEST(Ipinyou, TimeOrderAdvertiserFilterAndTheBenchmarkProtocol) {
  IpinyouReadOptions o;
  o.advertiser = "1458";
  auto log = ParseIpinyouLog(kIpinyou, "x.log", o);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->auctions.size(), 2u);
  EXPECT_EQ(log->filtered, 1);
  SortByTime(&*log);
  EXPECT_EQ(log->auctions[0].payprice, 55);  // 00:01:03 before 00:01:05
  EXPECT_EQ(log->auctions[1].payprice, 80);
  // Benchmark protocol: bid 58 > 55 but below the floor 60 -> lost; 58 < 80 -> lost.
  CampaignInfo info = log->Totals();
  auto c58 = ConstBid(58);
  EXPECT_EQ(ReplayBenchmark(log->auctions, info, {1.0}, *c58).impressions, 0);
  auto c81 = ConstBid(81);
  const auto t = ReplayBenchmark(log->auctions, info, {1.0}, *c81);
  EXPECT_EQ(t.impressions, 2);
  EXPECT_EQ(t.cost, 135);
}

TEST(Ipinyou, MalformedLinesNameTheirLineOrAreCounted) {
  const std::string bad =
      std::string(kIpinyou) + "d\t7x\td1\t20130606000105123\t0\t5\t1458\t1\n" + "e\t9\td1\n";
  auto stop = ParseIpinyouLog(bad, "x.log", {});
  ASSERT_FALSE(stop.ok());
  EXPECT_NE(stop.status().message().find("x.log:5: payprice must be a non-negative integer"),
            std::string::npos)
      << stop.status().message();
  IpinyouReadOptions o;
  o.skip_malformed = true;
  auto skip = ParseIpinyouLog(bad, "x.log", o);
  ASSERT_TRUE(skip.ok());
  EXPECT_EQ(skip->auctions.size(), 3u);
  EXPECT_EQ(skip->skipped, 2);
  EXPECT_NE(skip->first_skipped.find("x.log:5:"), std::string::npos);
  auto no_click = ParseIpinyouLog("payprice\tdomain\n1\tx\n", "y.log", {});
  ASSERT_FALSE(no_click.ok());
  EXPECT_NE(no_click.status().message().find("y.log:1: the header must name"), std::string::npos);
  auto bad_time = ParseIpinyouLog("click\tpayprice\ttimestamp\n0\t1\t2013\n", "z.log", {});
  ASSERT_FALSE(bad_time.ok());
  EXPECT_NE(bad_time.status().message().find("z.log:2: timestamp"), std::string::npos);
}

TEST(Ipinyou, ThePctrColumnIsUsedWhenPresent) {
  auto log = ParseIpinyouLog("click\tpayprice\tpctr\n0\t10\t0.25\n", "p.log", {});
  ASSERT_TRUE(log.ok());
  EXPECT_TRUE(log->has_pctr);
  EXPECT_DOUBLE_EQ(log->auctions[0].pctr, 0.25);
  EXPECT_FALSE(ParseIpinyouLog("click\tpayprice\tpctr\n0\t10\t1.5\n", "p.log", {}).ok());
}

TEST(CtrModel, LearnsWhichFeatureValueClicks) {
  // domain=hot clicks 20% of the time, domain=cold 1%.
  std::string text = "click\tpayprice\tdomain\n";
  for (int i = 0; i < 4000; ++i) {
    text += std::string(i % 5 == 0 ? "1" : "0") + "\t50\thot\n";
    text += std::string(i % 100 == 0 ? "1" : "0") + "\t50\tcold\n";
  }
  auto log = ParseIpinyouLog(text, "t.log", {});
  ASSERT_TRUE(log.ok());
  CtrModel m(16);
  const double before = m.LogLoss(*log);
  m.Fit(*log, 2, 0.05, 1e-6, 1);
  m.Score(&*log);
  EXPECT_NEAR(log->auctions[0].pctr, 0.2, 0.05);
  EXPECT_NEAR(log->auctions[1].pctr, 0.01, 0.01);
  EXPECT_LT(m.LogLoss(*log), before);
}

TEST(TuneLinB0, PicksTheMostClicksInStepsOfSix) {
  // One click at payprice 100 with pCTR 0.01; ctr_avg 0.01: Lin bids b0. b0 >= 100 wins it;
  // the smallest such multiple of 6 is 102, and larger ones cost the same (ties: smaller b0).
  std::vector<LoggedAuction> log = {{1, 100, 0.01, 0}, {0, 300, 0.01, 0}};
  CampaignInfo info;
  info.imp_train = 100;
  info.clk_train = 1;
  info.cost_train = 1e6;
  const B0Tuning t = TuneLinB0(
      [&](BidStrategy& s) {
        return ReplayRlb(log, info, {1.0, 1000, 300}, s);
      },
      0.01, 6, 120);
  EXPECT_EQ(t.b0, 102);
  EXPECT_EQ(t.best.clicks, 1);
  EXPECT_EQ(t.clicks_by_b0.size(), 20u);
  EXPECT_EQ(t.clicks_by_b0.front(), std::make_pair(int64_t{6}, int64_t{0}));
}

std::vector<LoggedAuction> Synthetic(int n) {
  CampaignInfo info;
  auto text = GenerateCompactLog(n, 7, &info);
  return ParseCompactLog(text, "g", {})->auctions;
}

TEST(Pacing, ZeroActionIsLinBidExactly) {
  const auto log = Synthetic(5000);
  CampaignInfo info;
  GenerateCompactLog(5000, 7, &info);
  PacingParams p{48, info.CtrTrain(), 1.0, 1000, 10};
  PacingStrategy zero(
      p, [](const std::vector<float>&) { return 0.0; }, true);
  auto lin = LinBid(48, info.CtrTrain());
  const RlbProtocol proto{1.0 / 16, 1000, 300};
  const auto a = ReplayRlb(log, info, proto, zero);
  zero.Finish();
  const auto b = ReplayRlb(log, info, proto, *lin);
  EXPECT_EQ(a.impressions, b.impressions);
  EXPECT_EQ(a.clicks, b.clicks);
  EXPECT_EQ(a.cost, b.cost);
  // 5 episodes x 10 steps, the last of each episode done, states chained.
  ASSERT_EQ(zero.steps().size(), 50u);
  for (size_t i = 0; i < zero.steps().size(); ++i) {
    const PacingStep& s = zero.steps()[i];
    EXPECT_EQ(s.done, i % 10 == 9) << i;
    EXPECT_NEAR(s.s[1], 1.0 - 0.1 * static_cast<double>(i % 10), 1e-6) << i;
    if (!s.done) {
      EXPECT_EQ(s.s2, zero.steps()[i + 1].s) << i;
    } else {
      EXPECT_FLOAT_EQ(s.s2[1], 0.0f);
    }
    EXPECT_GE(s.reward, 0);
    EXPECT_LE(s.s2[0], s.s[0]);  // the budget left only falls
  }
  EXPECT_FLOAT_EQ(zero.steps()[0].s[0], 1.0f);
}

TEST(Pacing, TheActionScalesTheBid) {
  PacingParams p{100, 0.01, 1.0, 10, 2};
  std::vector<double> seen;
  PacingStrategy s(
      p, [](const std::vector<float>& st) { return st[1] > 0.5f ? 0.5 : -0.5; }, false);
  BidContext ctx;
  ctx.budget = ctx.budget_left = 1000;
  ctx.episode_size = 10;
  LoggedAuction a{0, 0, 0.01, 0};
  ctx.auctions_left = 10;
  EXPECT_EQ(s.Bid(a, ctx), 150);  // 100 x (1 + 0.5)
  ctx.auctions_left = 5;
  EXPECT_EQ(s.Bid(a, ctx), 50);  // the second step: x (1 - 0.5)
  PacingStrategy clipped(
      p, [](const std::vector<float>&) { return 5.0; }, false);
  ctx.auctions_left = 10;
  EXPECT_EQ(clipped.Bid(a, ctx), 190);  // a clipped to 1, then x (1 + 0.9)
}

// With price buckets the state's last entry is what the previous step's wins paid against the
// training log's mean price (log2, clipped to [-1, 1]), 1 after a step without a win, 0 at the
// episode's start; without them it stays 0.
TEST(Pacing, ThePriceLevelIsWhatTheLastStepsWinsPaid) {
  PacingParams p{100, 0.01, 1.0, 12, 3};
  p.price_avg = 50;
  std::vector<std::vector<float>> seen;
  PacingStrategy s(
      p,
      [&seen](const std::vector<float>& st) {
        seen.push_back(st);
        return 0.0;
      },
      false);
  BidContext ctx;
  ctx.budget = ctx.budget_left = 100000;
  ctx.episode_size = 12;
  const LoggedAuction a{0, 0, 0.01, 0};
  ctx.auctions_left = 12;
  s.Bid(a, ctx);
  s.Observe(a, 100, true, 80);
  s.Observe(a, 100, true, 120);  // mean 100: log2(100 / 50) = 1
  ctx.auctions_left = 8;
  s.Bid(a, ctx);
  s.Observe(a, 100, false, 0);  // nothing won: the market is above the bid
  ctx.auctions_left = 4;
  s.Bid(a, ctx);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_FLOAT_EQ(seen[0][4], 0.0f);
  EXPECT_FLOAT_EQ(seen[1][4], 1.0f);
  EXPECT_FLOAT_EQ(seen[2][4], 1.0f);
  s.Observe(a, 100, true, 25);  // a new episode starts at 0; within it, 25 / 50 gives -1
  ctx.episode = 1;
  ctx.auctions_left = 12;
  s.Bid(a, ctx);
  s.Observe(a, 100, true, 25);
  ctx.auctions_left = 8;
  s.Bid(a, ctx);
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_FLOAT_EQ(seen[3][4], 0.0f);
  EXPECT_FLOAT_EQ(seen[4][4], -1.0f);
  p.price_avg = 0;  // no price buckets: 0 throughout
  seen.clear();
  PacingStrategy plain(
      p,
      [&seen](const std::vector<float>& st) {
        seen.push_back(st);
        return 0.0;
      },
      false);
  ctx.episode = 0;
  ctx.auctions_left = 12;
  plain.Bid(a, ctx);
  plain.Observe(a, 100, true, 100);
  ctx.auctions_left = 8;
  plain.Bid(a, ctx);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_FLOAT_EQ(seen[1][4], 0.0f);
}

TEST(PacingTable, PriceBucketsRoundTripAndAreLookedUp) {
  PacingTable t;
  t.params = {36, 0.0014, 1.0, 1000, 4};
  t.params.price_avg = 80;
  t.budget_buckets = 3;
  t.level_buckets = 2;
  t.price_buckets = 3;
  for (int i = 0; i < 4 * 3 * 2 * 3; ++i) t.actions.push_back(static_cast<float>(i) / 72.0f);
  EXPECT_EQ(t.CellStates().size(), t.actions.size());
  auto back = PacingTable::FromJson(t.ToJson(), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->price_buckets, 3);
  EXPECT_DOUBLE_EQ(back->params.price_avg, 80);
  // step 1, budget bucket 2, level bucket 1, price bucket 2 (dear) and 0 (cheap).
  EXPECT_FLOAT_EQ(static_cast<float>(back->Lookup(PacingState(1.0, 0.75, 1.0, 1.0))),
                  t.actions[((1 * 3 + 2) * 2 + 1) * 3 + 2]);
  EXPECT_FLOAT_EQ(static_cast<float>(back->Lookup(PacingState(1.0, 0.75, 1.0, -1.0))),
                  t.actions[((1 * 3 + 2) * 2 + 1) * 3 + 0]);
  // Every cell state looks up its own action.
  const auto cells = t.CellStates();
  for (size_t c = 0; c < cells.size(); ++c) EXPECT_FLOAT_EQ(back->Lookup(cells[c]), t.actions[c]);
  // Price buckets without the reference price are refused.
  t.params.price_avg = 0;
  auto bad = PacingTable::FromJson(t.ToJson(), "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("price_avg"), std::string::npos) << bad.status().message();
}

TEST(PacingTable, RoundTripLookupAndBadTables) {
  PacingTable t;
  t.params = {36, 0.0014, 1.0, 1000, 4};
  t.budget_buckets = 3;
  t.level_buckets = 2;
  for (int i = 0; i < 4 * 3 * 2; ++i) t.actions.push_back(static_cast<float>(i) / 24.0f);
  auto back = PacingTable::FromJson(t.ToJson(), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->actions, t.actions);
  EXPECT_EQ(back->params.b0, 36);
  // step 1 (3/4 left), budget bucket 2 (all left), level bucket 1 (high).
  EXPECT_FLOAT_EQ(static_cast<float>(back->Lookup(PacingState(1.0, 0.75, 1.0))),
                  t.actions[(1 * 3 + 2) * 2 + 1]);
  EXPECT_EQ(t.CellStates().size(), t.actions.size());
  std::string j = t.ToJson();
  EXPECT_FALSE(PacingTable::FromJson(j.substr(0, j.size() / 2), "t.json").ok());
  EXPECT_FALSE(
      PacingTable::FromJson(R"({"schema":"rtb.pacing-table.v1","b0":1,"extra":2})", "t.json").ok());
  t.actions.pop_back();
  auto short_table = PacingTable::FromJson(t.ToJson(), "t.json");
  ASSERT_FALSE(short_table.ok());
  EXPECT_NE(short_table.status().message().find("expected steps x budget_buckets"),
            std::string::npos);
}

std::string Ev(const std::string& type, const std::string& eid, const std::string& auction,
               int64_t adv, int64_t price, double alpha = 0) {
  Event e;
  e.type = type;
  e.eid = eid;
  e.auction_id = auction;
  e.imp_id = "1";
  e.advertiser = adv;
  e.price_micros = price;
  e.alpha = alpha;
  e.pctr = 0.01;
  return EncodeEvent(e) + "\n";
}

TEST(OutcomeReplay, JoinsEventsAndReplaysKnownOutcomesOnly) {
  // a1: bid 2.0 CPM (alpha 0.25), billed 1.5, one click, a conversion worth 3.
  // a2: bid 1.0, lost. a3: the billing arrives before its bid (another partition).
  // A repeated eid, an orphan click and a no-bid.
  const std::string dump =
      Ev("bid", "e1", "a1", 7, 2'000'000, 0.25) + Ev("billing", "e2", "a1", 7, 1'500'000) +
      Ev("click", "e3", "a1", 7, 0) + Ev("conversion", "e4", "a1", 7, 3'000'000) +
      Ev("conversion", "e4", "a1", 7, 3'000'000) + Ev("bid", "e5", "a2", 7, 1'000'000) +
      Ev("loss", "e6", "a2", 7, 0) + Ev("billing", "e7", "a3", 8, 500'000) +
      Ev("bid", "e8", "a3", 8, 900'000) + Ev("click", "e9", "zz", 7, 0) +
      Ev("nobid", "e10", "a4", -1, 0);
  auto log = ParseOutcomeDump(dump, "ev.jsonl", false);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->bids.size(), 3u);
  EXPECT_EQ(log->duplicates, 1);
  EXPECT_EQ(log->orphans, 1);
  EXPECT_EQ(log->other, 1);
  auto logged = ReplayOutcomes(*log, *OutcomeStrategy("logged"));
  EXPECT_EQ(logged.total.auctions, 3);
  EXPECT_EQ(logged.total.impressions, 2);
  EXPECT_EQ(logged.total.clicks, 1);
  EXPECT_EQ(logged.total.conversions, 1);
  EXPECT_EQ(logged.total.cost.value(), 1500 + 500);  // CPM micros / 1000 per impression
  EXPECT_EQ(logged.total.revenue.value(), 3'000'000);
  EXPECT_EQ(logged.unknown, 0);
  EXPECT_EQ(logged.by_advertiser.at(8).impressions, 1);
  // manual: 2.0 / 1.25 = 1.6 >= 1.5 still wins a1.
  EXPECT_EQ(ReplayOutcomes(*log, *OutcomeStrategy("manual")).total.impressions, 2);
  // x0.7: a1 bids 1.4 < 1.5 (lost), a3 bids 0.63 >= 0.5 (won).
  auto low = ReplayOutcomes(*log, *OutcomeStrategy("scale:0.7"));
  EXPECT_EQ(low.total.impressions, 1);
  EXPECT_EQ(low.total.cost.value(), 500);
  // x2: a2 (lost at 1.0) would bid 2.0: unknown, counted as lost.
  auto high = ReplayOutcomes(*log, *OutcomeStrategy("scale:2"));
  EXPECT_EQ(high.total.impressions, 2);
  EXPECT_EQ(high.unknown, 1);
  EXPECT_EQ(ReplayOutcomes(*log, *OutcomeStrategy("logged"), 8).total.auctions, 1);
  EXPECT_FALSE(OutcomeStrategy("scale:x").ok());
  EXPECT_FALSE(OutcomeStrategy("lin").ok());
}

// A first-price win (bid event at 1) paid its bid: the log holds no market price, so a new bid
// at or above it wins and pays itself, a lower one is unknown; second-price bids as before.
TEST(OutcomeReplay, AFirstPriceWinPaysTheNewBidAndALowerBidIsUnknown) {
  Event fp;
  fp.type = "bid";
  fp.eid = "f1";
  fp.auction_id = "f";
  fp.imp_id = "1";
  fp.advertiser = 7;
  fp.price_micros = 2'000'000;
  fp.at = 1;
  const std::string dump = EncodeEvent(fp) + "\n" + Ev("billing", "f2", "f", 7, 2'000'000) +
                           Ev("bid", "s1", "s", 7, 2'000'000) +
                           Ev("billing", "s2", "s", 7, 1'500'000);
  auto log = ParseOutcomeDump(dump, "ev.jsonl", false);
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->bids.size(), 2u);
  auto high = ReplayOutcomes(*log, *OutcomeStrategy("scale:1.5"));
  EXPECT_EQ(high.total.impressions, 2);
  EXPECT_EQ(high.total.cost.value(), 3000 + 1500);  // pays its 3.0 CPM; GSP keeps 1.5
  EXPECT_EQ(high.unknown, 0);
  auto low = ReplayOutcomes(*log, *OutcomeStrategy("scale:0.8"));
  EXPECT_EQ(low.total.impressions, 1);  // 1.6 >= 1.5 at second price; unknown at first price
  EXPECT_EQ(low.total.cost.value(), 1500);
  EXPECT_EQ(low.unknown, 1);
}

// A bidder killed before its bid events reached Kafka leaves notices whose bid is missing (their
// events survive in its outbox). The won ones are counted with their cost, so a replay says what
// it cannot see: b1 won (win, then billing at 0.8 CPM, a click), b2 won (a win notice alone, 0.6),
// b3 lost; a's bid is in the log.
TEST(OutcomeReplay, WonImpressionsWithoutABidEventAreCountedWithTheirCost) {
  const std::string dump = Ev("bid", "e1", "a", 7, 1'000'000) +
                           Ev("billing", "e2", "a", 7, 900'000) +
                           Ev("win", "e3", "b1", 7, 850'000) +
                           Ev("billing", "e4", "b1", 7, 800'000) + Ev("click", "e5", "b1", 7, 0) +
                           Ev("win", "e6", "b2", 8, 600'000) + Ev("loss", "e7", "b3", 8, 0);
  auto log = ParseOutcomeDump(dump, "ev.jsonl", false);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->bids.size(), 1u);
  EXPECT_EQ(log->orphans, 5);
  EXPECT_EQ(log->orphan_impressions, 2);
  EXPECT_EQ(log->orphan_cost_micros, 800 + 600);  // the billing price when there is one
  EXPECT_EQ(ReplayOutcomes(*log, *OutcomeStrategy("logged")).total.impressions, 1);
}

TEST(OutcomeReplay, MalformedEventsStopWithTheLineOrAreCounted) {
  const std::string dump =
      Ev("bid", "e1", "a1", 7, 1'000'000) + "{not json\n" + Ev("billing", "e2", "a1", 7, 900'000);
  auto stop = ParseOutcomeDump(dump, "ev.jsonl", false);
  ASSERT_FALSE(stop.ok());
  EXPECT_NE(stop.status().message().find("ev.jsonl:2:"), std::string::npos)
      << stop.status().message();
  auto skip = ParseOutcomeDump(dump, "ev.jsonl", true);
  ASSERT_TRUE(skip.ok());
  EXPECT_EQ(skip->skipped, 1);
  EXPECT_EQ(ReplayOutcomes(*skip, *OutcomeStrategy("logged")).total.impressions, 1);
}

TEST(OutcomeReplay, NegativeOrOverflowingMoneyIsRefusedWithItsLineOrSkippedAndCounted) {
  const std::string negative =
      Ev("bid", "e1", "a1", 7, 1'000'000) + Ev("billing", "e2", "a1", 7, -900'000);
  auto stop = ParseOutcomeDump(negative, "ev.jsonl", false);
  ASSERT_FALSE(stop.ok());
  EXPECT_EQ(stop.status().message(), "ev.jsonl:2: event: negative price (-900000 micros) refused");
  auto skip = ParseOutcomeDump(negative, "ev.jsonl", true);
  ASSERT_TRUE(skip.ok());
  EXPECT_EQ(skip->skipped, 1);
  EXPECT_EQ(ReplayOutcomes(*skip, *OutcomeStrategy("logged")).total.cost.value(), 0);
  // Two conversions of 9e18 micros: the second would wrap the revenue.
  const std::string big = Ev("bid", "e1", "a1", 7, 1'000'000) +
                          Ev("billing", "e2", "a1", 7, 900'000) +
                          Ev("conversion", "e3", "a1", 7, 9'000'000'000'000'000'000) +
                          Ev("conversion", "e4", "a1", 7, 9'000'000'000'000'000'000);
  auto wrap = ParseOutcomeDump(big, "ev.jsonl", false);
  ASSERT_FALSE(wrap.ok());
  EXPECT_EQ(wrap.status().message(),
            "ev.jsonl:4: event: conversion of 9000000000000000000 micros would take the value of "
            "the log past the int64 range of micros (9223372036854.775807): refused");
  auto kept = ParseOutcomeDump(big, "ev.jsonl", true);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(ReplayOutcomes(*kept, *OutcomeStrategy("logged")).total.revenue.value(),
            9'000'000'000'000'000'000);
}

TEST(ReplayReaders, AFolderOrAnEndlessLineIsAnErrorNamingTheFile) {
  const std::string dir = ::testing::TempDir();
  auto where = [](const Status& st) { return st.message(); };
  EXPECT_NE(where(ReadCompactLog(dir, {}).status()).find("is a directory"), std::string::npos);
  EXPECT_NE(where(ReadIpinyouLog(dir, {}).status()).find("is a directory"), std::string::npos);
  EXPECT_NE(where(ReadFullLog(dir).status()).find("is a directory"), std::string::npos);
  EXPECT_NE(where(ReadOutcomeDump(dir, true).status()).find("is a directory"), std::string::npos);
  EXPECT_NE(where(ReadCampaignInfo(dir).status()).find("is a directory"), std::string::npos);
  // /dev/zero never ends a line: the first line's limit stops every reader, in bounded memory.
  const std::string limit = "/dev/zero:1: a line longer than 1 MiB (1048576 bytes)";
  EXPECT_EQ(where(ReadCompactLog("/dev/zero", {}).status()).rfind(limit, 0), 0u);
  EXPECT_EQ(where(ReadIpinyouLog("/dev/zero", {}).status()).rfind(limit, 0), 0u);
  EXPECT_EQ(where(ReadFullLog("/dev/zero").status()).rfind(limit, 0), 0u);
  EXPECT_EQ(where(ReadOutcomeDump("/dev/zero", true).status()).rfind(limit, 0), 0u);
  EXPECT_NE(where(ReadCampaignInfo("/dev/zero").status()).find("larger than 64 MiB"),
            std::string::npos);
}

}  // namespace
}  // namespace rtb::sim
