// The multi-agent environment (docs/dcmab.md section 4): one episode = one day of T steps.
//
//   Observation o = env.Reset(seed);
//   while (!done) { StepResult s = env.Step(table); ... }
//
// The observation carries the state pieces of the paper: g (cumulative cost and revenue per
// (agent, consumer cluster)), x (consumer-cluster features for the coming step) and d (share
// of bid computations per pair in the last step). Values are raw (currency units); the
// learner normalises them (cost by budget, revenue by a fixed scale).
#pragma once

#include <memory>
#include <vector>

#include "rtb/core/goal.h"
#include "rtb/simulator/engine.h"

namespace rtb::sim {

struct Observation {
  int step = 0;                   // the step about to be played (T when done)
  std::vector<double> g_cost;     // [i*L+j], currency units
  std::vector<double> g_revenue;  // [i*L+j], currency units
  std::vector<double> x;          // [j*(L+2) + ...]: onehot_L(j), revenue_hist_j, cost_hist_j
  std::vector<double> d;          // [i*L+j], sums to 1 (or all 0 when nothing was bid)
};

// The observation at `step` of a day from its pieces (the environment and the online learner
// share it): cumulative cost/revenue per pair, the last step's d, x from the market history.
Observation MakeObservation(const Market& m, int step, std::vector<double> g_cost,
                            std::vector<double> g_revenue, std::vector<double> d);
// Per agent budget (currency units): the sum of its advertisers' budgets.
std::vector<double> AgentBudgets(const Market& m, const std::vector<Micros>& budgets);

struct StepResult {
  Observation next;
  // Per agent, currency units: its advertisers' revenue in the step; with goals (SetGoals), each
  // advertiser's StepWorth of the step (a target-CPA one: target CPA x its conversions), and the
  // day's last step adds DayWorth - StepWorth of the day (<= 0, core/goal.h): the rewards of a
  // day sum to the worth of its scores (GoalSummary::value).
  std::vector<double> rewards;
  std::vector<double> agent_revenue;  // per agent revenue of this step (self-interest reward)
  bool done = false;
};

enum class RewardMode { kSelf, kCoordinated };

class MultiAgentEnv {
 public:
  // index: IndexDay(day, market) shared with other engines on the day, or null (engine.h).
  MultiAgentEnv(const Day& day, const Market& market, const AuctionConfig& acfg, double alpha_range,
                std::vector<Micros> budgets, RewardMode mode,
                std::shared_ptr<const DayIndex> index = nullptr);

  Observation Reset(uint64_t seed);
  StepResult Step(const ActionTable& a);
  // Each advertiser's goal (Scenario::goals; must outlive the environment); null or none with a
  // target: rewards are revenue.
  void SetGoals(const std::vector<Goal>* goals);

  int agents() const { return market_.agents; }
  int clusters() const { return market_.clusters; }
  int steps() const { return market_.steps; }
  // Per agent budget, currency units (for normalising cost).
  std::vector<double> AgentBudgets() const;
  const AuctionEngine& engine() const { return engine_; }

 private:
  Observation Observe() const;
  // The agents' goal rewards of the step just played (StepResult::rewards).
  std::vector<double> GoalRewards();
  const Market& market_;
  AuctionEngine engine_;
  RewardMode mode_;
  const std::vector<Goal>* goals_ = nullptr;  // with some target, else null
  std::vector<Outcome> seen_;                 // each advertiser's day so far, at the last step
};

}  // namespace rtb::sim
