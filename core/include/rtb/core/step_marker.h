// Step-end markers, version 1 (schemas/clock-v1.md): `rtb exchange` publishes one on the clock
// topic when every auction and notice of a simulated step is done; the online learner closes
// the step once it has merged `expected_events` events of it (or after a grace period).
// The marker also carries the exchange's own accounting of the step, so the learner's totals
// can be checked against it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rtb/core/status.h"

namespace rtb {

struct StepMarker {
  int64_t day = 0;
  int step = 0;
  int steps_per_day = 0;        // T
  int64_t step_ms = 0;          // T_p of the simulated clock
  int64_t expected_events = 0;  // events the bidders logged for this step (bids, no-bids,
                                // notices they acknowledged)
  int64_t sent_unix_ms = 0;     // wall clock when published (policy lag starts here)
  // The exchange's accounting of the step (our advertisers only).
  int64_t requests = 0, bids = 0, impressions = 0;
  int64_t cost_micros = 0;     // charged (billing notices acknowledged)
  int64_t revenue_micros = 0;  // conversion values notified
  int64_t clicks = 0, conversions = 0;
};

std::string EncodeStepMarker(const StepMarker& m);
Result<StepMarker> DecodeStepMarker(std::string_view json);

// The step's index on a clock of `steps_per_day` steps a day: day x steps_per_day + step;
// nullopt when that overflows int64 (a forged day).
std::optional<int64_t> StepIndex(int64_t day, int64_t step, int64_t steps_per_day);

}  // namespace rtb
