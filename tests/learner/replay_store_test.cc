#include "rtb/learner/replay_store.h"

#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "rtb/core/log.h"
#include "rtb/core/rocksdb_log.h"

namespace rtb::learn {
namespace {

Transition Make(uint64_t k) {
  Transition t;
  t.s = {static_cast<float>(k), 1.5f, -2.0f};
  t.d = {0.25f, 0.75f};
  t.a = {-0.5f, static_cast<float>(k % 7) / 7.0f};
  t.r = {static_cast<float>(k) * 0.01f};
  t.s2 = {static_cast<float>(k + 1), 0.0f, 3.0f};
  t.d2 = {0.5f, 0.5f};
  t.done = k % 3 == 2;
  t.episode = k / 3;
  t.step = static_cast<uint32_t>(k % 3);
  return t;
}

TEST(Transition, EncodesAndDecodesAndDetectsCorruption) {
  const Transition t = Make(42);
  const std::string bytes = EncodeTransition(t);
  auto back = DecodeTransition(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, t);
  std::string bad = bytes;
  bad[10] ^= 0x40;
  EXPECT_FALSE(DecodeTransition(bad).ok());
  EXPECT_FALSE(DecodeTransition(bytes.substr(0, bytes.size() - 1)).ok());
  EXPECT_FALSE(DecodeTransition("").ok());
}

enum class Kind { kMemory, kRocksDb };

class ReplayContract : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/replay_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<ReplayStore> Open(ReplayOptions opt = {}) {
    if (GetParam() == Kind::kMemory) return NewMemoryReplayStore(opt);
    auto s = OpenRocksDbReplayStore(dir_, opt);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return std::move(*s);
  }
  std::string dir_;
};

TEST_P(ReplayContract, AppendGivesConsecutiveSequenceAndGetReturnsIt) {
  auto store = Open();
  for (uint64_t k = 0; k < 50; ++k) {
    auto seq = store->Append(Make(k));
    ASSERT_TRUE(seq.ok());
    EXPECT_EQ(*seq, k);
  }
  EXPECT_EQ(store->Size(), 50u);
  EXPECT_EQ(store->NextSeq(), 50u);
  for (uint64_t k = 0; k < 50; ++k) EXPECT_EQ(*store->Get(k), Make(k));
  EXPECT_FALSE(store->Get(50).ok());
}

TEST_P(ReplayContract, SampleIsUniformOverWhatIsHeld) {
  auto store = Open();
  Rng rng(1);
  EXPECT_FALSE(store->Sample(4, rng).ok());  // empty
  for (uint64_t k = 0; k < 10; ++k) ASSERT_TRUE(store->Append(Make(k)).ok());
  std::vector<int> count(10, 0);
  for (int i = 0; i < 200; ++i) {
    auto batch = store->Sample(50, rng);
    ASSERT_TRUE(batch.ok());
    ASSERT_EQ(batch->size(), 50u);
    for (const auto& t : *batch) count[static_cast<size_t>(t.s[0])]++;
  }
  for (int c : count) EXPECT_NEAR(c / 10000.0, 0.1, 0.015);
}

TEST_P(ReplayContract, CapacityEvictsTheOldest) {
  ReplayOptions opt;
  opt.capacity = 5;
  auto store = Open(opt);
  for (uint64_t k = 0; k < 12; ++k) ASSERT_TRUE(store->Append(Make(k)).ok());
  EXPECT_EQ(store->Size(), 5u);
  EXPECT_EQ(store->FirstSeq(), 7u);
  EXPECT_FALSE(store->Get(6).ok());
  EXPECT_EQ(*store->Get(7), Make(7));
  Rng rng(2);
  auto sample = store->Sample(100, rng);
  ASSERT_TRUE(sample.ok());
  const std::vector<Transition> held = std::move(sample).value();
  for (const auto& t : held) EXPECT_GE(t.s[0], 7.0f);
}

INSTANTIATE_TEST_SUITE_P(Both, ReplayContract, ::testing::Values(Kind::kMemory, Kind::kRocksDb),
                         [](const auto& param_info) {
                           return param_info.param == Kind::kMemory ? "Memory" : "RocksDb";
                         });

TEST(RocksDbReplay, ReopenContinuesTheSequence) {
  const std::string dir = ::testing::TempDir() + "/replay_reopen_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  {
    auto s = OpenRocksDbReplayStore(dir);
    ASSERT_TRUE(s.ok());
    for (uint64_t k = 0; k < 7; ++k) ASSERT_TRUE((*s)->Append(Make(k)).ok());
  }
  auto s = OpenRocksDbReplayStore(dir);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->NextSeq(), 7u);
  EXPECT_EQ(*(*s)->Append(Make(7)), 7u);
  EXPECT_EQ(*(*s)->Get(3), Make(3));
  std::filesystem::remove_all(dir);
}

// RocksDB's own log goes to the process's log, not to a LOG file in the state dir (on a full
// disk, Debian's RocksDB aborted the process on that file's second failed write): opened, written
// and opened again (which would rotate a LOG to LOG.old.*), the store's folder has no LOG file.
TEST(RocksDbReplay, WritesNoLogFileOfRocksDbsInItsFolder) {
  const std::string dir = ::testing::TempDir() + "/replay_nolog_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  for (int open = 0; open < 2; ++open) {
    auto s = OpenRocksDbReplayStore(dir);
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE((*s)->Append(Make(open)).ok());
  }
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    EXPECT_FALSE(f.path().filename().string().starts_with("LOG")) << f.path();
  }
  std::filesystem::remove_all(dir);
}

// What RocksDB logs reaches the component's logger: warnings and above, as "rocksdb: <line>",
// at most 5 a minute (the rest are counted, and the count is on the next line after the
// minute); info lines are dropped.
TEST(RocksDbReplay, RocksDbsWarningsGoToTheProcessLog) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto& sinks = log::Get("replay").sinks();
  sinks.push_back(sink);
  const std::shared_ptr<rocksdb::Logger> logger = log::NewProcessLogger("replay");
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, logger, "opened %s", "db");
  for (int i = 0; i < 7; ++i) {
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, logger, "disk %d full\n", i);
  }
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
  std::vector<std::string> lines;
  for (const auto& m : sink->last_raw()) lines.emplace_back(m.payload.data(), m.payload.size());
  EXPECT_EQ(lines, (std::vector<std::string>{"rocksdb: disk 0 full", "rocksdb: disk 1 full",
                                             "rocksdb: disk 2 full", "rocksdb: disk 3 full",
                                             "rocksdb: disk 4 full"}));
}

TEST(RocksDbReplay, UnopenablePathIsAnError) {
  auto s = OpenRocksDbReplayStore("/proc/definitely/not/here");
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace rtb::learn
