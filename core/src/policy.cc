#include "rtb/core/policy.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "action_table_json.h"
#include "rtb/core/text.h"

namespace rtb {

namespace {

Result<ClusterMap> ClusterMapFromJson(const nlohmann::json& j, const std::string& source) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption(source + ": cluster map " + what);
  };
  if (!j.is_object()) return bad("must be a JSON object");
  if (!j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>() != "rtb.cluster_map" || !j.contains("schema_version") ||
      !j["schema_version"].is_number_integer() || j["schema_version"].get<int>() != 1) {
    return bad("is not an rtb.cluster_map schema_version 1 object");
  }
  ClusterMap m;
  if (!j.contains("clusters") || !j["clusters"].is_number_integer()) {
    return bad("needs an integer 'clusters'");
  }
  const int64_t clusters = j["clusters"].get<int64_t>();
  if (clusters < 1 || clusters > 1'000'000) return bad("'clusters' out of range");
  m.clusters = static_cast<int>(clusters);
  if (j.contains("default_cluster")) {
    if (!j["default_cluster"].is_number_integer()) return bad("'default_cluster' not an integer");
    const int64_t d = j["default_cluster"].get<int64_t>();
    if (d < 0 || d >= clusters) return bad("'default_cluster' out of range");
    m.default_cluster = static_cast<int>(d);
  }
  if (!j.contains("users") || !j["users"].is_object()) return bad("needs a 'users' object");
  m.user_cluster.reserve(j["users"].size());
  for (const auto& [user, c] : j["users"].items()) {
    if (!c.is_number_integer()) return bad("cluster of " + user + " is not an integer");
    const int64_t v = c.get<int64_t>();
    if (v < 0 || v >= clusters) return bad("cluster of " + user + " out of range");
    m.user_cluster[user] = static_cast<int>(v);
  }
  if (j.contains("history")) {
    const auto& h = j["history"];
    if (!h.is_object() || !h.contains("revenue") || !h.contains("cost")) {
      return bad("'history' needs 'revenue' and 'cost'");
    }
    for (const auto& [key, out] :
         {std::pair{"revenue", &m.revenue_hist}, std::pair{"cost", &m.cost_hist}}) {
      const auto& rows = h[key];
      if (!rows.is_array() || rows.empty() || rows.size() > 86'400) {
        return bad(std::string("history.") + key +
                   " must be a list of 1..86400 steps (one a second at most)");
      }
      for (const auto& row : rows) {
        if (!row.is_array() || row.size() != static_cast<size_t>(clusters)) {
          return bad(std::string("history.") + key + " rows need one value per cluster");
        }
        std::vector<double> r;
        for (const auto& v : row) {
          if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
            return bad(std::string("history.") + key + " holds a negative or non-number value");
          }
          r.push_back(v.get<double>());
        }
        out->push_back(std::move(r));
      }
    }
    if (m.revenue_hist.size() != m.cost_hist.size()) {
      return bad("history.revenue and history.cost have different numbers of steps");
    }
  }
  return m;
}

nlohmann::ordered_json ClusterMapToJson(const ClusterMap& m) {
  nlohmann::ordered_json j;
  j["format"] = "rtb.cluster_map";
  j["schema_version"] = 1;
  j["clusters"] = m.clusters;
  j["default_cluster"] = m.default_cluster;
  std::vector<std::pair<std::string, int>> users(m.user_cluster.begin(), m.user_cluster.end());
  std::sort(users.begin(), users.end());
  nlohmann::ordered_json u = nlohmann::ordered_json::object();
  for (const auto& [user, c] : users) u[user] = c;
  j["users"] = std::move(u);
  if (!m.revenue_hist.empty()) {
    j["history"] = {{"revenue", m.revenue_hist}, {"cost", m.cost_hist}};
  }
  return j;
}

// Parses bytes that passed the size and depth bounds; kCorruption on anything else.
Result<nlohmann::json> ParseBounded(std::string_view bytes, const std::string& source,
                                    size_t max_bytes, int max_depth) {
  if (bytes.size() > max_bytes) {
    return Status::Corruption(source + ": " + std::to_string(bytes.size()) + " bytes, above the " +
                              std::to_string(max_bytes) + "-byte limit");
  }
  if (!JsonDepthWithin(bytes, max_depth)) {
    return Status::Corruption(source + ": nested deeper than " + std::to_string(max_depth));
  }
  nlohmann::json j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Corruption(source + ": not valid JSON");
  return j;
}

}  // namespace

int ClusterMap::Lookup(const std::string& user) const {
  if (user.empty()) return default_cluster;
  auto it = user_cluster.find(user);
  return it == user_cluster.end() ? default_cluster : it->second;
}

bool JsonDepthWithin(std::string_view json, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

Result<ClusterMap> ParseClusterMap(std::string_view json, const std::string& source) {
  RTB_ASSIGN_OR_RETURN(nlohmann::json j, ParseBounded(json, source, size_t{1} << 30, 8));
  return ClusterMapFromJson(j, source);
}

Result<ClusterMap> LoadClusterMap(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, "cluster map"));
  return ParseClusterMap(text, path);
}

std::string SerializeClusterMap(const ClusterMap& m) { return ClusterMapToJson(m).dump() + "\n"; }

namespace {
Result<PolicyMessage> DecodeChecked(std::string_view bytes, const std::string& source,
                                    const PolicyLimits& limits) {
  RTB_ASSIGN_OR_RETURN(nlohmann::json j,
                       ParseBounded(bytes, source, limits.max_bytes, limits.max_depth));
  auto bad = [&](const std::string& what) {
    return Status::Corruption(source + ": policy message " + what);
  };
  if (!j.is_object()) return bad("must be a JSON object");
  if (!j.contains("table")) return bad("has no 'table'");
  PolicyMessage m;
  RTB_ASSIGN_OR_RETURN(m.table, ActionTableFromJson(j["table"], source));
  if (j.contains("clusters") && !j["clusters"].is_null()) {
    RTB_ASSIGN_OR_RETURN(ClusterMap cm, ClusterMapFromJson(j["clusters"], source));
    if (cm.clusters != m.table.clusters()) {
      return bad("has a cluster map of " + std::to_string(cm.clusters) +
                 " clusters for a table of " + std::to_string(m.table.clusters()));
    }
    m.clusters = std::move(cm);
  }
  if (j.contains("alpha_range")) {
    const auto& r = j["alpha_range"];
    if (!r.is_number() || !std::isfinite(r.get<double>()) || r.get<double>() <= 0.0 ||
        r.get<double>() >= 1.0) {
      return bad("'alpha_range' must be a number in (0, 1)");
    }
    m.alpha_range = r.get<double>();
  }
  if (j.contains("for")) {
    const auto& f = j["for"];
    if (!f.is_object()) return bad("'for' must be an object");
    if (f.contains("day") && f["day"].is_number_integer()) m.for_day = f["day"].get<int64_t>();
    if (f.contains("step") && f["step"].is_number_integer()) m.for_step = f["step"].get<int64_t>();
  }
  return m;
}
}  // namespace

Result<PolicyMessage> DecodePolicyMessage(std::string_view bytes, const std::string& source,
                                          const PolicyLimits& limits) {
  // Every field's type is checked before it is read; should a library call still throw, the
  // message is refused here (exceptions stop at the module edge).
  try {
    return DecodeChecked(bytes, source, limits);
  } catch (const std::exception& e) {
    return Status::Corruption(source + ": policy message " + e.what());
  }
}

std::string EncodePolicyMessage(const PolicyMessage& m) {
  nlohmann::ordered_json j;
  j["table"] = ActionTableToJson(m.table);
  j["clusters"] = m.clusters ? ClusterMapToJson(*m.clusters) : nlohmann::ordered_json(nullptr);
  j["alpha_range"] = m.alpha_range;
  j["for"] = {{"day", m.for_day}, {"step", m.for_step}};
  return j.dump();
}

}  // namespace rtb
