#include "rtb/core/report_doc.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "rtb/core/text.h"

namespace rtb::doc {
namespace {

// Okabe & Ito's palette (distinguishable with the common colour-vision deficiencies), black
// last: blue, vermillion, bluish green, orange, reddish purple, sky blue, yellow.
const char* const kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#E69F00",
                                "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
constexpr int kColors = 8;

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s == "-0" || s.find_first_not_of("-0.") == std::string::npos) {
    if (s[0] == '-') s.erase(0, 1);  // "-0.00" -> "0.00"
  }
  return s;
}

// Decimals that show ticks `step` apart without rounding two of them together.
int StepDecimals(double step) {
  int d = 0;
  while (d < 6 && std::abs(step * std::pow(10, d) - std::round(step * std::pow(10, d))) > 1e-6) ++d;
  return d;
}

std::string TickLabel(double v, const Axis& a, double step) {
  if (std::abs(v) < step * 1e-9) v = 0;
  if (v == 0) {
    return a.fmt == Fmt::kPercent || a.fmt == Fmt::kPoints ? "0%"
           : a.fmt == Fmt::kRatio                          ? "0x"
                                                           : "0";
  }
  switch (a.fmt) {
    case Fmt::kPercent:
      return Fixed(100 * v, StepDecimals(100 * step)) + "%";
    case Fmt::kPoints:
      return Fixed(v, StepDecimals(step)) + "%";
    case Fmt::kRatio:
      return Fixed(v, StepDecimals(step)) + "x";
    default:
      break;
  }
  const double top = std::abs(v) >= std::abs(step) ? std::abs(v) : std::abs(step);
  if (top >= 1e6 && a.fmt != Fmt::kText) return Fixed(v / 1e6, StepDecimals(step / 1e6)) + "M";
  if (top >= 1e4 && a.fmt != Fmt::kText) return Fixed(v / 1e3, StepDecimals(step / 1e3)) + "k";
  return Grouped(v, StepDecimals(step));
}

std::string Attr(double v) { return Fixed(v, 1); }

// ---------- SVG ----------

struct Frame {
  double W = 760, H = 360, L = 84, R = 24, T = 40, B = 58;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  double PX(double x) const { return L + (x - x0) / (x1 - x0) * (W - L - R); }
  double PY(double y) const { return H - B - (y - y0) / (y1 - y0) * (H - T - B); }
};

// Legend entries below the plot, three to a row; returns the height they take.
struct LegendEntry {
  std::string name;
  const char* color;
  bool dashed, box, reference;
};
constexpr int kLegendPerRow = 3;
double LegendHeight(size_t n) {
  return n <= 1 ? 0 : 20.0 * static_cast<double>((n + kLegendPerRow - 1) / kLegendPerRow) + 6;
}
void DrawLegend(std::ostringstream& o, const Frame& f, const std::vector<LegendEntry>& es) {
  if (es.size() <= 1) return;
  const double top = f.H - LegendHeight(es.size()) + 8, col = (f.W - f.L - f.R) / kLegendPerRow;
  o << "<g class=\"legend\">\n";
  for (size_t i = 0; i < es.size(); ++i) {
    const double x = f.L + col * static_cast<double>(i % kLegendPerRow);
    const double y = top + 20.0 * static_cast<double>(i / kLegendPerRow);
    if (es[i].box) {
      o << "<rect x=\"" << Attr(x) << "\" y=\"" << Attr(y - 6) << "\" width=\"22\" height=\"11\" "
        << "fill=\"" << es[i].color << "\"/>";
    } else {
      o << "<line x1=\"" << Attr(x) << "\" x2=\"" << Attr(x + 22) << "\" y1=\"" << Attr(y)
        << "\" y2=\"" << Attr(y) << "\" stroke=\"" << es[i].color << "\" stroke-width=\""
        << (es[i].reference ? 1.5 : 2.5) << "\""
        << (es[i].dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>";
    }
    o << "<text x=\"" << Attr(x + 28) << "\" y=\"" << Attr(y + 4) << "\" font-size=\"12\">"
      << HtmlEscape(es[i].name) << "</text>\n";
  }
  o << "</g>\n";
}

void Open(std::ostringstream& o, const Frame& f, const Chart& c) {
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" << f.W << "\" height=\""
    << f.H << "\" viewBox=\"0 0 " << f.W << " " << f.H << "\" role=\"img\" aria-label=\""
    << HtmlEscape(c.title) << "\" font-family=\"sans-serif\">\n"
    << "<text x=\"" << Attr((f.L + f.W - f.R) / 2) << "\" y=\"22\" text-anchor=\"middle\" "
    << "font-size=\"15\" font-weight=\"bold\">" << HtmlEscape(c.title) << "</text>\n";
}

void YAxis(std::ostringstream& o, const Frame& f, const Axis& a, const std::vector<double>& ticks) {
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (double t : ticks) {
    o << "<line x1=\"" << f.L << "\" x2=\"" << f.W - f.R << "\" y1=\"" << Attr(f.PY(t))
      << "\" y2=\"" << Attr(f.PY(t)) << "\" stroke=\"#e3e3e3\"/>"
      << "<text class=\"tick\" x=\"" << f.L - 8 << "\" y=\"" << Attr(f.PY(t) + 4)
      << "\" text-anchor=\"end\" font-size=\"12\">" << HtmlEscape(TickLabel(t, a, step))
      << "</text>\n";
  }
  o << "<text class=\"axis-title\" transform=\"translate(18," << Attr((f.T + f.H - f.B) / 2)
    << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">" << HtmlEscape(a.title)
    << "</text>\n";
}

void XTitle(std::ostringstream& o, const Frame& f, const Axis& a, double legend_h) {
  o << "<text class=\"axis-title\" x=\"" << Attr((f.L + f.W - f.R) / 2) << "\" y=\""
    << Attr(f.H - legend_h - 12) << "\" text-anchor=\"middle\" font-size=\"13\">"
    << HtmlEscape(a.title) << "</text>\n";
}

std::string PointTip(const Series& s, const Chart& c, double x, double y) {
  return s.name + ": " +
         Format(Value::Num(y), c.y.fmt == Fmt::kText ? Fmt::kNumber : c.y.fmt,
                c.y.fmt == Fmt::kCount ? 0 : 2) +
         " at " + c.x.title + " " + Grouped(x, x == std::round(x) ? 0 : 2);
}

std::string LineChartSvg(const Chart& c) {
  Frame f;
  double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY;
  for (const Series& s : c.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i]) || !std::isfinite(s.x[i])) continue;
      xl = std::min(xl, s.x[i]), xh = std::max(xh, s.x[i]);
      yl = std::min(yl, s.y[i]), yh = std::max(yh, s.y[i]);
    }
  }
  for (const Reference& r : c.references) yl = std::min(yl, r.y), yh = std::max(yh, r.y);
  if (!std::isfinite(xl)) xl = 0, xh = 1;
  if (!std::isfinite(yl)) yl = 0, yh = 1;
  yl = std::min(yl, 0.0);
  if (std::isfinite(c.x.min)) xl = c.x.min;
  if (std::isfinite(c.x.max)) xh = std::max(xh, c.x.max);
  if (std::isfinite(c.y.min)) yl = c.y.min;
  if (std::isfinite(c.y.max)) yh = std::max(yh, c.y.max);
  const std::vector<double> yt = NiceTicks(yl, yh, 5, c.y.whole);
  const std::vector<double> xt = NiceTicks(xl, xh, 8, c.x.whole);
  f.y0 = yt.front(), f.y1 = yt.back();
  // The x range is the data's (or the fixed ends), ticks inside it.
  f.x0 = std::isfinite(c.x.min) ? c.x.min : xl;
  f.x1 = std::max(xh, f.x0 + 1e-9);
  if (f.x1 <= f.x0) f.x1 = f.x0 + 1;
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    legend.push_back({s.name, kPalette[(s.color >= 0 ? s.color : static_cast<int>(i)) % kColors],
                      s.dashed, false, false});
  }
  for (const Reference& r : c.references) legend.push_back({r.name, "#444444", true, false, true});
  const double lh = LegendHeight(legend.size());
  const Frame p = f;  // the plot; the legend takes a band below it
  f.H += lh;
  std::ostringstream o;
  Open(o, f, c);
  YAxis(o, p, c.y, yt);
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 1;
  for (double t : xt) {
    if (t < p.x0 - 1e-9 || t > p.x1 + 1e-9) continue;
    o << "<line x1=\"" << Attr(p.PX(t)) << "\" x2=\"" << Attr(p.PX(t)) << "\" y1=\"" << p.H - p.B
      << "\" y2=\"" << p.H - p.B + 5 << "\" stroke=\"#888\"/>"
      << "<text class=\"tick\" x=\"" << Attr(p.PX(t)) << "\" y=\"" << p.H - p.B + 19
      << "\" text-anchor=\"middle\" font-size=\"12\">" << HtmlEscape(TickLabel(t, c.x, xstep))
      << "</text>\n";
  }
  XTitle(o, f, c.x, lh);
  o << "<rect x=\"" << p.L << "\" y=\"" << p.T << "\" width=\"" << p.W - p.L - p.R << "\" height=\""
    << p.H - p.T - p.B << "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (const Reference& r : c.references) {
    o << "<line class=\"reference\" x1=\"" << p.L << "\" x2=\"" << p.W - p.R << "\" y1=\""
      << Attr(p.PY(r.y)) << "\" y2=\"" << Attr(p.PY(r.y))
      << "\" stroke=\"#444444\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"><title>"
      << HtmlEscape(r.name + ": " + Format(Value::Num(r.y), c.y.fmt, 2)) << "</title></line>\n";
  }
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    const char* color = legend[i].color;
    std::string pts;
    size_t n = 0;
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      if (!std::isfinite(s.y[k]) || !std::isfinite(s.x[k])) continue;
      pts += Attr(p.PX(s.x[k])) + "," + Attr(p.PY(s.y[k])) + " ";
      ++n;
    }
    if (n >= 2) {
      o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2.5\""
        << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"" << pts << "\"><title>"
        << HtmlEscape(s.name) << "</title></polyline>\n";
    }
    if (s.markers || n == 1) {
      for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
        if (!std::isfinite(s.y[k]) || !std::isfinite(s.x[k])) continue;
        o << "<circle cx=\"" << Attr(p.PX(s.x[k])) << "\" cy=\"" << Attr(p.PY(s.y[k]))
          << "\" r=\"3.5\" fill=\"" << color << "\"><title>"
          << HtmlEscape(PointTip(s, c, s.x[k], s.y[k])) << "</title></circle>\n";
      }
    }
  }
  DrawLegend(o, f, legend);
  o << "</svg>\n";
  return o.str();
}

std::string BarChartSvg(const Chart& c) {
  Frame f;
  double yh = 0, yl = 0;
  for (const Series& s : c.series) {
    for (double v : s.y) {
      if (std::isfinite(v)) yh = std::max(yh, v), yl = std::min(yl, v);
    }
  }
  for (const Reference& r : c.references) yh = std::max(yh, r.y);
  if (std::isfinite(c.y.max)) yh = std::max(yh, c.y.max);
  const std::vector<double> yt = NiceTicks(yl, yh, 5, c.y.whole);
  f.y0 = yt.front(), f.y1 = yt.back();
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    legend.push_back({s.name, kPalette[(s.color >= 0 ? s.color : static_cast<int>(i)) % kColors],
                      false, true, false});
  }
  for (const Reference& r : c.references) legend.push_back({r.name, "#444444", true, false, true});
  const double lh = LegendHeight(legend.size());
  f.H += lh;
  Frame p = f;
  p.H = f.H - lh;
  std::ostringstream o;
  Open(o, f, c);
  YAxis(o, p, c.y, yt);
  const size_t groups = std::max<size_t>(c.categories.size(), 1);
  const double gw = (p.W - p.L - p.R) / static_cast<double>(groups);
  const double bw = gw * 0.8 / static_cast<double>(std::max<size_t>(c.series.size(), 1));
  for (size_t g = 0; g < c.categories.size(); ++g) {
    const double gx = p.L + gw * static_cast<double>(g) + gw * 0.1;
    for (size_t s = 0; s < c.series.size(); ++s) {
      const double v = g < c.series[s].y.size() ? c.series[s].y[g] : kNone;
      const std::string tip = c.series[s].name + ", " + c.categories[g] + ": " +
                              Format(Value::Num(v), c.y.fmt, c.y.fmt == Fmt::kCount ? 0 : 2);
      if (!std::isfinite(v)) {
        o << "<text x=\"" << Attr(gx + bw * (static_cast<double>(s) + 0.5)) << "\" y=\""
          << Attr(p.PY(0) - 4) << "\" text-anchor=\"middle\" font-size=\"10\">n/a<title>"
          << HtmlEscape(tip) << "</title></text>\n";
        continue;
      }
      const double top = std::min(p.PY(v), p.PY(0)), h = std::abs(p.PY(v) - p.PY(0));
      o << "<rect x=\"" << Attr(gx + bw * static_cast<double>(s)) << "\" y=\"" << Attr(top)
        << "\" width=\"" << Attr(bw - 2) << "\" height=\"" << Attr(h) << "\" fill=\""
        << legend[s].color << "\"><title>" << HtmlEscape(tip) << "</title></rect>\n";
    }
    o << "<text class=\"tick\" x=\"" << Attr(gx + gw * 0.4) << "\" y=\"" << p.H - p.B + 19
      << "\" text-anchor=\"middle\" font-size=\"12\">" << HtmlEscape(c.categories[g])
      << "</text>\n";
  }
  for (const Reference& r : c.references) {
    o << "<line class=\"reference\" x1=\"" << p.L << "\" x2=\"" << p.W - p.R << "\" y1=\""
      << Attr(p.PY(r.y)) << "\" y2=\"" << Attr(p.PY(r.y))
      << "\" stroke=\"#444444\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n";
  }
  o << "<line x1=\"" << p.L << "\" x2=\"" << p.W - p.R << "\" y1=\"" << Attr(p.PY(0)) << "\" y2=\""
    << Attr(p.PY(0)) << "\" stroke=\"#888\"/>\n";
  XTitle(o, f, c.x, lh);
  DrawLegend(o, f, legend);
  o << "</svg>\n";
  return o.str();
}

// Diverging blue (negative) - white - orange (positive): readable with colour-vision
// deficiencies (no red against green).
std::string GridColor(double v, double lo, double hi) {
  if (!std::isfinite(v)) return "#f3f3f3";
  double t = 0;
  if (v < 0 && lo < 0) t = -std::min(1.0, v / lo);
  if (v > 0 && hi > 0) t = std::min(1.0, v / hi);
  const int neg[3] = {33, 102, 172}, pos[3] = {230, 97, 1};
  const int* end = t < 0 ? neg : pos;
  const double a = std::abs(t) * 0.85;
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(255 + (end[0] - 255) * a),
                static_cast<int>(255 + (end[1] - 255) * a),
                static_cast<int>(255 + (end[2] - 255) * a));
  return buf;
}

bool Numeric(const Column& c) { return c.fmt != Fmt::kText; }

// A text line in HTML: escaped, and `code` spans (the Markdown rendering keeps them as they
// are) as <code>.
std::string Inline(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t open = text.find('`', i);
    const size_t close = open == std::string::npos ? open : text.find('`', open + 1);
    if (close == std::string::npos) {
      out += HtmlEscape(text.substr(i));
      break;
    }
    out += HtmlEscape(text.substr(i, open - i)) + "<code>" +
           HtmlEscape(text.substr(open + 1, close - open - 1)) + "</code>";
    i = close + 1;
  }
  return out;
}

std::string MdCell(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '\n')
      out += ' ';
    else
      out += ch;
  }
  return out;
}

void HtmlTable(std::ostringstream& o, const Table& t) {
  o << "<div class=\"tw\"><table>\n";
  if (!t.caption.empty()) o << "<caption>" << HtmlEscape(t.caption) << "</caption>\n";
  o << "<thead><tr>";
  for (const Column& c : t.columns) {
    o << (Numeric(c) ? "<th class=\"n\">" : "<th>") << HtmlEscape(c.title) << "</th>";
  }
  o << "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    o << "<tr>";
    for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i) {
      const Column& c = t.columns[i];
      o << (Numeric(c) && row[i].text.empty() ? "<td class=\"n\">" : "<td>")
        << HtmlEscape(Format(row[i], c.fmt, c.decimals)) << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</tbody></table></div>\n";
}

void MdTable(std::ostringstream& o, const Table& t) {
  if (!t.caption.empty()) o << "**" << t.caption << "**\n\n";
  o << "|";
  for (const Column& c : t.columns) o << " " << MdCell(c.title) << " |";
  o << "\n|";
  for (const Column& c : t.columns) o << (Numeric(c) ? "---:|" : "---|");
  o << "\n";
  for (const auto& row : t.rows) {
    o << "|";
    for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i) {
      o << " " << MdCell(Format(row[i], t.columns[i].fmt, t.columns[i].decimals)) << " |";
    }
    o << "\n";
  }
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

std::string Grouped(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  std::string s = Fixed(v, decimals);
  const bool neg = !s.empty() && s[0] == '-';
  const size_t start = neg ? 1 : 0;
  size_t end = s.find('.');
  if (end == std::string::npos) end = s.size();
  std::string out(s, 0, start);
  for (size_t i = start; i < end; ++i) {
    out += s[i];
    const size_t left = end - i - 1;  // digits still to come before the point
    if (left > 0 && left % 3 == 0) out += ',';
  }
  out.append(s, end, std::string::npos);
  return out;
}

std::string Format(const Value& x, Fmt fmt, int decimals) {
  if (!x.text.empty()) return x.text;
  auto one = [&](double v) -> std::string {
    if (!std::isfinite(v)) return "n/a";
    switch (fmt) {
      case Fmt::kCount:
        return Grouped(std::round(v), 0);
      case Fmt::kMoney:
        return Grouped(v, 2);
      case Fmt::kPercent:
        return Grouped(100 * v, decimals) + "%";
      case Fmt::kPoints:
        return Grouped(v, decimals) + "%";
      case Fmt::kRatio:
        return Fixed(v, decimals) + "x";
      case Fmt::kText:
      case Fmt::kNumber:
        break;
    }
    return Grouped(v, decimals);
  };
  std::string s = one(x.v);
  if (std::isfinite(x.v) && std::isfinite(x.sd)) s += " ± " + one(x.sd);
  return s;
}

std::vector<double> NiceTicks(double lo, double hi, int target, bool whole) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (hi < lo) std::swap(lo, hi);
  if (hi - lo < 1e-12) hi = lo + (whole ? 1 : std::max(1e-9, std::abs(lo) * 0.1 + 1e-9));
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (whole && m == 2.5) continue;
    if (m * mag >= raw * (1 - 1e-9)) {
      step = m * mag;
      break;
    }
  }
  if (whole) step = std::max(1.0, std::round(step));
  const double first = std::floor(lo / step + 1e-9) * step;
  const double last = std::ceil(hi / step - 1e-9) * step;
  std::vector<double> ticks;
  for (int i = 0; first + step * i <= last + step * 1e-6 && i < 100; ++i) {
    double t = first + step * i;
    t = std::round(t / step) * step;  // no 0.30000000000000004
    if (std::abs(t) < step * 1e-9) t = 0;
    ticks.push_back(t);
  }
  if (ticks.size() < 2) ticks.push_back(ticks.empty() ? first + step : ticks.back() + step);
  return ticks;
}

std::string ShownPath(const std::string& path, const std::string& base) {
  namespace fs = std::filesystem;
  if (path.empty()) return path;
  const fs::path p = fs::path(path).lexically_normal();
  if (p.is_relative()) return p.string();
  std::error_code ec;
  const fs::path b = base.empty() ? fs::current_path(ec) : fs::path(base).lexically_normal();
  if (!ec) {
    const fs::path rel = p.lexically_relative(b);
    if (!rel.empty() && *rel.begin() != "..") return rel.string();
  }
  // Outside the base: the last two components only.
  const fs::path parent = p.parent_path().filename();
  return parent.empty() ? p.filename().string() : (parent / p.filename()).string();
}

std::string ShownPaths(const std::string& text, const std::string& base) {
  namespace fs = std::filesystem;
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const bool starts =
        text[i] == '/' && i + 1 < text.size() &&
        std::string_view(" /\t\n").find(text[i + 1]) == std::string_view::npos &&
        (i == 0 || std::string_view(" (\"'=[\t\n").find(text[i - 1]) != std::string_view::npos);
    size_t j = i;
    if (starts) {
      while (j < text.size() &&
             std::string_view(" \t\n,;)\"']").find(text[j]) == std::string_view::npos)
        ++j;
    }
    // A path of this machine: two components or more, and it (or its folder) exists. Not
    // "/ 1000", not a URL path such as "/openrtb2/bid".
    const std::string token = text.substr(i, j - i);
    std::error_code ec;
    const bool path = starts && token.find('/', 1) != std::string::npos &&
                      (fs::exists(token, ec) || fs::exists(fs::path(token).parent_path(), ec));
    if (!path) {
      out += text[i++];
      continue;
    }
    out += ShownPath(token, base);
    i = j;
  }
  return out;
}

std::string RenderHtml(const Document& d) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
    << HtmlEscape(d.title) << "</title>\n<style>\n"
    << "body{font-family:system-ui,sans-serif;max-width:1160px;margin:2em auto;padding:0 1em;"
       "color:#222;line-height:1.45}\n"
    << "h1{font-size:1.6em}h2{margin-top:1.8em;border-bottom:1px solid #ddd}\n"
    << ".tw{overflow-x:auto;margin:1em 0}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;font-size:14px}"
       "th{background:#f3f3f3}.n{text-align:right;font-variant-numeric:tabular-nums}"
       "caption{text-align:left;font-weight:bold;padding:4px 0}\n"
    << "dl.kv{display:grid;grid-template-columns:max-content auto;gap:2px 14px}"
       "dl.kv dt{font-weight:bold}dl.kv dd{margin:0}\n"
    << "svg.chart{display:block;margin:1em 0;max-width:100%;height:auto}\n"
    << "table.grid td{text-align:right;font-variant-numeric:tabular-nums;min-width:3.5em}"
       ".gw{display:inline-block;vertical-align:top;margin:0 14px 10px 0}"
       "code{background:#f3f3f3;padding:0 3px}\n"
    << "</style>\n</head>\n<body>\n<h1>" << HtmlEscape(d.title) << "</h1>\n";
  for (const Block& b : d.blocks) {
    std::visit(Overloaded{
                   [&](const Heading& h) {
                     const int l = std::clamp(h.level, 2, 4);
                     o << "<h" << l << ">" << HtmlEscape(h.text) << "</h" << l << ">\n";
                   },
                   [&](const Paragraph& p) { o << "<p>" << Inline(p.text) << "</p>\n"; },
                   [&](const KeyValues& kv) {
                     o << "<dl class=\"kv\">\n";
                     for (const auto& [k, v] : kv.items) {
                       o << "<dt>" << HtmlEscape(k) << "</dt><dd>" << Inline(v) << "</dd>\n";
                     }
                     o << "</dl>\n";
                   },
                   [&](const Bullets& bl) {
                     o << "<ul>\n";
                     for (const auto& i : bl.items) o << "<li>" << Inline(i) << "</li>\n";
                     o << "</ul>\n";
                   },
                   [&](const Table& t) { HtmlTable(o, t); },
                   [&](const Chart& c) {
                     o << (c.kind == Chart::Kind::kBar ? BarChartSvg(c) : LineChartSvg(c));
                   },
                   [&](const Grid& g) {
                     o << "<div class=\"gw\"><table class=\"grid\">\n";
                     if (!g.caption.empty())
                       o << "<caption>" << HtmlEscape(g.caption) << "</caption>\n";
                     o << "<thead><tr><th>" << HtmlEscape(g.row_title + " \\ " + g.column_title)
                       << "</th>";
                     for (const auto& c : g.columns)
                       o << "<th class=\"n\">" << HtmlEscape(c) << "</th>";
                     o << "</tr></thead>\n<tbody>\n";
                     for (size_t r = 0; r < g.rows.size(); ++r) {
                       o << "<tr><th>" << HtmlEscape(g.rows[r]) << "</th>";
                       for (size_t c = 0; c < g.columns.size(); ++c) {
                         const double v =
                             r < g.values.size() && c < g.values[r].size() ? g.values[r][c] : kNone;
                         o << "<td style=\"background:" << GridColor(v, g.lo, g.hi) << "\">"
                           << HtmlEscape(Format(Value::Num(v), Fmt::kNumber, g.decimals))
                           << "</td>";
                       }
                       o << "</tr>\n";
                     }
                     o << "</tbody></table></div>\n";
                   },
                   [&](const Link& l) {
                     o << "<p>" << HtmlEscape(l.before) << "<a href=\"" << HtmlEscape(l.href)
                       << "\">" << HtmlEscape(l.text) << "</a></p>\n";
                   },
               },
               b);
  }
  o << "</body>\n</html>\n";
  return o.str();
}

std::string RenderMarkdown(const Document& d) {
  std::ostringstream o;
  o << "# " << d.title << "\n";
  for (const Block& b : d.blocks) {
    o << "\n";
    std::visit(
        Overloaded{
            [&](const Heading& h) {
              o << std::string(static_cast<size_t>(std::clamp(h.level, 2, 4)), '#') << " " << h.text
                << "\n";
            },
            [&](const Paragraph& p) { o << p.text << "\n"; },
            [&](const KeyValues& kv) {
              for (const auto& [k, v] : kv.items) o << "- " << k << ": " << v << "\n";
            },
            [&](const Bullets& bl) {
              for (const auto& i : bl.items) o << "- " << i << "\n";
            },
            [&](const Table& t) { MdTable(o, t); },
            [&](const Chart& c) { o << "(chart in report.html: " << c.title << ")\n"; },
            [&](const Grid& g) {
              Table t;
              t.caption = g.caption;
              t.columns.push_back({g.row_title + " \\ " + g.column_title, Fmt::kText});
              for (const auto& c : g.columns) t.columns.push_back({c, Fmt::kNumber, g.decimals});
              for (size_t r = 0; r < g.rows.size(); ++r) {
                std::vector<Value> row{Value::Text(g.rows[r])};
                for (size_t c = 0; c < g.columns.size(); ++c) {
                  row.push_back(Value::Num(
                      r < g.values.size() && c < g.values[r].size() ? g.values[r][c] : kNone));
                }
                t.rows.push_back(row);
              }
              MdTable(o, t);
            },
            [&](const Link& l) { o << l.before << "[" << l.text << "](" << l.href << ")\n"; },
        },
        b);
  }
  return o.str();
}

}  // namespace rtb::doc
