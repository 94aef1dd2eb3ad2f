#include "rtb/learner/step_merge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <limits>

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

}  // namespace
}  // namespace rtb::learn
