// `rtb replay`: arguments in, sim::RunReplayJob (rtb/simulator/replay_job.h), its JSON, text
// and report files out. Events from Kafka are read through the Kafka seam.
#include "replay_cmd.h"

#include <cstdio>

#include "common.h"
#include "kafka_cmd.h"
#include "rtb/core/report.h"
#include "rtb/kafka/kafka.h"
#include "rtb/simulator/replay.h"

namespace rtb::cli {

CLI::App* AddReplayCommand(CLI::App* app, ReplayArgs* a) {
  a->job.config = DefaultConfig("configs/simulator/default.yaml");
  auto* rp = app->add_subcommand(
      "replay", "Replay strategies or policies over logged auctions (docs/replay.md protocols)");
  rp->footer(
      "Examples:\n"
      "  rtb replay --format rlb --log test.txt --info campaign.json --protocol rlb \\\n"
      "      --strategy lin --b0 36 --c0 0.03125 --episode-size 1000 --max-bid 300 --json\n"
      "  rtb replay --format rlb --log test.txt --info campaign.json --validation-log train.txt "
      "\\\n"
      "      --strategy lin,mcpc,pacing --pacing pacing-table.json --out out/replay\n"
      "  rtb replay --format ipinyou --log test.log.txt --train-log train.log.txt \\\n"
      "      --advertiser 1458 --protocol benchmark --strategy lin,mcpc\n"
      "  rtb replay --format full --log test.tsv --train-log train.tsv --policy a.json \\\n"
      "      --policy b.json --out out/replay-full\n"
      "  rtb replay --format events --log events.jsonl --strategy logged,manual,scale:1.2\n"
      "  rtb replay --format events --brokers host:9092 --topic rtb.events --dump events.jsonl");
  rp->add_option("--format", a->job.format,
                 "rlb (click payprice pCTR) | ipinyou (raw TSV with header) | full (simulator "
                 "full-information log) | events (the bidder's outcome events)")
      ->check(CLI::IsMember({"rlb", "ipinyou", "full", "events"}))
      ->capture_default_str();
  rp->add_option("--log", a->job.log, "The log to replay (events: a JSON-lines dump)");
  rp->add_option("--info", a->job.info,
                 "rlb: campaign summary JSON (imp_train, clk_train, cost_train...); ipinyou: "
                 "optional (else computed from --train-log)");
  rp->add_option("--train-log", a->job.train_log,
                 "ipinyou: training log (CTR model, campaign totals, b0 tuning); full: the day "
                 "the clusters were built on; rlb: b0 tuning when no --validation-log");
  rp->add_option("--validation-log", a->job.validation_log,
                 "Lin-Bid b0 is tuned on this log (steps of 6) when --b0 is not given");
  rp->add_option("--advertiser", a->job.advertiser, "ipinyou/events: replay one advertiser");
  rp->add_option("--protocol", a->job.protocol, "rlb (episodes) | benchmark (whole log)")
      ->check(CLI::IsMember({"rlb", "benchmark"}))
      ->capture_default_str();
  rp->add_option("--auction", a->job.auction,
                 "rlb protocol: what a win pays, second_price (the logged market price) | "
                 "first_price (the bid)")
      ->check(CLI::IsMember(rtb::sim::kReplayAuctions))
      ->capture_default_str();
  rp->add_option("--strategy", a->job.strategy,
                 "Comma-separated; rlb/ipinyou: lin | mcpc | const | rand | pacing | rlb (default "
                 "lin); events: logged | manual | scale:<f> (default logged,manual)");
  rp->add_option("--baseline", a->job.baseline,
                 "The strategy the report is relative to (default lin, else the first)");
  rp->add_option("--b0", a->job.b0, "Lin-Bid base bid (integer; default: tuned)");
  rp->add_option("--c0", a->job.c0, "RLB: budget fraction of cpm_train x N")->capture_default_str();
  rp->add_option("--episode-size", a->job.episode_size, "RLB: auctions per episode (N)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  rp->add_option("--max-bid", a->job.max_bid, "RLB: bid cap")->capture_default_str();
  rp->add_option("--const", a->job.const_bid, "Const: the bid")->capture_default_str();
  rp->add_option("--rand-max", a->job.rand_max, "Rand: bids uniform in [0, max]")
      ->capture_default_str();
  rp->add_option("--seed", a->job.seed, "Rand and CTR-model seed")->capture_default_str();
  rp->add_option("--budget-fraction", a->job.budget_fraction,
                 "benchmark: budget = this x total test cost")
      ->capture_default_str();
  rp->add_option("--pacing", a->job.pacing,
                 "pacing: the table `rtb train-pacing` wrote (schemas/pacing-table-v1.md)");
  rp->add_option("--policy", a->job.policies,
                 "full: manual | const:<a> | action-table.json, or comma-separated one per step "
                 "(repeat to compare; the first is the primary, manual bids are the baseline)");
  rp->add_option("--config", a->job.config, "full: simulator config (YAML)")->capture_default_str();
  rp->add_option("--brokers", a->job.brokers, "events: read the topic at these bootstrap.servers");
  rp->add_option("--topic", a->job.topic, "events: the topic")->capture_default_str();
  AddKafkaPropertyOption(rp, &a->kafka_properties);
  rp->add_option("--dump", a->job.dump, "events from Kafka: also write them here (JSON lines)");
  rp->add_option("--on-error", a->job.on_error,
                 "Malformed lines: stop (error naming file:line) | skip (skip and count)")
      ->check(CLI::IsMember({"stop", "skip"}))
      ->capture_default_str();
  rp->add_option("--out", a->out, "Write report.{json,csv,md,html} here");
  rp->add_flag("--json", a->json, "Print one JSON object");
  rp->add_flag("--quiet", a->quiet, "No progress lines");
  return rp;
}

int RunReplay(const ReplayArgs& a) {
  sim::ReplayJob job = a.job;
  job.report = !a.out.empty();
  job.progress = !a.quiet && !a.json;
  auto topic = [&](const std::function<void(int32_t, int64_t, std::string_view)>& fn,
                   int64_t* not_retained) {
    return kafka::ReadWholeTopic({.bootstrap = job.brokers, .properties = a.kafka_properties},
                                 job.topic, 30000, fn, not_retained);
  };
  auto out = sim::RunReplayJob(job, topic);
  if (!out.ok()) {
    std::fprintf(stderr, "rtb replay: error: %s\n", out.status().message().c_str());
    return 1;
  }
  for (const auto& w : out->warnings) std::fprintf(stderr, "rtb replay: %s\n", w.c_str());
  if (a.json) {
    std::printf("%s\n", out->json.c_str());
  } else {
    std::printf("%s", out->text.c_str());
  }
  if (!a.out.empty()) {
    if (auto st = WriteReportFiles(out->report, a.out); !st.ok()) {
      std::fprintf(stderr, "rtb replay: error: %s\n", st.message().c_str());
      return 1;
    }
    if (!a.json) std::printf("wrote %s/report.{json,csv,md,html}\n", a.out.c_str());
  }
  return 0;
}

}  // namespace rtb::cli
