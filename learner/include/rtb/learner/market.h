// The market the online learner learns in, read from the bidder config: the one description
// both processes load (bidder/include/rtb/bidder/config.h). No simulated world is built.
//
//   agents N      = the highest `agent` of the advertisers + 1
//   budgets       = per agent, the sum of its advertisers' daily budgets, the learned arm's part
//                   (ab.learned_share, core/ab.h ArmBudget)
//   clusters L    = the cluster map's (clusters_path; none: one cluster), published with every
//                   table
//   x_j history   = the cluster map's `history` ([T][L] revenue and cost per step): the prior
//                   until the learner has seen a day of events; none: zeros
//   T, step clock = market.steps_per_day, market.step_seconds; alpha range = market.alpha_range
//   money bounds  = per advertiser, the highest CPM its bids can carry and max_conversion_value:
//                   what an event's money is checked against (CheckEventMoney, core/events.h)
//   key ring      = market_keys: step markers and tables are sealed with it (core/mac.h)
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rtb/core/events.h"
#include "rtb/core/mac.h"
#include "rtb/core/policy.h"
#include "rtb/core/status.h"
#include "rtb/learner/goal_reward.h"
#include "rtb/simulator/market.h"

namespace rtb::learn {

struct LiveMarket {
  // agents, clusters, steps, revenue_hist and cost_hist ([T][L], x_j), default_cluster: what
  // the state encoding (sim::MakeObservation, Normalizer) reads. Nothing else is set.
  sim::Market shape;
  std::vector<double> budgets;  // per agent, currency units, the learned arm's part
  ClusterMap clusters;          // without its history (published with every table)
  int64_t step_ms = 3'600'000;
  double alpha_range = 0.9;
  double learned_share = 1.0;
  int advertisers = 0;
  // The advertisers with a target (goal conversions or value), by id: their rewards are their
  // goals' (LearnerConfig::goal_reward, rtb/learner/goal_reward.h).
  std::map<int64_t, AgentGoal> goals;
  EventMoneyBounds money;
  std::shared_ptr<const MarketKeys> keys;  // nullptr: market_keys not set
  std::string source;                      // the bidder config it came from
  // Its kafka.properties: librdkafka properties of the learner's clients, after their own.
  std::vector<std::pair<std::string, std::string>> kafka_properties;
};

// Errors name the file: an unreadable or invalid bidder config or cluster map, no advertiser,
// a history whose steps are not T.
Result<LiveMarket> LoadLiveMarket(const std::string& bidder_config_path);

}  // namespace rtb::learn
