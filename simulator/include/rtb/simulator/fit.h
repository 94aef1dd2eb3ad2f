// A world fitted to a market's own logged events (schemas/events-v1.md; docs/replay.md section
// 4): what the bidder's events say about its market, and days of auctions drawn from it that the
// auction engine (engine.h) plays as it plays a generated day.
//
//   - Volume: the logged bids per step of the day, per logged day.
//   - Requests: each logged bid's consumer cluster, advertiser, pCTR and pCVR, drawn again
//     (with replacement) within its step.
//   - Competition: the highest competing eCPM, log-normal, fitted by maximum likelihood to the
//     second-price auctions won (the clearing price: exact) and lost (above the bid: censored;
//     a first-price win says only that it was at most the bid). A drawn competing eCPM is the
//     request's floor, so the engine's one-slot second-price auction wins when the bid reaches
//     it, and pays it.
//   - Value: per (advertiser, cluster), the logged conversion value over the value the bidder
//     predicted (pCTR x pCVR x conversion value) on the impressions won; pooled over the agent's
//     advertisers in the cluster where an advertiser won fewer than `min_impressions` there. A
//     drawn candidate's order value is the conversion value x that lift, so the engine's
//     expected revenue (pCTR x pCVR x order value) is what the log says such an impression
//     earns.
//
// Not in the events, so not in the world: the bidder's choice among its candidates (one bid per
// request: the logged one stays whatever the actions), floors, and any request it did not bid on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtb/core/goal.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/market.h"
#include "rtb/simulator/outcome_replay.h"
#include "rtb/simulator/simulate.h"
#include "rtb/simulator/world.h"

namespace rtb::sim {

// An advertiser of the market as its bidder config declares it.
struct FitAdvertiser {
  int64_t id = 0;
  int agent = 0;
  Micros bid;               // manual CPC bid
  Micros daily_budget;      // the whole budget (both arms)
  Micros conversion_value;  // what a conversion is worth (0: unknown)
  Goal goal;
};

struct FitMarket {
  std::vector<FitAdvertiser> advertisers;
  int clusters = 1;  // L (the cluster map's)
  int steps = 24;    // T
  int64_t step_ms = 3'600'000;
  double learned_share = 0.5;  // the A/B test's learned arm
  int min_impressions = 30;    // fewer won in a cluster: the agent's pooled lift there
};

// One logged bid, as the fitted world draws it.
struct FittedBid {
  int step = 0;
  int cluster = 0;
  uint32_t adv = 0;  // index into FitMarket::advertisers
  double pctr = 0, pcvr = 0;
  bool manual_arm = false;
  int64_t day = 0;  // the logged day (from 0)
  // What the log says it got: won, at what clearing CPM (micros), for what conversion value.
  bool won = false;
  int64_t price_micros = 0;
  double value = 0;  // currency units
};

struct FittedWorld {
  FitMarket market;
  int days = 1;  // logged days
  std::vector<FittedBid> bids;
  // ln(highest competing eCPM, currency units) ~ N(mu, sigma^2), from `exact` clearing prices
  // and `censored` bounds.
  double comp_mu = 0, comp_sigma = 1;
  int64_t exact = 0, censored = 0;
  std::vector<double> lift;      // [adv * L + j]
  std::vector<double> avg_pcvr;  // per advertiser: its logged bids' mean pCVR
  // Per [step][cluster], per logged day, both arms: the value earned and the spend (x_j).
  std::vector<std::vector<double>> revenue_hist, cost_hist;

  std::string ToJson() const;
  static Result<FittedWorld> FromJson(const std::string& json, const std::string& name);
};

// Errors: no advertiser, a bid of an advertiser the market does not declare (named), no bid at
// all, a cluster outside [0, L), no auction won and none lost (nothing to fit competition to).
Result<FittedWorld> FitWorld(const OutcomeLog& log, const FitMarket& market);

// A day drawn from the fitted world (seeded): per step, round(logged bids / days x share) bids
// drawn from that step's, each with a competing eCPM drawn as its floor. Consumer c = cluster c.
Day DrawFittedDay(const FittedWorld& w, double share, uint64_t seed);
// The market the engine plays a fitted day in: agents and clusters as declared, consumer c in
// cluster c, the logged x_j history, d0 from `day`'s first step.
Market FittedMarket(const FittedWorld& w, const Day& day);
// Every advertiser's budget x share.
std::vector<Micros> FittedBudgets(const FittedWorld& w, double share);
// The engine's auction for a fitted day: one slot, second price, no reserve of its own.
AuctionConfig FittedAuction();

// The scenario `rtb train --world` trains in: `base` with the fitted market's agents, clusters,
// steps and auction (FittedAuction; base's outcomes), a training and a test day drawn from the
// fitted world (seeds Mix(base.seed, 1) and 2), training_days - 1 more and validation_days
// held out (100 + k, 200 + k), every advertiser's goal, and each day's budgets: the learned arm's
// part (`share` of the users and of every budget).
std::unique_ptr<Scenario> FittedScenario(const SimulatorConfig& base, const FittedWorld& w,
                                         double share, int training_days, int validation_days);

// The fit's own check: the manual arm's logged bids, each once, on the fitted world (competing
// eCPMs drawn, seeded) with manual bids and the manual arm's part of every budget, day by day,
// against what the log says those bids won, spent and earned.
struct FitCheck {
  int64_t bids = 0;
  double wins_log = 0, wins_fit = 0;
  double spend_log = 0, spend_fit = 0;  // currency units
  double value_log = 0, value_fit = 0;  // currency units
};
FitCheck CheckFit(const FittedWorld& w, uint64_t seed);

}  // namespace rtb::sim
