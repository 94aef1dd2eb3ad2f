#include "rtb/core/clock.h"

#include <algorithm>
#include <thread>

namespace rtb {
namespace {

// How often a sleeper looks at its cancel flag, in real time.
constexpr int64_t kCancelPollMs = 10;

class RealClock final : public Clock {
 public:
  int64_t UnixMs() const override { return NowUnixMs(); }
  int64_t SteadyUs() const override { return NowSteadyUs(); }
  bool SleepFor(int64_t ms, const std::atomic<bool>* cancel) override {
    if (cancel == nullptr) {
      if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      return true;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      if (cancel->load()) return false;
      const auto now = std::chrono::steady_clock::now();
      if (now >= end) return true;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          end - now, std::chrono::milliseconds(kCancelPollMs)));
    }
  }
};

}  // namespace

Clock* SystemClock() {
  static RealClock clock;
  return &clock;
}

ManualClock::ManualClock(int64_t unix_ms) : unix_ms_(unix_ms) {}

int64_t ManualClock::UnixMs() const {
  std::lock_guard<std::mutex> l(mu_);
  return unix_ms_;
}

int64_t ManualClock::SteadyUs() const {
  std::lock_guard<std::mutex> l(mu_);
  return steady_us_;
}

bool ManualClock::SleepFor(int64_t ms, const std::atomic<bool>* cancel) {
  std::unique_lock<std::mutex> l(mu_);
  const int64_t deadline = steady_us_ + std::max<int64_t>(0, ms) * 1000;
  const uint64_t ticket = next_ticket_++;
  sleepers_[ticket] = deadline;
  cv_.notify_all();  // AwaitSleepers
  bool slept = true;
  while (steady_us_ < deadline) {
    if (cancel != nullptr && cancel->load()) {
      slept = false;
      break;
    }
    cv_.wait_for(l, std::chrono::milliseconds(kCancelPollMs));
  }
  sleepers_.erase(ticket);
  return slept;
}

void ManualClock::Advance(int64_t ms) {
  std::lock_guard<std::mutex> l(mu_);
  const int64_t by = std::max<int64_t>(0, ms);
  unix_ms_ += by;
  steady_us_ += by * 1000;
  cv_.notify_all();
}

int ManualClock::AsleepLocked() const {
  int n = 0;
  for (const auto& [ticket, deadline] : sleepers_) n += deadline > steady_us_ ? 1 : 0;
  return n;
}

bool ManualClock::AwaitSleepers(int n, int64_t real_timeout_ms) const {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_for(l, std::chrono::milliseconds(real_timeout_ms),
                      [&] { return AsleepLocked() >= n; });
}

bool ManualClock::Run(int64_t ms, int64_t step_ms, int n, int64_t real_timeout_ms) {
  for (int64_t done = 0; done < ms;) {
    const int64_t step = std::min(std::max<int64_t>(1, step_ms), ms - done);
    Advance(step);
    done += step;
    if (!AwaitSleepers(n, real_timeout_ms)) return false;
  }
  return true;
}

}  // namespace rtb
