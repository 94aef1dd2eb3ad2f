// Budget leases (budget/lease.h): the coordinator never grants more than a budget, whatever the
// concurrency; returns and reclaims give back only what is not spent or reserved.
#include "rtb/budget/lease.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace rtb::budget {
namespace {

const LeaseKey kKey{0, 7, 0};

// A lease config with these heartbeat timeout and billing window (ms).
LeaseConfig Timeouts(int64_t heartbeat_timeout_ms, int64_t billing_window_ms) {
  LeaseConfig cfg;
  cfg.heartbeat_timeout_ms = heartbeat_timeout_ms;
  cfg.billing_window_ms = billing_window_ms;
  return cfg;
}

// Both sizings; under share sizing the threads also report traffic, spend and reservations
// and rebalance, whose grants count as grants.
TEST(Lease, ConcurrentRequestsFromManyBiddersNeverGrantMoreThanTheBudget) {
  for (const LeaseSizing sizing : {LeaseSizing::kRate, LeaseSizing::kShare}) {
    SCOPED_TRACE(sizing == LeaseSizing::kRate ? "rate" : "share");
    LeaseConfig cfg;
    cfg.max_pool_share = 0.9;
    cfg.sizing = sizing;
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
          if (sizing == LeaseSizing::kShare) {
            ledger.Traffic(bidder, n * (1 + t % 3), n);
            const int64_t held = ledger.Held(bidder, kKey);
            ledger.Report(bidder, kKey, held / 4, static_cast<int64_t>(rng() % 10'000), n);
            for (const auto& m : ledger.Rebalance(kKey, n)) granted += m.grant;
          }
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
}

// Share sizing: traffic 2:1:1. Each bidder's first ask gets its share of the budget, whatever it
// asks; a bidder that has used most of its part is below half its target of what is left, the
// pool is empty, so the others' excess is asked back (once per recall_quiet_ms); what one gives
// back tops it up.
TEST(Lease, ShareSizingHoldsEachBidderAtItsTrafficShareOfWhatIsLeft) {
  LeaseConfig cfg;
  cfg.sizing = LeaseSizing::kShare;
  cfg.max_pool_share = 1.0;  // an ask may take the whole pool (c's share is all that is left)
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(8'000'000));
  for (const char* b : {"a", "b", "c"}) ledger.Traffic(b, 0, 0);
  ledger.Traffic("a", 200, 1000);
  ledger.Traffic("b", 100, 1000);
  ledger.Traffic("c", 100, 1000);
  EXPECT_EQ(ledger.TrafficShare("a"), 0.5);
  EXPECT_EQ(ledger.TrafficShare("b"), 0.25);
  EXPECT_EQ(ledger.Request("a", kKey, 1, 1000), 4'000'000);
  EXPECT_EQ(ledger.Request("b", kKey, 1, 1000), 2'000'000);
  EXPECT_EQ(ledger.Request("c", kKey, 50'000'000, 1000), 2'000'000);
  EXPECT_EQ(ledger.Of(kKey).pool(), 0);
  EXPECT_TRUE(ledger.Rebalance(kKey, 0).empty());  // everyone holds its share
  // a spent 2.5 and reserved 0.5 of its 4: 1 unused, below half its target of the 5 left.
  ledger.Report("a", kKey, 2'500'000, 500'000, 1100);
  ASSERT_TRUE(ledger.SharesApply(kKey));
  const auto recall = ledger.Rebalance(kKey, 0);
  ASSERT_EQ(recall.size(), 2u);
  EXPECT_EQ(recall[0].bidder, "b");
  EXPECT_EQ(recall[0].recall, 750'000);  // 2 held, 1.25 its target
  EXPECT_EQ(recall[0].grant, 0);
  EXPECT_EQ(recall[1].bidder, "c");
  EXPECT_EQ(recall[1].recall, 750'000);
  EXPECT_TRUE(ledger.Rebalance(kKey, 100).empty());     // asked already: not again so soon
  EXPECT_EQ(ledger.Rebalance(kKey, 2'100).size(), 2u);  // recall_quiet_ms later, again
  EXPECT_EQ(ledger.Return("b", kKey, 750'000, 1200), 750'000);
  const auto topup = ledger.Rebalance(kKey, 0);
  ASSERT_EQ(topup.size(), 1u);
  EXPECT_EQ(topup[0].bidder, "a");
  EXPECT_EQ(topup[0].grant, 750'000);
  EXPECT_EQ(ledger.Held("a", kKey), 4'750'000);
  EXPECT_EQ(ledger.Of(kKey).held, 8'000'000);
  EXPECT_TRUE(ledger.Rebalance(kKey, 0).empty());  // a is above half its target again
}

// Traffic shares: unknown counts as the mean of the known ones (all equal when none is known),
// a restarted process's count starting again keeps its rate, a dead bidder has no share.
TEST(Lease, TrafficSharesAreSmoothedRatesOfTheLiveBidders) {
  LeaseConfig cfg;
  cfg.sizing = LeaseSizing::kShare;
  cfg.heartbeat_timeout_ms = 10'000;
  LeaseLedger ledger(cfg);
  ledger.Heartbeat("a", 0);
  ledger.Heartbeat("b", 0);
  EXPECT_EQ(ledger.TrafficShare("a"), 0.5);  // nothing known: equal
  ledger.Traffic("a", 0, 0);
  ledger.Traffic("a", 300, 1000);
  EXPECT_EQ(ledger.TrafficShare("a"), 0.5);  // b counts as the mean of the known rates
  ledger.Traffic("b", 0, 1000);
  ledger.Traffic("b", 100, 2000);
  EXPECT_EQ(ledger.TrafficShare("a"), 0.75);
  ledger.Traffic("b", 5, 3000);  // b restarted: its count starts again, its rate stays
  EXPECT_EQ(ledger.TrafficShare("b"), 0.25);
  ledger.Traffic("b", 305, 4000);  // 300 a second now: smoothed, 0.9 x 100 + 0.1 x 300
  EXPECT_NEAR(ledger.TrafficShare("b"), 120.0 / 420.0, 1e-12);
  ledger.Traffic("b", 310, 4020);  // 20 ms later: too close to count, it waits for the next
  EXPECT_NEAR(ledger.TrafficShare("b"), 120.0 / 420.0, 1e-12);
  ledger.Heartbeat("a", 14'500);
  ledger.Reclaim(14'500);  // b silent past the timeout: dead
  EXPECT_EQ(ledger.TrafficShare("b"), 0.0);
  EXPECT_EQ(ledger.TrafficShare("a"), 1.0);
  EXPECT_EQ(ledger.TrafficShare("nobody"), 0.0);
  const std::vector<std::pair<std::string, double>> live = {{"a", 1.0}};
  EXPECT_EQ(ledger.TrafficShares(), live);  // the coordinator's status line
}

// AvailableOf (what every share is a part of) is kept as the holdings change, not recounted:
// against a recount from Leases() after grants, reports, returns, a death (the dead bidder's
// holding no longer counts; its unused part goes back to the pool) and a revival.
TEST(Lease, WhatSharesAreTakenOfStaysTheRecountThroughDeathAndRevival) {
  LeaseConfig cfg;
  cfg.sizing = LeaseSizing::kShare;
  cfg.heartbeat_timeout_ms = 1'000;
  cfg.billing_window_ms = 1'000;
  cfg.max_pool_share = 0.2;
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(10'000'000));
  std::set<std::string> dead;
  auto recount = [&] {
    int64_t held = 0, unused = 0;
    for (const auto& l : ledger.Leases()) {
      held += l.held;
      if (!dead.count(l.bidder)) unused += std::max<int64_t>(0, l.held - l.spent - l.reserved);
    }
    return 10'000'000 - held + unused;
  };
  // Its target (all of it, alone; half, with b), capped at a fifth of the pool.
  EXPECT_EQ(ledger.Request("a", kKey, 0, 0), 2'000'000);
  EXPECT_EQ(ledger.Request("b", kKey, 0, 0), 1'600'000);
  EXPECT_EQ(ledger.AvailableOf(kKey), recount());
  ledger.Report("a", kKey, 1'000'000, 200'000, 10);
  ledger.Report("b", kKey, 300'000, 0, 10);
  EXPECT_EQ(ledger.AvailableOf(kKey), recount());
  ledger.Return("a", kKey, 500'000, 20);
  EXPECT_EQ(ledger.AvailableOf(kKey), recount());
  EXPECT_EQ(ledger.AvailableOf(kKey), 10'000'000 - 1'000'000 - 200'000 - 300'000);
  ledger.Heartbeat("a", 1'500);
  ledger.Reclaim(1'500);  // b silent for 1.49 s: dead, its unused part back to the pool
  dead.insert("b");
  EXPECT_EQ(ledger.TrafficShare("b"), 0.0);
  EXPECT_EQ(ledger.AvailableOf(kKey), recount());
  EXPECT_EQ(ledger.AvailableOf(kKey), 10'000'000 - 1'000'000 - 200'000 - 300'000);
  ledger.Heartbeat("b", 1'600);  // back: its holding (its spend) counts again
  dead.erase("b");
  EXPECT_EQ(ledger.AvailableOf(kKey), recount());
  ledger.Report("b", kKey, 300'000, 50'000, 1'700);
  for (const auto& m : ledger.Rebalance(kKey, 1'700)) (void)m;
  EXPECT_EQ(ledger.AvailableOf(kKey), recount());
}

// Once what is left cannot give every live bidder the largest need asked (one bid's charge),
// shares move nothing: a need takes what it needs, past its share, or the whole pool.
TEST(Lease, ShareSizingLeavesABudgetsLastBidsToTheirNeeds) {
  LeaseConfig cfg;
  cfg.sizing = LeaseSizing::kShare;
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(100'000));
  ledger.Heartbeat("a", 0);
  ledger.Heartbeat("b", 0);
  EXPECT_EQ(ledger.Request("a", kKey, 0, 1, 60'000), 60'000);  // its share is 50,000
  EXPECT_FALSE(ledger.SharesApply(kKey));                      // 100,000 left, 2 x 60,000 needed
  ledger.NoteUnit(kKey, 40'000);  // a mean bid that each half holds: no whole bids, needs decide
  EXPECT_FALSE(ledger.SharesApply(kKey));
  EXPECT_EQ(ledger.TargetOf("a", kKey), -1);
  EXPECT_TRUE(ledger.Rebalance(kKey, 0).empty());
  EXPECT_EQ(ledger.Request("b", kKey, 0, 2, 60'000), 40'000);  // the whole pool
  EXPECT_EQ(ledger.Of(kKey).pool(), 0);
  LeaseLedger rate;  // rate sizing never rebalances
  rate.SetBudget(kKey, Micros(100'000));
  rate.Request("a", kKey, 10, 0);
  EXPECT_FALSE(rate.SharesApply(kKey));
  EXPECT_TRUE(rate.Rebalance(kKey, 0).empty());
}

// A budget of 2.5 bids over three bidders of equal traffic, once the bidders' mean bid charge is
// known: two whole bids and the half, not three parts of 0.83 bids that could each only bid low.
// As the first in line spends, the last one's piece is asked back and goes to it.
TEST(Lease, ABudgetOfFewerBidsThanBiddersIsPartedInWholeBids) {
  LeaseConfig cfg;
  cfg.sizing = LeaseSizing::kShare;
  cfg.max_pool_share = 1.0;
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(25'000));
  for (const char* b : {"a", "b", "c"}) ledger.Traffic(b, 0, 0);
  // Traffic within 5% of equal: the line is by name (a's is the least).
  ledger.Traffic("a", 95, 1000);
  ledger.Traffic("b", 100, 1000);
  ledger.Traffic("c", 105, 1000);
  // No mean bid charge yet: equal parts (no target said), as the first asks show.
  EXPECT_EQ(ledger.TargetOf("a", kKey), -1);
  EXPECT_EQ(ledger.Request("a", kKey, 1, 1000), 7'916);  // 95 / 300 of it
  EXPECT_EQ(ledger.Return("a", kKey, 7'916, 1000), 7'916);
  ledger.NoteUnit(kKey, 10'000);
  EXPECT_EQ(ledger.TargetOf("a", kKey), 10'000);
  EXPECT_EQ(ledger.TargetOf("b", kKey), 10'000);
  EXPECT_EQ(ledger.TargetOf("c", kKey), 5'000);
  EXPECT_EQ(ledger.TargetOf("nobody", kKey), -1);
  ASSERT_TRUE(ledger.SharesApply(kKey));
  const auto first = ledger.Rebalance(kKey, 0);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(ledger.Held("a", kKey), 10'000);
  EXPECT_EQ(ledger.Held("b", kKey), 10'000);
  EXPECT_EQ(ledger.Held("c", kKey), 5'000);
  // a wins one at half its bid: 2 bids are left, a's and b's; c's half bid is asked back.
  ledger.Report("a", kKey, 5'000, 0, 1100);
  EXPECT_EQ(ledger.TargetOf("a", kKey), 10'000);
  EXPECT_EQ(ledger.TargetOf("c", kKey), 0);
  const std::string a = "a";
  const auto recall = ledger.Rebalance(kKey, 1100, &a);
  ASSERT_EQ(recall.size(), 1u);
  EXPECT_EQ(recall[0].bidder, "c");
  EXPECT_EQ(recall[0].recall, 5'000);
  EXPECT_EQ(ledger.Return("c", kKey, 5'000, 1200), 5'000);
  const auto topup = ledger.Rebalance(kKey, 1200);
  ASSERT_EQ(topup.size(), 1u);
  EXPECT_EQ(topup[0].bidder, "a");
  EXPECT_EQ(topup[0].grant, 5'000);
  EXPECT_EQ(ledger.Held("a", kKey), 15'000);  // 5,000 spent and a whole bid unused
  EXPECT_EQ(ledger.Of(kKey).held, 25'000);
  // A need past its part takes nothing: c's part is none.
  EXPECT_EQ(ledger.Request("c", kKey, 1, 1300, 10'000), 0);
  // Deep budgets are parted by share as before, whatever the unit.
  ledger.SetBudget(kKey, Micros(250'000));
  EXPECT_EQ(ledger.TargetOf("c", kKey), -1);
  EXPECT_EQ(ledger.Request("c", kKey, 1, 1400), (250'000 - 5'000) * 105 / 300);
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

// A restored lease (a restarted coordinator) counts as spent until a report sent after the
// restored holding (seq above its seen) says what the bidder spent; a report of less under an
// older seq (delivered again) is still taken for an older one.
TEST(Lease, ARestoredLeaseIsSpentUntilAReportNewerThanItsHolding) {
  LeaseLedger ledger;
  ledger.SetBudget(kKey, Micros(10'000'000));
  ledger.Restore("a", kKey, 2'000'000, 0, /*seen=*/50);
  EXPECT_EQ(ledger.Of(kKey).spent, 2'000'000);
  EXPECT_EQ(ledger.Return("a", kKey, 1'000'000, 1), 0);
  ledger.Report("a", kKey, 400'000, 100'000, 2, 0, /*seq=*/49);  // older than the holding
  EXPECT_EQ(ledger.Of(kKey).spent, 2'000'000);
  EXPECT_EQ(ledger.Return("a", kKey, 1'000'000, 3), 0);
  ledger.Report("a", kKey, 400'000, 100'000, 4, 0, /*seq=*/51);
  EXPECT_EQ(ledger.Of(kKey).spent, 400'000);
  EXPECT_EQ(ledger.Return("a", kKey, 2'000'000, 5), 1'500'000);
  EXPECT_EQ(ledger.Held("a", kKey), 500'000);
  // From then on spend only grows again.
  ledger.Report("a", kKey, 300'000, 0, 6, 0, /*seq=*/52);
  EXPECT_EQ(ledger.Of(kKey).spent, 400'000);
  EXPECT_LE(ledger.Of(kKey).held, 10'000'000);
}

// A bidder may commit after its last report, up to the cap that report gave: a dead bidder
// keeps that much, before and after the billing window, so money it used unseen is never
// granted again.
TEST(Lease, ADeadBidderKeepsTheCapOfItsLastReport) {
  const LeaseConfig cfg = Timeouts(1'000, 1'000);
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

// The coordinator publishes only what a reclaim lowered (it no longer compares every lease with
// the topic on each check): Reclaim must name each lowered holding, once, and nothing else.
TEST(Lease, AReclaimNamesExactlyTheHoldingsItLowered) {
  const LeaseConfig cfg = Timeouts(1'000, 1'000);
  LeaseLedger ledger(cfg);
  const LeaseKey full{kKey.day, kKey.advertiser + 1, kKey.arm};
  const LeaseKey other{kKey.day, kKey.advertiser + 2, kKey.arm};
  for (const LeaseKey& k : {kKey, full, other}) ledger.SetBudget(k, Micros(1'000'000));
  ASSERT_EQ(ledger.Request("a", kKey, 800'000, 0, 800'000), 800'000);
  ASSERT_EQ(ledger.Request("a", full, 300'000, 0, 300'000), 300'000);
  ASSERT_EQ(ledger.Request("b", other, 500'000, 0, 500'000), 500'000);
  ledger.Report("a", kKey, 100'000, 50'000, 100);  // 650'000 unused, 50'000 reserved
  ledger.Report("a", full, 300'000, 0, 100);       // all spent: nothing to give back
  ledger.Heartbeat("b", 1'500);
  using Ids = std::vector<std::pair<LeaseKey, std::string>>;
  Ids lowered;
  EXPECT_EQ(ledger.Reclaim(1'500, &lowered), 1);
  EXPECT_EQ(lowered, (Ids{{kKey, "a"}}));
  EXPECT_EQ(ledger.Held("a", kKey), 150'000);
  lowered.clear();
  ledger.Heartbeat("b", 2'000);
  EXPECT_EQ(ledger.Reclaim(2'000, &lowered), 0);  // the billing window is still open
  EXPECT_TRUE(lowered.empty());
  ledger.Heartbeat("b", 3'000);
  EXPECT_EQ(ledger.Reclaim(3'000, &lowered), 0);  // it is over: the reservation goes back
  EXPECT_EQ(lowered, (Ids{{kKey, "a"}}));
  EXPECT_EQ(ledger.Held("a", kKey), 100'000);
  lowered.clear();
  ledger.Heartbeat("b", 4'000);
  EXPECT_EQ(ledger.Reclaim(4'000, &lowered), 0);
  EXPECT_TRUE(lowered.empty());
  EXPECT_EQ(ledger.Held("a", full), 300'000);
  EXPECT_EQ(ledger.Held("b", other), 500'000);
}

// A coordinator that falls behind its topic (in a loaded `rtb demo --bidders 3` it processed
// messages seconds after they were sent) must not take a live bidder for dead: its unread
// reports raised its cap, and money reclaimed beyond the cap the coordinator last read would be
// spent twice (that run overspent 3.8%). Silence is measured against the newest message read.
TEST(Lease, ACoordinatorBehindItsTopicTakesNoLiveBidderForDead) {
  const LeaseConfig cfg = Timeouts(1'000, 1'000);
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(1'000'000));
  ledger.Heartbeat("a", 0, 0);
  ASSERT_EQ(ledger.Request("b", kKey, 800'000, 0, 800'000), 800'000);
  ledger.Heartbeat("b", 0, 0);
  ledger.Report("b", kKey, 100'000, 0, 0, /*cap=*/300'000);
  // Five seconds pass with nothing read: by the coordinator's clock both are silent, but it has
  // read nothing newer from anyone.
  EXPECT_FALSE(ledger.AnyLiveBidderSilent(5'000));
  EXPECT_EQ(ledger.Reclaim(5'000), 0);
  EXPECT_EQ(ledger.Held("b", kKey), 800'000);
  // It catches up: both sent at 4.9 s.
  ledger.Heartbeat("a", 5'100, 4'900);
  ledger.Heartbeat("b", 5'100, 4'900);
  EXPECT_EQ(ledger.Reclaim(5'100), 0);
  // a goes on, b stops: silent by both measures, b is dead and keeps its cap.
  ledger.Heartbeat("a", 6'200, 6'150);
  EXPECT_TRUE(ledger.AnyLiveBidderSilent(6'200));
  EXPECT_EQ(ledger.Reclaim(6'200), 1);
  EXPECT_FALSE(ledger.AnyLiveBidderSilent(6'200));  // b is dead now, a is heard
  EXPECT_EQ(ledger.Held("b", kKey), 300'000);
  EXPECT_EQ(ledger.Request("a", kKey, 1'000'000, 6'200, 1'000'000), 700'000);
  // Without send times (older messages), the coordinator's clock alone decides, as before.
  LeaseLedger old(cfg);
  old.SetBudget(kKey, Micros(1'000'000));
  ASSERT_EQ(old.Request("b", kKey, 800'000, 0, 800'000), 800'000);
  old.Heartbeat("a", 5'000);
  EXPECT_EQ(old.Reclaim(5'000), 1);
}

// A killed bidder's last messages can reach the coordinator a second after it sent them (`rtb
// demo --chaos kill-bidder`): by the coordinator's clock it has just been heard from. Read to
// the end of its topic, the coordinator takes the longer silence, from the bidders' send times.
TEST(Lease, ReadToTheEndTheSilenceIsTheLongerOfTheTwoClocks) {
  const LeaseConfig cfg = Timeouts(1'500, 1'000);
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(1'000'000));
  ASSERT_EQ(ledger.Request("b", kKey, 800'000, 0, 800'000), 800'000);
  ledger.Report("b", kKey, 100'000, 0, 0, /*cap=*/300'000);
  ledger.Heartbeat("b", 1'200, 1'000);  // b's last message: sent at 1.0 s, read at 1.2 s
  ledger.Heartbeat("b", 2'400, 1'000);  // a copy of it read at 2.4 s (late)
  ledger.Heartbeat("a", 2'650, 2'640);  // a goes on
  // At 2.65 s b has sent nothing for 1.64 s, but was read 0.25 s ago.
  using Silence = LeaseLedger::Silence;
  EXPECT_FALSE(ledger.AnyLiveBidderSilent(2'650, Silence::kWhileReading));
  EXPECT_EQ(ledger.Reclaim(2'650, nullptr, Silence::kWhileReading), 0);
  EXPECT_TRUE(ledger.AnyLiveBidderSilent(2'650, Silence::kAllRead));
  EXPECT_EQ(ledger.Reclaim(2'650, nullptr, Silence::kAllRead), 1);
  EXPECT_EQ(ledger.Held("b", kKey), 300'000);  // it keeps its cap
  // A lone bidder has no other send times to be measured against: the coordinator's clock
  // still finds it silent.
  LeaseLedger lone(cfg);
  lone.SetBudget(kKey, Micros(1'000'000));
  ASSERT_EQ(lone.Request("b", kKey, 800'000, 0, 800'000), 800'000);
  lone.Heartbeat("b", 100, 100);
  EXPECT_FALSE(lone.AnyLiveBidderSilent(1'500, Silence::kAllRead));
  EXPECT_EQ(lone.Reclaim(1'700, nullptr, Silence::kAllRead), 1);
}

// A killed bidder's last messages, read after its lease was reclaimed (in `rtb demo --chaos
// kill-bidder` an ask among them was granted and a second reclaim followed): they were sent
// before it died, so they do not bring it back. Their spend counts, their asks get nothing. Its
// restart, which speaks after the death, is alive again.
TEST(Lease, AMessageSentBeforeADeathAndReadAfterItDoesNotBringTheBidderBack) {
  LeaseLedger ledger(Timeouts(1'500, 1'000));
  ledger.SetBudget(kKey, Micros(1'000'000));
  ASSERT_EQ(ledger.Request("b", kKey, 400'000, 0, 400'000), 400'000);
  ledger.Report("b", kKey, 100'000, 0, 0, /*cap=*/200'000);
  ASSERT_TRUE(ledger.Heartbeat("b", 1'000, 1'000));
  ASSERT_TRUE(ledger.Heartbeat("a", 2'700, 2'690));
  using Silence = LeaseLedger::Silence;
  ASSERT_EQ(ledger.Reclaim(2'700, nullptr, Silence::kAllRead), 1);
  ASSERT_EQ(ledger.Held("b", kKey), 200'000);
  // b's last message, sent at 1.2 s, read at 2.8 s: a report and an ask.
  EXPECT_FALSE(ledger.Heartbeat("b", 2'800, 1'200));
  ledger.Report("b", kKey, 150'000, 0, 2'800, /*cap=*/200'000);
  EXPECT_EQ(ledger.Request("b", kKey, 300'000, 2'800, 300'000), 0);
  EXPECT_EQ(ledger.Held("b", kKey), 200'000);
  EXPECT_EQ(ledger.Of(kKey).spent, 150'000);  // its spend counts
  EXPECT_EQ(ledger.TrafficShare("b"), 0.0);   // still dead: no share of anything
  EXPECT_EQ(ledger.TrafficShare("a"), 1.0);
  EXPECT_EQ(ledger.Reclaim(3'000, nullptr, Silence::kAllRead), 0);  // nothing to reclaim twice
  // A return among them still gives back what it will not spend.
  EXPECT_FALSE(ledger.Heartbeat("b", 2'900, 1'250));
  EXPECT_EQ(ledger.Return("b", kKey, 50'000, 2'900), 50'000);
  EXPECT_EQ(ledger.Held("b", kKey), 150'000);
  // The restarted process speaks at 4.2 s: alive, and its asks are served.
  EXPECT_TRUE(ledger.Heartbeat("b", 4'210, 4'200));
  EXPECT_GT(ledger.Request("b", kKey, 100'000, 4'210, 100'000), 0);
  EXPECT_GT(ledger.TrafficShare("b"), 0.0);
}

TEST(Lease, ADeadBiddersUnspentLeaseReturnsAtOnceItsReservationsAfterTheBillingWindow) {
  const LeaseConfig cfg = Timeouts(10'000, 60'000);
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

// A dead bidder's name taken by a process that does not continue its state: the dead holding
// moves to another name, keeps its spend and reservation counted (and releases the reservation
// after the billing window, as any dead holding), and the name starts again from nothing. A live
// or unknown bidder is not retired.
TEST(Lease, ARetiredNameKeepsItsSpendCountedAndStartsAgainFromNothing) {
  LeaseLedger ledger(Timeouts(10'000, 60'000));
  ledger.SetBudget(kKey, Micros(2'000'000));
  ASSERT_EQ(ledger.Request("a", kKey, 1'000'000, 0), 1'000'000);
  ledger.Report("a", kKey, 300'000, 200'000, 1'000);
  EXPECT_TRUE(ledger.Retire("a", "a~1").empty());    // alive
  EXPECT_TRUE(ledger.Retire("zz", "zz~1").empty());  // unknown
  ledger.Heartbeat("b", 11'500);
  ASSERT_EQ(ledger.Reclaim(11'500), 1);
  ASSERT_EQ(ledger.Held("a", kKey), 500'000);
  const std::vector<LeaseKey> moved = ledger.Retire("a", "a~1");
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0], kKey);
  EXPECT_EQ(ledger.Held("a", kKey), 0);
  EXPECT_EQ(ledger.Held("a~1", kKey), 500'000);
  EXPECT_FALSE(ledger.IsAlive("a"));  // unknown until it speaks
  EXPECT_FALSE(ledger.IsAlive("a~1"));
  EXPECT_EQ(ledger.Of(kKey).held, 500'000);
  EXPECT_EQ(ledger.Of(kKey).spent, 300'000);
  // The new process under the name: what the pool has, with the dead one's money still out.
  EXPECT_EQ(ledger.Request("a", kKey, 2'000'000, 12'000, 1'500'000), 1'500'000);
  EXPECT_EQ(ledger.Of(kKey).pool(), 0);
  ledger.Report("a", kKey, 0, 0, 12'000);  // its own spend: none yet
  EXPECT_EQ(ledger.Of(kKey).spent, 300'000);
  // The billing window over, the retired reservation comes back.
  ledger.Heartbeat("a", 72'000);
  ledger.Reclaim(72'000);
  EXPECT_EQ(ledger.Held("a~1", kKey), 300'000);
  EXPECT_EQ(ledger.Held("a", kKey), 1'500'000);
  EXPECT_EQ(ledger.Of(kKey).pool(), 200'000);
}

// A restarted coordinator restores a set-aside record (`a~1`, a dead process's) and marks it
// dead at once: it takes no traffic share from the live bidder (it would count as the mean of
// the known rates until a heartbeat timeout of silence), its holding stays counted, and a
// message under that name would not make it a share holder either (none is ever sent: bidder
// names cannot contain '~'). An unknown or already dead name is left alone.
TEST(Lease, ARestoredSetAsideRecordIsDeadAtOnceAndTakesNoShare) {
  LeaseConfig cfg;
  cfg.sizing = LeaseSizing::kShare;
  cfg.heartbeat_timeout_ms = 10'000;
  LeaseLedger ledger(cfg);
  ledger.SetBudget(kKey, Micros(2'000'000));
  ledger.Restore("a", kKey, 500'000, 0);
  ledger.Restore("a~1", kKey, 300'000, 0);
  ledger.Traffic("a", 0, 0);
  ledger.Traffic("a", 300, 1000);
  EXPECT_EQ(ledger.TrafficShare("a"), 0.5);  // a~1 counts as the mean
  ledger.MarkDead("a~1", 1000);
  EXPECT_FALSE(ledger.IsAlive("a~1"));
  EXPECT_EQ(ledger.TrafficShare("a~1"), 0.0);
  EXPECT_EQ(ledger.TrafficShare("a"), 1.0);
  EXPECT_EQ(ledger.Held("a~1", kKey), 300'000);
  EXPECT_EQ(ledger.Of(kKey).held, 800'000);
  // Restored as spent: a reclaim frees none of it.
  ledger.Heartbeat("a", 1'500);
  EXPECT_EQ(ledger.Reclaim(1'500), 0);
  EXPECT_EQ(ledger.Held("a~1", kKey), 300'000);
  ledger.MarkDead("a~1", 2'000);  // already dead
  ledger.MarkDead("nobody", 2'000);
  EXPECT_FALSE(ledger.IsAlive("nobody"));
  EXPECT_TRUE(ledger.IsAlive("a"));
  EXPECT_EQ(ledger.Of(kKey).held, 800'000);
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

// The coordinator's status line said "-130827972153.9% spent" after reports of INT64_MAX: the
// ledger's sums saturate instead of wrapping (the coordinator refuses such reports besides).
TEST(LeaseLedger, SumsOfReportsSaturateInsteadOfWrapping) {
  LeaseLedger l;
  const LeaseKey key{1, 7, 0};
  l.SetBudget(key, Micros(5'000'000));
  l.Report("a", key, INT64_MAX, 0, 0);
  l.Report("b", key, INT64_MAX, 0, 0);
  EXPECT_EQ(l.Of(key).spent, INT64_MAX);
  EXPECT_EQ(l.OfDay(1).spent, INT64_MAX);
  EXPECT_LE(l.Of(key).left(), 0);
}

// What /metrics shows of a day: the budgets whose reported spend passed the budget (summed over
// the bidders), and by how much; and the days the ledger holds.
TEST(LeaseLedger, ADaysTotalsCountTheBudgetsSpentPastTheirBudget) {
  LeaseLedger l;
  const LeaseKey fine{3, 1, 0}, over{3, 2, 0}, other_day{5, 2, 0};
  for (const LeaseKey& k : {fine, over, other_day}) l.SetBudget(k, Micros(1'000'000));
  l.Report("a", fine, 600'000, 0, 0);
  l.Report("b", fine, 400'000, 0, 0);  // exactly the budget: not past it
  l.Report("a", over, 700'000, 0, 0);
  l.Report("b", over, 450'000, 0, 0);  // 150,000 past
  const LeaseLedger::Totals t = l.OfDay(3);
  EXPECT_EQ(t.spent, 2'150'000);
  EXPECT_EQ(t.overspent, 1);
  EXPECT_EQ(t.overspend, 150'000);
  EXPECT_EQ(l.OfDay(5).overspent, 0);
  EXPECT_EQ(l.Days(), (std::vector<int64_t>{3, 5}));
  EXPECT_TRUE(LeaseLedger().Days().empty());
}

}  // namespace
}  // namespace rtb::budget
