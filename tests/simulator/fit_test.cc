// A world fitted to logged events (rtb/simulator/fit.h): on a log drawn from a known market
// (competition, value lifts, volume), the fit finds them, its check reproduces the log, and bad
// input is refused naming what is wrong.
#include "rtb/simulator/fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "rtb/core/rng.h"

namespace rtb::sim {
namespace {

constexpr int64_t kHour = 3'600'000;

FitMarket Market3() {
  FitMarket m;
  // Manual CPC 1.0 at pCTR 0.01: a CPM bid of 10. Budgets that never bind.
  m.advertisers = {
      {10, 0, Micros::FromUnits(1.0), Micros::FromUnits(1e6), Micros::FromUnits(50), Goal{}},
      {11, 0, Micros::FromUnits(1.0), Micros::FromUnits(1e6), Micros::FromUnits(50), Goal{}},
      {12, 1, Micros::FromUnits(1.0), Micros::FromUnits(1e6), Micros::FromUnits(50), Goal{}}};
  m.clusters = 2;
  m.steps = 4;
  m.step_ms = kHour;
  m.learned_share = 0.5;
  return m;
}

// Two days of 10,000 bids: the highest competing eCPM log-normal (median 8, sigma 0.5), the
// manual arm bidding 10 (its manual bid), the learned arm 10 x exp(0.3 z); advertiser 12 earns
// 3x the predicted value in cluster 1, advertiser 11 (rare: too few impressions of its own) 2x
// in cluster 0; value is the expected value of the impression, as `rtb exchange` settles it.
OutcomeLog DrawLog(uint64_t seed, int64_t n = 20000) {
  Rng rng(seed);
  OutcomeLog log;
  for (int64_t i = 0; i < n; ++i) {
    LoggedBid b;
    const double u = rng.Uniform();
    b.advertiser = u < 0.6 ? 10 : (u < 0.603 ? 11 : 12);
    b.agent = b.advertiser == 12 ? 1 : 0;
    b.cluster = static_cast<int>(rng.UniformInt(2));
    const int64_t day = i < n / 2 ? 0 : 1;
    b.sim_ms = day * 86'400'000 + static_cast<int64_t>(rng.UniformInt(4)) * kHour + 1000;
    b.arm = i % 2 == 0 ? Arm::kManual : Arm::kLearned;
    b.pctr = 0.01;
    b.pcvr = 0.05;
    const double bid = b.arm == Arm::kManual ? 10.0 : 10.0 * std::exp(0.3 * rng.Normal());
    b.bid_micros = static_cast<int64_t>(bid * 1e6);
    const double c = rng.LogNormal(std::log(8.0), 0.5);
    b.won = bid >= c;
    if (b.won) {
      b.price_micros = static_cast<int64_t>(c * 1e6);
      double lift = 1;
      if (b.advertiser == 12 && b.cluster == 1) lift = 3;
      if (b.advertiser == 11 && b.cluster == 0) lift = 2;
      b.value_micros = static_cast<int64_t>(std::llround(0.01 * 0.05 * 50 * lift * 1e6));
    }
    log.bids.push_back(b);
  }
  return log;
}

TEST(Fit, FindsTheCompetitionTheLiftsAndTheVolumeOfAKnownMarket) {
  auto w = FitWorld(DrawLog(7), Market3());
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->days, 2);
  EXPECT_EQ(w->bids.size(), 20000u);
  EXPECT_NEAR(w->comp_mu, std::log(8.0), 0.03);
  EXPECT_NEAR(w->comp_sigma, 0.5, 0.03);
  EXPECT_GT(w->exact, 5000);
  EXPECT_GT(w->censored, 5000);
  const int L = 2;
  EXPECT_NEAR(w->lift[0 * L + 0], 1.0, 1e-4);  // advertiser 10
  EXPECT_NEAR(w->lift[2 * L + 1], 3.0, 1e-4);  // 12 in cluster 1
  EXPECT_NEAR(w->lift[2 * L + 0], 1.0, 1e-4);
  // 11 won too few in cluster 0 for a lift of its own: its agent's there, mostly 10's.
  EXPECT_GT(w->lift[1 * L + 0], 1.0);
  EXPECT_LT(w->lift[1 * L + 0], 1.1);
  EXPECT_NEAR(w->avg_pcvr[2], 0.05, 1e-12);

  // A drawn day has each step's logged bids per day x share, from that step's bids alone.
  const Day d = DrawFittedDay(*w, 0.5, 3);
  std::vector<int64_t> logged(4, 0), drawn(4, 0);
  for (const FittedBid& b : w->bids) ++logged[static_cast<size_t>(b.step)];
  for (size_t r = 0; r < d.requests(); ++r) ++drawn[static_cast<size_t>(d.StepOf(r))];
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(drawn[t], std::llround(logged[t] / 2.0 * 0.5)) << t;
  }
  EXPECT_EQ(d.candidates(), d.requests());  // one bid per request, the logged one
  EXPECT_EQ(DrawFittedDay(*w, 0.5, 3).floor_cpm, d.floor_cpm);  // same seed, same day
}

TEST(Fit, TheCheckReplaysTheManualArmWithinAFewPercentOfTheLog) {
  auto w = FitWorld(DrawLog(11), Market3());
  ASSERT_TRUE(w.ok()) << w.status().message();
  const FitCheck c = CheckFit(*w, 1);
  EXPECT_EQ(c.bids, 10000);
  EXPECT_GT(c.wins_log, 5000);
  EXPECT_NEAR(c.wins_fit / c.wins_log, 1.0, 0.03);
  EXPECT_NEAR(c.spend_fit / c.spend_log, 1.0, 0.03);
  EXPECT_NEAR(c.value_fit / c.value_log, 1.0, 0.03);
}

TEST(Fit, AScenarioOfTheFittedMarketForTraining) {
  auto w = FitWorld(DrawLog(7), Market3());
  ASSERT_TRUE(w.ok());
  SimulatorConfig base;
  base.seed = 5;
  const auto sc = FittedScenario(base, *w, 0.5, 3, 2);
  EXPECT_EQ(sc->market.agents, 2);
  EXPECT_EQ(sc->market.clusters, 2);
  EXPECT_EQ(sc->cfg.market.agents, 2);
  EXPECT_EQ(sc->cfg.auction.slots, 1);
  EXPECT_EQ(sc->extra_train.size(), 2u);
  EXPECT_EQ(sc->validation.size(), 2u);
  EXPECT_EQ(sc->goals.size(), 3u);
  ASSERT_EQ(sc->train_budgets.size(), 3u);
  EXPECT_EQ(sc->train_budgets[0], Micros::FromUnits(5e5));  // the learned arm's half
  EXPECT_NE(sc->train.floor_cpm, sc->test.floor_cpm);       // two draws
  double d0 = 0;
  for (double x : sc->market.d0) d0 += x;
  EXPECT_NEAR(d0, 1.0, 1e-9);
}

TEST(Fit, RoundTripsAsJsonAndRefusesAWorldOutOfRange) {
  auto w = FitWorld(DrawLog(7, 2000), Market3());
  ASSERT_TRUE(w.ok());
  auto back = FittedWorld::FromJson(w->ToJson(), "w.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ToJson(), w->ToJson());
  EXPECT_EQ(back->bids.size(), w->bids.size());
  EXPECT_DOUBLE_EQ(back->comp_sigma, w->comp_sigma);
  FittedWorld bad = *w;
  bad.bids[0].adv = 7;  // no such advertiser
  auto refused = FittedWorld::FromJson(bad.ToJson(), "bad.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("bad.json"), std::string::npos);
  EXPECT_FALSE(FittedWorld::FromJson(R"({"schema":"other"})", "x.json").ok());
  EXPECT_FALSE(FittedWorld::FromJson("{", "x.json").ok());
}

TEST(Fit, RefusesEventsItCannotFitNamingWhy) {
  OutcomeLog log = DrawLog(7, 100);
  log.bids[3].advertiser = 99;
  auto unknown = FitWorld(log, Market3());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("advertiser 99"), std::string::npos);
  log = DrawLog(7, 100);
  log.bids[3].cluster = 5;
  auto cluster = FitWorld(log, Market3());
  ASSERT_FALSE(cluster.ok());
  EXPECT_NE(cluster.status().message().find("cluster 5"), std::string::npos);
  EXPECT_FALSE(FitWorld(OutcomeLog{}, Market3()).ok());
  log = DrawLog(7, 100);
  for (LoggedBid& b : log.bids) b.won = false;  // nothing won: no clearing price to fit to
  auto lost = FitWorld(log, Market3());
  ASSERT_FALSE(lost.ok());
  EXPECT_NE(lost.status().message().find("won and lost"), std::string::npos);
  EXPECT_FALSE(FitWorld(DrawLog(7, 100), FitMarket{}).ok());
}

}  // namespace
}  // namespace rtb::sim
