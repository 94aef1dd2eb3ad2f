#include "demo_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "rtb/core/text.h"

namespace rtb::demo {

using nlohmann::json;

namespace {

std::string Fmt(double v, int prec = 2) {
  if (!std::isfinite(v)) return "n/a";
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

}  // namespace

std::string RenderDemoMarkdown(const json& r) {
  std::ostringstream o;
  o << "# " << r["title"].get<std::string>() << "\n\n";
  for (const auto& line : r["about"]) o << "- " << line.get<std::string>() << "\n";
  o << "\n## Learned (live) vs manual, per day\n\n"
    << "| day | learned revenue | manual revenue | ratio | learned COST | manual COST | learned "
       "ROI | manual ROI | learned CPC | manual CPC | learned clicks | manual clicks |\n"
    << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& d : r["days"]) {
    const auto& l = d["learned"];
    const auto& m = d["manual"];
    auto pct = [](const json& v) {
      return v.is_null() ? std::string("n/a") : Fmt(100.0 * v.get<double>(), 1) + "%";
    };
    auto num = [](const json& v) {
      return v.is_null() ? std::string("n/a") : Fmt(v.get<double>());
    };
    o << "| " << d["day"].get<int64_t>() << " | " << Fmt(l["revenue"].get<double>()) << " | "
      << Fmt(m["revenue"].get<double>()) << " | " << num(d["revenue_ratio"]) << "x | "
      << pct(l["cost_over_budget"]) << " | " << pct(m["cost_over_budget"]) << " | " << num(l["roi"])
      << " | " << num(m["roi"]) << " | " << num(l["cost_per_click"]) << " | "
      << num(m["cost_per_click"]) << " | " << Fmt(l["clicks"].get<double>(), 1) << " | "
      << Fmt(m["clicks"].get<double>(), 1) << " |\n";
  }
  o << "\nPer agent (learned / manual revenue, COST):\n\n| day | agent | learned revenue | manual "
       "revenue | learned COST | manual COST |\n|---|---|---|---|---|---|\n";
  for (const auto& d : r["days"]) {
    for (size_t i = 0; i < d["learned"]["by_agent"].size(); ++i) {
      const auto& l = d["learned"]["by_agent"][i];
      const auto& m = d["manual"]["by_agent"][i];
      auto pct = [](const json& v) {
        return v.is_null() ? std::string("n/a") : Fmt(100.0 * v.get<double>(), 1) + "%";
      };
      o << "| " << d["day"].get<int64_t>() << " | " << i + 1 << " | "
        << Fmt(l["revenue"].get<double>()) << " | " << Fmt(m["revenue"].get<double>()) << " | "
        << pct(l["cost_over_budget"]) << " | " << pct(m["cost_over_budget"]) << " |\n";
    }
  }
  o << "\n## Action tables served (a[i][j], version = 1 + day x T + step)\n\n| day:step | version "
       "| table (agent rows, cluster columns) | policy lag (ms) | learner = exchange |\n"
       "|---|---|---|---|---|\n";
  for (const auto& d : r["days"]) {
    for (const auto& s : d["steps"]) {
      o << "| " << d["day"].get<int64_t>() << ":" << s["step"].get<int>() << " | "
        << s["policy_version"].get<uint64_t>() << " | ";
      for (const auto& row : s["table"]) {
        o << "[";
        for (size_t j = 0; j < row.size(); ++j) o << (j ? " " : "") << Fmt(row[j].get<double>());
        o << "]";
      }
      o << " | "
        << (s["policy_lag_ms"].is_null() ? "n/a" : Fmt(s["policy_lag_ms"].get<double>(), 1))
        << " | " << (s["learner_matches_exchange"].get<bool>() ? "yes" : "NO") << " |\n";
    }
  }
  const auto& lag = r["policy_lag_ms"];
  o << "\n## Policy lag\n\nFrom the exchange's step-end marker to the bidder serving the next "
       "table: p50 "
    << Fmt(lag["p50"].get<double>(), 1) << " ms, p90 " << Fmt(lag["p90"].get<double>(), 1)
    << " ms, max " << Fmt(lag["max"].get<double>(), 1) << " ms over " << lag["n"].get<int>()
    << " steps.\n";
  const auto& lc = r["loop_check"];
  o << "\n## Loop bookkeeping\n\n- transitions in the replay store: "
    << lc["transitions"].get<int64_t>() << " (expected "
    << lc["expected_transitions"].get<int64_t>() << "), missing steps: " << lc["missing"].size()
    << ", duplicated steps: " << lc["duplicated"].size()
    << "\n- per-step cost and revenue, learner vs exchange: "
    << (lc["totals_match"].get<bool>() ? "equal in every step" : "DIFFER (see report.json)")
    << "\n";
  if (!r["chaos"].empty()) {
    o << "\n## Chaos\n\n";
    for (const auto& c : r["chaos"]) o << "- " << c.get<std::string>() << "\n";
  }
  return o.str();
}

std::string RenderDemoHtml(const json& r, const std::string& md) {
  // The revenue chart (SVG), then the Markdown body as preformatted text sections.
  std::vector<double> learned, manual;
  for (const auto& d : r["days"]) {
    learned.push_back(d["learned"]["revenue"].get<double>());
    manual.push_back(d["manual"]["revenue"].get<double>());
  }
  double hi = 1;
  for (double v : learned) hi = std::max(hi, v);
  for (double v : manual) hi = std::max(hi, v);
  const double W = 640, H = 260, pad = 40;
  auto x = [&](size_t k) {
    return pad + (learned.size() > 1 ? (W - 2 * pad) * k / (learned.size() - 1.0) : 0);
  };
  auto y = [&](double v) { return H - pad - (H - 2 * pad) * v / (hi * 1.1); };
  auto line = [&](const std::vector<double>& v, const char* color) {
    std::string s =
        "<polyline fill='none' stroke-width='2' stroke='" + std::string(color) + "' points='";
    for (size_t k = 0; k < v.size(); ++k) s += Fmt(x(k), 1) + "," + Fmt(y(v[k]), 1) + " ";
    s += "'/>";
    for (size_t k = 0; k < v.size(); ++k) {
      s += "<circle r='3' fill='" + std::string(color) + "' cx='" + Fmt(x(k), 1) + "' cy='" +
           Fmt(y(v[k]), 1) + "'/>";
    }
    return s;
  };
  std::string svg = "<svg width='" + Fmt(W, 0) + "' height='" + Fmt(H, 0) +
                    "' xmlns='http://www.w3.org/2000/svg'><rect width='100%' height='100%' "
                    "fill='white' stroke='#ccc'/>";
  svg += line(manual, "#888") + line(learned, "#1a7f37");
  svg += "<text x='" + Fmt(pad, 0) +
         "' y='20' font-size='12'>daily revenue: learned (green, "
         "live loop) vs manual (grey, same traffic)</text>";
  for (size_t k = 0; k < learned.size(); ++k) {
    svg += "<text font-size='11' x='" + Fmt(x(k) - 10, 1) + "' y='" + Fmt(H - 12, 0) + "'>day " +
           std::to_string(k) + "</text>";
  }
  svg += "</svg>";
  std::string h = "<!doctype html><html><head><meta charset='utf-8'><title>";
  h += HtmlEscape(r["title"].get<std::string>());
  h += "</title><style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}pre{"
       "background:#f6f8fa;padding:1em;overflow-x:auto}</style></head><body><h1>";
  h += HtmlEscape(r["title"].get<std::string>());
  h += "</h1>" + svg + "<pre>";
  h += HtmlEscape(md);
  h += "</pre></body></html>\n";
  return h;
}

}  // namespace rtb::demo
