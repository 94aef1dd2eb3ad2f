// librdkafka's statistics JSON (STATISTICS.md) read into the figures the engine exports.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "rtb/kafka/kafka.h"

namespace rtb::kafka {

namespace {

// The per-partition and per-topic parts are most of the document and none of the figures:
// left out while parsing, so that the cost does not grow with the partitions.
bool KeepKey(int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
  if (event != nlohmann::json::parse_event_t::key) return true;
  const std::string& key = parsed.get_ref<const std::string&>();
  return key != "topics" && key != "toppars";
}

Statistics::Broker ReadBroker(const std::string& name, const nlohmann::json& b) {
  Statistics::Broker out;
  out.name = name;
  out.node_id = b.at("nodeid").get<int32_t>();
  out.state = b.at("state").get<std::string>();
  const nlohmann::json& rtt = b.at("rtt");
  out.rtt_samples = rtt.at("cnt").get<int64_t>();
  out.rtt_p50_us = rtt.at("p50").get<int64_t>();
  out.rtt_p99_us = rtt.at("p99").get<int64_t>();
  out.tx_errors = b.at("txerrs").get<int64_t>();
  out.tx_retries = b.at("txretries").get<int64_t>();
  out.request_timeouts = b.at("req_timeouts").get<int64_t>();
  out.connects = b.at("connects").get<int64_t>();
  out.disconnects = b.at("disconnects").get<int64_t>();
  return out;
}

}  // namespace

Result<Statistics> ParseStatistics(std::string_view json) {
  const nlohmann::json j = nlohmann::json::parse(json, KeepKey, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("librdkafka statistics: not a JSON object");
  }
  Statistics s;
  try {
    s.queue_messages = j.at("msg_cnt").get<int64_t>();
    s.queue_bytes = j.at("msg_size").get<int64_t>();
    for (const auto& [name, b] : j.at("brokers").items()) {
      // "internal" and "logical" brokers are librdkafka's own queues, not connections.
      const std::string source = b.at("source").get<std::string>();
      if (source != "configured" && source != "learned") continue;
      s.brokers.push_back(ReadBroker(name, b));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("librdkafka statistics: ") + e.what());
  }
  std::sort(s.brokers.begin(), s.brokers.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return s;
}

}  // namespace rtb::kafka
