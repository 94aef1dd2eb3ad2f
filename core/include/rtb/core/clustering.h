// Clustering by revenue with equal shares (docs/dcmab.md section 1), as a pure function.
//
// Advertisers are ranked by revenue and cut into N clusters of about equal presences;
// consumers are ranked by revenue and cut into L clusters of about equal request counts.
// Both are EqualShareCut(value = revenue, weight = presences or requests, k).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "rtb/core/status.h"

namespace rtb {

// Ranks items by value ascending (ties: lower index first) and cuts the ranking into k
// consecutive groups of about equal total weight. Group 0 holds the lowest values.
// Guarantees: groups are contiguous in rank order; when n >= k every group is non-empty (so
// k == n gives one item per group); an item goes to the group that holds the midpoint of its
// weight, unless that would leave a group empty. Zero-weight items follow the rule too.
// Errors: value and weight of different sizes, k < 1, k > n, a negative or non-finite weight.
Result<std::vector<uint32_t>> EqualShareCut(std::span<const double> value,
                                            std::span<const double> weight, int k);

}  // namespace rtb
