#include "rtb/core/rng.h"

#include <gtest/gtest.h>

namespace rtb {
namespace {

TEST(Rng, SameSeedSameSequenceDifferentSeedDifferent) {
  Rng a(7), b(7), c(8);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    differs |= x != c.NextU64();
  }
  EXPECT_TRUE(differs);
}

TEST(Rng, PinnedFirstValuesSoThatReportsStayReproducible) {
  Rng r(1);
  // If this changes, every seeded report changes: bump the log/report versions.
  EXPECT_EQ(r.NextU64(), 12966619160104079557ULL);
}

TEST(Rng, UniformIntStaysInRangeAndNormalHasUnitVariance) {
  Rng r(3);
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    EXPECT_LT(r.UniformInt(7), 7u);
    const double z = r.Normal();
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.02);
}

TEST(Rng, StateRoundTrips) {
  Rng a(11);
  a.Normal();
  const auto st = a.GetState();
  const double x = a.Normal(), y = a.Uniform();
  Rng b(0);
  b.SetState(st);
  EXPECT_EQ(b.Normal(), x);
  EXPECT_EQ(b.Uniform(), y);
}

TEST(AliasTable, SamplesInProportion) {
  AliasTable t({1, 0, 3});
  Rng r(5);
  int count[3] = {0, 0, 0};
  for (int i = 0; i < 40000; ++i) count[t.Sample(r)]++;
  EXPECT_EQ(count[1], 0);
  EXPECT_NEAR(count[2] / 40000.0, 0.75, 0.01);
}

TEST(Rng, PoissonMean) {
  Rng r(9);
  double sum = 0;
  for (int i = 0; i < 20000; ++i) sum += static_cast<double>(r.Poisson(15));
  EXPECT_NEAR(sum / 20000, 15.0, 0.15);
}

}  // namespace
}  // namespace rtb
