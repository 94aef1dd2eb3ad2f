#include "generate_cmd.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "common.h"
#include "rtb/core/report.h"
#include "rtb/core/rng.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/export.h"
#include "rtb/simulator/fulllog.h"
#include "rtb/simulator/replay.h"
#include "rtb/simulator/simulate.h"
#include "rtb/simulator/world.h"

namespace rtb::cli {

namespace fs = std::filesystem;

CLI::App* AddGenerateCommand(CLI::App* app, GenerateArgs* a) {
  a->config = DefaultConfig("configs/simulator/default.yaml");
  auto* g = app->add_subcommand(
      "generate",
      "Write the training and test days as full-information logs (schemas/fulllog-v1.md)");
  g->add_option("--config", a->config, "Simulator config (YAML)")->capture_default_str();
  g->add_option("--seed", a->seed, "Seed (default: the config's)");
  AddAuctionOption(g, &a->auction);
  g->add_option("--out", a->out,
                "Output directory for train.tsv and test.tsv (written unless only --rlb-out or "
                "--bidder-out is given)")
      ->capture_default_str();
  a->bidder_config = DefaultConfig("configs/bidder/default.yaml");
  g->add_option("--bidder-out", a->bidder_out,
                "Also write the world for the bidder: bidder.yaml, predictor.json, clusters.json");
  g->add_option("--bidder-config", a->bidder_config, "Base bidder config of --bidder-out")
      ->capture_default_str();
  g->add_option("--rlb-out", a->rlb_out,
                "Also write a synthetic campaign in the RLB format: train.txt, validation.txt, "
                "test.txt, campaign.json (for rtb replay)");
  g->add_option("--rlb-lines", a->rlb_lines, "Lines per RLB log")->capture_default_str();
  g->add_flag("--rlb-drift", a->rlb_drift,
              "The RLB campaign drifts as logged traffic does: days of 1,000 auctions whose prices "
              "and pCTRs follow a daily cycle and a level of their own, prices rising across the "
              "logs (train, then validation, then test)");
  return g;
}

int RunGenerate(GenerateArgs a, const CLI::App& sub) {
  // --rlb-out or --bidder-out alone writes only what it names.
  a.full_logs = sub.get_option("--out")->count() > 0 || (a.rlb_out.empty() && a.bidder_out.empty());
  auto cfg = rtb::sim::LoadSimulatorConfig(a.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (a.seed >= 0) cfg->seed = static_cast<uint64_t>(a.seed);
  if (auto st = rtb::sim::OverrideAuctionType(&*cfg, a.auction); !st.ok()) return Fail(st);
  if (!a.rlb_out.empty()) {
    // A single campaign with a market-price model: train and test logs + the summary.
    std::error_code ec;
    fs::create_directories(a.rlb_out, ec);
    rtb::sim::CampaignInfo train, test;
    // Drifting: one timeline, the training log's days first, then validation's, then test's.
    rtb::sim::LogDrift drift;
    if (a.rlb_drift) {
      drift.day_auctions = 1000;
      drift.campaign = cfg->seed;
    }
    auto from_day = [&](int64_t log_index) {
      rtb::sim::LogDrift d = drift;
      d.first_day = log_index * (a.rlb_lines / std::max<int64_t>(1, drift.day_auctions));
      return d;
    };
    const std::string tr =
        rtb::sim::GenerateCompactLog(a.rlb_lines, cfg->seed * 2 + 1, &train, from_day(0));
    const std::string te =
        rtb::sim::GenerateCompactLog(a.rlb_lines, cfg->seed * 2 + 2, &test, from_day(2));
    // A third draw of the same campaign for tuning (Lin-Bid's b0), held out from both.
    const std::string va = rtb::sim::GenerateCompactLog(
        a.rlb_lines, rtb::Rng::Mix(cfg->seed, 0xa1d), nullptr, from_day(1));
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
  const auto world = rtb::sim::GenerateWorld(*cfg);
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

}  // namespace rtb::cli
