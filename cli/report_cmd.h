// `rtb report`: the A/B test's ROI / CPA / budget report from the bidders' outcome events (a
// JSON-lines dump, or the events topic): per day, arm, agent and advertiser, the learned arm
// against the manual arm with bootstrap intervals (core/ab_report.h), written as
// report.{json,md,html}.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

namespace rtb::cli {

struct ReportArgs {
  std::string events;   // JSON-lines dump of the events topic
  std::string brokers;  // or: read the topic at these bootstrap.servers
  std::string topic;    // the events topic; empty: the bidder config's kafka.events_topic
  // librdkafka properties (--kafka-property), after the bidder config's kafka.properties.
  std::vector<std::pair<std::string, std::string>> kafka_properties;
  std::string bidder_config;  // the market: advertisers, budgets, agents, the A/B share
  std::string out = "out/report";
  int bucket_minutes = 60;  // time bucket of the intervals and the spend curves
  bool skip_malformed = false;
  bool allow_unknown = false;  // --allow-unknown-advertisers
  bool quiet = false;
  std::vector<std::string> notes;  // extra lines for the report's notes (how the events arose)
};

CLI::App* AddReportCommand(CLI::App* app, ReportArgs* a);
int RunReport(const ReportArgs& a);

}  // namespace rtb::cli
