// A short end-to-end training run of every method on a tiny world (cleanrl-style smoke test).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "rtb/core/rng.h"
#include "rtb/learner/config.h"
#include "rtb/learner/train.h"
#include "rtb/simulator/fit.h"
#include "tiny_config.h"

namespace rtb::learn {
namespace {

LearnerConfig Tiny() {
  LearnerConfig c = TinyLearnerConfig();
  c.training_days = 4;  // as these tests' runs were written (the default is 8)
  c.episodes = 6;
  c.hp.updates_per_step = 2;
  c.hp.batch_size = 16;
  return c;
}

TEST(TrainSmoke, EveryMethodTrainsAndTheReportIsComplete) {
  const std::string out = ::testing::TempDir() + "/train_smoke_" + std::to_string(::getpid());
  std::filesystem::remove_all(out);
  TrainOptions opt;
  opt.algos = AllAlgoNames();
  opt.out = out;
  opt.progress = false;
  auto r = RunTraining(Tiny(), opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto j = nlohmann::json::parse(RenderJson(*r));
  for (const auto& name : AllAlgoNames()) {
    ASSERT_TRUE(j["methods"].contains(name)) << name;
    const auto& m = j["methods"][name];
    EXPECT_EQ(m["runs"], 2);
    for (const char* k : {"revenue", "roi", "cost_per_click", "cost_over_budget"}) {
      EXPECT_TRUE(m["total"][k].is_number()) << name << " " << k;
      EXPECT_TRUE(m["total"].contains(std::string(k) + "_std")) << name << " " << k;
    }
    EXPECT_TRUE(std::filesystem::exists(out + "/" + name + "/action_table.json")) << name;
    if (name != "manual") {
      EXPECT_EQ(m["curve"]["mean"].size(), 6u) << name;
      EXPECT_TRUE(std::filesystem::exists(out + "/" + name + "/seed0/actors/actor_0.pt"));
      EXPECT_TRUE(std::filesystem::exists(out + "/" + name + "/seed1/episodes.csv"));
    }
  }
  EXPECT_TRUE(std::filesystem::exists(out + "/dcmab/seed0/replay/CURRENT"));
  std::filesystem::remove_all(out);
}

TEST(TrainSmoke, SameSeedSameReport) {
  const std::string out = ::testing::TempDir() + "/train_det_" + std::to_string(::getpid());
  TrainOptions opt;
  opt.algos = {"dcmab"};
  opt.out = out + "/a";
  opt.progress = false;
  auto a = RunTraining(Tiny(), opt);
  opt.out = out + "/b";
  opt.jobs = 1;  // scheduling must not matter
  auto b = RunTraining(Tiny(), opt);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(RenderJson(*a), RenderJson(*b));
  std::filesystem::remove_all(out);
}

TEST(TrainSmoke, ResumeFromCheckpointMatchesAnUninterruptedRun) {
  const std::string out = ::testing::TempDir() + "/train_resume_" + std::to_string(::getpid());
  std::filesystem::remove_all(out);
  LearnerConfig c = Tiny();
  c.seeds = 1;
  c.checkpoint_every = 1;
  TrainOptions opt;
  opt.algos = {"dcmab"};
  opt.progress = false;
  opt.out = out + "/straight";
  auto straight = RunTraining(c, opt);
  ASSERT_TRUE(straight.ok());
  // Interrupted after 3 episodes, then resumed to 6.
  LearnerConfig first = c;
  first.episodes = 3;
  opt.out = out + "/resumed";
  ASSERT_TRUE(RunTraining(first, opt).ok());
  opt.resume = true;
  auto resumed = RunTraining(c, opt);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_EQ(RenderJson(*straight), RenderJson(*resumed));
  std::filesystem::remove_all(out);
}

// rtb train --world: a world fitted to logged events replaces the config's, its market too (two
// agents here, where the tiny config's world has three); a world that is not there is an error
// naming it.
TEST(TrainSmoke, TrainsInAWorldFittedToLoggedEvents) {
  const std::string out = ::testing::TempDir() + "/train_fitted_" + std::to_string(::getpid());
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out);
  sim::FittedWorld w;
  for (int k = 0; k < 4; ++k) {
    w.market.advertisers.push_back({k + 1, k / 2, Micros::FromUnits(1.0), Micros::FromUnits(5.0),
                                    Micros::FromUnits(50), Goal{}});
  }
  w.market.clusters = 2;
  w.market.steps = 3;
  w.market.learned_share = 0.5;
  Rng rng(3);
  for (int i = 0; i < 900; ++i) {
    sim::FittedBid b;
    b.step = i % 3;
    b.cluster = static_cast<int>(rng.UniformInt(2));
    b.adv = static_cast<uint32_t>(rng.UniformInt(4));
    b.pctr = 0.01;
    b.pcvr = 0.05;
    w.bids.push_back(b);
  }
  w.comp_mu = std::log(8.0);
  w.comp_sigma = 0.5;
  w.lift = {1, 3, 1, 1, 2, 1, 1, 1};
  w.avg_pcvr.assign(4, 0.05);
  w.revenue_hist.assign(3, std::vector<double>(2, 1.0));
  w.cost_hist = w.revenue_hist;
  std::ofstream(out + "/world.json") << w.ToJson();

  LearnerConfig c = Tiny();
  c.seeds = 1;
  c.episodes = 3;
  TrainOptions opt;
  opt.algos = {"dcmab"};
  opt.progress = false;
  opt.out = out + "/train";
  opt.world = out + "/world.json";
  auto r = RunTraining(c, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const MethodResult* m = r->Find("dcmab");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->runs.size(), 1u);
  EXPECT_EQ(m->runs[0].rows.size(), 2u);  // the fitted market's two agents
  EXPECT_GT(r->Find("manual")->runs[0].total.impressions, 0);
  EXPECT_NE(RenderMarkdown(*r).find("a world fitted to logged events"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(out + "/train/dcmab/seed0/best"));

  opt.world = out + "/none.json";
  auto missing = RunTraining(c, opt);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none.json"), std::string::npos);
  std::filesystem::remove_all(out);
}

// episodes.csv as rows of numbers by column name (an empty cell is NaN).
std::vector<std::vector<double>> ReadEpisodes(const std::string& path,
                                              std::vector<std::string>* header) {
  std::ifstream in(path);
  std::string line, cell;
  std::getline(in, line);
  std::stringstream hs(line);
  while (std::getline(hs, cell, ',')) header->push_back(cell);
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    std::vector<double> row;
    std::stringstream ls(line);
    while (std::getline(ls, cell, ',')) row.push_back(cell.empty() ? NAN : std::stod(cell));
    if (line.back() == ',') row.push_back(NAN);
    rows.push_back(row);
  }
  return rows;
}

// The reported test revenue is the test-day revenue of the episode with the best score on the
// held-out validation days (first of equals); with validation_days: 0, of the best training score.
TEST(TrainSmoke, TheModelIsPickedOnTheValidationDays) {
  for (const int validation_days : {2, 0}) {
    const std::string out = ::testing::TempDir() + "/train_pick_" + std::to_string(::getpid());
    std::filesystem::remove_all(out);
    LearnerConfig c = Tiny();
    c.seeds = 1;
    c.episodes = 10;
    c.base_seed = 3;  // a run whose best training and best validation episodes differ
    c.validation_days = validation_days;
    TrainOptions opt;
    opt.algos = {"dcmab"};
    opt.progress = false;
    opt.out = out;
    auto r = RunTraining(c, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<std::string> header;
    const auto rows = ReadEpisodes(out + "/dcmab/seed0/episodes.csv", &header);

    ASSERT_GE(header.size(), 5u);
    ASSERT_EQ(rows.size(), 10u);
    ASSERT_EQ(header[4], "validation_score");
    const size_t score_col = validation_days > 0 ? 4 : 3;
    size_t best = 0, best_train = 0;
    for (size_t e = 0; e < rows.size(); ++e) {
      ASSERT_EQ(std::isnan(rows[e][4]), validation_days == 0) << e;
      if (rows[e][score_col] > rows[best][score_col]) best = e;
      if (rows[e][3] > rows[best_train][3]) best_train = e;
    }
    if (validation_days > 0) {
      ASSERT_NE(best, best_train) << "the two picks must differ for this test to tell them apart";
      ASSERT_NE(rows[best][2], rows[best_train][2]);
    }
    const auto j = nlohmann::json::parse(RenderJson(*r));
    const double reported = j["methods"]["dcmab"]["total"]["revenue"].get<double>();
    EXPECT_NEAR(reported, rows[best][2], 1e-5 * std::abs(rows[best][2]))
        << "validation_days " << validation_days << ", picked episode " << best;
    std::filesystem::remove_all(out);
  }
}

RunResult RunOf(double revenue, const std::vector<double>& delivery) {
  RunResult r;
  for (double d : delivery) {
    Outcome o;
    o.budget = Micros(1'000'000'000);
    o.cost = Micros(static_cast<int64_t>(d * 1e9));
    r.rows.push_back(o);
  }
  r.total.revenue = Micros(static_cast<int64_t>(revenue * 1e6));
  return r;
}

// Each agent is held to its own reference: an agent that delivers all it can is not discounted,
// below it the discount is (delivery / reference)^50, and the worst (agent, day) sets it.
TEST(TrainingScore, HoldsEachAgentToWhatItCanDeliver) {
  const std::vector<RunResult> runs = {RunOf(100, {0.95, 0.995})};
  EXPECT_DOUBLE_EQ(TrainingScore(runs, {{0.95, 0.99}}), 100);
  EXPECT_NEAR(TrainingScore(runs, {{0.99, 0.99}}), 100 * std::pow(0.95 / 0.99, 50), 1e-9);
  EXPECT_NEAR(TrainingScore({RunOf(100, {0.94, 0.995})}, {{0.95, 0.99}}),
              100 * std::pow(0.94 / 0.95, 50), 1e-9);
  // Two days: revenues add, the worse day's shortfall discounts both.
  const std::vector<RunResult> two = {RunOf(100, {0.99, 0.99}), RunOf(50, {0.97, 0.99})};
  EXPECT_NEAR(TrainingScore(two, {{0.99, 0.99}, {0.99, 0.99}}), 150 * std::pow(0.97 / 0.99, 50),
              1e-9);
  EXPECT_DOUBLE_EQ(TrainingScore(two, {{0.99, 0.99}, {0.97, 0.99}}), 150);
}

// Budgets that bind (a third of what manual bids spend): every agent can deliver 99%, so the
// reference is pick_delivery. Budgets no bid can spend (three times it): the reference is what the
// agent delivers at its highest bids, under 99% and at least what manual bids deliver.
TEST(TrainingScore, TheReferenceIsTheMostAnAgentCanDeliver) {
  for (const double fraction : {1.0 / 3, 3.0}) {
    LearnerConfig c = Tiny();
    c.sim.market.budget_fraction = fraction;
    auto sc = sim::BuildScenario(c.sim, "", "", /*progress=*/false);
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    const sim::Scenario& s = **sc;
    const std::vector<double> ref = DeliveryReference(0.99, s, s.test, s.test_budgets);
    const RunResult manual = sim::EvaluateTable(s, s.test, s.test_budgets,
                                                ActionTable(s.market.agents, s.market.clusters));
    ASSERT_EQ(ref.size(), static_cast<size_t>(s.market.agents));
    for (size_t i = 0; i < ref.size(); ++i) {
      const double manual_delivery = CostOverBudget(manual.rows[i]);
      if (fraction < 1) {
        EXPECT_EQ(ref[i], 0.99) << "agent " << i + 1;
      } else {
        EXPECT_LT(ref[i], 0.9) << "agent " << i + 1;
        EXPECT_GT(ref[i], manual_delivery) << "agent " << i + 1;
      }
    }
  }
}

TEST(LearnerConfig, TheShippedConfigsLoadWithTheirWorlds) {
  const std::string dir = std::string(RTB_SOURCE_DIR) + "/configs/learner/";
  auto d = LoadLearnerConfig(dir + "default.yaml");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->sim.auction.slots, 3);
  // The coordination world: the default learner, one slot (configs/simulator/coordination.yaml).
  auto c = LoadLearnerConfig(dir + "coordination.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->sim.auction.slots, 1);
  EXPECT_EQ(c->seeds, d->seeds);
  EXPECT_EQ(c->episodes, d->episodes);
  EXPECT_EQ(c->hp.actor_lr, d->hp.actor_lr);
}

TEST(LearnerConfig, ValidationDaysAreBounded) {
  const std::string kSimConfig =
      "simulator_config: " RTB_SOURCE_DIR "/configs/simulator/default.yaml\n";
  const std::string path = ::testing::TempDir() + "/learner_cfg_" + std::to_string(::getpid());
  for (const char* v : {"-1", "101"}) {
    std::ofstream(path) << kSimConfig << "validation_days: " << v << "\n";
    auto c = LoadLearnerConfig(path);
    ASSERT_FALSE(c.ok()) << v;
    EXPECT_NE(c.status().message().find("validation_days"), std::string::npos)
        << c.status().message();
  }
  std::ofstream(path) << kSimConfig << "validation_days: 3\n";
  auto c = LoadLearnerConfig(path);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->validation_days, 3);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace rtb::learn
