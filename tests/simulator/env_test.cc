#include "rtb/simulator/env.h"

#include <gtest/gtest.h>

#include <numeric>

#include "rtb/simulator/simulate.h"

namespace rtb::sim {
namespace {

SimulatorConfig Small() {
  SimulatorConfig c;
  c.world.advertisers = 300;
  c.world.consumers = 2000;
  c.day.requests = 5000;
  return c;
}

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto sc = BuildScenario(Small(), "", "", false);
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    sc_ = std::move(*sc);
  }
  std::unique_ptr<Scenario> sc_;
};

TEST_F(EnvTest, EpisodeIsTStepsWithConsistentState) {
  MultiAgentEnv env(sc_->test, sc_->market, sc_->cfg.auction, 0.9, sc_->test_budgets,
                    RewardMode::kSelf);
  Observation o = env.Reset(1);
  EXPECT_EQ(o.step, 0);
  EXPECT_EQ(o.g_cost.size(), 9u);
  EXPECT_EQ(o.x.size(), 3u * 5u);
  EXPECT_EQ(o.x[0], 1.0);  // onehot of cluster 0
  EXPECT_NEAR(std::accumulate(o.d.begin(), o.d.end(), 0.0), 1.0, 1e-9);
  double revenue = 0;
  int steps = 0;
  StepResult s;
  do {
    s = env.Step(ActionTable(3, 3));
    ++steps;
    for (double r : s.rewards) revenue += r;
    EXPECT_NEAR(std::accumulate(s.next.d.begin(), s.next.d.end(), 0.0), 1.0, 1e-9);
  } while (!s.done);
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(s.next.step, 3);
  const double g_rev = std::accumulate(s.next.g_revenue.begin(), s.next.g_revenue.end(), 0.0);
  EXPECT_NEAR(g_rev, revenue, 1e-6);
  const double g_cost = std::accumulate(s.next.g_cost.begin(), s.next.g_cost.end(), 0.0);
  double budget = 0;
  for (double b : env.AgentBudgets()) budget += b;
  EXPECT_LE(g_cost, budget + 1e-6);
  EXPECT_GT(g_cost, 0.95 * budget);
}

TEST_F(EnvTest, CoordinatedRewardIsTheTotalForEveryAgent) {
  MultiAgentEnv env(sc_->test, sc_->market, sc_->cfg.auction, 0.9, sc_->test_budgets,
                    RewardMode::kCoordinated);
  env.Reset(1);
  const StepResult s = env.Step(ActionTable(3, 3));
  const double total = std::accumulate(s.agent_revenue.begin(), s.agent_revenue.end(), 0.0);
  for (double r : s.rewards) EXPECT_DOUBLE_EQ(r, total);
}

// With goals, a target-CPA advertiser earns its agent target x conversions each step and the
// day's last step adds target x (score - conversions): the day's rewards sum to the run's worth
// under the goals (GoalSummary::value). Revenue advertisers keep earning their revenue; without
// goals the rewards are the revenue.
TEST(EnvGoals, ADaysGoalRewardsSumToItsScoresWorthAndEachStepPaysItsConversions) {
  SimulatorConfig c = Small();
  c.world.cpa_share = 0.5;
  auto sc = BuildScenario(c, "", "", false);
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  // A fifth of the revenue advertisers ask for a ROAS they cannot reach: their days are scored
  // down too.
  int roas = 0;
  for (Goal& g : (*sc)->goals) {
    if (g.kind == GoalKind::kRevenue && roas++ % 5 == 0) g = *MakeGoal("value", 0, 1000);
  }
  MultiAgentEnv env((*sc)->test, (*sc)->market, c.auction, 0.9, (*sc)->test_budgets,
                    RewardMode::kSelf);
  env.SetGoals(&(*sc)->goals);
  env.Reset(1);
  // A high bid everywhere: the target-CPA advertisers overpay, so the last step's penalty bites.
  ActionTable high(3, 3);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) high.set(i, j, 1.0f);
  }
  double sum = 0;
  for (bool done = false; !done;) {
    const StepResult s = env.Step(high);
    sum += std::accumulate(s.rewards.begin(), s.rewards.end(), 0.0);
    done = s.done;
  }
  const std::vector<Outcome>& day = env.engine().advertiser_outcomes();
  const GoalSummary g = SummarizeGoals((*sc)->goals, day);
  ASSERT_GT(g.targets, 100);
  EXPECT_GT(g.missed, 0);
  EXPECT_GT(g.roas_score, 0);
  EXPECT_NEAR(sum, g.value, 1e-6 * g.value);
  // Before the last step's penalty: revenue, and target x conversions for a target.
  double unpenalised = 0;
  for (size_t k = 0; k < day.size(); ++k) {
    const Goal& goal = (*sc)->goals[k];
    unpenalised += StepWorth(goal, day[k].conversions, day[k].revenue.units());
  }
  EXPECT_LT(g.value, unpenalised - 1e-6);
  // A world of revenue goals only: SetGoals keeps revenue rewards.
  MultiAgentEnv plain((*sc)->test, (*sc)->market, c.auction, 0.9, (*sc)->test_budgets,
                      RewardMode::kSelf);
  std::vector<Goal> none((*sc)->goals.size());
  plain.SetGoals(&none);
  plain.Reset(1);
  const StepResult q = plain.Step(high);
  EXPECT_EQ(q.rewards, q.agent_revenue);
}

TEST_F(EnvTest, ResetReplaysTheSameEpisode) {
  MultiAgentEnv env(sc_->test, sc_->market, sc_->cfg.auction, 0.9, sc_->test_budgets,
                    RewardMode::kSelf);
  ActionTable a(3, 3);
  a.set(2, 1, -0.5);
  env.Reset(4);
  const auto r1 = env.Step(a).rewards;
  env.Reset(4);
  const auto r2 = env.Step(a).rewards;
  EXPECT_EQ(r1, r2);
}

TEST_F(EnvTest, LowerBidsTogetherStretchTheBudgetAndEarnMore) {
  // The mechanism the paper's agents learn: lowering bids together lowers second prices.
  const RunResult manual = EvaluateTable(*sc_, sc_->test, sc_->test_budgets, ActionTable(3, 3));
  ActionTable low(3, 3);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) low.set(i, j, -0.6);
  }
  const RunResult shaded = EvaluateTable(*sc_, sc_->test, sc_->test_budgets, low);
  EXPECT_GT(shaded.total.revenue.value(), manual.total.revenue.value() * 3 / 2);
}

}  // namespace
}  // namespace rtb::sim
