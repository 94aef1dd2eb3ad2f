// A learned single-campaign pacing policy for the RLB protocol (docs/replay.md section 2): the
// episode of N auctions is cut into K decision steps; at the start of each step the policy
// sees the state
//
//   s = [budget left / B, auctions left / N, 1, pCTR level, price level]
//
// (pCTR level = clip(log2(mean pCTR of the previous step / ctr_avg_train) / 2, -1, 1); price
// level, when the table has price buckets (PacingParams::price_avg > 0), = clip(log2(mean price
// paid on the previous step's wins / price_avg), -1, 1), 1 after a step without a win: what the
// bidder sees of the market's prices; both 0 at the episode's start) and chooses a in [-1, 1].
// Within the step every auction bids
//
//   a_bid = int(pCTR * b0 / ctr_avg_train * (1 + clip(a * bratio, -range, range)))
//
// (the multiplier is BidMultiplier of rtb/core/bid.h; range is PacingParams::alpha_range),
// i.e. the engine's bid formula applied to Lin-Bid. The state vector has the layout of the
// DCMAB learner's state for one agent and one cluster ([g_cost, g_revenue, onehot, x1, x2]),
// so `rtb-learner pacing` trains it with the same actor-critic code (Algorithm 1, N = L = 1).
// The learner publishes the policy as an immutable table over (step, budget left, pCTR level)
// that replay reads: no network runs during replay.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rtb/core/bid.h"
#include "rtb/core/status.h"
#include "rtb/simulator/replay.h"
#include "rtb/simulator/rlb_dp.h"

namespace rtb::sim {

struct PacingParams {
  int64_t b0 = 0;               // Lin-Bid base bid the action scales (lin base)
  double ctr_avg_train = 0;     // clk_train / imp_train
  double bratio = 1.0;          // action scale
  int64_t episode_size = 1000;  // N
  int steps = 10;               // K decision steps per episode
  // The bid the action scales: "lin" (Lin-Bid, int(pCTR * b0 / ctr_avg_train)) or "rlb" (RLB's
  // dynamic-program bid for the auctions and budget left, rtb/simulator/rlb_dp.h).
  std::string base = "lin";
  double c0 = 0;        // rlb base: the budget fraction the table was trained for
  int64_t max_bid = 0;  // rlb base: the bid cap it was trained with
  // rlb base: the market by part of the episode, fitted on the training log (empty: RLB's own
  // program on the campaign summary's one histogram). JSON "step_theta" and "step_prices".
  RlbStepModel step_model;
  // The auction it was trained in: false second price (the logs' own), true first price (a win
  // pays the bid). JSON "auction": "first_price", absent for second price.
  bool first_price = false;
  // The clip of a x bratio: bids move within [1 - range, 1 + range] x the base bid. Not in the
  // table's JSON: tables are trained and replayed at the default, the paper's 0.9.
  double alpha_range = kDefaultAlphaRange;
  // The price level's reference: the training log's mean price paid (cost_train / imp_train);
  // 0: the state's price level stays 0 (tables without price buckets). JSON "price_avg".
  double price_avg = 0;
};

// The table the learner publishes (schemas/pacing-table-v1.md).
struct PacingTable {
  PacingParams params;
  int budget_buckets = 21;     // budget left / B at 0, 1/20, ..., 1 (nearest)
  int level_buckets = 9;       // pCTR level at -1, -0.75, ..., 1 (nearest)
  int price_buckets = 1;       // price level at -1 ... 1 (nearest); 1: not read (JSON: absent)
  std::vector<float> actions;  // [step][budget bucket][level bucket][price bucket]

  // The action for a state vector (the layout above); step k = K - ceil(left * K).
  double Lookup(const std::vector<float>& s) const;
  // The state at the centre of every cell, in table order (what the learner evaluates).
  std::vector<std::vector<float>> CellStates() const;
  std::string ToJson() const;
  static Result<PacingTable> FromJson(const std::string& json, const std::string& name);
};
Result<PacingTable> ReadPacingTable(const std::string& path);

// One decision step, recorded for training: (s, a, r, s2, done).
struct PacingStep {
  std::vector<float> s, s2;
  double a = 0;
  double reward = 0;  // expected clicks won in the step (sum of pCTR) / (ctr_avg * N / K)
  int64_t clicks = 0;
  bool done = false;
};

// The pacing policy as a replay strategy. `policy` maps a state to a in [-1, 1] (a table
// lookup, or the learner's actor with exploration noise while training).
class PacingStrategy : public BidStrategy {
 public:
  using Policy = std::function<double(const std::vector<float>&)>;
  // `rlb`: the value function of the rlb base (null for lin), computed for the protocol's N, B.
  PacingStrategy(const PacingParams& p, Policy policy, bool record,
                 std::shared_ptr<const RlbValueFunction> rlb = nullptr);
  int64_t Bid(const LoggedAuction& a, const BidContext& ctx) override;
  void Observe(const LoggedAuction& a, int64_t bid, bool won, int64_t paid) override;
  std::string Describe() const override;
  // Closes the open step (the end of the last episode). Replay functions call it implicitly
  // at every episode change; call it after the replay returns.
  void Finish();
  // The recorded steps (record = true), in play order.
  const std::vector<PacingStep>& steps() const { return steps_; }

 private:
  std::vector<float> State(int64_t budget_left, int64_t auctions_left) const;
  void CloseStep(const std::vector<float>& s2, bool done);

  PacingParams p_;
  std::shared_ptr<const RlbValueFunction> rlb_;
  Policy policy_;
  bool record_;
  bool open_ = false;
  int64_t episode_ = -1, bucket_ = -1;
  double multiplier_ = 1;
  int64_t budget_ = 0, budget_left_ = 0;
  double level_ = 0, price_level_ = 0;
  double pctr_sum_ = 0;
  int64_t seen_ = 0;
  double paid_sum_ = 0;
  int64_t wins_ = 0;
  PacingStep cur_;
  std::vector<PacingStep> steps_;
};

// The state vector (the layout above).
std::vector<float> PacingState(double budget_left_frac, double auctions_left_frac, double level,
                               double price_level = 0);

}  // namespace rtb::sim
