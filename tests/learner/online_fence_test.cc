// One learner publishes a group's tables (learner/README.md, "Fencing"), on librdkafka's mock
// cluster: a second learner started against the group fences the first, which stops with one
// clear error; a learner whose table Kafka refuses as fenced stops the same way; a restarted
// learner publishes each version once and stores each step once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "online_harness.h"
#include "rtb/learner/replay_store.h"

namespace rtb::learn {
namespace {

constexpr char kFenced[] = "another learner took over the group's tables (fenced)";

// Where a test's learners run: the cluster and the learner's topics.
struct Where {
  std::string bootstrap;
  std::string events = "rtb.events", policy = "rtb.policy", clock = "rtb.clock";
};

// Step k of MarkerAt's clock: its clean events spread over the events topic's `partitions`, then
// its marker (expecting them all).
void Feed(kafka::Producer& producer, int k, int partitions, const Where& w = {}) {
  const std::vector<std::string> events = CleanEvents(k);
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_TRUE(
        producer.Produce(w.events, static_cast<int32_t>(i % partitions), "", events[i]).ok());
  }
  StepMarker m = MarkerAt(k);
  m.expected_events = static_cast<int64_t>(events.size());
  ASSERT_TRUE(producer.Produce(w.clock, 0, "", EncodeStepMarker(m)).ok());
  ASSERT_TRUE(producer.Flush(10000).ok());
}

std::unique_ptr<kafka::Producer> TestProducer(const std::string& bootstrap) {
  kafka::Producer::Options po;
  po.bootstrap = bootstrap;
  auto p = kafka::Producer::Create(std::move(po));
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? std::move(*p) : nullptr;
}

// What a state dir's replay store holds: each transition's (day, step), in order, and each
// stored step's event count (its summary, u:step:<day>:<step>) for the first `steps` steps.
struct Stored {
  std::vector<std::pair<uint64_t, uint32_t>> transitions;
  std::map<int, int64_t> events;  // step index k -> events merged
};
Stored ReadStore(const std::string& dir, int steps) {
  Stored out;
  auto store = OpenRocksDbReplayStore(dir + "/replay");
  EXPECT_TRUE(store.ok()) << store.status().message();
  if (!store.ok()) return out;
  for (uint64_t q = (*store)->FirstSeq(); q < (*store)->NextSeq(); ++q) {
    auto t = (*store)->Get(q);
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (t.ok()) out.transitions.emplace_back(t->episode, t->step);
  }
  for (int k = 0; k < steps; ++k) {
    auto s = (*store)->GetMeta("step:" + std::to_string(k / 3) + ":" + std::to_string(k % 3));
    if (s.ok()) out.events[k] = nlohmann::json::parse(*s).at("events").get<int64_t>();
  }
  return out;
}

std::vector<std::pair<uint64_t, uint32_t>> Steps(int from, int to) {
  std::vector<std::pair<uint64_t, uint32_t>> v;
  for (int k = from; k < to; ++k) v.emplace_back(k / 3, k % 3);
  return v;
}

// Learner A (config `cfg_a`) closes steps 0 and 1 of `w`'s topics (2 events partitions); B, of
// the same group with a state dir of its own, starts: A must stop, fenced, and B close steps
// 0 to 3 from all their events while publishing only tables 4 and 5.
void SecondLearnerFencesTheFirst(const Where& w, LearnerConfig cfg_a) {
  LearnerConfig cfg_b = cfg_a;
  cfg_b.online.state_dir = cfg_a.online.state_dir + "_b";
  std::filesystem::remove_all(cfg_b.online.state_dir);
  for (LearnerConfig* c : {&cfg_a, &cfg_b}) {
    c->online.events_topic = w.events;
    c->online.policy_topic = w.policy;
    c->online.clock_topic = w.clock;
    c->online.step_grace_ms = 60'000;  // steps close on all their events
  }
  std::unique_ptr<kafka::Producer> producer = TestProducer(w.bootstrap);
  ASSERT_NE(producer, nullptr);

  RunningLearner first;
  ASSERT_NO_FATAL_FAILURE(first.Start(cfg_a, 100));
  for (int k = 0; k < 2; ++k) ASSERT_NO_FATAL_FAILURE(Feed(*producer, k, 2, w));
  const bool first_published =
      test::WaitUntil([&] { return PolicyVersions(w.bootstrap, w.policy).contains(3); },
                      std::chrono::seconds(60), std::chrono::milliseconds(100));
  ASSERT_TRUE(first_published) << "the first learner did not close steps 0 and 1";

  RunningLearner second;
  ASSERT_NO_FATAL_FAILURE(second.Start(cfg_b, 4, /*capture_stderr=*/false));
  const bool first_stopped =
      test::WaitUntil([&] { return first.finished.load(); }, std::chrono::seconds(60));
  ASSERT_TRUE(first_stopped) << "the first learner was not fenced";
  EXPECT_FALSE(first.result.ok());
  EXPECT_NE(first.result.message().find(kFenced), std::string::npos) << first.result.message();
  EXPECT_NE(first.result.message().find("the group's claim names"), std::string::npos)
      << first.result.message();
  for (int k = 2; k < 4; ++k) ASSERT_NO_FATAL_FAILURE(Feed(*producer, k, 2, w));
  const bool in_time = second.Stop().first;
  const std::string out = first.Stop().second;  // both learners' log
  ASSERT_TRUE(in_time) << "the second learner did not close 4 steps:\n" << out;
  ASSERT_TRUE(second.result.ok()) << second.result.message();

  EXPECT_EQ(PolicyVersions(w.bootstrap, w.policy),
            (std::map<uint64_t, int>{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}));
  const Stored a = ReadStore(cfg_a.online.state_dir, 2), b = ReadStore(cfg_b.online.state_dir, 4);
  EXPECT_EQ(a.transitions, Steps(0, 2));
  EXPECT_EQ(b.transitions, Steps(0, 4));
  EXPECT_EQ(a.events, (std::map<int, int64_t>{{0, 6}, {1, 6}}));
  EXPECT_EQ(b.events, (std::map<int, int64_t>{{0, 6}, {1, 6}, {2, 6}, {3, 6}}))
      << "a step closed on part of its events";
  std::filesystem::remove_all(cfg_a.online.state_dir);
  std::filesystem::remove_all(cfg_b.online.state_dir);
}

// Regression: a second learner of the group split its partitions with the first (the group gave
// each part of the events, and the clock's one partition to one of them), so steps closed on
// part of the events and both could publish a table for one step. Now the second reads every
// partition itself and takes the tables over: the first, fenced, stops with one clear error;
// the second closes every step from all of its events and publishes only the versions the
// policy topic does not hold, so each version is there once.
TEST(Online, ASecondLearnerOfTheGroupFencesTheFirstAndEachStepHasOneTable) {
  std::string dir;
  std::unique_ptr<kafka::MockCluster> mock;
  LearnerConfig cfg;
  ASSERT_NO_FATAL_FAILURE(LearnerOnMock("fence_two", &mock, &cfg, &dir, 2));
  SecondLearnerFencesTheFirst({.bootstrap = mock->bootstrap()}, cfg);
}

// The same on a real cluster (the `kafka` tier: tests/kafka/real_fencing_test.sh gives it and
// topics <prefix>.events (2 partitions), .policy and .clock in RTB_REAL_KAFKA_BOOTSTRAP and
// RTB_REAL_KAFKA_TOPIC; skipped without them), where Kafka's transactions fence as well.
TEST(Online, OnARealClusterASecondLearnerFencesTheFirstAndEachStepHasOneTable) {
  const char* bootstrap = std::getenv("RTB_REAL_KAFKA_BOOTSTRAP");
  const char* prefix = std::getenv("RTB_REAL_KAFKA_TOPIC");
  if (bootstrap == nullptr || prefix == nullptr) GTEST_SKIP() << "no real cluster given";
  const std::string p = prefix;
  std::string dir;
  LearnerConfig cfg;
  ASSERT_NO_FATAL_FAILURE(LoopLearnerConfig(bootstrap, "fence_real", &cfg, &dir));
  cfg.online.group_id = p + ".learners";
  SecondLearnerFencesTheFirst({.bootstrap = bootstrap,
                               .events = p + ".events",
                               .policy = p + ".policy",
                               .clock = p + ".clock"},
                              cfg);
}

// On a real cluster a newer learner's start fences the older one's producer: its next commit is
// refused. The embedded cluster does not fence by itself; it refuses one commit as fenced here.
// The learner publishes nothing more, stops with the error, and closes no step after.
TEST(Online, ALearnerWhoseTableKafkaRefusesAsFencedStopsWithTheError) {
  std::string dir;
  std::unique_ptr<kafka::MockCluster> mock;
  LearnerConfig cfg;
  ASSERT_NO_FATAL_FAILURE(LearnerOnMock("fence_kafka", &mock, &cfg, &dir));
  std::unique_ptr<kafka::Producer> producer = TestProducer(mock->bootstrap());
  ASSERT_NE(producer, nullptr);
  RunningLearner learner;
  ASSERT_NO_FATAL_FAILURE(learner.Start(cfg, 100));
  ASSERT_TRUE(test::WaitUntil([&] { return PolicyVersions(*mock).contains(1); },
                              std::chrono::seconds(30), std::chrono::milliseconds(100)));
  mock->FenceNextTransactionCommits(1);
  ASSERT_NO_FATAL_FAILURE(Feed(*producer, 0, 1));
  const bool stopped =
      test::WaitUntil([&] { return learner.finished.load(); }, std::chrono::seconds(30));
  ASSERT_NO_FATAL_FAILURE(Feed(*producer, 1, 1));
  const auto [in_time, out] = learner.Stop();
  ASSERT_TRUE(stopped) << out;
  EXPECT_NE(learner.result.message().find(kFenced), std::string::npos) << learner.result.message();
  EXPECT_NE(learner.result.message().find("Kafka refused its transaction"), std::string::npos)
      << learner.result.message();
  EXPECT_EQ(ReadStore(dir, 2).transitions, Steps(0, 1)) << out;
  EXPECT_EQ(out.find("closed day 0 step 1:"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

// Stopped and started again on its state dir, a learner goes on from its stored position: each
// step stored once, and each table version on the policy topic once (it published the table it
// plays again at every start before).
TEST(Online, ARestartedLearnerStoresEachStepOnceAndPublishesEachVersionOnce) {
  std::string dir;
  std::unique_ptr<kafka::MockCluster> mock;
  LearnerConfig cfg;
  ASSERT_NO_FATAL_FAILURE(LearnerOnMock("fence_restart", &mock, &cfg, &dir));
  cfg.online.step_grace_ms = 60'000;
  std::unique_ptr<kafka::Producer> producer = TestProducer(mock->bootstrap());
  ASSERT_NE(producer, nullptr);
  for (int run = 0; run < 2; ++run) {
    RunningLearner learner;
    ASSERT_NO_FATAL_FAILURE(learner.Start(cfg, 2));
    for (int k = 2 * run; k < 2 * run + 2; ++k) ASSERT_NO_FATAL_FAILURE(Feed(*producer, k, 1));
    const auto [in_time, out] = learner.Stop();
    ASSERT_TRUE(in_time) << "run " << run << " did not close 2 steps:\n" << out;
    ASSERT_TRUE(learner.result.ok()) << learner.result.message();
    if (run == 1) {
      EXPECT_NE(out.find("table v3 is on rtb.policy already: not published again"),
                std::string::npos)
          << out;
    }
  }
  EXPECT_EQ(PolicyVersions(*mock),
            (std::map<uint64_t, int>{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}));
  EXPECT_EQ(ReadStore(dir, 4).transitions, Steps(0, 4));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rtb::learn
