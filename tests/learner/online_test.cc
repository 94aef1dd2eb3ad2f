// The online learner against a real Kafka protocol (librdkafka's mock cluster, in-process):
// what it publishes when it starts with no checkpoint.
#include "rtb/learner/online.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <thread>

#include "../common/wait.h"
#include "rtb/core/log.h"
#include "rtb/core/policy.h"
#include "rtb/core/step_marker.h"
#include "rtb/kafka/kafka.h"
#include "rtb/learner/config.h"

namespace rtb::learn {
namespace {

// A fresh mock cluster with the learner's topics (events, policy, clock; one partition each),
// and the loop's learner config on it with a state dir of its own (`name`) and a short grace.
void LearnerOnMock(const std::string& name, std::unique_ptr<kafka::MockCluster>* mock,
                   LearnerConfig* cfg, std::string* dir) {
  *dir = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(*dir);
  auto m = kafka::MockCluster::Start(3);
  ASSERT_TRUE(m.ok()) << m.status().message();
  *mock = std::move(*m);
  for (const char* t : {"rtb.events", "rtb.policy", "rtb.clock"}) {
    ASSERT_TRUE((*mock)->CreateTopic(t, 1, 3).ok());
  }
  auto c = LoadLearnerConfig(RTB_SOURCE_DIR "/tests/loop/learner.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  *cfg = std::move(*c);
  cfg->online.brokers = (*mock)->bootstrap();
  cfg->online.market = RTB_SOURCE_DIR "/configs/bidder/default.yaml";
  cfg->online.state_dir = *dir;
  cfg->online.step_grace_ms = 100;
}

// RunOnline for `max_steps` steps on a thread of its own, its log (a line per closed step and
// what it waits for) captured from stderr, and its latest lines watched as they are written
// (Saw). Stop() waits up to 60 s for those steps, then stops it (a watchdog: a stuck learner
// fails the test instead of hanging it) and says whether it finished in time, and what it wrote.
struct RunningLearner {
  OnlineOptions opt;
  std::atomic<bool> stop{false}, finished{false};
  Status result = Status::Ok();
  std::thread thread;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> lines =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);

  void Start(const LearnerConfig& cfg, int max_steps) {
    opt.max_steps = max_steps;
    opt.stop = &stop;
    ASSERT_TRUE(log::Init({.process = "rtb-test", .level = "info"}).ok());
    log::Get("learner").sinks().push_back(lines);  // before the learner's thread logs
    testing::internal::CaptureStderr();
    thread = std::thread([this, &cfg] {
      result = RunOnline(cfg, opt);
      finished = true;
    });
  }
  // Whether the learner has logged a line containing `text` (of its latest 256), waiting up to
  // `limit` for it.
  bool Saw(const std::string& text, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    return test::WaitUntil(
        [&] {
          for (const std::string& l : lines->last_formatted()) {
            if (l.find(text) != std::string::npos) return true;
          }
          return false;
        },
        limit);
  }
  ~RunningLearner() {  // a test that failed before Stop()
    if (thread.joinable()) {
      stop = true;
      thread.join();
      (void)testing::internal::GetCapturedStderr();
    }
    auto& sinks = log::Get("learner").sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), lines), sinks.end());
  }
  std::pair<bool, std::string> Stop() {
    test::WaitUntil([&] { return finished.load(); }, std::chrono::seconds(60));
    const bool in_time = finished.load();
    stop = true;
    thread.join();
    return {in_time, testing::internal::GetCapturedStderr()};
  }
};

// The end of step k of 3-step days of an hour each.
StepMarker MarkerAt(int k) {
  StepMarker m;
  m.day = k / 3;
  m.step = k % 3;
  m.steps_per_day = 3;
  m.step_ms = 3'600'000;
  return m;
}

// Regression: a learner started with no checkpoint published the random actor's table at once
// (a from -0.59 to +0.20), which the bidders applied. Now: the first table is manual bids, every
// later one stays within a = 0 +- online.cold_start_range, and it says what it is waiting for.
TEST(Online, AColdStartPublishesManualBidsThenStaysWithinItsRangeAndSaysWhatItWaitsFor) {
  std::string dir;
  std::unique_ptr<kafka::MockCluster> mock;
  LearnerConfig cfg;
  ASSERT_NO_FATAL_FAILURE(LearnerOnMock("online_cold", &mock, &cfg, &dir));
  cfg.online.cold_start_range = 0.15;
  cfg.online.progress_every_ms = 200;
  RunningLearner learner;
  ASSERT_NO_FATAL_FAILURE(learner.Start(cfg, 4));
  // Nothing arrives: the learner says what it waits for. Then four step ends.
  EXPECT_TRUE(learner.Saw("waiting for day 0 step 0 to close: 0 events in, "));
  kafka::Producer::Options po;
  po.bootstrap = mock->bootstrap();
  auto producer = kafka::Producer::Create(std::move(po));
  ASSERT_TRUE(producer.ok());
  for (int k = 0; k < 4; ++k) {
    ASSERT_TRUE((*producer)->Produce("rtb.clock", 0, "", EncodeStepMarker(MarkerAt(k))).ok());
  }
  ASSERT_TRUE((*producer)->Flush(5000).ok());
  const auto [in_time, out] = learner.Stop();
  ASSERT_TRUE(in_time) << "the learner did not close 4 steps in 60 s:\n" << out;
  ASSERT_TRUE(learner.result.ok()) << learner.result.message();
  EXPECT_NE(out.find("cold start (no checkpoint)"), std::string::npos) << out;
  EXPECT_NE(out.find("waiting for day 0 step 0 to close: 0 events in, "), std::string::npos) << out;

  std::map<uint64_t, ActionTable> tables;
  ASSERT_TRUE(kafka::ReadWholeTopic({.bootstrap = mock->bootstrap()}, "rtb.policy", 10000,
                                    [&](int, int64_t, std::string_view v) {
                                      auto m = DecodePolicyMessage(v, "policy topic");
                                      ASSERT_TRUE(m.ok()) << m.status().message();
                                      tables[m->table.version] = m->table;
                                    })
                  .ok());
  ASSERT_GE(tables.size(), 5u);  // version 1, then one per closed step
  double largest = 0;
  bool moved = false;
  for (const auto& [version, t] : tables) {
    for (int i = 0; i < t.agents(); ++i) {
      for (int j = 0; j < t.clusters(); ++j) {
        const double a = t.at(i, j);
        if (version == 1) {
          EXPECT_EQ(a, 0.0) << "the first table is manual bids";
        }
        largest = std::max(largest, std::abs(a));
        moved = moved || a != 0.0;
      }
    }
  }
  EXPECT_LE(largest, 0.15 + 1e-6);
  EXPECT_TRUE(moved) << "it explores within the range";
  std::filesystem::remove_all(dir);
}

// Every broker down for longer than the learner's consumer-group session: it keeps its place
// (no step lost or closed twice, no table skipped), and closes the steps whose ends arrive
// when the brokers are back. Failing before would mean a learner that stops, hangs, or reads
// its step markers twice after the group takes its partitions away and gives them back.
TEST(Online, AKafkaOutageLongerThanItsSessionLosesNoStepAndClosesNoneTwice) {
  std::string dir;
  std::unique_ptr<kafka::MockCluster> mock;
  LearnerConfig cfg;
  ASSERT_NO_FATAL_FAILURE(LearnerOnMock("online_outage", &mock, &cfg, &dir));
  RunningLearner learner;
  ASSERT_NO_FATAL_FAILURE(learner.Start(cfg, 4));
  auto versions = [&] {
    std::map<uint64_t, int> seen;
    EXPECT_TRUE(kafka::ReadWholeTopic({.bootstrap = mock->bootstrap()}, "rtb.policy", 10000,
                                      [&](int, int64_t, std::string_view v) {
                                        auto m = DecodePolicyMessage(v, "policy topic");
                                        if (m.ok()) ++seen[m->table.version];
                                      })
                    .ok());
    return seen;
  };
  auto wait_for_version = [&](uint64_t v) {
    return test::WaitUntil([&] { return versions().contains(v); }, std::chrono::seconds(30),
                           std::chrono::milliseconds(100));
  };
  kafka::Producer::Options po;
  po.bootstrap = mock->bootstrap();
  po.properties = {{"message.timeout.ms", "0"}};  // the markers sent while the brokers are down
  auto producer = kafka::Producer::Create(std::move(po));
  ASSERT_TRUE(producer.ok());
  auto marker = [&](int k) {
    EXPECT_TRUE((*producer)->Produce("rtb.clock", 0, "", EncodeStepMarker(MarkerAt(k))).ok());
    (*producer)->Poll(0);
  };
  // Two steps close with the brokers up: tables 1 (the start), 2 and 3.
  const bool started = wait_for_version(1);
  marker(0);
  marker(1);
  const bool before = started && wait_for_version(3);
  // Every broker down until the learner's session lapses (6 s: the group takes its partitions
  // back); the next two step ends are sent meanwhile.
  for (int b = 1; b <= 3; ++b) mock->SetBrokerDown(b);
  marker(2);
  marker(3);
  const bool lapsed = learner.Saw("events partitions taken back by the consumer group");
  const bool idle_while_down = !learner.finished.load();
  for (int b = 1; b <= 3; ++b) mock->SetBrokerUp(b);
  EXPECT_TRUE((*producer)->Flush(30000).ok());
  const auto [in_time, out] = learner.Stop();
  ASSERT_TRUE(before) << "two steps did not close before the outage:\n" << out;
  EXPECT_TRUE(lapsed) << "the session never lapsed:\n" << out;
  EXPECT_TRUE(idle_while_down) << out;
  ASSERT_TRUE(in_time) << "the learner did not close the steps sent during the outage:\n" << out;
  ASSERT_TRUE(learner.result.ok()) << learner.result.message();
  // The session did lapse: the group took the partitions away and gave them back.
  EXPECT_NE(out.find("events partitions assigned again"), std::string::npos) << out;
  const auto seen = versions();
  for (uint64_t v = 1; v <= 5; ++v) {
    EXPECT_TRUE(seen.contains(v)) << "table " << v;
    EXPECT_EQ(seen.contains(v) ? seen.at(v) : 0, 1) << "table " << v << " published twice";
  }
  EXPECT_FALSE(seen.contains(6));
  for (const char* step : {"closed day 0 step 0:", "closed day 0 step 1:", "closed day 0 step 2:",
                           "closed day 1 step 0:"}) {
    const size_t first = out.find(step);
    EXPECT_NE(first, std::string::npos) << step << "\n" << out;
    EXPECT_EQ(out.find(step, first + 1), std::string::npos) << step << " twice\n" << out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rtb::learn
