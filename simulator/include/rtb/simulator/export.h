// Writes the simulated world as the bidder sees it, so that the bidder and the simulator
// agree: a bidder config with every advertiser (manual bid, budget, agent), a predictor model
// (schemas/predictor-v1.md) whose per-advertiser biases are the world's base pCTR and pCVR and
// whose avg_pcvr is the market's, and the consumer-cluster map (schemas/cluster-map-v1.md,
// users named "c<consumer id>").
#pragma once

#include <string>

#include "rtb/core/policy.h"
#include "rtb/core/status.h"
#include "rtb/simulator/simulate.h"

namespace rtb::sim {

// The consumer-cluster map of the market (schemas/cluster-map-v1.md), users "c<consumer id>".
ClusterMap MarketClusterMap(const Market& m);

Status ExportBidderWorld(const Scenario& sc, const World& world, const std::string& dir,
                         const std::string& base_bidder_config);

}  // namespace rtb::sim
