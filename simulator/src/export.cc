#include "rtb/simulator/export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rtb/core/report.h"
#include "rtb/core/text.h"

namespace rtb::sim {
namespace {

double Logit(double p) { return std::log(p / (1 - p)); }

std::string Num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

ClusterMap MarketClusterMap(const Market& m) {
  ClusterMap c;
  c.clusters = m.clusters;
  c.default_cluster = m.default_cluster;
  c.user_cluster.reserve(m.cluster_of.size());
  for (size_t u = 0; u < m.cluster_of.size(); ++u) {
    std::string user = "c";  // (not "c" + ...: GCC 12 warns falsely on it, -Wrestrict)
    user += std::to_string(u);
    c.user_cluster[std::move(user)] = m.cluster_of[u];
  }
  return c;
}

Status ExportBidderWorld(const Scenario& sc, const World& world, const std::string& dir,
                         const std::string& base_bidder_config) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": " + ec.message());
  // predictor.json
  std::string p = "{\"format\": \"rtb.predictor\", \"schema_version\": 1, \"hash_bits\": 16,\n";
  p += " \"default\": {\"ctr_bias\": -4.0, \"cvr_bias\": -3.5, \"avg_pcvr\": 0},\n "
       "\"advertisers\": {";
  for (size_t k = 0; k < world.advertisers.size(); ++k) {
    const Advertiser& a = world.advertisers[k];
    const double avg = k < sc.market.avg_pcvr.size() ? sc.market.avg_pcvr[k] : 0.0;
    p += std::string(k ? ",\n  " : "\n  ") + "\"" + std::to_string(k) +
         "\": {\"ctr_bias\": " + Num(Logit(a.ctr)) + ", \"cvr_bias\": " + Num(Logit(a.cvr)) +
         ", \"avg_pcvr\": " + Num(avg) + "}";
  }
  p += "},\n \"ctr_weights\": {}, \"cvr_weights\": {}}\n";
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/predictor.json", p));
  // clusters.json
  // With the clusters' manual-bid history of the world's reference day: x_j's prior.
  ClusterMap cmap = MarketClusterMap(sc.market);
  cmap.revenue_hist = sc.market.revenue_hist;
  cmap.cost_hist = sc.market.cost_hist;
  const std::string c = SerializeClusterMap(cmap);
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/clusters.json", c));
  // bidder.yaml: the base config without its advertisers, then the world's advertisers.
  std::ifstream in(base_bidder_config);
  if (!in) return Status::NotFound(base_bidder_config + ": cannot open bidder config");
  std::ostringstream y;
  std::string line;
  bool in_market = false;
  while (std::getline(in, line)) {
    if (line.rfind("advertisers:", 0) == 0) break;
    if (!line.empty() && line[0] != ' ' && line[0] != '#')
      in_market = line.rfind("market:", 0) == 0;
    // Served against `rtb exchange`: it trusts the exchange's ext.sim clock, and takes one bid
    // more than the slots (the last slot's GSP price is the next bid).
    if (line.rfind("simulation_hooks:", 0) == 0) line = "simulation_hooks: true";
    if (line.rfind("max_bids_per_imp:", 0) == 0) {
      line = "max_bids_per_imp: " + std::to_string(std::min(8, sc.cfg.auction.slots + 1));
    }
    // The world's auction type, for requests that do not say (rtb exchange says).
    if (line.rfind("default_at:", 0) == 0) {
      line = "default_at: " + std::to_string(sc.cfg.auction.openrtb_at());
    }
    if (line.rfind("predictor_path:", 0) == 0) line = "predictor_path: " + dir + "/predictor.json";
    if (line.rfind("clusters_path:", 0) == 0) line = "clusters_path: " + dir + "/clusters.json";
    // The world's step clock and action range: what the learner plays.
    if (in_market && line.rfind("  steps_per_day:", 0) == 0) {
      line = "  steps_per_day: " + std::to_string(sc.market.steps);
    }
    if (in_market && line.rfind("  step_seconds:", 0) == 0) {
      line = "  step_seconds: " + std::to_string(sc.cfg.day.step_minutes * 60);
    }
    if (in_market && line.rfind("  alpha_range:", 0) == 0) {
      line = "  alpha_range: " + Num(sc.cfg.market.alpha_range);
    }
    y << line << "\n";
  }
  y << "advertisers:                      # the simulated world (rtb generate --bidder-out)\n";
  for (size_t k = 0; k < world.advertisers.size(); ++k) {
    const Advertiser& a = world.advertisers[k];
    const double budget = k < sc.test_budgets.size() ? sc.test_budgets[k].units() : 0.0;
    y << "  - {id: " << k << ", name: adv-" << k << ", bid: " << Num(a.bid.units())
      << ", daily_budget: " << Num(budget) << ", conversion_value: " << Num(a.order_value.units())
      << ", agent: " << sc.market.agent_of[k];
    if (a.goal.kind == GoalKind::kConversions) {
      y << ", goal: conversions, target_cpa: "
        << MicrosDecimal(a.goal.target_cpa.value(), MicrosFraction::kTrimmed);
    } else if (a.goal.kind == GoalKind::kValue) {
      y << ", goal: value, target_roas: " << Num(a.goal.target_roas);
    }
    y << ", creatives: [{crid: sim-" << k << ", adomain: [adv" << k
      << ".example], w: 0, h: 0, markup: \"<div>adv-" << k << "</div>\"}]}\n";
  }
  return WriteFileAtomic(dir + "/bidder.yaml", y.str());
}

}  // namespace rtb::sim
