// rtb-learner: the LibTorch half of `rtb`. `rtb train ...` runs `rtb-learner train ...`.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>

#include "kernels.h"
#include "rtb/core/log.h"
#include "rtb/core/memory.h"
#include "rtb/learner/agents.h"
#include "rtb/learner/config.h"
#include "rtb/learner/online.h"
#include "rtb/learner/pacing.h"
#include "rtb/learner/train.h"
#include "rtb/learner/tune.h"
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
}  // namespace

int main(int argc, char** argv) {
  rtb::learn::PinNumericKernels(argv);  // first: may re-execute the process
  rtb::KeepFreedMemoryForReuse(rtb::learn::kTrainMmapThreshold, rtb::learn::kTrainTrimThreshold);
  CLI::App app{"rtb-learner: trains the bidding agents (LibTorch)"};
  app.require_subcommand(1);
  std::string config = "configs/learner/default.yaml";
  std::string algo = "dcmab";
  rtb::learn::TrainOptions opt;
  bool quiet = false;
  auto* t =
      app.add_subcommand("train", "Train methods on the training day, compare on the test day");
  t->add_option("--config", config, "Learner config (YAML)")->capture_default_str();
  t->add_option("--algo", algo,
                "manual | bandit | a2c | ddpg | dcmab | dcmab-coord | partial | all | a,b,c")
      ->capture_default_str();
  t->add_option("--seeds", opt.seeds, "Seeds per method (default: the config's)");
  t->add_option("--episodes", opt.episodes, "Max episodes per run (default: the config's)");
  t->add_option("--out", opt.out, "Output directory")->capture_default_str();
  t->add_option("--jobs", opt.jobs, "Runs trained in parallel")->capture_default_str();
  t->add_flag("--resume", opt.resume, "Continue each run from its last checkpoint");
  t->add_option("--learned-share", opt.learned_share,
                "Train for the learned arm of a live A/B test: this share of the users "
                "(hashed with --ab-salt, as the bidder does) and of every budget")
      ->check(CLI::Range(0.0, 1.0).description("in (0, 1]"))
      ->capture_default_str();
  t->add_option("--ab-salt", opt.ab_salt, "The bidders' ab.salt (with --learned-share)")
      ->capture_default_str();
  t->add_flag("--quiet", quiet, "No progress lines");

  rtb::learn::OnlineOptions on;
  std::string brokers, state_dir;
  std::string market;
  auto* l = app.add_subcommand(
      "learn", "Learn online from the bidders' Kafka events; publish action tables");
  l->add_option("--config", config, "Learner config (YAML; section online)")->capture_default_str();
  l->add_option("--brokers", brokers, "Kafka bootstrap.servers (default: online.brokers)");
  l->add_option("--state-dir", state_dir, "Replay store + checkpoint (default: online.state_dir)");
  l->add_option("--init", on.init_checkpoint,
                "Offline-trained checkpoint to start from (when the state dir has none)");
  l->add_option("--seed", on.seed, "Seed (exploration, minibatches)")->capture_default_str();
  l->add_option("--max-steps", on.max_steps, "Stop after closing this many steps (-1 = run)")
      ->capture_default_str();
  l->add_option("--market", market,
                "The bidders' config: the market learned in (default: online.market)");
  l->add_flag("--quiet", quiet, "No per-step lines");

  rtb::learn::TuneOptions tu;
  std::string tune_config = "configs/learner/default.yaml";
  auto* tn = app.add_subcommand(
      "tune", "Successive-halving search over learner configurations (HyperTrick)");
  tn->add_option("--config", tune_config, "The learner config searched around (trial 0)")
      ->capture_default_str();
  tn->add_option("--algo", tu.algo, "The method tuned")->capture_default_str();
  tn->add_option("--trials", tu.trials, "Configurations, the config as given among them")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  tn->add_option("--min-episodes", tu.min_episodes, "Episodes of the first rung")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tn->add_option("--eta", tu.eta, "Keep the best 1/eta at each rung; rungs grow by eta")
      ->check(CLI::Range(2, 100))
      ->capture_default_str();
  tn->add_option("--max-episodes", tu.max_episodes, "Episodes of the last rung (0 = the config's)")
      ->capture_default_str();
  tn->add_option("--seed", tu.seed, "Draws the configurations")->capture_default_str();
  tn->add_option("--jobs", tu.jobs, "Trials trained at once")->capture_default_str();
  tn->add_option("--out", tu.out, "Output directory")->capture_default_str();
  tn->add_flag("--quiet", quiet, "No progress lines");

  rtb::learn::PacingTrainOptions po;
  po.hp = rtb::learn::PacingHyperParams();
  std::string p_log, p_info, p_validation, p_out = "out/pacing/pacing-table.json";
  auto* pc = app.add_subcommand(
      "train-pacing",
      "Train the single-campaign pacing policy from a campaign summary (and a training log)");
  pc->alias("pacing");  // its earlier name
  pc->add_option("--log", p_log,
                 "Training log (click payprice pCTR per line): its pCTRs (--prices histogram) or "
                 "its auctions (--prices log); optional with --prices histogram");
  pc->add_option("--info", p_info,
                 "Campaign summary JSON (imp_train, clk_train, cost_train, price_counter_train)")
      ->required();
  pc->add_option("--validation-log", p_validation,
                 "Compare the tables (and the base alone) on this log instead of the training "
                 "data; the kept table is the best there");
  pc->add_option("--base", po.base, "The bid the action scales: lin (Lin-Bid) | rlb (RLB's bid)")
      ->check(CLI::IsMember({"lin", "rlb"}))
      ->capture_default_str();
  pc->add_option("--prices", po.prices,
                 "Train on auctions drawn from the summary's price histogram (histogram) or on "
                 "the training log itself (log). Default: log with --log, else histogram")
      ->check(CLI::IsMember({"histogram", "log"}));
  pc->add_option("--bratio", po.bratio,
                 "Action scale: bid x (1 + clip(a x bratio, +-0.9)) (default 1 with --base lin, "
                 "0.1 with --base rlb)");
  pc->add_option("--out", p_out, "The pacing table to write (schemas/pacing-table-v1.md)")
      ->capture_default_str();
  pc->add_option("--c0", po.protocol.c0, "Budget fraction of cpm_train x N")->capture_default_str();
  pc->add_option("--episode-size", po.protocol.episode_size, "Auctions per episode (N)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  pc->add_option("--max-bid", po.protocol.max_bid, "Bid cap")->capture_default_str();
  pc->add_option("--steps", po.steps, "Decision steps per episode (K; divides N)")
      ->capture_default_str();
  pc->add_option("--b0", po.b0,
                 "Lin-Bid base bid the action scales (0 = tuned on the training data)")
      ->capture_default_str();
  pc->add_option("--episodes", po.episodes, "Training episodes")->capture_default_str();
  pc->add_option("--eval-every", po.eval_every, "Episodes between table evaluations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  pc->add_option("--seed", po.seed, "Seed (windows, exploration, minibatches)")
      ->capture_default_str();
  pc->add_option("--store-dir", po.store_dir, "RocksDB replay store (default: in memory)");
  pc->add_flag("--quiet", quiet, "No progress lines");
  std::string log_level, log_format = "text";
  for (CLI::App* sub : {t, l, pc, tn}) {
    sub->add_option("--log-level", log_level,
                    "Log level: trace, debug, info, warn, error or off (default: the config's)");
    sub->add_option("--log-format", log_format, "Log lines as text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (l->parsed()) {
    auto cfg = rtb::learn::LoadLearnerConfig(config);
    if (!cfg.ok()) {
      std::fprintf(stderr, "rtb: error: %s\n", cfg.status().message().c_str());
      return 1;
    }
    if (!InitLog("learn", log_level, log_format, cfg->log_level)) return 1;
    if (!brokers.empty()) cfg->online.brokers = brokers;
    if (!state_dir.empty()) cfg->online.state_dir = state_dir;
    if (!market.empty()) cfg->online.market = market;
    on.progress = !quiet;
    on.stop = &g_stop;
    std::signal(SIGTERM, OnSignal);
    std::signal(SIGINT, OnSignal);
    torch::set_num_threads(1);
    const rtb::Status st = rtb::learn::RunOnline(*cfg, on);
    if (!st.ok()) {
      std::fprintf(stderr, "rtb learn: error: %s\n", st.message().c_str());
      return 1;
    }
    return 0;
  }
  if (pc->parsed()) {
    if (!InitLog("train-pacing", log_level, log_format, "info")) return 1;
    torch::set_num_threads(1);
    po.progress = !quiet;
    if (pc->get_option("--bratio")->count() == 0) po.bratio = po.base == "rlb" ? 0.1 : 1.0;
    if (pc->get_option("--prices")->count() == 0) po.prices = p_log.empty() ? "histogram" : "log";
    if (p_log.empty() && po.prices == "log") {
      std::fprintf(stderr, "rtb pacing: error: --prices log needs --log\n");
      return 1;
    }
    rtb::Result<rtb::sim::CompactLog> log = rtb::sim::CompactLog{};
    if (!p_log.empty()) log = rtb::sim::ReadCompactLog(p_log, {});
    auto info = log.ok() ? rtb::sim::ReadCampaignInfo(p_info) : log.status();
    if (!info.ok()) {
      std::fprintf(stderr, "rtb pacing: error: %s\n", info.status().message().c_str());
      return 1;
    }
    rtb::Result<rtb::sim::CompactLog> validation = rtb::sim::CompactLog{};
    if (!p_validation.empty()) validation = rtb::sim::ReadCompactLog(p_validation, {});
    if (!validation.ok()) {
      std::fprintf(stderr, "rtb pacing: error: %s\n", validation.status().message().c_str());
      return 1;
    }
    if (!p_validation.empty() &&
        static_cast<int64_t>(validation->auctions.size()) < po.protocol.episode_size) {
      std::fprintf(stderr,
                   "rtb pacing: error: %s has %zu auctions, fewer than one episode (%lld)\n",
                   p_validation.c_str(), validation->auctions.size(),
                   static_cast<long long>(po.protocol.episode_size));
      return 1;
    }
    if (po.base == "rlb" && pc->get_option("--b0")->count() > 0) {
      std::fprintf(stderr, "rtb pacing: error: --b0 is Lin-Bid's base bid; --base rlb has none\n");
      return 1;
    }
    auto res = rtb::learn::TrainPacing(log->auctions, *info, po, validation->auctions);
    if (!res.ok()) {
      std::fprintf(stderr, "rtb pacing: error: %s\n", res.status().message().c_str());
      return 1;
    }
    if (auto st = rtb::WriteFileAtomic(p_out, res->table.ToJson()); !st.ok()) {
      std::fprintf(stderr, "rtb pacing: error: %s\n", st.message().c_str());
      return 1;
    }
    std::printf(
        "{\"table\":\"%s\",\"base\":\"%s\",\"selected_on\":\"%s\",\"b0\":%lld,"
        "\"best_episode\":%d,"
        "\"train_clicks\":%lld,\"train_expected_clicks\":%.3f,"
        "\"base_train_expected_clicks\":%.3f,\"train_cost\":%lld,\"base_train_clicks\":%lld,"
        "\"base_train_cost\":%lld,\"world_expected_clicks\":%.3f,"
        "\"base_world_expected_clicks\":%.3f,\"rejected_on_world\":%d}\n",
        p_out.c_str(), res->table.params.base.c_str(),
        p_validation.empty() ? "training" : "validation",
        static_cast<long long>(res->table.params.b0), res->best_episode,
        static_cast<long long>(res->best_train.clicks), res->best_train.expected_clicks,
        res->base_train.expected_clicks, static_cast<long long>(res->best_train.cost),
        static_cast<long long>(res->base_train.clicks),
        static_cast<long long>(res->base_train.cost), res->best_world.expected_clicks,
        res->base_world.expected_clicks, res->rejected);
    return 0;
  }
  if (tn->parsed()) {
    auto cfg = rtb::learn::LoadLearnerConfig(tune_config);
    if (!cfg.ok()) {
      std::fprintf(stderr, "rtb tune: error: %s\n", cfg.status().message().c_str());
      return 1;
    }
    if (!InitLog("tune", log_level, log_format, cfg->log_level)) return 1;
    tu.config_path = tune_config;
    tu.progress = !quiet;
    auto res = rtb::learn::RunTuning(*cfg, tu);
    if (!res.ok()) {
      std::fprintf(stderr, "rtb tune: error: %s\n", res.status().message().c_str());
      return 1;
    }
    std::printf(
        "best: trial %d; wrote %s/report.{json,md,html} and %s/best.yaml (%lld episodes, "
        "%.2f full runs, %.0f s)\n",
        res->best, tu.out.c_str(), tu.out.c_str(), static_cast<long long>(res->episodes),
        res->full_runs, res->seconds);
    return 0;
  }
  opt.progress = !quiet;
  opt.config_path = config;
  if (algo == "all") {
    opt.algos = rtb::learn::AllAlgoNames();
  } else {
    std::stringstream ss(algo);
    for (std::string a; std::getline(ss, a, ',');) opt.algos.push_back(a);
  }
  auto cfg = rtb::learn::LoadLearnerConfig(config);
  if (!cfg.ok()) {
    std::fprintf(stderr, "rtb: error: %s\n", cfg.status().message().c_str());
    return 1;
  }
  if (!InitLog("train", log_level, log_format, cfg->log_level)) return 1;
  auto report = rtb::learn::RunTraining(*cfg, opt);
  if (!report.ok()) {
    std::fprintf(stderr, "rtb: error: %s\n", report.status().message().c_str());
    return 1;
  }
  if (auto st = rtb::WriteReportFiles(*report, opt.out); !st.ok()) {
    std::fprintf(stderr, "rtb: error: %s\n", st.message().c_str());
    return 1;
  }
  std::printf("wrote %s/report.{json,csv,md,html}\n", opt.out.c_str());
  return 0;
}
