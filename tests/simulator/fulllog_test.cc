#include "rtb/simulator/fulllog.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rtb::sim {
namespace {

Day SmallDay() {
  WorldConfig w;
  w.advertisers = 50;
  w.consumers = 40;
  DayConfig d;
  d.requests = 300;
  d.candidates_max = 20;
  return GenerateDay(GenerateWorld(w, 3), d, 4);
}

TEST(FullLog, RoundTripsExactly) {
  const Day day = SmallDay();
  const std::string text = SerializeFullLog(day);
  auto back = ParseFullLog(text, "mem.tsv");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->requests(), day.requests());
  EXPECT_EQ(back->adv, day.adv);
  EXPECT_EQ(back->bid, day.bid);
  EXPECT_EQ(back->ppb, day.ppb);
  EXPECT_EQ(back->time_ms, day.time_ms);
  EXPECT_EQ(back->consumer, day.consumer);
  EXPECT_EQ(back->floor_cpm, day.floor_cpm);
  // Bit-exact probabilities, so a replayed log gives the very same auctions.
  EXPECT_EQ(0, std::memcmp(back->pctr.data(), day.pctr.data(), day.pctr.size() * sizeof(double)));
  EXPECT_EQ(0, std::memcmp(back->pcvr.data(), day.pcvr.data(), day.pcvr.size() * sizeof(double)));
  EXPECT_EQ(SerializeFullLog(*back), text);
}

const char* kHead =
    "#rtb-fulllog v1 steps=1 step_ms=1000 advertisers=3 consumers=2\n"
    "request_id\ttime_ms\tconsumer_id\tfloor_cpm_micros\tadvertiser_id\tbid_micros\tpctr\tpcvr\t"
    "ppb_micros\n";

std::string ErrorOf(const std::string& body) {
  auto r = ParseFullLog(std::string(kHead) + body, "bad.tsv");
  return r.ok() ? "" : r.status().message();
}

TEST(FullLog, MalformedLinesNameFileAndLine) {
  const std::string good = "0\t5\t1\t7\t0\t1000\t0.1\t0.2\t5000\n";
  EXPECT_EQ(ErrorOf(good), "");
  EXPECT_NE(ErrorOf(good + "0\t5\t1\t7\t2\t1000\t0.1\n").find("bad.tsv:4: expected 9"),
            std::string::npos);
  EXPECT_NE(ErrorOf(good + "1\t6\t1\t7\t2\tabc\t0.1\t0.2\t5\n").find("bad.tsv:4: field bid_micros"),
            std::string::npos);
  EXPECT_NE(ErrorOf(good + "3\t6\t1\t7\t2\t10\t0.1\t0.2\t5\n").find("bad.tsv:4: request_id 3 out"),
            std::string::npos);
  EXPECT_NE(ErrorOf(good + "0\t5\t1\t7\t0\t1000\t0.1\t0.2\t5000\n").find("twice"),
            std::string::npos);
  EXPECT_NE(ErrorOf(good + "1\t6\t1\t7\t9\t10\t0.1\t0.2\t5\n").find("advertiser_id out of range"),
            std::string::npos);
  EXPECT_NE(ErrorOf(good + "1\t6\t1\t7\t1\t10\t1.5\t0.2\t5\n").find("pctr"), std::string::npos);
  EXPECT_NE(ErrorOf(good + "1\t2\t1\t7\t1\t10\t0.1\t0.2\t5\n").find("backwards"),
            std::string::npos);
  EXPECT_NE(ErrorOf(good + "1\t6\t1\t7\t1\t-10\t0.1\t0.2\t5\n").find("positive"),
            std::string::npos);
  EXPECT_NE(ErrorOf(good + "1\t6000\t1\t7\t1\t10\t0.1\t0.2\t5\n").find("outside the day"),
            std::string::npos);
  EXPECT_NE(ErrorOf("").find("no requests"), std::string::npos);
}

TEST(FullLog, BadHeaders) {
  EXPECT_FALSE(ParseFullLog("hello\n", "x").ok());
  EXPECT_FALSE(ParseFullLog("#rtb-fulllog v1 steps=1\n", "x").ok());
  EXPECT_FALSE(
      ParseFullLog("#rtb-fulllog v1 steps=1 step_ms=1 advertisers=1 consumers=1 x=2\n", "x").ok());
  EXPECT_FALSE(
      ParseFullLog("#rtb-fulllog v1 steps=1 step_ms=1 advertisers=1 consumers=1\nwrong\n", "x")
          .ok());
  EXPECT_EQ(ReadFullLog("/nonexistent.tsv").status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace rtb::sim
