#include "rtb/core/bid.h"

#include <cmath>

namespace rtb {

double BidRatio(double pcvr, double avg_pcvr) {
  if (!std::isfinite(avg_pcvr) || avg_pcvr <= 0 || !std::isfinite(pcvr) || pcvr < 0) return 1.0;
  return pcvr / avg_pcvr;
}

Micros CpmPrice(Micros cpc_bid, double pctr) {
  if (!(pctr > 0)) return Micros(0);
  return Micros(RoundHalfAway(static_cast<double>(cpc_bid.value()) * pctr * 1000.0));
}

}  // namespace rtb
