// `rtb exchange`: simulated days (or a hand-written market's) played as an ad exchange against
// running bidders (exchange/), one JSON line per day.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "rtb/exchange/exchange.h"

namespace rtb::cli {

struct ExchangeArgs {
  std::string config;                           // simulator config: the world
  std::string traffic, market, write_clusters;  // or a traffic file and its bidder config
  rtb::exchange::ExchangeConfig x;
  int days = 1;
  int64_t first_day = 0;
  int64_t seed = -1;    // the world's (rtb generate --seed); -1: the config's
  std::string auction;  // --auction: the world's auction type, in place of its config's
  uint64_t first_day_seed = 1000;
  bool no_wait = false;
};

CLI::App* AddExchangeCommand(CLI::App* app, ExchangeArgs* a);
int RunExchange(ExchangeArgs a);

}  // namespace rtb::cli
