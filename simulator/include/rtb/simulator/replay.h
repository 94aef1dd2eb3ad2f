// Offline replay of single-bidder logs with the market price (docs/replay.md
// section 2): the RLB code's compact log (`click payprice pCTR` per line) with its campaign
// summary, and the two protocols, as pure functions with integer arithmetic where the
// reference uses it.
//
//   RLB (episodes): the log in file order is cut into episodes of N auctions (the last may be
//   shorter); every episode starts with B = int(cpm_train * c0 * N); per auction the strategy
//   proposes an integer bid a, a = min(a, max_bid), a = min(a, budget left); win iff
//   a >= payprice, then impressions += 1, clicks += click, budget and cost move by payprice
//   (second price, the logs' own auction) or by a (first price: the winner pays its bid).
//   Benchmark paper: the whole log once, budget = fraction x total test cost; win iff
//   bid > payprice and bid >= floor; once cost exceeds the budget every bid is 0 (the last
//   impression may overspend).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rtb/core/metrics.h"
#include "rtb/core/rng.h"
#include "rtb/core/status.h"

namespace rtb::sim {

struct LoggedAuction {
  int32_t click = 0;
  int64_t payprice = 0;  // market price (CPM, the log's integer unit)
  double pctr = 0;
  int64_t floor = 0;  // slot price (CPM); 0 when the log has none
};

struct CampaignInfo {  // the RLB code's campaign summary (JSON)
  int64_t imp_train = 0, clk_train = 0;
  double cost_train = 0;
  int64_t imp_test = 0, clk_test = 0;
  double cost_test = 0;
  // Won auctions of the training log per market price 0, 1, 2... (RLB's histogram, the input
  // of its dynamic program; empty when the summary has none).
  std::vector<int64_t> price_counter_train;
  double CpmTrain() const { return cost_train / static_cast<double>(imp_train); }
  double CtrTrain() const {
    return static_cast<double>(clk_train) / static_cast<double>(imp_train);
  }
  double EcpcTrain() const { return cost_train / static_cast<double>(clk_train); }
};

struct ReadOptions {
  bool skip_malformed = false;  // false: the first malformed line is an error
};

struct CompactLog {
  std::vector<LoggedAuction> auctions;
  int64_t skipped = 0;        // malformed lines skipped (skip_malformed)
  std::string first_skipped;  // "file:line: why" of the first one
};

// Parses the compact format; errors name the file and line. Blank lines are malformed too.
Result<CompactLog> ParseCompactLog(std::string_view text, const std::string& name,
                                   const ReadOptions& opt);
Result<CompactLog> ReadCompactLog(const std::string& path, const ReadOptions& opt);
Result<CampaignInfo> ParseCampaignInfo(const std::string& json, const std::string& name);
Result<CampaignInfo> ReadCampaignInfo(const std::string& path);

// What a strategy sees at each auction.
struct BidContext {
  int64_t budget_left = 0;    // in the episode (RLB) or the whole budget (benchmark)
  int64_t auctions_left = 0;  // in the episode, this one included
  int64_t step = 0;           // this auction's position in the episode (0 = its first)
  int64_t episode = 0;
  int64_t budget = 0;        // the episode's (or the whole log's) budget
  int64_t episode_size = 0;  // N (RLB; the last episode may be shorter) or the log's length
};

class BidStrategy {
 public:
  virtual ~BidStrategy() = default;
  virtual int64_t Bid(const LoggedAuction& a, const BidContext& ctx) = 0;
  // What came of the bid (after the protocol's caps): whether it won and what it paid (the
  // market price under second price, the bid under first price). Stateful strategies learn
  // from it.
  virtual void Observe(const LoggedAuction& /*a*/, int64_t /*bid*/, bool /*won*/,
                       int64_t /*paid*/) {}
  virtual std::string Describe() const = 0;
};

// Lin-Bid: int(pCTR * b0 / ctr_avg_train).
std::unique_ptr<BidStrategy> LinBid(int64_t b0, double ctr_avg_train);
// Mcpc: int(pCTR * ecpc_train).
std::unique_ptr<BidStrategy> McpcBid(double ecpc_train);
// Const(c).
std::unique_ptr<BidStrategy> ConstBid(int64_t c);
// Rand(max): uniform integer in [0, max], seeded.
std::unique_ptr<BidStrategy> RandBid(int64_t max, uint64_t seed);

struct ReplayTotals {
  int64_t auctions = 0, impressions = 0, clicks = 0;
  int64_t cost = 0;    // sum of payprice of won auctions (log units, CPM)
  int64_t budget = 0;  // per episode (RLB) or total (benchmark)
  int64_t episodes = 0;
  double expected_clicks = 0;  // sum of pCTR over won auctions (a low-variance click count)
  double WinRate() const;
  double Cpm() const;   // cost / impressions
  double Ecpc() const;  // cost / clicks / 1000, as the RLB code reports it
};

// The totals as the engine's report row. A log unit is a price per thousand impressions, so
// one impression at payprice p costs p / 1000 units = p * 1000 micros; budget likewise (per
// episode x episodes under the RLB protocol). Clicks are the logged ones.
Outcome ToOutcome(const ReplayTotals& t);

struct RlbProtocol {
  double c0 = 1.0 / 32;  // budget fraction of cpm_train x N
  int64_t episode_size = 1000;
  int64_t max_bid = 300;
  // false: a win pays the logged market price (second price, how the logs were made); true: a
  // win pays the bid (first price; the logged price is the highest competing bid, which the
  // bid must reach).
  bool first_price = false;
};

// The single-bidder protocol's auctions, as --auction (rtb replay, rtb train-pacing) and a
// pacing table's "auction" name them: second price (the logs' own), first price.
inline const std::vector<std::string> kReplayAuctions = {"second_price", "first_price"};
// true for "first_price", false for "second_price"; other names are errors.
Result<bool> ParseReplayAuction(const std::string& name);

// B = int(cpm_train * c0 * N): every episode's budget (the last, shorter one too).
int64_t RlbEpisodeBudget(const CampaignInfo& info, const RlbProtocol& p);

ReplayTotals ReplayRlb(const std::vector<LoggedAuction>& log, const CampaignInfo& info,
                       const RlbProtocol& p, BidStrategy& strategy);

struct BenchmarkProtocol {
  double budget_fraction = 1.0 / 32;  // of the total test cost (cost_test, else the log's)
};

ReplayTotals ReplayBenchmark(const std::vector<LoggedAuction>& log, const CampaignInfo& info,
                             const BenchmarkProtocol& p, BidStrategy& strategy);

// How a synthetic campaign's traffic moves, as logged traffic does over a day and across days
// (GenerateCompactLog). The default, day_auctions 0, is stationary: every line drawn alike.
struct LogDrift {
  // Auctions per day (0: stationary). Line i is at u = (i mod day_auctions) / day_auctions of
  // day first_day + i / day_auctions; with day_auctions = the RLB protocol's N (1000) an episode
  // is one day.
  int64_t day_auctions = 0;
  int64_t first_day = 0;
  // Prices x exp(price_swing x sin(2 pi (u - 1/4))): cheapest at the day's start and end,
  // dearest at midday. pCTRs x exp(ctr_swing x sin(2 pi (u - 1/2))): low in the morning, high in
  // the evening. So the cost of a click moves over the day.
  double price_swing = 0.5;
  double ctr_swing = 0.3;
  // Each day's own level: prices x exp(day_sigma x z_day), pCTRs x exp(day_sigma / 2 x z'_day)
  // (z normal, drawn per (campaign, day index): a day has the same levels in any of its logs).
  double day_sigma = 0.2;
  uint64_t campaign = 0;
  // Prices x exp(trend x day) across the logs: a later log is dearer than the training summary.
  double trend = 0.0005;
};

// A synthetic campaign in the compact format with a market-price model (seeded): pCTR
// lognormal around 0.1%, clicks drawn from it, and a market price that rises with pCTR
// (lognormal around 80, capped at 300), as in iPinYou's second-price logs; `drift` moves prices
// and pCTRs within and across days (stationary by default: the stream of the old generator).
// Returns the log's text and fills `info` with its totals and its price histogram (0..300; used
// as both the train and the test summary).
std::string GenerateCompactLog(int64_t lines, uint64_t seed, CampaignInfo* info,
                               const LogDrift& drift = {});

// Auctions drawn from what a campaign summary says (RLB's model of the market): the market
// price from price_counter_train (add-one smoothed, as RLB's program reads it), the pCTR from
// `pctrs` (drawn with replacement; a training log's predictions) or clk_train / imp_train for
// every auction when `pctrs` is empty, the click drawn from the pCTR. Seeded.
Result<std::vector<LoggedAuction>> DrawAuctions(const CampaignInfo& info,
                                                const std::vector<double>& pctrs, int64_t count,
                                                uint64_t seed);
std::string CampaignInfoJson(const CampaignInfo& info);

}  // namespace rtb::sim
