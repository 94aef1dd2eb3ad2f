// Training the single-campaign pacing policy (rtb/simulator/pacing.h) on a training log with
// the learner's actor-critic (Algorithm 1 with one agent and one cluster: actor mu, critic Q,
// target networks, soft updates) from a RocksDB (or memory) replay store.
//
// The auctions trained on (the training world): with `prices` "histogram" (the default), drawn
// from the campaign summary alone as RLB's model has them (market prices from
// price_counter_train, pCTRs from the training log's predictions when there is one, else
// clk_train / imp_train; sim::DrawAuctions), so a campaign released without a training log can
// be trained; with "log", the training log itself (its prices and pCTRs together).
//
// Episode loop: a window of N auctions is drawn from the training world (seeded), played under
// the RLB protocol with the actor plus exploration noise deciding at each of the K steps; the
// K transitions go to the replay store and every step is followed by `updates_per_step`
// minibatch updates. Every `eval_every` episodes the actor is turned into a table and replayed
// over the whole training world; the table with the most expected training clicks (sum of pCTR
// over won auctions: far less noisy than the few logged clicks) is kept (the learner's model
// selection on its training data, as `rtb train` does it). The zero table (the base bid alone,
// episode 0) is the first candidate, so the kept table never does worse than its base there.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/learner/config.h"
#include "rtb/simulator/pacing.h"
#include "rtb/simulator/replay.h"

namespace rtb::learn {

struct PacingTrainOptions {
  sim::RlbProtocol protocol;         // c0, N, max bid of the episodes trained on
  int steps = 10;                    // K decisions per episode
  std::string base = "lin";          // the bid the action scales: lin (Lin-Bid) | rlb (RLB's bid)
  std::string prices = "histogram";  // the training world: histogram (summary) | log (the
                                     // command line picks log when it is given a --log)
  int64_t world_auctions = 200000;   // auctions drawn for the histogram world
  int64_t b0 = 0;       // Lin-Bid base bid scaled by the action; 0 = tuned on the world
  double bratio = 1.0;  // action scale (the command line's default with --base rlb is 0.1)
  int episodes = 400;   // training episodes
  int eval_every = 20;  // episodes between table evaluations (model selection)
  uint64_t seed = 1;
  std::string store_dir;  // RocksDB replay store ("" = in memory)
  HyperParams hp;         // actor/critic sizes, learning rates, noise, batch, updates per step
  bool progress = true;
  // rlb base: also fit RLB's program to the training log by this many parts of the episode
  // (sim::RlbStepModel: a day's moving prices and CTRs) and keep it as the base when the parts
  // differ beyond their noise (its chi-squared test; 0: RLB's own only).
  int parts = 0;
  // Price buckets of the table (the state's price level: what the last step's wins paid against
  // the training log's mean price); 1: the price level is not part of the state.
  int price_buckets = 1;
  // Without a validation log: the share of the training log's last episodes held out to
  // compare tables on (0: none, tables compared on the training data). Training then reads the
  // campaign summary and the training log alone.
  double holdout = 0;
};

struct PacingTrainResult {
  sim::PacingTable table;
  sim::ReplayTotals base_train;  // the base bid alone (Lin-Bid's b0, or RLB), on the world or
                                 // the validation log
  sim::ReplayTotals best_train;  // the kept table, on the same
  // With a validation log: the base alone and the kept table on the training world (a table
  // is kept only when it is also at least as good as the base there).
  sim::ReplayTotals base_world, best_world;
  int rejected = 0;           // tables better on the validation log alone
  int best_episode = 0;       // when it was found
  std::vector<double> curve;  // training clicks per evaluation
  // parts > 0: RLB's own program and the program by part, each alone where tables are compared,
  // and whether the base became the one by part: when the training world's parts differ beyond
  // their noise (the test statistics of sim::RlbStepModel and their 0.999 critical value).
  sim::ReplayTotals rlb_own, rlb_by_part;
  double price_chi2 = 0, ctr_chi2 = 0, chi2_critical = 0;
  bool by_part = false;
};

// The rule training keeps a table by (expected clicks): more than the kept table where tables
// are compared, and, with a validation log, at least the base bid alone on the training world
// (`on_world` is called only when the first test passes: it replays the world).
bool KeepPacingTable(double candidate, double kept, bool validated,
                     const std::function<double()>& on_world, double base_world);

// Defaults for this small problem (smaller networks than the DCMAB ones, more updates).
HyperParams PacingHyperParams();

// `log` may be empty with prices "histogram" (pCTRs are then clk_train / imp_train). With a
// `validation` log, the tables (and the base alone) are compared on it instead of on the training
// world: the kept table is the one that does best on auctions it was not trained on, among those
// at least as good as the base alone on the training world too (a gain on one log alone can be
// that log's noise).
Result<PacingTrainResult> TrainPacing(const std::vector<sim::LoggedAuction>& log,
                                      const sim::CampaignInfo& info, const PacingTrainOptions& opt,
                                      const std::vector<sim::LoggedAuction>& validation = {});

}  // namespace rtb::learn
