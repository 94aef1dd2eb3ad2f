// `rtb fit`: a world fitted to a market's logged events (simulator/fit.h), with the fit's own
// check.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace rtb::cli {

struct FitArgs {
  std::string events;         // a JSON-lines dump of the events topic
  std::string bidder_config;  // the market's bidder config
  std::string out = "out/fit/world.json";
  std::string clusters_out;  // the bidder's cluster map with the fitted history x_j
  int min_impressions = 30;
  uint64_t seed = 1;
  double tolerance = 0.05;  // the check: wins, spend and value within this share of the log's
};

CLI::App* AddFitCommand(CLI::App* app, FitArgs* a);
int RunFit(const FitArgs& a);

}  // namespace rtb::cli
