// EventLog: every event reaches Kafka or the local spill file, never blocking the caller.
//
// Log() hands the event to the Kafka producer's local queue (rtb/kafka/kafka.h) (produce never
// blocks); if the queue is full or the client refuses it, the event is appended to the spill file
// instead. A dedicated thread serves delivery reports (poll); a delivery that fails for good is
// spilled too. The producer is idempotent (acks=all, in-order, no duplicates from retries) and its
// message timeout is infinite, so during a broker outage events wait in the queue and then in the
// spill file, and nothing is dropped. The same thread re-sends the spill file once the
// brokers are reachable again. An event no broker will ever take (larger than
// message.max.bytes) goes to the dead-letter file (spill path + ".dead") with its reason
// instead, so it never holds up the events behind it. Shutdown() flushes for flush_timeout_ms, then
// purges what is left into the spill file. Every event ends acked, spilled (and re-sent later) or
// counted as dropped (only if the spill file cannot be written).
//
// With kafka.brokers "embedded" it starts librdkafka's mock cluster in-process (real Kafka
// protocol over TCP on 127.0.0.1; bootstrap() tells kcat where), which loses every event when
// the process ends. Empty brokers are an error (kInvalidArgument).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rtb/bidder/config.h"
#include "rtb/core/events.h"
#include "rtb/core/status.h"
#include "rtb/kafka/kafka.h"

namespace rtb::bidder {

struct EventLogStats {
  uint64_t logged = 0;             // Log() calls
  uint64_t acked = 0;              // delivered and acknowledged by the brokers
  uint64_t spilled = 0;            // written to the spill file (re-sent later)
  uint64_t resent = 0;             // spill lines handed back to the producer
  uint64_t dropped = 0;            // lost: the spill file could not be written
  uint64_t queued = 0;             // in librdkafka's queue now
  uint64_t spill_pending = 0;      // lines in the spill file not yet re-sent
  uint64_t dead_lettered = 0;      // never deliverable (too large): in the dead-letter file
  uint64_t producer_restarts = 0;  // producers replaced after a fatal error
  // Of a replaced producer's unacknowledged events, those found on their topic (counted in
  // acked, not re-sent).
  uint64_t found_after_restart = 0;
};

class EventLog {
 public:
  static Result<std::unique_ptr<EventLog>> Open(const KafkaConfig& cfg);
  // Tests: the producer fails for good, as librdkafka's fatal error makes it (RaiseFatalError-
  // ForTest); the event log replaces it.
  void RaiseFatalErrorForTest(const std::string& reason);
  ~EventLog();
  void Log(const Event& e);
  // A raw message (the learner publishes policies through the same machinery).
  void LogRaw(const std::string& topic, const std::string& key, const std::string& payload);
  // An event whose copy waits in a durable outbox: `settled(outbox_id)` runs (on the delivery
  // thread) once Kafka acknowledged it or the spill file holds it.
  void LogOutboxed(const std::string& topic, const std::string& key, const std::string& payload,
                   const std::string& outbox_id);
  void SetSettledHook(std::function<void(const std::string&)> settled);
  const std::string& events_topic() const;
  EventLogStats Stats() const;
  const std::string& bootstrap() const;
  // Flushes, spills the rest; idempotent.
  void Shutdown();
  // The embedded mock cluster, for fault-injection tests (nullptr with a real cluster).
  kafka::MockCluster* mock_cluster() const;
  // The producer's latest librdkafka statistics (kafka.stats_interval_ms); none before the
  // first interval, or when they are off.
  std::optional<kafka::Statistics> ProducerStatistics() const;
  // The event log's part of /metrics (Prometheus text format): events by delivery state, the
  // queues, and the producer's statistics (RenderKafkaStatistics) once there are some.
  std::string Metrics() const;

  struct Impl;

 private:
  explicit EventLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// librdkafka's statistics as /metrics lines: rtb_kafka_producer_queue_messages and _bytes, and
// per broker (label broker) rtb_kafka_broker_rtt_seconds{quantile="0.5"|"0.99"} (NaN when the
// window measured none), rtb_kafka_broker_state{state} 1, and the counters
// rtb_kafka_broker_tx_errors_total, _tx_retries_total, _request_timeouts_total, _connects_total
// and _disconnects_total.
std::string RenderKafkaStatistics(const kafka::Statistics& s);

}  // namespace rtb::bidder
