// `rtb serve`: the OpenRTB bidder (bidder/) until SIGINT or SIGTERM.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common.h"

namespace rtb::cli {

struct ServeArgs {
  std::string config;
  std::string listen;
  std::string notice_base_url;  // overrides the config's
  std::string brokers;          // overrides kafka.brokers
};

CLI::App* AddServeCommand(CLI::App* app, ServeArgs* a);
int RunServe(const ServeArgs& a, const LogArgs& la);

}  // namespace rtb::cli
