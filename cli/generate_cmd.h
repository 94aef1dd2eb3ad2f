// `rtb generate`: the simulated world's days as full-information logs, a synthetic campaign in
// the RLB format, or the world exported for the bidder (simulator/).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace rtb::cli {

struct GenerateArgs {
  std::string config;
  std::string out = "out/logs";
  std::string bidder_out;     // also export the world for the bidder
  std::string bidder_config;  // the base bidder config of the export
  int64_t seed = -1;
  std::string auction;  // --auction: the world's auction type, in place of its config's
  std::string rlb_out;  // also a synthetic single-campaign log in the RLB format
  int64_t rlb_lines = 156000;
  bool rlb_drift = false;  // --rlb-drift: the campaign drifts within and across days (LogDrift)
  // The two full-information days into `out`: asked for with --out, or when nothing else is.
  bool full_logs = true;
};

CLI::App* AddGenerateCommand(CLI::App* app, GenerateArgs* a);
// `sub`: the subcommand AddGenerateCommand made, parsed.
int RunGenerate(GenerateArgs a, const CLI::App& sub);

}  // namespace rtb::cli
