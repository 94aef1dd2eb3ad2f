#include "rtb/core/goal.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rtb {
namespace {

Goal Cpa(double target) { return *MakeGoal("conversions", target, 0); }

TEST(Goal, ACpaDayAtOrUnderTargetScoresItsConversionsAndOverTargetTheSquaredShortfall) {
  // 10 conversions for 80: CPA 8 against a target of 10: met, the full 10.
  GoalScore s = ScoreGoal(Cpa(10), 10, 80, 500);
  EXPECT_DOUBLE_EQ(s.realised, 8);
  EXPECT_DOUBLE_EQ(s.score, 10);
  EXPECT_TRUE(s.met);
  // Exactly at the target: met.
  EXPECT_TRUE(ScoreGoal(Cpa(10), 10, 100, 0).met);
  // 10 for 200: CPA 20, twice the target: 10 x (10 / 20)^2 = 2.5, missed.
  s = ScoreGoal(Cpa(10), 10, 200, 500);
  EXPECT_DOUBLE_EQ(s.realised, 20);
  EXPECT_DOUBLE_EQ(s.score, 2.5);
  EXPECT_FALSE(s.met);
  // Spend and no conversion: no score, missed, CPA undefined; no spend at all: held.
  s = ScoreGoal(Cpa(10), 0, 50, 0);
  EXPECT_TRUE(std::isnan(s.realised));
  EXPECT_EQ(s.score, 0);
  EXPECT_FALSE(s.met);
  EXPECT_TRUE(ScoreGoal(Cpa(10), 0, 0, 0).met);
}

TEST(Goal, ARoasDayIsScoredOnItsValueAndARevenueDayIsItsValue) {
  const Goal roas = *MakeGoal("value", 0, 4);
  GoalScore s = ScoreGoal(roas, 3, 100, 500);  // ROAS 5 >= 4
  EXPECT_DOUBLE_EQ(s.realised, 5);
  EXPECT_DOUBLE_EQ(s.score, 500);
  EXPECT_TRUE(s.met);
  s = ScoreGoal(roas, 3, 100, 200);  // ROAS 2: 200 x (2 / 4)^2 = 50
  EXPECT_DOUBLE_EQ(s.score, 50);
  EXPECT_FALSE(s.met);
  s = ScoreGoal(*MakeGoal("revenue", 0, 0), 3, 100, 200);
  EXPECT_DOUBLE_EQ(s.score, 200);
  EXPECT_TRUE(s.met);
  EXPECT_TRUE(std::isnan(s.realised));
}

TEST(Goal, AContradictoryOrIncompleteGoalIsRefusedNamingTheKey) {
  struct Case {
    const char* kind;
    double cpa, roas;
    const char* error;
  } cases[] = {
      {"conversions", 0, 0, "target_cpa: goal: conversions needs"},
      {"value", 0, 0, "target_roas: goal: value needs"},
      {"revenue", 5, 0, "target_cpa: is the target of goal: conversions, not of goal: revenue"},
      {"conversions", 5, 2, "target_roas: is the target of goal: value, not of goal: conversions"},
      {"value", 5, 2, "target_cpa: is the target of goal: conversions, not of goal: value"},
      {"clicks", 0, 0, "goal: must be revenue, conversions or value, not \"clicks\""},
      {"conversions", -1, 0, "target_cpa: (currency units) must be in [0, 1e9)"},
      {"conversions", 0.0000001, 0, "target_cpa: goal: conversions needs"},  // 0 micros
  };
  for (const Case& c : cases) {
    const auto g = MakeGoal(c.kind, c.cpa, c.roas);
    ASSERT_FALSE(g.ok()) << c.kind;
    EXPECT_EQ(g.status().message().rfind(c.error, 0), 0u) << g.status().message();
  }
  const auto ok = MakeGoal("conversions", 12.5, 0);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->target_cpa.value(), 12'500'000);
  EXPECT_EQ(DescribeGoal(*ok), "CPA <= 12.5");
  EXPECT_EQ(DescribeGoal(*MakeGoal("value", 0, 3)), "ROAS >= 3.00");
}

}  // namespace
}  // namespace rtb
