// The policy message: what the learner publishes and every bidder reads (schemas/policy-v1.md).
// One codec, here, used at both ends: the learner encodes a PolicyMessage, the bidder decodes
// the bytes once into the typed value it installs.
//
//   {"table": <action table v1>, "clusters": <cluster map v1> | null,
//    "alpha_range": 0.9, "for": {"day": d, "step": s}}
//
// The action table a[i][j] says how far to move each bid; alpha_range is the clip of
// a[i][j] x bratio that the table was trained with (core/bid.h): it travels with the table so
// that a table is never served with another range. The cluster map says which consumer
// cluster j a user is in; null keeps the bidder's map.
//
// Decoding is safe on any input: the size and nesting depth are bounded before parsing, and
// every field is validated (shapes, ranges, types) before anything is returned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rtb/core/action_table.h"
#include "rtb/core/bid.h"
#include "rtb/core/status.h"

namespace rtb {

// User id -> consumer cluster j (schemas/cluster-map-v1.md).
struct ClusterMap {
  std::unordered_map<std::string, int> user_cluster;
  int clusters = 1;         // L
  int default_cluster = 0;  // users not in the map, and requests without a user id
  // Optional: each cluster's revenue and cost per step of a reference day ([T][L], currency
  // units): the prior of the learner's history features x_j until it has seen a day of its own.
  std::vector<std::vector<double>> revenue_hist, cost_hist;
  int Lookup(const std::string& user) const;
};

Result<ClusterMap> ParseClusterMap(std::string_view json, const std::string& source);
Result<ClusterMap> LoadClusterMap(const std::string& path);
// Users in sorted order, so that the same map gives the same bytes.
std::string SerializeClusterMap(const ClusterMap& m);

struct PolicyMessage {
  ActionTable table;
  std::optional<ClusterMap> clusters;       // none: the bidder keeps its map
  double alpha_range = kDefaultAlphaRange;  // in (0, 1)
  int64_t for_day = 0;                      // the step the table was computed for
  int64_t for_step = 0;
};

// Limits applied before a message is parsed.
struct PolicyLimits {
  size_t max_bytes = size_t{64} << 20;  // a cluster map of ~2M users fits
  int max_depth = 16;                   // the format nests 4 deep
};

Result<PolicyMessage> DecodePolicyMessage(std::string_view bytes, const std::string& source,
                                          const PolicyLimits& limits = {});
std::string EncodePolicyMessage(const PolicyMessage& m);

// Whether `json` nests arrays and objects at most max_depth deep (strings are skipped). An
// iterative scan: safe on any input, meant to run before a recursive parser sees it.
bool JsonDepthWithin(std::string_view json, int max_depth);

}  // namespace rtb
