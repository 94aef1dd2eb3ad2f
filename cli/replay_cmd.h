// `rtb replay`'s command line: options in, sim::RunReplayJob (rtb/simulator/replay_job.h) does
// the replay (docs/replay.md), its output printed or written.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rtb/simulator/replay_job.h"

namespace rtb::cli {

struct ReplayArgs {
  sim::ReplayJob job;  // what to replay, and how
  std::string out;     // report.{json,csv,md,html} here
  bool json = false;   // print one JSON object instead of text
  bool quiet = false;  // no progress lines
  // events from Kafka: librdkafka properties (--kafka-property), after the reader's own.
  std::vector<std::pair<std::string, std::string>> kafka_properties;
};

CLI::App* AddReplayCommand(CLI::App* app, ReplayArgs* a);
int RunReplay(const ReplayArgs& a);

}  // namespace rtb::cli
