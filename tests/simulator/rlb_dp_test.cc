// RLB's dynamic program (rtb/simulator/rlb_dp.h) on cases worked out by hand, against a
// term-by-term transcription of the released loop, and as a replay strategy.
#include "rtb/simulator/rlb_dp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "rtb/simulator/replay.h"

namespace rtb::sim {
namespace {

RlbDpParams Params(int64_t N, int64_t B, int64_t max_bid, double theta) {
  RlbDpParams p;
  p.episode_size = N;
  p.budget = B;
  p.max_bid = max_bid;
  p.theta_avg = theta;
  return p;
}

TEST(RlbDp, MarketPricePdfAddsOneToEveryBin) {
  const auto m = MarketPricePdf({0, 0, 2});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_DOUBLE_EQ(m[0], 0.2);
  EXPECT_DOUBLE_EQ(m[1], 0.2);
  EXPECT_DOUBLE_EQ(m[2], 0.6);
  const auto flat = MarketPricePdf({0, 0});  // no data: uniform
  EXPECT_DOUBLE_EQ(flat[0], 0.5);
  EXPECT_DOUBLE_EQ(flat[1], 0.5);
}

TEST(RlbDp, ABudgetOfZeroBidsZeroEverywhere) {
  auto v = RlbValueFunction::Compute(Params(5, 0, 300, 0.001), MarketPricePdf({3, 1, 4}));
  // Three bins but max_bid 300: the program needs a bin per price up to max_bid.
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("has 3 bins"), std::string::npos) << v.status().message();
  v = RlbValueFunction::Compute(Params(5, 0, 2, 0.001), MarketPricePdf({3, 1, 4}));
  ASSERT_TRUE(v.ok()) << v.status().message();
  for (int64_t n = 1; n <= 5; ++n) {
    EXPECT_EQ(v->Bid(n, 0, 0.5), 0) << n;
    EXPECT_EQ(v->V(n - 1, 0), 0.0);
  }
}

// m = (1, 1, 1, 5) / 8 (counts 0, 0, 0, 4 plus one each; max_bid 3), theta_avg = 1/2: every
// number below is a short binary fraction, so the values are exact.
class RlbDpByHand : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = RlbValueFunction::Compute(Params(3, 4, 3, 0.5), MarketPricePdf({0, 0, 0, 4}));
    ASSERT_TRUE(r.ok()) << r.status().message();
    v = std::make_unique<RlbValueFunction>(std::move(*r));
  }
  std::unique_ptr<RlbValueFunction> v;
};

TEST_F(RlbDpByHand, OneAuctionLeftBidsAllItMay) {
  // V(0, .) = 0, so every delta up to min(b, max_bid) passes: bid the budget, capped.
  for (int64_t b = 0; b <= 4; ++b) {
    EXPECT_EQ(v->Bid(1, b, 0.5), std::min<int64_t>(b, 3)) << b;
    EXPECT_EQ(v->Bid(1, b, 0.0), std::min<int64_t>(b, 3)) << b;  // >= 0 holds at theta 0
  }
}

TEST_F(RlbDpByHand, ValueFunctionByHand) {
  // V(1, b) = theta * sum_{delta <= min(b, 3)} m(delta); it reaches V_max(1) = 1/2 at b = 3.
  const double v1[] = {0, 0.125, 0.1875, 0.5, 0.5};
  for (int b = 0; b <= 4; ++b) EXPECT_EQ(v->V(1, b), v1[b]) << b;
  EXPECT_EQ(v->early_stopped_rows(), 1);  // row 1 stopped at b = 3; row 2 (V_max 1) did not
  // V(2, b) = V(1, b) + sum_{delta <= a} m(delta) (1/2 + V(1, b - delta) - V(1, b)), a = min(b, 3):
  //   b = 1: 0.125 + (0.5)/8 + (0.5 - 0.125)/8                                    = 0.234375
  //   b = 2: 0.1875 + (0.5)/8 + (0.5 - 0.0625)/8 + (0.5 - 0.1875)/8                = 0.34375
  //   b = 3: 0.5 + (0.5)/8 + (0.1875)/8 + (0.125)/8 + 5 (0)/8                      = 0.6015625
  //   b = 4: 0.5 + (0.5)/8 + (0.5)/8 + (0.1875)/8 + 5 (0.125)/8                    = 0.7265625
  const double v2[] = {0, 0.234375, 0.34375, 0.6015625, 0.7265625};
  for (int b = 0; b <= 4; ++b) EXPECT_EQ(v->V(2, b), v2[b]) << b;
}

TEST_F(RlbDpByHand, BidsAndTiesAtEquality) {
  // n = 3 reads V(2, .): at b = 4 the gains of delta = 1, 2, 3 are theta - 0.125,
  // theta - 0.3828125 and theta - 0.4921875.
  EXPECT_EQ(v->Bid(3, 4, 0.5), 3);
  EXPECT_EQ(v->Bid(3, 4, 0.25), 1);
  EXPECT_EQ(v->Bid(3, 4, 0.125), 1);  // a gain of exactly 0 still bids (>= 0)
  EXPECT_EQ(v->Bid(3, 4, 0.125 - 1.0 / (1 << 20)), 0);
  EXPECT_EQ(v->Bid(3, 4, 0.3828125), 2);
  // n = 2 reads V(1, .): V(1, 3) = V(1, 4), so delta = 1 is free at any theta.
  EXPECT_EQ(v->Bid(2, 4, 0.5), 3);
  EXPECT_EQ(v->Bid(2, 4, 0.2), 1);
  EXPECT_EQ(v->Bid(2, 4, 0.0), 1);
}

// The released loop term by term (Python's order of additions), for the comparison below.
std::vector<std::vector<double>> Transcribed(const RlbDpParams& p, const std::vector<double>& m) {
  const int64_t B = p.budget, M = p.max_bid;
  const double v1t = p.v1 * p.theta_avg, v0 = p.v0, g = p.gamma;
  std::vector<double> V(B + 1, 0.0), nV(B + 1, 0.0);
  std::vector<std::vector<double>> rows{V};
  double v_max = 0, v_inc = 0;
  const int64_t a_max = v0 != 0 ? std::min<int64_t>(static_cast<int64_t>(v1t / v0), M) : M;
  for (int64_t d = 0; d <= a_max; ++d) v_inc += m[d] * (v1t - v0 * d);
  for (int64_t n = 1; n < p.episode_size; ++n) {
    std::vector<int64_t> a(B + 1, 0);
    int64_t bb = B - 1;
    for (int64_t b = B; b > 0; --b) {
      while (bb >= 0 && g * (V[bb] - V[b]) + v1t - v0 * (b - bb) >= 0) --bb;
      a[b] = bb < 0 ? std::min(M, b) : std::min(M, b - bb - 1);
    }
    v_max = g * v_max + v_inc;
    for (int64_t b = 1; b <= B; ++b) {
      nV[b] = g * V[b];
      for (int64_t d = 0; d <= a[b]; ++d) nV[b] += m[d] * (v1t + g * (V[b - d] - V[b]) - v0 * d);
      if (std::abs(nV[b] - v_max) < 1e-10) {
        for (int64_t k = b + 1; k <= B; ++k) nV[k] = v_max;
        break;
      }
    }
    V = nV;
    rows.push_back(V);
  }
  return rows;
}

std::vector<double> HumpPdf() {
  // A market-price histogram like a campaign's: prices 0..300, a hump near 80.
  std::vector<int64_t> counter(301);
  for (int i = 0; i <= 300; ++i) {
    counter[i] = static_cast<int64_t>(1000 * std::exp(-std::pow((i - 80) / 30.0, 2)));
  }
  return MarketPricePdf(counter);
}

TEST(RlbDp, AProfitObjectiveAndADiscountMatchTheTermByTermLoop) {
  // v0 != 0 (profit: a click is worth v1, a unit of cost v0) caps a_max below max_bid; gamma < 1
  // discounts the future.
  RlbDpParams p = Params(30, 900, 300, 0.0014);
  p.v1 = 60000;  // v1 * theta = 84: a_max = 84
  p.v0 = 1;
  p.gamma = 0.99;
  const auto m = HumpPdf();
  auto v = RlbValueFunction::Compute(p, m);
  ASSERT_TRUE(v.ok());
  const auto ref = Transcribed(p, m);
  for (int64_t n = 0; n < p.episode_size; ++n) {
    for (int64_t b = 0; b <= p.budget; ++b) {
      ASSERT_NEAR(v->V(n, b), ref[n][b], 1e-9 * std::max(1.0, std::abs(ref[n][b])))
          << n << " " << b;
    }
  }
  EXPECT_GT(v->V(p.episode_size - 1, p.budget), 0.0);
  // Outside the table: no bid.
  EXPECT_EQ(v->Bid(0, 10, 0.01), 0);
  EXPECT_EQ(v->Bid(p.episode_size + 1, 10, 0.01), 0);
  EXPECT_EQ(v->Bid(5, -1, 0.01), 0);
  EXPECT_EQ(v->Bid(5, p.budget + 1, 0.01), 0);
}

TEST(RlbDp, EverySplitOverTwoThreadsGivesTheOneThreadValues) {
  // Rows cut over two threads from a budget of 64 on: the stop found by the first part, by the
  // second, past the expected range (the continuation) or not at all; the values must be the
  // one-thread ones bit for bit (each b is the same arithmetic).
  const auto m = HumpPdf();
  for (int64_t B : {300, 1200, 5000}) {
    RlbDpParams one = Params(80, B, 300, 0.0014);
    one.threads = 1;
    RlbDpParams two = one;
    two.threads = 2;
    two.split_budget = 64;
    auto a = RlbValueFunction::Compute(one, m);
    auto b = RlbValueFunction::Compute(two, m);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->early_stopped_rows(), b->early_stopped_rows()) << B;
    for (int64_t n = 0; n < one.episode_size; ++n) {
      for (int64_t x = 0; x <= B; ++x)
        ASSERT_EQ(a->V(n, x), b->V(n, x)) << B << " " << n << " " << x;
    }
  }
}

TEST(RlbDp, MatchesTheTermByTermLoopOnTwoThreadsAndEarlyStops) {
  // B past the size from which rows are cut over two threads (two threads asked for), and rows
  // short enough to stop early.
  const auto m = HumpPdf();
  RlbDpParams p = Params(60, 5000, 300, 0.0014);
  p.threads = 2;
  auto v = RlbValueFunction::Compute(p, m);
  ASSERT_TRUE(v.ok());
  const auto ref = Transcribed(p, m);
  EXPECT_GT(v->early_stopped_rows(), 10);
  int64_t bids = 0, positive = 0;
  for (int64_t n = 0; n < p.episode_size; ++n) {
    for (int64_t b = 0; b <= p.budget; ++b) {
      ASSERT_NEAR(v->V(n, b), ref[n][b], 1e-12 * std::max(1.0, ref[n][b])) << n << " " << b;
    }
  }
  // The bids read V with a margin no rounding reaches: every one matches the transcription's.
  for (int64_t n = 1; n <= p.episode_size; n += 7) {
    for (int64_t b = 0; b <= p.budget; b += 97) {
      for (double theta : {0.0002, 0.0014, 0.005, 0.03}) {
        int64_t want = 0;
        for (int64_t d = 1; d <= std::min<int64_t>(b, p.max_bid); ++d) {
          if (theta + (ref[n - 1][b - d] - ref[n - 1][b]) >= 0) {
            want = d;
          } else {
            break;
          }
        }
        ASSERT_EQ(v->Bid(n, b, theta), want) << n << " " << b << " " << theta;
        ++bids;
        positive += want > 0;
      }
    }
  }
  EXPECT_GT(positive, bids / 4);
}

// The first-price program (rlb_dp.h) term by term: a win pays the bid a, so every a is weighed.
std::vector<std::vector<double>> FirstPriceByTerms(const RlbDpParams& p,
                                                   const std::vector<double>& m) {
  const int64_t B = p.budget, M = p.max_bid;
  std::vector<double> mass(M + 1);
  double acc = 0;
  for (int64_t d = 0; d <= M; ++d) mass[d] = acc += m[d];
  std::vector<double> V(B + 1, 0.0), nV(B + 1, 0.0);
  std::vector<std::vector<double>> rows{V};
  for (int64_t n = 1; n < p.episode_size; ++n) {
    for (int64_t b = 1; b <= B; ++b) {
      double best = 0;
      for (int64_t a = 0; a <= std::min(b, M); ++a) {
        best = std::max(best, mass[a] * (p.theta_avg + p.gamma * (V[b - a] - V[b]) - p.v0 * a));
      }
      nV[b] = p.gamma * V[b] + best;
    }
    V = nV;
    rows.push_back(V);
  }
  return rows;
}

// m = (1, 1, 1, 5) / 8 (RlbDpByHand's), theta 1/2: M(a) = 1/8, 1/4, 3/8, 1, short binary
// fractions, so the values are exact.
TEST(RlbDp, FirstPriceShadesWhereSecondPriceBidsTheBudgetByHand) {
  RlbDpParams p = Params(3, 4, 3, 0.5);
  p.first_price = true;
  auto v = RlbValueFunction::Compute(p, MarketPricePdf({0, 0, 0, 4}));
  ASSERT_TRUE(v.ok()) << v.status().message();
  // One auction left: the gain M(a) x theta grows with a; bid all it may, as under second price.
  const double v1[] = {0, 0.125, 0.1875, 0.5, 0.5};  // theta x M(min(b, 3)); V(., 0) = 0
  for (int b = 0; b <= 4; ++b) EXPECT_EQ(v->V(1, b), v1[b]) << b;
  EXPECT_EQ(v->Bid(1, 4, 0.5), 3);
  // Two auctions left, b = 4: gains M(a) (1/2 + V(1, 4 - a) - V(1, 4)) for a = 0..3 are
  // 1/16, 1/8, 9/128, 1/8: the smallest arg max is 1 (3 ties it), keeping budget for the next
  // auction; second price bids 3, since there a bid of 3 pays only the market price.
  EXPECT_EQ(v->Bid(2, 4, 0.5), 1);
  EXPECT_EQ(v->V(2, 4), 0.5 + 0.125);
  RlbDpParams sp = Params(3, 4, 3, 0.5);
  auto second = RlbValueFunction::Compute(sp, MarketPricePdf({0, 0, 0, 4}));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->Bid(2, 4, 0.5), 3);
}

TEST(RlbDp, FirstPriceMatchesTheTermByTermProgramOnTwoThreadsAndBidsItsArgMax) {
  const auto m = HumpPdf();
  RlbDpParams p = Params(40, 5000, 300, 0.0014);
  p.first_price = true;
  p.threads = 2;
  auto v = RlbValueFunction::Compute(p, m);
  ASSERT_TRUE(v.ok());
  const auto ref = FirstPriceByTerms(p, m);
  for (int64_t n = 0; n < p.episode_size; ++n) {
    for (int64_t b = 0; b <= p.budget; ++b) {
      ASSERT_NEAR(v->V(n, b), ref[n][b], 1e-12 * std::max(1.0, ref[n][b])) << n << " " << b;
    }
  }
  std::vector<double> mass(301);
  double acc = 0;
  for (int d = 0; d <= 300; ++d) mass[d] = acc += m[d];
  int64_t shaded = 0, bids = 0;
  for (int64_t n = 1; n <= p.episode_size; n += 3) {
    for (int64_t b = 1; b <= p.budget; b += 211) {
      for (double theta : {0.0002, 0.0014, 0.005}) {
        int64_t want = 0;
        double best = -1;
        auto gain = [&](int64_t a) {
          return mass[a] * (theta + ref[n - 1][b - a] - ref[n - 1][b]);
        };
        for (int64_t a = 0; a <= std::min<int64_t>(b, 300); ++a) {
          if (gain(a) > best) best = gain(a), want = a;
        }
        // The arg max, or a bid whose gain ties it to rounding (V's last bits differ).
        const int64_t got = v->Bid(n, b, theta);
        ASSERT_LE(got, std::min<int64_t>(b, 300));
        ASSERT_NEAR(gain(got), best, 1e-12 * best) << n << " " << b << " " << theta << " " << want;
        ++bids;
        shaded += want < std::min<int64_t>(b, 300);
      }
    }
  }
  EXPECT_GT(shaded, bids / 2);  // paying one's bid, it mostly bids below all it may
}

TEST(RlbDp, ReplaysTheRlbProtocolWithNCountingDownFromNInEveryEpisode) {
  CampaignInfo info;
  info.imp_train = 1000;
  info.clk_train = 500;    // theta_avg = 1/2
  info.cost_train = 4000;  // cpm 4: B = int(4 * c0 * N)
  info.price_counter_train = {0, 0, 0, 4};
  RlbProtocol p;
  p.episode_size = 3;
  p.c0 = 1.0 / 3;
  p.max_bid = 3;
  auto v = RlbForCampaign(info, p);
  ASSERT_TRUE(v.ok()) << v.status().message();
  const int64_t B = RlbEpisodeBudget(info, p);
  EXPECT_EQ((*v)->params().budget, B);
  RlbDpStrategy s(*v);
  // Seven auctions (two episodes of 3, a last one of 1) at price 2 and pCTR 0.2. The released
  // loop counts n down from N in every episode, the last too; counting the auctions actually
  // left in it (n = 1: bid the budget) would win the last one.
  std::vector<LoggedAuction> log(7, LoggedAuction{0, 2, 0.2, 0});
  const ReplayTotals t = ReplayRlb(log, info, p, s);
  EXPECT_EQ(t.episodes, 3);
  auto cost_if = [&](bool n_from_n) {
    int64_t cost = 0;
    for (int64_t start = 0; start < 7; start += 3) {
      const int64_t len = std::min<int64_t>(3, 7 - start);
      int64_t b = B;
      for (int64_t i = 0; i < len; ++i) {
        const int64_t n = n_from_n ? 3 - i : len - i;
        const int64_t bid = std::min({(*v)->Bid(n, b, 0.2), b, int64_t{3}});
        if (bid >= 2) {
          b -= 2;
          cost += 2;
        }
      }
    }
    return cost;
  };
  EXPECT_EQ(t.cost, cost_if(true));
  EXPECT_NE(cost_if(true), cost_if(false));
  EXPECT_GT(t.impressions, 0);

  info.price_counter_train.clear();
  auto none = RlbForCampaign(info, p);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("price_counter_train"), std::string::npos);
}

TEST(RlbDp, AuctionsDrawnFromTheSummaryFollowItsSmoothedHistogram) {
  CampaignInfo info;
  info.imp_train = 1000;
  info.clk_train = 2;
  info.cost_train = 50000;
  info.price_counter_train = {0, 96, 0, 0};  // smoothed: 1/100, 97/100, 1/100, 1/100
  auto a = DrawAuctions(info, {}, 20000, 7);
  ASSERT_TRUE(a.ok());
  int64_t at1 = 0;
  for (const auto& x : *a) {
    ASSERT_GE(x.payprice, 0);
    ASSERT_LE(x.payprice, 3);
    EXPECT_EQ(x.pctr, 0.002);  // no pCTRs given: the training CTR
    at1 += x.payprice == 1;
  }
  EXPECT_NEAR(static_cast<double>(at1) / 20000, 0.97, 0.01);
  auto again = DrawAuctions(info, {}, 20000, 7);
  auto other = DrawAuctions(info, {0.5, 0.25}, 20000, 7);
  ASSERT_TRUE(again.ok() && other.ok());
  EXPECT_EQ((*again)[123].payprice, (*a)[123].payprice);  // same seed, same draws
  for (const auto& x : *other) ASSERT_TRUE(x.pctr == 0.5 || x.pctr == 0.25);
  info.price_counter_train.clear();
  EXPECT_FALSE(DrawAuctions(info, {}, 10, 7).ok());
}

TEST(RlbDp, ByPartWithAlikePartsIsRlbsOwnProgram) {
  const auto m = MarketPricePdf({0, 3, 1, 4, 2, 0, 1});
  RlbDpParams p = Params(20, 30, 6, 0.01);
  auto own = RlbValueFunction::Compute(p, m);
  p.part_theta = {0.01, 0.01, 0.01, 0.01};
  auto parted = RlbValueFunction::Compute(p, std::vector<std::vector<double>>(4, m));
  ASSERT_TRUE(own.ok() && parted.ok());
  for (int64_t n = 0; n < 20; ++n) {
    for (int64_t b = 0; b <= 30; ++b) EXPECT_DOUBLE_EQ(own->V(n, b), parted->V(n, b)) << n;
  }
  for (int64_t n = 1; n <= 20; ++n) {
    for (int64_t b = 0; b <= 30; ++b) {
      EXPECT_EQ(own->Bid(n, b, 0.02), parted->Bid(n, b, 0.02)) << n << " " << b;
    }
  }
  // One p.d.f. per part, each with a bin per price.
  EXPECT_FALSE(RlbValueFunction::Compute(p, std::vector<std::vector<double>>(3, m)).ok());
}

TEST(RlbDp, ByPartValuesTheAuctionsLeftByThePartTheyFallIn) {
  // Two parts of 10 auctions: clicks only in the first. With 10 or fewer left every auction
  // to come is in the second part, worth nothing, so the bid is all it may; with more left the
  // value is below the program that takes every auction for the first part's CTR.
  const auto m = MarketPricePdf({0, 3, 1, 4, 2, 0, 1});
  RlbDpParams p = Params(20, 30, 6, 0.01);
  auto own = RlbValueFunction::Compute(p, m);
  p.part_theta = {0.01, 0.0};
  auto parted = RlbValueFunction::Compute(p, {m, m});
  ASSERT_TRUE(own.ok() && parted.ok());
  for (int64_t n = 0; n <= 10; ++n) EXPECT_EQ(parted->V(n, 30), 0.0) << n;
  EXPECT_GT(parted->V(11, 30), 0.0);
  EXPECT_LT(parted->V(19, 30), own->V(19, 30));
  EXPECT_EQ(parted->Bid(5, 30, 0.5), 6);  // nothing later is worth keeping budget for
  EXPECT_LE(parted->Bid(5, 30, 0.01), 6);
  EXPECT_GE(parted->Bid(15, 3, 0.01), own->Bid(15, 3, 0.01));
}

TEST(RlbDp, AStepModelFitsTheDaysShapeAndTellsDriftFromNoise) {
  CampaignInfo info;
  const auto still = ParseCompactLog(GenerateCompactLog(50000, 3, &info), "s", {})->auctions;
  LogDrift d;
  d.day_auctions = 1000;
  const auto moving = ParseCompactLog(GenerateCompactLog(50000, 3, &info, d), "d", {})->auctions;
  auto s = FitRlbStepModel(still, 1000, 10, 0.001, 300);
  auto m = FitRlbStepModel(moving, 1000, 10, 0.001, 300);
  ASSERT_TRUE(s.ok() && m.ok());
  EXPECT_NEAR(m->critical, 27.88, 0.3);  // chi-squared, 9 degrees of freedom, 0.999
  EXPECT_FALSE(s->Drifts()) << s->price_chi2 << " " << s->ctr_chi2;
  EXPECT_TRUE(m->Drifts());
  EXPECT_GT(m->price_chi2, 100 * m->critical);
  EXPECT_GT(m->ctr_chi2, 100 * m->critical);
  // The evening part's CTR above the morning's; midday's prices above the day's start.
  EXPECT_GT(m->theta[7], 1.3 * m->theta[2]);
  auto mean_price = [](const std::vector<int64_t>& h) {
    double sum = 0, n = 0;
    for (size_t p = 0; p < h.size(); ++p) {
      sum += static_cast<double>(p) * static_cast<double>(h[p]);
      n += static_cast<double>(h[p]);
    }
    return sum / n;
  };
  EXPECT_GT(mean_price(m->prices[5]), 1.3 * mean_price(m->prices[0]));
  // Equal parts: their CTRs average to theta_avg, and each histogram counts its part.
  EXPECT_NEAR(std::accumulate(m->theta.begin(), m->theta.end(), 0.0) / 10, 0.001, 1e-12);
  for (const auto& h : m->prices) EXPECT_EQ(std::accumulate(h.begin(), h.end(), int64_t{0}), 5000);
  EXPECT_FALSE(FitRlbStepModel(moving, 1000, 0, 0.001, 300).ok());
  EXPECT_FALSE(FitRlbStepModel({moving.begin(), moving.begin() + 999}, 1000, 10, 0.001, 300).ok());
  EXPECT_NEAR(ChiSquared999(3), 16.27, 0.33);  // within 2%
}

}  // namespace
}  // namespace rtb::sim
