// `rtb demo`: the closed loop on one machine, in named phases (demo/src/demo.cc):
//   1. Prepare        the demo config, the output folder, the simulated world
//   2. Pretrain       DCMAB offline in the simulator (rtb-learner train), its best checkpoint
//   3. StartServices  the embedded Kafka (in this process; or, with --brokers, the run's own
//                     topics on a real cluster), a bidder (rtb serve) and the online learner
//                     (rtb-learner learn) as child processes, the exchange
//   4. PlayDays       simulated days through the exchange -> bidder -> Kafka -> learner ->
//                     policy loop, manual bids on the same days in the simulator, chaos kills
//   5. StopServices   the learner and the bidder stopped cleanly
//   6. Check          what the learner stored (transitions, per-step totals) against the
//                     exchange's accounting, the events topic against the learner's position
//   7. Report         report.{json,md,html}, and the events topic dumped as events.jsonl
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rtb::demo {

// The directory of the running executable (rtb and rtb-learner sit side by side).
std::filesystem::path ExeDir();

struct DemoArgs {
  std::string config;  // configs/demo/default.yaml
  std::string out;     // overrides the config's out
  int days = -1;       // overrides the config's days
  int episodes = -1;   // overrides the learner config's pre-training episodes (0 = none)
  std::vector<std::string> chaos;  // adds to the config's chaos list
  int bidders = 0;                 // overrides the config's bidders (0 = the config's)
  std::vector<double> spread;      // overrides the config's bidder_spread
  std::string auction;             // overrides the config's auction ("" = the config's)
  double cpa_share = -1;           // overrides the config's cpa_share (-1 = the config's)
  // A real Kafka cluster's bootstrap address instead of the embedded mock cluster; the run
  // then has topics of its own there, created for it and deleted after it (demo/README.md).
  std::string brokers;
  std::string kafka_properties;  // with brokers: a file of librdkafka NAME=VALUE properties
  bool quiet = false;
};

// Runs the demo; prints the Markdown report and returns 0, or says why on stderr and returns 1.
int RunDemo(const DemoArgs& args);

}  // namespace rtb::demo
