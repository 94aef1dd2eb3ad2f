#include "rtb/core/events.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "rtb/core/step_marker.h"

namespace rtb {
namespace {

TEST(Events, RoundTripWithSimulatedClockAndComputations) {
  Event e;
  e.type = "bid";
  e.eid = "i-1";
  e.ts_ms = 5;
  e.auction_id = "a\"b";
  e.advertiser = 12;
  e.agent = 1;
  e.cluster = 2;
  e.price_micros = 1'234'567;
  e.sim_ms = 90'000'000;
  e.computed = {3, 0, 7};
  auto back = DecodeEvent(EncodeEvent(e));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->auction_id, "a\"b");
  EXPECT_EQ(back->sim_ms, 90'000'000);
  EXPECT_EQ(back->computed, (std::vector<int>{3, 0, 7}));
  e.sim_ms = -1;
  e.computed.clear();
  const std::string plain = EncodeEvent(e);
  EXPECT_EQ(plain.find("sim_ms"), std::string::npos);  // absent when not simulated
  EXPECT_EQ(DecodeEvent(plain)->sim_ms, -1);
  EXPECT_FALSE(DecodeEvent("{\"v\":2,\"type\":\"bid\",\"eid\":\"x\",\"ts\":1}").ok());
}

TEST(Events, EveryEventCarriesItsArmAndOldEventsReadAsLearned) {
  Event e;
  e.type = "billing";
  e.eid = "i-2";
  e.arm = Arm::kManual;
  const std::string manual = EncodeEvent(e);
  EXPECT_NE(manual.find(R"("arm":"manual")"), std::string::npos) << manual;
  EXPECT_EQ(DecodeEvent(manual)->arm, Arm::kManual);
  e.arm = Arm::kLearned;
  EXPECT_EQ(DecodeEvent(EncodeEvent(e))->arm, Arm::kLearned);
  // Written before the A/B test: no arm, every user was in the learned arm.
  EXPECT_EQ(DecodeEvent(R"({"v":1,"type":"bid","eid":"x","ts":1})")->arm, Arm::kLearned);
  for (const char* bad : {R"("control")", "1", "null"}) {
    auto r = DecodeEvent(std::string(R"({"v":1,"type":"bid","eid":"x","ts":1,"arm":)") + bad + "}");
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(Events, ExpectedOutcomeCountsRoundTripAndAreWrittenOnlyWhenNotOne) {
  Event e;
  e.type = "click";
  e.eid = "i-3";
  const std::string one = EncodeEvent(e);
  EXPECT_EQ(one.find("count"), std::string::npos) << one;  // a real click: 1, not written
  EXPECT_DOUBLE_EQ(DecodeEvent(one)->count, 1.0);
  e.count = 0.012345678;
  const std::string expected = EncodeEvent(e);
  EXPECT_NE(expected.find(R"("count":0.012345678)"), std::string::npos) << expected;
  EXPECT_DOUBLE_EQ(DecodeEvent(expected)->count, 0.012345678);
  for (const char* bad : {"-0.5", "2e6", "\"1\"", "null", "true"}) {
    auto r =
        DecodeEvent(std::string(R"({"v":1,"type":"click","eid":"x","ts":1,"count":)") + bad + "}");
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(Events, DealAndAuctionTypeRoundTripAndAreWrittenOnlyWhenSet) {
  Event e;
  e.type = "bid";
  e.eid = "i-4";
  const std::string open = EncodeEvent(e);
  EXPECT_EQ(open.find("deal"), std::string::npos) << open;
  EXPECT_EQ(open.find("\"at\""), std::string::npos) << open;
  EXPECT_EQ(DecodeEvent(open)->at, 0);
  e.deal = "AB-Agency1-0001";
  e.at = 1;
  const std::string text = EncodeEvent(e);
  auto back = DecodeEvent(text);
  ASSERT_TRUE(back.ok()) << text;
  EXPECT_EQ(back->deal, "AB-Agency1-0001");
  EXPECT_EQ(back->at, 1);
  for (const char* bad : {R"("deal":7)", R"("at":4)", R"("at":"1")"}) {
    EXPECT_FALSE(
        DecodeEvent(std::string(R"({"v":1,"type":"bid","eid":"x","ts":1,)") + bad + "}").ok())
        << bad;
  }
}

TEST(StepMarkers, RoundTripAndRangeChecks) {
  StepMarker m;
  m.day = 3;
  m.step = 2;
  m.steps_per_day = 3;
  m.step_ms = 3'600'000;
  m.expected_events = 1234;
  m.cost_micros = 99;
  m.revenue_micros = 1'000'001;
  auto back = DecodeStepMarker(EncodeStepMarker(m));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->expected_events, 1234);
  EXPECT_EQ(back->revenue_micros, 1'000'001);
  m.step = 3;  // outside 0..T-1
  EXPECT_FALSE(DecodeStepMarker(EncodeStepMarker(m)).ok());
  EXPECT_FALSE(DecodeStepMarker("{\"v\":1,\"day\":0}").ok());
  EXPECT_FALSE(DecodeStepMarker("garbage").ok());
}

// Regression (event fuzzer): alpha -0.0 was written "-0", read back as the integer 0, and
// written "0": what the encoder writes must read back to the same bytes.
TEST(Events, NegativeZeroEncodesAsZeroAndRoundTrips) {
  auto e = DecodeEvent(R"({"v":1,"type":"bid","eid":"7","ts":1,"alpha":-0.0E5,"pctr":-0.0})");
  ASSERT_TRUE(e.ok()) << e.status().message();
  const std::string once = EncodeEvent(*e);
  EXPECT_EQ(once.find("-0"), std::string::npos) << once;
  auto again = DecodeEvent(once);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(EncodeEvent(*again), once);
}

}  // namespace
}  // namespace rtb

namespace rtb {
namespace {

// Found by the event fuzzer: a number out of an integer field's range (nlohmann casts a float
// to int: undefined behaviour) must be refused, not converted.
TEST(Events, OutOfRangeOrFloatIntegersAreRefused) {
  const std::string ok = R"({"v":1,"type":"bid","eid":"e","ts":1,"agent":2})";
  ASSERT_TRUE(DecodeEvent(ok).ok());
  for (const std::string& bad : {
           std::string(R"({"v":)") + std::string(150, '6') + "}",
           std::string(R"({"v":1,"type":"bid","eid":"e","ts":1,"agent":1e300})"),
           std::string(R"({"v":1,"type":"bid","eid":"e","ts":1,"agent":4294967296})"),
           std::string(R"({"v":1,"type":"bid","eid":"e","ts":1.5})"),
           std::string(R"({"v":1,"type":"bid","eid":"e","ts":1,"computed":[1,2.5]})"),
           std::string(R"({"v":1,"type":"bid","eid":"e","ts":1,"policy_version":-1})"),
           std::string(R"({"v":1,"type":"bid","eid":"e","ts":1,"pctr":"x"})"),
       }) {
    EXPECT_FALSE(DecodeEvent(bad).ok()) << bad.substr(0, 80);
  }
}

// The one range check of an event's money (the learner's and the reports'): each refusal names
// its reason; what is within the declared ranges passes.
TEST(Events, MoneyOutsideTheDeclaredRangesIsRefusedWithItsReason) {
  EventMoneyBounds b;
  b.advertisers[1] = {.max_price_micros = 1'520'000'000,
                      .max_conversion_value_micros = 600'000'000};
  auto reason = [&](const Event& e) -> std::string {
    const auto r = CheckEventMoney(e, b);
    return r ? r->reason : "ok";
  };
  Event e;
  e.type = "billing";
  e.advertiser = 1;
  e.price_micros = 1'520'000'000;
  EXPECT_EQ(reason(e), "ok");
  e.price_micros = 1'520'000'001;
  EXPECT_EQ(reason(e), "price_above_bid");
  e.price_micros = -9'000'000'000'000'000'000;
  EXPECT_EQ(reason(e), "negative_price");
  e.type = "conversion";
  e.price_micros = 600'000'000;
  EXPECT_EQ(reason(e), "ok");
  for (int64_t v : {int64_t{9'000'000'000'000}, int64_t{9'000'000'000'000'000'000}}) {
    e.price_micros = v;
    EXPECT_EQ(reason(e), "conversion_value_out_of_range") << v;
  }
  e.price_micros = 0;
  e.count = std::nan("");
  EXPECT_EQ(reason(e), "count_out_of_range");
  e.count = 2e6;
  EXPECT_EQ(reason(e), "count_out_of_range");
  e.count = 1;
  for (double p : {1e300, -0.1, std::nan(""), std::numeric_limits<double>::infinity()}) {
    e.pctr = p;
    EXPECT_EQ(reason(e), "probability_out_of_range") << p;
  }
  e.pctr = 0.5;
  e.computed = {1, -1};
  EXPECT_EQ(reason(e), "computed_out_of_range");
  e.computed.clear();
  e.advertiser = 7;
  EXPECT_EQ(reason(e), "unknown_advertiser");
  e.advertiser = -1;  // a no-bid carries no money
  EXPECT_EQ(reason(e), "ok");
}

TEST(StepMarkers, StepIndexRefusesWhatOverflows) {
  EXPECT_EQ(StepIndex(2, 1, 3), 7);
  EXPECT_EQ(StepIndex(0, -1, 24), -1);
  EXPECT_EQ(StepIndex(int64_t{1} << 62, 0, 24), std::nullopt);
  EXPECT_EQ(StepIndex(std::numeric_limits<int64_t>::max() / 3, 3, 3), std::nullopt);
}

// Kafka keys: an advertiser's events share its id; no-bids, which have none, are keyed by a hash
// of their auction id into kNoBidKeys buckets, so that they spread over the partitions (one
// "nobid" key put them all on one) and a reader can recompute the key from the event.
TEST(Events, NoBidsAreKeyedByAuctionIntoBuckets) {
  Event bid;
  bid.type = "bid";
  bid.advertiser = 12;
  bid.auction_id = "a1";
  EXPECT_EQ(bid.Key(), "12");
  std::set<std::string> keys;
  for (int i = 0; i < 1000; ++i) {
    Event e;
    e.type = "nobid";
    e.auction_id = "auction-" + std::to_string(i);
    const std::string key = e.Key();
    ASSERT_EQ(key.rfind("nobid-", 0), 0u) << key;
    const int bucket = std::stoi(key.substr(6));
    EXPECT_GE(bucket, 0);
    EXPECT_LT(bucket, kNoBidKeys);
    keys.insert(key);
    // A function of the event: the same after a round trip through the encoding, and the same
    // auction id in a second event.
    auto back = DecodeEvent(EncodeEvent(e));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->Key(), key);
    Event again;
    again.auction_id = e.auction_id;
    EXPECT_EQ(again.Key(), key);
  }
  // 1,000 auctions over 256 buckets: nearly every bucket used (about 249 expected).
  EXPECT_GT(keys.size(), 200u);
  // A hostile id (tabs and newlines would break the spill file's lines) never reaches the key.
  Event hostile;
  hostile.auction_id = "x\ty\nz";
  EXPECT_EQ(hostile.Key().find_first_of("\t\n"), std::string::npos);
}

}  // namespace
}  // namespace rtb
