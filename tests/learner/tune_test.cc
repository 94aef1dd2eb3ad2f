#include "rtb/learner/tune.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tiny_config.h"

namespace rtb::learn {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The shipped default learner config, its world made absolute so that the copy loads anywhere.
std::string DefaultConfigText() {
  std::string t = ReadText(std::string(RTB_SOURCE_DIR) + "/configs/learner/default.yaml");
  return std::regex_replace(t, std::regex("simulator_config: \\.\\./simulator/default\\.yaml"),
                            "simulator_config: " RTB_SOURCE_DIR "/configs/simulator/default.yaml");
}

TEST(Tune, RungsGrowByEtaAndEndAtTheMaximum) {
  EXPECT_EQ(*TuneRungs(25, 2, 150), (std::vector<int>{25, 50, 100, 150}));
  EXPECT_EQ(*TuneRungs(10, 3, 90), (std::vector<int>{10, 30, 90}));
  EXPECT_EQ(*TuneRungs(10, 2, 10), (std::vector<int>{10}));
  EXPECT_FALSE(TuneRungs(0, 2, 10).ok());
  EXPECT_FALSE(TuneRungs(5, 1, 10).ok());
  EXPECT_FALSE(TuneRungs(20, 2, 10).ok());
}

TEST(Tune, TrialZeroIsTheConfigAndTheOthersAreSeededDrawsInTheSpace) {
  LearnerConfig c;
  c.hp.actor_lr = 0.0123;
  c.delivery_penalty = 17;
  const TrialParams p0 = DrawTrialParams(c, 0, 5);
  EXPECT_EQ(p0.actor_lr, 0.0123);
  EXPECT_EQ(p0.delivery_penalty, 17);
  EXPECT_EQ(p0.batch_size, c.hp.batch_size);
  bool differ = false;
  for (int t = 1; t <= 50; ++t) {
    const TrialParams p = DrawTrialParams(c, t, 5);
    EXPECT_GE(p.actor_lr, 1e-4);
    EXPECT_LE(p.actor_lr, 3e-3);
    EXPECT_GE(p.critic_lr, 1e-4);
    EXPECT_LE(p.critic_lr, 3e-3);
    EXPECT_GE(p.tau, 0.003);
    EXPECT_LE(p.tau, 0.03);
    EXPECT_TRUE(p.batch_size == 32 || p.batch_size == 64 || p.batch_size == 128);
    EXPECT_TRUE(p.updates_per_step == 4 || p.updates_per_step == 8 || p.updates_per_step == 16);
    EXPECT_GE(p.noise_sigma, 0.1);
    EXPECT_LE(p.noise_sigma, 0.5);
    EXPECT_GE(p.delivery_penalty, 5);
    EXPECT_LE(p.delivery_penalty, 40);
    const TrialParams again = DrawTrialParams(c, t, 5);  // same seed, same draw
    EXPECT_EQ(p.actor_lr, again.actor_lr);
    EXPECT_EQ(p.batch_size, again.batch_size);
    differ = differ || DrawTrialParams(c, t, 6).actor_lr != p.actor_lr;
  }
  EXPECT_TRUE(differ);  // another seed, other configurations
  const LearnerConfig w = WithParams(c, DrawTrialParams(c, 3, 5));
  EXPECT_EQ(w.hp.tau, DrawTrialParams(c, 3, 5).tau);
  EXPECT_EQ(w.delivery_penalty, DrawTrialParams(c, 3, 5).delivery_penalty);
}

TEST(Tune, TheBestConfigIsTheBaseTextWithTheTunedValuesAndLoads) {
  const std::string dir = ::testing::TempDir() + "/tune_text_" + std::to_string(::getpid());
  fs::create_directories(dir);
  const std::string base = DefaultConfigText();
  TrialParams p;
  p.actor_lr = 0.00042;
  p.critic_lr = 0.0021;
  p.tau = 0.005;
  p.batch_size = 128;
  p.updates_per_step = 16;
  p.noise_sigma = 0.25;
  p.delivery_penalty = 12.5;
  auto text = RewriteConfigText(base, p);
  ASSERT_TRUE(text.ok()) << text.status().message();
  // Only values change: every line and comment stays.
  EXPECT_EQ(std::count(text->begin(), text->end(), '\n'),
            std::count(base.begin(), base.end(), '\n'));
  EXPECT_NE(text->find("actor_lr: 0.00042"), std::string::npos);
  EXPECT_NE(text->find("# Adam, every actor"), std::string::npos);
  std::ofstream(dir + "/best.yaml") << *text;
  auto cfg = LoadLearnerConfig(dir + "/best.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_DOUBLE_EQ(cfg->hp.actor_lr, 0.00042);
  EXPECT_DOUBLE_EQ(cfg->hp.critic_lr, 0.0021);
  EXPECT_DOUBLE_EQ(cfg->hp.tau, 0.005);
  EXPECT_EQ(cfg->hp.batch_size, 128);
  EXPECT_EQ(cfg->hp.updates_per_step, 16);
  EXPECT_DOUBLE_EQ(cfg->hp.noise_sigma, 0.25);
  EXPECT_DOUBLE_EQ(cfg->delivery_penalty, 12.5);
  // A config without a tuned key cannot hold the result: a clear error.
  auto missing = RewriteConfigText("seeds: 4\n", p);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("actor_lr"), std::string::npos);
  fs::remove_all(dir);
}

LearnerConfig Tiny() {
  LearnerConfig c = TinyLearnerConfig();
  c.training_days = 2;
  c.validation_days = 1;
  c.episodes = 4;
  return c;
}

TEST(Tune, SuccessiveHalvingEvictsTheWorstAndTheSameSeedGivesTheSameSearch) {
  const std::string dir = ::testing::TempDir() + "/tune_run_" + std::to_string(::getpid());
  fs::create_directories(dir);
  std::ofstream(dir + "/learner.yaml") << DefaultConfigText();
  TuneOptions o;
  o.trials = 3;
  o.min_episodes = 2;
  o.eta = 2;
  o.max_episodes = 4;
  o.seed = 3;
  o.config_path = dir + "/learner.yaml";
  o.progress = false;
  o.out = dir + "/a";
  auto r = RunTuning(Tiny(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->rungs, (std::vector<int>{2, 4}));
  ASSERT_EQ(r->trials.size(), 3u);
  // Rung 2: all three; the worst is evicted there, the best two go on to 4 episodes.
  int evicted = 0;
  for (const Trial& t : r->trials) {
    if (t.stopped_at == 2) {
      ++evicted;
      EXPECT_EQ(t.scores.size(), 1u);
      EXPECT_EQ(t.curve.size(), 2u);
      for (const Trial& u : r->trials) {
        if (u.stopped_at == 0) {
          EXPECT_GE(u.scores[0], t.scores[0]);
        }
      }
    } else {
      EXPECT_EQ(t.scores.size(), 2u);
      EXPECT_EQ(t.curve.size(), 4u);
      // The score at a rung is the best validation score of the episodes so far (episodes.csv
      // keeps 6 digits).
      const double top = *std::max_element(t.curve.begin(), t.curve.end());
      EXPECT_NEAR(t.scores[1], top, 1e-5 * top);
    }
  }
  EXPECT_EQ(evicted, 1);
  EXPECT_EQ(r->episodes, 2 + 4 + 4);
  EXPECT_DOUBLE_EQ(r->full_runs, 10.0 / (4 * 2));
  const Trial& best = r->trials[static_cast<size_t>(r->best)];
  EXPECT_EQ(best.stopped_at, 0);
  for (const Trial& t : r->trials) {
    if (t.stopped_at == 0) {
      EXPECT_GE(best.scores.back(), t.scores.back());
    }
  }
  // best.yaml: the base config with the winner's values; it loads and finds its world.
  auto cfg = LoadLearnerConfig(o.out + "/best.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->hp.tau, best.params.tau);
  EXPECT_EQ(cfg->hp.actor_lr, best.params.actor_lr);
  EXPECT_EQ(cfg->hp.batch_size, best.params.batch_size);
  // The report lists every trial.
  const auto j = nlohmann::json::parse(ReadText(o.out + "/report.json"));
  EXPECT_EQ(j["trials"].size(), 3u);
  EXPECT_EQ(j["best_trial"], r->best);
  EXPECT_NE(ReadText(o.out + "/report.md").find("evicted at 2 episodes"), std::string::npos);
  EXPECT_NE(ReadText(o.out + "/report.html").find("<svg"), std::string::npos);
  // Same seed, same search.
  o.out = dir + "/b";
  auto again = RunTuning(Tiny(), o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->best, r->best);
  for (size_t t = 0; t < 3; ++t) EXPECT_EQ(again->trials[t].scores, r->trials[t].scores);
  // Bad options are errors, not searches.
  o.trials = 1;
  EXPECT_FALSE(RunTuning(Tiny(), o).ok());
  o.trials = 3;
  o.algo = "manual";
  EXPECT_FALSE(RunTuning(Tiny(), o).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtb::learn
