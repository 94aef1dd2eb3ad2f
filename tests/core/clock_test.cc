// The clock seam: a ManualClock moves only when told, wakes each waiting thread once its
// deadline is reached, and tells a test when the threads it drives have done their turn.
#include "rtb/core/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace rtb {
namespace {

TEST(ManualClock, StandsStillUntilAdvanced) {
  ManualClock clock(1'000'000);
  EXPECT_EQ(clock.UnixMs(), 1'000'000);
  EXPECT_EQ(clock.SteadyUs(), 0);
  clock.Advance(250);
  EXPECT_EQ(clock.UnixMs(), 1'000'250);
  EXPECT_EQ(clock.SteadyMs(), 250);
  clock.Advance(-5);  // time never goes back
  EXPECT_EQ(clock.UnixMs(), 1'000'250);
}

// A waiting thread wakes when the clock reaches its deadline, not a millisecond before: while
// the clock stands 1 ms short, it still waits however long the test waits for it.
TEST(ManualClock, ASleeperWakesExactlyAtItsDeadline) {
  ManualClock clock;
  std::atomic<bool> woke{false};
  std::thread t([&] {
    EXPECT_TRUE(clock.SleepFor(100));
    woke = true;
  });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  clock.Advance(99);
  // Still waiting with its deadline ahead: AwaitSleepers(1) holds while it has not woken.
  ASSERT_TRUE(clock.AwaitSleepers(1));
  EXPECT_FALSE(woke.load());
  clock.Advance(1);
  t.join();
  EXPECT_TRUE(woke.load());
  EXPECT_FALSE(clock.AwaitSleepers(1, 50));  // nobody waits now
}

// A loop that takes a turn every 10 ms of the clock: Run advances 1 s in steps and waits for
// each turn, so the loop has taken exactly one turn per step.
TEST(ManualClock, RunWaitsForEachTurnOfTheThreadsItDrives) {
  ManualClock clock;
  std::atomic<bool> stop{false};
  std::atomic<int> turns{0};
  std::thread t([&] {
    while (!stop.load()) {
      turns.fetch_add(1);
      clock.SleepFor(10, &stop);
    }
  });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  EXPECT_EQ(turns.load(), 1);
  ASSERT_TRUE(clock.Run(1'000, 10, 1));
  EXPECT_EQ(turns.load(), 101);
  stop = true;
  t.join();  // a cancelled wait returns without the clock moving
}

TEST(ManualClock, ACancelledSleepReturnsFalse) {
  ManualClock clock;
  std::atomic<bool> cancel{false};
  bool slept = true;
  std::thread t([&] { slept = clock.SleepFor(60'000, &cancel); });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  cancel = true;
  t.join();
  EXPECT_FALSE(slept);
}

TEST(SystemClock, SleepsRealTimeAndStopsWhenCancelled) {
  Clock* clock = SystemClock();
  const int64_t t0 = clock->SteadyUs();
  EXPECT_TRUE(clock->SleepFor(20));
  EXPECT_GE(clock->SteadyUs() - t0, 20'000);
  std::atomic<bool> cancel{true};
  const int64_t t1 = clock->SteadyUs();
  EXPECT_FALSE(clock->SleepFor(60'000, &cancel));
  EXPECT_LT(clock->SteadyUs() - t1, 1'000'000);
}

}  // namespace
}  // namespace rtb
