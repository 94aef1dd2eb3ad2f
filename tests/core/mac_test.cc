// The market key ring: HMAC-SHA-256 against RFC 4231's vectors, sealing and opening messages,
// rotation, and every way a message is refused.
#include "rtb/core/mac.h"

#include <gtest/gtest.h>

#include <string>

namespace rtb {
namespace {

const std::string kSecretA(40, 'a');
const std::string kSecretB(40, 'b');

TEST(Hmac, MatchesRfc4231) {
  // Test case 2: key "Jefe", data "what do ya want for nothing?".
  auto h = Hmac::Create("Jefe");
  ASSERT_TRUE(h.ok());
  const Hmac::Digest d = h->Mac("what do ya want for nothing?");
  EXPECT_EQ(HexBytes(d.data(), d.size()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a 131-byte key (longer than a block is hashed first).
  auto big = Hmac::Create(std::string(131, '\xaa'));
  ASSERT_TRUE(big.ok());
  const Hmac::Digest d6 = big->Mac("Test Using Larger Than Block-Size Key - Hash Key First");
  EXPECT_EQ(HexBytes(d6.data(), d6.size()),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(big->HexMac("Test Using Larger Than Block-Size Key - Hash Key First", 4), "60e43159");
}

TEST(MarketKeys, SealsAndOpens) {
  auto k = MarketKeys::Create({{"k1", kSecretA}});
  ASSERT_TRUE(k.ok()) << k.status().message();
  const std::string body = R"({"type":"request","bidder":"a","seq":7})";
  const std::string sealed = k->Seal("rtb.lease.requests", body);
  EXPECT_EQ(sealed.rfind(R"({"type":"request","bidder":"a","seq":7,"mac":"k1:)", 0), 0u) << sealed;
  std::string got;
  EXPECT_EQ(k->Open("rtb.lease.requests", sealed, &got), SealCheck::kOk);
  EXPECT_EQ(got, body);
  // The empty object too.
  const std::string empty = k->Seal("t", "{}");
  EXPECT_EQ(k->Open("t", empty, &got), SealCheck::kOk);
  EXPECT_EQ(got, "{}");
}

TEST(MarketKeys, RefusesWhatItDidNotSeal) {
  auto k = MarketKeys::Create({{"k1", kSecretA}});
  ASSERT_TRUE(k.ok());
  const std::string sealed = k->Seal("rtb.lease.grants", R"({"held":100})");
  std::string got = "untouched";
  // The same bytes on another topic, one byte changed, no mac, a mac under a key not held.
  EXPECT_EQ(k->Open("rtb.lease.requests", sealed, &got), SealCheck::kBadMac);
  std::string raised = sealed;
  raised.replace(raised.find("100"), 3, "900");
  EXPECT_EQ(k->Open("rtb.lease.grants", raised, &got), SealCheck::kBadMac);
  EXPECT_EQ(k->Open("rtb.lease.grants", R"({"held":100})", &got), SealCheck::kUnsealed);
  EXPECT_EQ(k->Open("rtb.lease.grants", "", &got), SealCheck::kUnsealed);
  EXPECT_EQ(k->Open("rtb.lease.grants", R"({"held":100,"mac":"k1:zz"})", &got),
            SealCheck::kUnsealed);
  auto other = MarketKeys::Create({{"k2", kSecretB}});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(k->Open("rtb.lease.grants", other->Seal("rtb.lease.grants", R"({"held":100})"), &got),
            SealCheck::kUnknownKey);
  // The same id with another secret: a forgery.
  auto forger = MarketKeys::Create({{"k1", kSecretB}});
  ASSERT_TRUE(forger.ok());
  EXPECT_EQ(k->Open("rtb.lease.grants", forger->Seal("rtb.lease.grants", R"({"held":100})"), &got),
            SealCheck::kBadMac);
  EXPECT_EQ(got, "untouched");
  EXPECT_STREQ(SealCheckName(SealCheck::kBadMac), "bad_mac");
}

TEST(MarketKeys, RotatesByOrder) {
  // Old ring {k1}; during the rotation {k1, k2} then {k2, k1}; after it {k2}.
  auto old_ring = MarketKeys::Parse("k1=" + kSecretA);
  auto adding = MarketKeys::Parse("k1=" + kSecretA + ",k2=" + kSecretB);
  auto switched = MarketKeys::Parse("k2=" + kSecretB + ",k1=" + kSecretA);
  auto new_ring = MarketKeys::Parse("k2=" + kSecretB);
  ASSERT_TRUE(old_ring.ok() && adding.ok() && switched.ok() && new_ring.ok());
  EXPECT_EQ(switched->signing_id(), "k2");
  const std::string m = R"({"v":1})";
  EXPECT_EQ(adding->Open("t", old_ring->Seal("t", m), nullptr), SealCheck::kOk);
  EXPECT_EQ(adding->Open("t", switched->Seal("t", m), nullptr), SealCheck::kOk);
  EXPECT_EQ(switched->Open("t", adding->Seal("t", m), nullptr), SealCheck::kOk);
  EXPECT_EQ(new_ring->Open("t", switched->Seal("t", m), nullptr), SealCheck::kOk);
  EXPECT_EQ(new_ring->Open("t", old_ring->Seal("t", m), nullptr), SealCheck::kUnknownKey);
}

TEST(MarketKeys, BadRingsAreErrors) {
  EXPECT_FALSE(MarketKeys::Create({}).ok());
  EXPECT_FALSE(MarketKeys::Create({{"k1", "short"}}).ok());
  EXPECT_FALSE(MarketKeys::Create({{"", kSecretA}}).ok());
  EXPECT_FALSE(MarketKeys::Create({{"a b", kSecretA}}).ok());
  EXPECT_FALSE(MarketKeys::Create({{"k1", kSecretA}, {"k1", kSecretB}}).ok());
  auto noeq = MarketKeys::Parse("k1" + kSecretA);
  ASSERT_FALSE(noeq.ok());
  // The error never prints a secret.
  EXPECT_EQ(noeq.status().message().find("aaaa"), std::string::npos);
  EXPECT_FALSE(MarketKeys::Parse("").ok());
}

}  // namespace
}  // namespace rtb
