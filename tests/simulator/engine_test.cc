#include "rtb/simulator/engine.h"

#include <gtest/gtest.h>

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
