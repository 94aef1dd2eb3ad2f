// The bidder's policy feed as the one who takes the learner's tables: with the market's key
// ring only sealed tables are installed, and a version from the far future is refused.
#include "rtb/bidder/policy_feed.h"

#include <gtest/gtest.h>

#include "rtb/core/mac.h"
#include "rtb/core/policy.h"
#include "rtb/kafka/kafka.h"

namespace rtb::bidder {
namespace {

std::string Table(uint64_t version) {
  PolicyMessage m;
  m.table = ActionTable(2, 1);
  m.table.version = version;
  m.table.set(0, 0, 0.25);
  return EncodePolicyMessage(m);
}

// A feed on a mock cluster's policy topic, with `keys` (nullptr: none).
std::unique_ptr<PolicyFeed> StartFeed(kafka::MockCluster& mock, PolicyHolder* holder,
                                      std::shared_ptr<const MarketKeys> keys) {
  PolicyFeedOptions fo;
  fo.client.bootstrap = mock.bootstrap();
  fo.topic = "rtb.policy";
  fo.group_id = "rtb-bidder-test";
  fo.keys = std::move(keys);
  auto feed = PolicyFeed::Start(fo, holder, std::make_shared<const ClusterMap>());
  EXPECT_TRUE(feed.ok()) << feed.status().message();
  return feed.ok() ? std::move(*feed) : nullptr;
}

TEST(PolicyFeedTrust, WithAKeyRingOnlySealedTablesAreInstalled) {
  auto mock = kafka::MockCluster::Start(1);
  ASSERT_TRUE(mock.ok());
  ASSERT_TRUE((*mock)->CreateTopic("rtb.policy", 1, 1).ok());
  auto keys = MarketKeys::Parse("k1=0123456789abcdef0123456789abcdef");
  auto other = MarketKeys::Parse("k2=fedcba9876543210fedcba9876543210");
  ASSERT_TRUE(keys.ok() && other.ok());
  auto ring = std::make_shared<const MarketKeys>(std::move(*keys));
  PolicyHolder holder;
  auto feed = StartFeed(**mock, &holder, ring);
  ASSERT_NE(feed, nullptr);
  const Status unsealed = feed->Apply(Table(2));
  EXPECT_FALSE(unsealed.ok());
  EXPECT_NE(unsealed.message().find("unsealed"), std::string::npos) << unsealed.message();
  const Status unknown = feed->Apply(other->Seal("rtb.policy", Table(2)));
  EXPECT_NE(unknown.message().find("unknown_key"), std::string::npos) << unknown.message();
  // Sealed for another topic: the MAC covers the topic.
  const Status elsewhere = feed->Apply(ring->Seal("rtb.clock", Table(2)));
  EXPECT_NE(elsewhere.message().find("bad_mac"), std::string::npos) << elsewhere.message();
  EXPECT_EQ(feed->rejected_seal(), 3u);
  EXPECT_EQ(holder.Current(), nullptr);
  EXPECT_TRUE(feed->Apply(ring->Seal("rtb.policy", Table(2))).ok());
  ASSERT_NE(holder.Current(), nullptr);
  EXPECT_EQ(holder.Current()->table.version, 2u);
}

// Regression: a forged table of version 24000000002 (day 10^9) was installed, and every later
// genuine table was older than it. A version more than kMaxVersionJump above the one in use
// is refused; the genuine next one is installed.
TEST(PolicyFeedTrust, AVersionFromTheFarFutureIsRefused) {
  auto mock = kafka::MockCluster::Start(1);
  ASSERT_TRUE(mock.ok());
  ASSERT_TRUE((*mock)->CreateTopic("rtb.policy", 1, 1).ok());
  PolicyHolder holder;
  auto feed = StartFeed(**mock, &holder, nullptr);
  ASSERT_NE(feed, nullptr);
  ASSERT_TRUE(feed->Apply(Table(5)).ok());
  const Status far = feed->Apply(Table(24'000'000'002));
  EXPECT_FALSE(far.ok());
  EXPECT_NE(far.message().find("far future"), std::string::npos) << far.message();
  EXPECT_EQ(feed->rejected_invalid(), 1u);
  EXPECT_TRUE(feed->Apply(Table(6)).ok());
  EXPECT_EQ(holder.Current()->table.version, 6u);
  EXPECT_TRUE(feed->Apply(Table(6 + PolicyFeed::kMaxVersionJump)).ok());  // the edge is taken
}

}  // namespace
}  // namespace rtb::bidder
