// The pacing agent's trainer: Algorithm 1 with one agent on windows of a training log.
#include <gtest/gtest.h>

#include <filesystem>

#include "rtb/learner/pacing.h"
#include "rtb/simulator/replay.h"

namespace rtb::learn {
namespace {

struct Fixture {
  std::vector<sim::LoggedAuction> log;
  sim::CampaignInfo info;
  Fixture() {
    const std::string text = sim::GenerateCompactLog(20000, 11, &info);
    log = sim::ParseCompactLog(text, "train", {})->auctions;
  }
};

PacingTrainOptions Small() {
  PacingTrainOptions o;
  o.protocol = {1.0 / 16, 1000, 300};
  o.steps = 5;
  o.episodes = 30;
  o.eval_every = 10;
  o.hp = PacingHyperParams();
  o.hp.warmup_transitions = 20;
  o.hp.actor_hidden = 16;
  o.hp.critic_hidden = 16;
  o.progress = false;
  return o;
}

TEST(PacingTrain, PublishesAFullTableAndKeepsTheBestEvaluation) {
  Fixture f;
  auto r = TrainPacing(f.log, f.info, Small());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const sim::PacingTable& t = r->table;
  EXPECT_EQ(t.actions.size(), static_cast<size_t>(5 * t.budget_buckets * t.level_buckets));
  for (const float a : t.actions) {
    EXPECT_GE(a, -1.0f);
    EXPECT_LE(a, 1.0f);
  }
  EXPECT_GT(t.params.b0, 0);  // tuned on the log
  ASSERT_EQ(r->curve.size(), 3u);
  for (const double c : r->curve) EXPECT_LE(c, r->best_train.expected_clicks);
  // The kept table replays to the totals the trainer recorded.
  sim::PacingStrategy s(
      t.params, [&t](const std::vector<float>& st) { return t.Lookup(st); }, false);
  const auto again = sim::ReplayRlb(f.log, f.info, Small().protocol, s);
  EXPECT_EQ(again.impressions, r->best_train.impressions);
  EXPECT_EQ(again.cost, r->best_train.cost);
  // Training moved the actor off zero (it is not Lin-Bid in disguise).
  bool nonzero = false;
  for (const float a : t.actions) nonzero = nonzero || std::abs(a) > 1e-3f;
  EXPECT_TRUE(nonzero);
}

TEST(PacingTrain, SameSeedSameTableAndARocksDbStore) {
  Fixture f;
  auto a = TrainPacing(f.log, f.info, Small());
  const auto dir = std::filesystem::temp_directory_path() / "rtb-pacing-store-test";
  std::filesystem::remove_all(dir);
  PacingTrainOptions o = Small();
  o.store_dir = dir.string();
  auto b = TrainPacing(f.log, f.info, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->table.actions, b->table.actions);
  EXPECT_TRUE(std::filesystem::exists(dir));
  std::filesystem::remove_all(dir);
}

TEST(PacingTrain, RefusesLogsShorterThanAnEpisodeAndStepsThatDoNotDivide) {
  Fixture f;
  std::vector<sim::LoggedAuction> tiny(f.log.begin(), f.log.begin() + 500);
  EXPECT_FALSE(TrainPacing(tiny, f.info, Small()).ok());
  PacingTrainOptions o = Small();
  o.steps = 7;
  EXPECT_FALSE(TrainPacing(f.log, f.info, o).ok());
}

}  // namespace
}  // namespace rtb::learn
