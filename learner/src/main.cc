// rtb-learner: the LibTorch half of `rtb`. `rtb train ...` runs `rtb-learner train ...`.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "rtb/learner/config.h"
#include "rtb/learner/train.h"

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
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
