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

#include "rtb/core/text.h"

namespace rtb {
namespace {

// ---------- metric catalogue: one place defines what every rendering shows ----------

struct MetricDef {
  const char* key;    // JSON / CSV key
  const char* label;  // human label
  std::function<double(const Outcome&)> get;
  bool money;     // shown with two decimals in Markdown/HTML
  bool relative;  // shown relative to the baseline
};

const std::vector<MetricDef>& Metrics() {
  static const std::vector<MetricDef> defs = {
      {"revenue", "revenue", [](const Outcome& o) { return o.revenue.units(); }, true, true},
      {"cost", "cost", [](const Outcome& o) { return o.cost.units(); }, true, true},
      {"budget", "budget", [](const Outcome& o) { return o.budget.units(); }, true, false},
      {"cost_over_budget", "COST (cost/budget)", CostOverBudget, false, true},
      {"roi", "ROI (revenue/cost)", Roi, false, true},
      {"cost_per_click", "cost per click (paper's CPA)", CostPerClick, false, true},
      {"clicks", "clicks", [](const Outcome& o) { return o.clicks; }, false, true},
      {"conversions", "conversions", [](const Outcome& o) { return o.conversions; }, false, true},
      {"cost_per_conversion", "cost per conversion", CostPerConversion, false, true},
      {"impressions", "impressions",
       [](const Outcome& o) { return static_cast<double>(o.impressions); }, false, true},
      {"auctions", "auctions", [](const Outcome& o) { return static_cast<double>(o.auctions); },
       false, false},
      {"win_rate", "win rate", WinRate, false, true},
      {"cpm", "CPM", Cpm, false, true},
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

std::string Fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Human(const MetricDef& def, double v) {
  if (!std::isfinite(v)) return "n/a";
  if (def.money) return Fixed(v, 2);
  if (std::string(def.key) == "cost_over_budget" || std::string(def.key) == "win_rate") {
    return Fixed(100 * v, 1) + "%";
  }
  if (std::abs(v) >= 1000) return Fixed(v, 0);
  if (std::abs(v) >= 10) return Fixed(v, 1);
  return Fixed(v, 3);
}

std::string HumanStat(const MetricDef& def, const MeanStd& s, bool with_std) {
  std::string out = Human(def, s.mean);
  if (with_std && s.n > 1) {
    if (std::string(def.key) == "cost_over_budget" || std::string(def.key) == "win_rate") {
      out += " ± " + Fixed(100 * s.std, 1) + "%";
    } else {
      out += " ± " + Human(def, s.std);
    }
  }
  return out;
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

// ---------- SVG charts ----------

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Line {
  std::string name;
  std::vector<double> x, y;
  int color = 0;
  bool dashed = false;
};

std::string NiceTick(double v) {
  if (std::abs(v) >= 1000) return Fixed(v, 0);
  if (std::abs(v) >= 10) return Fixed(v, 0);
  if (std::abs(v) >= 1) return Fixed(v, 1);
  return Fixed(v, 2);
}

std::string LineChart(const std::string& title, const std::string& xl, const std::string& yl,
                      const std::vector<Line>& lines) {
  const double W = 720, H = 340, L = 70, R = 180, T = 36, B = 50;
  double x0 = INFINITY, x1 = -INFINITY, y0 = 0, y1 = -INFINITY;
  for (const auto& l : lines) {
    for (size_t i = 0; i < l.x.size(); ++i) {
      if (!std::isfinite(l.y[i])) continue;
      x0 = std::min(x0, l.x[i]);
      x1 = std::max(x1, l.x[i]);
      y0 = std::min(y0, l.y[i]);
      y1 = std::max(y1, l.y[i]);
    }
  }
  if (!std::isfinite(x0) || x1 <= x0) x0 = 0, x1 = 1;
  if (!(y1 > y0)) y1 = y0 + 1;
  y1 *= 1.05;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\" aria-label=\"" << HtmlEscape(title)
    << "\">\n";
  o << "<text x=\"" << W / 2 - R / 2 << "\" y=\"20\" text-anchor=\"middle\" font-weight=\"bold\">"
    << HtmlEscape(title) << "</text>\n";
  for (int t = 0; t <= 4; ++t) {
    const double yv = y0 + (y1 - y0) * t / 4, xv = x0 + (x1 - x0) * t / 4;
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << Fixed(py(yv), 1) << "\" y2=\""
      << Fixed(py(yv), 1) << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << L - 6 << "\" y=\"" << Fixed(py(yv) + 4, 1)
      << "\" text-anchor=\"end\" font-size=\"11\">" << NiceTick(yv) << "</text>\n";
    o << "<text x=\"" << Fixed(px(xv), 1) << "\" y=\"" << H - B + 16
      << "\" text-anchor=\"middle\" font-size=\"11\">" << NiceTick(xv) << "</text>\n";
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 10
    << "\" text-anchor=\"middle\" font-size=\"12\">" << HtmlEscape(xl) << "</text>\n";
  o << "<text transform=\"translate(16," << (T + H - B) / 2
    << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << HtmlEscape(yl) << "</text>\n";
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\""
    << H - T - B << "\" fill=\"none\" stroke=\"#888\"/>\n";
  int legend = 0;
  for (const auto& l : lines) {
    std::string pts;
    for (size_t i = 0; i < l.x.size(); ++i) {
      if (!std::isfinite(l.y[i])) continue;
      pts += Fixed(px(l.x[i]), 1) + "," + Fixed(py(l.y[i]), 1) + " ";
    }
    const char* color = kPalette[l.color % 10];
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\""
      << (l.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"" << pts << "\"/>\n";
    const double ly = T + 8 + 16 * legend++;
    o << "<line x1=\"" << W - R + 10 << "\" x2=\"" << W - R + 34 << "\" y1=\"" << ly << "\" y2=\""
      << ly << "\" stroke=\"" << color << "\" stroke-width=\"2\""
      << (l.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n";
    o << "<text x=\"" << W - R + 40 << "\" y=\"" << ly + 4 << "\" font-size=\"11\">"
      << HtmlEscape(l.name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string BarChart(const std::string& title, const std::string& yl,
                     const std::vector<std::string>& groups, const std::vector<std::string>& series,
                     const std::vector<std::vector<double>>& values /* [series][group] */) {
  const double W = 720, H = 340, L = 70, R = 180, T = 36, B = 50;
  double y1 = 0;
  for (const auto& s : values) {
    for (double v : s) {
      if (std::isfinite(v)) y1 = std::max(y1, v);
    }
  }
  if (y1 <= 0) y1 = 1;
  y1 *= 1.05;
  auto py = [&](double y) { return H - B - y / y1 * (H - T - B); };
  const double gw = (W - L - R) / std::max<size_t>(groups.size(), 1);
  const double bw = gw * 0.8 / std::max<size_t>(series.size(), 1);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\" aria-label=\"" << HtmlEscape(title)
    << "\">\n";
  o << "<text x=\"" << W / 2 - R / 2 << "\" y=\"20\" text-anchor=\"middle\" font-weight=\"bold\">"
    << HtmlEscape(title) << "</text>\n";
  for (int t = 0; t <= 4; ++t) {
    const double yv = y1 * t / 4;
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << Fixed(py(yv), 1) << "\" y2=\""
      << Fixed(py(yv), 1) << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << L - 6 << "\" y=\"" << Fixed(py(yv) + 4, 1)
      << "\" text-anchor=\"end\" font-size=\"11\">" << NiceTick(yv) << "</text>\n";
  }
  o << "<text transform=\"translate(16," << (T + H - B) / 2
    << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << HtmlEscape(yl) << "</text>\n";
  for (size_t g = 0; g < groups.size(); ++g) {
    const double gx = L + gw * g + gw * 0.1;
    for (size_t s = 0; s < series.size(); ++s) {
      const double v = std::isfinite(values[s][g]) ? values[s][g] : 0;
      o << "<rect x=\"" << Fixed(gx + bw * s, 1) << "\" y=\"" << Fixed(py(v), 1) << "\" width=\""
        << Fixed(bw - 1, 1) << "\" height=\"" << Fixed(H - B - py(v), 1) << "\" fill=\""
        << kPalette[s % 10] << "\"><title>"
        << HtmlEscape(series[s] + ", " + groups[g] + ": " + Fixed(v, 2)) << "</title></rect>\n";
    }
    o << "<text x=\"" << Fixed(gx + gw * 0.4, 1) << "\" y=\"" << H - B + 16
      << "\" text-anchor=\"middle\" font-size=\"11\">" << HtmlEscape(groups[g]) << "</text>\n";
  }
  for (size_t s = 0; s < series.size(); ++s) {
    const double ly = T + 8 + 16 * s;
    o << "<rect x=\"" << W - R + 10 << "\" y=\"" << ly - 6
      << "\" width=\"24\" height=\"10\" fill=\"" << kPalette[s % 10] << "\"/>\n";
    o << "<text x=\"" << W - R + 40 << "\" y=\"" << ly + 4 << "\" font-size=\"11\">"
      << HtmlEscape(series[s]) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

// Markdown / HTML share these tables: a grid of strings with a header row.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

Table RevenueTable(const Report& r) {
  Table t;
  t.header.push_back("method");
  for (const auto& n : r.row_names) t.header.push_back(n);
  t.header.push_back("total");
  const MetricDef& rev = Metric(r.objective);
  const bool ms = MultiRun(r);
  for (const auto& m : r.methods) {
    std::vector<std::string> row{m.name};
    for (int i = 0; i < RowCount(r); ++i) row.push_back(HumanStat(rev, Stat(m, i, rev), ms));
    row.push_back(HumanStat(rev, Stat(m, -1, rev), ms));
    t.rows.push_back(row);
  }
  return t;
}

Table RelativeTable(const Report& r) {
  Table t;
  const MethodResult* base = r.Find(r.baseline);
  const std::vector<std::string> keys =
      r.relative_metrics.empty()
          ? std::vector<std::string>{"revenue", "roi", "cost_per_click", "cost_per_conversion"}
          : r.relative_metrics;
  t.header = {"method"};
  for (const auto& k : keys) t.header.push_back(Metric(k).key == k ? Metric(k).label : k);
  t.header.push_back("COST (cost/budget)");
  for (const auto& m : r.methods) {
    std::vector<std::string> row{m.name};
    for (const auto& key : keys) {
      const MetricDef& d = Metric(key);
      const double pct = base ? PercentOf(Stat(m, -1, d).mean, Stat(*base, -1, d).mean) : kNaN;
      row.push_back(std::isfinite(pct) ? Fixed(pct, 1) + "%" : "n/a");
    }
    row.push_back(HumanStat(Metric("cost_over_budget"), Stat(m, -1, Metric("cost_over_budget")),
                            MultiRun(r)));
    t.rows.push_back(row);
  }
  return t;
}

Table DetailTable(const Report& r, const MethodResult& m) {
  Table t;
  t.header.push_back(r.row_label);
  const std::vector<std::string> keys = {"revenue",          "cost",        "budget",
                                         "cost_over_budget", "roi",         "cost_per_click",
                                         "clicks",           "conversions", "cost_per_conversion",
                                         "impressions",      "win_rate",    "cpm"};
  for (const auto& k : keys) t.header.push_back(Metric(k).label);
  const bool ms = m.runs.size() > 1;
  for (int i = 0; i <= RowCount(r); ++i) {
    const int row = i == RowCount(r) ? -1 : i;
    std::vector<std::string> cells{row < 0 ? "total" : r.row_names[static_cast<size_t>(row)]};
    for (const auto& k : keys) cells.push_back(HumanStat(Metric(k), Stat(m, row, Metric(k)), ms));
    t.rows.push_back(cells);
  }
  return t;
}

std::string MdTable(const Table& t) {
  std::ostringstream o;
  o << "|";
  for (const auto& h : t.header) o << " " << h << " |";
  o << "\n|";
  for (size_t i = 0; i < t.header.size(); ++i) o << (i ? "---:|" : "---|");
  o << "\n";
  for (const auto& row : t.rows) {
    o << "|";
    for (const auto& c : row) o << " " << c << " |";
    o << "\n";
  }
  return o.str();
}

std::string HtmlTable(const Table& t) {
  std::ostringstream o;
  o << "<table>\n<tr>";
  for (const auto& h : t.header) o << "<th>" << HtmlEscape(h) << "</th>";
  o << "</tr>\n";
  for (const auto& row : t.rows) {
    o << "<tr>";
    for (size_t i = 0; i < row.size(); ++i) {
      o << (i ? "<td class=\"n\">" : "<td>") << HtmlEscape(row[i]) << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
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

std::string RenderMarkdown(const Report& r) {
  std::ostringstream o;
  o << "# " << r.title << "\n\n";
  for (const auto& [k, v] : r.meta) o << "- " << k << ": " << v << "\n";
  const std::string mean_note = MultiRun(r) ? " (mean ± std over runs)" : "";
  o << "\n## " << Capitalized(Metric(r.objective).label) << " per " << r.row_label << mean_note
    << "\n\n"
    << MdTable(RevenueTable(r));
  o << "\n## Totals relative to " << r.baseline << " (" << r.baseline << " = 100%)\n\n"
    << MdTable(RelativeTable(r));
  for (const auto& m : r.methods) {
    o << "\n## " << m.name << ": every metric per " << r.row_label << mean_note << "\n\n";
    if (!m.description.empty()) o << m.description << "\n\n";
    o << MdTable(DetailTable(r, m));
  }
  if (!r.row_info.empty()) {
    o << "\n## " << r.row_label << "s\n\n";
    for (size_t i = 0; i < r.row_info.size() && i < r.row_names.size(); ++i) {
      o << "- " << r.row_names[i] << ": " << r.row_info[i].second << "\n";
    }
  }
  if (!r.notes.empty()) {
    o << "\n## Notes\n\n";
    for (const auto& n : r.notes) o << "- " << n << "\n";
  }
  return o.str();
}

std::string RenderHtml(const Report& r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    << HtmlEscape(r.title) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}\n"
    << "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px}"
    << "th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    << "svg{display:block;margin:1em 0}\n</style>\n</head>\n<body>\n";
  o << "<h1>" << HtmlEscape(r.title) << "</h1>\n<ul>\n";
  for (const auto& [k, v] : r.meta) {
    o << "<li><b>" << HtmlEscape(k) << "</b>: " << HtmlEscape(v) << "</li>\n";
  }
  o << "</ul>\n";
  const std::string mean_note = MultiRun(r) ? " (mean ± std over runs)" : "";
  const std::string objective = Capitalized(Metric(r.objective).label);
  o << "<h2>" << HtmlEscape(objective) << " per " << HtmlEscape(r.row_label) << mean_note
    << "</h2>\n"
    << HtmlTable(RevenueTable(r));
  // Revenue bars: groups = rows, series = methods.
  {
    std::vector<std::string> series;
    std::vector<std::vector<double>> vals;
    for (const auto& m : r.methods) {
      series.push_back(m.name);
      std::vector<double> v;
      for (int i = 0; i < RowCount(r); ++i) v.push_back(Stat(m, i, Metric(r.objective)).mean);
      vals.push_back(v);
    }
    o << BarChart(objective + " per " + r.row_label, Metric(r.objective).label, r.row_names, series,
                  vals);
  }
  o << "<h2>Totals relative to " << HtmlEscape(r.baseline) << "</h2>\n"
    << HtmlTable(RelativeTable(r));
  // Budget burn: one line per (method, row) for methods that recorded it.
  {
    // The primary method (solid) against the baseline (dashed): one line per row each.
    std::vector<Line> lines;
    std::vector<const MethodResult*> shown;
    if (const MethodResult* p = r.Find(r.primary)) shown.push_back(p);
    if (const MethodResult* b = r.Find(r.baseline); b && r.baseline != r.primary)
      shown.push_back(b);
    int mi = 0;
    for (const MethodResult* mp : shown) {
      const MethodResult& m = *mp;
      if (!m.runs.empty() && !m.runs[0].budget_burn.empty()) {
        const auto& burn = m.runs[0].budget_burn;
        for (size_t i = 0; i < burn.size(); ++i) {
          Line l;
          l.name = m.name + ", " + (i < r.row_names.size() ? r.row_names[i] : "");
          l.color = static_cast<int>(i);
          l.dashed = mi > 0;
          l.x.push_back(0);
          l.y.push_back(0);
          for (size_t b = 0; b < burn[i].size(); ++b) {
            l.x.push_back((b + 1) * r.burn_bucket_minutes / 60.0);
            l.y.push_back(100 * burn[i][b]);
          }
          lines.push_back(l);
        }
        ++mi;
      }
    }
    if (!lines.empty()) {
      o << "<h2>Budget burn per " << HtmlEscape(r.row_label) << "</h2>\n"
        << LineChart("Cumulative spend over the day (solid: " + r.primary +
                         ", dashed: " + r.baseline + ")",
                     "hour of the day", "% of budget spent", lines);
    }
  }
  // Learning curves.
  {
    std::vector<Line> lines;
    int c = 0;
    for (const auto& m : r.methods) {
      if (m.runs.empty() || m.runs[0].curve.empty()) continue;
      Line l;
      l.name = m.name;
      l.color = c++;
      l.y = MeanCurve(m, nullptr);
      for (size_t e = 0; e < l.y.size(); ++e) l.x.push_back(static_cast<double>(e + 1));
      lines.push_back(l);
    }
    if (!lines.empty()) {
      o << "<h2>Learning curves</h2>\n"
        << LineChart("Test revenue per " + r.curve_label + " (mean over runs)", r.curve_label,
                     "test revenue", lines);
    }
  }
  for (const auto& m : r.methods) {
    o << "<h2>" << HtmlEscape(m.name) << ": every metric per " << HtmlEscape(r.row_label)
      << mean_note << "</h2>\n";
    if (!m.description.empty()) o << "<p>" << HtmlEscape(m.description) << "</p>\n";
    o << HtmlTable(DetailTable(r, m));
  }
  if (!r.row_info.empty()) {
    o << "<h2>" << HtmlEscape(r.row_label) << "s</h2>\n<ul>\n";
    for (size_t i = 0; i < r.row_info.size() && i < r.row_names.size(); ++i) {
      o << "<li>" << HtmlEscape(r.row_names[i]) << ": " << HtmlEscape(r.row_info[i].second)
        << "</li>\n";
    }
    o << "</ul>\n";
  }
  if (!r.notes.empty()) {
    o << "<h2>Notes</h2>\n<ul>\n";
    for (const auto& n : r.notes) o << "<li>" << HtmlEscape(n) << "</li>\n";
    o << "</ul>\n";
  }
  o << "</body>\n</html>\n";
  return o.str();
}

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

Status WriteReportFiles(const Report& r, const std::string& dir) {
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
