#include "simulate_cmd.h"

#include <cstdio>

#include "common.h"
#include "rtb/core/ab.h"
#include "rtb/core/report.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/simulate.h"

namespace rtb::cli {

CLI::App* AddSimulateCommand(CLI::App* app, SimulateArgs* a) {
  a->config = DefaultConfig("configs/simulator/default.yaml");
  auto* s = app->add_subcommand("simulate",
                                "Simulate a day under a policy and manual bids; write the report");
  s->add_option("--config", a->config, "Simulator config (YAML)")->capture_default_str();
  s->add_option("--policy", a->policy,
                "manual | const:<a> | <action-table.json> (schemas/action-table-v1.md); "
                "comma-separated: one per step, the last for the rest of the day")
      ->capture_default_str();
  s->add_option("--seed", a->seed, "Seed of the world and the days (default: the config's)");
  AddAuctionOption(s, &a->auction);
  s->add_option("--out", a->out, "Output directory for report.{json,csv,md,html}")
      ->capture_default_str();
  s->add_option("--day", a->day, "Which day to evaluate: train or test")
      ->check(CLI::IsMember({"train", "test"}))
      ->capture_default_str();
  s->add_option("--train-log", a->train_log,
                "Read the training day from a full-information log instead of generating it");
  s->add_option("--test-log", a->test_log, "Read the test day from a full-information log");
  s->add_option("--bidders", a->bidders,
                "Serve the budgets from this many bidders, each request to one of them, each "
                "budget split by an ideal coordinator: the most budget leases can deliver "
                "(docs/budget-leases.md, section 8)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  s->add_option("--split", a->split,
                "With --bidders: even (equal parts of what is left), whole (whole bids first, "
                "the bid known ahead: the ceiling) or whole-mean (whole units of the "
                "advertiser's mean bid charge)")
      ->check(CLI::IsMember({"even", "whole", "whole-mean"}))
      ->capture_default_str();
  s->add_option("--arm", a->arm,
                "Play one arm of an A/B test: its users and its part of every budget")
      ->check(CLI::IsMember({"learned", "manual"}));
  s->add_option("--learned-share", a->learned_share, "With --arm: the learned arm's share")
      ->capture_default_str();
  s->add_option("--ab-salt", a->ab_salt, "With --arm: the A/B salt (the bidder's ab.salt)")
      ->capture_default_str();
  s->add_flag("--quiet", a->quiet, "No progress lines");
  return s;
}

int RunSimulate(const SimulateArgs& a) {
  auto cfg = rtb::sim::LoadSimulatorConfig(a.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (a.seed >= 0) cfg->seed = static_cast<uint64_t>(a.seed);
  if (auto st = rtb::sim::OverrideAuctionType(&*cfg, a.auction); !st.ok()) return Fail(st);
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

}  // namespace rtb::cli
