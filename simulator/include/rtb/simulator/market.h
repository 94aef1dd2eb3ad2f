// The market model learned from a history day: which agent each advertiser belongs to, which
// cluster each consumer belongs to, average pCVRs (for bratio), and the slowly changing
// consumer-cluster features x_j (docs/dcmab.md sections 1, 2, 4). BuildMarket
// (market_builder.h) fills it from the history day run under manual bids with unlimited budget.
#pragma once

#include <string>
#include <vector>

#include "rtb/core/metrics.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/world.h"

namespace rtb::sim {

struct Market {
  int agents = 0;                    // N
  int clusters = 0;                  // L
  int steps = 0;                     // T
  std::vector<uint16_t> agent_of;    // advertiser -> agent i
  std::vector<uint16_t> cluster_of;  // consumer -> cluster j
  // Cluster of a consumer never seen in history: the lowest-revenue cluster (0).
  uint16_t default_cluster = 0;
  std::vector<double>
      avg_pcvr;  // advertiser -> mean pCVR over its history candidates (0 = unknown)
  // x_j features per step t: revenue and cost of consumer cluster j during step t of the
  // history day under manual bids (currency units). [step][cluster]
  std::vector<std::vector<double>> revenue_hist, cost_hist;
  // d at the start of a day: share of candidate presences per (i, j) in step 0 of history.
  std::vector<double> d0;
  // Per agent: history revenue, presences and advertiser counts (for the report).
  std::vector<Outcome> agent_history;
  std::vector<int> agent_advertisers;
  std::vector<int64_t> agent_presences;
};

}  // namespace rtb::sim
