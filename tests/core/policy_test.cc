// The policy message codec (core/policy.h): one codec at both ends, safe on any input.
#include "rtb/core/policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rtb {
namespace {

PolicyMessage Sample() {
  PolicyMessage m;
  m.table = ActionTable(2, 3);
  m.table.set(1, 2, -0.75);
  m.table.version = 7;
  m.table.created_unix_ms = 1234;
  m.table.algo = "dcmab-online";
  ClusterMap c;
  c.clusters = 3;
  c.default_cluster = 1;
  c.user_cluster = {{"u-b", 2}, {"u-a", 0}};
  m.clusters = c;
  m.alpha_range = 0.6;
  m.for_day = 3;
  m.for_step = 2;
  return m;
}

// The cluster map's optional history (the learner's x_j prior): round-trips, and a shape that
// does not fit the map is refused with a reason.
TEST(ClusterMap, HistoryRoundTripsAndBadShapesAreRefused) {
  ClusterMap c;
  c.clusters = 2;
  c.user_cluster = {{"u1", 1}};
  c.revenue_hist = {{1.5, 3}, {2, 4}};
  c.cost_hist = {{0.5, 1}, {0.25, 2}};
  auto back = ParseClusterMap(SerializeClusterMap(c), "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->revenue_hist, c.revenue_hist);
  EXPECT_EQ(back->cost_hist, c.cost_hist);
  const std::string head =
      R"({"format":"rtb.cluster_map","schema_version":1,"clusters":2,"users":{},"history":)";
  for (const auto& [history, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"revenue":[[1,2]]})", "needs 'revenue' and 'cost'"},
           {R"({"revenue":[[1,2,3]],"cost":[[1,2,3]]})", "one value per cluster"},
           {R"({"revenue":[[1,-2]],"cost":[[1,2]]})", "negative"},
           {R"({"revenue":[[1,2]],"cost":[[1,2],[3,4]]})", "different numbers of steps"},
           {R"({"revenue":[],"cost":[]})", "1..86400 steps"}}) {
    auto r = ParseClusterMap(head + history + "}", "test");
    ASSERT_FALSE(r.ok()) << history;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  }
}

TEST(PolicyMessage, RoundTripsEveryField) {
  const std::string bytes = EncodePolicyMessage(Sample());
  auto m = DecodePolicyMessage(bytes, "test");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->table.version, 7u);
  EXPECT_EQ(m->table.created_unix_ms, 1234);
  EXPECT_EQ(m->table.algo, "dcmab-online");
  EXPECT_DOUBLE_EQ(m->table.at(1, 2), -0.75);
  ASSERT_TRUE(m->clusters.has_value());
  EXPECT_EQ(m->clusters->Lookup("u-b"), 2);
  EXPECT_EQ(m->clusters->Lookup("nobody"), 1);
  EXPECT_DOUBLE_EQ(m->alpha_range, 0.6);
  EXPECT_EQ(m->for_day, 3);
  EXPECT_EQ(m->for_step, 2);
  // Same message, same bytes (users sorted).
  EXPECT_EQ(EncodePolicyMessage(*m), bytes);
}

TEST(PolicyMessage, WithoutClustersOrRangeKeepsTheDefaults) {
  PolicyMessage s = Sample();
  s.clusters.reset();
  auto m = DecodePolicyMessage(EncodePolicyMessage(s), "test");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->clusters.has_value());
  auto old = DecodePolicyMessage(R"({"table":{"format":"rtb.action_table","schema_version":1,)"
                                 R"("actions":[[0.1]]}})",
                                 "test");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_DOUBLE_EQ(old->alpha_range, kDefaultAlphaRange);
}

TEST(PolicyMessage, RejectsBadInputWithAReason) {
  const std::string table = R"({"format":"rtb.action_table","schema_version":1,"actions":[[0.1]]})";
  for (const std::string& bad : std::vector<std::string>{
           std::string("{not json"),
           std::string("[]"),
           std::string(R"({"clusters":null})"),
           R"({"table":)" + table + R"(,"alpha_range":1.5})",
           R"({"table":)" + table + R"(,"alpha_range":0})",
           R"({"table":)" + table + R"(,"alpha_range":"x"})",
           // a cluster map for 3 clusters beside a table of 1
           R"({"table":)" + table +
               R"(,"clusters":{"format":"rtb.cluster_map","schema_version":1,"clusters":3,)"
               R"("users":{}}})",
           R"({"table":)" + table +
               R"(,"clusters":{"format":"rtb.cluster_map","schema_version":1,"clusters":1,)"
               R"("users":{"u":4}}})",
           std::string(
               R"({"table":{"format":"rtb.action_table","schema_version":1,"actions":[[2.0]]}})"),
           // Found by the policy fuzzer: a number where a string belongs threw from nlohmann.
           std::string(R"({"table":{"format":2,"schema_version":1,"actions":[[0.1]]}})"),
           R"({"table":)" + table +
               R"(,"clusters":{"format":2,"schema_version":1,"clusters":1,"users":{}}})",
       }) {
    auto m = DecodePolicyMessage(bad, "topic");
    EXPECT_FALSE(m.ok()) << bad;
    if (!m.ok()) {
      EXPECT_EQ(m.status().message().rfind("topic", 0), 0u) << m.status().message();
    }
  }
}

TEST(PolicyMessage, BoundsDepthAndSizeBeforeParsing) {
  // 100,000 nested arrays: refused without recursing (a recursive parser or dump would
  // overflow the stack).
  const std::string bomb = std::string(100000, '[') + std::string(100000, ']');
  auto m = DecodePolicyMessage(bomb, "topic");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("nested deeper"), std::string::npos);
  PolicyLimits small;
  small.max_bytes = 16;
  EXPECT_FALSE(DecodePolicyMessage(EncodePolicyMessage(Sample()), "t", small).ok());
  // Brackets inside strings do not count.
  EXPECT_TRUE(JsonDepthWithin(R"({"a":"[[[[[[[[[[[[[[[[[[[[[["})", 2));
  EXPECT_TRUE(JsonDepthWithin(R"({"a":"\"[[[[[[[[[[["})", 2));
  EXPECT_FALSE(JsonDepthWithin("[[[]]]", 2));
  EXPECT_TRUE(JsonDepthWithin("[[]]", 2));
}

}  // namespace
}  // namespace rtb
