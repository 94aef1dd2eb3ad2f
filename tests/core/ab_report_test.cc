#include "rtb/core/ab_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "rtb/core/clock.h"
#include "rtb/core/line_reader.h"

namespace rtb {
namespace {

constexpr int64_t kHourMs = 3'600'000;

Event Ev(const std::string& type, int64_t adv, Arm arm, int64_t sim_ms, int64_t price = 0) {
  static int seq = 0;
  Event e;
  e.type = type;
  e.eid = "e-" + std::to_string(++seq);
  e.advertiser = adv;
  e.arm = arm;
  e.sim_ms = sim_ms;
  e.price_micros = price;
  e.charged = type == "billing";
  return e;
}

std::vector<AbAdvertiser> Market() {
  return {{1, "one", 0, Micros::FromUnits(10), Micros::FromUnits(100)},
          {2, "two", 1, Micros::FromUnits(20), Micros::FromUnits(100)}};
}

TEST(AbTally, BooksEachEventToItsDayArmAndAdvertiserAsTheBidderDoes) {
  AbTally t(Market(), 0.5, kHourMs);
  t.Add(Ev("bid", 1, Arm::kLearned, 10));
  t.Add(Ev("bid", 1, Arm::kLearned, 11));
  t.Add(Ev("billing", 1, Arm::kLearned, 12, 2'000'499));  // CPM 2.000499 -> 2000 micros
  t.Add(Ev("click", 1, Arm::kLearned, 13));
  t.Add(Ev("conversion", 1, Arm::kLearned, 14, 5'000'000));
  Event uncharged = Ev("billing", 1, Arm::kLearned, 15, 9'000'000);
  uncharged.charged = false;  // refused by the bidder (late, over budget...): not spend
  t.Add(uncharged);
  Event dup = Ev("billing", 1, Arm::kLearned, 16, 1'000'000);
  t.Add(dup);
  t.Add(dup);  // a repeat (same eid): once
  Event test = Ev("billing", 1, Arm::kLearned, 17, 1'000'000);
  test.test = true;
  t.Add(test);
  t.Add(Ev("billing", 2, Arm::kManual, kDayMs + 5, 3'000'000));  // day 1, manual
  t.Add(Ev("billing", 99, Arm::kManual, 5, 3'000'000));          // not in the market

  const ArmTotals l = t.Of(0, Arm::kLearned, 0);
  EXPECT_EQ(l.budget.value(), 5'000'000);  // half of 10
  EXPECT_EQ(l.spend.value(), 3'000);
  EXPECT_EQ(l.impressions, 2);
  EXPECT_EQ(l.clicks, 1);
  EXPECT_EQ(l.conversions, 1);
  EXPECT_EQ(l.revenue.value(), 5'000'000);
  EXPECT_EQ(l.bids, 2);
  EXPECT_DOUBLE_EQ(l.WinRate(), 1.0);
  EXPECT_DOUBLE_EQ(l.Roi(), 5.0 / 0.003);
  EXPECT_DOUBLE_EQ(l.Cpa(), 0.003);
  EXPECT_DOUBLE_EQ(l.Cost(), 0.003 / 5.0);
  EXPECT_EQ(t.Days(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(t.Of(1, Arm::kManual, 1).spend.value(), 3'000);
  EXPECT_EQ(t.OfAgent(1, Arm::kManual, 1).budget.value(), 10'000'000);
  EXPECT_EQ(t.OfArm(Arm::kLearned).spend.value(), 3'000);
  EXPECT_EQ(t.OfArm(Arm::kLearned).budget.value(), 2 * 15'000'000);  // two days
  EXPECT_EQ(t.duplicates(), 1);
  EXPECT_EQ(t.skipped_test(), 1);
  EXPECT_EQ(t.unknown_advertiser(), 1);
  // The spend curve of agent 1 on day 0: 3000 micros from the first hour on.
  const std::vector<double> c = t.SpendCurve(0, Arm::kLearned, 0);
  ASSERT_EQ(c.size(), 24u);
  EXPECT_DOUBLE_EQ(c.front(), 0.003);
  EXPECT_DOUBLE_EQ(c.back(), 0.003);
}

// An advertiser with a target CPA: each day of each arm scored against it, the scores summed,
// the realised CPA and whether the target held over the days' totals; in the JSON and the
// document's "Goals" section.
TEST(AbTally, EachDayOfAnAdvertiserWithATargetIsScoredAgainstIt) {
  std::vector<AbAdvertiser> market = Market();
  market[0].goal = *MakeGoal("conversions", 0.005, 0);  // at most 5,000 micros a conversion
  AbTally t(market, 0.5, kHourMs);
  // Day 0, learned: 2 billings of 3,000 micros, 2 conversions: CPA 0.003, met, score 2.
  for (int i = 0; i < 2; ++i) {
    t.Add(Ev("billing", 1, Arm::kLearned, 10 + i, 3'000'000));
    t.Add(Ev("conversion", 1, Arm::kLearned, 20 + i, 1'000'000));
  }
  // Day 1, learned: 12,000 micros for 1 conversion: CPA 0.012, score 1 x (5 / 12)^2.
  t.Add(Ev("billing", 1, Arm::kLearned, kDayMs + 10, 12'000'000));
  t.Add(Ev("conversion", 1, Arm::kLearned, kDayMs + 20, 1'000'000));
  const AbTally::GoalTotals g = t.GoalOf(Arm::kLearned, 0);
  EXPECT_EQ(g.days, 2);
  EXPECT_EQ(g.days_met, 1);
  EXPECT_DOUBLE_EQ(g.conversions, 3);
  EXPECT_NEAR(g.spend, 0.018, 1e-12);
  EXPECT_NEAR(g.score, 2 + 25.0 / 144.0, 1e-12);
  EXPECT_NEAR(g.overall.realised, 0.006, 1e-12);
  EXPECT_FALSE(g.overall.met);  // 0.006 over the days, above 0.005
  // The manual arm bought nothing: no spend, the target held, no score.
  EXPECT_TRUE(t.GoalOf(Arm::kManual, 0).overall.met);
  EXPECT_EQ(t.GoalOf(Arm::kManual, 0).score, 0);
  EXPECT_TRUE(t.AnyTarget());
  EXPECT_FALSE(AbTally(Market(), 0.5, kHourMs).AnyTarget());

  AbReportInfo info;
  const auto j = nlohmann::json::parse(AbReportJson(t, info));
  ASSERT_EQ(j["goals"].size(), 2u);
  const auto& one = j["goals"][0];
  EXPECT_EQ(one["goal"], "conversions");
  EXPECT_DOUBLE_EQ(one["target_cpa"].get<double>(), 0.005);
  EXPECT_NEAR(one["arms"]["learned"]["score"].get<double>(), 2 + 25.0 / 144.0, 1e-9);
  EXPECT_EQ(one["arms"]["learned"]["met"], false);
  EXPECT_EQ(j["goals"][1]["goal"], "revenue");
  const std::string md = doc::RenderMarkdown(AbReportDocument(t, info));
  EXPECT_NE(md.find("## Goals"), std::string::npos);
  EXPECT_NE(md.find("CPA <= 0.005"), std::string::npos) << md;
  EXPECT_NE(md.find("learned: score 2.17 (target CPA, in conversions) and 0.00 (target ROAS, in "
                    "value) over 1 advertisers with a target, 1 missed it"),
            std::string::npos)
      << md;
}

TEST(AbTally, ExpectedOutcomesAddTheEventsCountsNotTheirNumber) {
  // Expected outcomes: every impression sends a click notice counting pCTR and a conversion
  // notice counting pCTR x pCVR (core/events.h `count`).
  AbTally t(Market(), 0.5, kHourMs);
  for (int k = 0; k < 4; ++k) {
    t.Add(Ev("billing", 1, Arm::kLearned, 10 + k, 1'000'000));  // 1000 micros each
    Event click = Ev("click", 1, Arm::kLearned, 20 + k);
    click.count = 0.02;
    t.Add(click);
    Event conv = Ev("conversion", 1, Arm::kLearned, 30 + k, 40'000);
    conv.count = 0.0005;
    t.Add(conv);
  }
  const ArmTotals l = t.Of(0, Arm::kLearned, 0);
  EXPECT_EQ(l.impressions, 4);
  EXPECT_DOUBLE_EQ(l.clicks, 0.08);
  EXPECT_DOUBLE_EQ(l.conversions, 0.002);
  EXPECT_DOUBLE_EQ(l.Cpc(), 0.004 / 0.08);
  EXPECT_DOUBLE_EQ(l.Cpa(), 0.004 / 0.002);
  EXPECT_EQ(l.revenue.value(), 160'000);
}

TEST(AbTally, RatiosArePerShareAndTheirIntervalsHoldTheTruthAndRepeat) {
  // 30% learned: per unit of share the learned arm earns twice the manual arm, every hour.
  AbTally exact(Market(), 0.3, kHourMs);
  for (int h = 0; h < 48; ++h) {
    exact.Add(Ev("conversion", 1, Arm::kLearned, h * kHourMs, 600'000));  // 0.6 = 2 x 0.3
    exact.Add(Ev("conversion", 1, Arm::kManual, h * kHourMs, 700'000));   // 0.7 = 1 x 0.7
    exact.Add(Ev("billing", 1, Arm::kLearned, h * kHourMs, 100'000'000));
    exact.Add(Ev("billing", 1, Arm::kManual, h * kHourMs, 100'000'000));
  }
  const RatioCi r = exact.RevenueRatio(500, 7);
  EXPECT_NEAR(r.ratio, 2.0, 1e-9);
  EXPECT_NEAR(r.lo, 2.0, 1e-9);
  EXPECT_NEAR(r.hi, 2.0, 1e-9);
  EXPECT_EQ(r.buckets, 48);
  EXPECT_NEAR(exact.RoiRatio(500, 7).ratio, 6.0 / 7.0, 1e-9);
  // Noisy hours: the interval is wide, holds the point estimate, and repeats with its seed.
  AbTally noisy(Market(), 0.5, kHourMs);
  for (int h = 0; h < 48; ++h) {
    noisy.Add(Ev("conversion", 1, Arm::kLearned, h * kHourMs, 1'000'000 + (h % 5) * 400'000));
    noisy.Add(Ev("conversion", 1, Arm::kManual, h * kHourMs, 1'000'000 + (h % 3) * 300'000));
  }
  const RatioCi a = noisy.RevenueRatio(1000, 3), b = noisy.RevenueRatio(1000, 3);
  EXPECT_LT(a.lo, a.ratio);
  EXPECT_GT(a.hi, a.ratio);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  // No manual arm (share 1): no ratio, stated as such.
  AbTally all_learned(Market(), 1.0, kHourMs);
  all_learned.Add(Ev("conversion", 1, Arm::kLearned, 5, 1));
  EXPECT_TRUE(std::isnan(all_learned.RevenueRatio().ratio));
}

TEST(AbTally, MalformedLinesNameFileAndLineOrAreSkippedAndCounted) {
  const std::string good = EncodeEvent(Ev("billing", 1, Arm::kManual, 5, 1'000'000));
  const std::string text = good + "\n\n{\"v\":1,\"type\":\"bid\"}\nnot json\n" + good + "\n";
  AbTally strict(Market(), 0.5, kHourMs);
  const Status st = AddEventLines(text, "dump.jsonl", false, &strict, nullptr, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("dump.jsonl:3: ", 0), 0u) << st.message();
  AbTally lenient(Market(), 0.5, kHourMs);
  int64_t bad = 0;
  std::string first;
  ASSERT_TRUE(AddEventLines(text, "dump.jsonl", true, &lenient, &bad, &first).ok());
  EXPECT_EQ(bad, 2);
  EXPECT_EQ(first.rfind("dump.jsonl:3: ", 0), 0u) << first;
  EXPECT_EQ(lenient.Of(0, Arm::kManual, 0).spend.value(), 1'000);  // the repeat counted once
  EXPECT_EQ(lenient.duplicates(), 1);
}

TEST(AbTally, MoneyThatCannotBeBookedIsRefusedAndChangesNothing) {
  // Each refused event returns why and leaves the tally as it was (no wrap, no negative spend).
  AbTally t(Market(), 0.5, kHourMs);
  ASSERT_TRUE(t.Add(Ev("billing", 1, Arm::kLearned, 10, 2'000'000)).ok());
  const Status negative = t.Add(Ev("billing", 1, Arm::kLearned, 11, -5'000'000));
  EXPECT_EQ(negative.message(), "event: negative price (-5000000 micros) refused");
  const Status negative_value = t.Add(Ev("conversion", 1, Arm::kLearned, 12, -1));
  EXPECT_EQ(negative_value.message(), "event: negative conversion value (-1 micros) refused");
  // Two billings of 9e18 micros CPM: each charges 9e9 units, above the whole daily budget.
  const Status extreme = t.Add(Ev("billing", 1, Arm::kLearned, 13, 9'000'000'000'000'000'000));
  EXPECT_EQ(extreme.message(),
            "event: billing charges 9000000000.0, more than advertiser 1's whole daily budget "
            "(10.0): refused");
  EXPECT_FALSE(t.Add(Ev("billing", 1, Arm::kLearned, 14, INT64_MAX)).ok());  // no price + 500
  const Status value = t.Add(Ev("conversion", 2, Arm::kManual, 15, 100'000'001));
  EXPECT_EQ(value.message(),
            "event: conversion value 100.000001 above advertiser 2's max_conversion_value "
            "(100.0): refused");
  Event three = Ev("conversion", 2, Arm::kManual, 16, 300'000'000);  // 3 conversions of 100
  three.count = 3;
  EXPECT_TRUE(t.Add(three).ok());
  const ArmTotals l = t.OfArm(Arm::kLearned);
  EXPECT_EQ(l.spend.value(), 2'000);
  EXPECT_EQ(l.impressions, 1);
  EXPECT_EQ(t.OfArm(Arm::kManual).revenue.value(), 300'000'000);
  EXPECT_EQ(t.events(), 2);
}

TEST(AbTally, SumsPastTheInt64RangeAreRefusedNeverWrapped) {
  // No bound of the market applies (no budget, no max value): checked arithmetic still does.
  AbTally t({{1, "open", 0, Micros(0), Micros(0)}}, 0.5, kHourMs);
  ASSERT_TRUE(t.Add(Ev("conversion", 1, Arm::kLearned, 1, 9'000'000'000'000'000'000)).ok());
  const Status st = t.Add(Ev("conversion", 1, Arm::kManual, 2, 9'000'000'000'000'000'000));
  EXPECT_EQ(st.message(),
            "event: conversion of 9000000000000000000 micros would take the booked revenue past "
            "the int64 range of micros: refused");
  EXPECT_EQ(t.OfArm(Arm::kLearned).revenue.value(), 9'000'000'000'000'000'000);
  EXPECT_EQ(t.OfArm(Arm::kManual).revenue.value(), 0);
  // In a dump: the line is named, or skipped and counted with the malformed ones.
  const std::string text = EncodeEvent(Ev("billing", 1, Arm::kLearned, 3, -1)) + "\n";
  const Status line = AddEventLines(text, "dump.jsonl", false, &t, nullptr, nullptr);
  EXPECT_EQ(line.message(), "dump.jsonl:1: event: negative price (-1 micros) refused");
  int64_t skipped = 0;
  std::string first;
  EXPECT_TRUE(AddEventLines(text, "dump.jsonl", true, &t, &skipped, &first).ok());
  EXPECT_EQ(skipped, 1);
}

TEST(AbTally, ADumpIsReadInBoundedLinesAndAFolderIsNotADump) {
  AbTally t(Market(), 0.5, kHourMs);
  const std::string huge(kMaxLineBytes + 1, ' ');
  const Status st = AddEventLines(huge, "dump.jsonl", true, &t, nullptr, nullptr);
  EXPECT_EQ(st.message(),
            "dump.jsonl:1: a line longer than 1 MiB (1048576 bytes), the most a line may hold (is "
            "this the right file?)");
  const Status dir = AddEventFile("/tmp", false, &t, nullptr, nullptr);
  EXPECT_EQ(dir.message(), "/tmp: is a directory; the events dump must be a file");
}

TEST(AbReport, JsonCarriesBothArmsTotalsAndTheDocumentRenders) {
  AbTally t(Market(), 0.5, kHourMs);
  t.Add(Ev("billing", 1, Arm::kLearned, 10, 2'000'000));
  t.Add(Ev("conversion", 1, Arm::kLearned, 11, 8'000'000));
  t.Add(Ev("billing", 2, Arm::kManual, 12, 4'000'000));
  t.Add(Ev("conversion", 2, Arm::kManual, 13, 2'000'000));
  AbReportInfo info;
  info.source = "dump.jsonl";
  const auto j = nlohmann::json::parse(AbReportJson(t, info));
  for (const char* arm : {"learned", "manual"}) {
    for (const char* k : {"revenue", "spend", "budget", "clicks", "conversions", "roi", "cpa"}) {
      EXPECT_TRUE(j["arms"][arm].contains(k)) << arm << " " << k;
    }
  }
  EXPECT_DOUBLE_EQ(j["arms"]["learned"]["revenue"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(j["arms"]["learned"]["spend"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(j["arms"]["manual"]["roi"].get<double>(), 2.0 / 0.004);
  EXPECT_DOUBLE_EQ(j["arms"]["learned"]["budget"].get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(j["comparison"]["revenue_ratio"]["ratio"].get<double>(), 4.0);
  ASSERT_EQ(j["days"].size(), 1u);
  EXPECT_EQ(j["days"][0]["arms"]["manual"]["agents"][1]["spend"].get<double>(), 0.004);
  const std::string html = doc::RenderHtml(AbReportDocument(t, info));
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("learned budget"), std::string::npos);
  const std::string md = doc::RenderMarkdown(AbReportDocument(t, info));
  EXPECT_NE(md.find("| revenue (per share) | 4.00x"), std::string::npos) << md;
  EXPECT_EQ(md.find("Per deal"), std::string::npos);  // no deal, no section
  EXPECT_TRUE(j["deals"].empty());
}

// Bids made through a deal and their notices add up per deal (both arms, every day), besides
// counting as their advertiser's spend as always; the report shows the deal's table.
TEST(AbReport, SpendPerDealIsBookedAndShown) {
  AbTally t(Market(), 0.5, kHourMs);
  auto deal = [](Event e, const std::string& id) {
    e.deal = id;
    return e;
  };
  ASSERT_TRUE(t.Add(deal(Ev("bid", 1, Arm::kLearned, 10), "D1")).ok());
  ASSERT_TRUE(t.Add(deal(Ev("billing", 1, Arm::kLearned, 11, 3'000'000), "D1")).ok());
  ASSERT_TRUE(t.Add(deal(Ev("billing", 2, Arm::kManual, kDayMs + 1, 1'000'000), "D1")).ok());
  ASSERT_TRUE(t.Add(deal(Ev("conversion", 1, Arm::kLearned, 12, 6'000'000), "D1")).ok());
  ASSERT_TRUE(t.Add(deal(Ev("billing", 2, Arm::kLearned, 13, 2'000'000), "D2")).ok());
  ASSERT_TRUE(t.Add(Ev("billing", 2, Arm::kLearned, 14, 5'000'000)).ok());  // open auction
  ASSERT_EQ(t.deals().size(), 2u);
  const ArmTotals& d1 = t.deals().at("D1");
  EXPECT_EQ(d1.bids, 1);
  EXPECT_EQ(d1.impressions, 2);
  EXPECT_EQ(d1.spend.value(), 3'000 + 1'000);
  EXPECT_EQ(d1.revenue.value(), 6'000'000);
  EXPECT_EQ(t.deals().at("D2").spend.value(), 2'000);
  EXPECT_EQ(t.OfArm(Arm::kLearned).spend.value(), 3'000 + 2'000 + 5'000);  // still budget spend
  AbReportInfo info;
  const auto j = nlohmann::json::parse(AbReportJson(t, info));
  EXPECT_DOUBLE_EQ(j["deals"]["D1"]["spend"].get<double>(), 0.004);
  EXPECT_EQ(j["deals"]["D1"]["impressions"].get<int>(), 2);
  const std::string md = doc::RenderMarkdown(AbReportDocument(t, info));
  EXPECT_NE(md.find("## Per deal, over every day"), std::string::npos) << md;
  EXPECT_NE(md.find("| D1 | 1 | 2 |"), std::string::npos) << md;
}

}  // namespace
}  // namespace rtb
