#include "rtb/learner/step_merge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <limits>

#include "rtb/learner/goal_reward.h"
#include "rtb/learner/replay_store.h"

namespace rtb::learn {
namespace {

constexpr int64_t kHour = 3'600'000;

Event Ev(const std::string& type, const std::string& eid, int64_t sim_ms, int agent, int cluster,
         int64_t price = 0) {
  Event e;
  e.type = type;
  e.eid = eid;
  e.sim_ms = sim_ms;
  e.agent = agent;
  e.cluster = cluster;
  e.price_micros = price;
  e.charged = type == "billing";
  return e;
}

TEST(StepMerger, MergesPerStepPairAndDropsRepeatsAndLateEvents) {
  StepMerger m(/*agents=*/2, /*clusters=*/3, kHour);
  Event bid = Ev("bid", "b-1", 10, 1, 2);
  bid.computed = {4, 6};
  EXPECT_EQ(m.Add(bid), MergeResult::kMerged);
  EXPECT_EQ(m.Add(Ev("billing", "b-2", 20, 1, 2, 1'500'499)), MergeResult::kMerged);
  EXPECT_EQ(m.Add(Ev("billing", "b-2", 20, 1, 2, 1'500'499)), MergeResult::kDuplicate);
  EXPECT_EQ(m.Add(Ev("conversion", "b-3", 30, 0, -1, 7'000'000)), MergeResult::kMerged);
  Event test = Ev("billing", "b-4", 40, 0, 0, 1'000'000);
  test.test = true;
  EXPECT_EQ(m.Add(test), MergeResult::kIgnored);
  EXPECT_EQ(m.Add(Ev("billing", "b-5", kHour + 5, 0, 1, 2'000'000)), MergeResult::kMerged);
  EXPECT_EQ(m.EventsIn({0, 0}), 3);
  EXPECT_EQ(m.EventsIn({0, 1}), 1);

  const StepTotals t = m.Close({0, 0});
  EXPECT_EQ(t.cost_micros[1 * 3 + 2], 1'500);         // CPM 1.500499 -> 1500 micros (rounded)
  EXPECT_EQ(t.revenue_micros[0 * 3 + 0], 7'000'000);  // unknown cluster booked to 0
  EXPECT_EQ(t.unattributed, 1);
  EXPECT_EQ(t.computed[0 * 3 + 2], 4);
  EXPECT_EQ(t.computed[1 * 3 + 2], 6);
  EXPECT_EQ(t.TotalCost(), 1'500);
  EXPECT_EQ(t.TotalRevenue(), 7'000'000);
  EXPECT_EQ(t.count_by_type.at("billing"), 1);
  // Closed: a straggler of step 0 is late; step 1 is still open.
  EXPECT_EQ(m.Add(Ev("conversion", "b-6", 50, 0, 0, 1)), MergeResult::kLate);
  EXPECT_EQ(m.late(), 1);
  EXPECT_EQ(m.duplicates(), 1);
  EXPECT_EQ(m.EventsIn({0, 1}), 1);
  // The wall clock buckets events without a simulated time.
  Event wall = Ev("bid", "w-1", -1, 0, 0);
  wall.ts_ms = 86'400'000 * 3 + 2 * kHour + 1;
  EXPECT_EQ(m.KeyOf(wall), (StepKey{3, 2}));
}

// The A/B test's manual arm is the control: its events count towards the step (the exchange's
// marker counts every event) but its spend, revenue and computations are not the learner's.
TEST(StepMerger, ManualArmEventsCountButAreNotLearnedFrom) {
  StepMerger m(/*agents=*/2, /*clusters=*/3, kHour);
  Event bid = Ev("bid", "m-1", 10, 1, 2);
  bid.computed = {4, 6};
  bid.arm = Arm::kManual;
  Event bill = Ev("billing", "m-2", 20, 1, 2, 1'500'000);
  bill.arm = Arm::kManual;
  Event conv = Ev("conversion", "m-3", 30, 1, 2, 9'000'000);
  conv.arm = Arm::kManual;
  for (const Event& e : {bid, bill, conv}) EXPECT_EQ(m.Add(e), MergeResult::kMerged);
  EXPECT_EQ(m.Add(Ev("billing", "l-1", 40, 1, 2, 2'000'000)), MergeResult::kMerged);
  EXPECT_EQ(m.EventsIn({0, 0}), 4);
  const StepTotals t = m.Close({0, 0});
  EXPECT_EQ(t.manual_arm, 3);
  EXPECT_EQ(t.TotalCost(), 2'000);  // the learned arm's billing only
  EXPECT_EQ(t.TotalRevenue(), 0);
  EXPECT_EQ(t.computed[1 * 3 + 2], 0);
}

TEST(StepMerger, JsonRoundTripKeepsOpenStepsAndDedupe) {
  StepMerger m(2, 2, kHour);
  m.Add(Ev("billing", "x-1", kHour + 1, 1, 1, 3'000'000));
  m.Close({0, 0});
  auto back = StepMerger::FromJson(m.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->Add(Ev("billing", "x-1", kHour + 1, 1, 1, 3'000'000)), MergeResult::kDuplicate);
  EXPECT_EQ(back->Add(Ev("billing", "x-0", 5, 1, 1, 3'000'000)), MergeResult::kLate);
  EXPECT_EQ(back->Close({0, 1}).cost_micros[3], 3'000);
  EXPECT_FALSE(StepMerger::FromJson("{\"agents\": 2}").ok());
  EXPECT_FALSE(StepMerger::FromJson("not json").ok());
}

TEST(ReplayMetadata, WrittenWithTheTransitionAndReadBack) {
  const std::string dir = ::testing::TempDir() + "/replay_meta_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  {
    auto s = OpenRocksDbReplayStore(dir);
    ASSERT_TRUE(s.ok());
    Transition t;
    t.s = {1, 2};
    t.r = {0.5};
    ASSERT_TRUE((*s)->Append(t, {{"online", "{\"pos\": 7}"}, {"step:0:1", "x"}}).ok());
    ASSERT_TRUE((*s)->PutMeta({{"imported", "0"}}).ok());
    EXPECT_EQ((*s)->GetMeta("missing").status().code(), Status::Code::kNotFound);
  }
  auto s = OpenRocksDbReplayStore(dir);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->NextSeq(), 1u);
  EXPECT_EQ(*(*s)->GetMeta("online"), "{\"pos\": 7}");
  EXPECT_EQ(*(*s)->GetMeta("step:0:1"), "x");
  EXPECT_EQ(*(*s)->GetMeta("imported"), "0");
  std::filesystem::remove_all(dir);
  auto mem = NewMemoryReplayStore();
  ASSERT_TRUE(mem->Append(Transition{}, {{"k", "v"}}).ok());
  EXPECT_EQ(*mem->GetMeta("k"), "v");
}

// Sums saturate at int64's end instead of wrapping, and the step says so (its transition is
// then not learned from).
TEST(StepMerger, ASumAboveInt64SaturatesAndFlagsTheStep) {
  StepMerger m(/*agents=*/1, /*clusters=*/1, kHour);
  const int64_t big = std::numeric_limits<int64_t>::max() - 10;
  EXPECT_EQ(m.Add(Ev("conversion", "c-1", 10, 0, 0, big)), MergeResult::kMerged);
  EXPECT_EQ(m.Add(Ev("conversion", "c-2", 10, 0, 0, big)), MergeResult::kMerged);
  const StepTotals t = m.Close({0, 0});
  EXPECT_TRUE(t.overflow);
  EXPECT_EQ(t.revenue_micros[0], std::numeric_limits<int64_t>::max());
  auto back = StepMerger::FromJson(m.ToJson());
  ASSERT_TRUE(back.ok());
  StepMerger clean(1, 1, kHour);
  EXPECT_EQ(clean.Add(Ev("billing", "b-1", 10, 0, 0, 1'499)), MergeResult::kMerged);
  const StepTotals c = clean.Close({0, 0});
  EXPECT_FALSE(c.overflow);
  EXPECT_EQ(c.cost_micros[0], 1);  // (1499 + 500) / 1000, as before
}

TEST(StepMerger, KeepsEachAdvertisersSpendConversionsAndValueForGoalRewards) {
  StepMerger m(/*agents=*/2, /*clusters=*/2, kHour);
  auto at = [](Event e, int64_t adv, double count = 1) {
    e.advertiser = adv;
    e.count = count;
    return e;
  };
  EXPECT_EQ(m.Add(at(Ev("billing", "a-1", 10, 0, 1, 2'000'000), 7)), MergeResult::kMerged);
  EXPECT_EQ(m.Add(at(Ev("billing", "a-2", 11, 0, 0, 3'000'000), 7)), MergeResult::kMerged);
  EXPECT_EQ(m.Add(at(Ev("conversion", "a-3", 12, 0, 1, 900'000), 7, 0.25)), MergeResult::kMerged);
  EXPECT_EQ(m.Add(at(Ev("conversion", "a-4", 13, 1, 1, 5'000'000), 9)), MergeResult::kMerged);
  Event manual = at(Ev("billing", "a-5", 14, 0, 1, 4'000'000), 7);
  manual.arm = Arm::kManual;  // the A/B test's control: not learned from
  EXPECT_EQ(m.Add(manual), MergeResult::kMerged);
  // An open step's per-advertiser totals survive a restart.
  auto back = StepMerger::FromJson(m.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  const StepTotals t = back->Close({0, 0});
  ASSERT_EQ(t.by_advertiser.size(), 2u);
  EXPECT_EQ(t.by_advertiser.at(7).cost_micros, 5'000);  // CPMs 2 and 3: 2,000 + 3,000 micros
  EXPECT_DOUBLE_EQ(t.by_advertiser.at(7).conversions, 0.25);
  EXPECT_EQ(t.by_advertiser.at(7).value_micros, 900'000);
  EXPECT_EQ(t.by_advertiser.at(9).value_micros, 5'000'000);
  EXPECT_NE(t.SummaryJson().find("\"by_advertiser\":[[7,5000,0.25,900000]"), std::string::npos)
      << t.SummaryJson();
}

// Target CPA 10 (advertiser 7, agent 0), target ROAS 2 (advertiser 8, agent 1), revenue
// (advertiser 9, agent 1, not in goals): worked by hand.
TEST(GoalRewards, StepWorthEachStepAndTheShortfallOnTheDaysLastStep) {
  std::map<int64_t, AgentGoal> goals;
  goals[7] = {0, *MakeGoal("conversions", 10.0, 0)};
  goals[8] = {1, *MakeGoal("value", 0, 2.0)};
  std::map<int64_t, AdvertiserTotals> day;
  // Step 0: advertiser 7 spends 20 for 2 conversions worth 50; 8 spends 10 for value 30; 9's
  // revenue 4 is in agent 1's rewards already (with 8's 30).
  std::vector<double> r{50.0, 34.0};
  ApplyGoalRewards(goals, {{7, {20'000'000, 2, 50'000'000}}, {8, {10'000'000, 1, 30'000'000}}},
                   false, &day, &r);
  EXPECT_DOUBLE_EQ(r[0], 20.0);  // 50 of value replaced by target x conversions, 10 x 2
  EXPECT_DOUBLE_EQ(r[1], 34.0);  // ROAS: the step is worth its value
  // Step 1, the day's last: 7 spends 30 more and converts no more: CPA 25 against 10, score
  // 2 x (10 / 25)^2 = 0.32 conversions, worth 3.2 against the 20 paid so far: -16.8. 8 spends
  // 10 more for value 10: ROAS 40 / 20 = 2, met: no shortfall.
  r = {0.0, 10.0};
  ApplyGoalRewards(goals, {{7, {30'000'000, 0, 0}}, {8, {10'000'000, 0.5, 10'000'000}}}, true, &day,
                   &r);
  EXPECT_NEAR(r[0], 3.2 - 20.0, 1e-9);
  EXPECT_DOUBLE_EQ(r[1], 10.0);
  EXPECT_EQ(day.at(7).cost_micros, 50'000'000);
  EXPECT_DOUBLE_EQ(day.at(8).conversions, 1.5);
  // A ROAS day below target: value 30 for 30 spent against target 2: score 30 x (1/2)^2 = 7.5.
  std::map<int64_t, AdvertiserTotals> short_day;
  r = {0.0, 30.0};
  ApplyGoalRewards(goals, {{8, {30'000'000, 1, 30'000'000}}}, true, &short_day, &r);
  EXPECT_DOUBLE_EQ(r[1], 7.5);
  // An agent outside the rewards is skipped; an advertiser with no outcome still gets its
  // shortfall (none: a day without spend meets a CPA target).
  goals[11] = {5, *MakeGoal("conversions", 10.0, 0)};
  r = {0.0, 0.0};
  std::map<int64_t, AdvertiserTotals> empty;
  ApplyGoalRewards(goals, {}, true, &empty, &r);
  EXPECT_DOUBLE_EQ(r[0], 0.0);
  EXPECT_DOUBLE_EQ(r[1], 0.0);
}

}  // namespace
}  // namespace rtb::learn
