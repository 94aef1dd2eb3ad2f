// The DCMAB bid formula (docs/dcmab.md section 2), shared by the bidder, the simulator and replay.
//
//   bratio_k  = pCVR_k / pCVR_avg_k          (1 when the average is unknown)
//   alpha     = clip(a_ij * bratio_k, -range, +range)
//   bid_hat_k = bid_k * (1 + alpha)           so bids stay within [1-range, 1+range] x bid_k
//   bid_k     = bid_hat_k / (1 + alpha)       (UndoAdjustedBid: replay's manual counterfactual)
#pragma once

#include <cmath>

#include "rtb/core/types.h"

namespace rtb {

// Default clip range of alpha (the paper's 0.9).
inline constexpr double kDefaultAlphaRange = 0.9;

// pCVR over the advertiser's average pCVR; 1 when the average is unknown (<= 0 or not finite)
// or the pCVR itself is not finite.
double BidRatio(double pcvr, double avg_pcvr);

// clip(action * bratio, -range, range). A non-finite product gives 0 (manual bid).
// Inline: the simulator computes it for every candidate of every simulated auction.
inline double Alpha(double action, double bratio, double range = kDefaultAlphaRange) {
  const double x = action * bratio;
  if (!std::isfinite(x)) return 0.0;
  // std::clamp(x, -range, range), in two steps a compiler turns into max/min instructions
  // (policies clip often, with no pattern a branch predictor could follow).
  const double lo = -range;
  const double above = x < lo ? lo : x;
  return range < above ? range : above;
}

// What the formula multiplies a bid by: 1 + Alpha(action, bratio, range), within
// [1 - range, 1 + range]. For a bid that is not whole micros (the pacing agent's Lin-Bid or RLB
// bid, truncated after scaling); AdjustedBid is this for a bid in micros.
inline double BidMultiplier(double action, double bratio, double range = kDefaultAlphaRange) {
  return 1.0 + Alpha(action, bratio, range);
}

// The adjusted CPC bid in micros, rounded to the nearest micro (halves away from zero). Never
// negative.
inline Micros AdjustedBid(Micros manual_bid, double action, double bratio,
                          double range = kDefaultAlphaRange) {
  const double v = static_cast<double>(manual_bid.value()) * BidMultiplier(action, bratio, range);
  return v <= 0 ? Micros(0) : Micros(RoundHalfAway(v));
}

// The manual bid an adjusted bid was made from: adjusted_bid / (1 + alpha), rounded to the
// nearest micro (halves away from zero), where alpha is the Alpha() the bid was adjusted with
// (what the bidder logs with each bid). The formula is linear in the bid, so this undoes it on
// any price proportional to the CPC bid too (the CPM price sent, replay's "manual" strategy).
// It undoes AdjustedBid up to the two roundings: for a manual bid b and alpha = Alpha(action,
// bratio, range), UndoAdjustedBid(AdjustedBid(b, action, bratio, range), alpha) is within
// 0.5 / (1 + alpha) micros of b, rounded: b itself when alpha >= 0, at most 5 micros off at
// the default range's alpha = -0.9.
// REQUIRES: adjusted_bid >= 0; alpha > -1 (every clip range is below 1).
inline Micros UndoAdjustedBid(Micros adjusted_bid, double alpha) {
  return Micros(RoundHalfAway(static_cast<double>(adjusted_bid.value()) / (1.0 + alpha)));
}

// OpenRTB CPM price in micros: CPC bid x pCTR x 1000, rounded to whole micros.
Micros CpmPrice(Micros cpc_bid, double pctr);

// An advertiser with less budget left than this has left the day: it computes no bid (the
// simulator's engine and the bidder alike).
inline constexpr int64_t kMinBudgetLeftMicros = 100;

// What one won impression can charge at most, for a CPC bid.
enum class ChargeBasis {
  kExpected,  // cpc x pCTR: expected outcomes (the simulator), or a CPM-billed impression
              // (the bidder: its CPM price / 1000)
  kPerClick,  // cpc: one sampled click
};

// The budget rule shared by the simulator's engine and the bidder: a bid never risks more than
// the budget left. Returns the CPC bid lowered so that its largest charge fits in
// left_micros (to floor(left / pCTR) for kExpected, to left for kPerClick), or unchanged when
// it fits. REQUIRES: pctr > 0 for kExpected.
inline Micros CapBidToBudget(Micros cpc_bid, double pctr, int64_t left_micros, ChargeBasis basis) {
  if (basis == ChargeBasis::kPerClick) {
    return cpc_bid.value() > left_micros ? Micros(left_micros) : cpc_bid;
  }
  if (static_cast<double>(cpc_bid.value()) * pctr > static_cast<double>(left_micros)) {
    return Micros(static_cast<int64_t>(static_cast<double>(left_micros) / pctr));
  }
  return cpc_bid;
}

}  // namespace rtb
