// kill -9 of a writer, many times: every acknowledged transition is in the store afterwards,
// intact, with no gaps, and the store reopens and continues (docs/reliability.md target 4).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "rtb/learner/replay_store.h"

namespace rtb::learn {
namespace {

TEST(ReplayCrash, EveryAcknowledgedTransitionSurvivesKillMinus9) {
  const std::string dir = ::testing::TempDir() + "/replay_crash_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::mt19937 gen(12345);
  uint64_t max_acked = 0;
  bool any_ack = false;
  const int kRounds = 25;
  for (int round = 0; round < kRounds; ++round) {
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::execl(RTB_CRASH_WRITER, RTB_CRASH_WRITER, dir.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    // Read acknowledgements for a random while, then kill -9 mid-write.
    const int want = std::uniform_int_distribution<int>(1, 400)(gen);
    FILE* f = ::fdopen(out[0], "r");
    char line[64];
    int got = 0;
    while (got < want && std::fgets(line, sizeof line, f)) {
      unsigned long long seq = 0;
      if (std::sscanf(line, "ack %llu", &seq) == 1) {
        max_acked = any_ack ? std::max<uint64_t>(max_acked, seq) : seq;
        any_ack = true;
        ++got;
      }
    }
    ::usleep(std::uniform_int_distribution<int>(0, 3000)(gen));
    ::kill(pid, SIGKILL);
    // Acks the writer printed before it died also count as acknowledged.
    while (std::fgets(line, sizeof line, f)) {
      unsigned long long seq = 0;
      if (std::sscanf(line, "ack %llu", &seq) == 1) max_acked = std::max<uint64_t>(max_acked, seq);
    }
    std::fclose(f);
    int status = 0;
    ::waitpid(pid, &status, 0);

    auto store = OpenRocksDbReplayStore(dir);
    ASSERT_TRUE(store.ok()) << "round " << round << ": " << store.status().message();
    ASSERT_TRUE(any_ack);
    ASSERT_GE((*store)->NextSeq(), max_acked + 1) << "round " << round;
    for (uint64_t k = 0; k < (*store)->NextSeq(); ++k) {
      auto t = (*store)->Get(k);
      ASSERT_TRUE(t.ok()) << "gap or corrupt record at " << k << " in round " << round;
      ASSERT_EQ(t->episode, k);
      ASSERT_EQ(t->s[0], static_cast<float>(k));
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rtb::learn
