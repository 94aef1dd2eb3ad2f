#include "rtb/core/bid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace rtb {
namespace {

TEST(BidRatio, IsPcvrOverAverage) { EXPECT_DOUBLE_EQ(BidRatio(0.06, 0.03), 2.0); }

TEST(BidRatio, IsOneWhenAverageUnknown) {
  EXPECT_EQ(BidRatio(0.05, 0.0), 1.0);
  EXPECT_EQ(BidRatio(0.05, -1.0), 1.0);
  EXPECT_EQ(BidRatio(0.05, std::numeric_limits<double>::quiet_NaN()), 1.0);
  EXPECT_EQ(BidRatio(0.05, std::numeric_limits<double>::infinity()), 1.0);
  EXPECT_EQ(BidRatio(std::numeric_limits<double>::quiet_NaN(), 0.03), 1.0);
}

TEST(Alpha, ClipsAtPlusMinusRange) {
  EXPECT_DOUBLE_EQ(Alpha(0.5, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(Alpha(0.5, 3.0), 0.9);
  EXPECT_DOUBLE_EQ(Alpha(-0.8, 2.0), -0.9);
  EXPECT_DOUBLE_EQ(Alpha(1.0, 1.0), 0.9);
  EXPECT_DOUBLE_EQ(Alpha(-1.0, 1.0, 0.5), -0.5);
  EXPECT_DOUBLE_EQ(Alpha(0.3, 0.5), 0.15);
}

TEST(Alpha, NonFiniteProductMeansManualBid) {
  EXPECT_EQ(Alpha(std::numeric_limits<double>::quiet_NaN(), 1.0), 0.0);
  EXPECT_EQ(Alpha(0.5, std::numeric_limits<double>::infinity()), 0.0);
}

TEST(AdjustedBid, StaysWithinPointOneToOnePointNineOfManual) {
  const Micros bid(2'000'000);
  EXPECT_EQ(AdjustedBid(bid, 0.0, 1.0).value(), 2'000'000);
  EXPECT_EQ(AdjustedBid(bid, 1.0, 5.0).value(), 3'800'000);
  EXPECT_EQ(AdjustedBid(bid, -1.0, 5.0).value(), 200'000);
  EXPECT_EQ(AdjustedBid(bid, -0.25, 2.0).value(), 1'000'000);
}

TEST(AdjustedBid, RoundsToNearestMicro) {
  EXPECT_EQ(AdjustedBid(Micros(3), 0.5, 1.0).value(), 5);  // 4.5 rounds away from zero
  EXPECT_EQ(AdjustedBid(Micros(7), 0.1, 1.0).value(), 8);  // 7.7
}

TEST(BidMultiplier, IsOnePlusAlpha) {
  EXPECT_DOUBLE_EQ(BidMultiplier(0.5, 1.0), 1.5);
  EXPECT_DOUBLE_EQ(BidMultiplier(1.0, 5.0), 1.9);
  EXPECT_DOUBLE_EQ(BidMultiplier(-1.0, 5.0, 0.5), 0.5);
  EXPECT_EQ(BidMultiplier(std::numeric_limits<double>::quiet_NaN(), 1.0), 1.0);
}

// Exactly for alpha >= 0; below, within the adjusted bid's rounding magnified by 1 / (1 + alpha).
TEST(UndoAdjustedBid, GivesBackTheManualBid) {
  for (const int64_t b : {1'000'000, 2'000'000, 1'234'567, 3, 999}) {
    for (const double action : {0.0, 0.1, 0.37, 0.9, 2.0}) {
      const Micros adjusted = AdjustedBid(Micros(b), action, 1.0);
      EXPECT_EQ(UndoAdjustedBid(adjusted, Alpha(action, 1.0)).value(), b) << b << " " << action;
    }
    for (const double action : {-0.1, -0.37, -0.9}) {
      const double alpha = Alpha(action, 1.0);
      const Micros adjusted = AdjustedBid(Micros(b), action, 1.0);
      EXPECT_NEAR(static_cast<double>(UndoAdjustedBid(adjusted, alpha).value()),
                  static_cast<double>(b), 0.5 / (1 + alpha) + 0.5)
          << b << " " << action;
    }
  }
  EXPECT_EQ(UndoAdjustedBid(AdjustedBid(Micros(2'000'000), -0.25, 2.0), -0.5).value(), 2'000'000);
  EXPECT_EQ(UndoAdjustedBid(Micros(3'000'000), 0.5).value(), 2'000'000);
  EXPECT_EQ(UndoAdjustedBid(Micros(1'000'000), -0.5).value(), 2'000'000);
}

// At the clip, the bid came from alpha = +-range whatever the action and bratio.
TEST(UndoAdjustedBid, UndoesTheClippedAlpha) {
  const Micros bid(2'000'000);
  const Micros high = AdjustedBid(bid, 1.0, 5.0);  // 3.8 M: alpha 0.9
  const Micros low = AdjustedBid(bid, -1.0, 5.0);  // 0.2 M: alpha -0.9
  EXPECT_EQ(UndoAdjustedBid(high, Alpha(1.0, 5.0)).value(), 2'000'000);
  EXPECT_EQ(UndoAdjustedBid(low, Alpha(-1.0, 5.0)).value(), 2'000'000);
  EXPECT_EQ(UndoAdjustedBid(AdjustedBid(bid, 1.0, 5.0, 0.5), Alpha(1.0, 5.0, 0.5)).value(),
            2'000'000);
  // Below 1: the rounding of the adjusted bid is magnified by 1 / (1 - 0.9) = 10 (here 7 M
  // adjusted is 0.7 M exactly, 7 micros: 0.7 rounds to 1, and 1 / 0.1 = 10).
  EXPECT_EQ(UndoAdjustedBid(AdjustedBid(Micros(7), -1.0, 1.0), -0.9).value(), 10);
}

TEST(UndoAdjustedBid, ZeroStaysZero) {
  EXPECT_EQ(UndoAdjustedBid(Micros(0), 0.0).value(), 0);
  EXPECT_EQ(UndoAdjustedBid(Micros(0), 0.9).value(), 0);
  EXPECT_EQ(UndoAdjustedBid(Micros(0), -0.9).value(), 0);
  EXPECT_EQ(UndoAdjustedBid(Micros(1'234'567), 0.0).value(), 1'234'567);  // alpha 0: the bid
}

// Halves away from zero, as std::llround (what replay's manual strategy computed by hand).
TEST(UndoAdjustedBid, RoundsToNearestMicro) {
  EXPECT_EQ(UndoAdjustedBid(Micros(5), 1.0).value(), 3);  // 2.5
  EXPECT_EQ(UndoAdjustedBid(Micros(7), 0.5).value(), 5);  // 4.67
  for (const int64_t b : {1, 17, 1'000'003, 98'765'432}) {
    for (const double alpha : {-0.9, -0.33, 0.0, 0.21, 0.9}) {
      EXPECT_EQ(UndoAdjustedBid(Micros(b), alpha).value(),
                std::llround(static_cast<double>(b) / (1 + alpha)));
    }
  }
}

TEST(CpmPrice, IsCpcTimesCtrTimesThousand) {
  EXPECT_EQ(CpmPrice(Micros(1'500'000), 0.02).value(), 30'000'000);
  EXPECT_EQ(CpmPrice(Micros(1'500'000), 0.0).value(), 0);
}

// The hot paths' rounding is std::llround's: halves away from zero, at every magnitude (exact
// halves, the neighbours of halves, the 2^52 edge, negatives, huge values).
TEST(RoundHalfAway, RoundsAsLlround) {
  std::vector<double> xs = {0.0,
                            0.5,
                            1.5,
                            2.5,
                            0.49999999999999994,
                            1e-300,
                            12345.5,
                            -0.5,
                            -2.5,
                            -7.25,
                            4503599627370495.5,
                            4503599627370496.0,
                            4503599627370497.0,
                            9.2e18,
                            -9.2e18};
  for (double x = 0.25; x < 1e16; x *= 1.37) {
    const double h = std::floor(x) + 0.5;
    xs.insert(xs.end(), {x, h, std::nextafter(h, 0.0), std::nextafter(h, 1e300)});
  }
  for (double x : xs) EXPECT_EQ(RoundHalfAway(x), std::llround(x)) << x;
}

}  // namespace
}  // namespace rtb
