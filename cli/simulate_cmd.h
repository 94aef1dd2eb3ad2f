// `rtb simulate`: a day of the simulated world under a policy and manual bids, the report
// written (simulator/).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace rtb::cli {

struct SimulateArgs {
  std::string config;
  std::string policy = "manual";
  std::string out = "out/simulate";
  std::string day = "test";
  std::string train_log, test_log;
  std::string auction;  // --auction: the world's auction type, in place of its config's
  int64_t seed = -1;
  bool quiet = false;
  int bidders = 1;
  std::string split = "even";
  std::string arm;  // "" (every user, whole budgets) | learned | manual
  double learned_share = 0.5;
  std::string ab_salt = "rtb-ab-1";  // configs/bidder/default.yaml's ab.salt
};

CLI::App* AddSimulateCommand(CLI::App* app, SimulateArgs* a);
int RunSimulate(const SimulateArgs& a);

}  // namespace rtb::cli
