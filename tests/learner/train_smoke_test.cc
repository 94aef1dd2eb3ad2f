// A short end-to-end training run of every method on a tiny world (cleanrl-style smoke test).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "rtb/learner/train.h"

namespace rtb::learn {
namespace {

LearnerConfig Tiny() {
  LearnerConfig c;
  c.sim.world.advertisers = 200;
  c.sim.world.consumers = 1000;
  c.sim.day.requests = 3000;
  c.seeds = 2;
  c.episodes = 6;
  c.patience = 50;
  c.hp.actor_hidden = 32;
  c.hp.critic_hidden = 16;
  c.hp.updates_per_step = 2;
  c.hp.rollouts_per_episode = 2;
  c.hp.warmup_transitions = 4;
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

}  // namespace
}  // namespace rtb::learn
