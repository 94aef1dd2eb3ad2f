// The advertisers' goals as the live learner's rewards (docs/dcmab.md section 4): the rule the
// simulator's environment applies (sim::MultiAgentEnv::GoalRewards) on the totals the event
// stream gives per advertiser. Torch-free and I/O-free.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "rtb/core/goal.h"
#include "rtb/learner/step_merge.h"

namespace rtb::learn {

// An advertiser with a target (goal conversions or value) and the agent it belongs to.
struct AgentGoal {
  int agent = 0;
  Goal goal;
};

// `rewards` (per agent) hold the step's revenue: every advertiser's conversion value. For each
// advertiser of `goals` its step's value is replaced by what the step is worth under its goal
// (StepWorth: target CPA x conversions, or the value), and on the day's last step (`done`) the
// shortfall of a day that missed its target is added (DayWorth of the day - StepWorth of the
// day, <= 0), so that an agent's rewards over a day sum to its advertisers' worth under their
// goals. `day` accumulates each advertiser's step (the caller empties it when a day starts).
// Advertisers of `goals` whose agent is outside `rewards` are skipped.
void ApplyGoalRewards(const std::map<int64_t, AgentGoal>& goals,
                      const std::map<int64_t, AdvertiserTotals>& step, bool done,
                      std::map<int64_t, AdvertiserTotals>* day, std::vector<double>* rewards);

}  // namespace rtb::learn
