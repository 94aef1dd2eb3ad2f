// The engine's report: one data model, four renderings (JSON, CSV, Markdown, HTML with SVG
// charts). The simulator, the learner's comparison and replay all produce a Report, so every
// report a user reads has the same shape and the same definitions.
//
// A Report holds methods (manual, a policy, a learned algorithm...). Each method holds one or
// more runs (seeds); each run holds one Outcome per row (agent or campaign) and a total. With
// more than one run the renderings show mean and standard deviation. One method is the
// baseline; every other method is also shown relative to it, in percent (the paper's Table 1).
// Rendering is deterministic: the same Report gives the same bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rtb/core/goal.h"
#include "rtb/core/metrics.h"
#include "rtb/core/status.h"

namespace rtb {

struct RunResult {
  std::vector<Outcome> rows;  // one per row name, in Report::row_names order
  Outcome total;
  // Optional time series: per row, cumulative cost / budget at the end of each bucket.
  std::vector<std::vector<double>> budget_burn;
  // Optional learning curve: test revenue (units) per training episode.
  std::vector<double> curve;
  // The advertisers with a target, scored against their goals (SummarizeGoals); targets 0: none
  // (the reports then show no goal columns).
  GoalSummary goals;
};

struct MethodResult {
  std::string name;         // "manual", "dcmab", "table:policy.json"...
  std::string description;  // one line: what produced it
  std::vector<RunResult> runs;
};

struct Report {
  std::string title;
  std::string kind;                                           // "simulate", "train", "replay"
  std::vector<std::pair<std::string, std::string>> meta;      // config, seed, protocol... (ordered)
  std::string row_label = "agent";                            // what a row is
  std::vector<std::string> row_names;                         // "agent 1", ...
  std::vector<std::pair<std::string, std::string>> row_info;  // optional extra line per row
  std::string baseline;                                       // method name of the baseline
  std::string primary;                                        // method whose rows are top-level
  double burn_bucket_minutes = 0;                             // width of a budget_burn bucket
  std::string curve_label = "episode";
  std::vector<MethodResult> methods;
  std::vector<std::string> notes;  // free text lines for the reader
  // The metric of the per-row table and chart (a metric key: revenue, clicks...).
  std::string objective = "revenue";
  // Columns of the table relative to the baseline (metric keys); empty = revenue, ROI, cost
  // per click, cost per conversion. COST (cost/budget) is always shown as is.
  std::vector<std::string> relative_metrics;
  std::string currency = "USD";  // the unit of every money column and axis
  // Metrics (keys) the source does not have (a log without order values has no revenue):
  // shown "n/a", not 0.
  std::vector<std::string> unavailable;
  // More totals per method, shown beside the objective's (name, one value per method in
  // `methods` order), e.g. expected clicks in a replay.
  std::vector<std::pair<std::string, std::vector<double>>> extra_totals;

  const MethodResult* Find(const std::string& name) const;
};

std::string RenderJson(const Report& r);
std::string RenderCsv(const Report& r);
// Markdown and HTML are two renderings of one document (report_doc.h).
std::string RenderMarkdown(const Report& r);
std::string RenderHtml(const Report& r);

// The report with every absolute path in its texts shown relative (report_doc.h ShownPaths):
// what WriteReportFiles renders.
Report WithShownPaths(Report r);

// Writes report.json, report.csv, report.md and report.html into dir (created if needed).
// Each file is written to a temporary name and renamed, so a failure leaves no half-written
// report behind.
Status WriteReportFiles(const Report& r, const std::string& dir);

// Writes data to path atomically (temp file + rename).
Status WriteFileAtomic(const std::string& path, const std::string& data);

}  // namespace rtb
