#include "demo_cmd.h"

#include "common.h"

namespace rtb::cli {

CLI::App* AddDemoCommand(CLI::App* app, demo::DemoArgs* a) {
  a->config = DefaultConfig("configs/demo/default.yaml");
  auto* dm = app->add_subcommand(
      "demo",
      "The closed loop on this machine: embedded Kafka (or --brokers), bidder, online learner "
      "and exchange; writes report.{json,md,html}");
  dm->add_option("--config", a->config, "Demo config (YAML)")->capture_default_str();
  dm->add_option("--out", a->out, "Output directory (default: the config's)");
  dm->add_option("--days", a->days, "Simulated days to play live (default: the config's)");
  AddAuctionOption(dm, &a->auction);
  dm->add_option("--cpa-share", a->cpa_share,
                 "Share of the world's advertisers with a target CPA (default: the config's)")
      ->check(CLI::Range(0.0, 1.0));
  dm->add_option("--pretrain-episodes", a->episodes,
                 "Offline pre-training episodes (0 = none; default: the learner config's)");
  dm->add_option("--chaos", a->chaos,
                 "kill-learner@D:S or kill-bidder@D:S: SIGKILL as the exchange sends the "
                 "middle request of day D step S, then restart (1 s later; a bidder sharing "
                 "budgets 2.5 s later, or with kill-bidder@D:S+step a step later, the traffic held "
                 "until it is ready)");
  dm->add_option("--bidders", a->bidders,
                 "Bidder processes sharing the budgets through leases (default: the config's)")
      ->check(CLI::Range(1, 16));
  dm->add_option("--spread", a->spread, "Requests' weights over the bidders, e.g. 70,20,10")
      ->delimiter(',');
  dm->add_option("--brokers", a->brokers,
                 "A real Kafka cluster's bootstrap servers instead of the embedded one: the run "
                 "gets topics of its own there (<topic>.<run id>), created and deleted by it");
  dm->add_option("--kafka-properties", a->kafka_properties,
                 "With --brokers: librdkafka properties (NAME=VALUE lines: security.protocol, "
                 "sasl.*, ssl.*) for every process of the run")
      ->check(CLI::ExistingFile);
  dm->add_flag("--quiet", a->quiet, "No progress lines");
  return dm;
}

}  // namespace rtb::cli
