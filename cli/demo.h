// `rtb demo`: the closed loop on one machine. Starts the embedded Kafka (librdkafka's mock
// cluster, in this process), pre-trains DCMAB offline (rtb-learner train), starts a bidder
// (rtb serve) and the online learner (rtb-learner learn) as child processes, plays simulated
// days through the exchange (in this process) and writes the report: per day, the live learned
// policy against manual bids on the same traffic, the action tables, the policy lag and the
// loop's bookkeeping check (replay store vs. the exchange's accounting).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rtb::cli {

// The directory of the running executable (rtb and rtb-learner sit side by side).
std::filesystem::path ExeDir();

struct DemoArgs {
  std::string config;  // configs/demo/default.yaml
  std::string out;     // overrides the config's out
  int days = -1;       // overrides the config's days
  int episodes = -1;   // overrides the learner config's pre-training episodes (0 = none)
  std::vector<std::string> chaos;  // adds to the config's chaos list
  bool quiet = false;
};

int RunDemo(const DemoArgs& args);

}  // namespace rtb::cli
