// The process logger (core/log.h): levels, the JSON-lines format, the rate limit.
#include "rtb/core/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace rtb::log {
namespace {

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(Log, JsonLinesCarryProcessComponentAndAnEscapedMessage) {
  ASSERT_TRUE(Init({.process = "rtb-test", .level = "info", .format = Format::kJson}).ok());
  testing::internal::CaptureStderr();
  Get("bidder").info("auction {} said \"hi\"\n\tbye", "a-1");
  Get("bidder").debug("not shown at info");
  Get("kafka").warn("broker down");
  std::cerr.flush();
  const auto lines = Lines(testing::internal::GetCapturedStderr());
  ASSERT_EQ(lines.size(), 2u);
  const auto j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j["process"], "rtb-test");
  EXPECT_EQ(j["component"], "bidder");
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["msg"], "auction a-1 said \"hi\"\n\tbye");
  EXPECT_GT(j["pid"].get<int>(), 0);
  EXPECT_EQ(j["ts"].get<std::string>().back(), 'Z');
  EXPECT_EQ(nlohmann::json::parse(lines[1])["level"], "warning");
  ASSERT_TRUE(Init({.process = "rtb", .level = "info", .format = Format::kText}).ok());
}

TEST(Log, LevelsAreSettableAndBadNamesAreErrors) {
  ASSERT_TRUE(Init({.process = "rtb-test", .level = "error", .format = Format::kText}).ok());
  testing::internal::CaptureStderr();
  Get("learner").warn("hidden");
  Get("learner").error("shown");
  const auto lines = Lines(testing::internal::GetCapturedStderr());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("error rtb-test["), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("] learner: shown"), std::string::npos) << lines[0];
  EXPECT_FALSE(Init({.level = "loud"}).ok());
  EXPECT_FALSE(ParseFormat("xml").ok());
  EXPECT_TRUE(ParseLevel("warn").ok());
  ASSERT_TRUE(Init({}).ok());
}

TEST(Log, RateLimitLetsAFewThroughAndCountsTheRest) {
  RateLimit limit(3, std::chrono::hours(1));
  uint64_t skipped = 0;
  int allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += limit.Allow(&skipped) ? 1 : 0;
  EXPECT_EQ(allowed, 3);
  ManualClock clock;
  RateLimit fast(1, std::chrono::milliseconds(5), &clock);
  ASSERT_TRUE(fast.Allow(&skipped));
  EXPECT_FALSE(fast.Allow(&skipped));
  clock.Advance(4);
  EXPECT_FALSE(fast.Allow(&skipped));  // the window is not over
  clock.Advance(1);
  ASSERT_TRUE(fast.Allow(&skipped));
  EXPECT_EQ(skipped, 2u);  // reported with the next line that passes
}

}  // namespace
}  // namespace rtb::log
