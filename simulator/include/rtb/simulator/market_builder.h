// Learns the market model (market.h) from a history day: the day run under manual bids with
// unlimited budget by the auction engine, then advertisers cut into agents and consumers into
// clusters by revenue (docs/dcmab.md sections 1, 2, 4).
#pragma once

#include "rtb/core/status.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/market.h"
#include "rtb/simulator/world.h"

namespace rtb::sim {

// Runs `history` under manual bids with unlimited budget, clusters, and fills a Market.
Result<Market> BuildMarket(const Day& history, const MarketConfig& mcfg, const AuctionConfig& acfg);

}  // namespace rtb::sim
