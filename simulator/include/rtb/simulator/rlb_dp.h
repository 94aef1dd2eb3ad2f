// RLB (Cai et al., WSDM 2017, "Real-Time Bidding by Reinforcement Learning in Display
// Advertising"): the value-function dynamic program of the paper's released code (its
// RLB_DP_I), as a replay strategy for the RLB protocol (docs/replay.md section 2).
//
// V(n, b) is the expected objective with n auctions left and budget b left, for a campaign
// whose market price has the p.d.f. m (the training log's price histogram, add-one smoothed in
// every bin) and whose clicks come at the training CTR theta_avg:
//
//   V(0, b) = 0
//   a(n, b) = the largest delta <= min(b, max_bid) with
//             v1 * theta_avg + gamma * (V(n-1, b - delta) - V(n-1, b)) - v0 * delta >= 0
//             (the code finds it by one downward scan of b per row)
//   V(n, b) = gamma * V(n-1, b)
//             + sum_{delta=0..a(n, b)} m(delta) * (v1 * theta_avg + gamma * (V(n-1, b - delta)
//                                                   - V(n-1, b)) - v0 * delta)
//
// with the code's early stop: once V(n, b) is within 1e-10 of V_max(n) = gamma * V_max(n-1) +
// sum_{delta<=a_max} m(delta) * (v1 * theta_avg - v0 * delta), V(n, b') = V_max(n) for every
// b' > b. At an auction with n auctions left (n counts down from N in every episode, the last,
// shorter one too), budget b and the auction's pCTR theta, the bid is the largest delta <=
// min(b, max_bid) with v1 * theta + gamma * (V(n-1, b - delta) - V(n-1, b)) - v0 * delta >= 0,
// scanning delta = 1, 2... and stopping at the first that fails (0 if delta = 1 fails).
//
// The sum over delta is evaluated as gamma * V(n-1, b) + (v1 * theta_avg - gamma * V(n-1, b)) *
// M(a) - v0 * D(a) + gamma * sum m(delta) V(n-1, b - delta) (M, D: prefix sums of m and delta *
// m), a dot product, instead of term by term: the same value up to rounding in the last bits.
//
// Re-derived for first price (RlbDpParams::first_price; the winner pays its bid a, and wins when
// the market price delta, the highest other bid, is at most a), for b >= 1 (V(n, 0) = 0, as the
// released code keeps it):
//
//   V(n, b) = gamma * V(n-1, b) + max_{a = 0..min(b, max_bid)} M(a) * (v1 * theta_avg
//             + gamma * (V(n-1, b - a) - V(n-1, b)) - v0 * a),   M(a) = sum_{delta <= a} m(delta)
//
// (winning no longer pays the market price, so there is no threshold rule: the bid is the
// arg max, found by a scan of every a, 8 at a time), V_max(n) = gamma * V_max(n-1) + max_a M(a) *
// (v1 * theta_avg - v0 * a) for the same early stop, and the bid at pCTR theta is the smallest
// arg max of the same expression with theta in theta_avg's place.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/simulator/replay.h"

namespace rtb::sim {

// calc_m_pdf of the released code: (count + laplace) / (total + bins * laplace) per bin.
std::vector<double> MarketPricePdf(const std::vector<int64_t>& counter, double laplace = 1.0);

struct RlbDpParams {
  int64_t episode_size = 1000;  // N: rows V(0..N-1, .) are computed
  int64_t budget = 0;           // B: columns b = 0..B
  int64_t max_bid = 300;
  double theta_avg = 0;   // clk_train / imp_train
  double v1 = 1, v0 = 0;  // objective v1 * clicks - v0 * cost (clicks: 1, 0)
  double gamma = 1;
  bool first_price = false;  // the winner pays its bid (above), not the market price
  // The market by part of the episode (RlbStepModel): the auction at position i of the episode
  // (i = N - n) has part i * K / N's price p.d.f. and CTR part_theta[k]. Empty: every auction
  // has m and theta_avg, RLB's own program.
  std::vector<double> part_theta;
  // Rows expected to be at least this long are cut over `threads` (0: the machine's, at most
  // two) threads. The values do not depend on either; tests lower them to reach every branch.
  int64_t split_budget = 4096;
  int threads = 0;
};

// The part (of `parts` equal ones) of an episode of N auctions that position pos (0-based) is in.
inline size_t EpisodePart(int64_t pos, int64_t N, int64_t parts) {
  return static_cast<size_t>(pos * parts / N);
}

class RlbValueFunction {
 public:
  // Errors: N < 1, B < 0, max_bid < 0, or an m with fewer than max_bid + 1 bins.
  static Result<RlbValueFunction> Compute(const RlbDpParams& p, const std::vector<double>& m_pdf);
  // With p.part_theta (K parts): one p.d.f. per part.
  static Result<RlbValueFunction> Compute(const RlbDpParams& p,
                                          const std::vector<std::vector<double>>& m_by_part);

  // V(n, b) for 0 <= n < N, 0 <= b <= B.
  double V(int64_t n, int64_t b) const {
    const Row& r = rows_[static_cast<size_t>(n)];
    return b < static_cast<int64_t>(r.v.size()) ? r.v[static_cast<size_t>(b)] : r.v_max;
  }
  // The bid with n auctions left (1 <= n <= N), budget b left (0 <= b <= B) and pCTR theta;
  // 0 outside those ranges.
  int64_t Bid(int64_t n, int64_t b, double theta) const;

  const RlbDpParams& params() const { return p_; }
  // Rows that reached V_max before b = B (the code's early stop).
  int64_t early_stopped_rows() const { return early_stopped_; }
  // Doubles held (every row up to where it reaches V_max).
  int64_t stored_values() const;

 private:
  struct Row {
    std::vector<double> v;  // V(n, 0..k); V(n, b) = v_max for b > k
    double v_max = 0;
  };
  // The part of the episode of the auction with n auctions left (0 without parts).
  size_t PartOf(int64_t n) const {
    const size_t k = masses_.size();
    if (k <= 1) return 0;
    return std::min(k - 1,
                    EpisodePart(p_.episode_size - n, p_.episode_size, static_cast<int64_t>(k)));
  }
  RlbDpParams p_;
  // Per part: M(a) = sum_{delta <= a} m(delta), a = 0..max_bid.
  std::vector<std::vector<double>> masses_;
  std::vector<Row> rows_;
  int64_t early_stopped_ = 0;
};

// The RLB strategy for ReplayRlb: the bid of RlbValueFunction::Bid with n = N - (position in the
// episode). The value function must have been computed for the protocol's N and B.
class RlbDpStrategy : public BidStrategy {
 public:
  explicit RlbDpStrategy(std::shared_ptr<const RlbValueFunction> v) : v_(std::move(v)) {}
  int64_t Bid(const LoggedAuction& a, const BidContext& ctx) override;
  std::string Describe() const override;

 private:
  std::shared_ptr<const RlbValueFunction> v_;
};

// The market of a campaign whose traffic moves over the day, by part of the episode: the episode
// (a day, when the log's days are N auctions) cut into K equal parts, each with its own market
// price histogram and CTR, fitted on a training log cut into episodes as the RLB protocol cuts
// it. RLB's program on it (RlbForStepModel) values the auctions to come by the part they fall
// in, where RLB's own takes every one for the average.
struct RlbStepModel {
  std::vector<double> theta;                 // per part: CTR, theta_avg x the part's mean pCTR /
                                             // the log's (pCTRs are steadier than a part's clicks)
  std::vector<std::vector<int64_t>> prices;  // per part: market price counts, 0..max_bid
  // Whether the parts differ by more than their samples do: for log(price + 1) and for log(pCTR),
  // sum over parts of n_k (mean_k - mean)^2 / the pooled within-part variance, chi-squared with
  // K - 1 degrees of freedom on a stationary log; `critical` is its 0.999 quantile. On a
  // stationary campaign both stay under it 999 times in 1000 (each), and RLB's own program is
  // the one to use; a day that moves by part lands far above it.
  double price_chi2 = 0;
  double ctr_chi2 = 0;
  double critical = 0;
  bool Drifts() const { return price_chi2 > critical || ctr_chi2 > critical; }
};
// The 0.999 quantile of chi-squared with `dof` degrees of freedom (Wilson-Hilferty; within 2%
// from 3 degrees of freedom on, 1% from 9).
double ChiSquared999(int dof);
Result<RlbStepModel> FitRlbStepModel(const std::vector<LoggedAuction>& log, int64_t episode_size,
                                     int parts, double theta_avg, int64_t max_bid);
Result<std::shared_ptr<const RlbValueFunction>> RlbForStepModel(const CampaignInfo& info,
                                                                const RlbProtocol& p,
                                                                const RlbStepModel& model);

// The value function for a campaign under the RLB protocol (`who`: what needs it, for the error
// when the summary has no histogram): B = RlbEpisodeBudget, m from
// info.price_counter_train, theta_avg = clk_train / imp_train, the click objective, gamma = 1.
Result<std::shared_ptr<const RlbValueFunction>> RlbForCampaign(
    const CampaignInfo& info, const RlbProtocol& p, const std::string& who = "--strategy rlb");

}  // namespace rtb::sim
