// rtb-learner: the LibTorch half of `rtb`. `rtb train ...` runs `rtb-learner train ...`.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "kernels.h"
#include "rtb/core/admin_server.h"
#include "rtb/core/clock.h"
#include "rtb/core/log.h"
#include "rtb/core/memory.h"
#include "rtb/learner/agents.h"
#include "rtb/learner/algo_spec.h"
#include "rtb/learner/config.h"
#include "rtb/learner/online.h"
#include "rtb/learner/pacing.h"
#include "rtb/learner/train.h"
#include "rtb/learner/tune.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/replay.h"

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// The process logger: the flag's level wins over the config's; false on a bad level or format
// (said on stderr).
bool InitLog(const std::string& sub, const std::string& flag_level, const std::string& format,
             const std::string& config_level) {
  rtb::log::Options o;
  o.process = "rtb-" + sub;
  o.level = !flag_level.empty() ? flag_level : config_level;
  auto f = rtb::log::ParseFormat(format);
  rtb::Status st = f.ok() ? rtb::Status::Ok() : f.status();
  if (f.ok()) {
    o.format = *f;
    st = rtb::log::Init(o);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "rtb: error: %s\n", st.message().c_str());
    return false;
  }
  rtb::log::Get("kernels").info("numeric kernels: {}", rtb::learn::NumericKernels());
  return true;
}

// "<command>: error: <message>" on stderr; the exit code 1.
int Fail(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", command.c_str(), message.c_str());
  return 1;
}

// The learner config at `path`, with the process logger started at its level (the flag's wins);
// nothing (said on stderr, `command: error: ...`) when either fails.
std::optional<rtb::learn::LearnerConfig> ConfigAndLog(const std::string& path,
                                                      const std::string& command,
                                                      const std::string& sub,
                                                      const std::string& log_level,
                                                      const std::string& log_format) {
  auto cfg = rtb::learn::LoadLearnerConfig(path);
  if (!cfg.ok()) {
    Fail(command, cfg.status().message());
    return std::nullopt;
  }
  if (!InitLog(sub, log_level, log_format, cfg->log_level)) return std::nullopt;
  return std::move(*cfg);
}

// --auction: the world's auction type for this run, in place of its config's auction.type.
void AddAuctionOption(CLI::App* sub, std::string* type) {
  sub->add_option("--auction", *type, rtb::sim::kAuctionOptionHelp)
      ->check(CLI::IsMember(rtb::sim::kAuctionTypes));
}

// The options every subcommand takes.
struct Common {
  bool quiet = false;
  std::string log_level, log_format = "text";
};

void AddLogOptions(const std::vector<CLI::App*>& subs, Common& c) {
  for (CLI::App* sub : subs) {
    sub->add_option("--log-level", c.log_level,
                    "Log level: trace, debug, info, warn, error or off (default: the config's)");
    sub->add_option("--log-format", c.log_format, "Log lines as text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }
}

// rtb train: train methods on the training day, compare them on the test day.
struct TrainCmd {
  std::string config = "configs/learner/default.yaml";
  std::string algo = "dcmab";
  std::string auction;     // --auction: the world's auction type, in place of its config's
  double cpa_share = -1;   // --cpa-share: world.cpa_share for this run (-1: the config's)
  double roas_share = -1;  // --roas-share: world.roas_share for this run (-1: the config's)
  rtb::learn::TrainOptions opt;
};

CLI::App* AddTrain(CLI::App& app, TrainCmd& c, Common& common) {
  auto* t =
      app.add_subcommand("train", "Train methods on the training day, compare on the test day");
  t->add_option("--config", c.config, "Learner config (YAML)")->capture_default_str();
  t->add_option("--algo", c.algo,
                rtb::learn::AlgoNameList(" | ") + " | all | a,b,c" + rtb::learn::AlgoHelpLines())
      ->capture_default_str();
  t->add_option("--seeds", c.opt.seeds, "Seeds per method (default: the config's)");
  t->add_option("--episodes", c.opt.episodes, "Max episodes per run (default: the config's)");
  t->add_option("--out", c.opt.out, "Output directory")->capture_default_str();
  t->add_option("--jobs", c.opt.jobs, "Runs trained in parallel")->capture_default_str();
  AddAuctionOption(t, &c.auction);
  t->add_option("--cpa-share", c.cpa_share,
                "Share of the world's advertisers with a target-CPA goal (world.cpa_share; "
                "default: the simulator config's): the agents learn the goals' score")
      ->check(CLI::Range(0.0, 1.0));
  t->add_option("--roas-share", c.roas_share,
                "Share of the world's advertisers with a target-ROAS goal (world.roas_share; "
                "with --cpa-share at most 1 in all)")
      ->check(CLI::Range(0.0, 1.0));
  t->add_option("--world", c.opt.world,
                "Train in a world fitted to a market's logged events (rtb fit) instead of the "
                "simulator config's: the learned arm's part of it (its bidder config's "
                "ab.learned_share, or --learned-share)");
  t->add_flag("--resume", c.opt.resume, "Continue each run from its last checkpoint");
  t->add_option("--learned-share", c.opt.learned_share,
                "Train for the learned arm of a live A/B test: this share of the users "
                "(hashed with --ab-salt, as the bidder does) and of every budget")
      ->check(CLI::Range(0.0, 1.0).description("in (0, 1]"))
      ->capture_default_str();
  t->add_option("--ab-salt", c.opt.ab_salt, "The bidders' ab.salt (with --learned-share)")
      ->capture_default_str();
  t->add_flag("--quiet", common.quiet, "No progress lines");
  return t;
}

int RunTrain(TrainCmd& c, const Common& common) {
  c.opt.progress = !common.quiet;
  c.opt.config_path = c.config;
  if (c.algo == "all") {
    c.opt.algos = rtb::learn::AllAlgoNames();
  } else {
    std::stringstream ss(c.algo);
    for (std::string a; std::getline(ss, a, ',');) c.opt.algos.push_back(a);
  }
  auto cfg = ConfigAndLog(c.config, "rtb", "train", common.log_level, common.log_format);
  if (!cfg) return 1;
  if (auto st = rtb::sim::OverrideAuctionType(&cfg->sim, c.auction); !st.ok()) {
    return Fail("rtb train", st.message());
  }
  if (c.cpa_share >= 0) cfg->sim.world.cpa_share = c.cpa_share;
  if (c.roas_share >= 0) cfg->sim.world.roas_share = c.roas_share;
  if (cfg->sim.world.cpa_share + cfg->sim.world.roas_share > 1) {
    return Fail("rtb train",
                "--cpa-share + --roas-share must be at most 1 (an advertiser has one "
                "goal)");
  }
  auto report = rtb::learn::RunTraining(*cfg, c.opt);
  if (!report.ok()) return Fail("rtb", report.status().message());
  if (auto st = rtb::WriteReportFiles(*report, c.opt.out); !st.ok()) {
    return Fail("rtb", st.message());
  }
  std::printf("wrote %s/report.{json,csv,md,html}\n", c.opt.out.c_str());
  return 0;
}

// rtb learn: online learning from the bidders' Kafka events.
struct LearnCmd {
  std::string config = "configs/learner/default.yaml";
  rtb::learn::OnlineOptions on;
  std::string brokers, state_dir, market, admin_listen;
};

CLI::App* AddLearn(CLI::App& app, LearnCmd& c, Common& common) {
  auto* l = app.add_subcommand(
      "learn", "Learn online from the bidders' Kafka events; publish action tables");
  l->add_option("--config", c.config, "Learner config (YAML; section online)")
      ->capture_default_str();
  l->add_option("--brokers", c.brokers, "Kafka bootstrap.servers (default: online.brokers)");
  l->add_option("--state-dir", c.state_dir,
                "Replay store + checkpoint (default: online.state_dir)");
  l->add_option("--init", c.on.init_checkpoint,
                "Offline-trained checkpoint to start from (when the state dir has none)");
  l->add_option("--seed", c.on.seed, "Seed (exploration, minibatches)")->capture_default_str();
  l->add_option("--max-steps", c.on.max_steps, "Stop after closing this many steps (-1 = run)")
      ->capture_default_str();
  l->add_option("--market", c.market,
                "The bidders' config: the market learned in (default: online.market)");
  l->add_option("--admin-listen", c.admin_listen,
                "host:port of GET /metrics and /healthz (default: online.admin_listen)");
  l->add_flag("--quiet", common.quiet, "No per-step lines");
  return l;
}

int RunLearn(LearnCmd& c, const Common& common) {
  auto cfg = ConfigAndLog(c.config, "rtb", "learn", common.log_level, common.log_format);
  if (!cfg) return 1;
  if (!c.brokers.empty()) cfg->online.brokers = c.brokers;
  if (!c.state_dir.empty()) cfg->online.state_dir = c.state_dir;
  if (!c.market.empty()) cfg->online.market = c.market;
  if (!c.admin_listen.empty()) cfg->online.admin_listen = c.admin_listen;
  c.on.progress = !common.quiet;
  c.on.stop = &g_stop;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  torch::set_num_threads(1);
  rtb::learn::OnlineStatus status;
  c.on.status = &status;
  std::unique_ptr<rtb::AdminServer> admin;
  if (!cfg->online.admin_listen.empty()) {
    auto a = rtb::StartAdminPort(
        cfg->online.admin_listen, [&status] { return rtb::learn::OnlineMetrics(status); },
        [&status] { return rtb::learn::Unhealthy(status, rtb::SystemClock()->UnixMs()); },
        "learner");
    if (!a.ok()) return Fail("rtb learn", a.status().message());
    admin = std::move(*a);
  }
  const rtb::Status st = rtb::learn::RunOnline(*cfg, c.on);
  if (!st.ok()) return Fail("rtb learn", st.message());
  return 0;
}

// rtb tune: successive halving over learner configurations.
struct TuneCmd {
  std::string config = "configs/learner/default.yaml";
  rtb::learn::TuneOptions tu;
};

CLI::App* AddTune(CLI::App& app, TuneCmd& c, Common& common) {
  auto* tn = app.add_subcommand(
      "tune", "Successive-halving search over learner configurations (HyperTrick)");
  tn->add_option("--config", c.config, "The learner config searched around (trial 0)")
      ->capture_default_str();
  tn->add_option("--algo", c.tu.algo, "The method tuned")->capture_default_str();
  tn->add_option("--trials", c.tu.trials, "Configurations, the config as given among them")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  tn->add_option("--min-episodes", c.tu.min_episodes, "Episodes of the first rung")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tn->add_option("--eta", c.tu.eta, "Keep the best 1/eta at each rung; rungs grow by eta")
      ->check(CLI::Range(2, 100))
      ->capture_default_str();
  tn->add_option("--max-episodes", c.tu.max_episodes,
                 "Episodes of the last rung (0 = the config's)")
      ->capture_default_str();
  tn->add_option("--seed", c.tu.seed, "Draws the configurations")->capture_default_str();
  tn->add_option("--jobs", c.tu.jobs, "Trials trained at once")->capture_default_str();
  tn->add_option("--out", c.tu.out, "Output directory")->capture_default_str();
  tn->add_flag("--quiet", common.quiet, "No progress lines");
  return tn;
}

int RunTune(TuneCmd& c, const Common& common) {
  auto cfg = ConfigAndLog(c.config, "rtb tune", "tune", common.log_level, common.log_format);
  if (!cfg) return 1;
  c.tu.config_path = c.config;
  c.tu.progress = !common.quiet;
  auto res = rtb::learn::RunTuning(*cfg, c.tu);
  if (!res.ok()) return Fail("rtb tune", res.status().message());
  std::printf(
      "best: trial %d; wrote %s/report.{json,md,html} and %s/best.yaml (%lld episodes, "
      "%.2f full runs, %.0f s)\n",
      res->best, c.tu.out.c_str(), c.tu.out.c_str(), static_cast<long long>(res->episodes),
      res->full_runs, res->seconds);
  return 0;
}

// rtb train-pacing: the single-campaign pacing policy.
struct PacingCmd {
  rtb::learn::PacingTrainOptions po;
  std::string log, info, validation, out = "out/pacing/pacing-table.json";
  std::string auction = "second_price";  // --auction
};

CLI::App* AddPacing(CLI::App& app, PacingCmd& c, Common& common) {
  c.po.hp = rtb::learn::PacingHyperParams();
  auto* pc = app.add_subcommand(
      "train-pacing",
      "Train the single-campaign pacing policy from a campaign summary (and a training log)");
  pc->alias("pacing");  // its earlier name
  pc->add_option("--log", c.log,
                 "Training log (click payprice pCTR per line): its pCTRs (--prices histogram) or "
                 "its auctions (--prices log); optional with --prices histogram");
  pc->add_option("--info", c.info,
                 "Campaign summary JSON (imp_train, clk_train, cost_train, price_counter_train)")
      ->required();
  pc->add_option("--validation-log", c.validation,
                 "Compare the tables (and the base alone) on this log instead of the training "
                 "data; the kept table is the best there");
  pc->add_option("--base", c.po.base, "The bid the action scales: lin (Lin-Bid) | rlb (RLB's bid)")
      ->check(CLI::IsMember({"lin", "rlb"}))
      ->capture_default_str();
  pc->add_option("--prices", c.po.prices,
                 "Train on auctions drawn from the summary's price histogram (histogram) or on "
                 "the training log itself (log). Default: log with --log, else histogram")
      ->check(CLI::IsMember({"histogram", "log"}));
  pc->add_option("--bratio", c.po.bratio,
                 "Action scale: bid x (1 + clip(a x bratio, +-0.9)) (default 1 with --base lin, "
                 "0.1 with --base rlb)");
  pc->add_option("--out", c.out, "The pacing table to write (schemas/pacing-table-v1.md)")
      ->capture_default_str();
  pc->add_option("--c0", c.po.protocol.c0, "Budget fraction of cpm_train x N")
      ->capture_default_str();
  pc->add_option("--episode-size", c.po.protocol.episode_size, "Auctions per episode (N)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  pc->add_option("--max-bid", c.po.protocol.max_bid, "Bid cap")->capture_default_str();
  pc->add_option("--auction", c.auction,
                 "What a win pays: second_price (the logged market price) | first_price (the "
                 "bid)")
      ->check(CLI::IsMember(rtb::sim::kReplayAuctions))
      ->capture_default_str();
  pc->add_option("--steps", c.po.steps, "Decision steps per episode (K; divides N)")
      ->capture_default_str();
  pc->add_option("--parts", c.po.parts,
                 "With --base rlb: also fit RLB's program to the training log by this many parts "
                 "of the episode (a day's moving prices and CTRs) and keep it as the base where "
                 "it does better than RLB's own (0: RLB's own)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  pc->add_option("--price-buckets", c.po.price_buckets,
                 "Price buckets of the table: the state sees the price level (the last step's "
                 "wins' mean price against the training log's); 1: it does not")
      ->check(CLI::Range(1, 21))
      ->capture_default_str();
  pc->add_option("--holdout", c.po.holdout,
                 "Without --validation-log: the share of the training log's last episodes held "
                 "out to compare tables on (0: compare on the training data)")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  pc->add_option("--b0", c.po.b0,
                 "Lin-Bid base bid the action scales (0 = tuned on the training data)")
      ->capture_default_str();
  pc->add_option("--episodes", c.po.episodes, "Training episodes")->capture_default_str();
  pc->add_option("--eval-every", c.po.eval_every, "Episodes between table evaluations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  pc->add_option("--seed", c.po.seed, "Seed (windows, exploration, minibatches)")
      ->capture_default_str();
  pc->add_option("--store-dir", c.po.store_dir, "RocksDB replay store (default: in memory)");
  pc->add_flag("--quiet", common.quiet, "No progress lines");
  return pc;
}

// The pacing result as one JSON line on stdout.
void PrintPacingResult(const PacingCmd& c, const rtb::learn::PacingTrainResult& res) {
  std::printf(
      "{\"table\":\"%s\",\"base\":\"%s\",\"selected_on\":\"%s\",\"b0\":%lld,"
      "\"best_episode\":%d,"
      "\"train_clicks\":%lld,\"train_expected_clicks\":%.3f,"
      "\"base_train_expected_clicks\":%.3f,\"train_cost\":%lld,\"base_train_clicks\":%lld,"
      "\"base_train_cost\":%lld,\"world_expected_clicks\":%.3f,"
      "\"base_world_expected_clicks\":%.3f,\"rejected_on_world\":%d,\"by_part\":%s,"
      "\"rlb_own_expected_clicks\":%.3f,\"rlb_by_part_expected_clicks\":%.3f,"
      "\"part_price_chi2\":%.1f,\"part_ctr_chi2\":%.1f,\"part_chi2_critical\":%.1f}\n",
      c.out.c_str(), res.table.params.base.c_str(),
      !c.validation.empty() ? "validation" : (c.po.holdout > 0 ? "holdout" : "training"),
      static_cast<long long>(res.table.params.b0), res.best_episode,
      static_cast<long long>(res.best_train.clicks), res.best_train.expected_clicks,
      res.base_train.expected_clicks, static_cast<long long>(res.best_train.cost),
      static_cast<long long>(res.base_train.clicks), static_cast<long long>(res.base_train.cost),
      res.best_world.expected_clicks, res.base_world.expected_clicks, res.rejected,
      res.by_part ? "true" : "false", res.rlb_own.expected_clicks, res.rlb_by_part.expected_clicks,
      res.price_chi2, res.ctr_chi2, res.chi2_critical);
}

int RunPacing(const CLI::App& pc, PacingCmd& c, const Common& common) {
  if (!InitLog("train-pacing", common.log_level, common.log_format, "info")) return 1;
  torch::set_num_threads(1);
  rtb::learn::PacingTrainOptions& po = c.po;
  po.progress = !common.quiet;
  if (pc.get_option("--bratio")->count() == 0) po.bratio = po.base == "rlb" ? 0.1 : 1.0;
  if (pc.get_option("--prices")->count() == 0) po.prices = c.log.empty() ? "histogram" : "log";
  if (c.log.empty() && po.prices == "log") return Fail("rtb pacing", "--prices log needs --log");
  po.protocol.first_price = *rtb::sim::ParseReplayAuction(c.auction);  // checked by CLI11
  rtb::Result<rtb::sim::CompactLog> log = rtb::sim::CompactLog{};
  if (!c.log.empty()) log = rtb::sim::ReadCompactLog(c.log, {});
  auto info = log.ok() ? rtb::sim::ReadCampaignInfo(c.info) : log.status();
  if (!info.ok()) return Fail("rtb pacing", info.status().message());
  rtb::Result<rtb::sim::CompactLog> validation = rtb::sim::CompactLog{};
  if (!c.validation.empty()) validation = rtb::sim::ReadCompactLog(c.validation, {});
  if (!validation.ok()) return Fail("rtb pacing", validation.status().message());
  if (!c.validation.empty() &&
      static_cast<int64_t>(validation->auctions.size()) < po.protocol.episode_size) {
    return Fail("rtb pacing", c.validation + " has " + std::to_string(validation->auctions.size()) +
                                  " auctions, fewer than one episode (" +
                                  std::to_string(po.protocol.episode_size) + ")");
  }
  if (po.base == "rlb" && pc.get_option("--b0")->count() > 0) {
    return Fail("rtb pacing", "--b0 is Lin-Bid's base bid; --base rlb has none");
  }
  auto res = rtb::learn::TrainPacing(log->auctions, *info, po, validation->auctions);
  if (!res.ok()) return Fail("rtb pacing", res.status().message());
  if (auto st = rtb::WriteFileAtomic(c.out, res->table.ToJson()); !st.ok()) {
    return Fail("rtb pacing", st.message());
  }
  PrintPacingResult(c, *res);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  rtb::learn::PinNumericKernels(argv);  // first: may re-execute the process
  rtb::KeepFreedMemoryForReuse(rtb::learn::kTrainMmapThreshold, rtb::learn::kTrainTrimThreshold);
  CLI::App app{"rtb-learner: trains the bidding agents (LibTorch)"};
  app.require_subcommand(1);
  Common common;
  TrainCmd train;
  LearnCmd learn;
  TuneCmd tune;
  PacingCmd pacing;
  CLI::App* t = AddTrain(app, train, common);
  CLI::App* l = AddLearn(app, learn, common);
  CLI::App* tn = AddTune(app, tune, common);
  CLI::App* pc = AddPacing(app, pacing, common);
  AddLogOptions({t, l, pc, tn}, common);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (l->parsed()) return RunLearn(learn, common);
  if (pc->parsed()) return RunPacing(*pc, pacing, common);
  if (tn->parsed()) return RunTune(tune, common);
  return RunTrain(train, common);
}
