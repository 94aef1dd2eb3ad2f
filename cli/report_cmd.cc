#include "report_cmd.h"

#include <cstdio>

#include "common.h"
#include "kafka_cmd.h"
#include "rtb/bidder/config.h"
#include "rtb/core/ab_report.h"
#include "rtb/kafka/kafka.h"

namespace rtb::cli {

CLI::App* AddReportCommand(CLI::App* app, ReportArgs* a) {
  a->bidder_config = DefaultConfig("configs/bidder/default.yaml");
  auto* sub = app->add_subcommand(
      "report",
      "The A/B report from the bidders' events: per day, arm, agent and advertiser budget, "
      "spend, COST, revenue, ROI, CPA, CPC, win rate; learned against manual with intervals");
  sub->footer(
      "Examples:\n"
      "  rtb report --events out/demo/events.jsonl --bidder-config out/demo/bidder/bidder.yaml\n"
      "  rtb report --brokers host:9092 --topic rtb.events --bidder-config my-bidder.yaml");
  sub->add_option("--events", a->events, "The events as a JSON-lines dump (one event per line)");
  sub->add_option("--brokers", a->brokers, "Or read the events topic at these bootstrap.servers");
  sub->add_option("--topic", a->topic,
                  "The events topic (with --brokers; default: --bidder-config's "
                  "kafka.events_topic)");
  AddKafkaPropertyOption(sub, &a->kafka_properties);
  sub->add_option("--bidder-config", a->bidder_config,
                  "The bidder config the events were served with: advertisers, budgets, agents, "
                  "ab.learned_share")
      ->capture_default_str();
  sub->add_option("--out", a->out, "Write report.{json,md,html} here")->capture_default_str();
  sub->add_option("--bucket-minutes", a->bucket_minutes,
                  "Time bucket of the bootstrap intervals and the spend curves")
      ->check(CLI::Range(1, 1440))
      ->capture_default_str();
  sub->add_flag("--allow-unknown-advertisers", a->allow_unknown,
                "Report events of advertisers the config does not have (counted, not booked) "
                "instead of stopping: an advertiser removed from the config mid-run");
  sub->add_flag("--skip-malformed", a->skip_malformed,
                "Skip and count lines that are not events (default: stop at the first, with "
                "file:line)");
  sub->add_option("--note", a->notes,
                  "A line for the report's notes, e.g. how the events were produced (repeatable)");
  sub->add_flag("--quiet", a->quiet, "Print nothing but errors");
  return sub;
}

int RunReport(const ReportArgs& a) {
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "rtb report: error: %s\n", why.c_str());
    return 1;
  };
  if (a.events.empty() == a.brokers.empty()) return fail("give --events FILE or --brokers HOSTS");
  auto cfg = bidder::LoadBidderConfig(a.bidder_config);
  if (!cfg.ok()) return fail(cfg.status().message());
  AbTally tally(bidder::AbMarketOf(*cfg), cfg->ab.learned_share,
                int64_t{a.bucket_minutes} * 60'000);
  AbReportInfo info;
  info.currency = cfg->currency;
  std::string first_error;
  if (!a.events.empty()) {
    const Status st =
        AddEventFile(a.events, a.skip_malformed, &tally, &info.malformed, &first_error);
    if (!st.ok()) {
      // A line that is not an event, or whose money is refused, can be skipped (an invalid
      // argument); an unreadable file, a directory or a line over the limit cannot.
      return fail(st.code() == Status::Code::kInvalidArgument
                      ? st.message() + " (--skip-malformed skips and counts such lines)"
                      : st.message());
    }
    // A report never carries a machine's absolute path (doc::ShownPath).
    info.source = doc::ShownPath(a.events);
    info.rerun = "rtb report --events " + doc::ShownPath(a.events) + " --bidder-config " +
                 doc::ShownPath(a.bidder_config);
  } else {
    int64_t not_retained = 0, offset_errors = 0;
    std::string bad;
    const std::string topic = a.topic.empty() ? cfg->kafka.events_topic : a.topic;
    kafka::Properties props = cfg->kafka.properties;
    props.insert(props.end(), a.kafka_properties.begin(), a.kafka_properties.end());
    const Status st = kafka::ReadWholeTopic(
        {.bootstrap = a.brokers, .properties = props}, topic, 30000,
        [&](int32_t p, int64_t off, std::string_view payload) {
          auto e = DecodeEvent(payload);
          const Status added = e.ok() ? tally.Add(*e) : e.status();
          if (added.ok()) return;
          if (offset_errors++ == 0) {
            bad = topic + "[" + std::to_string(p) + "]@" + std::to_string(off) + ": " +
                  added.message();
          }
        },
        &not_retained);
    if (!st.ok()) return fail(st.message());
    if (offset_errors > 0 && !a.skip_malformed) {
      return fail(bad + " (" + std::to_string(offset_errors) +
                  " such messages; --skip-malformed skips and counts them)");
    }
    info.malformed = offset_errors;
    first_error = bad;
    if (not_retained > 0) {
      info.notes.push_back("The brokers no longer held " + std::to_string(not_retained) +
                           " of the topic's first events: the totals miss them.");
    }
    info.source = "topic " + topic + " at " + a.brokers;
    info.rerun = "rtb report --brokers " + a.brokers + " --topic " + topic + " --bidder-config " +
                 doc::ShownPath(a.bidder_config);
  }
  if (tally.unknown_advertiser() > 0 && !a.allow_unknown) {
    // Events of another market (the demo's, read with the default config): a report of them
    // would show budgets of 0 and ratios of nothing.
    std::string ids;
    size_t shown = 0;
    for (const auto& [id, n] : tally.unknown_advertisers()) {
      if (shown++ == 10) break;
      ids += (ids.empty() ? "" : ", ") + std::to_string(id) + " (" + std::to_string(n) + ")";
    }
    const size_t known = tally.unknown_advertisers().size();
    const size_t more = known - std::min<size_t>(shown, 10);
    const bool capped = known == AbTally::kMaxUnknownIds;  // more ids than it keeps
    return fail(std::to_string(tally.unknown_advertiser()) + " events of advertisers " +
                doc::ShownPath(a.bidder_config) + " does not have: " + ids +
                (more > 0 ? " and " + std::string(capped ? "at least " : "") +
                                std::to_string(more) + " more"
                          : std::string()) +
                "; give --bidder-config the config the events were served with "
                "(--allow-unknown-advertisers reports them, counted and not booked)");
  }
  for (const auto& n : a.notes) info.notes.push_back(n);
  if (info.malformed > 0) {
    std::fprintf(stderr, "rtb report: skipped %lld malformed lines, the first: %s\n",
                 static_cast<long long>(info.malformed), first_error.c_str());
  }
  if (auto st = WriteAbReportFiles(tally, info, a.out); !st.ok()) return fail(st.message());
  if (!a.quiet) {
    for (const Arm arm : {Arm::kLearned, Arm::kManual}) {
      const ArmTotals t = tally.OfArm(arm);
      std::printf("%-8s spend %.2f of %.2f %s (COST %.1f%%), revenue %.2f, ROI %.2f, CPA %.2f\n",
                  ArmName(arm), t.spend.units(), t.budget.units(), cfg->currency.c_str(),
                  100 * t.Cost(), t.revenue.units(), t.Roi(), t.Cpa());
      std::string per_agent;
      for (int i = 0; i < tally.agents(); ++i) {
        ArmTotals g;
        for (const int64_t d : tally.Days()) g += tally.OfAgent(d, arm, i);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s agent %d %.1f%%", i == 0 ? "" : ",", i, 100 * g.Cost());
        per_agent += buf;
      }
      std::printf("         COST per agent:%s\n", per_agent.c_str());
    }
    const RatioCi r = tally.RevenueRatio(), roi = tally.RoiRatio();
    std::printf(
        "learned / manual: revenue per share %.3fx [%.3f, %.3f], ROI %.3fx [%.3f, %.3f] "
        "(95%% bootstrap over %d buckets)\n",
        r.ratio, r.lo, r.hi, roi.ratio, roi.lo, roi.hi, r.buckets);
    std::printf("wrote %s/report.{json,md,html}\n", a.out.c_str());
  }
  return 0;
}

}  // namespace rtb::cli
