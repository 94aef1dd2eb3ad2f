// The simulator's configuration. Every field is documented here, where it is declared, with
// its unit; configs/simulator/default.yaml repeats the defaults. Unknown keys are errors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "rtb/core/auction.h"
#include "rtb/core/config.h"
#include "rtb/core/status.h"

namespace rtb::sim {

// The advertisers and consumers of the simulated world (fixed across days).
struct WorldConfig {
  int advertisers = 3000;        // number of advertisers (the paper's merchants)
  double large_share = 0.11;     // share of "large" advertisers, which appear in far more auctions
  double large_weight = 18.0;    // how much more often a large advertiser is a candidate
  double weight_sigma = 0.2;     // lognormal spread of candidate frequency within each group
  double ctr_mean = 0.02;        // typical pCTR of an advertiser's ads
  double ctr_sigma = 0.1;        // lognormal spread of advertiser pCTR
  double cvr_mean = 0.03;        // typical pCVR (conversions per click)
  double cvr_sigma = 0.15;       // lognormal spread of advertiser pCVR
  double order_value_mean = 80;  // typical order value (ppb), currency units
  double order_value_sigma = 0.35;  // lognormal spread of order value
  double large_value_factor = 1.6;  // order value of large advertisers x this (brands sell more)
  double bid_margin = 0.3;          // manual CPC bid ~ margin x value per click (pCVR x ppb)
                                    // under second price (auction.type gsp)
  // The same margin under first price (auction.type first_price or gfp), where the winner pays
  // its bid: 1 = the naive manual bidder bids its value per click (truthful), and the learned
  // action shades it (docs/dcmab.md, section 3).
  double first_price_margin = 1.0;
  // Advertisers with a target-CPA goal (goal: conversions, core/goal.h): each advertiser is one
  // with this probability (a draw of its own, so the rest of the world is the same whatever the
  // share), its target cpa_target_margin x its order value (the most a conversion may cost), and
  // its manual CPC bid target CPA x pCVR, the target-CPA bidder's rule (no noise). 0: none.
  double cpa_share = 0;
  double cpa_target_margin = 0.3;
  // Advertisers with a target-ROAS goal (goal: value): the same draw as cpa_share, the next
  // roas_share of it (cpa_share + roas_share <= 1), so a world's CPA advertisers stay the same
  // whatever roas_share is. Target ROAS 1 / roas_target_margin (the order value per unit spent,
  // at least), manual CPC bid pCVR x order value / target ROAS, the target-ROAS bidder's rule.
  double roas_share = 0;
  double roas_target_margin = 0.3;
  double bid_noise_sigma = 0.15;         // lognormal noise of human-set bids around that rule
  double min_bid = 0.05;                 // lowest manual CPC bid, currency units
  double max_bid = 30;                   // highest manual CPC bid, currency units
  int consumers = 30000;                 // number of consumers (users)
  double consumer_activity_sigma = 1.1;  // lognormal spread of how often a consumer shows up
  double consumer_value_sigma = 0.25;    // lognormal spread of consumer purchase propensity
  double consumer_click_sigma = 0.3;     // lognormal spread of consumer click propensity
};

// One simulated day of requests (a training or test day).
struct DayConfig {
  int64_t requests = 70000;   // bid requests in the day (each auctions `slots` ad slots)
  int steps = 3;              // T: time steps per day (episode length)
  int64_t step_minutes = 60;  // T_p: length of a step, minutes
  std::vector<double> traffic_by_step = {0.8, 1.0, 1.2};  // relative request rate per step
  std::vector<double> value_by_step = {0.85, 1.0, 1.2};   // order-value multiplier per step
  double candidates_mean = 15;     // mean candidate advertisers per request (Poisson)
  int candidates_min = 4;          // at least this many candidates per request
  int candidates_max = 60;         // at most this many
  double pctr_noise_sigma = 0.7;   // per-request lognormal noise on pCTR
  double pcvr_noise_sigma = 0.1;   // per-request lognormal noise on pCVR
  double value_noise_sigma = 0.2;  // per-request lognormal noise on order value
  // Floors (OpenRTB imp.bidfloor) are dynamic, as publishers set them from past clearing
  // prices: floor = floor_fraction x the request's clearing price under manual bids (the
  // eCPM of candidate slots+1, or of the last candidate) x lognormal(0, floor_sigma).
  double floor_fraction = 0.25;  // 0 = no floors
  double floor_sigma = 0.3;      // lognormal spread of the floor around that
};

// The auction rules (docs/dcmab.md section 3).
struct AuctionConfig {
  // How winners pay: "gsp" (generalized second price: rank s pays rank s+1's eCPM, the paper),
  // "gfp" (generalized first price: each of the `slots` winners pays its own bid) or
  // "first_price" (one winner per request pays its own bid: `slots` is taken as 1). The
  // exchange sends OpenRTB at = 2 for gsp, 1 for the other two.
  std::string type = "gsp";
  int slots = 3;             // ad slots per request; the top `slots` by eCPM win
  double reserve_cpm = 0.0;  // exchange-wide minimum reserve, currency units per thousand
                             // impressions; a request's reserve is max(this, its floor)
  // Click-through factor per slot (position discount), each finite and >= 0; empty = no discount
  // (the paper's setting).
  std::vector<double> slot_ctr_factors;
  std::string outcomes = "expected";  // "expected" (paper) or "sampled" (Bernoulli clicks/buys)

  bool first_price() const { return type != "gsp"; }
  Pricing pricing() const { return first_price() ? Pricing::kFirstPrice : Pricing::kSecondPrice; }
  int openrtb_at() const { return first_price() ? 1 : 2; }  // OpenRTB BidRequest.at
};

// How the market is cut into agents and how budgets are set.
struct MarketConfig {
  int agents = 3;                    // N advertiser clusters (agents); = advertisers for one each
  int consumer_clusters = 3;         // L consumer clusters
  double budget_fraction = 1.0 / 3;  // budget = fraction x cost under manual, unlimited budget
  double alpha_range = 0.9;          // alpha = clip(a x bratio, -range, range)
  std::string reward = "self";       // "self" (r_i = agent i's revenue) or "coordinated" (total)
};

struct SimulatorConfig {
  uint64_t seed = 1;  // world and day seed (overridden by --seed)
  WorldConfig world;
  DayConfig day;
  AuctionConfig auction;
  MarketConfig market;
  int burn_buckets = 36;  // buckets of the budget-burn timeline over the day
};

// Checks an auction type name: "gsp", "gfp" or "first_price".
Status CheckAuctionType(const std::string& type);

// One line for reports: the auction type and who pays what, e.g. "gfp (3 slots, each winner pays
// its own bid)".
std::string DescribeAuction(const AuctionConfig& a);

// The commands' --auction flag: its help and its values.
inline constexpr const char* kAuctionOptionHelp =
    "The world's auction: gsp | gfp | first_price (default: the simulator config's "
    "auction.type)";
inline const std::vector<std::string> kAuctionTypes = {"gsp", "gfp", "first_price"};

// Sets cfg's auction type (the commands' --auction flag); "" leaves it. first_price sets the
// world's slots to 1, as in the config (so a config written with first_price has one slot
// under any --auction).
Status OverrideAuctionType(SimulatorConfig* cfg, const std::string& type);

// Reads the config sections into cfg; validates ranges. Used by every config that embeds a
// simulator section (the learner's and the demo's).
void ReadSimulatorConfig(ConfigMap& root, SimulatorConfig* cfg);

// Loads a standalone simulator config file (configs/simulator/*.yaml).
Result<SimulatorConfig> LoadSimulatorConfig(const std::string& path);

}  // namespace rtb::sim
