#include "rtb/bidder/policy.h"

#include <nlohmann/json.hpp>

#include "rtb/core/text.h"

namespace rtb::bidder {

int ClusterMap::Lookup(const std::string& user) const {
  if (user.empty()) return default_cluster;
  auto it = user_cluster.find(user);
  return it == user_cluster.end() ? default_cluster : it->second;
}

Result<ClusterMap> ParseClusterMap(const std::string& text, const std::string& source) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.value("format", "") != "rtb.cluster_map" || j.value("schema_version", 0) != 1) {
      return Status::Corruption(source + ": not an rtb.cluster_map schema_version 1 file");
    }
    ClusterMap m;
    const int clusters = j.at("clusters").get<int>();
    m.default_cluster = j.value("default_cluster", 0);
    if (clusters < 1 || m.default_cluster < 0 || m.default_cluster >= clusters) {
      return Status::Corruption(source + ": clusters / default_cluster out of range");
    }
    for (const auto& [user, c] : j.at("users").items()) {
      const int v = c.get<int>();
      if (v < 0 || v >= clusters)
        return Status::Corruption(source + ": cluster of " + user + " out of range");
      m.user_cluster[user] = v;
    }
    return m;
  } catch (const std::exception& e) {
    return Status::Corruption(source + ": " + e.what());
  }
}

Result<ClusterMap> LoadClusterMap(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, "cluster map"));
  return ParseClusterMap(text, path);
}

bool PolicyHolder::Install(std::unique_ptr<PolicySnapshot> snap) {
  std::lock_guard<std::mutex> l(mu_);
  const PolicySnapshot* cur = current_.load(std::memory_order_relaxed);
  if (cur != nullptr && snap->table.version < cur->table.version) {
    rejected_.fetch_add(1);
    return false;
  }
  all_.push_back(std::move(snap));
  current_.store(all_.back().get(), std::memory_order_release);
  return true;
}

}  // namespace rtb::bidder
