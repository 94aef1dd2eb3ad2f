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
#include <unordered_map>
#include <vector>

#include "rtb/core/action_table.h"
#include "rtb/core/status.h"

namespace rtb::bidder {

struct ClusterMap {
  std::unordered_map<std::string, int> user_cluster;  // user id / buyeruid -> cluster j
  int default_cluster = 0;                            // users not in the map
  int Lookup(const std::string& user) const;
};

// File format (schemas/cluster-map-v1.md): JSON {"format":"rtb.cluster_map","schema_version":1,
// "clusters":L,"default_cluster":j,"users":{"<id>":j,...}}
Result<ClusterMap> ParseClusterMap(const std::string& json, const std::string& source);
Result<ClusterMap> LoadClusterMap(const std::string& path);

struct PolicySnapshot {
  ActionTable table;
  std::shared_ptr<const ClusterMap> clusters;
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
