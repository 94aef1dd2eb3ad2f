#include "rtb/simulator/config.h"

#include <algorithm>
#include <cmath>

namespace rtb::sim {

Status CheckAuctionType(const std::string& type) {
  if (std::find(kAuctionTypes.begin(), kAuctionTypes.end(), type) == kAuctionTypes.end()) {
    return Status::InvalidArgument("must be gsp, gfp or first_price, not \"" + type + "\"");
  }
  return Status::Ok();
}

namespace {

// first_price has one winner per request: the world's slots become 1 (the first slot's
// click factor kept).
void SetAuctionType(AuctionConfig* a, const std::string& type) {
  a->type = type;
  if (type != "first_price") return;
  a->slots = 1;
  if (a->slot_ctr_factors.size() > 1) {
    a->slot_ctr_factors.erase(a->slot_ctr_factors.begin() + 1, a->slot_ctr_factors.end());
  }
}

}  // namespace

std::string DescribeAuction(const AuctionConfig& a) {
  const std::string slots = std::to_string(a.slots) + (a.slots == 1 ? " slot, " : " slots, ");
  return a.type + " (" + slots +
         (a.first_price() ? "each winner pays its own bid)" : "each winner pays the next eCPM)");
}

Status OverrideAuctionType(SimulatorConfig* cfg, const std::string& type) {
  if (type.empty()) return Status::Ok();
  if (Status st = CheckAuctionType(type); !st.ok()) {
    return Status::InvalidArgument("--auction " + st.message());
  }
  SetAuctionType(&cfg->auction, type);
  return Status::Ok();
}

void ReadSimulatorConfig(ConfigMap& root, SimulatorConfig* cfg) {
  root.Get("seed", &cfg->seed);
  root.Get("burn_buckets", &cfg->burn_buckets);
  root.Check(cfg->burn_buckets >= 1 && cfg->burn_buckets <= 1000, "burn_buckets",
             "must be between 1 and 1000");

  ConfigMap w = root.Section("world");
  WorldConfig& wc = cfg->world;
  w.Get("advertisers", &wc.advertisers);
  w.Check(wc.advertisers >= 1 && wc.advertisers <= 10000000, "advertisers",
          "must be between 1 and 10000000");
  w.Get("large_share", &wc.large_share);
  w.Check(wc.large_share >= 0 && wc.large_share <= 1, "large_share", "must be in [0, 1]");
  w.Get("large_weight", &wc.large_weight);
  w.Check(wc.large_weight > 0, "large_weight", "must be positive");
  w.Get("weight_sigma", &wc.weight_sigma);
  w.Get("ctr_mean", &wc.ctr_mean);
  w.Check(wc.ctr_mean > 0 && wc.ctr_mean < 1, "ctr_mean", "must be in (0, 1)");
  w.Get("ctr_sigma", &wc.ctr_sigma);
  w.Get("cvr_mean", &wc.cvr_mean);
  w.Check(wc.cvr_mean > 0 && wc.cvr_mean < 1, "cvr_mean", "must be in (0, 1)");
  w.Get("cvr_sigma", &wc.cvr_sigma);
  w.Get("order_value_mean", &wc.order_value_mean);
  w.Check(wc.order_value_mean > 0, "order_value_mean", "must be positive");
  w.Get("order_value_sigma", &wc.order_value_sigma);
  w.Get("large_value_factor", &wc.large_value_factor);
  w.Check(wc.large_value_factor > 0, "large_value_factor", "must be positive");
  w.Get("bid_margin", &wc.bid_margin);
  w.Check(wc.bid_margin > 0, "bid_margin", "must be positive");
  w.Get("first_price_margin", &wc.first_price_margin);
  w.Check(wc.first_price_margin > 0, "first_price_margin", "must be positive");
  w.Get("cpa_share", &wc.cpa_share);
  w.Check(wc.cpa_share >= 0 && wc.cpa_share <= 1, "cpa_share", "must be in [0, 1]");
  w.Get("cpa_target_margin", &wc.cpa_target_margin);
  w.Check(wc.cpa_target_margin > 0 && wc.cpa_target_margin <= 10, "cpa_target_margin",
          "must be in (0, 10]: the target CPA as a share of the order value");
  w.Get("roas_share", &wc.roas_share);
  w.Check(wc.roas_share >= 0 && wc.cpa_share + wc.roas_share <= 1, "roas_share",
          "must be >= 0, with cpa_share + roas_share <= 1 (an advertiser has one goal)");
  w.Get("roas_target_margin", &wc.roas_target_margin);
  w.Check(wc.roas_target_margin > 0 && wc.roas_target_margin <= 10, "roas_target_margin",
          "must be in (0, 10]: the most spend per unit of order value (target ROAS = 1 / this)");
  w.Get("bid_noise_sigma", &wc.bid_noise_sigma);
  w.Get("min_bid", &wc.min_bid);
  w.Get("max_bid", &wc.max_bid);
  w.Check(wc.min_bid > 0 && wc.max_bid >= wc.min_bid, "max_bid",
          "must be >= min_bid, and min_bid > 0");
  w.Get("consumers", &wc.consumers);
  w.Check(wc.consumers >= 1 && wc.consumers <= 100000000, "consumers",
          "must be between 1 and 100000000");
  w.Get("consumer_activity_sigma", &wc.consumer_activity_sigma);
  w.Get("consumer_value_sigma", &wc.consumer_value_sigma);
  w.Get("consumer_click_sigma", &wc.consumer_click_sigma);
  w.Check(wc.weight_sigma >= 0 && wc.ctr_sigma >= 0 && wc.cvr_sigma >= 0 &&
              wc.order_value_sigma >= 0 && wc.bid_noise_sigma >= 0 &&
              wc.consumer_activity_sigma >= 0 && wc.consumer_value_sigma >= 0 &&
              wc.consumer_click_sigma >= 0,
          "sigma", "values (every *_sigma) must be non-negative");

  ConfigMap d = root.Section("day");
  DayConfig& dc = cfg->day;
  d.Get("requests", &dc.requests);
  d.Check(dc.requests >= 1 && dc.requests <= 100000000, "requests",
          "must be between 1 and 100000000");
  d.Get("steps", &dc.steps);
  d.Check(dc.steps >= 1 && dc.steps <= 1000, "steps", "must be between 1 and 1000");
  d.Get("step_minutes", &dc.step_minutes);
  d.Check(dc.step_minutes >= 1, "step_minutes", "must be at least 1");
  d.Get("traffic_by_step", &dc.traffic_by_step);
  d.Check(static_cast<int>(dc.traffic_by_step.size()) == dc.steps, "traffic_by_step",
          "must have one value per step");
  d.Get("value_by_step", &dc.value_by_step);
  d.Check(static_cast<int>(dc.value_by_step.size()) == dc.steps, "value_by_step",
          "must have one value per step");
  bool positive = true;
  for (double v : dc.traffic_by_step) positive = positive && v > 0;
  for (double v : dc.value_by_step) positive = positive && v > 0;
  d.Check(positive, "traffic_by_step", "and value_by_step must be positive");
  d.Get("candidates_mean", &dc.candidates_mean);
  d.Get("candidates_min", &dc.candidates_min);
  d.Get("candidates_max", &dc.candidates_max);
  d.Check(dc.candidates_min >= 1 && dc.candidates_max >= dc.candidates_min &&
              dc.candidates_max <= cfg->world.advertisers,
          "candidates_max", "must satisfy 1 <= candidates_min <= candidates_max <= advertisers");
  d.Check(dc.candidates_mean > 0, "candidates_mean", "must be positive");
  d.Get("pctr_noise_sigma", &dc.pctr_noise_sigma);
  d.Get("pcvr_noise_sigma", &dc.pcvr_noise_sigma);
  d.Get("value_noise_sigma", &dc.value_noise_sigma);
  d.Get("floor_fraction", &dc.floor_fraction);
  d.Check(dc.floor_fraction >= 0 && dc.floor_fraction <= 10, "floor_fraction",
          "must be in [0, 10]");
  d.Get("floor_sigma", &dc.floor_sigma);
  d.Check(dc.floor_sigma >= 0, "floor_sigma", "must be >= 0");

  ConfigMap a = root.Section("auction");
  AuctionConfig& ac = cfg->auction;
  a.Get("slots", &ac.slots);
  a.Check(ac.slots >= 1 && ac.slots <= 7, "slots", "must be between 1 and 7");
  a.Get("type", &ac.type);
  const Status type_ok = CheckAuctionType(ac.type);
  a.Check(type_ok.ok(), "type", type_ok.message());
  a.Get("reserve_cpm", &ac.reserve_cpm);
  a.Check(ac.reserve_cpm >= 0, "reserve_cpm", "must be non-negative");
  a.Get("slot_ctr_factors", &ac.slot_ctr_factors);
  a.Check(ac.slot_ctr_factors.empty() || static_cast<int>(ac.slot_ctr_factors.size()) == ac.slots,
          "slot_ctr_factors", "must be empty or have one factor per slot");
  a.Check(std::all_of(ac.slot_ctr_factors.begin(), ac.slot_ctr_factors.end(),
                      [](double f) { return std::isfinite(f) && f >= 0; }),
          "slot_ctr_factors", "each factor must be a finite number >= 0");
  if (type_ok.ok()) SetAuctionType(&ac, ac.type);
  a.Get("outcomes", &ac.outcomes);
  a.Check(ac.outcomes == "expected" || ac.outcomes == "sampled", "outcomes",
          "must be \"expected\" or \"sampled\"");

  ConfigMap m = root.Section("market");
  MarketConfig& mc = cfg->market;
  m.Get("agents", &mc.agents);
  m.Check(mc.agents >= 1 && mc.agents <= cfg->world.advertisers, "agents",
          "must be between 1 and the number of advertisers");
  m.Get("consumer_clusters", &mc.consumer_clusters);
  m.Check(mc.consumer_clusters >= 1 && mc.consumer_clusters <= 1000, "consumer_clusters",
          "must be between 1 and 1000");
  m.Get("budget_fraction", &mc.budget_fraction);
  m.Check(mc.budget_fraction > 0, "budget_fraction", "must be positive");
  m.Get("alpha_range", &mc.alpha_range);
  m.Check(mc.alpha_range >= 0 && mc.alpha_range < 1, "alpha_range", "must be in [0, 1)");
  m.Get("reward", &mc.reward);
  m.Check(mc.reward == "self" || mc.reward == "coordinated", "reward",
          "must be \"self\" or \"coordinated\"");
}

Result<SimulatorConfig> LoadSimulatorConfig(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(auto file, ConfigFile::Load(path));
  SimulatorConfig cfg;
  ConfigMap root = file->Root();
  ReadSimulatorConfig(root, &cfg);
  RTB_RETURN_IF_ERROR(file->Finish());
  return cfg;
}

}  // namespace rtb::sim
