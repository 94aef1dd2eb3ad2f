#include "rtb/simulator/simulate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "rtb/core/ab.h"
#include "rtb/simulator/engine.h"
#include "rtb/simulator/export.h"

namespace rtb::sim {
namespace {

const std::string kDefault = std::string(RTB_SOURCE_DIR) + "/configs/simulator/default.yaml";

TEST(Simulate, DefaultConfigLoadsAndMatchesTheStructDefaults) {
  auto cfg = LoadSimulatorConfig(kDefault);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  const SimulatorConfig d;
  EXPECT_EQ(cfg->world.advertisers, d.world.advertisers);
  EXPECT_EQ(cfg->world.large_weight, d.world.large_weight);
  EXPECT_EQ(cfg->world.order_value_sigma, d.world.order_value_sigma);
  EXPECT_EQ(cfg->day.requests, d.day.requests);
  EXPECT_EQ(cfg->day.pctr_noise_sigma, d.day.pctr_noise_sigma);
  EXPECT_EQ(cfg->market.budget_fraction, d.market.budget_fraction);
}

TEST(Simulate, TheCoordinationWorldIsTheDefaultWithOneSlotFewCandidatesAndNoFloors) {
  auto d = LoadSimulatorConfig(kDefault);
  auto c =
      LoadSimulatorConfig(std::string(RTB_SOURCE_DIR) + "/configs/simulator/coordination.yaml");
  ASSERT_TRUE(d.ok() && c.ok()) << c.status().message();
  EXPECT_EQ(c->auction.slots, 1);
  EXPECT_EQ(c->day.candidates_min, 2);
  EXPECT_LT(c->day.candidates_mean, d->day.candidates_mean);
  EXPECT_EQ(c->day.floor_fraction, 0.0);
  // Everything else as in the default world: the same advertisers, users, budgets.
  EXPECT_EQ(c->world.advertisers, d->world.advertisers);
  EXPECT_EQ(c->day.requests, d->day.requests);
  EXPECT_EQ(c->market.budget_fraction, d->market.budget_fraction);
  auto sc = BuildScenario(*c, "", "", false);
  ASSERT_TRUE(sc.ok()) << sc.status().message();
}

// A slot factor that is negative or not a number would make a won impression refund money (or
// make spend undefined): the config says so instead.
TEST(Simulate, ANegativeSlotFactorIsAConfigError) {
  const std::string path = ::testing::TempDir() + "/rtb-slot-factors.yaml";
  for (const char* factors : {"[1.0, -0.5, 0.25]", "[1.0, .nan, 0.25]"}) {
    std::ofstream(path) << "auction:\n  slots: 3\n  slot_ctr_factors: " << factors << "\n";
    auto cfg = LoadSimulatorConfig(path);
    ASSERT_FALSE(cfg.ok()) << factors;
    EXPECT_NE(cfg.status().message().find("slot_ctr_factors"), std::string::npos)
        << cfg.status().message();
  }
  std::ofstream(path) << "auction:\n  slots: 3\n  slot_ctr_factors: [1.0, 0.5, 0]\n";
  EXPECT_TRUE(LoadSimulatorConfig(path).ok());
}

TEST(Simulate, AnAuctionTypeOtherThanGspGfpOrFirstPriceIsAConfigErrorAndFirstPriceHasOneSlot) {
  const std::string path = ::testing::TempDir() + "/rtb-auction-type.yaml";
  std::ofstream(path) << "auction:\n  type: vickrey\n";
  auto bad = LoadSimulatorConfig(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("must be gsp, gfp or first_price"), std::string::npos)
      << bad.status().message();
  std::ofstream(path) << "auction:\n  type: first_price\n  slots: 3\n"
                         "  slot_ctr_factors: [1.0, 0.7, 0.5]\n";
  auto fp = LoadSimulatorConfig(path);
  ASSERT_TRUE(fp.ok()) << fp.status().message();
  EXPECT_EQ(fp->auction.slots, 1);
  EXPECT_EQ(fp->auction.slot_ctr_factors, std::vector<double>{1.0});
  EXPECT_EQ(fp->auction.openrtb_at(), 1);
  EXPECT_EQ(SimulatorConfig().auction.openrtb_at(), 2);
  // The commands' --auction: the same rules.
  SimulatorConfig c;
  EXPECT_FALSE(OverrideAuctionType(&c, "vickrey").ok());
  ASSERT_TRUE(OverrideAuctionType(&c, "gfp").ok());
  EXPECT_EQ(c.auction.slots, 3);
  EXPECT_EQ(c.auction.pricing(), Pricing::kFirstPrice);
  ASSERT_TRUE(OverrideAuctionType(&c, "first_price").ok());
  EXPECT_EQ(c.auction.slots, 1);
}

// Under first price the manual bidder bids its value per click (first_price_margin 1), under
// GSP bid_margin of it; the rest of the world is the same draw.
TEST(Simulate, AFirstPriceWorldsManualBidIsTheValuePerClick) {
  auto gsp = LoadSimulatorConfig(kDefault);
  ASSERT_TRUE(gsp.ok());
  SimulatorConfig gfp = *gsp;
  gfp.auction.type = "gfp";
  const World a = GenerateWorld(*gsp), b = GenerateWorld(gfp);
  ASSERT_EQ(a.advertisers.size(), b.advertisers.size());
  int unclamped = 0;
  double log_ratio = 0;  // of the manual bid to the value per click
  for (size_t k = 0; k < a.advertisers.size(); ++k) {
    const Advertiser &x = a.advertisers[k], &y = b.advertisers[k];
    EXPECT_EQ(x.order_value, y.order_value);
    EXPECT_EQ(x.cvr, y.cvr);
    const double value_per_click = y.cvr * y.order_value.units();
    if (y.bid.units() <= gfp.world.min_bid || y.bid.units() >= gfp.world.max_bid) continue;
    ++unclamped;
    log_ratio += std::log(y.bid.units() / value_per_click);
    EXPECT_NEAR(static_cast<double>(y.bid.value()) / x.bid.value(), 1.0 / gsp->world.bid_margin,
                0.01);
  }
  ASSERT_GT(unclamped, 2900);
  EXPECT_NEAR(log_ratio / unclamped, 0.0, 0.01);  // lognormal noise around the value itself
}

// world.cpa_share: about that share of advertisers get a target-CPA goal, the target
// cpa_target_margin x their order value and their manual bid target x pCVR; every other draw
// of the world is the one without goals.
TEST(Simulate, ACpaWorldGivesAShareOfAdvertisersATargetAndTheTargetCpaBidderRule) {
  auto plain = LoadSimulatorConfig(kDefault);
  ASSERT_TRUE(plain.ok());
  SimulatorConfig cpa = *plain;
  cpa.world.cpa_share = 0.5;
  const World a = GenerateWorld(*plain), b = GenerateWorld(cpa);
  ASSERT_EQ(a.advertisers.size(), b.advertisers.size());
  int targets = 0;
  for (size_t k = 0; k < a.advertisers.size(); ++k) {
    const Advertiser &x = a.advertisers[k], &y = b.advertisers[k];
    EXPECT_EQ(x.goal.kind, GoalKind::kRevenue);
    EXPECT_EQ(x.order_value, y.order_value);
    EXPECT_EQ(x.cvr, y.cvr);
    EXPECT_EQ(x.weight, y.weight);
    if (y.goal.kind == GoalKind::kRevenue) {
      EXPECT_EQ(x.bid, y.bid);  // untouched
      continue;
    }
    ++targets;
    EXPECT_EQ(y.goal.target_cpa, Micros::FromUnits(0.3 * y.order_value.units()));
    const double rule = y.goal.target_cpa.units() * y.cvr;
    EXPECT_EQ(y.bid, Micros::FromUnits(std::clamp(rule, cpa.world.min_bid, cpa.world.max_bid)));
  }
  EXPECT_NEAR(targets / static_cast<double>(a.advertisers.size()), 0.5, 0.03);

  // rtb simulate scores every run against the goals. The manual bidder pays at most its bid
  // under GSP, target x the advertiser's base pCVR, but a request's pCVR varies around that base
  // (consumer, noise), so an advertiser whose day fell on low-pCVR requests can end above its
  // target: 53 of 1,478 on this day of 20,000 requests, within 5%.
  cpa.day.requests = 20000;
  auto sc = BuildScenario(cpa, "", "", false);
  ASSERT_TRUE(sc.ok());
  ASSERT_EQ((*sc)->goals.size(), a.advertisers.size());
  SimulateOptions opt;
  opt.progress = false;
  auto r = Simulate(**sc, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const MethodResult* manual = r->Find("manual");
  ASSERT_NE(manual, nullptr);
  const GoalSummary& g = manual->runs[0].goals;
  EXPECT_EQ(g.targets, targets);
  EXPECT_GT(g.score, 0);
  EXPECT_GT(g.missed, 0);
  EXPECT_LT(g.missed, 0.05 * targets);
  const std::string json = RenderJson(*r);
  EXPECT_NE(json.find("\"goals\": {\"targets\": " + std::to_string(targets)), std::string::npos);
  EXPECT_NE(RenderMarkdown(*r).find("goal score (" + std::to_string(targets) +
                                    " advertisers with a target)"),
            std::string::npos);
}

// world.roas_share: the next share of the same draw gets a target ROAS (1 / roas_target_margin)
// and the target-ROAS bidder's manual bid, pCVR x order value / target; the CPA advertisers and
// every other draw stay as they were. The shares add up to at most 1, and the bidder config
// `rtb generate --bidder-out` writes carries both goals.
TEST(Simulate, ARoasWorldGivesTheNextShareATargetRoasAndTheTargetRoasBidderRule) {
  auto plain = LoadSimulatorConfig(kDefault);
  ASSERT_TRUE(plain.ok());
  SimulatorConfig cpa = *plain, both = *plain;
  cpa.world.cpa_share = 0.3;
  both.world.cpa_share = 0.3;
  both.world.roas_share = 0.3;
  const World a = GenerateWorld(cpa), b = GenerateWorld(both);
  int roas = 0;
  for (size_t k = 0; k < a.advertisers.size(); ++k) {
    const Advertiser &x = a.advertisers[k], &y = b.advertisers[k];
    EXPECT_EQ(x.order_value, y.order_value);
    if (x.goal.kind == GoalKind::kConversions) {
      EXPECT_EQ(y.goal.kind, GoalKind::kConversions);
      EXPECT_EQ(x.bid, y.bid);
      continue;
    }
    if (y.goal.kind == GoalKind::kRevenue) {
      EXPECT_EQ(x.bid, y.bid);
      continue;
    }
    ASSERT_EQ(y.goal.kind, GoalKind::kValue);
    ++roas;
    EXPECT_DOUBLE_EQ(y.goal.target_roas, 1 / 0.3);
    const double rule = y.cvr * y.order_value.units() / y.goal.target_roas;
    EXPECT_EQ(y.bid, Micros::FromUnits(std::clamp(rule, both.world.min_bid, both.world.max_bid)));
  }
  EXPECT_NEAR(roas / static_cast<double>(a.advertisers.size()), 0.3, 0.03);

  const std::string path = ::testing::TempDir() + "/rtb-roas-share.yaml";
  std::ofstream(path) << "world:\n  cpa_share: 0.6\n  roas_share: 0.5\n";
  auto over = LoadSimulatorConfig(path);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("cpa_share + roas_share <= 1"), std::string::npos)
      << over.status().message();

  // rtb simulate scores the ROAS advertisers too: realised / target ROAS, and their score.
  both.day.requests = 20000;
  auto sc = BuildScenario(both, "", "", false);
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  SimulateOptions opt;
  opt.progress = false;
  auto r = Simulate(**sc, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GoalSummary& g = r->Find("manual")->runs[0].goals;
  EXPECT_EQ(g.roas_targets, roas);
  EXPECT_GT(g.roas_score, 0);
  EXPECT_GT(g.roas_ratio, 1.0);  // the rule's bid, paid at most under GSP: above target on average
  EXPECT_NE(RenderMarkdown(*r).find("realised / target ROAS"), std::string::npos);
  EXPECT_NE(RenderJson(*r).find("\"roas_targets\": " + std::to_string(roas)), std::string::npos);

  const std::string dir = ::testing::TempDir() + "/rtb-roas-export";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(
      ExportBidderWorld(**sc, b, dir, std::string(RTB_SOURCE_DIR) + "/configs/bidder/default.yaml")
          .ok());
  std::ifstream in(dir + "/bidder.yaml");
  std::string line;
  int value_goals = 0, cpa_goals = 0;
  while (std::getline(in, line)) {
    value_goals += line.find("goal: value, target_roas: 3.33333333") != std::string::npos;
    cpa_goals += line.find("goal: conversions, target_cpa: ") != std::string::npos;
  }
  EXPECT_EQ(value_goals, roas);
  EXPECT_GT(cpa_goals, 0);
}

// The same day under GSP and under GFP with the same manual bids: each winner pays its own
// eCPM, so manual spend under unlimited budget (what budgets are a third of) is higher, and the
// manual bidder still spends its budget and never more.
TEST(Simulate, GeneralizedFirstPriceChargesEachWinnerItsBidAndBudgetsHold) {
  auto gsp = LoadSimulatorConfig(kDefault);
  ASSERT_TRUE(gsp.ok());
  gsp->day.requests = 20000;
  SimulatorConfig gfp = *gsp;
  gfp.auction.type = "gfp";
  gfp.world.first_price_margin = gsp->world.bid_margin;  // the pricing alone differs
  auto a = BuildScenario(*gsp, "", "", false), b = BuildScenario(gfp, "", "", false);
  ASSERT_TRUE(a.ok() && b.ok());
  int64_t budget_gsp = 0, budget_gfp = 0;
  for (Micros m : (*a)->test_budgets) budget_gsp += m.value();
  for (Micros m : (*b)->test_budgets) budget_gfp += m.value();
  EXPECT_GT(budget_gfp, budget_gsp * 1.2);
  AuctionEngine e((*b)->test, (*b)->market, gfp.auction, 0.9, (*b)->test_budgets);
  e.RunToEnd(ActionTable(3, 3));
  for (const auto& o : e.AgentOutcomes()) {
    EXPECT_GE(CostOverBudget(o), 0.99);
    EXPECT_LE(o.cost, o.budget);
  }
}

class DefaultDay : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cfg = LoadSimulatorConfig(kDefault);
    ASSERT_TRUE(cfg.ok());
    auto sc = BuildScenario(*cfg, "", "", false);
    ASSERT_TRUE(sc.ok());
    sc_ = std::move(*sc).release();
  }
  static void TearDownTestSuite() { delete sc_; }
  static Scenario* sc_;
};
Scenario* DefaultDay::sc_ = nullptr;

TEST_F(DefaultDay, PaperScaleAndHeavyTailedAgents) {
  EXPECT_EQ(sc_->test.requests(), 70000u);
  const auto& m = sc_->market;
  ASSERT_EQ(m.agents, 3);
  double rev = 0, advs = 0;
  for (int i = 0; i < 3; ++i)
    rev += m.agent_history[i].revenue.units(), advs += m.agent_advertisers[i];
  // The paper: ~89% / 6% / 5% of advertisers hold ~15% / 23% / 62% of revenue.
  EXPECT_GT(m.agent_advertisers[0] / advs, 0.80);
  EXPECT_LT(m.agent_advertisers[2] / advs, 0.10);
  EXPECT_LT(m.agent_history[0].revenue.units() / rev, 0.25);
  EXPECT_GT(m.agent_history[2].revenue.units() / rev, 0.50);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(
        static_cast<double>(m.agent_presences[i]) / static_cast<double>(sc_->train.candidates()),
        1.0 / 3, 0.02);
  }
}

TEST_F(DefaultDay, ManualSpendsAtLeast99PercentOfEveryAgentsBudgetAndNeverMore) {
  AuctionEngine e(sc_->test, sc_->market, sc_->cfg.auction, 0.9, sc_->test_budgets);
  e.RunToEnd(ActionTable(3, 3));
  for (const auto& a : e.AgentOutcomes()) {
    EXPECT_GE(CostOverBudget(a), 0.99);
    EXPECT_LE(a.cost, a.budget);
  }
  for (const auto& o : e.advertiser_outcomes()) EXPECT_LE(o.cost, o.budget);
}

TEST_F(DefaultDay, ReportHasTheInterfaceKeysAndIsDeterministic) {
  SimulateOptions opt;
  opt.progress = false;
  auto r1 = Simulate(*sc_, opt);
  auto r2 = Simulate(*sc_, opt);
  ASSERT_TRUE(r1.ok());
  const std::string j1 = RenderJson(*r1);
  EXPECT_EQ(j1, RenderJson(*r2));
  const auto j = nlohmann::json::parse(j1);
  ASSERT_EQ(j["agents"].size(), 3u);
  for (const char* k : {"revenue", "cost", "budget", "clicks", "conversions", "impressions", "roi",
                        "cost_per_click", "cost_over_budget"}) {
    EXPECT_TRUE(j["total"][k].is_number()) << k;
    for (const auto& a : j["agents"]) EXPECT_TRUE(a[k].is_number()) << k;
  }
  EXPECT_DOUBLE_EQ(j["total"]["relative_to_manual_pct"]["revenue"].get<double>(), 100.0);
  EXPECT_TRUE(j["methods"].contains("manual_unlimited"));
}

TEST_F(DefaultDay, PolicyFromATableFile) {
  ActionTable t(3, 3);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) t.set(i, j, -0.5);
  }
  const std::string path = ::testing::TempDir() + "/policy.json";
  ASSERT_TRUE(SaveActionTable(t, path).ok());
  SimulateOptions opt;
  opt.progress = false;
  opt.policy = path;
  auto r = Simulate(*sc_, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto j = nlohmann::json::parse(RenderJson(*r));
  EXPECT_GT(j["total"]["relative_to_manual_pct"]["revenue"].get<double>(), 130.0);
  ActionTable wrong(2, 3);
  ASSERT_TRUE(SaveActionTable(wrong, path).ok());
  EXPECT_FALSE(Simulate(*sc_, opt).ok());
  opt.policy = "const:7";
  EXPECT_FALSE(Simulate(*sc_, opt).ok());
}

TEST_F(DefaultDay, PolicyPerStepPlaysEachTableAtItsStep) {
  auto tables = ResolveStepPolicies("const:-0.5,manual,const:0.25", 3, 3, sc_->test.steps);
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  ASSERT_EQ(tables->size(), 3u);
  EXPECT_EQ((*tables)[0].at(2, 1), -0.5);
  EXPECT_EQ((*tables)[1].at(2, 1), 0.0);
  EXPECT_EQ((*tables)[2].at(2, 1), 0.25);
  SimulateOptions opt;
  opt.progress = false;
  auto revenue = [&](const std::string& policy) {
    opt.policy = policy;
    auto r = Simulate(*sc_, opt);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->methods[0].runs[0].total.revenue.value() : -1;
  };
  // One table repeated is that table; the last one plays the rest of the day.
  const int64_t constant = revenue("const:-0.5");
  EXPECT_EQ(revenue("const:-0.5,const:-0.5,const:-0.5"), constant);
  EXPECT_EQ(revenue("const:-0.5,const:-0.5"), constant);
  // Shading only from the second step: what the engine gives for those tables step by step.
  const int64_t late = revenue("manual,const:-0.5");
  {  // The report names every step's policy (a file by its short path).
    const std::string dir = ::testing::TempDir() + "/per_step";
    std::filesystem::create_directories(dir);
    ASSERT_TRUE(SaveActionTable((*tables)[1], dir + "/step0.json").ok());
    ASSERT_TRUE(SaveActionTable((*tables)[0], dir + "/step1.json").ok());
    EXPECT_EQ(revenue(dir + "/step0.json," + dir + "/step1.json"), late);
    auto r = Simulate(*sc_, opt);
    ASSERT_TRUE(r.ok());
    const std::string shown = nlohmann::json::parse(RenderJson(*r))["meta"]["policy"];
    EXPECT_NE(shown.find("step0.json,"), std::string::npos) << shown;
    EXPECT_NE(shown.find("step1.json"), std::string::npos) << shown;
    EXPECT_EQ(shown.find(dir), std::string::npos) << shown;
  }
  const RunResult expected =
      EvaluateTables(*sc_, sc_->test, sc_->test_budgets, {(*tables)[1], (*tables)[0]});
  EXPECT_EQ(late, expected.total.revenue.value());
  EXPECT_NE(late, constant);
  EXPECT_NE(late, revenue("manual"));
  // More tables than steps, or a bad one among them: a clear error.
  opt.policy = "manual,manual,manual,manual";
  auto too_many = Simulate(*sc_, opt);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("4 tables, one per step, but the day has 3 steps"),
            std::string::npos)
      << too_many.status().message();
  opt.policy = "manual,const:7";
  EXPECT_FALSE(Simulate(*sc_, opt).ok());
  opt.policy = "manual,";
  auto empty = Simulate(*sc_, opt);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("an empty entry"), std::string::npos)
      << empty.status().message();
}

TEST(Scenario, DifferentSeedsGiveDifferentDaysSameSeedTheSame) {
  SimulatorConfig c;
  c.world.advertisers = 200;
  c.world.consumers = 500;
  c.day.requests = 2000;
  auto a = BuildScenario(c, "", "", false);
  auto b = BuildScenario(c, "", "", false);
  c.seed = 2;
  auto d = BuildScenario(c, "", "", false);
  ASSERT_TRUE(a.ok() && b.ok() && d.ok());
  EXPECT_EQ((*a)->test.pctr, (*b)->test.pctr);
  EXPECT_NE((*a)->test.pctr, (*d)->test.pctr);
  EXPECT_NE((*a)->train.pctr, (*a)->test.pctr);  // train and test are different draws
}

TEST(Scenario, RestrictToArmKeepsTheLearnedArmsUsersAndItsShareOfEveryBudget) {
  SimulatorConfig c;
  c.world.advertisers = 200;
  c.world.consumers = 2000;
  c.day.requests = 4000;
  auto full = BuildScenario(c, "", "", false);
  auto arm = BuildScenario(c, "", "", false);
  ASSERT_TRUE(full.ok() && arm.ok());
  AddTrainingDays(**full, 1);
  AddTrainingDays(**arm, 1);
  RestrictToArm(**arm, 0.5, "salt-x");
  const Scenario& f = **full;
  const Scenario& a = **arm;
  // Every kept request is a learned-arm user's, whole (same candidates), in the same order;
  // every dropped one is a manual-arm user's.
  size_t kept = 0;
  for (size_t r = 0; r < f.test.requests(); ++r) {
    const bool learned = ArmOf(ConsumerUserId(f.test.consumer[r]), "salt-x", 0.5) == Arm::kLearned;
    if (!learned) continue;
    ASSERT_LT(kept, a.test.requests());
    EXPECT_EQ(a.test.consumer[kept], f.test.consumer[r]);
    EXPECT_EQ(a.test.time_ms[kept], f.test.time_ms[r]);
    const uint32_t n = f.test.begin[r + 1] - f.test.begin[r];
    ASSERT_EQ(a.test.begin[kept + 1] - a.test.begin[kept], n);
    for (uint32_t k = 0; k < n; ++k) {
      EXPECT_EQ(a.test.adv[a.test.begin[kept] + k], f.test.adv[f.test.begin[r] + k]);
      EXPECT_EQ(a.test.ppb[a.test.begin[kept] + k], f.test.ppb[f.test.begin[r] + k]);
    }
    ++kept;
  }
  EXPECT_EQ(kept, a.test.requests());
  EXPECT_NEAR(static_cast<double>(kept) / f.test.requests(), 0.5, 0.1);
  EXPECT_EQ(a.extra_train.size(), 1u);
  EXPECT_LT(a.extra_train[0].requests(), f.extra_train[0].requests());
  for (size_t k = 0; k < f.test_budgets.size(); ++k) {
    EXPECT_EQ(a.test_budgets[k], ArmBudget(f.test_budgets[k], Arm::kLearned, 0.5));
    EXPECT_EQ(a.train_budgets[k], ArmBudget(f.train_budgets[k], Arm::kLearned, 0.5));
  }
  EXPECT_EQ(ConsumerUserId(42), "c42");
}

TEST(Scenario, OneAgentPerAdvertiserWorks) {
  SimulatorConfig c;
  c.world.advertisers = 30;
  c.world.consumers = 200;
  c.day.requests = 3000;
  c.day.candidates_max = 20;
  c.market.agents = 30;
  auto sc = BuildScenario(c, "", "", false);
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  std::vector<int> seen(30, 0);
  for (auto a : (*sc)->market.agent_of) seen[a]++;
  for (int s : seen) EXPECT_EQ(s, 1);
}

}  // namespace
}  // namespace rtb::sim
