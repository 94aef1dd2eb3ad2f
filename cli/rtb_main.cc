// `rtb`: the engine's single command. Subcommands that do not train never load LibTorch;
// training commands run the separate rtb-learner executable next to this one.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kafka_cmd.h"
#include "replay_cmd.h"
#include "report_cmd.h"
#include "rtb/bidder/bidder.h"
#include "rtb/bidder/config.h"
#include "rtb/bidder/server.h"
#include "rtb/budget/coordinator.h"
#include "rtb/core/ab.h"
#include "rtb/core/log.h"
#include "rtb/core/report.h"
#include "rtb/core/rng.h"
#include "rtb/demo/demo.h"
#include "rtb/exchange/exchange.h"
#include "rtb/learner/algo_spec.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/export.h"
#include "rtb/simulator/fulllog.h"
#include "rtb/simulator/replay.h"
#include "rtb/simulator/simulate.h"
#include "rtb/simulator/world.h"

namespace fs = std::filesystem;

namespace {

// A command's error for its user: one plain line (not a log line), exit 1.
int Fail(const rtb::Status& st) {
  std::fprintf(stderr, "rtb: error: %s\n", st.message().c_str());
  return 1;
}

// --log-level / --log-format, accepted by every subcommand (after its name).
struct LogArgs {
  std::string level;  // empty: the config's (serve) or info
  std::string format = "text";
};

void AddLogOptions(CLI::App* app, LogArgs* a) {
  app->add_option("--log-level", a->level,
                  "Log level: trace, debug, info, warn, error or off (default: the config's or "
                  "info)");
  app->add_option("--log-format", a->format, "Log lines as text or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

// Sets up the process logger for `rtb <sub>`; the flag's level wins over the config's.
rtb::Status InitLog(const std::string& sub, const LogArgs& a, const std::string& config_level) {
  rtb::log::Options o;
  o.process = "rtb-" + sub;
  o.level = !a.level.empty() ? a.level : config_level.empty() ? "info" : config_level;
  RTB_ASSIGN_OR_RETURN(o.format, rtb::log::ParseFormat(a.format));
  return rtb::log::Init(o);
}

using rtb::demo::ExeDir;

// A default config path: as given when it exists relative to the working directory, else
// relative to the source tree this binary was built from (build/<preset>/rtb).
std::string DefaultConfig(const std::string& rel) {
  if (fs::exists(rel)) return rel;
  const fs::path alt = ExeDir() / ".." / ".." / rel;
  if (fs::exists(alt)) return fs::weakly_canonical(alt).string();
  return rel;
}

struct SimulateArgs {
  std::string config;
  std::string policy = "manual";
  std::string out = "out/simulate";
  std::string day = "test";
  std::string train_log, test_log;
  int64_t seed = -1;
  bool quiet = false;
  int bidders = 1;
  std::string split = "even";
  std::string arm;  // "" (every user, whole budgets) | learned | manual
  double learned_share = 0.5;
  std::string ab_salt = "rtb-ab-1";  // configs/bidder/default.yaml's ab.salt
};

int RunSimulate(const SimulateArgs& a) {
  auto cfg = rtb::sim::LoadSimulatorConfig(a.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (a.seed >= 0) cfg->seed = static_cast<uint64_t>(a.seed);
  auto sc = rtb::sim::BuildScenario(*cfg, a.train_log, a.test_log, !a.quiet);
  if (!sc.ok()) return Fail(sc.status());
  rtb::sim::SimulateOptions opt;
  if (!a.arm.empty()) {
    if (!(a.learned_share > 0 &&
          (a.learned_share < 1 || (a.arm == "learned" && a.learned_share == 1)))) {
      return Fail(rtb::Status::InvalidArgument(
          "--learned-share must be in (0, 1] with --arm learned, in (0, 1) with --arm manual"));
    }
    const rtb::Arm arm = *rtb::ParseArm(a.arm);
    rtb::sim::RestrictToArm(**sc, a.learned_share, a.ab_salt, arm);
    char share[32];
    std::snprintf(share, sizeof share, "%g", a.learned_share);
    opt.extra_meta.push_back({"A/B arm", a.arm + " (learned share " + share + ", salt '" +
                                             a.ab_salt +
                                             "'): its users and its part of the budgets"});
  }
  opt.bidders = a.bidders;
  using Rule = rtb::sim::AuctionEngine::SplitRule;
  opt.split = a.split == "whole"        ? Rule::kWhole
              : a.split == "whole-mean" ? Rule::kWholeMean
                                        : Rule::kEven;
  opt.policy = a.policy;
  opt.day = a.day;
  opt.config_path = a.config;
  opt.progress = !a.quiet;
  auto report = rtb::sim::Simulate(**sc, opt);
  if (!report.ok()) return Fail(report.status());
  if (auto st = rtb::WriteReportFiles(*report, a.out); !st.ok()) return Fail(st);
  std::printf("wrote %s/report.{json,csv,md,html}\n", a.out.c_str());
  return 0;
}

struct GenerateArgs {
  std::string config;
  std::string out = "out/logs";
  std::string bidder_out;     // also export the world for the bidder
  std::string bidder_config;  // the base bidder config of the export
  int64_t seed = -1;
  std::string rlb_out;  // also a synthetic single-campaign log in the RLB format
  int64_t rlb_lines = 156000;
  // The two full-information days into `out`: asked for with --out, or when nothing else is.
  bool full_logs = true;
};

int RunGenerate(const GenerateArgs& a) {
  auto cfg = rtb::sim::LoadSimulatorConfig(a.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (a.seed >= 0) cfg->seed = static_cast<uint64_t>(a.seed);
  if (!a.rlb_out.empty()) {
    // A single campaign with a market-price model: train and test logs + the summary.
    std::error_code ec;
    fs::create_directories(a.rlb_out, ec);
    rtb::sim::CampaignInfo train, test;
    const std::string tr = rtb::sim::GenerateCompactLog(a.rlb_lines, cfg->seed * 2 + 1, &train);
    const std::string te = rtb::sim::GenerateCompactLog(a.rlb_lines, cfg->seed * 2 + 2, &test);
    // A third draw of the same campaign for tuning (Lin-Bid's b0), held out from both.
    const std::string va =
        rtb::sim::GenerateCompactLog(a.rlb_lines, rtb::Rng::Mix(cfg->seed, 0xa1d), nullptr);
    train.imp_test = test.imp_test;
    train.clk_test = test.clk_test;
    train.cost_test = test.cost_test;
    for (const auto& [name, text] : {std::pair{"train.txt", &tr}, std::pair{"test.txt", &te},
                                     std::pair{"validation.txt", &va}}) {
      if (auto st = rtb::WriteFileAtomic(a.rlb_out + "/" + name, *text); !st.ok()) return Fail(st);
    }
    if (auto st =
            rtb::WriteFileAtomic(a.rlb_out + "/campaign.json", rtb::sim::CampaignInfoJson(train));
        !st.ok()) {
      return Fail(st);
    }
    std::printf("wrote %s/{train,validation,test}.txt and campaign.json (%lld lines each)\n",
                a.rlb_out.c_str(), static_cast<long long>(a.rlb_lines));
  }
  const auto world = rtb::sim::GenerateWorld(cfg->world, cfg->seed);
  if (a.full_logs) {
    std::error_code ec;
    fs::create_directories(a.out, ec);
    if (ec) return Fail(rtb::Status::IoError(a.out + ": " + ec.message()));
    const auto train = rtb::sim::GenerateDay(world, cfg->day, rtb::Rng::Mix(cfg->seed, 1));
    const auto test = rtb::sim::GenerateDay(world, cfg->day, rtb::Rng::Mix(cfg->seed, 2));
    if (auto st = rtb::sim::WriteFullLog(train, a.out + "/train.tsv"); !st.ok()) return Fail(st);
    if (auto st = rtb::sim::WriteFullLog(test, a.out + "/test.tsv"); !st.ok()) return Fail(st);
    std::printf("wrote %s/train.tsv (%zu requests, %zu candidates) and %s/test.tsv (%zu, %zu)\n",
                a.out.c_str(), train.requests(), train.candidates(), a.out.c_str(), test.requests(),
                test.candidates());
  }
  if (!a.bidder_out.empty()) {
    auto sc = rtb::sim::BuildScenario(*cfg, "", "", false);
    if (!sc.ok()) return Fail(sc.status());
    if (auto st = rtb::sim::ExportBidderWorld(**sc, world, a.bidder_out, a.bidder_config);
        !st.ok()) {
      return Fail(st);
    }
    std::printf("wrote %s/{bidder.yaml,predictor.json,clusters.json}\n", a.bidder_out.c_str());
  }
  return 0;
}

struct ServeArgs {
  std::string config;
  std::string listen;
};

int RunServe(const ServeArgs& a, const LogArgs& la) {
  auto cfg = rtb::bidder::LoadBidderConfig(a.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (auto st = InitLog("serve", la, cfg->log_level); !st.ok()) return Fail(st);
  if (!a.listen.empty()) {
    // Notices follow the listening address unless the config names another base URL.
    if (cfg->notice_base_url == "http://" + cfg->listen)
      cfg->notice_base_url = "http://" + a.listen;
    cfg->listen = a.listen;
  }
  auto bidder = rtb::bidder::Bidder::Create(*cfg);
  if (!bidder.ok()) return Fail(bidder.status());
  rtb::bidder::Server server(**bidder, cfg->listen);
  auto port = server.Start();
  if (!port.ok()) return Fail(port.status());
  auto& lg = rtb::log::Get("serve");
  lg.info("listening on {} (port {}), bids at {}, kafka {}", cfg->listen, *port, cfg->bid_path,
          (*bidder)->events().bootstrap());
  server.Wait(/*handle_signals=*/true);
  (*bidder)->Shutdown();  // flush or spill every event before exit
  const auto s = (*bidder)->events().Stats();
  // Every event logged is acked, or waits in the spill file for the next start: logged = acked +
  // spilled - resent (a re-sent line is acked, or spilled again), and nothing is lost when
  // nothing is left in the spill file and nothing was dropped.
  lg.info(
      "stopped; events logged {}, acked {}, spilled {}, resent {}, left in the spill file {}, "
      "dropped {}",
      s.logged, s.acked, s.spilled, s.resent, s.spill_pending, s.dropped);
  return 0;
}

// Runs `rtb-learner <sub> args...` (the only LibTorch binary) in place of this process.
int ExecLearner(const std::string& sub, int argc, char** argv, int first) {
  const std::string exe = (ExeDir() / "rtb-learner").string();
  // argv[0] "rtb": the learner's help reads "rtb train ...", as typed (it re-executes
  // /proc/self/exe).
  std::vector<std::string> args = {"rtb", sub};
  bool has_config = false;
  for (int i = first; i < argc; ++i) {
    args.emplace_back(argv[i]);
    has_config = has_config || std::string(argv[i]).rfind("--config", 0) == 0;
  }
  if (!has_config && sub != "train-pacing") {  // it takes no learner config
    args.push_back("--config");
    args.push_back(DefaultConfig("configs/learner/default.yaml"));
  }
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  ::execv(exe.c_str(), cargs.data());
  std::fprintf(stderr, "rtb: error: cannot run %s (%s); build it with RTB_BUILD_LEARNER=ON\n",
               exe.c_str(), std::strerror(errno));
  return 1;
}

struct ExchangeArgs {
  std::string config;                           // simulator config: the world
  std::string traffic, market, write_clusters;  // or a traffic file and its bidder config
  rtb::exchange::ExchangeConfig x;
  int days = 1;
  int64_t first_day = 0;
  int64_t seed = -1;  // the world's (rtb generate --seed); -1: the config's
  uint64_t first_day_seed = 1000;
  bool no_wait = false;
};

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

// `rtb exchange`: plays simulated days against a running bidder; prints one JSON line per day.
int RunExchange(ExchangeArgs a) {
  if (!a.traffic.empty()) return RunTrafficExchange(std::move(a));
  auto cfg = rtb::sim::LoadSimulatorConfig(a.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (a.seed >= 0) cfg->seed = static_cast<uint64_t>(a.seed);
  auto sc = rtb::sim::BuildScenario(*cfg, "", "", false);
  if (!sc.ok()) return Fail(sc.status());
  const auto world = rtb::sim::GenerateWorld(cfg->world, cfg->seed);
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

struct BudgetArgs {
  std::string market;  // the bidders' config: advertisers, budgets, A/B share, billing window
  rtb::budget::CoordinatorOptions c;
};

// `rtb budget`: the lease coordinator, until SIGINT or SIGTERM.
int RunBudget(BudgetArgs a) {
  auto cfg = rtb::bidder::LoadBidderConfig(a.market);
  if (!cfg.ok()) return Fail(cfg.status());
  if (a.c.brokers.empty()) a.c.brokers = cfg->kafka.brokers;
  a.c.kafka_properties = cfg->kafka.properties;
  if (a.c.brokers.empty()) {
    return Fail(rtb::Status::InvalidArgument(
        "rtb budget needs Kafka: --brokers, or kafka.brokers in " + a.market));
  }
  for (const auto& adv : cfg->advertisers) a.c.daily_budget[adv.id] = adv.daily_budget;
  a.c.learned_share = cfg->ab.learned_share;
  a.c.lease.sizing = cfg->leases.sizing;
  if (a.c.lease.billing_window_ms <= 0) a.c.lease.billing_window_ms = cfg->reservation_timeout_ms;
  static std::atomic<bool> stop{false};
  std::signal(SIGINT, [](int) { stop = true; });
  std::signal(SIGTERM, [](int) { stop = true; });
  // A coordinator that gave the market to a newer one idles until it is stopped: exiting would
  // make a supervisor (Kubernetes' restartPolicy) start it again, and its claim would take the
  // market back from the new one.
  auto idle_until_stopped = [](const std::string& why) {
    rtb::log::Get("budget").info("{}; serving nothing until stopped (SIGTERM)", why);
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return 0;
  };
  a.c.stop = &stop;
  auto co = rtb::budget::Coordinator::Create(a.c);
  if (!co.ok()) {
    if (co.status().code() == rtb::Status::Code::kFailedPrecondition) {
      return idle_until_stopped(co.status().message());
    }
    return Fail(co.status());
  }
  const rtb::Status st = (*co)->Run(stop);
  const auto n = (*co)->counters();
  rtb::log::Get("budget").info(
      "stopped; {} messages ({} malformed, {} for unknown budgets) with {} budget items, {} "
      "holdings published, {} leases reclaimed, {} messages of reclaimed bidders sent before "
      "they died, {} refused (a second process under a bidder's name)",
      n.messages, n.malformed, n.unknown_budget, n.items, n.grants_published, n.reclaims,
      n.late_from_dead, n.refused);
  if (!st.ok()) return Fail(st);
  if (!n.handed_over_to.empty()) {
    co->reset();  // leaves the requests topic's group
    return idle_until_stopped("handed the market over to coordinator " + n.handed_over_to);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Training commands run the LibTorch executable (their --help too: it lists every option);
  // everything else stays torch-free.
  if (argc > 1) {
    const std::string sub = argv[1];
    if (sub == "train" || sub == "tune" || sub == "learn") return ExecLearner(sub, argc, argv, 2);
    if (sub == "train-pacing") return ExecLearner("train-pacing", argc, argv, 2);
  }
  CLI::App app{"rtb: a real-time bidding engine that learns to bid with multi-agent RL (DCMAB)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "rtb 0.1.0");

  SimulateArgs sim;
  sim.config = DefaultConfig("configs/simulator/default.yaml");
  auto* s = app.add_subcommand("simulate",
                               "Simulate a day under a policy and manual bids; write the report");
  s->add_option("--config", sim.config, "Simulator config (YAML)")->capture_default_str();
  s->add_option("--policy", sim.policy,
                "manual | const:<a> | <action-table.json> (schemas/action-table-v1.md); "
                "comma-separated: one per step, the last for the rest of the day")
      ->capture_default_str();
  s->add_option("--seed", sim.seed, "Seed of the world and the days (default: the config's)");
  s->add_option("--out", sim.out, "Output directory for report.{json,csv,md,html}")
      ->capture_default_str();
  s->add_option("--day", sim.day, "Which day to evaluate: train or test")
      ->check(CLI::IsMember({"train", "test"}))
      ->capture_default_str();
  s->add_option("--train-log", sim.train_log,
                "Read the training day from a full-information log instead of generating it");
  s->add_option("--test-log", sim.test_log, "Read the test day from a full-information log");
  s->add_option("--bidders", sim.bidders,
                "Serve the budgets from this many bidders, each request to one of them, each "
                "budget split by an ideal coordinator: the most budget leases can deliver "
                "(docs/budget-leases.md, section 8)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  s->add_option("--split", sim.split,
                "With --bidders: even (equal parts of what is left), whole (whole bids first, "
                "the bid known ahead: the ceiling) or whole-mean (whole units of the "
                "advertiser's mean bid charge)")
      ->check(CLI::IsMember({"even", "whole", "whole-mean"}))
      ->capture_default_str();
  s->add_option("--arm", sim.arm,
                "Play one arm of an A/B test: its users and its part of every budget")
      ->check(CLI::IsMember({"learned", "manual"}));
  s->add_option("--learned-share", sim.learned_share, "With --arm: the learned arm's share")
      ->capture_default_str();
  s->add_option("--ab-salt", sim.ab_salt, "With --arm: the A/B salt (the bidder's ab.salt)")
      ->capture_default_str();
  s->add_flag("--quiet", sim.quiet, "No progress lines");

  GenerateArgs gen;
  gen.config = DefaultConfig("configs/simulator/default.yaml");
  auto* g = app.add_subcommand(
      "generate",
      "Write the training and test days as full-information logs (schemas/fulllog-v1.md)");
  g->add_option("--config", gen.config, "Simulator config (YAML)")->capture_default_str();
  g->add_option("--seed", gen.seed, "Seed (default: the config's)");
  g->add_option("--out", gen.out,
                "Output directory for train.tsv and test.tsv (written unless only --rlb-out or "
                "--bidder-out is given)")
      ->capture_default_str();
  gen.bidder_config = DefaultConfig("configs/bidder/default.yaml");
  g->add_option("--bidder-out", gen.bidder_out,
                "Also write the world for the bidder: bidder.yaml, predictor.json, clusters.json");
  g->add_option("--bidder-config", gen.bidder_config, "Base bidder config of --bidder-out")
      ->capture_default_str();
  g->add_option("--rlb-out", gen.rlb_out,
                "Also write a synthetic campaign in the RLB format: train.txt, validation.txt, "
                "test.txt, campaign.json (for rtb replay)");
  g->add_option("--rlb-lines", gen.rlb_lines, "Lines per RLB log")->capture_default_str();

  ServeArgs srv;
  srv.config = DefaultConfig("configs/bidder/default.yaml");
  auto* sv = app.add_subcommand("serve", "Run the OpenRTB bidder (HTTP, Kafka event log)");
  sv->add_option("--config", srv.config, "Bidder config (YAML)")->capture_default_str();
  sv->add_option("--listen", srv.listen, "host:port, overrides the config");

  auto* tr = app.add_subcommand(
      "train",
      "Train and compare bidding agents (runs rtb-learner, the LibTorch binary): --config <yaml> "
      "--algo <" +
          rtb::learn::AlgoNameList("|") +
          "|all> --seeds <k> --episodes <n> "
          "--out <dir> --jobs <n> --resume");
  tr->allow_extras();
  auto* tu = app.add_subcommand(
      "tune",
      "Search learner configurations by successive halving (runs rtb-learner tune): --config "
      "<yaml> --algo <method> --trials <n> --min-episodes <n> --eta <k> --max-episodes <n> "
      "--seed <s> --jobs <n> --out <dir>");
  tu->allow_extras();
  auto* ln = app.add_subcommand(
      "learn",
      "Learn online from the bidders' Kafka events and publish action tables (runs rtb-learner "
      "learn): --config <yaml> --market <bidder config> --brokers <host:port> --state-dir <dir> "
      "--init <checkpoint> --max-steps <n>");
  ln->allow_extras();
  // Listed for `rtb --help`; main() hands it to rtb-learner before parsing.
  app.add_subcommand(
         "train-pacing",
         "Train the single-campaign pacing policy (runs rtb-learner train-pacing): --info "
         "<campaign summary> --log <training log> --base <lin|rlb> --out <table>; "
         "--help lists the rest")
      ->allow_extras();

  ExchangeArgs xa;
  xa.config = DefaultConfig("configs/simulator/default.yaml");
  auto* xs = app.add_subcommand(
      "exchange", "Play simulated days as an ad exchange against a bidder (OpenRTB over HTTP)");
  xs->add_option("--config", xa.config, "Simulator config: the world")->capture_default_str();
  xs->add_option("--traffic", xa.traffic,
                 "Or a hand-written market's traffic file (configs/markets/*/traffic.yaml)");
  xs->add_option("--market", xa.market,
                 "With --traffic: the market's bidder config (advertisers, predictor, A/B test)");
  xs->add_option("--write-clusters", xa.write_clusters,
                 "With --traffic: write the users' cluster map here (with --days 0: and stop)");
  xs->add_option("--bidder", xa.x.bidder, "Bidder host:port")->capture_default_str();
  xs->add_option("--bidders", xa.x.bidders,
                 "Or several bidders (host:port,...), each request to one of them")
      ->delimiter(',');
  xs->add_option("--spread", xa.x.spread, "Requests' weights over --bidders (default: equal)")
      ->delimiter(',');
  xs->add_option("--bid-path", xa.x.bid_path, "Bid request path")->capture_default_str();
  xs->add_option("--slow-start-ms", xa.x.slow_start_ms,
                 "Several bidders: one back in the rotation (restarted, its readiness check "
                 "passed) takes a part of its requests growing over this long (0: all at once)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  xs->add_option("--seed", xa.seed,
                 "Seed of the world (rtb generate --seed of the bidder's world; default: the "
                 "config's)");
  xs->add_option("--days", xa.days, "Simulated days to play")->capture_default_str();
  xs->add_option("--first-day", xa.first_day, "Number of the first day (simulated clock)")
      ->capture_default_str();
  xs->add_option("--concurrency", xa.x.concurrency, "Connections, one request each at a time")
      ->capture_default_str();
  xs->add_option("--tmax", xa.x.tmax_ms, "tmax of every request, ms")->capture_default_str();
  xs->add_option("--outcomes", xa.x.outcomes, "expected | sampled")
      ->check(CLI::IsMember({"expected", "sampled"}))
      ->capture_default_str();
  xs->add_option("--brokers", xa.x.brokers, "Kafka for step-end markers (empty: none)");
  xs->add_option("--clock-topic", xa.x.clock_topic, "Topic of step-end markers")
      ->capture_default_str();
  rtb::cli::AddKafkaPropertyOption(xs, &xa.x.kafka_properties);
  xs->add_flag("--no-wait", xa.no_wait, "Do not wait for the next policy after each step");
  xs->add_flag("!--no-loss-notices", xa.x.send_loss_notices, "Send no loss notices");
  xs->add_option("--learned-share", xa.x.learned_share,
                 "The bidder's ab.learned_share: account the arms apart")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  xs->add_option("--ab-salt", xa.x.ab_salt, "The bidder's ab.salt")->capture_default_str();

  rtb::cli::ReplayArgs ra;
  ra.job.config = DefaultConfig("configs/simulator/default.yaml");
  auto* rp = app.add_subcommand(
      "replay", "Replay strategies or policies over logged auctions (docs/replay.md protocols)");
  rtb::cli::AddReplayOptions(rp, &ra);

  rtb::cli::ReportArgs rep;
  rep.bidder_config = DefaultConfig("configs/bidder/default.yaml");
  auto* rpt = app.add_subcommand(
      "report",
      "The A/B report from the bidders' events: per day, arm, agent and advertiser budget, "
      "spend, COST, revenue, ROI, CPA, CPC, win rate; learned against manual with intervals");
  rtb::cli::AddReportOptions(rpt, &rep);

  rtb::demo::DemoArgs da;
  da.config = DefaultConfig("configs/demo/default.yaml");
  auto* dm = app.add_subcommand(
      "demo",
      "The closed loop on this machine: embedded Kafka, bidder, online learner and exchange; "
      "writes report.{json,md,html}");
  dm->add_option("--config", da.config, "Demo config (YAML)")->capture_default_str();
  dm->add_option("--out", da.out, "Output directory (default: the config's)");
  dm->add_option("--days", da.days, "Simulated days to play live (default: the config's)");
  dm->add_option("--pretrain-episodes", da.episodes,
                 "Offline pre-training episodes (0 = none; default: the learner config's)");
  dm->add_option("--chaos", da.chaos,
                 "kill-learner@D:S or kill-bidder@D:S: SIGKILL as the exchange sends the "
                 "middle request of day D step S, then restart (1 s later; a bidder sharing "
                 "budgets 2.5 s later, or with kill-bidder@D:S+step a step later, the traffic held "
                 "until it is ready)");
  dm->add_option("--bidders", da.bidders,
                 "Bidder processes sharing the budgets through leases (default: the config's)")
      ->check(CLI::Range(1, 16));
  dm->add_option("--spread", da.spread, "Requests' weights over the bidders, e.g. 70,20,10")
      ->delimiter(',');
  dm->add_flag("--quiet", da.quiet, "No progress lines");
  BudgetArgs ba;
  ba.c.lease.billing_window_ms = 0;  // 0: the market's reservation_timeout_ms
  auto* bu = app.add_subcommand(
      "budget", "The budget-lease coordinator: several bidders share every budget over Kafka");
  bu->add_option("--market", ba.market, "The bidders' config (advertisers, budgets, A/B share)")
      ->required();
  bu->add_option("--brokers", ba.c.brokers, "Kafka bootstrap.servers (default: the market's)");
  bu->add_option("--requests-topic", ba.c.requests_topic, "Bidders' requests and reports")
      ->capture_default_str();
  bu->add_option("--grants-topic", ba.c.grants_topic, "Holdings published (compacted)")
      ->capture_default_str();
  bu->add_option("--coordinators-topic", ba.c.coordinators_topic,
                 "Who serves the market, one coordinator at a time (one partition, compacted; "
                 "default: <grants topic>.coordinators)");
  bu->add_option("--handover-timeout-ms", ba.c.handover_timeout_ms,
                 "How long a starting coordinator waits for the one serving to hand over before "
                 "taking it for dead; a serving one grants nothing once the last beat of its own "
                 "it read back was written more than half of it ago")
      ->check(CLI::Range(1'000, 600'000))
      ->capture_default_str();
  bu->add_option("--heartbeat-timeout-ms", ba.c.lease.heartbeat_timeout_ms,
                 "A bidder silent this long is dead: its unspent lease returns")
      ->check(CLI::Range(int64_t{1000}, int64_t{86'400'000}))
      ->capture_default_str();
  bu->add_option("--reclaim-every-ms", ba.c.reclaim_every_ms,
                 "How often silent bidders are checked (a dead bidder is found at most this "
                 "long after its heartbeat timeout)")
      ->check(CLI::Range(50, 60'000))
      ->capture_default_str();
  bu->add_option("--need-stands-ms", ba.c.need_stands_ms,
                 "A need the pool could not meet is served first from what comes back, and "
                 "asked of the other holders, for this long")
      ->check(CLI::Range(100, 600'000))
      ->capture_default_str();
  bu->add_option("--leases-out", ba.c.leases_out,
                 "On stop, write every lease (budget, held, spent per bidder) to this CSV");
  rtb::cli::KafkaArgs ka;
  auto* kf = app.add_subcommand(
      "kafka",
      "The embedded Kafka cluster alone, for several processes on one machine: prints its "
      "address; SIGUSR1 takes the brokers down, SIGUSR2 brings them back");
  rtb::cli::AddKafkaOptions(kf, &ka);
  LogArgs la;
  for (CLI::App* sub : {s, g, sv, xs, rp, rpt, dm, bu, kf}) AddLogOptions(sub, &la);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (sv->parsed()) return RunServe(srv, la);
  for (CLI::App* sub : {s, g, xs, rp, rpt, dm, bu, kf}) {
    if (!sub->parsed()) continue;
    if (auto st = InitLog(sub->get_name(), la, ""); !st.ok()) return Fail(st);
  }
  if (s->parsed()) return RunSimulate(sim);
  if (g->parsed()) {
    // --rlb-out or --bidder-out alone writes only what it names.
    gen.full_logs =
        g->get_option("--out")->count() > 0 || (gen.rlb_out.empty() && gen.bidder_out.empty());
    return RunGenerate(gen);
  }
  if (xs->parsed()) return RunExchange(xa);
  if (dm->parsed()) return rtb::demo::RunDemo(da);
  if (rp->parsed()) return rtb::cli::RunReplay(ra);
  if (rpt->parsed()) return rtb::cli::RunReport(rep);
  if (bu->parsed()) return RunBudget(ba);
  if (kf->parsed()) return rtb::cli::RunKafka(ka);
  return 2;
}
