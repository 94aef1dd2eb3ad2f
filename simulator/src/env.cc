#include "rtb/simulator/env.h"

#include <algorithm>

namespace rtb::sim {

MultiAgentEnv::MultiAgentEnv(const Day& day, const Market& market, const AuctionConfig& acfg,
                             double alpha_range, std::vector<Micros> budgets, RewardMode mode)
    : market_(market), engine_(day, market, acfg, alpha_range, std::move(budgets)), mode_(mode) {}

Observation MultiAgentEnv::Reset(uint64_t seed) {
  engine_.Reset(seed);
  return Observe();
}

Observation MultiAgentEnv::Observe() const {
  Observation o;
  const int N = market_.agents, L = market_.clusters;
  o.step = engine_.step();
  o.g_cost.resize(static_cast<size_t>(N) * L);
  o.g_revenue.resize(static_cast<size_t>(N) * L);
  for (size_t p = 0; p < o.g_cost.size(); ++p) {
    o.g_cost[p] = engine_.pair_cost()[p].units();
    o.g_revenue[p] = engine_.pair_revenue()[p].units();
  }
  const int t = std::min(o.step, market_.steps - 1);
  o.x.reserve(static_cast<size_t>(L) * (L + 2));
  for (int j = 0; j < L; ++j) {
    for (int q = 0; q < L; ++q) o.x.push_back(q == j ? 1.0 : 0.0);
    o.x.push_back(market_.revenue_hist[static_cast<size_t>(t)][static_cast<size_t>(j)]);
    o.x.push_back(market_.cost_hist[static_cast<size_t>(t)][static_cast<size_t>(j)]);
  }
  o.d = engine_.last_d();
  return o;
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
  s.rewards = mode_ == RewardMode::kSelf ? s.agent_revenue
                                         : std::vector<double>(s.agent_revenue.size(), total);
  s.done = engine_.done();
  s.next = Observe();
  return s;
}

std::vector<double> MultiAgentEnv::AgentBudgets() const {
  std::vector<double> b(static_cast<size_t>(market_.agents), 0.0);
  for (size_t k = 0; k < engine_.budgets().size() && k < market_.agent_of.size(); ++k) {
    b[market_.agent_of[k]] += engine_.budgets()[k].units();
  }
  return b;
}

}  // namespace rtb::sim
