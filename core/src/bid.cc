#include "rtb/core/bid.h"

#include <algorithm>
#include <cmath>

namespace rtb {

double BidRatio(double pcvr, double avg_pcvr) {
  if (!std::isfinite(avg_pcvr) || avg_pcvr <= 0 || !std::isfinite(pcvr) || pcvr < 0) return 1.0;
  return pcvr / avg_pcvr;
}

double Alpha(double action, double bratio, double range) {
  const double x = action * bratio;
  if (!std::isfinite(x)) return 0.0;
  return std::clamp(x, -range, range);
}

Micros AdjustedBid(Micros manual_bid, double action, double bratio, double range) {
  const double v = static_cast<double>(manual_bid.value()) * (1.0 + Alpha(action, bratio, range));
  return v <= 0 ? Micros(0) : Micros(std::llround(v));
}

Micros CpmPrice(Micros cpc_bid, double pctr) {
  if (!(pctr > 0)) return Micros(0);
  return Micros(std::llround(static_cast<double>(cpc_bid.value()) * pctr * 1000.0));
}

}  // namespace rtb
