#include "rtb/core/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "rtb/core/report_doc.h"

namespace rtb {
namespace {

Outcome Make(double revenue, double cost, double budget, double clicks) {
  Outcome o;
  o.revenue = Micros::FromUnits(revenue);
  o.cost = Micros::FromUnits(cost);
  o.budget = Micros::FromUnits(budget);
  o.clicks = clicks;
  o.conversions = clicks / 10;
  o.impressions = 100;
  o.auctions = 400;
  return o;
}

Report Sample() {
  Report r;
  r.kind = "test";
  r.title = "t";
  r.row_names = {"agent 1", "agent 2"};
  r.baseline = "manual";
  r.primary = "learned";
  RunResult m;
  m.rows = {Make(10, 5, 5, 10), Make(30, 10, 10, 20)};
  for (auto& o : m.rows) m.total += o;
  RunResult l1 = m, l2 = m;
  l1.rows[0] = Make(20, 5, 5, 20);
  l2.rows[0] = Make(40, 5, 5, 40);
  l1.total = l1.rows[0];
  l1.total += l1.rows[1];
  l2.total = l2.rows[0];
  l2.total += l2.rows[1];
  l1.curve = {1, 2, 3};
  l2.curve = {3, 4, 5};
  r.methods.push_back({"manual", "baseline", {m}});
  r.methods.push_back({"learned", "two seeds", {l1, l2}});
  return r;
}

TEST(Metrics, RatiosAndNaNOnZero) {
  const Outcome o = Make(30, 10, 20, 5);
  EXPECT_DOUBLE_EQ(Roi(o), 3.0);
  EXPECT_DOUBLE_EQ(CostPerClick(o), 2.0);
  EXPECT_DOUBLE_EQ(CostOverBudget(o), 0.5);
  EXPECT_DOUBLE_EQ(WinRate(o), 0.25);
  EXPECT_TRUE(std::isnan(Roi(Outcome{})));
}

TEST(Metrics, MeanStdIsSampleStd) {
  const MeanStd s = ComputeMeanStd({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_NEAR(s.std, 2.138, 1e-3);
  EXPECT_EQ(ComputeMeanStd({3}).std, 0.0);
}

TEST(Report, JsonHasEveryKeyPerRowAndTotalWithMeanStd) {
  const auto j = nlohmann::json::parse(RenderJson(Sample()));
  ASSERT_EQ(j["agents"].size(), 2u);
  for (const char* k : {"revenue", "cost", "budget", "clicks", "conversions", "impressions", "roi",
                        "cost_per_click", "cost_over_budget"}) {
    EXPECT_TRUE(j["total"].contains(k)) << k;
    EXPECT_TRUE(j["agents"][0].contains(k)) << k;
  }
  const auto& learned = j["methods"]["learned"];
  EXPECT_DOUBLE_EQ(learned["agents"][0]["revenue"].get<double>(), 30.0);
  EXPECT_NEAR(learned["agents"][0]["revenue_std"].get<double>(), 14.142, 1e-3);
  // relative to manual: total revenue (30+30)/(10+30)... mean total 60 vs 40 = 150%
  EXPECT_NEAR(learned["total"]["relative_to_manual_pct"]["revenue"].get<double>(), 150.0, 1e-9);
  EXPECT_EQ(learned["curve"]["mean"], nlohmann::json::parse("[2, 3, 4]"));
}

TEST(Report, RenderingIsDeterministicAndComplete) {
  const Report r = Sample();
  EXPECT_EQ(RenderJson(r), RenderJson(Sample()));
  EXPECT_EQ(RenderHtml(r), RenderHtml(Sample()));
  const std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("| learned | 30.00 ± 14.14 | 30.00 ± 0.00 | 60.00 ± 14.14 |"),
            std::string::npos)
      << md;
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("Learning curves"), std::string::npos);
  const std::string csv = RenderCsv(r);
  EXPECT_NE(csv.find("learned,total,2,60,"), std::string::npos) << csv;
}

TEST(ReportDoc, TicksAreRoundAndCoverTheData) {
  using doc::NiceTicks;
  EXPECT_EQ(NiceTicks(0, 5036), (std::vector<double>{0, 2000, 4000, 6000}));
  EXPECT_EQ(NiceTicks(0, 100), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(NiceTicks(0, 24, 8, true), (std::vector<double>{0, 5, 10, 15, 20, 25}));
  EXPECT_EQ(NiceTicks(1, 20, 8, true), (std::vector<double>{0, 5, 10, 15, 20}));
  EXPECT_EQ(NiceTicks(1, 3, 8, true), (std::vector<double>{1, 2, 3}));  // whole episodes
  EXPECT_EQ(NiceTicks(0, 1.05), (std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25}));
  EXPECT_EQ(NiceTicks(-0.64, 0.9), (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
  const auto flat = NiceTicks(7, 7);  // one value: still an axis
  EXPECT_GE(flat.size(), 2u);
  EXPECT_LE(flat.front(), 7);
  EXPECT_GE(flat.back(), 7);
}

TEST(ReportDoc, OneFormatPerKindOfNumber) {
  using doc::Fmt;
  using doc::Format;
  using doc::Value;
  EXPECT_EQ(doc::Grouped(1050921, 0), "1,050,921");
  EXPECT_EQ(doc::Grouped(-1234.5, 2), "-1,234.50");
  EXPECT_EQ(doc::Grouped(999, 0), "999");
  EXPECT_EQ(Format(Value::Num(441.6), Fmt::kCount), "442");
  EXPECT_EQ(Format(Value::Num(21.0), Fmt::kCount), "21");
  EXPECT_EQ(Format(Value::Num(12345.678), Fmt::kMoney), "12,345.68");
  EXPECT_EQ(Format(Value::Num(0.999), Fmt::kPercent, 1), "99.9%");
  EXPECT_EQ(Format(Value::Num(337.2), Fmt::kPoints, 1), "337.2%");
  EXPECT_EQ(Format(Value::Num(2.304), Fmt::kRatio), "2.30x");
  EXPECT_EQ(Format(Value::Num(doc::kNone), Fmt::kMoney), "n/a");
  EXPECT_EQ(Format(Value::Num(30, 14.142), Fmt::kMoney), "30.00 ± 14.14");
  EXPECT_EQ(Format(Value::Text("agent 1"), Fmt::kMoney), "agent 1");
}

TEST(ReportDoc, NoAbsolutePathIsShown) {
  EXPECT_EQ(doc::ShownPath("/work/x/out/demo/pretrain", "/work/x"), "out/demo/pretrain");
  EXPECT_EQ(doc::ShownPath("/tmp/tmp.abc/rlb/test.txt", "/work/x"), "rlb/test.txt");
  EXPECT_EQ(doc::ShownPath("configs/a.yaml", "/work/x"), "configs/a.yaml");
  // Paths of this machine (they exist) in texts: shown relative or by their last components.
  const std::string dir =
      std::filesystem::absolute(::testing::TempDir() + "/shown_" + std::to_string(::getpid()))
          .lexically_normal()
          .string();
  std::filesystem::create_directories(dir + "/rlb");
  std::ofstream(dir + "/rlb/test.txt") << "x";
  const std::string log = dir + "/rlb/test.txt";
  EXPECT_EQ(
      doc::ShownPaths("Replay of " + log + " (rlb log), see " + dir + "/rlb/out.json.", "/nowhere"),
      "Replay of rlb/test.txt (rlb log), see rlb/out.json.");
  // Not paths: division, fractions, URLs and URL paths.
  for (const char* text : {"cost = sum of payprice / 1000 per impression", "1/3 of the budget",
                           "http://127.0.0.1:8080/notice", "POST /openrtb2/bid answers"}) {
    EXPECT_EQ(doc::ShownPaths(text, "/w"), text);
  }
  Report r = Sample();
  r.title = "Replay of " + log;
  r.meta = {{"config", log}};
  const Report shown = WithShownPaths(r);
  EXPECT_EQ(shown.title, "Replay of rlb/test.txt");
  EXPECT_EQ(RenderHtml(shown).find(dir), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ReportDoc, HtmlHasRealTablesAndLabelledCharts) {
  const std::string html = RenderHtml(Sample());
  EXPECT_EQ(html.find("<pre>"), std::string::npos);
  EXPECT_EQ(html.find("|---"), std::string::npos);
  EXPECT_NE(html.find("<table>"), std::string::npos);
  // Every chart: two axis titles and tick labels; a legend for its two series.
  size_t charts = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    const std::string svg = html.substr(at, html.find("</svg>", at) - at);
    ++charts;
    size_t titles = 0;
    for (size_t p = svg.find("axis-title"); p != std::string::npos;
         p = svg.find("axis-title", p + 1)) {
      ++titles;
    }
    EXPECT_EQ(titles, 2u) << svg.substr(0, 300);
    EXPECT_NE(svg.find("class=\"tick\""), std::string::npos);
    EXPECT_NE(svg.find("class=\"legend\""), std::string::npos);
  }
  EXPECT_EQ(charts, 2u);  // revenue bars, learning curves (no burn data in the sample)
  // The learning curve's reference: manual's test revenue, drawn as a line.
  EXPECT_NE(html.find("class=\"reference\""), std::string::npos);
  // The relative table is relative: no absolute COST in it.
  const std::string md = RenderMarkdown(Sample());
  const size_t rel = md.find("## Totals relative to manual");
  ASSERT_NE(rel, std::string::npos);
  const std::string rel_table = md.substr(rel, md.find("\n## ", rel + 1) - rel);
  EXPECT_EQ(rel_table.find("COST"), std::string::npos) << rel_table;
  EXPECT_NE(rel_table.find("spend (delivery)"), std::string::npos) << rel_table;
}

TEST(Report, NanIsNullInJson) {
  Report r = Sample();
  r.methods[0].runs[0].rows[0].clicks = 0;
  const auto j = nlohmann::json::parse(RenderJson(r));
  EXPECT_TRUE(j["methods"]["manual"]["agents"][0]["cost_per_click"].is_null());
}

TEST(Report, WriteFilesIsAtomicAndComplete) {
  const std::string dir = ::testing::TempDir() + "/rtb_report_test";
  ASSERT_TRUE(WriteReportFiles(Sample(), dir).ok());
  for (const char* f : {"report.json", "report.csv", "report.md", "report.html"}) {
    FILE* fp = std::fopen((dir + "/" + f).c_str(), "r");
    ASSERT_NE(fp, nullptr) << f;
    std::fclose(fp);
  }
  EXPECT_FALSE(WriteReportFiles(Sample(), "/proc/nope/x").ok());
}

}  // namespace
}  // namespace rtb
