// The online learner's tests on librdkafka's mock cluster (in-process): a cluster with the
// learner's topics, RunOnline on a thread of its own with its log watched, the step markers and
// events the tests send, and the tables the policy topic holds.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../common/wait.h"
#include "rtb/core/events.h"
#include "rtb/core/log.h"
#include "rtb/core/policy.h"
#include "rtb/core/step_marker.h"
#include "rtb/kafka/kafka.h"
#include "rtb/learner/config.h"
#include "rtb/learner/online.h"

namespace rtb::learn {

// The loop's learner config on the cluster at `bootstrap`, with a fresh state dir of its own
// (`name`, under the test's temporary dir) and a short grace.
inline void LoopLearnerConfig(const std::string& bootstrap, const std::string& name,
                              LearnerConfig* cfg, std::string* dir) {
  *dir = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(*dir);
  auto c = LoadLearnerConfig(RTB_SOURCE_DIR "/tests/loop/learner.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  *cfg = std::move(*c);
  cfg->online.brokers = bootstrap;
  cfg->online.market = RTB_SOURCE_DIR "/configs/bidder/default.yaml";
  cfg->online.state_dir = *dir;
  cfg->online.step_grace_ms = 100;
}

// A fresh mock cluster with the learner's topics (events with `events_partitions` partitions,
// policy and clock with one each), and LoopLearnerConfig on it.
inline void LearnerOnMock(const std::string& name, std::unique_ptr<kafka::MockCluster>* mock,
                          LearnerConfig* cfg, std::string* dir, int events_partitions = 1) {
  auto m = kafka::MockCluster::Start(3);
  ASSERT_TRUE(m.ok()) << m.status().message();
  *mock = std::move(*m);
  ASSERT_TRUE((*mock)->CreateTopic("rtb.events", events_partitions, 3).ok());
  for (const char* t : {"rtb.policy", "rtb.clock"}) {
    ASSERT_TRUE((*mock)->CreateTopic(t, 1, 3).ok());
  }
  ASSERT_NO_FATAL_FAILURE(LoopLearnerConfig((*mock)->bootstrap(), name, cfg, dir));
}

// RunOnline for `max_steps` steps on a thread of its own, its log (a line per closed step and
// what it waits for) captured from stderr, and its latest lines watched as they are written
// (Saw). Stop() waits up to 60 s for those steps, then stops it (a watchdog: a stuck learner
// fails the test instead of hanging it) and says whether it finished in time, and what it wrote.
// Several learners at once share one log (it is the process's): only the first captures stderr.
struct RunningLearner {
  OnlineOptions opt;
  std::atomic<bool> stop{false}, finished{false};
  Status result = Status::Ok();
  std::thread thread;
  bool captured = false;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> lines =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);

  void Start(const LearnerConfig& cfg, int max_steps, bool capture_stderr = true) {
    opt.max_steps = max_steps;
    opt.stop = &stop;
    ASSERT_TRUE(log::Init({.process = "rtb-test", .level = "info"}).ok());
    log::Get("learner").sinks().push_back(lines);  // before the learner's thread logs
    if (capture_stderr) testing::internal::CaptureStderr();
    captured = capture_stderr;
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
      if (captured) (void)testing::internal::GetCapturedStderr();
    }
    auto& sinks = log::Get("learner").sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), lines), sinks.end());
  }
  std::pair<bool, std::string> Stop() {
    test::WaitUntil([&] { return finished.load(); }, std::chrono::seconds(60));
    const bool in_time = finished.load();
    stop = true;
    thread.join();
    return {in_time, captured ? testing::internal::GetCapturedStderr() : std::string()};
  }
};

// The end of step k of 3-step days of an hour each.
inline StepMarker MarkerAt(int k) {
  StepMarker m;
  m.day = k / 3;
  m.step = k % 3;
  m.steps_per_day = 3;
  m.step_ms = 3'600'000;
  return m;
}

// An outcome event of advertiser `adv` (agent adv - 1 in configs/bidder/default.yaml) at step k
// of MarkerAt's clock.
inline Event EventAt(int k, const std::string& type, int64_t adv, int64_t price,
                     const std::string& eid) {
  Event e;
  e.type = type;
  e.eid = eid;
  e.ts_ms = 1;
  e.advertiser = adv;
  e.agent = static_cast<int>(adv - 1);
  e.cluster = 0;
  e.price_micros = price;
  e.charged = type == "billing";
  e.sim_ms = (k / 3) * 86'400'000 + (k % 3) * 3'600'000 + 1000;
  return e;
}

// A clean step: each advertiser's billing (1 unit CPM x 1000: 1 unit of cost) and conversion
// (a value within its declared range).
inline std::vector<std::string> CleanEvents(int k) {
  std::vector<std::string> out;
  const int64_t value[] = {60'000'000, 400'000'000, 12'000'000};
  for (int64_t adv = 1; adv <= 3; ++adv) {
    const std::string id = std::to_string(k) + "-" + std::to_string(adv);
    out.push_back(EncodeEvent(EventAt(k, "billing", adv, 1'000'000'000 * adv / 2, "b" + id)));
    out.push_back(EncodeEvent(EventAt(k, "conversion", adv, value[adv - 1], "c" + id)));
  }
  return out;
}

// How many tables of each version a policy topic holds as the bidders read it (committed;
// undecodable messages: version 0).
inline std::map<uint64_t, int> PolicyVersions(const std::string& bootstrap,
                                              const std::string& topic = "rtb.policy") {
  std::map<uint64_t, int> seen;
  const Status st = kafka::ReadWholeTopic(
      {.bootstrap = bootstrap, .properties = {{"isolation.level", "read_committed"}}}, topic, 10000,
      [&](int, int64_t, std::string_view v) {
        auto m = DecodePolicyMessage(v, "policy topic");
        ++seen[m.ok() ? m->table.version : 0];
      });
  EXPECT_TRUE(st.ok()) << st.message();
  return seen;
}
inline std::map<uint64_t, int> PolicyVersions(const kafka::MockCluster& mock) {
  return PolicyVersions(mock.bootstrap());
}

}  // namespace rtb::learn
