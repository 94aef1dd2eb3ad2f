#include "rtb/simulator/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "rtb/simulator/simulate.h"
#include "test_util.h"

namespace rtb::sim {
namespace {

using testing::Cand;
using testing::MakeDay;
using testing::MakeMarket;

AuctionConfig Rules(double reserve_cpm = 0) {
  AuctionConfig a;
  a.slots = 3;
  a.reserve_cpm = reserve_cpm;
  return a;
}

// eCPM (micros per impression): A 100000, B 40000, C 50000, D 30000.
const std::vector<Cand> kFour = {{0, 1.0, 0.1}, {1, 2.0, 0.02}, {2, 0.5, 0.1}, {3, 0.3, 0.1}};

TEST(Engine, GspExpectedCostClicksAndRevenue) {
  const Day day = MakeDay({kFour}, 4);
  const Market m = MakeMarket({0, 0, 0, 0}, 1);
  AuctionEngine e(day, m, Rules(), 0.9, {});
  e.RunToEnd(ActionTable(1, 1));
  const auto& o = e.advertiser_outcomes();
  EXPECT_EQ(o[0].cost.value(), 50000);  // pays C's eCPM
  EXPECT_EQ(o[2].cost.value(), 40000);  // pays B's
  EXPECT_EQ(o[1].cost.value(), 30000);  // pays D's (the 4th candidate)
  EXPECT_EQ(o[3].impressions, 0);
  EXPECT_DOUBLE_EQ(o[0].clicks, 0.1);
  EXPECT_NEAR(o[0].conversions, 0.01, 1e-12);
  EXPECT_EQ(o[0].revenue.value(), 1'000'000);  // 0.1 x 0.1 x 100 units
  EXPECT_EQ(o[1].revenue.value(), 200'000);    // 0.02 x 0.1 x 100
  EXPECT_EQ(e.auctions_run(), 1);
  EXPECT_TRUE(e.done());
}

TEST(Engine, ActionsScaleBidsThroughTheSharedFormula) {
  const Day day = MakeDay({kFour}, 4);
  const Market m = MakeMarket({0, 1, 1, 1}, 2);
  AuctionEngine e(day, m, Rules(), 0.9, {});
  ActionTable a(2, 1);
  a.set(0, 0, -0.8);  // A bids 0.2 -> eCPM 20000: drops to last
  e.RunToEnd(a);
  const auto& o = e.advertiser_outcomes();
  EXPECT_EQ(o[0].impressions, 0);
  EXPECT_EQ(o[3].cost.value(), 20000);  // D now third, pays A's adjusted eCPM
}

// An engine reads the day's precomputation from the index it is given (the training loop shares
// one per day across every evaluation), builds its own without one, and does not use an index
// whose sizes are another day's.
TEST(Engine, ReadsTheSharedDayIndexItIsGivenAndIgnoresAnotherDays) {
  const Day day = MakeDay({kFour}, 4);
  const Market m = MakeMarket({0, 1, 1, 1}, 2);
  ActionTable a(2, 1);
  a.set(0, 0, -0.8);  // agent 0 (advertiser A) shades
  const std::shared_ptr<const DayIndex> index = IndexDay(day, m);
  EXPECT_EQ(index->cand_agent, (std::vector<uint16_t>{0, 1, 1, 1}));
  EXPECT_EQ(index->cand_bratio, (std::vector<double>{1, 1, 1, 1}));  // average pCVR unknown
  EXPECT_EQ(index->req_cluster, (std::vector<uint16_t>{0}));

  AuctionEngine own(day, m, Rules(), 0.9, {});
  AuctionEngine shared(day, m, Rules(), 0.9, {}, AuctionEngine::kDefaultBurnBuckets, index);
  const Day other = MakeDay({{{0, 1.0, 0.1}, {1, 0.5, 0.1}}}, 4);
  AuctionEngine mismatched(day, m, Rules(), 0.9, {}, AuctionEngine::kDefaultBurnBuckets,
                           IndexDay(other, m));
  for (AuctionEngine* e : {&own, &shared, &mismatched}) e->RunToEnd(a);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(shared.advertiser_outcomes()[k].cost, own.advertiser_outcomes()[k].cost) << k;
    EXPECT_EQ(mismatched.advertiser_outcomes()[k].cost, own.advertiser_outcomes()[k].cost) << k;
  }
  EXPECT_EQ(own.advertiser_outcomes()[0].impressions, 0);  // A shaded out of the slots

  // What the engine reads is the index: one that puts A in agent 1 leaves A unshaded.
  auto moved = std::make_shared<DayIndex>(*index);
  moved->cand_agent[0] = 1;
  AuctionEngine read(day, m, Rules(), 0.9, {}, AuctionEngine::kDefaultBurnBuckets, moved);
  read.RunToEnd(a);
  EXPECT_EQ(read.advertiser_outcomes()[0].impressions, 1);
}

TEST(Engine, LastWinnerPaysReserve) {
  const Day day = MakeDay({{{0, 1.0, 0.1}, {1, 0.5, 0.1}}}, 2);
  const Market m = MakeMarket({0, 0}, 1);
  AuctionEngine e(day, m, Rules(/*reserve_cpm=*/10), 0.9, {});  // 10 units CPM = 10000 micros
  e.RunToEnd(ActionTable(1, 1));
  EXPECT_EQ(e.advertiser_outcomes()[1].cost.value(), 10000);
  EXPECT_EQ(e.advertiser_outcomes()[0].cost.value(), 50000);
}

TEST(Engine, BidIsCappedAtTheBudgetLeftAndSpendNeverExceedsIt) {
  const Day day = MakeDay({kFour, kFour, kFour}, 4);
  const Market m = MakeMarket({0, 0, 0, 0}, 1);
  std::vector<Micros> budgets(4, Micros(1'000'000'000));
  budgets[0] = Micros(60000);
  AuctionEngine e(day, m, Rules(), 0.9, budgets);
  e.RunToEnd(ActionTable(1, 1));
  const auto& o = e.advertiser_outcomes();
  // Request 1: A capped to eCPM 60000, still first, pays 50000. Request 2: A capped to 10000,
  // fourth: loses, and sets D's price. Request 3: same.
  EXPECT_EQ(o[0].cost.value(), 50000);
  EXPECT_EQ(o[0].impressions, 1);
  EXPECT_LE(o[0].cost, budgets[0]);
  EXPECT_EQ(o[3].impressions, 2);
  EXPECT_EQ(o[3].cost.value(), 20000);
}

TEST(Engine, AdvertiserLeavesTheDayOnceItsBudgetIsSpent) {
  const Day day = MakeDay({kFour, kFour}, 4);
  const Market m = MakeMarket({0, 0, 0, 0}, 1);
  std::vector<Micros> budgets(4, Micros(1'000'000'000));
  budgets[0] = Micros(50000);
  AuctionEngine e(day, m, Rules(), 0.9, budgets);
  e.RunToEnd(ActionTable(1, 1));
  const auto& o = e.advertiser_outcomes();
  // Capped to eCPM 50000, ties with C and wins the tie (lower id), pays C's 50000: spent.
  EXPECT_EQ(o[0].cost.value(), 50000);
  EXPECT_EQ(o[0].auctions, 1);  // gone for the second request
}

TEST(Engine, ABudgetBelowTheFloorStaysButCannotWin) {
  Day day = MakeDay({kFour, kFour}, 4);
  day.floor_cpm = {0, 20'000'000};  // the second request's floor: 20 units CPM = 20000/imp
  const Market m = MakeMarket({0, 0, 0, 0}, 1);
  std::vector<Micros> budgets(4, Micros(1'000'000'000));
  budgets[0] = Micros(60000);
  AuctionEngine e(day, m, Rules(), 0.9, budgets);
  e.RunToEnd(ActionTable(1, 1));
  const auto& o = e.advertiser_outcomes();
  EXPECT_EQ(o[0].cost.value(), 50000);
  EXPECT_EQ(o[0].auctions, 2);          // still bids: 10000 left
  EXPECT_EQ(o[0].impressions, 1);       // but its capped eCPM 10000 is below the floor
  EXPECT_EQ(o[3].cost.value(), 20000);  // D is last and pays the floor
}

TEST(Engine, ZeroBudgetNeverBids) {
  const Day day = MakeDay({kFour}, 4);
  const Market m = MakeMarket({0, 0, 0, 0}, 1);
  std::vector<Micros> budgets(4, Micros(1'000'000'000));
  budgets[0] = Micros(0);
  AuctionEngine e(day, m, Rules(), 0.9, budgets);
  e.RunToEnd(ActionTable(1, 1));
  EXPECT_EQ(e.advertiser_outcomes()[0].auctions, 0);
  EXPECT_EQ(e.advertiser_outcomes()[0].cost.value(), 0);
}

TEST(Engine, StepsPairTotalsAndD) {
  // Two steps; agent 0 = {A}, agent 1 = {B, C, D}.
  const Day day = MakeDay({kFour, kFour}, 4, 2, {0, 1});
  const Market m = MakeMarket({0, 1, 1, 1}, 2, 2);
  AuctionEngine e(day, m, Rules(), 0.9, {});
  e.RunStep(ActionTable(2, 1));
  EXPECT_EQ(e.step(), 1);
  EXPECT_FALSE(e.done());
  EXPECT_DOUBLE_EQ(e.last_d()[0], 0.25);
  EXPECT_DOUBLE_EQ(e.last_d()[1], 0.75);
  EXPECT_EQ(e.last_step_revenue()[0].value(), 1'000'000);
  e.RunStep(ActionTable(2, 1));
  EXPECT_TRUE(e.done());
  EXPECT_EQ(e.pair_cost()[0].value(), 100000);
  EXPECT_EQ(e.pair_cost()[1].value(), 140000);
  e.Reset(0);
  EXPECT_EQ(e.step(), 0);
  EXPECT_EQ(e.pair_cost()[0].value(), 0);
}

TEST(Engine, SlotFactorsDiscountLowerSlots) {
  const Day day = MakeDay({kFour}, 4);
  const Market m = MakeMarket({0, 0, 0, 0}, 1);
  AuctionConfig a = Rules();
  a.slot_ctr_factors = {1.0, 0.5, 0.25};
  AuctionEngine e(day, m, a, 0.9, {});
  e.RunToEnd(ActionTable(1, 1));
  EXPECT_EQ(e.advertiser_outcomes()[2].cost.value(), 20000);
  EXPECT_DOUBLE_EQ(e.advertiser_outcomes()[2].clicks, 0.05);
}

TEST(Engine, BudgetsAreAFractionOfUnlimitedManualCost) {
  const Day day = MakeDay({kFour, kFour, kFour}, 4);
  const Market m = MakeMarket({0, 0, 0, 0}, 1);
  const auto b = ComputeBudgets(day, m, Rules(), 1.0 / 3);
  EXPECT_EQ(b[0].value(), 50000);  // 3 x 50000 / 3
  EXPECT_EQ(b[3].value(), 0);
}

}  // namespace
}  // namespace rtb::sim

namespace rtb::sim {
namespace {

// Everything an engine reports after a day, for bit-for-bit comparison.
struct DayRecord {
  std::vector<Outcome> adv;
  std::vector<std::vector<double>> d_per_step;
  std::vector<Micros> pair_cost, pair_revenue;
  std::vector<std::vector<double>> burn;
  std::vector<int64_t> req_revenue, req_cost;
  int64_t auctions = 0;
  int64_t simd_requests = 0;  // requests the vector path bid and ranked
};

DayRecord RunBothWays(AuctionEngine& e, const std::vector<ActionTable>& steps, bool simd) {
  e.UseSimd(simd);
  e.TrackRequests(true);
  e.Reset(7);
  DayRecord r;
  for (size_t s = 0; !e.done(); ++s) {
    e.RunStep(steps[s % steps.size()]);
    r.d_per_step.push_back(e.last_d());
  }
  r.adv = e.advertiser_outcomes();
  r.pair_cost = e.pair_cost();
  r.pair_revenue = e.pair_revenue();
  r.burn = e.BudgetBurn();
  r.req_revenue = e.request_revenue();
  r.req_cost = e.request_cost();
  r.auctions = e.auctions_run();
  r.simd_requests = e.simd_requests();
  return r;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void ExpectSameDay(const DayRecord& v, const DayRecord& s) {
  ASSERT_EQ(v.adv.size(), s.adv.size());
  int64_t impressions = 0;
  for (size_t k = 0; k < v.adv.size(); ++k) {
    EXPECT_EQ(v.adv[k].auctions, s.adv[k].auctions) << "advertiser " << k;
    EXPECT_EQ(v.adv[k].impressions, s.adv[k].impressions) << "advertiser " << k;
    EXPECT_TRUE(SameBits(v.adv[k].clicks, s.adv[k].clicks)) << "advertiser " << k;
    EXPECT_TRUE(SameBits(v.adv[k].conversions, s.adv[k].conversions)) << "advertiser " << k;
    EXPECT_EQ(v.adv[k].cost, s.adv[k].cost) << "advertiser " << k;
    EXPECT_EQ(v.adv[k].revenue, s.adv[k].revenue) << "advertiser " << k;
    impressions += s.adv[k].impressions;
  }
  EXPECT_GT(impressions, 0);
  EXPECT_EQ(v.auctions, s.auctions);
  EXPECT_EQ(v.pair_cost, s.pair_cost);
  EXPECT_EQ(v.pair_revenue, s.pair_revenue);
  EXPECT_EQ(v.req_revenue, s.req_revenue);
  EXPECT_EQ(v.req_cost, s.req_cost);
  ASSERT_EQ(v.d_per_step.size(), s.d_per_step.size());
  for (size_t t = 0; t < v.d_per_step.size(); ++t) {
    for (size_t p = 0; p < v.d_per_step[t].size(); ++p) {
      EXPECT_TRUE(SameBits(v.d_per_step[t][p], s.d_per_step[t][p])) << "step " << t;
    }
  }
  ASSERT_EQ(v.burn.size(), s.burn.size());
  for (size_t i = 0; i < v.burn.size(); ++i) {
    for (size_t b = 0; b < v.burn[i].size(); ++b) {
      EXPECT_TRUE(SameBits(v.burn[i][b], s.burn[i][b]) ||
                  (std::isnan(v.burn[i][b]) && std::isnan(s.burn[i][b])));
    }
  }
}

SimulatorConfig SmallWorld() {
  SimulatorConfig c;
  c.world.advertisers = 300;
  c.world.consumers = 2000;
  c.day.requests = 6000;
  return c;
}

// Tables that clip (|a x bratio| > range), shade, raise, and one with a NaN and an infinity
// (Alpha gives 0 for a product that is not finite).
std::vector<ActionTable> Tables(int agents, int clusters, uint64_t seed) {
  Rng rng(seed);
  std::vector<ActionTable> out;
  for (int t = 0; t < 3; ++t) {
    ActionTable a(agents, clusters);
    for (int i = 0; i < agents; ++i) {
      for (int j = 0; j < clusters; ++j) a.set(i, j, (rng.Uniform() * 2 - 1) * 2.5);
    }
    out.push_back(a);
  }
  out[1].set(0, 0, std::numeric_limits<double>::quiet_NaN());
  out[1].set(agents - 1, clusters - 1, std::numeric_limits<double>::infinity());
  return out;
}

// The AVX-512 path (bids 8 candidates at a time, ranks by vector compares) against the scalar
// loop: every outcome, presence, burn and per-request figure has the same bits, with budgets
// that run out (bids capped, advertisers leaving), floors, sampled outcomes and slot factors.
TEST(EngineSimd, GivesTheScalarLoopsOutcomesBitForBit) {
  for (int variant = 0; variant < 5; ++variant) {
    SimulatorConfig cfg = SmallWorld();
    cfg.seed = 3 + static_cast<uint64_t>(variant);
    if (variant == 1 || variant == 4) cfg.auction.outcomes = "sampled";
    if (variant == 2) cfg.auction.slot_ctr_factors = {1.0, 0.7, 0.5};
    if (variant >= 3) cfg.market.budget_fraction = 0.05;  // most budgets run out early
    auto sc = BuildScenario(cfg, "", "", false);
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    const Scenario& s = **sc;
    AuctionEngine e(s.test, s.market, s.cfg.auction, s.cfg.market.alpha_range, s.test_budgets);
    if (!e.UseSimd(true)) GTEST_SKIP() << "no AVX-512 on this CPU: only the scalar loop runs";
    const auto tables = Tables(s.market.agents, s.market.clusters, 11 + variant);
    SCOPED_TRACE("variant " + std::to_string(variant));
    const DayRecord vec = RunBothWays(e, tables, true), scalar = RunBothWays(e, tables, false);
    ExpectSameDay(vec, scalar);
    // Every request went through the vector path (none has more than 64 candidates), and none
    // through it with the vector path off.
    EXPECT_EQ(vec.simd_requests, static_cast<int64_t>(s.test.requests()));
    EXPECT_EQ(scalar.simd_requests, 0);
    // Unlimited budgets too (no cap, nobody leaves).
    AuctionEngine u(s.test, s.market, s.cfg.auction, s.cfg.market.alpha_range, {});
    ExpectSameDay(RunBothWays(u, tables, true), RunBothWays(u, tables, false));
  }
}

// Hand-made requests at the edges: eCPM ties (broken by advertiser id, then by order), an
// advertiser twice in one request, no candidates, 61 to 65 and 70 candidates (more than 64: the
// scalar loop takes them), a bid of 2^52 micros or more (the scalar loop's rounding takes it),
// bids whose adjusted value ends in exactly .5 (rounded away from zero), eCPMs equal to the
// reserve, 8 agents (every lane of the action vector), tight budgets.
TEST(EngineSimd, TheEdgesGiveTheScalarLoopsOutcomes) {
  std::vector<std::vector<Cand>> reqs;
  int64_t vector_requests = 0;
  for (int r = 0; r < 60; ++r) {
    std::vector<Cand> cands;
    int n = 3 + r % 17;
    if (r == 7) n = 70;
    if (r >= 10 && r <= 14) n = 61 + (r - 10);
    if (r == 20) n = 0;
    for (int q = 0; q < n; ++q) {
      const auto adv = static_cast<uint32_t>((q * 7 + r) % 24);
      // 0.500001 units = 500001 micros: x 1.5 ends in .5.
      const double bid = q % 4 == 3 ? 0.500001 : 0.5 + (q % 3) * 0.25;
      cands.push_back({adv, bid, q % 2 == 0 ? 0.1 : 0.05});
    }
    if (n > 0) cands.push_back(cands.front());    // the same advertiser and bid twice
    if (r == 30) cands.push_back({5, 5e9, 0.1});  // 5e15 micros: past 2^52
    if (r >= 40 && r < 50) {
      // The runner-up's eCPM is the winner's price: 500001 x 1.5 x pCTR 1 = 750001.5 micros,
      // so the winner pays 750002 (half away from zero) or, rounded otherwise, 750001.
      cands = {{static_cast<uint32_t>(r % 24), 2.0, 1.0},
               {static_cast<uint32_t>((r + 1) % 24), 0.500001, 1.0}};
    }
    const bool vector = cands.size() <= 64 && r != 30;
    vector_requests += vector ? 1 : 0;
    reqs.push_back(cands);
  }
  const Day day = MakeDay(reqs, 24);
  for (const int agents : {3, 8}) {
    std::vector<uint16_t> agent_of(24);
    for (size_t k = 0; k < agent_of.size(); ++k) agent_of[k] = static_cast<uint16_t>(k % agents);
    const Market m = MakeMarket(agent_of, agents);
    ActionTable half(agents, 1);
    for (int i = 0; i < agents; ++i) half.set(i, 0, 0.5);
    // 100 CPM = 100000 micros per impression: a 1.0-unit bid at pCTR 0.1, unadjusted.
    for (const double reserve_cpm : {0.0, 100.0}) {
      for (const Micros budget : {Micros::FromUnits(0.2), Micros::FromUnits(5.0)}) {
        AuctionEngine e(day, m, Rules(reserve_cpm), 0.9, std::vector<Micros>(24, budget));
        if (!e.UseSimd(true)) GTEST_SKIP() << "no AVX-512 on this CPU";
        for (const auto& tables : {std::vector<ActionTable>{ActionTable(agents, 1)},
                                   std::vector<ActionTable>{half}, Tables(agents, 1, 5)}) {
          SCOPED_TRACE("agents " + std::to_string(agents) + " reserve " +
                       std::to_string(reserve_cpm) + " budget " + std::to_string(budget.value()));
          const DayRecord vec = RunBothWays(e, tables, true);
          ExpectSameDay(vec, RunBothWays(e, tables, false));
          EXPECT_EQ(vec.simd_requests, vector_requests);
        }
      }
    }
  }
}

}  // namespace
}  // namespace rtb::sim

namespace rtb::sim {
namespace {

using testing::Cand;
using testing::MakeDay;
using testing::MakeMarket;

// Budgets served by several bidders (AuctionEngine::SplitBudgets). One slot; every request
// holds A (eCPM 100000), C (50000) and D (30000); A's budget, 105000, covers one bid whole and
// a second that pays C's 50000, but not three bidders' worth of whole bids.
TEST(EngineSplit, EachBidderBidsWithItsPieceOfTheBudgetLeft) {
  std::vector<std::vector<Cand>> reqs(30, {{0, 1.0, 0.1}, {2, 0.5, 0.1}, {3, 0.3, 0.1}});
  const Day day = MakeDay(reqs, 4);
  const Market m = MakeMarket({0, 0, 0, 0}, 1);
  AuctionConfig rules;
  rules.slots = 1;
  std::vector<Micros> budgets(4, Micros(1'000'000'000));
  budgets[0] = Micros(105'000);
  using Rule = AuctionEngine::SplitRule;
  auto run = [&](int bidders, Rule rule) {
    AuctionEngine e(day, m, rules, 0.9, budgets);
    e.SplitBudgets(bidders, rule, 5);
    e.RunToEnd(ActionTable(1, 1));
    EXPECT_LE(e.advertiser_outcomes()[0].cost, budgets[0]);
    return e.advertiser_outcomes()[0];
  };
  // One bidder: two wins at C's price, then 5000 left, which beats nobody.
  const Outcome one = run(1, Rule::kEven);
  EXPECT_EQ(one.impressions, 2);
  EXPECT_EQ(one.cost.value(), 100'000);
  // Three equal pieces of 35000: A's bid, capped to its piece, never beats C.
  EXPECT_EQ(run(3, Rule::kEven).impressions, 0);
  // Whole bids: a third of the requests find the bidder holding the whole bid (the others 5000
  // or nothing): the same two wins as one bidder, later in the day.
  for (const Rule rule : {Rule::kWhole, Rule::kWholeMean}) {
    const Outcome whole = run(3, rule);
    EXPECT_EQ(whole.impressions, 2);
    EXPECT_EQ(whole.cost.value(), 100'000);
  }
}

// One bidder is the engine's usual rule; and budgets that hold every bidder's whole bids all day
// are played the same by any number of bidders, under every rule.
TEST(EngineSplit, SplittingBudgetsThatHoldEveryBiddersBidsChangesNothing) {
  SimulatorConfig cfg = SmallWorld();
  auto sc = BuildScenario(cfg, "", "", false);
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  const Scenario& s = **sc;
  const auto tables = Tables(s.market.agents, s.market.clusters, 19);
  AuctionEngine base(s.test, s.market, s.cfg.auction, s.cfg.market.alpha_range, s.test_budgets);
  const DayRecord usual = RunBothWays(base, tables, false);
  AuctionEngine one(s.test, s.market, s.cfg.auction, s.cfg.market.alpha_range, s.test_budgets);
  one.SplitBudgets(1, AuctionEngine::SplitRule::kWhole, 3);
  ExpectSameDay(RunBothWays(one, tables, false), usual);

  std::vector<Micros> deep = s.test_budgets;
  for (Micros& b : deep) b = Micros(b.value() * 1000);
  AuctionEngine whole(s.test, s.market, s.cfg.auction, s.cfg.market.alpha_range, deep);
  const DayRecord alone = RunBothWays(whole, tables, false);
  for (const auto rule : {AuctionEngine::SplitRule::kEven, AuctionEngine::SplitRule::kWhole,
                          AuctionEngine::SplitRule::kWholeMean}) {
    AuctionEngine split(s.test, s.market, s.cfg.auction, s.cfg.market.alpha_range, deep);
    split.SplitBudgets(3, rule, 3);
    ExpectSameDay(RunBothWays(split, tables, false), alone);
  }
  // Small budgets do change: three bidders' equal pieces lower the bids that run out.
  AuctionEngine even(s.test, s.market, s.cfg.auction, s.cfg.market.alpha_range, s.test_budgets);
  even.SplitBudgets(3, AuctionEngine::SplitRule::kEven, 3);
  const DayRecord split = RunBothWays(even, tables, false);
  int64_t cost_usual = 0, cost_split = 0;
  for (size_t k = 0; k < usual.adv.size(); ++k) {
    cost_usual += usual.adv[k].cost.value();
    cost_split += split.adv[k].cost.value();
    EXPECT_LE(split.adv[k].cost, s.test_budgets[k]) << "advertiser " << k;
  }
  EXPECT_NE(cost_usual, cost_split);
}

}  // namespace
}  // namespace rtb::sim
