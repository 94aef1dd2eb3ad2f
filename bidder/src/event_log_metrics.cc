// The event log's lines of the bidder's /metrics page (Prometheus text format 0.0.4).
#include <cstdio>

#include "rtb/bidder/event_log.h"

namespace rtb::bidder {

namespace {

// A label value with \, " and newlines escaped, as the text format wants.
std::string LabelValue(std::string_view v) {
  std::string o;
  for (const char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    o += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return o;
}

// "# HELP name help\n# TYPE name type\n".
void Family(std::string* o, const char* name, const char* type, const char* help) {
  *o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

std::string RenderKafkaStatistics(const kafka::Statistics& s) {
  std::string o;
  Family(&o, "rtb_kafka_producer_queue_messages", "gauge",
         "Events in the producer's queue, not yet acknowledged (librdkafka statistics).");
  o += "rtb_kafka_producer_queue_messages " + std::to_string(s.queue_messages) + "\n";
  Family(&o, "rtb_kafka_producer_queue_bytes", "gauge", "Bytes of those events.");
  o += "rtb_kafka_producer_queue_bytes " + std::to_string(s.queue_bytes) + "\n";
  if (s.brokers.empty()) return o;
  Family(&o, "rtb_kafka_broker_rtt_seconds", "gauge",
         "Round-trip time of the producer's requests to each broker over librdkafka's last "
         "statistics window, by quantile (NaN: none measured).");
  char buf[64];
  for (const auto& b : s.brokers) {
    const std::string broker = LabelValue(b.name);
    for (const auto& [q, us] : {std::pair{"0.5", b.rtt_p50_us}, std::pair{"0.99", b.rtt_p99_us}}) {
      if (b.rtt_samples > 0) {
        std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(us) / 1e6);
      } else {
        std::snprintf(buf, sizeof buf, "NaN");
      }
      o += "rtb_kafka_broker_rtt_seconds{broker=\"" + broker + "\",quantile=\"" + q + "\"} " + buf +
           "\n";
    }
  }
  Family(&o, "rtb_kafka_broker_state", "gauge",
         "The producer's connection to each broker: 1 on its librdkafka state (UP: requests "
         "flow; INIT, DOWN, CONNECT, AUTH...: not).");
  for (const auto& b : s.brokers) {
    o += "rtb_kafka_broker_state{broker=\"" + LabelValue(b.name) + "\",state=\"" +
         LabelValue(b.state) + "\"} 1\n";
  }
  using Broker = kafka::Statistics::Broker;
  static constexpr struct {
    const char* name;
    const char* help;
    int64_t Broker::*value;
  } kCounters[] = {
      {"rtb_kafka_broker_tx_errors_total", "Requests to each broker that failed to be sent.",
       &Broker::tx_errors},
      {"rtb_kafka_broker_tx_retries_total", "Requests to each broker sent again.",
       &Broker::tx_retries},
      {"rtb_kafka_broker_request_timeouts_total", "Requests to each broker that timed out.",
       &Broker::request_timeouts},
      {"rtb_kafka_broker_connects_total", "Connections made to each broker.", &Broker::connects},
      {"rtb_kafka_broker_disconnects_total", "Connections to each broker lost or closed.",
       &Broker::disconnects},
  };
  for (const auto& c : kCounters) {
    Family(&o, c.name, "counter", c.help);
    for (const auto& b : s.brokers) {
      o += std::string(c.name) + "{broker=\"" + LabelValue(b.name) + "\"} " +
           std::to_string(b.*c.value) + "\n";
    }
  }
  return o;
}

std::string EventLog::Metrics() const {
  const EventLogStats s = Stats();
  std::string o;
  Family(&o, "rtb_kafka_events", "counter", "Events by delivery state.");
  for (const auto& [state, n] :
       {std::pair{"logged", s.logged}, std::pair{"acked", s.acked}, std::pair{"spilled", s.spilled},
        std::pair{"resent", s.resent}, std::pair{"dropped", s.dropped},
        std::pair{"dead_lettered", s.dead_lettered}}) {
    o += std::string("rtb_kafka_events{state=\"") + state + "\"} " + std::to_string(n) + "\n";
  }
  Family(&o, "rtb_kafka_queue", "gauge",
         "Events waiting in the producer queue and in the spill file.");
  o += "rtb_kafka_queue{where=\"producer\"} " + std::to_string(s.queued) + "\n";
  o += "rtb_kafka_queue{where=\"spill\"} " + std::to_string(s.spill_pending) + "\n";
  Family(&o, "rtb_kafka_producer_restarts_total", "counter",
         "Events producers replaced after a fatal error (their unacknowledged events not found "
         "on their topic re-sent by the next).");
  o += "rtb_kafka_producer_restarts_total " + std::to_string(s.producer_restarts) + "\n";
  Family(&o, "rtb_kafka_events_found_after_restart_total", "counter",
         "Of a replaced producer's unacknowledged events, those found already on their topic "
         "(delivered, not re-sent).");
  o += "rtb_kafka_events_found_after_restart_total " + std::to_string(s.found_after_restart) + "\n";
  if (const std::optional<kafka::Statistics> stats = ProducerStatistics(); stats.has_value()) {
    o += RenderKafkaStatistics(*stats);
  }
  return o;
}

}  // namespace rtb::bidder
