#include "rtb/core/auction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "rtb/core/rng.h"

namespace rtb {
namespace {

std::vector<SlotResult> Auction(int slots, double reserve, const std::vector<AuctionEntry>& in,
                                Pricing pricing = Pricing::kSecondPrice) {
  SlotAuction a(slots, reserve, pricing);
  for (const auto& e : in) a.Offer(e);
  SlotResult out[kMaxSlots];
  const int n = a.Resolve(out);
  return std::vector<SlotResult>(out, out + n);
}

TEST(Gsp, RanksByEcpmAndChargesTheNextEcpm) {
  const auto w = Auction(3, 0, {{10, 1, 0}, {40, 2, 1}, {25, 3, 2}, {30, 4, 3}, {5, 5, 4}});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].index, 1u);
  EXPECT_EQ(w[0].price_ecpm, 30);
  EXPECT_EQ(w[1].index, 3u);
  EXPECT_EQ(w[1].price_ecpm, 25);
  EXPECT_EQ(w[2].index, 2u);
  EXPECT_EQ(w[2].price_ecpm, 10);  // the 4th candidate sets the last winner's price
}

TEST(Gsp, LastWinnerPaysReserveWhenNoFourthCandidate) {
  const auto w = Auction(3, 2.0, {{10, 1, 0}, {8, 2, 1}, {6, 3, 2}});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[2].price_ecpm, 2.0);
  EXPECT_EQ(w[1].price_ecpm, 6.0);
}

TEST(Gsp, FewerCandidatesThanSlots) {
  const auto w = Auction(3, 1.0, {{10, 1, 7}});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].index, 7u);
  EXPECT_EQ(w[0].price_ecpm, 1.0);
  EXPECT_TRUE(Auction(3, 1.0, {}).empty());
}

TEST(Gsp, BelowReserveNeitherWinsNorSetsPrices) {
  const auto w = Auction(2, 5.0, {{10, 1, 0}, {4, 2, 1}, {3, 3, 2}});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].price_ecpm, 5.0);
}

TEST(Gsp, PriceNeverBelowReserveNorAboveOwnEcpm) {
  const auto w = Auction(3, 7.0, {{10, 1, 0}, {7.5, 2, 1}, {7.2, 3, 2}, {7.1, 4, 3}});
  for (const auto& s : w) {
    EXPECT_GE(s.price_ecpm, 7.0);
    EXPECT_LE(s.price_ecpm, s.ecpm);
  }
}

TEST(Gsp, TiesGoToTheLowerAdvertiserIdWhateverTheOrder) {
  const auto a = Auction(1, 0, {{10, 9, 0}, {10, 3, 1}, {10, 5, 2}});
  const auto b = Auction(1, 0, {{10, 5, 2}, {10, 3, 1}, {10, 9, 0}});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].index, 1u);
  EXPECT_EQ(b[0].index, 1u);
  EXPECT_EQ(a[0].price_ecpm, 10);  // a tie pays its own eCPM
}

TEST(FirstPrice, TheTopCandidateWinsAndPaysItsOwnBidNotTheNext) {
  const auto w = Auction(1, 2.0, {{10, 1, 0}, {40, 2, 1}, {25, 3, 2}}, Pricing::kFirstPrice);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].index, 1u);
  EXPECT_EQ(w[0].price_ecpm, 40);  // second price would charge 25
  // Alone above the reserve: first price still charges the bid, second price the reserve.
  EXPECT_EQ(Auction(1, 2.0, {{9, 1, 0}}, Pricing::kFirstPrice)[0].price_ecpm, 9);
  EXPECT_EQ(Auction(1, 2.0, {{9, 1, 0}})[0].price_ecpm, 2.0);
}

TEST(FirstPrice, GeneralizedFirstPriceRanksAsGspAndEachWinnerPaysItsOwnEcpm) {
  const std::vector<AuctionEntry> in = {{10, 1, 0}, {40, 2, 1}, {25, 3, 2}, {30, 4, 3}, {5, 5, 4}};
  const auto gfp = Auction(3, 0, in, Pricing::kFirstPrice);
  const auto gsp = Auction(3, 0, in);
  ASSERT_EQ(gfp.size(), 3u);
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(gfp[s].index, gsp[s].index);  // the same winners in the same order
    EXPECT_EQ(gfp[s].price_ecpm, gfp[s].ecpm);
    EXPECT_GT(gfp[s].price_ecpm, gsp[s].price_ecpm);
  }
  // Below the reserve neither wins nor pays.
  EXPECT_TRUE(Auction(2, 50, in, Pricing::kFirstPrice).empty());
}

TEST(Gsp, ZeroAndNegativeBidsAreIgnored) {
  EXPECT_TRUE(Auction(3, 0, {{0, 1, 0}, {-5, 2, 1}}).empty());
}

TEST(Gsp, ResetStartsAFreshAuction) {
  SlotAuction a(1, 0);
  a.Offer({10, 1, 0});
  a.Reset();
  a.Offer({3, 2, 1});
  SlotResult out[kMaxSlots];
  ASSERT_EQ(a.Resolve(out), 1);
  EXPECT_EQ(out[0].index, 1u);
}

// RankAll (the simulator's batch ranking) keeps exactly what Offer, one entry at a time, keeps:
// random auctions with many exact ties (few distinct eCPMs and advertiser ids, repeated ids
// included), entries below the reserve, zero, negative and NaN eCPMs, every slot count, and
// more entries than one batch holds.
TEST(Gsp, RankAllKeepsWhatOfferKeepsTiesAndReserveIncluded) {
  Rng rng(7);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int trial = 0; trial < 20000; ++trial) {
    const int slots = 1 + static_cast<int>(rng.Uniform() * kMaxSlots);
    const double reserve = rng.Uniform() < 0.5 ? 0.0 : 2.0;
    const int n = static_cast<int>(rng.Uniform() * (trial % 50 == 0 ? 2 * kMaxBatch : 20));
    std::vector<AuctionEntry> in;
    for (int q = 0; q < n; ++q) {
      const double u = rng.Uniform();
      const double ecpm = u < 0.05   ? nan
                          : u < 0.1  ? -1.0
                          : u < 0.15 ? 0.0
                                     : static_cast<double>(static_cast<int>(u * 6));
      in.push_back({ecpm, static_cast<uint32_t>(rng.Uniform() * 4), static_cast<uint32_t>(q)});
    }
    SlotAuction one(slots, reserve), batch(slots, reserve);
    for (const auto& e : in) one.Offer(e);
    batch.RankAll(in.data(), n);
    SlotResult a[kMaxSlots], b[kMaxSlots];
    const int na = one.Resolve(a), nb = batch.Resolve(b);
    ASSERT_EQ(na, nb) << "trial " << trial;
    for (int k = 0; k < na; ++k) {
      ASSERT_EQ(a[k].index, b[k].index) << "trial " << trial << " rank " << k;
      ASSERT_EQ(a[k].price_ecpm, b[k].price_ecpm) << "trial " << trial << " rank " << k;
    }
  }
}

}  // namespace
}  // namespace rtb
