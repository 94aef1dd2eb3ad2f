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
};

// Runs until `stop` is set or max_steps steps are closed; checkpoints on the way out.
Status RunOnline(const LearnerConfig& cfg, const OnlineOptions& opt);

}  // namespace rtb::learn
