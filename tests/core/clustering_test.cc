#include "rtb/core/clustering.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rtb {
namespace {

TEST(EqualShareCut, EqualWeightsGiveEqualCounts) {
  std::vector<double> v{5, 1, 4, 2, 6, 3}, w(6, 1.0);
  auto g = EqualShareCut(v, w, 3);
  ASSERT_TRUE(g.ok());
  // ranked ascending: 1(idx1) 2(idx3) 3(idx5) 4(idx2) 5(idx0) 6(idx4)
  EXPECT_EQ(*g, (std::vector<uint32_t>{2, 0, 1, 0, 2, 1}));
}

TEST(EqualShareCut, CutsByWeightNotCount) {
  // Many light low-revenue items, few heavy high-revenue ones: the paper's shape.
  std::vector<double> v, w;
  for (int i = 0; i < 90; ++i) v.push_back(i), w.push_back(1.0);
  for (int i = 0; i < 10; ++i) v.push_back(1000 + i), w.push_back(18.0);
  auto g = EqualShareCut(v, w, 3);
  ASSERT_TRUE(g.ok());
  double share[3] = {0, 0, 0};
  int count[3] = {0, 0, 0};
  for (size_t i = 0; i < v.size(); ++i) share[(*g)[i]] += w[i], count[(*g)[i]]++;
  const double total = 90 + 180;
  for (double s : share) EXPECT_NEAR(s / total, 1.0 / 3, 0.04);
  EXPECT_EQ(count[0], 90);  // all the light ones in the lowest cluster
}

TEST(EqualShareCut, GroupsAreContiguousInRankOrder) {
  std::vector<double> v, w;
  for (int i = 0; i < 50; ++i) v.push_back(std::sin(i) * 100), w.push_back(1 + i % 7);
  auto g = EqualShareCut(v, w, 4);
  ASSERT_TRUE(g.ok());
  for (size_t a = 0; a < v.size(); ++a) {
    for (size_t b = 0; b < v.size(); ++b) {
      if (v[a] < v[b]) {
        EXPECT_LE((*g)[a], (*g)[b]);
      }
    }
  }
}

TEST(EqualShareCut, OneItemPerGroupWhenKEqualsN) {
  std::vector<double> v{30, 10, 20}, w{100, 1, 1};
  auto g = EqualShareCut(v, w, 3);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (std::vector<uint32_t>{2, 0, 1}));
}

TEST(EqualShareCut, AGiantItemDoesNotLeaveGroupsEmpty) {
  std::vector<double> v{1, 2, 3, 4}, w{1, 1000, 1, 1};
  auto g = EqualShareCut(v, w, 3);
  ASSERT_TRUE(g.ok());
  std::vector<int> count(3, 0);
  for (auto x : *g) count[x]++;
  for (int c : count) EXPECT_GE(c, 1);
}

TEST(EqualShareCut, TiesKeepIndexOrderAndZeroWeightsWork) {
  std::vector<double> v{1, 1, 1, 1}, w{0, 0, 0, 0};
  auto g = EqualShareCut(v, w, 2);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (std::vector<uint32_t>{0, 0, 1, 1}));
}

TEST(EqualShareCut, SingleCluster) {
  std::vector<double> v{3, 1}, w{1, 1};
  auto g = EqualShareCut(v, w, 1);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (std::vector<uint32_t>{0, 0}));
}

TEST(EqualShareCut, RejectsBadInput) {
  std::vector<double> v{1, 2}, w{1, 1};
  EXPECT_FALSE(EqualShareCut(v, w, 3).ok());
  EXPECT_FALSE(EqualShareCut(v, w, 0).ok());
  std::vector<double> w1{1};
  EXPECT_FALSE(EqualShareCut(v, w1, 1).ok());
  std::vector<double> neg{1, -1};
  EXPECT_FALSE(EqualShareCut(v, neg, 1).ok());
  std::vector<double> nan{1, NAN};
  EXPECT_FALSE(EqualShareCut(v, nan, 1).ok());
}

}  // namespace
}  // namespace rtb
