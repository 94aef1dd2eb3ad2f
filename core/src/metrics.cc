#include "rtb/core/metrics.h"

namespace rtb {

Outcome& Outcome::operator+=(const Outcome& o) {
  auctions += o.auctions;
  impressions += o.impressions;
  clicks += o.clicks;
  conversions += o.conversions;
  cost += o.cost;
  revenue += o.revenue;
  budget += o.budget;
  return *this;
}

MeanStd ComputeMeanStd(const std::vector<double>& xs) {
  MeanStd r;
  double sum = 0;
  for (double x : xs) {
    if (std::isnan(x)) continue;
    sum += x;
    ++r.n;
  }
  if (r.n == 0) return r;
  r.mean = sum / r.n;
  double ss = 0;
  for (double x : xs) {
    if (!std::isnan(x)) ss += (x - r.mean) * (x - r.mean);
  }
  r.std = r.n > 1 ? std::sqrt(ss / (r.n - 1)) : 0.0;
  return r;
}

}  // namespace rtb
