// The serving policy: an immutable snapshot (action table + consumer-cluster map) that the
// learner publishes and the bidder swaps atomically. Readers never lock: Current() is one
// atomic load. Writers serialise on a mutex; an older version never replaces a newer one.
// Retired snapshots are kept alive (they are a few hundred bytes per version), so a reader can
// never see a freed table.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rtb/core/action_table.h"
#include "rtb/core/policy.h"
#include "rtb/core/status.h"

namespace rtb::bidder {

// The cluster map and its codec are core's (rtb/core/policy.h), shared with the learner.
using rtb::ClusterMap;
using rtb::LoadClusterMap;
using rtb::ParseClusterMap;

struct PolicySnapshot {
  ActionTable table;
  std::shared_ptr<const ClusterMap> clusters;
  double alpha_range = kDefaultAlphaRange;  // the clip the table was trained with
  int64_t loaded_unix_ms = 0;
};

class PolicyHolder {
 public:
  // nullptr until the first Install.
  const PolicySnapshot* Current() const { return current_.load(std::memory_order_acquire); }
  // Installs snap unless its version is older than the current one (equal versions replace,
  // so a restarted learner can republish). Returns whether it was installed.
  bool Install(std::unique_ptr<PolicySnapshot> snap);
  uint64_t rejected() const { return rejected_.load(); }

 private:
  std::atomic<const PolicySnapshot*> current_{nullptr};
  std::mutex mu_;
  std::vector<std::unique_ptr<PolicySnapshot>> all_;  // GUARDED_BY(mu_)
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace rtb::bidder
