// `rtb replay`: offline replay of logged auctions (docs/replay.md) for the four
// kinds of log: the RLB code's compact log, raw iPinYou logs, the simulator's full-information
// logs and the engine's own outcome events (a file dump or the Kafka topic).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace rtb::cli {

struct ReplayArgs {
  std::string format = "rlb";  // rlb | ipinyou | full | events
  std::string log, info, train_log, validation_log;
  std::string advertiser;        // ipinyou / events: one advertiser's lines
  std::string protocol = "rlb";  // rlb | benchmark (single-bidder logs)
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
  std::string on_error = "stop";
  std::string out;  // report.{json,csv,md,html}
  bool json = false;
  bool quiet = false;
};

void AddReplayOptions(CLI::App* sub, ReplayArgs* a);
int RunReplay(const ReplayArgs& a);

}  // namespace rtb::cli
