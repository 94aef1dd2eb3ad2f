// Hand-made days and markets for simulator tests.
#pragma once

#include <vector>

#include "rtb/simulator/market.h"
#include "rtb/simulator/world.h"

namespace rtb::sim::testing {

struct Cand {
  uint32_t adv;
  double bid;  // units
  double pctr;
  double pcvr = 0.1;
  double ppb = 100;  // units
};

// A day of one step per entry of `steps_of`, with the given requests (each a candidate list).
inline Day MakeDay(const std::vector<std::vector<Cand>>& requests, uint32_t advertisers,
                   int steps = 1, const std::vector<int>& step_of = {}) {
  Day d;
  d.steps = steps;
  d.step_ms = 1000;
  d.num_advertisers = advertisers;
  d.num_consumers = 4;
  d.begin.push_back(0);
  for (size_t r = 0; r < requests.size(); ++r) {
    const int s = step_of.empty() ? 0 : step_of[r];
    d.time_ms.push_back(s * 1000 + static_cast<int64_t>(r));
    d.consumer.push_back(static_cast<uint32_t>(r % 4));
    d.floor_cpm.push_back(0);
    for (const auto& c : requests[r]) {
      d.adv.push_back(c.adv);
      d.bid.push_back(Micros::FromUnits(c.bid).value());
      d.pctr.push_back(c.pctr);
      d.pcvr.push_back(c.pcvr);
      d.ppb.push_back(Micros::FromUnits(c.ppb).value());
    }
    d.begin.push_back(static_cast<uint32_t>(d.adv.size()));
  }
  return d;
}

// agents[k] = agent of advertiser k; all consumers in cluster 0 of `clusters`.
inline Market MakeMarket(const std::vector<uint16_t>& agents, int n_agents, int steps = 1,
                         int clusters = 1) {
  Market m;
  m.agents = n_agents;
  m.clusters = clusters;
  m.steps = steps;
  m.agent_of = agents;
  m.cluster_of.assign(4, 0);
  m.avg_pcvr.assign(agents.size(), 0.0);  // unknown: bratio = 1
  m.revenue_hist.assign(static_cast<size_t>(steps), std::vector<double>(clusters, 1.0));
  m.cost_hist = m.revenue_hist;
  m.d0.assign(static_cast<size_t>(n_agents) * clusters, 1.0 / (n_agents * clusters));
  return m;
}

}  // namespace rtb::sim::testing
