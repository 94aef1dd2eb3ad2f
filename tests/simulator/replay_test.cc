// The replay protocols of docs/replay.md section 2, pinned on hand-made logs.
#include "rtb/simulator/replay.h"

#include <gtest/gtest.h>

namespace rtb::sim {
namespace {

CampaignInfo Info(int64_t imp, int64_t clk, double cost) {
  CampaignInfo c;
  c.imp_train = imp;
  c.clk_train = clk;
  c.cost_train = cost;
  return c;
}

std::vector<LoggedAuction> Log(const std::string& text) {
  auto l = ParseCompactLog(text, "test.txt", {});
  EXPECT_TRUE(l.ok()) << l.status().message();
  return l.ok() ? l->auctions : std::vector<LoggedAuction>{};
}

TEST(RlbProtocol, TiesWinAndTheBudgetCapsTheBid) {
  // cpm_train = 50; B = int(50 * 0.5 * 4) = 100 per episode of 4.
  const CampaignInfo info = Info(100, 5, 5000);
  RlbProtocol p{0.5, 4, 300};
  auto bid60 = ConstBid(60);
  // 60 >= 60 wins (tie); then budget 40 caps the bid at 40: 40 >= 40 wins, budget exactly 0;
  // then the bid is 0: only a payprice of 0 can still be won.
  const auto t = ReplayRlb(Log("1 60 0.1\n0 40 0.1\n1 1 0.1\n0 0 0.1\n"), info, p, *bid60);
  EXPECT_EQ(t.budget, 100);
  EXPECT_EQ(t.auctions, 4);
  EXPECT_EQ(t.impressions, 3);
  EXPECT_EQ(t.clicks, 1);
  EXPECT_EQ(t.cost, 100);
  EXPECT_EQ(t.episodes, 1);
}

TEST(RlbProtocol, UnderFirstPriceAWinPaysTheBidNotTheMarketPrice) {
  const CampaignInfo info = Info(100, 5, 5000);  // B = 100 per episode of 4
  RlbProtocol p{0.5, 4, 300, /*first_price=*/true};
  auto bid60 = ConstBid(60);
  // 60 >= 10 wins and pays 60; the budget left (40) caps the bid: 40 >= 30 wins and pays 40;
  // then the bid is 0: only a payprice of 0 can still be won.
  const auto t = ReplayRlb(Log("1 10 0.1\n0 30 0.1\n1 1 0.1\n0 0 0.1\n"), info, p, *bid60);
  EXPECT_EQ(t.impressions, 3);
  EXPECT_EQ(t.cost, 100);
  auto again = ConstBid(60);
  const auto second = ReplayRlb(Log("1 10 0.1\n0 30 0.1\n1 1 0.1\n0 0 0.1\n"), info,
                                RlbProtocol{0.5, 4, 300}, *again);
  EXPECT_EQ(second.impressions, 4);  // second price: 10 + 30 + 1 + 0
  EXPECT_EQ(second.cost, 41);
  EXPECT_TRUE(ParseReplayAuction("first_price").ok());
  EXPECT_FALSE(ParseReplayAuction("dutch").ok());
}

TEST(RlbProtocol, BidsAreCappedAtMaxBidAndEpisodesResetTheBudget) {
  const CampaignInfo info = Info(10, 1, 3000);  // cpm 300; B = int(300 * 1 * 2) = 600
  RlbProtocol p{1.0, 2, 300};
  auto big = ConstBid(1000);
  // Episodes of 2: [301, 300], [300, 300], [5] (the last is shorter, with a full budget).
  const auto t =
      ReplayRlb(Log("0 301 0.5\n0 300 0.5\n1 300 0.5\n0 300 0.5\n1 5 0.5\n"), info, p, *big);
  EXPECT_EQ(t.episodes, 3);
  EXPECT_EQ(t.impressions, 4);  // 301 > max_bid 300 loses; the rest win
  EXPECT_EQ(t.cost, 905);
  EXPECT_EQ(t.clicks, 2);
  EXPECT_DOUBLE_EQ(t.WinRate(), 4.0 / 5);
  EXPECT_DOUBLE_EQ(t.Cpm(), 905.0 / 4);
  EXPECT_DOUBLE_EQ(t.Ecpc(), 905.0 / 2 / 1000);
}

TEST(RlbProtocol, IntegerTruncationOfBudgetAndLinAndMcpc) {
  // cpm_train = 1000 / 3 = 333.33..; B = int(333.33 * (1/32) * 1000) = int(10416.66) = 10416.
  const CampaignInfo info = Info(3, 1, 1000);
  RlbProtocol p{1.0 / 32, 1000, 300};
  auto c = ConstBid(0);
  EXPECT_EQ(ReplayRlb(Log("0 1 0.1\n"), info, p, *c).budget, 10416);
  // Lin: int(pctr * b0 / ctr_avg) = int(0.0015 * 80 / (1/3)) = int(0.36) = 0.
  auto lin = LinBid(80, info.CtrTrain());
  LoggedAuction a;
  a.pctr = 0.0015;
  EXPECT_EQ(lin->Bid(a, {}), 0);
  a.pctr = 0.01;  // int(2.4) = 2
  EXPECT_EQ(lin->Bid(a, {}), 2);
  // Mcpc: int(pctr * ecpc_train) = int(0.01 * 1000) = 10.
  auto mcpc = McpcBid(info.EcpcTrain());
  EXPECT_EQ(mcpc->Bid(a, {}), 10);
  a.pctr = 0.0099;  // int(9.9) = 9
  EXPECT_EQ(mcpc->Bid(a, {}), 9);
}

TEST(BenchmarkProtocol, StrictWinsFloorsAndTheOverspendOfTheLastImpression) {
  CampaignInfo info = Info(1, 1, 1);
  info.cost_test = 200;
  BenchmarkProtocol p{0.5};  // budget 100
  auto bid = ConstBid(60);
  std::vector<LoggedAuction> log = Log("0 60 0.1\n1 50 0.1\n0 55 0.1\n1 10 0.1\n0 10 0.1\n");
  log[4].floor = 70;  // a floor above the bid
  const auto t = ReplayBenchmark(log, info, p, *bid);
  // 60 > 60 is a tie: lost. 50 won (cost 50), 55 won (cost 105 > 100: overspend tolerated),
  // then the budget is exceeded: bid 0 loses 10; the floored one is never reached anyway.
  EXPECT_EQ(t.budget, 100);
  EXPECT_EQ(t.impressions, 2);
  EXPECT_EQ(t.cost, 105);
  EXPECT_EQ(t.clicks, 1);
  // Without the overspend: the floor blocks a bid below it.
  auto high = ConstBid(65);
  std::vector<LoggedAuction> one = Log("0 10 0.1\n");
  one[0].floor = 70;
  EXPECT_EQ(ReplayBenchmark(one, info, p, *high).impressions, 0);
}

TEST(CompactLog, MalformedLinesStopWithTheirLineNumberOrAreSkippedAndCounted) {
  const std::string text = "0 70 0.002\n1 x 0.5\n0 10\n2 10 0.1\n0 10 1.5\n0 -3 0.1\n1 9 0.25\n";
  auto stop = ParseCompactLog(text, "day.txt", {});
  ASSERT_FALSE(stop.ok());
  EXPECT_EQ(stop.status().message(), "day.txt:2: payprice must be a non-negative integer, got 'x'");
  ReadOptions skip;
  skip.skip_malformed = true;
  auto s = ParseCompactLog(text, "day.txt", skip);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->auctions.size(), 2u);
  EXPECT_EQ(s->skipped, 5);
  EXPECT_EQ(s->first_skipped, "day.txt:2: payprice must be a non-negative integer, got 'x'");
  EXPECT_EQ(s->auctions[1].payprice, 9);
  EXPECT_DOUBLE_EQ(s->auctions[1].pctr, 0.25);
  EXPECT_FALSE(ParseCompactLog("0 10 0.1\n\n", "b.txt", {}).ok());  // a blank line is not a row
  EXPECT_FALSE(ParseCampaignInfo("{\"imp_train\": 1}", "c.json").ok());
  EXPECT_FALSE(
      ParseCampaignInfo("{\"imp_train\": 1, \"clk_train\": 0, \"cost_train\": 5}", "c.json").ok());
}

TEST(Strategies, RandIsSeeded) {
  auto a = RandBid(300, 7), b = RandBid(300, 7), c = RandBid(300, 8);
  LoggedAuction x;
  int same = 0, differ = 0;
  for (int i = 0; i < 100; ++i) {
    const int64_t va = a->Bid(x, {}), vb = b->Bid(x, {}), vc = c->Bid(x, {});
    EXPECT_GE(va, 0);
    EXPECT_LE(va, 300);
    same += va == vb;
    differ += va != vc;
  }
  EXPECT_EQ(same, 100);
  EXPECT_GT(differ, 90);
}

}  // namespace
}  // namespace rtb::sim
