// `rtb learn`'s /metrics page: the online learner's part (Prometheus text format 0.0.4). The
// command adds the build and process families.
#include "rtb/core/admin_server.h"
#include "rtb/core/prometheus.h"
#include "rtb/learner/online.h"

namespace rtb::learn {

std::string OnlineMetrics(const OnlineStatus& s) {
  std::string o;
  static constexpr struct {
    const char* name;
    const char* help;
    std::atomic<int64_t> OnlineStatus::*value;
  } kCounters[] = {
      {"rtb_learner_events_total", "Events read from the events topic.", &OnlineStatus::events},
      {"rtb_learner_markers_total", "Step-end markers read from the clock topic.",
       &OnlineStatus::markers},
      {"rtb_learner_refused_total",
       "Events and markers refused (undecodable, implausible, duplicate, late, unsealed).",
       &OnlineStatus::refused},
      {"rtb_learner_steps_closed_total", "Steps closed: one transition and DCMAB update each.",
       &OnlineStatus::steps_closed},
      {"rtb_learner_steps_timed_out_total",
       "Of them, closed after step_grace_ms short of the events their marker counted.",
       &OnlineStatus::steps_timed_out},
      {"rtb_learner_tables_published_total", "Action tables published on the policy topic.",
       &OnlineStatus::tables_published},
  };
  for (const auto& c : kCounters) prom::Counter(&o, c.name, c.help, (s.*c.value).load());
  prom::Gauge(&o, "rtb_learner_policy_version", "Version of the table published last (0: none).",
              s.policy_version.load());
  prom::Gauge(&o, "rtb_learner_last_publish_timestamp_seconds",
              "When the last table was published (Unix seconds; 0: none by this process).",
              prom::UnixSeconds(s.last_publish_ms.load()));
  prom::Gauge(&o, "rtb_learner_last_close_timestamp_seconds",
              "When a step last closed (Unix seconds; 0: none by this process).",
              prom::UnixSeconds(s.last_close_ms.load()));
  prom::Gauge(&o, "rtb_learner_last_turn_timestamp_seconds",
              "When the learner's loop last turned (Unix seconds; 0: not yet).",
              prom::UnixSeconds(s.last_turn_ms.load()));
  prom::Gauge(&o, "rtb_learner_pending_steps",
              "Steps whose end is seen (marker or wall clock) and that are not closed yet.",
              s.pending_steps.load());
  prom::Gauge(&o, "rtb_learner_lag_events",
              "Messages of the events topic not read yet, over its partitions (asked of the "
              "brokers every 5 s; -1: not known).",
              s.lag_events.load());
  prom::Gauge(&o, "rtb_learner_kafka_ready",
              "1 once the events topic is assigned and the policy topic taken over.",
              int64_t{s.kafka_ready.load() ? 1 : 0});
  return o;
}

std::string Unhealthy(const OnlineStatus& s, int64_t now_ms) {
  return LoopStalled("learner's loop", s.last_turn_ms.load(), now_ms, kStallMs);
}

}  // namespace rtb::learn
