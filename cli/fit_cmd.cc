#include "fit_cmd.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common.h"
#include "rtb/bidder/config.h"
#include "rtb/core/policy.h"
#include "rtb/core/report.h"
#include "rtb/simulator/fit.h"

namespace rtb::cli {
namespace {

double Ratio(double fit, double log) { return log != 0 ? fit / log : (fit == 0 ? 1 : INFINITY); }

}  // namespace

CLI::App* AddFitCommand(CLI::App* app, FitArgs* a) {
  a->bidder_config = DefaultConfig("configs/bidder/default.yaml");
  auto* sub = app->add_subcommand(
      "fit",
      "Fit a world to a market's logged events (volume and clusters per step, competing prices, "
      "value per advertiser and cluster) and check it: manual bids replayed on it against the "
      "log's wins, spend and value");
  sub->footer(
      "Example:\n"
      "  rtb fit --events out/markets/metro/events.jsonl --bidder-config "
      "out/markets/metro/bidder.yaml --out out/fit/metro.json");
  sub->add_option("--events", a->events, "The events as a JSON-lines dump (one event per line)")
      ->required();
  sub->add_option("--bidder-config", a->bidder_config,
                  "The bidder config the events were served with: advertisers, agents, budgets, "
                  "steps, clusters_path, ab.learned_share")
      ->capture_default_str();
  sub->add_option("--out", a->out, "The fitted world (JSON, rtb.fitted-world.v1)")
      ->capture_default_str();
  sub->add_option("--clusters-out", a->clusters_out,
                  "Also write the bidder config's cluster map with the fitted history (x_j per "
                  "step and cluster): the map to serve and learn with when `rtb learn --init` "
                  "starts from agents trained on this world, so they see the states they trained "
                  "on");
  sub->add_option("--min-impressions", a->min_impressions,
                  "Impressions an advertiser needs in a cluster for a value lift of its own "
                  "(fewer: its agent's there)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub->add_option("--seed", a->seed, "Seed of the check's competing prices")->capture_default_str();
  sub->add_option("--tolerance", a->tolerance,
                  "The check passes when wins, spend and value are within this share of the "
                  "log's")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  return sub;
}

int RunFit(const FitArgs& a) {
  auto cfg = bidder::LoadBidderConfig(a.bidder_config);
  if (!cfg.ok()) return Fail(cfg.status());
  sim::FitMarket m;
  for (const auto& adv : cfg->advertisers) {
    m.advertisers.push_back(
        {adv.id, adv.agent, adv.bid, adv.daily_budget, adv.conversion_value, adv.goal});
  }
  m.steps = cfg->market.steps_per_day;
  m.step_ms = int64_t{cfg->market.step_seconds} * 1000;
  m.learned_share = cfg->ab.learned_share;
  m.min_impressions = a.min_impressions;
  m.clusters = 1;
  ClusterMap map;
  if (!cfg->clusters_path.empty()) {
    auto clusters = LoadClusterMap(cfg->clusters_path);
    if (!clusters.ok()) return Fail(clusters.status());
    map = std::move(*clusters);
    m.clusters = map.clusters;
  } else if (!a.clusters_out.empty()) {
    return Fail(Status::InvalidArgument(a.bidder_config +
                                        ": --clusters-out needs the config's clusters_path"));
  }
  auto log = sim::ReadOutcomeDump(a.events, /*skip_malformed=*/false);
  if (!log.ok()) return Fail(log.status());
  auto world = sim::FitWorld(*log, m);
  if (!world.ok()) return Fail(Status::InvalidArgument(a.events + ": " + world.status().message()));
  const sim::FitCheck c = sim::CheckFit(*world, a.seed);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(a.out).parent_path(), ec);
  if (auto st = WriteFileAtomic(a.out, world->ToJson()); !st.ok()) return Fail(st);
  if (!a.clusters_out.empty()) {
    map.revenue_hist = world->revenue_hist;
    map.cost_hist = world->cost_hist;
    if (auto st = WriteFileAtomic(a.clusters_out, SerializeClusterMap(map)); !st.ok()) {
      return Fail(st);
    }
  }
  const double wins = Ratio(c.wins_fit, c.wins_log), spend = Ratio(c.spend_fit, c.spend_log),
               value = Ratio(c.value_fit, c.value_log);
  // No manual-arm bid, nothing to check against: not a pass.
  const bool pass = c.bids > 0 && std::abs(wins - 1) <= a.tolerance &&
                    std::abs(spend - 1) <= a.tolerance && std::abs(value - 1) <= a.tolerance;
  std::printf(
      "rtb fit: %zu bids over %d day(s), %d clusters, %zu advertisers -> %s\n"
      "  competition: highest other eCPM log-normal, median %.3f, sigma %.3f (%lld clearing "
      "prices, %lld censored)\n"
      "  check (the manual arm's %lld bids, manual bids, its budgets): wins %.0f vs %.0f logged "
      "(%.3fx), spend %.2f vs %.2f (%.3fx), value %.2f vs %.2f (%.3fx): %s (tolerance %.0f%%)\n",
      world->bids.size(), world->days, m.clusters, m.advertisers.size(), a.out.c_str(),
      std::exp(world->comp_mu), world->comp_sigma, static_cast<long long>(world->exact),
      static_cast<long long>(world->censored), static_cast<long long>(c.bids), c.wins_fit,
      c.wins_log, wins, c.spend_fit, c.spend_log, spend, c.value_fit, c.value_log, value,
      pass ? "within" : "OUTSIDE", a.tolerance * 100);
  if (c.bids == 0) {
    std::fprintf(stderr,
                 "rtb fit: no check: the events hold no bid of the A/B test's manual arm (the "
                 "bids the check replays with manual bids); the world is written\n");
  }
  return pass ? 0 : 3;
}

}  // namespace rtb::cli
