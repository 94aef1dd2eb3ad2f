#include "rtb/core/report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>

#include "rtb/core/report_doc.h"
#include "rtb/core/text.h"

namespace rtb {
namespace {

// ---------- metric catalogue: one place defines what every rendering shows ----------

struct MetricDef {
  const char* key;    // JSON / CSV key
  const char* label;  // human label
  std::function<double(const Outcome&)> get;
  bool money;     // in the report's currency
  bool relative;  // shown relative to the baseline
  doc::Fmt fmt;   // how Markdown/HTML show it
};

const std::vector<MetricDef>& Metrics() {
  using doc::Fmt;
  static const std::vector<MetricDef> defs = {
      {"revenue", "revenue", [](const Outcome& o) { return o.revenue.units(); }, true, true,
       Fmt::kMoney},
      {"cost", "spend", [](const Outcome& o) { return o.cost.units(); }, true, true, Fmt::kMoney},
      {"budget", "budget", [](const Outcome& o) { return o.budget.units(); }, true, false,
       Fmt::kMoney},
      {"cost_over_budget", "COST", CostOverBudget, false, true, Fmt::kPercent},
      {"roi", "ROI", Roi, false, true, Fmt::kRatio},
      {"cost_per_click", "cost per click", CostPerClick, true, true, Fmt::kMoney},
      {"clicks", "clicks", [](const Outcome& o) { return o.clicks; }, false, true, Fmt::kCount},
      {"conversions", "conversions", [](const Outcome& o) { return o.conversions; }, false, true,
       Fmt::kCount},
      {"cost_per_conversion", "cost per conversion", CostPerConversion, true, true, Fmt::kMoney},
      {"impressions", "impressions",
       [](const Outcome& o) { return static_cast<double>(o.impressions); }, false, true,
       Fmt::kCount},
      {"auctions", "auctions", [](const Outcome& o) { return static_cast<double>(o.auctions); },
       false, false, Fmt::kCount},
      {"win_rate", "win rate", WinRate, false, true, Fmt::kPercent},
      {"cpm", "CPM", Cpm, true, true, Fmt::kMoney},
  };
  return defs;
}

std::string Capitalized(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

const MetricDef& Metric(const std::string& key) {
  for (const auto& m : Metrics()) {
    if (key == m.key) return m;
  }
  return Metrics()[0];
}

// Mean and std over the runs of a method for row r (-1 = total).
MeanStd Stat(const MethodResult& m, int row, const MetricDef& def) {
  std::vector<double> xs;
  for (const auto& run : m.runs) {
    const Outcome& o = row < 0 ? run.total : run.rows[static_cast<size_t>(row)];
    xs.push_back(def.get(o));
  }
  return ComputeMeanStd(xs);
}

std::string Num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string JsonString(const std::string& s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

int RowCount(const Report& r) { return static_cast<int>(r.row_names.size()); }

bool MultiRun(const Report& r) {
  for (const auto& m : r.methods) {
    if (m.runs.size() > 1) return true;
  }
  return false;
}

// Whether some run scored advertisers against a target (the goal columns are shown).
bool AnyGoals(const Report& r) {
  for (const auto& m : r.methods) {
    for (const auto& run : m.runs) {
      if (run.goals.targets > 0) return true;
    }
  }
  return false;
}

// A goal figure of a method over its runs.
template <typename T>
MeanStd GoalStat(const MethodResult& m, T GoalSummary::*field) {
  std::vector<double> xs;
  for (const auto& run : m.runs) xs.push_back(static_cast<double>(run.goals.*field));
  return ComputeMeanStd(xs);
}

// JSON object of every metric of (method, row), with _std and relative-to-baseline entries.
std::string JsonRow(const Report& r, const MethodResult& m, int row, const std::string& indent) {
  std::ostringstream o;
  const MethodResult* base = r.Find(r.baseline);
  o << "{";
  o << "\n"
    << indent << "  \"name\": "
    << JsonString(row < 0 ? std::string("total") : r.row_names[static_cast<size_t>(row)]);
  if (row >= 0 && static_cast<size_t>(row) < r.row_info.size()) {
    o << ",\n"
      << indent << "  " << JsonString(r.row_info[static_cast<size_t>(row)].first) << ": "
      << JsonString(r.row_info[static_cast<size_t>(row)].second);
  }
  for (const auto& def : Metrics()) {
    const MeanStd s = Stat(m, row, def);
    o << ",\n" << indent << "  \"" << def.key << "\": " << Num(s.mean);
    if (m.runs.size() > 1) o << ",\n" << indent << "  \"" << def.key << "_std\": " << Num(s.std);
  }
  if (base != nullptr && !base->runs.empty()) {
    o << ",\n" << indent << "  \"relative_to_" << r.baseline << "_pct\": {";
    bool first = true;
    for (const auto& def : Metrics()) {
      if (!def.relative) continue;
      const double pct = PercentOf(Stat(m, row, def).mean, Stat(*base, row, def).mean);
      o << (first ? "" : ",") << "\n" << indent << "    \"" << def.key << "\": " << Num(pct);
      first = false;
    }
    o << "\n" << indent << "  }";
  }
  o << "\n" << indent << "}";
  return o.str();
}

std::vector<double> MeanCurve(const MethodResult& m, std::vector<double>* stds) {
  size_t len = 0;
  for (const auto& run : m.runs) len = std::max(len, run.curve.size());
  std::vector<double> mean(len);
  if (stds) stds->assign(len, 0.0);
  for (size_t e = 0; e < len; ++e) {
    std::vector<double> xs;
    for (const auto& run : m.runs) {
      if (e < run.curve.size()) xs.push_back(run.curve[e]);
    }
    const MeanStd s = ComputeMeanStd(xs);
    mean[e] = s.mean;
    if (stds) (*stds)[e] = s.std;
  }
  return mean;
}

std::string JsonArray(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Num(v[i]);
  return out + "]";
}

// ---------- the report as a document (report_doc.h renders it) ----------

// A metric's column: its label, with the currency for money.
doc::Column MetricColumn(const Report& r, const MetricDef& d) {
  return {d.money ? std::string(d.label) + " (" + r.currency + ")" : d.label, d.fmt,
          d.fmt == doc::Fmt::kPercent ? 1 : 2};
}

bool Unavailable(const Report& r, const MetricDef& d) {
  return std::find(r.unavailable.begin(), r.unavailable.end(), d.key) != r.unavailable.end();
}

doc::Value StatValue(const Report& r, const MethodResult& m, int row, const MetricDef& d) {
  if (Unavailable(r, d)) return doc::Value::Num(kNaN);
  const MeanStd st = Stat(m, row, d);
  return doc::Value::Num(st.mean, MultiRun(r) && st.n > 1 ? st.std : kNaN);
}

std::string RunsNote(const Report& r) {
  size_t runs = 0;
  for (const auto& m : r.methods) runs = std::max(runs, m.runs.size());
  return runs > 1 ? " (mean ± std over " + std::to_string(runs) + " runs)" : "";
}

doc::Table ObjectiveTable(const Report& r) {
  const MetricDef& obj = Metric(r.objective);
  doc::Table t;
  t.columns.push_back({"method", doc::Fmt::kText});
  doc::Column c = MetricColumn(r, obj);
  for (const auto& n : r.row_names) {
    t.columns.push_back(
        {RowCount(r) == 1 ? c.title : n, c.fmt, c.decimals});  // one row: the metric
  }
  // One row: its total is the row.
  if (RowCount(r) > 1) t.columns.push_back({"total", c.fmt, c.decimals});
  for (const auto& [name, values] : r.extra_totals) {
    t.columns.push_back({name, doc::Fmt::kNumber, 1});
  }
  const bool goals = AnyGoals(r);
  const GoalSummary shape =
      r.methods.empty() || r.methods[0].runs.empty() ? GoalSummary{} : r.methods[0].runs[0].goals;
  const bool roas = shape.roas_targets > 0, cpa = shape.targets > shape.roas_targets;
  if (goals) {
    // The CPA score counts conversions, the ROAS score value: two columns, never one sum.
    t.columns.push_back(
        {roas ? "CPA score (conversions, " + std::to_string(shape.targets - shape.roas_targets) +
                    " advertisers with a target CPA)"
              : "goal score (" + std::to_string(shape.targets) + " advertisers with a target)",
         doc::Fmt::kNumber, 1});
    t.columns.push_back(
        {"missing their target" + std::string(roas ? " (CPA or ROAS)" : ""), doc::Fmt::kNumber, 1});
    if (cpa) t.columns.push_back({"realised / target CPA", doc::Fmt::kNumber, 3});
    if (roas) {
      t.columns.push_back({"ROAS score (value, " + std::to_string(shape.roas_targets) +
                               " advertisers with a target ROAS)",
                           doc::Fmt::kNumber, 1});
      t.columns.push_back({"realised / target ROAS", doc::Fmt::kNumber, 3});
    }
  }
  for (size_t k = 0; k < r.methods.size(); ++k) {
    const MethodResult& m = r.methods[k];
    std::vector<doc::Value> row{doc::Value::Text(m.name)};
    for (int i = 0; i < RowCount(r); ++i) row.push_back(StatValue(r, m, i, obj));
    if (RowCount(r) > 1) row.push_back(StatValue(r, m, -1, obj));
    for (const auto& [name, values] : r.extra_totals) {
      row.push_back(doc::Value::Num(k < values.size() ? values[k] : kNaN));
    }
    if (goals) {
      std::vector<MeanStd> stats{GoalStat(m, &GoalSummary::score),
                                 GoalStat(m, &GoalSummary::missed)};
      if (cpa) stats.push_back(GoalStat(m, &GoalSummary::cpa_ratio));
      if (roas) {
        stats.push_back(GoalStat(m, &GoalSummary::roas_score));
        stats.push_back(GoalStat(m, &GoalSummary::roas_ratio));
      }
      for (const MeanStd& st : stats) {
        row.push_back(doc::Value::Num(st.mean, MultiRun(r) && st.n > 1 ? st.std : kNaN));
      }
    }
    t.rows.push_back(row);
  }
  return t;
}

// Every column relative to the baseline's total (baseline = 100%); spend relative to the
// baseline's spend is the delivery.
doc::Table RelativeTable(const Report& r) {
  const MethodResult* base = r.Find(r.baseline);
  std::vector<std::string> keys =
      r.relative_metrics.empty()
          ? std::vector<std::string>{"revenue", "roi", "cost_per_click", "cost_per_conversion"}
          : r.relative_metrics;
  if (std::find(keys.begin(), keys.end(), "cost") == keys.end()) keys.push_back("cost");
  doc::Table t;
  t.columns.push_back({"method", doc::Fmt::kText});
  for (const auto& k : keys) {
    const MetricDef& d = Metric(k);
    t.columns.push_back(
        {(k == "cost" ? std::string("spend (delivery)") : std::string(d.key == k ? d.label : k)),
         doc::Fmt::kPoints, 1});
  }
  for (const auto& m : r.methods) {
    std::vector<doc::Value> row{doc::Value::Text(m.name)};
    for (const auto& key : keys) {
      const MetricDef& d = Metric(key);
      row.push_back(doc::Value::Num(base && !Unavailable(r, d)
                                        ? PercentOf(Stat(m, -1, d).mean, Stat(*base, -1, d).mean)
                                        : kNaN));
    }
    t.rows.push_back(row);
  }
  return t;
}

doc::Table DetailTable(const Report& r, const MethodResult& m) {
  doc::Table t;
  t.columns.push_back({r.row_label, doc::Fmt::kText});
  const std::vector<std::string> keys = {"revenue",          "cost",        "budget",
                                         "cost_over_budget", "roi",         "cost_per_click",
                                         "clicks",           "conversions", "cost_per_conversion",
                                         "impressions",      "win_rate",    "cpm"};
  for (const auto& k : keys) t.columns.push_back(MetricColumn(r, Metric(k)));
  // One row and its total say the same: the total alone.
  const bool one = RowCount(r) == 1;
  for (int i = one ? RowCount(r) : 0; i <= RowCount(r); ++i) {
    const int row = i == RowCount(r) ? -1 : i;
    std::vector<doc::Value> cells{
        doc::Value::Text(row < 0 ? "total" : r.row_names[static_cast<size_t>(row)])};
    for (const auto& k : keys) cells.push_back(StatValue(r, m, row, Metric(k)));
    t.rows.push_back(cells);
  }
  return t;
}

doc::Document BuildDocument(const Report& r) {
  doc::Document d;
  d.title = r.title;
  if (!r.meta.empty()) d.Add(doc::KeyValues{r.meta});
  const MetricDef& obj = Metric(r.objective);
  const std::string objective = Capitalized(obj.label);
  const std::string runs = RunsNote(r);
  d.Add(doc::Heading{2, objective + " per " + r.row_label +
                            (obj.money ? " (" + r.currency + ")" : std::string()) + runs});
  d.Add(ObjectiveTable(r));
  if (RowCount(r) > 1) {
    doc::Chart c;
    c.kind = doc::Chart::Kind::kBar;
    c.title = objective + " per " + r.row_label;
    c.x.title = r.row_label;
    c.y.title = MetricColumn(r, obj).title;
    c.y.fmt = obj.fmt;
    c.categories = r.row_names;
    for (const auto& m : r.methods) {
      doc::Series s;
      s.name = m.name;
      for (int i = 0; i < RowCount(r); ++i) s.y.push_back(Stat(m, i, obj).mean);
      c.series.push_back(s);
    }
    d.Add(c);
  } else if (r.methods.size() > 1) {  // one row: one bar per method
    doc::Chart c;
    c.kind = doc::Chart::Kind::kBar;
    c.title = objective + " per method";
    c.x.title = "method";
    c.y.title = MetricColumn(r, obj).title;
    c.y.fmt = obj.fmt;
    doc::Series s;
    s.name = objective;
    for (const auto& m : r.methods) {
      c.categories.push_back(m.name);
      s.y.push_back(Stat(m, -1, obj).mean);
    }
    c.series.push_back(s);
    d.Add(c);
  }
  if (r.methods.size() > 1 && r.Find(r.baseline) != nullptr) {
    d.Add(doc::Heading{2, "Totals relative to " + r.baseline + " (" + r.baseline + " = 100%)"});
    d.Add(RelativeTable(r));
  }
  // Budget burn: the primary method (solid) against the baseline (dashed), one colour per row.
  {
    doc::Chart c;
    c.title = "Cumulative spend over the day";
    c.x.title = "hour of the day";
    c.x.whole = true;
    c.x.min = 0;  // to the day's end: the last bucket
    c.y.title = "spend (% of the daily budget)";
    c.y.fmt = doc::Fmt::kPoints;
    c.y.max = 100;
    std::vector<const MethodResult*> shown;
    if (const MethodResult* p = r.Find(r.primary)) shown.push_back(p);
    if (const MethodResult* b = r.Find(r.baseline); b && r.baseline != r.primary) {
      shown.push_back(b);
    }
    std::vector<std::string> styles;
    for (size_t mi = 0; mi < shown.size(); ++mi) {
      const MethodResult& m = *shown[mi];
      if (m.runs.empty() || m.runs[0].budget_burn.empty()) continue;
      styles.push_back(m.name + (mi == 0 ? " solid" : " dashed"));
      const auto& burn = m.runs[0].budget_burn;
      for (size_t i = 0; i < burn.size(); ++i) {
        doc::Series s;
        s.name = m.name + ", " + (i < r.row_names.size() ? r.row_names[i] : "");
        s.color = static_cast<int>(i);
        s.dashed = mi > 0;
        s.markers = false;
        s.x.push_back(0);
        s.y.push_back(0);
        for (size_t b = 0; b < burn[i].size(); ++b) {
          s.x.push_back(static_cast<double>(b + 1) * r.burn_bucket_minutes / 60.0);
          s.y.push_back(100 * burn[i][b]);
        }
        c.series.push_back(s);
      }
    }
    if (!c.series.empty()) {
      c.references.push_back({"daily budget (100%)", 100});
      d.Add(doc::Heading{2, "Budget burn per " + r.row_label});
      if (styles.size() > 1) {
        d.Add(doc::Paragraph{"One colour per " + r.row_label + "; " + styles[0] + ", " + styles[1] +
                             (shown.size() > 1 && !MultiRun(r) ? "." : " (first run).")});
      }
      d.Add(c);
    }
  }
  // Learning curves, with the baseline's test revenue as a reference line.
  {
    doc::Chart c;
    c.title = "Test revenue per " + r.curve_label + runs;
    c.x.title = r.curve_label;
    c.x.whole = true;
    c.y.title = "test revenue (" + r.currency + ")";
    c.y.fmt = doc::Fmt::kMoney;
    int color = 0;
    for (const auto& m : r.methods) {
      if (m.runs.empty() || m.runs[0].curve.empty()) continue;
      if (m.runs[0].curve.size() == 1) {  // a method that does not learn: a level, not a curve
        c.references.push_back({m.name + " (test revenue)", MeanCurve(m, nullptr)[0]});
        continue;
      }
      doc::Series s;
      s.name = m.name;
      s.color = color++;
      s.y = MeanCurve(m, nullptr);
      s.markers = s.y.size() <= 60;
      for (size_t e = 0; e < s.y.size(); ++e) s.x.push_back(static_cast<double>(e + 1));
      c.series.push_back(s);
    }
    if (!c.series.empty()) {
      if (const MethodResult* b = r.Find(r.baseline);
          b != nullptr && (b->runs.empty() || b->runs[0].curve.empty())) {
        c.references.push_back({r.baseline + " (its test revenue)", Stat(*b, -1, obj).mean});
      }
      d.Add(doc::Heading{2, "Learning curves"});
      d.Add(c);
    }
  }
  bool defined = false;
  for (const auto& m : r.methods) {
    d.Add(doc::Heading{2, m.name + ": every metric per " + r.row_label + runs});
    if (!defined) {
      d.Add(
          doc::Paragraph{"ROI = revenue / spend; COST = spend / budget (the budget's "
                         "delivery); cost per click is the paper's CPA; win rate = "
                         "impressions / auctions; CPM = spend per 1,000 impressions."});
      defined = true;
    }
    if (!m.description.empty()) d.Add(doc::Paragraph{m.description});
    d.Add(DetailTable(r, m));
  }
  if (!r.row_info.empty()) {
    d.Add(doc::Heading{2, Capitalized(r.row_label) + "s"});
    doc::Bullets b;
    for (size_t i = 0; i < r.row_info.size() && i < r.row_names.size(); ++i) {
      b.items.push_back(r.row_names[i] + ": " + r.row_info[i].second);
    }
    d.Add(b);
  }
  if (!r.notes.empty()) {
    d.Add(doc::Heading{2, "Notes"});
    d.Add(doc::Bullets{r.notes});
  }
  return d;
}
}  // namespace

const MethodResult* Report::Find(const std::string& name) const {
  for (const auto& m : methods) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string RenderJson(const Report& r) {
  std::ostringstream o;
  o << "{\n  \"report\": " << JsonString(r.kind) << ",\n  \"schema_version\": 1,\n";
  o << "  \"title\": " << JsonString(r.title) << ",\n  \"meta\": {";
  for (size_t i = 0; i < r.meta.size(); ++i) {
    o << (i ? "," : "") << "\n    " << JsonString(r.meta[i].first) << ": "
      << JsonString(r.meta[i].second);
  }
  o << "\n  },\n  \"row_label\": " << JsonString(r.row_label)
    << ",\n  \"baseline\": " << JsonString(r.baseline)
    << ",\n  \"primary\": " << JsonString(r.primary) << ",\n";
  const std::string rows_key = r.row_label == "agent" ? "agents" : "rows";
  if (const MethodResult* p = r.Find(r.primary)) {
    o << "  \"" << rows_key << "\": [";
    for (int i = 0; i < RowCount(r); ++i) o << (i ? ", " : "") << JsonRow(r, *p, i, "    ");
    o << "],\n  \"total\": " << JsonRow(r, *p, -1, "  ") << ",\n";
  }
  o << "  \"methods\": {";
  for (size_t mi = 0; mi < r.methods.size(); ++mi) {
    const auto& m = r.methods[mi];
    o << (mi ? "," : "") << "\n    " << JsonString(m.name)
      << ": {\n      \"description\": " << JsonString(m.description)
      << ",\n      \"runs\": " << m.runs.size() << ",\n      \"" << rows_key << "\": [";
    for (int i = 0; i < RowCount(r); ++i) o << (i ? ", " : "") << JsonRow(r, m, i, "        ");
    o << "],\n      \"total\": " << JsonRow(r, m, -1, "      ");
    if (!m.runs.empty() && !m.runs[0].curve.empty()) {
      std::vector<double> stds;
      const auto mean = MeanCurve(m, &stds);
      o << ",\n      \"curve\": {\"x\": " << JsonString(r.curve_label)
        << ", \"mean\": " << JsonArray(mean) << ", \"std\": " << JsonArray(stds) << "}";
    }
    if (!m.runs.empty() && !m.runs[0].budget_burn.empty()) {
      o << ",\n      \"budget_burn\": {\"bucket_minutes\": " << Num(r.burn_bucket_minutes)
        << ", \"cost_over_budget\": [";
      const auto& burn = m.runs[0].budget_burn;
      for (size_t i = 0; i < burn.size(); ++i) o << (i ? ", " : "") << JsonArray(burn[i]);
      o << "]}";
    }
    if (AnyGoals(r)) {
      const MeanStd score = GoalStat(m, &GoalSummary::score),
                    missed = GoalStat(m, &GoalSummary::missed);
      o << ",\n      \"goals\": {\"targets\": " << (m.runs.empty() ? 0 : m.runs[0].goals.targets)
        << ", \"score\": " << Num(score.mean) << ", \"score_std\": " << Num(score.std)
        << ", \"missed\": " << Num(missed.mean) << ", \"missed_std\": " << Num(missed.std)
        << ", \"cpa_ratio\": " << Num(GoalStat(m, &GoalSummary::cpa_ratio).mean)
        << ", \"roas_targets\": " << (m.runs.empty() ? 0 : m.runs[0].goals.roas_targets)
        << ", \"roas_score\": " << Num(GoalStat(m, &GoalSummary::roas_score).mean)
        << ", \"roas_ratio\": " << Num(GoalStat(m, &GoalSummary::roas_ratio).mean) << "}";
    }
    o << "\n    }";
  }
  o << "\n  },\n  \"notes\": [";
  for (size_t i = 0; i < r.notes.size(); ++i) o << (i ? ", " : "") << JsonString(r.notes[i]);
  o << "]\n}\n";
  return o.str();
}

std::string RenderCsv(const Report& r) {
  std::ostringstream o;
  o << "method," << r.row_label << ",runs";
  for (const auto& d : Metrics()) o << "," << d.key << "," << d.key << "_std";
  o << "\n";
  for (const auto& m : r.methods) {
    for (int i = 0; i <= RowCount(r); ++i) {
      const int row = i == RowCount(r) ? -1 : i;
      o << m.name << "," << (row < 0 ? "total" : r.row_names[static_cast<size_t>(row)]) << ","
        << m.runs.size();
      for (const auto& d : Metrics()) {
        const MeanStd s = Stat(m, row, d);
        o << "," << (std::isfinite(s.mean) ? Num(s.mean) : "") << ","
          << (std::isfinite(s.std) ? Num(s.std) : "");
      }
      o << "\n";
    }
  }
  return o.str();
}

std::string RenderMarkdown(const Report& r) { return doc::RenderMarkdown(BuildDocument(r)); }

std::string RenderHtml(const Report& r) { return doc::RenderHtml(BuildDocument(r)); }

Status WriteFileAtomic(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(path + ": cannot write (" + std::strerror(errno) + ")");
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::IoError(path + ": write failed (" + err + ")");
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Status::IoError(path + ": cannot flush");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::IoError(path + ": cannot rename into place");
  }
  return Status::Ok();
}

Report WithShownPaths(Report r) {
  auto fix = [](std::string& s) { s = doc::ShownPaths(s); };
  fix(r.title);
  fix(r.primary);
  fix(r.baseline);
  for (auto& kv : r.meta) fix(kv.second);
  for (auto& kv : r.row_info) fix(kv.second);
  for (auto& n : r.notes) fix(n);
  for (auto& m : r.methods) {
    fix(m.name);
    fix(m.description);
  }
  return r;
}

Status WriteReportFiles(const Report& report, const std::string& dir) {
  const Report r = WithShownPaths(report);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": cannot create directory (" + ec.message() + ")");
  // Render everything first, so that a rendering problem writes nothing.
  const std::string json = RenderJson(r), csv = RenderCsv(r), md = RenderMarkdown(r),
                    html = RenderHtml(r);
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.json", json));
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.csv", csv));
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.md", md));
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.html", html));
  return Status::Ok();
}

}  // namespace rtb
