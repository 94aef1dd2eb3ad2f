#include "rtb/core/clustering.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace rtb {

Result<std::vector<uint32_t>> EqualShareCut(std::span<const double> value,
                                            std::span<const double> weight, int k) {
  const size_t n = value.size();
  if (weight.size() != n) {
    return Status::InvalidArgument("clustering: " + std::to_string(n) + " values but " +
                                   std::to_string(weight.size()) + " weights");
  }
  if (k < 1) return Status::InvalidArgument("clustering: need at least one cluster");
  if (static_cast<size_t>(k) > n) {
    return Status::InvalidArgument("clustering: " + std::to_string(k) + " clusters for " +
                                   std::to_string(n) + " items");
  }
  double total = 0;
  for (double w : weight) {
    if (!std::isfinite(w) || w < 0) {
      return Status::InvalidArgument("clustering: weights must be finite and non-negative");
    }
    total += w;
  }
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const double va = std::isfinite(value[a]) ? value[a] : -INFINITY;
    const double vb = std::isfinite(value[b]) ? value[b] : -INFINITY;
    return va < vb;
  });

  std::vector<uint32_t> group(n, 0);
  double before = 0;
  int current = 0;
  for (size_t r = 0; r < n; ++r) {
    const uint32_t item = order[r];
    const double w = weight[item];
    // The group holding this item's weight midpoint; with no weight at all, the rank decides.
    int target = total > 0 ? static_cast<int>(std::floor((before + w / 2) * k / total))
                           : static_cast<int>(r * k / n);
    target = std::clamp(target, 0, k - 1);
    const int remaining_after = static_cast<int>(n - r - 1);
    // Never skip a group (each stays non-empty) and leave enough items for the groups to come.
    const int lowest = std::max(current, k - 1 - remaining_after);
    const int highest = r == 0 ? 0 : std::min(current + 1, k - 1);
    target = std::clamp(target, lowest, std::max(lowest, highest));
    group[item] = static_cast<uint32_t>(target);
    current = target;
    before += w;
  }
  return group;
}

}  // namespace rtb
