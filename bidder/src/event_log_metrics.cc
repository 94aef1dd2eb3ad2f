// The event log's lines of the bidder's /metrics page (Prometheus text format 0.0.4).
#include <cstdio>

#include "rtb/bidder/event_log.h"
#include "rtb/core/prometheus.h"

namespace rtb::bidder {

using prom::Family;
using prom::LabelValue;

std::string RenderKafkaStatistics(const kafka::Statistics& s) {
  std::string o;
  Family(&o, "rtb_kafka_producer_queue_messages", "gauge",
         "Events in the producer's queue, not yet acknowledged (librdkafka statistics).");
  o += "rtb_kafka_producer_queue_messages " + std::to_string(s.queue_messages) + "\n";
  Family(&o, "rtb_kafka_producer_queue_bytes", "gauge", "Bytes of those events.");
  o += "rtb_kafka_producer_queue_bytes " + std::to_string(s.queue_bytes) + "\n";
  if (s.brokers.empty()) return o;
  // Two gauges, not a quantile label: librdkafka's window quantiles are no Prometheus summary
  // (no _sum or _count), and Prometheus keeps the quantile label for summaries.
  using Broker = kafka::Statistics::Broker;
  static constexpr struct {
    const char* name;
    const char* help;
    int64_t Broker::*us;
  } kRtt[] = {
      {"rtb_kafka_broker_rtt_p50_seconds",
       "Round-trip time of the producer's requests to each broker, median over librdkafka's last "
       "statistics window (NaN: none measured).",
       &Broker::rtt_p50_us},
      {"rtb_kafka_broker_rtt_p99_seconds",
       "Round-trip time of the producer's requests to each broker, 99th percentile over "
       "librdkafka's last statistics window (NaN: none measured).",
       &Broker::rtt_p99_us},
  };
  char buf[64];
  for (const auto& r : kRtt) {
    Family(&o, r.name, "gauge", r.help);
    for (const auto& b : s.brokers) {
      if (b.rtt_samples > 0) {
        std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(b.*r.us) / 1e6);
      } else {
        std::snprintf(buf, sizeof buf, "NaN");
      }
      o += std::string(r.name) + "{broker=\"" + LabelValue(b.name) + "\"} " + buf + "\n";
    }
  }
  Family(&o, "rtb_kafka_broker_state", "gauge",
         "The producer's connection to each broker: 1 on its librdkafka state (UP: requests "
         "flow; INIT, DOWN, CONNECT, AUTH...: not).");
  for (const auto& b : s.brokers) {
    o += "rtb_kafka_broker_state{broker=\"" + LabelValue(b.name) + "\",state=\"" +
         LabelValue(b.state) + "\"} 1\n";
  }

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
  // One counter per fate, not one family with a state label: an event is logged once and then
  // acked, spilled, resent..., so a sum over such a label would count it twice.
  static constexpr struct {
    const char* name;
    const char* help;
    uint64_t EventLogStats::*value;
  } kFates[] = {
      {"rtb_kafka_events_logged_total", "Events the bidder logged (handed to the event log).",
       &EventLogStats::logged},
      {"rtb_kafka_events_acked_total", "Events Kafka acknowledged.", &EventLogStats::acked},
      {"rtb_kafka_events_spilled_total",
       "Events written to the spill file while Kafka did not take them.", &EventLogStats::spilled},
      {"rtb_kafka_events_resent_total", "Spilled events sent again from the spill file.",
       &EventLogStats::resent},
      {"rtb_kafka_events_dropped_total",
       "Events lost: neither acknowledged nor spilled (0 unless the spill file failed).",
       &EventLogStats::dropped},
      {"rtb_kafka_events_dead_lettered_total",
       "Events Kafka refused for good, written to the dead-letter file.",
       &EventLogStats::dead_lettered},
  };
  for (const auto& f : kFates) prom::Counter(&o, f.name, f.help, static_cast<int64_t>(s.*f.value));
  Family(&o, "rtb_kafka_waiting_events", "gauge",
         "Events not yet acknowledged: in the producer's queue and in the spill file.");
  o += "rtb_kafka_waiting_events{where=\"producer\"} " + std::to_string(s.queued) + "\n";
  o += "rtb_kafka_waiting_events{where=\"spill\"} " + std::to_string(s.spill_pending) + "\n";
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
