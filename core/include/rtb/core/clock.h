// Clocks shared by the bidder, the exchange and the online learner. The simulated clock of
// the live loop counts ms since the simulation's epoch; a simulated day is kDayMs long, like a
// wall-clock day (schemas/exchange-sim-ext-v1.md).
#pragma once

#include <chrono>
#include <cstdint>

namespace rtb {

inline constexpr int64_t kDayMs = 86'400'000;

// Wall clock, Unix ms.
inline int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Steady clock, microseconds (latencies).
inline int64_t NowSteadyUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace rtb
