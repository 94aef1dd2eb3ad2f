// The process logger: one spdlog logger set per process, writing to stderr.
//
// Every line carries the time (UTC), the level, the process name and pid, and the component
// ("bidder", "policy", "kafka", "learner", ...); messages name the ids they are about
// (auction, advertiser, table version). Two formats: text for people, JSON lines for log
// shippers (`--log-format json`, one object per line: ts, level, process, pid, component,
// msg). The level comes from the config key `log_level` and the `--log-level` flag (the flag
// wins). Before Init() the logger writes text at info level.
//
// Output meant for the user of a command (a report's path, a progress line) is not logging:
// it stays plain stdout/stderr text.
//
// Thread-safe: spdlog's multi-threaded sink; Get() may be called from any thread.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "rtb/core/clock.h"
#include "rtb/core/status.h"

namespace rtb::log {

enum class Format { kText, kJson };

struct Options {
  std::string process = "rtb";  // shown on every line ("rtb-serve", "rtb-learn", ...)
  std::string level = "info";   // trace | debug | info | warn | error | off
  Format format = Format::kText;
};

// Parses a level or a format name; kInvalidArgument names the allowed values.
Result<spdlog::level::level_enum> ParseLevel(std::string_view name);
Result<Format> ParseFormat(std::string_view name);

// Sets up the process's loggers (idempotent: a second call changes level and format).
Status Init(const Options& opt);

// The logger of one component, created on first use with the process's sink and level.
spdlog::logger& Get(std::string_view component);

// At most `per_interval` lines per interval; the rest are counted and the count is reported
// on the next line that passes. For warnings on the bid path (never a line per request).
class RateLimit {
 public:
  // `clock` times the windows (its steady time).
  RateLimit(int per_interval, std::chrono::milliseconds interval,
            const Clock* clock = SystemClock())
      : per_interval_(per_interval), interval_ms_(interval.count()), clock_(clock) {}
  // True when a line may be written now; *suppressed receives how many were skipped since.
  bool Allow(uint64_t* suppressed);

 private:
  const int per_interval_;
  const int64_t interval_ms_;
  const Clock* clock_;
  std::atomic<int64_t> window_start_{0};
  std::atomic<int> in_window_{0};
  std::atomic<uint64_t> skipped_{0};
};

}  // namespace rtb::log
