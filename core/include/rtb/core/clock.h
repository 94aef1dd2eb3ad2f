// Clocks shared by the bidder, the exchange and the online learner. The simulated clock of
// the live loop counts ms since the simulation's epoch; a simulated day is kDayMs long, like a
// wall-clock day (schemas/exchange-sim-ext-v1.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

namespace rtb {

inline constexpr int64_t kDayMs = 86'400'000;

// Wall clock, Unix ms.
inline int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The UTC date ("2026-11-24") of day number `day` since the Unix epoch.
inline std::string UtcDate(int64_t day) {
  const std::time_t t = static_cast<std::time_t>(day * (kDayMs / 1000));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// Budget days (the bidders' ledgers, the lease coordinator's days): the UTC date number of the
// wall clock, or day n of the simulated clock (ext.sim.t / notice t=, simulation hooks on),
// numbered apart: kSimDay + n.
inline constexpr int64_t kSimDay = int64_t{1} << 40;
inline int64_t BudgetDayOf(int64_t now_ms, int64_t sim_ms) {
  return sim_ms >= 0 ? kSimDay + sim_ms / kDayMs : now_ms / kDayMs;
}
// "2026-11-24", or "sim-3" for simulated day 3.
inline std::string BudgetDayName(int64_t day) {
  if (day >= kSimDay) return "sim-" + std::to_string(day - kSimDay);
  return UtcDate(day);
}

// Steady clock, microseconds (latencies).
inline int64_t NowSteadyUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace rtb
