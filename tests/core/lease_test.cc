// Budget leases (core/lease.h): the coordinator never grants more than a budget, whatever the
// concurrency; returns and reclaims give back only what is not spent or reserved.
#include "rtb/core/lease.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace rtb {
namespace {

const LeaseKey kKey{0, 7, 0};

TEST(Lease, ConcurrentRequestsFromManyBiddersNeverGrantMoreThanTheBudget) {
  LeaseConfig cfg;
  cfg.max_pool_share = 0.9;
  LeaseLedger ledger(cfg);
  const int64_t budget = 50'000'000;
  ledger.SetBudget(kKey, Micros(budget));
  std::atomic<int64_t> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int n = 0; n < 3000; ++n) {
        std::string bidder = "b";
        bidder += std::to_string((t * 7 + n) % 100);
        const int64_t want = static_cast<int64_t>(rng() % 400'000);
        granted += ledger.Request(bidder, kKey, want, n);
        if (n % 5 == 0)
          granted -= ledger.Return(bidder, kKey, static_cast<int64_t>(rng() % 50'000), n);
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto tot = ledger.Of(kKey);
  EXPECT_EQ(tot.held, granted.load());
  EXPECT_LE(tot.held, budget);
  EXPECT_GE(tot.pool(), 0);
  EXPECT_GT(tot.held, budget * 9 / 10);  // the demand exceeded the budget: it was handed out
  int64_t by_bidder = 0;
  for (int b = 0; b < 100; ++b) {
    std::string bidder = "b";
    bidder += std::to_string(b);
    by_bidder += ledger.Held(bidder, kKey);
  }
  EXPECT_EQ(by_bidder, tot.held);
  EXPECT_EQ(ledger.grants(), 16 * 3000);
}

TEST(Lease, OneGrantTakesAtMostItsShareOfThePoolAndUnknownBudgetsGrantNothing) {
  LeaseConfig cfg;
  cfg.max_pool_share = 0.5;
  cfg.min_grant_micros = 1'000;
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(1'000'000));
  EXPECT_EQ(ledger.Request("a", kKey, 900'000, 0), 500'000);
  EXPECT_EQ(ledger.Request("b", kKey, 900'000, 0), 250'000);
  // Near the end the minimum grant still empties the pool.
  for (int i = 0; i < 40; ++i) ledger.Request("c", kKey, 900'000, 0);
  EXPECT_EQ(ledger.Of(kKey).pool(), 0);
  EXPECT_EQ(ledger.Request("d", kKey, 1, 0), 0);
  EXPECT_EQ(ledger.Request("a", LeaseKey{0, 8, 0}, 100, 0), 0);
  EXPECT_EQ(ledger.Request("a", kKey, -5, 0), 0);
}

TEST(Lease, ANeedIsMetPastTheShareCapOrWithTheWholePoolWhenThePoolHasLess) {
  LeaseConfig cfg;
  cfg.max_pool_share = 0.5;
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(1'000'000));
  // One bid of 0.70 is of no use with the capped 0.50: the need is met.
  EXPECT_EQ(ledger.Request("a", kKey, 100, 0, 700'000), 700'000);
  // The pool has 0.30 and b needs 0.40: it gets all 0.30 (its bid shrinks to fit).
  EXPECT_EQ(ledger.Request("b", kKey, 100, 0, 400'000), 300'000);
  EXPECT_EQ(ledger.Of(kKey).pool(), 0);
  EXPECT_EQ(ledger.Request("c", kKey, 100, 0, 1), 0);
  EXPECT_EQ(ledger.Of(kKey).held, 1'000'000);
}

TEST(Lease, ReturnsGiveBackOnlyWhatIsNeitherSpentNorReserved) {
  LeaseLedger ledger;
  ledger.SetBudget(kKey, Micros(10'000'000));
  ASSERT_EQ(ledger.Request("a", kKey, 1'000'000, 0), 1'000'000);
  ledger.Report("a", kKey, 300'000, 200'000, 1);
  EXPECT_EQ(ledger.Return("a", kKey, 900'000, 2), 500'000);
  EXPECT_EQ(ledger.Held("a", kKey), 500'000);
  EXPECT_EQ(ledger.Return("a", kKey, 1, 3), 0);
  ledger.Report("a", kKey, 250'000, 0, 4);  // older than the last report: ignored
  EXPECT_EQ(ledger.Of(kKey).spent, 300'000);
}

// A bidder may commit after its last report, up to the cap that report gave: a dead bidder
// keeps that much, before and after the billing window, so money it used unseen is never
// granted again.
TEST(Lease, ADeadBidderKeepsTheCapOfItsLastReport) {
  LeaseConfig cfg;
  cfg.heartbeat_timeout_ms = 1'000;
  cfg.billing_window_ms = 1'000;
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(1'000'000));
  ASSERT_EQ(ledger.Request("a", kKey, 800'000, 0, 800'000), 800'000);
  ledger.Report("a", kKey, 100'000, 50'000, 100, /*cap=*/400'000);
  ledger.Heartbeat("b", 1'500);
  EXPECT_EQ(ledger.Reclaim(1'500), 1);
  EXPECT_EQ(ledger.Held("a", kKey), 400'000);  // not 150'000: it may have used up to the cap
  ledger.Heartbeat("b", 3'000);
  ledger.Reclaim(3'000);  // the billing window is over: still the cap
  EXPECT_EQ(ledger.Held("a", kKey), 400'000);
  EXPECT_EQ(ledger.Request("b", kKey, 1'000'000, 3'000, 1'000'000), 600'000);
  EXPECT_EQ(ledger.Of(kKey).held, 1'000'000);
}

TEST(Lease, ADeadBiddersUnspentLeaseReturnsAtOnceItsReservationsAfterTheBillingWindow) {
  LeaseConfig cfg;
  cfg.heartbeat_timeout_ms = 10'000;
  cfg.billing_window_ms = 60'000;
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(2'000'000));
  ASSERT_EQ(ledger.Request("a", kKey, 1'000'000, 0), 1'000'000);
  ASSERT_EQ(ledger.Request("b", kKey, 1'000'000, 0), 500'000);  // half the pool at most
  ledger.Report("a", kKey, 300'000, 200'000, 1'000);
  // b keeps talking, a goes silent.
  for (int64_t t = 2'000; t <= 11'000; t += 1'000) ledger.Heartbeat("b", t);
  EXPECT_EQ(ledger.Reclaim(11'000), 0);  // 10 s of silence is not yet more than the timeout
  ledger.Heartbeat("b", 11'500);
  EXPECT_EQ(ledger.Reclaim(11'500), 1);
  EXPECT_EQ(ledger.Held("a", kKey), 500'000);  // spent + reserved stay held
  EXPECT_EQ(ledger.Of(kKey).pool(), 2'000'000 - 500'000 - 500'000);
  EXPECT_EQ(ledger.reclaims(), 1);
  ledger.Heartbeat("b", 60'000);
  EXPECT_EQ(ledger.Reclaim(60'000), 0);
  EXPECT_EQ(ledger.Held("a", kKey), 500'000);  // the billing window is not over
  ledger.Heartbeat("b", 71'500);
  ledger.Reclaim(71'500);
  EXPECT_EQ(ledger.Held("a", kKey), 300'000);  // only what it spent
  // Restarted, a comes back with its spend and is granted again.
  EXPECT_GT(ledger.Request("a", kKey, 100'000, 72'000), 0);
  const auto t = ledger.Of(kKey);
  EXPECT_LE(t.held, t.budget);
}

TEST(Lease, ABudgetCutBelowWhatIsHeldGrantsNothingMore) {
  LeaseLedger ledger;
  ledger.SetBudget(kKey, Micros(1'000'000));
  ledger.Request("a", kKey, 400'000, 0);
  ledger.SetBudget(kKey, Micros(300'000));
  EXPECT_EQ(ledger.Request("b", kKey, 10, 0), 0);
  EXPECT_LT(ledger.Of(kKey).pool(), 0);
}

TEST(Lease, WantCoversTheHorizonAtTheSpendRateMinusWhatIsHeld) {
  EXPECT_EQ(LeaseWant(1'000.0, 30'000, 5'000, 0), 30'000);
  EXPECT_EQ(LeaseWant(1'000.0, 30'000, 5'000, 10'000), 20'000);
  EXPECT_EQ(LeaseWant(0.0, 30'000, 5'000, 0), 5'000);
  EXPECT_EQ(LeaseWant(1'000.0, 30'000, 5'000, 40'000), 0);
}

}  // namespace
}  // namespace rtb
