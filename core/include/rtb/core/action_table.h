// The action table a[i][j] (N agents x L consumer clusters), the only thing the learner hands
// the serving path. Immutable once built; the bidder swaps whole tables atomically.
// File format: schemas/action-table-v1.md (JSON).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtb/core/status.h"

namespace rtb {

class ActionTable {
 public:
  ActionTable() = default;
  // A table of zeros (manual bids).
  ActionTable(int agents, int clusters);

  int agents() const { return agents_; }
  int clusters() const { return clusters_; }
  // a[i][j] in [-1, 1]. REQUIRES: 0 <= i < agents, 0 <= j < clusters.
  double at(int i, int j) const { return a_[static_cast<size_t>(i) * clusters_ + j]; }
  void set(int i, int j, double v) { a_[static_cast<size_t>(i) * clusters_ + j] = v; }
  const std::vector<double>& values() const { return a_; }

  // Provenance, carried in the file.
  uint64_t version = 0;         // monotonically increasing policy version
  int64_t created_unix_ms = 0;  // when the learner computed it (0 = unknown)
  std::string algo;             // "manual", "dcmab", ...

 private:
  int agents_ = 0;
  int clusters_ = 0;
  std::vector<double> a_;
};

// Parses the JSON file format; rejects wrong shapes, values outside [-1, 1], non-numbers.
Result<ActionTable> ParseActionTable(const std::string& json, const std::string& source);
Result<ActionTable> LoadActionTable(const std::string& path);
std::string SerializeActionTable(const ActionTable& t);
Status SaveActionTable(const ActionTable& t, const std::string& path);

}  // namespace rtb
