// Report math: the outcome counters of one agent (or campaign, or total) and the ratios every
// report shows. Pure functions; a ratio with a zero denominator is NaN ("n/a" in reports).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rtb/core/types.h"

namespace rtb {

struct Outcome {
  int64_t auctions = 0;     // auctions the row took part in (presences)
  int64_t impressions = 0;  // auctions won (slots)
  double clicks = 0;        // expected (or logged) clicks
  double conversions = 0;   // expected (or logged) conversions
  Micros cost;              // spend
  Micros revenue;           // order value earned
  Micros budget;            // the budget (0 = none set)

  Outcome& operator+=(const Outcome& o);
};

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline double SafeDiv(double num, double den) { return den != 0 ? num / den : kNaN; }

// ROI = revenue / cost.
inline double Roi(const Outcome& o) { return SafeDiv(o.revenue.units(), o.cost.units()); }
// Cost per (expected) click: the paper's "CPA".
inline double CostPerClick(const Outcome& o) { return SafeDiv(o.cost.units(), o.clicks); }
// Cost per conversion (CPA in the industry's sense).
inline double CostPerConversion(const Outcome& o) { return SafeDiv(o.cost.units(), o.conversions); }
// COST = cost / budget.
inline double CostOverBudget(const Outcome& o) { return SafeDiv(o.cost.units(), o.budget.units()); }
inline double WinRate(const Outcome& o) {
  return SafeDiv(static_cast<double>(o.impressions), static_cast<double>(o.auctions));
}
// Cost per thousand impressions.
inline double Cpm(const Outcome& o) {
  return SafeDiv(o.cost.units() * 1000.0, static_cast<double>(o.impressions));
}
// value as a percentage of base (100 = same).
inline double PercentOf(double value, double base) { return SafeDiv(100.0 * value, base); }

// Mean and sample standard deviation (n-1; 0 for a single value). NaNs are skipped.
struct MeanStd {
  double mean = kNaN;
  double std = kNaN;
  int n = 0;
};
MeanStd ComputeMeanStd(const std::vector<double>& xs);

}  // namespace rtb
