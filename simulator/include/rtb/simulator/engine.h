// AuctionEngine: runs the auctions of a day, step by step, under an action table, with hard
// budgets (docs/dcmab.md section 3). The hot loop of the simulator, of training and of
// full-information replay.
//
// Per request of consumer cluster j, per candidate advertiser k of agent i still in the day:
//   bid_hat = AdjustedBid(bid_k, a[i][j], BidRatio(pCVR, avg pCVR_k))   (shared bid formula)
//   eCPM    = bid_hat x pCTR
// A bid is capped so that its largest possible charge (its own eCPM) fits in the budget left,
// the same "reserve the largest possible charge" rule the bidder applies, so spend never
// exceeds the budget; once less than kSpentMicros is left the advertiser leaves the day. The
// top `slots` by eCPM win (SlotAuction), paying the next eCPM or the request's reserve
// (max(its floor, the exchange minimum)) under GSP, their own eCPM under first price
// (auction.type).
// Expected outcomes: cost = price, clicks = pCTR, conversions = pCTR x pCVR,
// revenue = pCTR x pCVR x ppb (times the slot factor when configured). Sampled outcomes draw
// clicks and conversions instead and charge per click.
//
// Not thread-safe; one engine per thread. The engine keeps references to day and market.
#pragma once

#include <memory>
#include <vector>

#include "rtb/core/action_table.h"
#include "rtb/core/auction.h"
#include "rtb/core/bid.h"
#include "rtb/core/metrics.h"
#include "rtb/core/rng.h"
#include "rtb/simulator/market.h"
#include "rtb/simulator/world.h"

namespace rtb::sim {

// What an engine precomputes for a day and its market: built once per day and shared read-only
// by every engine on that day (the training loop evaluates the same days every episode).
struct DayIndex {
  std::vector<uint16_t> cand_agent;   // per candidate: its advertiser's agent
  std::vector<double> cand_bratio;    // per candidate: BidRatio(pCVR, its advertiser's average)
  std::vector<uint16_t> req_cluster;  // per request: its consumer's cluster
};
std::shared_ptr<const DayIndex> IndexDay(const Day& day, const Market& market);

class AuctionEngine {
 public:
  // A budget with less than this left (0.0001 currency units) counts as spent.
  static constexpr int64_t kSpentMicros = kMinBudgetLeftMicros;  // core/bid.h
  static constexpr int kDefaultBurnBuckets = 36;                 // budget-burn chart buckets a day

  // budgets: per advertiser; empty = unlimited. index: IndexDay(day, market), or null to build
  // it here (an index whose sizes are not the day's is not used).
  AuctionEngine(const Day& day, const Market& market, const AuctionConfig& acfg, double alpha_range,
                std::vector<Micros> budgets, int burn_buckets = kDefaultBurnBuckets,
                std::shared_ptr<const DayIndex> index = nullptr);

  // Starts the day again (budgets full, counters zero). seed drives sampled outcomes only.
  void Reset(uint64_t seed);
  // Runs every auction of the next step under table a. REQUIRES: !done(), a is N x L.
  void RunStep(const ActionTable& a);
  // Runs the rest of the day under one table.
  void RunToEnd(const ActionTable& a);
  bool done() const { return step_ >= day_.steps; }
  int step() const { return step_; }

  const Day& day() const { return day_; }
  const Market& market() const { return market_; }
  // Per advertiser outcome so far (budget filled in).
  const std::vector<Outcome>& advertiser_outcomes() const { return adv_; }
  // Per agent outcome so far (sum over its advertisers).
  std::vector<Outcome> AgentOutcomes() const;
  // Cumulative cost and revenue per (agent i, cluster j) since the day began (g of the paper),
  // index i*L+j, micros.
  const std::vector<Micros>& pair_cost() const { return pair_cost_; }
  const std::vector<Micros>& pair_revenue() const { return pair_revenue_; }
  // Revenue per agent earned in the last step (micros).
  const std::vector<Micros>& last_step_revenue() const { return step_revenue_; }
  // Share of bid computations per (i, j) in the last step (d of the paper); d0 before any step.
  const std::vector<double>& last_d() const { return d_; }
  // Per agent: cumulative cost / budget at the end of each burn bucket.
  std::vector<std::vector<double>> BudgetBurn() const;
  double burn_bucket_minutes() const;
  const std::vector<Micros>& budgets() const { return budgets_; }
  // When on, the engine records revenue and cost per request (for clustering consumers).
  void TrackRequests(bool on) { track_requests_ = on; }
  const std::vector<int64_t>& request_revenue() const { return req_revenue_; }
  const std::vector<int64_t>& request_cost() const { return req_cost_; }
  int64_t auctions_run() const { return auctions_; }
  // Bids and ranks each request's candidates with AVX-512 when the CPU has it and the market
  // has at most 8 agents (on by default): the same IEEE operations per candidate as the scalar
  // loop, so the same outcomes bit for bit (tests/simulator/engine_test.cc). Off: the scalar
  // loop everywhere. Returns whether the vector path is now in use.
  bool UseSimd(bool on);
  bool simd() const { return simd_; }
  // Requests since Reset whose candidates the vector path bid and ranked.
  int64_t simd_requests() const { return simd_requests_; }

  // Budgets served by several bidders (docs/budget-leases.md, section 8): each request goes to
  // one of `bidders` (uniformly, drawn from `seed`), and a candidate's bid is capped by that
  // bidder's piece of what its budget has left instead of the whole of it. The pieces are set
  // by an ideal coordinator that knows every budget and rebalances before every request with no
  // delay; the rules:
  //   kEven:      every bidder holds an equal part of what is left.
  //   kWhole:     equal parts while each covers the bid about to be made (its largest charge);
  //               below that, whole bids first: bidders in a random order per (request,
  //               advertiser), the r-th holding min(bid, what is left past r bids). It knows
  //               the bid before it is made, which no coordinator can: the ceiling.
  //   kWholeMean: kWhole with a running mean of the advertiser's bids' charges (a coordinator
  //               that hears of them) as the unit.
  // 1 bidder (the default) is the engine's usual rule. Turns the vector path off when > 1.
  enum class SplitRule { kEven, kWhole, kWholeMean };
  void SplitBudgets(int bidders, SplitRule rule, uint64_t seed);

 private:
  void RunRequests(size_t from, size_t to, const ActionTable& a);
  // RunRequests' phases, defined inline in engine.cc (the training loop's hot path).
  // OfferScalar: request r's bids on the scalar path (a_j: a[i][j] by agent i for its cluster
  // j); writes the candidates still in the day to offers, counts them in d_j (stride: clusters)
  // and presences_, and returns how many. REQUIRES: offers holds the request's candidates.
  inline int OfferScalar(size_t r, const double* a_j, int64_t* d_j, bool sampled,
                         AuctionEntry* offers);
  // SettleWinners: charges the winners of request r (cluster j, burn bucket `bucket`) and books
  // their outcomes (expected, or drawn when sampled).
  inline void SettleWinners(size_t r, int j, const SlotResult* won, int winners, bool sampled,
                            int64_t bucket);

  const Day& day_;
  const Market& market_;
  AuctionConfig acfg_;
  double range_;
  int burn_buckets_;
  std::vector<Micros> budgets_;
  bool unlimited_;
  std::vector<size_t> step_begin_;
  // Precomputed per candidate / request (index_'s arrays).
  std::shared_ptr<const DayIndex> index_;
  const uint16_t* cand_agent_;
  const double* cand_bratio_;
  const uint16_t* req_cluster_;
  std::vector<double> slot_factor_;
  double reserve_ecpm_;

  // State of the day.
  int step_ = 0;
  Rng rng_{0};
  std::vector<int64_t> remaining_;
  std::vector<uint8_t> gone_;
  std::vector<Outcome> adv_;
  std::vector<int64_t> presences_;
  std::vector<Micros> pair_cost_, pair_revenue_, step_revenue_;
  std::vector<double> d_;
  std::vector<int64_t> burn_cost_;  // [agent * buckets + bucket] cost within the bucket
  int64_t auctions_ = 0;
  bool track_requests_ = false;
  bool simd_ = false;
  int64_t simd_requests_ = 0;
  int split_bidders_ = 1;
  SplitRule split_rule_ = SplitRule::kEven;
  uint64_t split_seed_ = 0;
  std::vector<int64_t> split_unit_;  // kWholeMean: per advertiser, the running mean charge
  std::vector<int64_t> req_revenue_, req_cost_;
};

// Per-advertiser budgets: fraction x the advertiser's cost on `day` under manual bids with
// unlimited budget (docs/dcmab.md section 3).
std::vector<Micros> ComputeBudgets(const Day& day, const Market& market, const AuctionConfig& acfg,
                                   double fraction);

}  // namespace rtb::sim
