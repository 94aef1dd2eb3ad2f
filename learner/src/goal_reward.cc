#include "rtb/learner/goal_reward.h"

namespace rtb::learn {

void ApplyGoalRewards(const std::map<int64_t, AgentGoal>& goals,
                      const std::map<int64_t, AdvertiserTotals>& step, bool done,
                      std::map<int64_t, AdvertiserTotals>* day, std::vector<double>* rewards) {
  for (const auto& [id, ag] : goals) {
    if (ag.agent < 0 || static_cast<size_t>(ag.agent) >= rewards->size()) continue;
    double& to = (*rewards)[static_cast<size_t>(ag.agent)];
    const auto it = step.find(id);
    AdvertiserTotals& sum = (*day)[id];
    if (it != step.end()) {
      const AdvertiserTotals& s = it->second;
      const double value = static_cast<double>(s.value_micros) / 1e6;
      to += StepWorth(ag.goal, s.conversions, value) - value;
      sum.cost_micros += s.cost_micros;
      sum.conversions += s.conversions;
      sum.value_micros += s.value_micros;
    }
    if (done) {
      const double cost = static_cast<double>(sum.cost_micros) / 1e6;
      const double value = static_cast<double>(sum.value_micros) / 1e6;
      to += DayWorth(ag.goal, sum.conversions, cost, value) -
            StepWorth(ag.goal, sum.conversions, value);
    }
  }
}

}  // namespace rtb::learn
