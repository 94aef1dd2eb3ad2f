// The online learner against a real Kafka protocol (librdkafka's mock cluster, in-process):
// what it publishes when it starts with no checkpoint.
#include "rtb/learner/online.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <thread>

#include "rtb/core/log.h"
#include "rtb/core/policy.h"
#include "rtb/core/step_marker.h"
#include "rtb/kafka/kafka.h"
#include "rtb/learner/config.h"

namespace rtb::learn {
namespace {

// Regression: a learner started with no checkpoint published the random actor's table at once
// (a from -0.59 to +0.20), which the bidders applied. Now: the first table is manual bids, every
// later one stays within a = 0 +- online.cold_start_range, and it says what it is waiting for.
TEST(Online, AColdStartPublishesManualBidsThenStaysWithinItsRangeAndSaysWhatItWaitsFor) {
  const std::string dir = ::testing::TempDir() + "/online_cold_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  auto mock = kafka::MockCluster::Start(3);
  ASSERT_TRUE(mock.ok()) << mock.status().message();
  for (const char* t : {"rtb.events", "rtb.policy", "rtb.clock"}) {
    ASSERT_TRUE((*mock)->CreateTopic(t, 1, 3).ok());
  }
  auto cfg = LoadLearnerConfig(RTB_SOURCE_DIR "/tests/loop/learner.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  cfg->online.brokers = (*mock)->bootstrap();
  cfg->online.market = RTB_SOURCE_DIR "/configs/bidder/default.yaml";
  cfg->online.state_dir = dir;
  cfg->online.cold_start_range = 0.15;
  cfg->online.step_grace_ms = 100;
  cfg->online.progress_every_ms = 200;
  OnlineOptions opt;
  opt.max_steps = 4;
  opt.progress = true;
  std::atomic<bool> stop{false}, finished{false};
  opt.stop = &stop;  // a watchdog: a stuck learner fails the test instead of hanging it

  ASSERT_TRUE(log::Init({.process = "rtb-test", .level = "info"}).ok());
  testing::internal::CaptureStderr();
  Status result = Status::Ok();
  std::thread learner([&] {
    result = RunOnline(*cfg, opt);
    finished = true;
  });
  // Nothing arrives for a while: the learner says what it waits for. Then four step ends.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kafka::Producer::Options po;
  po.bootstrap = (*mock)->bootstrap();
  auto producer = kafka::Producer::Create(std::move(po));
  ASSERT_TRUE(producer.ok());
  for (int k = 0; k < 4; ++k) {
    StepMarker m;
    m.day = k / 3;
    m.step = k % 3;
    m.steps_per_day = 3;
    m.step_ms = 3'600'000;
    ASSERT_TRUE((*producer)->Produce("rtb.clock", 0, "", EncodeStepMarker(m)).ok());
  }
  ASSERT_TRUE((*producer)->Flush(5000).ok());
  for (int i = 0; i < 600 && !finished; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const bool in_time = finished.load();
  stop = true;
  learner.join();
  const std::string out = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(in_time) << "the learner did not close 4 steps in 60 s:\n" << out;
  ASSERT_TRUE(result.ok()) << result.message();
  EXPECT_NE(out.find("cold start (no checkpoint)"), std::string::npos) << out;
  EXPECT_NE(out.find("waiting for day 0 step 0 to close: 0 events in, "), std::string::npos) << out;

  std::map<uint64_t, ActionTable> tables;
  ASSERT_TRUE(kafka::ReadWholeTopic({.bootstrap = (*mock)->bootstrap()}, "rtb.policy", 10000,
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
  const std::string dir = ::testing::TempDir() + "/online_outage_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  auto mock = kafka::MockCluster::Start(3);
  ASSERT_TRUE(mock.ok()) << mock.status().message();
  for (const char* t : {"rtb.events", "rtb.policy", "rtb.clock"}) {
    ASSERT_TRUE((*mock)->CreateTopic(t, 1, 3).ok());
  }
  auto cfg = LoadLearnerConfig(RTB_SOURCE_DIR "/tests/loop/learner.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  cfg->online.brokers = (*mock)->bootstrap();
  cfg->online.market = RTB_SOURCE_DIR "/configs/bidder/default.yaml";
  cfg->online.state_dir = dir;
  cfg->online.step_grace_ms = 100;
  OnlineOptions opt;
  opt.max_steps = 4;
  std::atomic<bool> stop{false}, finished{false};
  opt.stop = &stop;
  ASSERT_TRUE(log::Init({.process = "rtb-test", .level = "info"}).ok());
  testing::internal::CaptureStderr();
  Status result = Status::Ok();
  std::thread learner([&] {
    result = RunOnline(*cfg, opt);
    finished = true;
  });
  auto versions = [&] {
    std::map<uint64_t, int> seen;
    EXPECT_TRUE(kafka::ReadWholeTopic({.bootstrap = (*mock)->bootstrap()}, "rtb.policy", 10000,
                                      [&](int, int64_t, std::string_view v) {
                                        auto m = DecodePolicyMessage(v, "policy topic");
                                        if (m.ok()) ++seen[m->table.version];
                                      })
                    .ok());
    return seen;
  };
  auto wait_for_version = [&](uint64_t v) {
    for (int i = 0; i < 300; ++i) {
      if (versions().contains(v)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  };
  kafka::Producer::Options po;
  po.bootstrap = (*mock)->bootstrap();
  po.properties = {{"message.timeout.ms", "0"}};  // the markers sent while the brokers are down
  auto producer = kafka::Producer::Create(std::move(po));
  ASSERT_TRUE(producer.ok());
  auto marker = [&](int k) {
    StepMarker m;
    m.day = k / 3;
    m.step = k % 3;
    m.steps_per_day = 3;
    m.step_ms = 3'600'000;
    EXPECT_TRUE((*producer)->Produce("rtb.clock", 0, "", EncodeStepMarker(m)).ok());
    (*producer)->Poll(0);
  };
  // Two steps close with the brokers up: tables 1 (the start), 2 and 3.
  const bool started = wait_for_version(1);
  marker(0);
  marker(1);
  const bool before = started && wait_for_version(3);
  // Every broker down for longer than the session (6 s); the next two step ends are sent
  // meanwhile.
  for (int b = 1; b <= 3; ++b) (*mock)->SetBrokerDown(b);
  marker(2);
  marker(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(9000));
  const bool idle_while_down = !finished.load();
  for (int b = 1; b <= 3; ++b) (*mock)->SetBrokerUp(b);
  EXPECT_TRUE((*producer)->Flush(30000).ok());
  for (int i = 0; i < 600 && !finished; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const bool in_time = finished.load();
  stop = true;
  learner.join();
  const std::string out = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(before) << "two steps did not close before the outage:\n" << out;
  EXPECT_TRUE(idle_while_down) << out;
  ASSERT_TRUE(in_time) << "the learner did not close the steps sent during the outage:\n" << out;
  ASSERT_TRUE(result.ok()) << result.message();
  // The session did lapse: the group took the partitions away and gave them back.
  EXPECT_NE(out.find("events partitions assigned again"), std::string::npos) << out;
  const auto seen = versions();
  for (uint64_t v = 1; v <= 5; ++v) EXPECT_TRUE(seen.contains(v)) << "table " << v;
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
