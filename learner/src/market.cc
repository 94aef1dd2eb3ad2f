#include "rtb/learner/market.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "rtb/bidder/config.h"
#include "rtb/core/ab.h"

namespace rtb::learn {

Result<LiveMarket> LoadLiveMarket(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(const bidder::BidderConfig cfg, bidder::LoadBidderConfig(path));
  if (cfg.advertisers.empty()) return Status::InvalidArgument(path + ": no advertisers");
  LiveMarket m;
  m.source = path;
  m.kafka_properties = cfg.kafka.properties;
  m.advertisers = static_cast<int>(cfg.advertisers.size());
  m.learned_share = cfg.ab.learned_share;
  if (m.learned_share <= 0) {
    return Status::InvalidArgument(path + ": ab.learned_share is 0: no learned arm to learn from");
  }
  int agents = 0;
  for (const auto& a : cfg.advertisers) {
    agents = std::max(agents, a.agent + 1);
    if (a.goal.HasTarget()) m.goals[a.id] = {a.agent, a.goal};
  }
  m.budgets.assign(static_cast<size_t>(agents), 0.0);
  for (const auto& a : cfg.advertisers) {
    m.budgets[static_cast<size_t>(a.agent)] +=
        ArmBudget(a.daily_budget, Arm::kLearned, m.learned_share).units();
  }
  if (!cfg.clusters_path.empty()) {
    RTB_ASSIGN_OR_RETURN(m.clusters, LoadClusterMap(cfg.clusters_path));
  }
  const int T = cfg.market.steps_per_day, L = m.clusters.clusters;
  m.shape.agents = agents;
  m.shape.clusters = L;
  m.shape.steps = T;
  m.shape.default_cluster = m.clusters.default_cluster;
  if (m.clusters.revenue_hist.empty()) {
    m.shape.revenue_hist.assign(static_cast<size_t>(T),
                                std::vector<double>(static_cast<size_t>(L), 0.0));
    m.shape.cost_hist.assign(static_cast<size_t>(T),
                             std::vector<double>(static_cast<size_t>(L), 0.0));
  } else {
    if (m.clusters.revenue_hist.size() != static_cast<size_t>(T)) {
      return Status::InvalidArgument(cfg.clusters_path + ": the cluster history has " +
                                     std::to_string(m.clusters.revenue_hist.size()) +
                                     " steps, the market (" + path + " market.steps_per_day) " +
                                     std::to_string(T));
    }
    m.shape.revenue_hist = std::move(m.clusters.revenue_hist);
    m.shape.cost_hist = std::move(m.clusters.cost_hist);
    m.clusters.revenue_hist.clear();
    m.clusters.cost_hist.clear();
  }
  m.step_ms = int64_t{cfg.market.step_seconds} * 1000;
  m.alpha_range = cfg.market.alpha_range;
  m.keys = bidder::MarketKeysOf(cfg);
  // The highest CPM a bid can carry: the manual CPC bid x (1 + alpha_range) (AdjustedBid,
  // rounded up, plus its rounding's half micro) x 1000 (pCTR <= 1), saturated at int64's end.
  constexpr auto kMax = static_cast<double>(std::numeric_limits<int64_t>::max());
  for (const auto& a : cfg.advertisers) {
    const double cpm =
        (std::ceil(static_cast<double>(a.bid.value()) * (1 + m.alpha_range)) + 1) * 1000;
    m.money.advertisers[a.id] = {.max_price_micros = cpm >= kMax
                                                         ? std::numeric_limits<int64_t>::max()
                                                         : static_cast<int64_t>(cpm),
                                 .max_conversion_value_micros = a.max_conversion_value.value()};
  }
  return m;
}

}  // namespace rtb::learn
