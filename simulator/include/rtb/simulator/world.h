// The simulated world and its days: a seeded generator of full-information request logs.
//
// Same (config, seed), same world and same days, byte for byte. The training and the test day
// are two independent draws of the same world (different seeds).
#pragma once

#include <cstdint>
#include <vector>

#include "rtb/core/goal.h"
#include "rtb/core/rng.h"
#include "rtb/core/types.h"
#include "rtb/simulator/config.h"

namespace rtb::sim {

struct Advertiser {
  double weight = 1;   // relative frequency as an auction candidate
  double ctr = 0.02;   // base pCTR
  double cvr = 0.03;   // base pCVR
  Micros order_value;  // base ppb
  Micros bid;          // manual CPC bid
  bool large = false;
  Goal goal;  // revenue, conversions with a target CPA or value with a target ROAS
              // (WorldConfig::cpa_share, roas_share)
};

struct Consumer {
  double activity = 1;  // relative request frequency
  double value = 1;     // pCVR multiplier
  double click = 1;     // pCTR multiplier
};

struct World {
  std::vector<Advertiser> advertisers;
  std::vector<Consumer> consumers;
};

// The world under manual bids of world.bid_margin x value per click.
World GenerateWorld(const WorldConfig& cfg, uint64_t seed);
// The world of cfg (seed cfg.seed), its manual bids set by its auction: under first price
// world.first_price_margin takes bid_margin's place (1: the naive bidder bids its value).
World GenerateWorld(const SimulatorConfig& cfg);

// A day of requests in structure-of-arrays form: one entry per request, one per candidate.
// Candidates of request r are [begin[r], begin[r+1]). Requests are in time order.
struct Day {
  int steps = 3;
  TimeMs step_ms = 3600000;
  uint32_t num_advertisers = 0;
  uint32_t num_consumers = 0;
  // per request
  std::vector<TimeMs> time_ms;  // ms since the start of the day
  std::vector<uint32_t> consumer;
  std::vector<int64_t> floor_cpm;  // floor price (CPM), micros; 0 = none
  std::vector<uint32_t> begin;     // size requests()+1
  // per candidate
  std::vector<uint32_t> adv;
  std::vector<int64_t> bid;  // manual CPC bid, micros
  std::vector<double> pctr;
  std::vector<double> pcvr;
  std::vector<int64_t> ppb;  // order value, micros

  size_t requests() const { return time_ms.size(); }
  size_t candidates() const { return adv.size(); }
  int StepOf(size_t r) const {
    const int64_t s = time_ms[r] / step_ms;
    return s < 0 ? 0 : (s >= steps ? steps - 1 : static_cast<int>(s));
  }
  // First request of each step; size steps+1.
  std::vector<size_t> StepBegins() const;
};

Day GenerateDay(const World& world, const DayConfig& cfg, uint64_t seed);

}  // namespace rtb::sim
