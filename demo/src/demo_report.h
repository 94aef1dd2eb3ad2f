// The demo's report: one typed model of what `rtb demo` measured (report.json's data), filled
// by the demo's phases (demo.cc), and its three renderings: report.json, and Markdown and HTML
// as a document of core's one report renderer (rtb/core/report_doc.h), as core's own report
// model (rtb/core/report.h) is rendered.
//
// Numbers that may not exist (a ratio with no denominator, a delay not measured, a minimum of
// nothing) are NaN here: `null` in report.json, "n/a" in the documents. Money is in units of the
// currency (Micros in Outcome), as report.json has it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rtb/core/ab.h"
#include "rtb/core/ab_report.h"
#include "rtb/core/metrics.h"
#include "rtb/core/report_doc.h"
#include "rtb/core/status.h"
#include "rtb/core/step_marker.h"

namespace rtb::demo {

// An outcome and its rows, one per agent (revenue, cost, budget, clicks, conversions,
// impressions; ROI, cost per click and COST follow from them).
struct OutcomeRows {
  Outcome total;
  std::vector<Outcome> by_agent;
};

// One way of serving the budgets over several bidders, played by the simulator on both arms.
struct SplitRun {
  struct ArmRun {
    std::vector<double> cost_over_budget_by_agent;  // COST per agent (NaN: no budget)
    double revenue = 0;
  };
  ArmRun arms[kArms];           // indexed by Arm: learned, manual
  double revenue_ratio = kNaN;  // learned / manual, per unit of each arm's share
};

// split_in_simulator: the day's budgets served by one bidder and by the demo's bidders under an
// ideal coordinator (sim::AuctionEngine::SplitRule), by name: one_bidder, even, whole_mean,
// whole.
struct SplitInSimulator {
  int bidders = 0;
  std::vector<std::pair<std::string, SplitRun>> runs;
};

// The learner's record of a step (its replay store's "step:D:S", learner/src/online.cc): what
// the demo reads of it, and the record itself, written into report.json as the learner stored
// it.
struct LearnerStep {
  std::string record;  // the learner's JSON object
  int64_t total_cost_micros = 0, total_revenue_micros = 0;
  std::vector<int64_t> cost_micros;  // per (agent, cluster): [agent * clusters + cluster]
};

// Several bidders: how many installed a step's table, and the spread of their installs.
struct PolicySwitch {
  uint64_t bidders = 0;
  int64_t spread_ms = 0;
};

// One step of a live day.
struct DemoStep {
  int step = 0;
  uint64_t policy_version = 0;  // 1 + day x T + step
  // a[i][j] the bidder served (agents x clusters; zeros when the table was not read back).
  std::vector<std::vector<double>> table;
  double policy_lag_ms = kNaN;                // step end to the next table served
  std::optional<PolicySwitch> policy_switch;  // several bidders
  StepMarker exchange;                        // the exchange's accounting, as published
  int64_t lost_requests = 0;
  int64_t rerouted_requests = 0;  // written when not 0
  int64_t failed_notices = 0;
  int64_t moved_notices = 0;  // written when not 0
  std::optional<LearnerStep> learner;
  bool learner_matches_exchange = false;  // the learner's spend and revenue = the exchange's
};

// One live day: the two arms (as the exchange accounted them, each with its part of the
// budgets) and the simulator's counterfactuals on the same day.
struct DemoDay {
  int day = 0;
  OutcomeRows arms[kArms];  // indexed by Arm: "learned", "manual"
  // The tables the bidder served, in the simulator's engine: every user, whole budgets.
  OutcomeRows learned_in_simulator;
  // The same tables on the learned arm's users with its part of the budgets (A/B runs).
  std::optional<OutcomeRows> learned_arm_in_simulator;
  std::optional<SplitInSimulator> split_in_simulator;  // several bidders in an A/B run
  OutcomeRows manual_in_simulator;  // every user bid manual with the whole budgets
  double revenue_ratio = kNaN;      // learned / manual, per unit of each arm's share
  double revenue_ratio_to_simulated_manual = kNaN;
  double seconds = 0;
  std::vector<DemoStep> steps;
};

// A spread of delays (ms) over n measurements.
struct Quantiles {
  double p50 = 0, p90 = 0, max = 0;
  int n = 0;
};

struct PartitionCheck {
  int partition = 0;
  int64_t high_watermark = 0;
  std::optional<int64_t> learner_next_offset;  // none: the learner stored no position
};

// What the learner stored against what the exchange and the events topic hold.
struct LoopCheck {
  int64_t transitions = 0, expected_transitions = 0;
  std::vector<std::string> missing, duplicated;  // "day:step"
  bool totals_match = true;                      // every step's learner_matches_exchange
  int64_t events_topic_messages = 0;
  std::vector<PartitionCheck> events_partitions;
};

struct Processes {
  int learner_exit = 0, bidder_exit = 0;
  std::optional<int> budget_exit;  // the lease coordinator (several bidders)
};

// The Kafka cluster the run used.
struct KafkaUsed {
  std::string cluster = "embedded mock";  // or a real cluster's bootstrap servers (--brokers)
  // A real cluster: the run id that the run's own topics end in, the topics (role, name), which
  // the run deletes when it ends, and the names of the client properties given (never values).
  std::string run;
  std::vector<std::pair<std::string, std::string>> topics;
  std::vector<std::string> properties;
};

// The events topic dumped as events.jsonl for offline replay.
struct EventsDump {
  std::string file = "events.jsonl";
  int64_t messages = 0;
  bool read_to_end = false;
  int64_t messages_no_longer_retained = 0;
  bool complete = false;
  std::string replay;  // the command that replays it
};

// Budgets from the bidders' events: the most any (day, arm, advertiser) overspent, the lowest
// COST of any day, arm and agent, and of any day and arm over its agents (percent).
struct EventsBudgetCheck {
  double max_overspend_pct = 0;
  double min_cost_pct = kNaN, min_arm_cost_pct = kNaN;
};

// The A/B report's comparison of the arms (core/ab_report.h), as that report wrote it.
struct AbComparison {
  RatioCi revenue_ratio, roi_ratio;
  std::string per_share;  // how the ratios are taken
};

// `rtb report` on the events dump, against the exchange's accounting of the arms.
// The advertisers' goals as `rtb report` scores them from the events, against the same scores
// computed from the exchange's own accounting of each advertiser's days.
struct GoalCheck {
  int targets = 0;           // advertisers with a target CPA or ROAS
  double score[kArms] = {};  // target-CPA advertisers' summed scores (conversions), by Arm
  int missed[kArms] = {};    // advertisers whose realised CPA or ROAS over the days missed
  int compared = 0;          // (advertiser, arm) pairs compared
  bool matches_exchange_within_0_1_pct = true;
  std::string first_difference;  // the first pair that differed (empty: none)
};

struct AbFromEvents {
  std::string error;  // not empty: the A/B report could not be made (nothing else is written)
  std::string file = "ab/report.html";
  std::string rerun;
  AbComparison comparison;
  int64_t events_counted = 0, malformed = 0;
  ArmTotals arms[kArms];  // indexed by Arm: spend, revenue, clicks, conversions
  bool matches_exchange_within_0_1_pct = false;
  EventsBudgetCheck budget_check;
  GoalCheck goals;  // targets == 0: the market has no goal
};

// Over the days' split_in_simulator, one way of serving the budgets: the lowest COST of any
// day, arm and agent (percent), the lowest and highest learned / manual ratio per share.
struct SplitSummary {
  double min_cost_pct = kNaN, revenue_ratio_min = kNaN, revenue_ratio_max = kNaN;
};

// budget_check: written when the A/B report was made, with its EventsBudgetCheck.
struct BudgetCheck {
  int bidders = 1;
  int64_t lease_reclaims = 0;                                      // leases the coordinator took
  std::vector<std::pair<std::string, SplitSummary>> in_simulator;  // several bidders
};

struct DemoReport {
  std::string title = "rtb demo: the closed loop, learned (live) vs manual bids";
  std::string kind = "demo";
  std::vector<DemoDay> days;
  uint64_t replay_imported_offline_transitions = 0;  // the pre-training's, not the loop's
  double learned_share = 1;
  Outcome arms[kArms];  // indexed by Arm: each arm over the days (SummariseDays)
  Quantiles policy_lag_ms;
  // Several bidders: per table, the spread between the first and the last install.
  std::optional<Quantiles> policy_switch_spread_ms;  // p50, max, n (written as "tables")
  LoopCheck loop_check;
  std::vector<std::string> chaos;  // one line per kill
  Processes processes;
  KafkaUsed kafka;
  int bidders = 1;
  std::vector<int64_t> requests_per_bidder;
  std::vector<std::string> about;  // how this was made, one paragraph each
  std::string pretrain_report;     // "" without pre-training
  EventsDump events_dump;
  AbFromEvents ab_from_events;
  BudgetCheck budget_check;
  double seconds = 0;  // the whole demo's wall time
};

// Lowest-rank quantiles of delays (p50, p90, max over n; zeros when there are none).
Quantiles QuantilesOf(std::vector<double> ms);
// Fills the report's summaries of its days: each arm over the days, the policy lag over every
// step and loop_check.totals_match.
void SummariseDays(DemoReport* r);
// Over the days' split_in_simulator, per way of serving the budgets (empty without them).
std::vector<std::pair<std::string, SplitSummary>> SummariseSplits(const std::vector<DemoDay>& days);

// report.json (keys in order, as nlohmann::json writes them; two-space indent).
std::string RenderDemoJson(const DemoReport& r);
doc::Document BuildDemoDocument(const DemoReport& r, const std::string& currency = "USD");
std::string RenderDemoMarkdown(const DemoReport& r, const std::string& currency = "USD");
std::string RenderDemoHtml(const DemoReport& r, const std::string& currency = "USD");
// Writes report.json, report.md and report.html into dir, each atomically; *md: the Markdown.
Status WriteDemoReportFiles(const DemoReport& r, const std::string& dir, std::string* md);

}  // namespace rtb::demo
