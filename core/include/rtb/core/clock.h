// Time, as a seam (leveldb's Env::NowMicros, seastar's manual_clock): whatever waits or reads
// the time takes a `Clock*` (the process's SystemClock() by default), so that a test moves time
// itself (ManualClock::Advance) instead of sleeping, and an assertion that nothing happened by
// some time is made at that time, not after a sleep that a slow machine may cut short.
//
// Also here: the simulated clock of the live loop, which counts ms since the simulation's epoch;
// a simulated day is kDayMs long, like a wall-clock day (schemas/exchange-sim-ext-v1.md).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <map>
#include <mutex>
#include <string>

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

// A source of time and of waiting. Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall clock, Unix ms: budget days, message send times, notice ages, table ages.
  virtual int64_t UnixMs() const = 0;
  // Monotonic clock, microseconds: intervals, timeouts, latencies.
  virtual int64_t SteadyUs() const = 0;
  int64_t SteadyMs() const { return SteadyUs() / 1000; }
  // Waits until `ms` of this clock have passed, or until `*cancel` is set (checked at least
  // every 10 ms of real time; may be null). Returns false when cancelled.
  virtual bool SleepFor(int64_t ms, const std::atomic<bool>* cancel = nullptr) = 0;
};

// The process's real clock (the system and steady clocks, real sleeps). Never null.
Clock* SystemClock();

// A clock that moves only when told (tests). Both its wall and its steady time move together
// by Advance. A thread that sleeps on it wakes once Advance has reached its deadline; a test
// waits for the threads it drives to have done their turn at the new time with
// AwaitSleepers (each such thread sleeps again when its turn is done).
class ManualClock final : public Clock {
 public:
  // Starts at `unix_ms` (a fixed day, so a test's budget day does not depend on the date).
  explicit ManualClock(int64_t unix_ms = 1'767'225'600'000);  // 2026-01-01 00:00 UTC
  int64_t UnixMs() const override;
  int64_t SteadyUs() const override;
  bool SleepFor(int64_t ms, const std::atomic<bool>* cancel = nullptr) override;

  // Moves time on by `ms` (>= 0) and wakes the sleepers whose deadline it reached.
  void Advance(int64_t ms);
  // Waits (up to `real_timeout_ms` of real time) until `n` threads are asleep on this clock
  // with a deadline after its current time: the threads woken by the last Advance have done
  // their turn. False on timeout.
  bool AwaitSleepers(int n, int64_t real_timeout_ms = 10'000) const;
  // Advances by `ms` in steps of at most `step_ms`, each followed by AwaitSleepers(n): time
  // passes as it would for `n` threads that each take a turn every step. False when the
  // threads did not all sleep again within the real timeout of a step.
  bool Run(int64_t ms, int64_t step_ms, int n, int64_t real_timeout_ms = 10'000);

 private:
  int AsleepLocked() const;  // REQUIRES(mu_): sleepers whose deadline is after the time

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  int64_t unix_ms_;        // GUARDED_BY(mu_)
  int64_t steady_us_ = 0;  // GUARDED_BY(mu_)
  // Every sleeper's deadline (steady us), by ticket, until it returns.
  std::map<uint64_t, int64_t> sleepers_;  // GUARDED_BY(mu_)
  uint64_t next_ticket_ = 0;              // GUARDED_BY(mu_)
};

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

}  // namespace rtb
