// One learner publishes a group's tables (learner/README.md, "Fencing"), on librdkafka's mock
// cluster: a second learner started against the group fences the first, which stops with one
// clear error; a learner whose table Kafka refuses as fenced stops the same way; a restarted
// learner publishes each version once and stores each step once. On a real cluster (the `kafka`
// tier) too: the fencing, and a restart after a broker's failure.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "online_harness.h"
#include "rtb/core/rocksdb_log.h"
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

// Runs the real cluster's control command (RTB_REAL_KAFKA_CLUSTER: scripts/kafka_cluster.sh on
// the test's cluster) with `args` ("leader TOPIC P", "kill N", "restart N"): what it printed, or
// nothing when it failed.
std::optional<std::string> ClusterCommand(const std::string& cluster, const std::string& args) {
  FILE* f = ::popen((cluster + " " + args).c_str(), "r");
  if (f == nullptr) return std::nullopt;
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f) != nullptr) out += buf;
  if (::pclose(f) != 0) return std::nullopt;
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

// A node of the real cluster, SIGKILLed; StartAgain() starts it on a thread of its own (the
// command waits until it answers), and so does the destructor if the test did not: the tier's
// next tests need the whole cluster.
class KilledNode {
 public:
  KilledNode(std::string cluster, std::string node)
      : cluster_(std::move(cluster)), node_(std::move(node)) {
    killed_ = ClusterCommand(cluster_, "kill " + node_).has_value();
  }
  ~KilledNode() {
    if (!started_) StartAgain();
    (void)Up();
  }
  bool killed() const { return killed_; }
  void StartAgain() {
    started_ = true;
    restart_ =
        std::thread([this] { up_ = ClusterCommand(cluster_, "restart " + node_).has_value(); });
  }
  // Waits for StartAgain's command; whether the node answers again.
  bool Up() {
    if (restart_.joinable()) restart_.join();
    return up_;
  }

 private:
  const std::string cluster_, node_;
  bool killed_ = false, started_ = false, up_ = false;
  std::thread restart_;
};

// How many transitions a running learner's replay store has taken (its m:next marker, read by a
// read-only instance beside the learner's: the write-ahead log holds every append that returned);
// -1 while it cannot be read.
int64_t TransitionsStored(const std::string& dir) {
  rocksdb::Options o;
  o.info_log = log::NewProcessLogger("replay");
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(o, dir + "/replay", &raw).ok()) return -1;
  const std::unique_ptr<rocksdb::DB> db(raw);
  std::string v;
  if (!db->Get(rocksdb::ReadOptions(), "m:next", &v).ok() || v.size() != 8) return -1;
  int64_t next = 0;
  for (char c : v) next = (next << 8) | static_cast<uint8_t>(c);
  return next;
}

// A learner restarted after a broker's failure neither loses nor counts twice a step, and
// publishes each table once. The first learner closes steps 0 and 1; the node leading the policy
// partition is SIGKILLed under it; step 2 comes in (on partitions of the other nodes:
// tests/kafka/real_fencing_test.sh places them so), and once the learner has stored it, it is
// stopped, its table v4 published or (most often) left in an open transaction. The second starts
// on the same state dir while that node is down (its start waits for Kafka to end that
// transaction, which needs the partition's new leader), the node starting again meanwhile;
// steps 3 and 4 come in. Each of steps 0-4 is stored once with all its events, and each table
// version 1-6 is on the policy topic once. The `kafka` tier gives the cluster, its control
// command (RTB_REAL_KAFKA_CLUSTER: scripts/kafka_cluster.sh, which kills and restarts a node)
// and topics of its own (RTB_REAL_KAFKA_TOPIC); skipped without them.
TEST(Online, OnARealClusterALearnerRestartedAfterABrokerFailureStoresEachStepOnce) {
  const char* bootstrap = std::getenv("RTB_REAL_KAFKA_BOOTSTRAP");
  const char* prefix = std::getenv("RTB_REAL_KAFKA_TOPIC");
  const char* cluster = std::getenv("RTB_REAL_KAFKA_CLUSTER");
  if (bootstrap == nullptr || prefix == nullptr || cluster == nullptr) {
    GTEST_SKIP() << "no real cluster given (with its control command)";
  }
  const std::string p = prefix;
  const Where w{.bootstrap = bootstrap,
                .events = p + ".events",
                .policy = p + ".policy",
                .clock = p + ".clock"};
  std::string dir;
  LearnerConfig cfg;
  ASSERT_NO_FATAL_FAILURE(LoopLearnerConfig(bootstrap, "restart_real", &cfg, &dir));
  cfg.online.group_id = p + ".learners";
  cfg.online.events_topic = w.events;
  cfg.online.policy_topic = w.policy;
  cfg.online.clock_topic = w.clock;
  cfg.online.step_grace_ms = 60'000;  // steps close on all their events
  std::unique_ptr<kafka::Producer> producer = TestProducer(bootstrap);
  ASSERT_NE(producer, nullptr);

  RunningLearner first;
  ASSERT_NO_FATAL_FAILURE(first.Start(cfg, 100));
  for (int k = 0; k < 2; ++k) ASSERT_NO_FATAL_FAILURE(Feed(*producer, k, 2, w));
  ASSERT_TRUE(test::WaitUntil([&] { return PolicyVersions(bootstrap, w.policy).contains(3); },
                              std::chrono::seconds(60), std::chrono::milliseconds(100)))
      << "the first learner did not close steps 0 and 1";
  const std::optional<std::string> leader = ClusterCommand(cluster, "leader " + w.policy + " 0");
  ASSERT_TRUE(leader.has_value()) << "no leader of " << w.policy;
  KilledNode node(cluster, *leader);
  ASSERT_TRUE(node.killed()) << "node " << *leader << " was not killed";
  ASSERT_NO_FATAL_FAILURE(Feed(*producer, 2, 2, w));
  // Stopped once step 2 is stored, while its table v4 waits for the policy partition's new
  // leader (the brokers fence the node some 9 s after its last heartbeat): most often the
  // learner stops with v4's transaction open.
  const bool stored = test::WaitUntil([&] { return TransitionsStored(dir) == 3; },
                                      std::chrono::seconds(30), std::chrono::milliseconds(20));
  first.stop = true;
  const std::string out1 = first.Stop().second;
  ASSERT_TRUE(stored) << "the first learner did not close step 2:\n" << out1;
  ASSERT_TRUE(first.result.ok()) << first.result.message() << "\n" << out1;

  node.StartAgain();
  RunningLearner second;
  ASSERT_NO_FATAL_FAILURE(second.Start(cfg, 2));
  for (int k = 3; k < 5; ++k) ASSERT_NO_FATAL_FAILURE(Feed(*producer, k, 2, w));
  const auto [in_time, out2] = second.Stop();
  ASSERT_TRUE(in_time) << "the restarted learner did not close steps 3 and 4:\n" << out2;
  ASSERT_TRUE(second.result.ok()) << second.result.message() << "\n" << out2;
  EXPECT_NE(out2.find("resumed at table version 4 after 3 closed steps"), std::string::npos)
      << out2;

  EXPECT_EQ(PolicyVersions(bootstrap, w.policy),
            (std::map<uint64_t, int>{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}}))
      << out1 << out2;
  const Stored stored_steps = ReadStore(dir, 5);
  EXPECT_EQ(stored_steps.transitions, Steps(0, 5));
  EXPECT_EQ(stored_steps.events, (std::map<int, int64_t>{{0, 6}, {1, 6}, {2, 6}, {3, 6}, {4, 6}}));
  EXPECT_TRUE(node.Up()) << "node " << *leader << " did not start again";
  // Which way it went (the tier's log shows it): the first learner's table v4 committed before
  // it stopped, or left in an open transaction that the second's start ended.
  std::cout << "node " << *leader << " (leading " << w.policy << ") killed after step 1; "
            << (out1.find("table v4 not published (") != std::string::npos
                    ? "the first learner stopped with v4 not committed"
                    : "the first learner published v4")
            << "; the second started with the node down\n";
  std::filesystem::remove_all(dir);
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
