// `rtb learn`: the online learner, the paper's state server (docs/dcmab.md section 8) running for
// real. It consumes the bidders' outcome events and the exchange's step-end markers from
// Kafka, merges each step into g, x, d and the per-agent rewards (StepMerger), appends one
// transition per step to the RocksDB replay store together with its consumer position (one
// atomic write), runs the DCMAB updates of Algorithm 1, computes the next step's action table
// with its actors and publishes it, versioned, with the consumer-cluster map to the policy
// topic. Kafka offsets are committed only after the transitions they produced are durable;
// after a crash it resumes from the replay store and its last checkpoint, and no event is
// counted twice (the position and the open steps' totals are stored with each transition).
//
// Torch-free header; the implementation lives in rtb_learner.
#pragma once

#include <atomic>
#include <string>

#include "rtb/core/clock.h"
#include "rtb/core/status.h"
#include "rtb/learner/config.h"

namespace rtb::learn {

// What the online learner shows on its admin port, kept up to date as it runs: atomics, read
// from the admin thread.
struct OnlineStatus {
  std::atomic<int64_t> events{0};           // events read from the events topic
  std::atomic<int64_t> markers{0};          // step-end markers read (clock: markers)
  std::atomic<int64_t> refused{0};          // events and markers refused (Refuse)
  std::atomic<int64_t> steps_closed{0};     // closed by this process
  std::atomic<int64_t> steps_timed_out{0};  // of them, closed short of their events
  std::atomic<int64_t> tables_published{0};
  std::atomic<int64_t> policy_version{0};    // of the table published last
  std::atomic<int64_t> last_publish_ms{-1};  // when (Unix ms); -1 none yet
  std::atomic<int64_t> last_close_ms{-1};    // when a step last closed (Unix ms); -1 none yet
  std::atomic<int64_t> pending_steps{0};     // steps whose end is seen, not yet closed
  std::atomic<int64_t> lag_events{-1};       // events topic: unread messages; -1 not known
  std::atomic<int64_t> last_turn_ms{-1};     // when the loop last turned (Unix ms)
  std::atomic<bool> kafka_ready{false};      // input assigned and tables taken over
};
// The learner's part of its /metrics page (Prometheus text, docs/metrics.md).
std::string OnlineMetrics(const OnlineStatus& s);
// /healthz: empty while the learner's loop turns, else why not (no turn for kStallMs; a step
// closing may take seconds, never that long).
inline constexpr int64_t kStallMs = 60'000;
std::string Unhealthy(const OnlineStatus& s, int64_t now_ms);

struct OnlineOptions {
  std::string init_checkpoint;  // start from this (offline-trained) checkpoint when the state
                                // dir has none of its own; empty = fresh networks
  uint64_t seed = 1;
  int64_t max_steps = -1;  // stop after closing this many steps (tests); -1 = until stopped
  bool progress = true;    // one line per closed step on stderr
  const std::atomic<bool>* stop = nullptr;  // set by SIGTERM / SIGINT
  // The learner's time: wall-clock steps (online.clock: wall), their grace, the progress lines
  // and the tables' creation time (null: SystemClock()). Kafka's timeouts stay real time.
  Clock* clock = nullptr;
  OnlineStatus* status = nullptr;  // kept up to date when set (the admin port's /metrics)
};

// Runs until `stop` is set or max_steps steps are closed; checkpoints on the way out.
Status RunOnline(const LearnerConfig& cfg, const OnlineOptions& opt);

}  // namespace rtb::learn
