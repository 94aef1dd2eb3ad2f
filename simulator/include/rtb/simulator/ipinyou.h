// Raw iPinYou impression logs (docs/replay.md section 2): tab-separated, one
// impression per line, a header row naming the columns (their order follows the header).
//
// Replay needs `click` and `payprice`; it uses `slotprice` (floor), `timestamp`
// (yyyyMMddHHmmssSSS, time order for the benchmark protocol) and `advertiser` (filter) when
// present, and `pctr` when the log carries predictions. Without a `pctr` column the pCTR comes
// from a hashed logistic-regression CTR model fitted on the training log over the categorical
// feature columns (the benchmark paper's model family), so raw logs replay with no
// preprocessing step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/simulator/replay.h"

namespace rtb::sim {

// The feature columns the CTR model uses when the header has them (iPinYou's names).
const std::vector<std::string>& DefaultIpinyouFeatures();

struct IpinyouReadOptions {
  bool skip_malformed = false;        // false: the first malformed line is an error
  std::string advertiser;             // keep only this advertiser's lines ("" = all)
  std::vector<std::string> features;  // CTR features; empty = DefaultIpinyouFeatures()
  int hash_bits = 20;                 // feature hashing space 2^bits
};

struct IpinyouLog {
  std::vector<LoggedAuction> auctions;     // in file order
  std::vector<int64_t> timestamps;         // per auction (0 when the log has no timestamp)
  std::vector<uint32_t> features;          // per auction `feature_count` hashed indices
  int feature_count = 0;                   // features found in the header
  std::vector<std::string> feature_names;  // which ones
  bool has_pctr = false;                   // the log has a pctr column
  bool has_floor = false, has_timestamp = false;
  int64_t skipped = 0;        // malformed lines skipped (skip_malformed)
  std::string first_skipped;  // "file:line: why" of the first one
  int64_t filtered = 0;       // lines of other advertisers

  // Campaign totals of this log (impressions, clicks, cost), as the RLB summary holds them.
  CampaignInfo Totals() const;
};

Result<IpinyouLog> ParseIpinyouLog(std::string_view text, const std::string& name,
                                   const IpinyouReadOptions& opt);
Result<IpinyouLog> ReadIpinyouLog(const std::string& path, const IpinyouReadOptions& opt);

// Reorders the auctions by timestamp (stable: equal times keep file order).
void SortByTime(IpinyouLog* log);

// Hashed logistic regression: p = sigmoid(w0 + sum_f w[h(f)]), SGD with L2, seeded order.
class CtrModel {
 public:
  explicit CtrModel(int hash_bits = 20);
  // Fits on the log's features and clicks. Each epoch visits the lines in a seeded order.
  void Fit(const IpinyouLog& log, int epochs, double learning_rate, double l2, uint64_t seed);
  double Predict(const uint32_t* features, int count) const;
  // Sets every auction's pctr from the model.
  void Score(IpinyouLog* log) const;
  // Mean log loss of the model on a log (for the report).
  double LogLoss(const IpinyouLog& log) const;

 private:
  std::vector<float> w_;
  float bias_ = 0;
};

// Lin-Bid's base bid tuned the way the RLB code does it: every b0 in {step, 2*step, ...,
// max_b0} is replayed on the validation log by `replay` (the protocol of the run), and the one
// with the most clicks wins (ties: the lower cost, then the smaller b0).
struct B0Tuning {
  int64_t b0 = 0;
  ReplayTotals best;
  std::vector<std::pair<int64_t, int64_t>> clicks_by_b0;  // (b0, clicks) for the report
};
B0Tuning TuneLinB0(const std::function<ReplayTotals(BidStrategy&)>& replay, double ctr_avg_train,
                   int64_t step = 6, int64_t max_b0 = 600);

}  // namespace rtb::sim
