#include "rtb/core/action_table.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "action_table_json.h"
#include "rtb/core/report.h"
#include "rtb/core/text.h"

namespace rtb {

ActionTable::ActionTable(int agents, int clusters)
    : agents_(agents), clusters_(clusters), a_(static_cast<size_t>(agents) * clusters, 0.0) {}

Result<ActionTable> ParseActionTable(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, nullptr, true, false);
  } catch (const nlohmann::json::parse_error& e) {
    return Status::Corruption(source + ": action table is not valid JSON (" + e.what() + ")");
  }
  return ActionTableFromJson(j, source);
}

Result<ActionTable> ActionTableFromJson(const nlohmann::json& j, const std::string& source) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption(source + ": action table " + what);
  };
  if (!j.is_object()) return bad("must be a JSON object");
  // (Field types checked before reading: nlohmann's value() throws on a mismatch.)
  if (!j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>() != "rtb.action_table") {
    return bad("has no format \"rtb.action_table\"");
  }
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer() ||
      j["schema_version"].get<int>() != 1) {
    return bad("has an unsupported schema_version (expected 1)");
  }
  if (!j.contains("actions") || !j["actions"].is_array() || j["actions"].empty()) {
    return bad("needs a non-empty 'actions' array of rows");
  }
  const auto& rows = j["actions"];
  const int n = static_cast<int>(rows.size());
  if (!rows[0].is_array() || rows[0].empty()) return bad("rows must be non-empty arrays");
  const int l = static_cast<int>(rows[0].size());
  ActionTable t(n, l);
  for (int i = 0; i < n; ++i) {
    if (!rows[i].is_array() || static_cast<int>(rows[i].size()) != l) {
      return bad("row " + std::to_string(i) + " does not have " + std::to_string(l) + " values");
    }
    for (int c = 0; c < l; ++c) {
      const auto& v = rows[i][c];
      if (!v.is_number())
        return bad("value [" + std::to_string(i) + "][" + std::to_string(c) + "] is not a number");
      const double x = v.get<double>();
      if (!std::isfinite(x) || x < -1.0 || x > 1.0) {
        return bad("value [" + std::to_string(i) + "][" + std::to_string(c) +
                   "] is outside [-1, 1]");
      }
      t.set(i, c, x);
    }
  }
  if (j.contains("agents") && j["agents"] != n) return bad("'agents' does not match the rows");
  if (j.contains("clusters") && j["clusters"] != l) {
    return bad("'clusters' does not match the row length");
  }
  if (j.contains("version")) {
    if (!j["version"].is_number_unsigned()) return bad("'version' must be a non-negative integer");
    t.version = j["version"].get<uint64_t>();
  }
  if (j.contains("created_unix_ms") && j["created_unix_ms"].is_number_integer()) {
    t.created_unix_ms = j["created_unix_ms"].get<int64_t>();
  }
  if (j.contains("algo") && j["algo"].is_string()) t.algo = j["algo"].get<std::string>();
  return t;
}

Result<ActionTable> LoadActionTable(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, "action table"));
  return ParseActionTable(text, path);
}

std::string SerializeActionTable(const ActionTable& t) {
  return ActionTableToJson(t).dump(2) + "\n";
}

nlohmann::ordered_json ActionTableToJson(const ActionTable& t) {
  nlohmann::ordered_json j;
  j["format"] = "rtb.action_table";
  j["schema_version"] = 1;
  j["version"] = t.version;
  j["created_unix_ms"] = t.created_unix_ms;
  j["algo"] = t.algo;
  j["agents"] = t.agents();
  j["clusters"] = t.clusters();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int i = 0; i < t.agents(); ++i) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (int c = 0; c < t.clusters(); ++c) row.push_back(t.at(i, c));
    rows.push_back(row);
  }
  j["actions"] = rows;
  return j;
}

Status SaveActionTable(const ActionTable& t, const std::string& path) {
  return WriteFileAtomic(path, SerializeActionTable(t));
}

}  // namespace rtb
