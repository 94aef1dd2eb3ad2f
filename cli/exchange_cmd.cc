#include "exchange_cmd.h"

#include <cstdio>
#include <utility>

#include "common.h"
#include "kafka_cmd.h"
#include "rtb/bidder/config.h"
#include "rtb/core/ab.h"
#include "rtb/core/report.h"
#include "rtb/core/rng.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/simulate.h"
#include "rtb/simulator/world.h"

namespace rtb::cli {
namespace {

// One JSON line for a played day.
void PrintDay(int64_t day_index, size_t requests, const rtb::exchange::DayAccount& acct) {
  int64_t lost = 0, failed = 0;
  for (const auto& s : acct.steps) {
    lost += s.lost_requests;
    failed += s.failed_notices;
  }
  // Per A/B arm (all in `learned` without a test).
  rtb::Outcome arm_total[rtb::kArms];
  const size_t n = acct.by_agent.size();
  for (size_t x = 0; x < acct.by_arm_agent.size(); ++x) arm_total[x / n] += acct.by_arm_agent[x];
  std::printf(
      "{\"day\":%lld,\"requests\":%zu,\"impressions\":%lld,\"clicks\":%.3f,\"cost\":%.6f,"
      "\"revenue\":%.6f,\"arms\":{\"learned\":{\"cost\":%.6f,\"revenue\":%.6f},"
      "\"manual\":{\"cost\":%.6f,\"revenue\":%.6f}},\"lost_requests\":%lld,"
      "\"failed_notices\":%lld,\"seconds\":%.3f}\n",
      static_cast<long long>(day_index), requests, static_cast<long long>(acct.total.impressions),
      acct.total.clicks, acct.total.cost.units(), acct.total.revenue.units(),
      arm_total[0].cost.units(), arm_total[0].revenue.units(), arm_total[1].cost.units(),
      arm_total[1].revenue.units(), static_cast<long long>(lost), static_cast<long long>(failed),
      acct.seconds);
  std::fflush(stdout);
}

// `rtb exchange --traffic`: a hand-written market's days (exchange/include/rtb/exchange/traffic.h).
int RunTrafficExchange(ExchangeArgs a) {
  if (a.market.empty()) {
    return Fail(rtb::Status::InvalidArgument("--traffic needs --market (the bidder config)"));
  }
  if (a.seed >= 0) {
    return Fail(rtb::Status::InvalidArgument(
        "--seed is the simulated world's; a traffic file has its own (seed: in " + a.traffic +
        ")"));
  }
  if (!a.auction.empty()) {
    return Fail(rtb::Status::InvalidArgument(
        "--auction is the simulated world's; a traffic market's auction is second price"));
  }
  auto market = rtb::exchange::LoadTrafficMarket(a.traffic, a.market);
  if (!market.ok()) return Fail(market.status());
  if (!a.write_clusters.empty()) {
    const auto st = rtb::WriteFileAtomic(a.write_clusters, rtb::exchange::ClusterMapJson(*market));
    if (!st.ok()) return Fail(st);
    std::fprintf(stderr, "rtb exchange: wrote %s (%d users in %zu clusters)\n",
                 a.write_clusters.c_str(), market->traffic.users, market->traffic.segments.size());
    if (a.days == 0) return 0;
  }
  a.x.wait_for_policy = !a.no_wait && !a.x.brokers.empty();
  auto bidder_cfg = rtb::bidder::LoadBidderConfig(a.market);  // read above: cannot fail here
  if (!bidder_cfg.ok()) return Fail(bidder_cfg.status());
  a.x.kafka_properties.insert(a.x.kafka_properties.begin(), bidder_cfg->kafka.properties.begin(),
                              bidder_cfg->kafka.properties.end());
  a.x.market_keys = rtb::bidder::MarketKeysOf(*bidder_cfg);
  auto ex = rtb::exchange::Exchange::Create(a.x, *market);
  if (!ex.ok()) return Fail(ex.status());
  for (int d = 0; d < a.days; ++d) {
    const int64_t day_index = a.first_day + d;
    const auto day = rtb::exchange::GenerateTrafficDay(*market, day_index);
    auto acct = (*ex)->PlayDay(day, day_index);
    if (!acct.ok()) return Fail(acct.status());
    PrintDay(day_index, day.size(), *acct);
  }
  return 0;
}

}  // namespace

CLI::App* AddExchangeCommand(CLI::App* app, ExchangeArgs* a) {
  a->config = DefaultConfig("configs/simulator/default.yaml");
  auto* xs = app->add_subcommand(
      "exchange", "Play simulated days as an ad exchange against a bidder (OpenRTB over HTTP)");
  xs->add_option("--config", a->config, "Simulator config: the world")->capture_default_str();
  xs->add_option("--traffic", a->traffic,
                 "Or a hand-written market's traffic file (configs/markets/*/traffic.yaml)");
  xs->add_option("--market", a->market,
                 "With --traffic: the market's bidder config (advertisers, predictor, A/B test)");
  xs->add_option("--write-clusters", a->write_clusters,
                 "With --traffic: write the users' cluster map here (with --days 0: and stop)");
  xs->add_option("--bidder", a->x.bidder, "Bidder host:port")->capture_default_str();
  xs->add_option("--bidders", a->x.bidders,
                 "Or several bidders (host:port,...), each request to one of them")
      ->delimiter(',');
  xs->add_option("--spread", a->x.spread, "Requests' weights over --bidders (default: equal)")
      ->delimiter(',');
  xs->add_option("--bid-path", a->x.bid_path, "Bid request path")->capture_default_str();
  xs->add_option("--slow-start-ms", a->x.slow_start_ms,
                 "Several bidders: one back in the rotation (restarted, its readiness check "
                 "passed) takes a part of its requests growing over this long (0: all at once)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  xs->add_option("--seed", a->seed,
                 "Seed of the world (rtb generate --seed of the bidder's world; default: the "
                 "config's)");
  AddAuctionOption(xs, &a->auction);
  xs->add_option("--days", a->days, "Simulated days to play")->capture_default_str();
  xs->add_option("--first-day", a->first_day, "Number of the first day (simulated clock)")
      ->capture_default_str();
  xs->add_option("--concurrency", a->x.concurrency, "Connections, one request each at a time")
      ->capture_default_str();
  xs->add_option("--tmax", a->x.tmax_ms, "tmax of every request, ms")->capture_default_str();
  xs->add_option("--outcomes", a->x.outcomes, "expected | sampled")
      ->check(CLI::IsMember({"expected", "sampled"}))
      ->capture_default_str();
  xs->add_option("--brokers", a->x.brokers, "Kafka for step-end markers (empty: none)");
  xs->add_option("--clock-topic", a->x.clock_topic, "Topic of step-end markers")
      ->capture_default_str();
  AddKafkaPropertyOption(xs, &a->x.kafka_properties);
  xs->add_flag("--no-wait", a->no_wait, "Do not wait for the next policy after each step");
  xs->add_flag("!--no-loss-notices", a->x.send_loss_notices, "Send no loss notices");
  xs->add_option("--learned-share", a->x.learned_share,
                 "The bidder's ab.learned_share: account the arms apart")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  xs->add_option("--ab-salt", a->x.ab_salt, "The bidder's ab.salt")->capture_default_str();
  return xs;
}

// `rtb exchange`: plays simulated days against a running bidder; prints one JSON line per day.
int RunExchange(ExchangeArgs a) {
  if (!a.traffic.empty()) return RunTrafficExchange(std::move(a));
  auto cfg = rtb::sim::LoadSimulatorConfig(a.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (a.seed >= 0) cfg->seed = static_cast<uint64_t>(a.seed);
  if (auto st = rtb::sim::OverrideAuctionType(&*cfg, a.auction); !st.ok()) return Fail(st);
  auto sc = rtb::sim::BuildScenario(*cfg, "", "", false);
  if (!sc.ok()) return Fail(sc.status());
  const auto world = rtb::sim::GenerateWorld(*cfg);
  a.x.wait_for_policy = !a.no_wait && !a.x.brokers.empty();
  auto ex = rtb::exchange::Exchange::Create(a.x, **sc);
  if (!ex.ok()) return Fail(ex.status());
  for (int d = 0; d < a.days; ++d) {
    const int64_t day_index = a.first_day + d;
    const auto day = rtb::sim::GenerateDay(
        world, cfg->day,
        rtb::Rng::Mix(cfg->seed, a.first_day_seed + static_cast<uint64_t>(day_index)));
    auto acct = (*ex)->PlayDay(day, day_index);
    if (!acct.ok()) return Fail(acct.status());
    PrintDay(day_index, day.requests(), *acct);
  }
  return 0;
}

}  // namespace rtb::cli
