// rtb-learner: the LibTorch half of `rtb`. `rtb train ...` runs `rtb-learner train ...`.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>

#include "rtb/learner/config.h"
#include "rtb/learner/online.h"
#include "rtb/learner/train.h"

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
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
  t->add_flag("--quiet", quiet, "No progress lines");

  rtb::learn::OnlineOptions on;
  std::string brokers, state_dir;
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
  l->add_flag("--quiet", quiet, "No per-step lines");
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
    if (!brokers.empty()) cfg->online.brokers = brokers;
    if (!state_dir.empty()) cfg->online.state_dir = state_dir;
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
