// The demo's config (configs/demo/default.yaml; every field documented there and here) and
// its chaos specs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/exchange/exchange.h"

namespace rtb::demo {

struct DemoConfig {
  std::string learner_config = "learner.yaml";           // learner + world (relative to file)
  std::string bidder_config = "../bidder/default.yaml";  // base bidder config (limits, paths)
  std::string out = "out/demo";                          // report and every process's state
  int days = 4;                                          // simulated days played live
  bool pretrain = true;            // DCMAB trained offline first (learner config episodes)
  uint64_t first_day_seed = 1000;  // live day k is the world's day Mix(seed, this + k)
  int bidder_threads = 2;          // the bidder's I/O threads
  // The live A/B test: the learned arm's share of users and of every budget (the bidder's
  // ab.learned_share); the rest bid manual (a = 0) on the same days. 1 = no manual arm.
  double learned_share = 0.5;
  // Bidder processes behind the exchange. Above 1 they share every budget through leases and
  // one `rtb budget` (docs/budget-leases.md); the exchange spreads requests over them with
  // `bidder_spread` (one weight each; empty = equal).
  int bidders = 1;
  std::vector<double> bidder_spread;
  // The auction every part plays (the pre-training's world, the bidder's default_at, the
  // exchange): gsp,
  // gfp or first_price in place of the world config's auction.type; "" = the world's. Under
  // first price the world's manual bids are its values (world.first_price_margin).
  std::string auction;
  // The share of the world's advertisers with a target CPA (world.cpa_share) in every part
  // (pre-training, the bidder config's goals, the reports); -1 = the world config's.
  double cpa_share = -1;
  exchange::ExchangeConfig exchange;  // section exchange (bidder, brokers: set by the demo)
  std::vector<std::string> chaos;     // "kill-learner@D:S" / "kill-bidder@D:S[+step]": SIGKILL
                                      // that process while step S of live day D is played,
                                      // restart
};

Result<DemoConfig> LoadDemoConfig(const std::string& path);

// One chaos event: SIGKILL `what` during step `step` of live day `day`, restart it 1 s later
// (a bidder sharing budgets: past the coordinator's heartbeat timeout plus 1 s, or, with the
// spec's "+step" suffix, a step later, the exchange's traffic held until it is ready).
struct Chaos {
  std::string what;  // kill-learner | kill-bidder
  int64_t day = 0;
  int step = 0;
  bool step_later = false;  // kill-bidder@D:S+step
};

Result<std::vector<Chaos>> ParseChaos(const std::vector<std::string>& specs);

}  // namespace rtb::demo
