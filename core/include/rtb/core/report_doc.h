// The one renderer of every report the engine writes (simulate, train, replay, demo): a report
// is first built as a Document (headings, paragraphs, key/value lists, typed tables, charts,
// heat-map grids, links), then rendered to HTML (real tables, inline SVG charts, no script) and
// to Markdown from that same Document. Formatting lives here, once: one format per column
// (counts as integers with thousands separators, money with its currency, ratios as x,
// shares as %), "n/a" where a value does not exist.
//
// Charts are SVG drawn here rather than a JavaScript charting library: a report is a static
// file that opens offline, prints, attaches to an e-mail and stays byte-identical for the same
// data, and the charts a report needs (lines, bars, reference lines, a heat map) are few.
// Axes get round ticks (1, 2, 2.5 or 5 times a power of ten), a title with its unit, a
// legend when there is more than one series, and every point a tooltip (<title>).
// Colours: the Okabe-Ito palette, told apart with colour-blindness.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace rtb::doc {

inline constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// How a column's or an axis's numbers read.
enum class Fmt {
  kText,     // the cell's text as is
  kCount,    // 1,234 (rounded to a whole number)
  kMoney,    // 1,234.56 (the currency goes in the column title)
  kNumber,   // 1,234.57 with `decimals` decimals
  kPercent,  // a share: 0.123 -> 12.3%
  kPoints,   // a value already in percent: 12.3 -> 12.3%
  kRatio,    // 2.31x
};

// One cell: a number (with an optional spread, "± sd") or a text. NaN: "n/a".
struct Value {
  double v = kNone;
  double sd = kNone;
  std::string text;  // if not empty, shown instead of the number
  static Value Text(std::string t) {
    Value x;
    x.text = std::move(t);
    return x;
  }
  static Value Num(double v, double sd = kNone) {
    Value x;
    x.v = v;
    x.sd = sd;
    return x;
  }
};

struct Column {
  std::string title;
  Fmt fmt = Fmt::kText;
  int decimals = 2;  // kNumber, kPercent, kPoints, kRatio
};

struct Table {
  std::string caption;  // optional
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;
};

struct Axis {
  std::string title;  // with its unit: "revenue (USD)", "hour of the day"
  Fmt fmt = Fmt::kNumber;
  double min = kNone, max = kNone;  // fixed ends; NaN = from the data (min 0 on y)
  bool whole = false;               // ticks on whole numbers only (episodes, days)
};

struct Series {
  std::string name;
  std::vector<double> x, y;
  bool dashed = false;
  int color = -1;       // palette index; -1 = the series' position
  bool markers = true;  // a dot (with a tooltip) on every point; off for dense series
};

// A horizontal line across the plot: a budget, a baseline's value.
struct Reference {
  std::string name;
  double y = 0;
};

struct Chart {
  enum class Kind { kLine, kBar };
  Kind kind = Kind::kLine;
  std::string title;
  Axis x, y;
  std::vector<Series> series;           // bars: one series per legend entry, y per category
  std::vector<std::string> categories;  // bars only: the groups along x
  std::vector<Reference> references;
};

// A grid of numbers coloured by value (an action table: agents x clusters).
struct Grid {
  std::string caption;
  std::string row_title, column_title;
  std::vector<std::string> rows, columns;
  std::vector<std::vector<double>> values;
  double lo = -1, hi = 1;  // the colour scale's ends (blue .. white .. orange)
  int decimals = 2;
};

struct Heading {
  int level = 2;
  std::string text;
};
struct Paragraph {
  std::string text;
};
struct KeyValues {
  std::vector<std::pair<std::string, std::string>> items;
};
struct Bullets {
  std::vector<std::string> items;
};
struct Link {
  std::string text, href;  // href relative to the report's folder
  std::string before;      // text before the link in the same line
};

using Block = std::variant<Heading, Paragraph, KeyValues, Bullets, Table, Chart, Grid, Link>;

struct Document {
  std::string title;
  std::vector<Block> blocks;

  template <typename B>
  B& Add(B b) {
    blocks.emplace_back(std::move(b));
    return std::get<B>(blocks.back());
  }
};

std::string RenderHtml(const Document& d);
std::string RenderMarkdown(const Document& d);

// One value as a cell shows it ("1,234.56", "12.3%", "2.31x", "n/a"; with " ± sd").
std::string Format(const Value& v, Fmt fmt, int decimals = 2);
// 1234567.891 -> "1,234,567.89" (decimals 2).
std::string Grouped(double v, int decimals);

// Round axis ticks covering [lo, hi]: 1, 2, 2.5 or 5 times a power of ten apart, about
// `target` of them, the first <= lo and the last >= hi. whole: steps of at least 1.
std::vector<double> NiceTicks(double lo, double hi, int target = 5, bool whole = false);

// A path as a report shows it: relative to `base` (the working directory by default) when it
// lies under it, else its last two components. A report never carries a machine's absolute
// path.
std::string ShownPath(const std::string& path, const std::string& base = "");
// Every absolute path of this machine in a text (a word starting with '/' after a space, a
// bracket, a quote or '=', or at the start, with two components or more, that exists or whose
// folder exists) replaced by its ShownPath.
std::string ShownPaths(const std::string& text, const std::string& base = "");

}  // namespace rtb::doc
