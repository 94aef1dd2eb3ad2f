// What every subcommand of `rtb` shares: its one error line, the logging options and the
// default config paths.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "rtb/core/status.h"

namespace rtb::cli {

// A command's error for its user: one plain line (not a log line), exit 1.
int Fail(const Status& st);

// --log-level / --log-format, accepted by every subcommand (after its name).
struct LogArgs {
  std::string level;  // empty: the config's (serve) or info
  std::string format = "text";
};

void AddLogOptions(CLI::App* app, LogArgs* a);

// Sets up the process logger for `rtb <sub>`; the flag's level wins over the config's.
Status InitLog(const std::string& sub, const LogArgs& a, const std::string& config_level);

// --auction: the world's auction type for this run, in place of its config's auction.type.
void AddAuctionOption(CLI::App* sub, std::string* type);

// A default config path: as given when it exists relative to the working directory, else where
// an installed rtb keeps it (<prefix>/share/rtb/<rel>, beside <prefix>/bin/rtb), else relative
// to the source tree this binary was built from (build/<preset>/rtb).
std::string DefaultConfig(const std::string& rel);

}  // namespace rtb::cli
