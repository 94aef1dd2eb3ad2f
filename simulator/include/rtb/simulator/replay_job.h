// `rtb replay`'s work apart from the command line (docs/replay.md): offline replay of logged
// auctions for the four kinds of log: the RLB code's compact log, raw iPinYou logs, the
// simulator's full-information logs and the engine's own outcome events (a file dump, or a
// topic read through the caller's reader). The command line parses arguments, calls
// RunReplayJob and prints or writes what it returns.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "rtb/core/report.h"
#include "rtb/core/status.h"

namespace rtb::sim {

struct ReplayJob {
  std::string format = "rlb";  // rlb | ipinyou | full | events
  std::string log, info, train_log, validation_log;
  std::string advertiser;        // ipinyou / events: one advertiser's lines
  std::string protocol = "rlb";  // rlb | benchmark (single-bidder logs)
  // rlb protocol: what a win pays, second_price (the logged market price) | first_price (the
  // bid, the logged price being what it must reach).
  std::string auction = "second_price";
  std::string strategy;  // comma-separated, the first is the primary ("" = lin | logged,manual)
  std::string baseline;  // a strategy name of the list (default lin, else the first)
  int64_t b0 = 0;        // Lin-Bid; 0 = tune (validation log, else training log)
  double c0 = 1.0 / 32;
  int64_t episode_size = 1000;
  int64_t max_bid = 300;
  int64_t const_bid = 0;
  int64_t rand_max = 300;
  uint64_t seed = 1;
  double budget_fraction = 1.0 / 32;
  std::string pacing;                         // pacing table (strategy pacing)
  std::vector<std::string> policies;          // full: action tables / manual / const:<a>
  std::string config;                         // full: simulator config
  std::string brokers, topic = "rtb.events";  // events from Kafka instead of --log
  std::string dump;                           // events: also write what was read (JSON lines)
  std::string on_error = "stop";              // malformed lines: stop | skip
  bool report = false;                        // also build the report (report files)
  bool progress = false;                      // progress lines on stderr (full)
};

// Reads a topic from its beginning to its end, message by message; `not_retained` receives
// how many of its oldest messages the brokers no longer hold. (The simulator does not link
// Kafka: `rtb replay` passes the Kafka seam's ReadWholeTopic.)
using TopicReader = std::function<Status(
    const std::function<void(int32_t, int64_t, std::string_view)>& fn, int64_t* not_retained)>;

struct ReplayOutput {
  std::string json;                   // one JSON object: the primary method's totals and all
  std::string text;                   // the same for a person, one line per method
  Report report;                      // when ReplayJob::report
  std::vector<std::string> warnings;  // skipped lines, messages no longer retained
};

Result<ReplayOutput> RunReplayJob(const ReplayJob& job, const TopicReader& topic = {});

}  // namespace rtb::sim
