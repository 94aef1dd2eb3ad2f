#include "rtb/core/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
