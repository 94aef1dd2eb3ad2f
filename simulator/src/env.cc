#include "rtb/simulator/env.h"

#include <algorithm>

namespace rtb::sim {

MultiAgentEnv::MultiAgentEnv(const Day& day, const Market& market, const AuctionConfig& acfg,
                             double alpha_range, std::vector<Micros> budgets, RewardMode mode,
                             std::shared_ptr<const DayIndex> index)
    : market_(market),
      engine_(day, market, acfg, alpha_range, std::move(budgets),
              AuctionEngine::kDefaultBurnBuckets, std::move(index)),
      mode_(mode) {}

Observation MultiAgentEnv::Reset(uint64_t seed) {
  engine_.Reset(seed);
  seen_.clear();
  return Observe();
}

void MultiAgentEnv::SetGoals(const std::vector<Goal>* goals) {
  goals_ = nullptr;
  if (goals == nullptr) return;
  for (const Goal& g : *goals) {
    if (g.HasTarget()) goals_ = goals;
  }
}

std::vector<double> MultiAgentEnv::GoalRewards() {
  const std::vector<Outcome>& day = engine_.advertiser_outcomes();
  seen_.resize(day.size());
  std::vector<double> r(static_cast<size_t>(market_.agents), 0.0);
  for (size_t k = 0; k < day.size() && k < goals_->size(); ++k) {
    const Goal& g = (*goals_)[k];
    const Outcome& o = day[k];
    double& to = r[market_.agent_of[k]];
    to += StepWorth(g, o.conversions - seen_[k].conversions,
                    o.revenue.units() - seen_[k].revenue.units());
    if (engine_.done()) {  // the shortfall of a day that missed its target
      to += DayWorth(g, o.conversions, o.cost.units(), o.revenue.units()) -
            StepWorth(g, o.conversions, o.revenue.units());
    }
    seen_[k] = o;
  }
  return r;
}

Observation MakeObservation(const Market& m, int step, std::vector<double> g_cost,
                            std::vector<double> g_revenue, std::vector<double> d) {
  Observation o;
  const int L = m.clusters;
  o.step = step;
  o.g_cost = std::move(g_cost);
  o.g_revenue = std::move(g_revenue);
  const int t = std::clamp(step, 0, m.steps - 1);
  o.x.reserve(static_cast<size_t>(L) * (L + 2));
  for (int j = 0; j < L; ++j) {
    for (int q = 0; q < L; ++q) o.x.push_back(q == j ? 1.0 : 0.0);
    o.x.push_back(m.revenue_hist[static_cast<size_t>(t)][static_cast<size_t>(j)]);
    o.x.push_back(m.cost_hist[static_cast<size_t>(t)][static_cast<size_t>(j)]);
  }
  o.d = std::move(d);
  return o;
}

std::vector<double> AgentBudgets(const Market& m, const std::vector<Micros>& budgets) {
  std::vector<double> b(static_cast<size_t>(m.agents), 0.0);
  for (size_t k = 0; k < budgets.size() && k < m.agent_of.size(); ++k) {
    b[m.agent_of[k]] += budgets[k].units();
  }
  return b;
}

Observation MultiAgentEnv::Observe() const {
  const size_t pairs = static_cast<size_t>(market_.agents) * market_.clusters;
  std::vector<double> cost(pairs), revenue(pairs);
  for (size_t p = 0; p < pairs; ++p) {
    cost[p] = engine_.pair_cost()[p].units();
    revenue[p] = engine_.pair_revenue()[p].units();
  }
  return MakeObservation(market_, engine_.step(), std::move(cost), std::move(revenue),
                         engine_.last_d());
}

StepResult MultiAgentEnv::Step(const ActionTable& a) {
  engine_.RunStep(a);
  StepResult s;
  s.agent_revenue.resize(static_cast<size_t>(market_.agents));
  double total = 0;
  for (size_t i = 0; i < s.agent_revenue.size(); ++i) {
    s.agent_revenue[i] = engine_.last_step_revenue()[i].units();
    total += s.agent_revenue[i];
  }
  s.rewards = s.agent_revenue;
  if (goals_ != nullptr) {
    s.rewards = GoalRewards();
    total = 0;
    for (const double x : s.rewards) total += x;
  }
  if (mode_ == RewardMode::kCoordinated) s.rewards.assign(s.rewards.size(), total);
  s.done = engine_.done();
  s.next = Observe();
  return s;
}

std::vector<double> MultiAgentEnv::AgentBudgets() const {
  return sim::AgentBudgets(market_, engine_.budgets());
}

}  // namespace rtb::sim
