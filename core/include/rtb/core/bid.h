// The DCMAB bid formula (dcmab.md section 2), shared by the bidder, the simulator and replay.
//
//   bratio_k  = pCVR_k / pCVR_avg_k          (1 when the average is unknown)
//   alpha     = clip(a_ij * bratio_k, -range, +range)
//   bid_hat_k = bid_k * (1 + alpha)           so bids stay within [1-range, 1+range] x bid_k
#pragma once

#include "rtb/core/types.h"

namespace rtb {

// Default clip range of alpha (the paper's 0.9).
inline constexpr double kDefaultAlphaRange = 0.9;

// pCVR over the advertiser's average pCVR; 1 when the average is unknown (<= 0 or not finite)
// or the pCVR itself is not finite.
double BidRatio(double pcvr, double avg_pcvr);

// clip(action * bratio, -range, range). A non-finite product gives 0 (manual bid).
double Alpha(double action, double bratio, double range = kDefaultAlphaRange);

// The adjusted CPC bid in micros, rounded to the nearest micro. Never negative.
Micros AdjustedBid(Micros manual_bid, double action, double bratio,
                   double range = kDefaultAlphaRange);

// Expected cost per impression (eCPM per single impression, in micros) of a CPC bid:
// cpc_bid x pCTR. The OpenRTB CPM price is this value x 1000.
inline double ExpectedImpressionValue(Micros cpc_bid, double pctr) {
  return static_cast<double>(cpc_bid.value()) * pctr;
}

// OpenRTB CPM price in micros: CPC bid x pCTR x 1000, rounded to whole micros.
Micros CpmPrice(Micros cpc_bid, double pctr);

}  // namespace rtb
