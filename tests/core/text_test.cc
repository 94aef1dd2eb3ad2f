#include "rtb/core/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

namespace rtb {
namespace {

std::string ViaWriter(std::string_view s) {
  JsonWriter w(JsonWriter::Escaped(s));
  w.Str(s);
  return std::move(w).Take();
}

std::string ViaAppend(std::string_view s) {
  std::string out = "x";
  AppendJsonString(out, s);
  return out.substr(1);
}

TEST(JsonText, EscapesQuotesBackslashesAndControlsAtEveryPosition) {
  EXPECT_EQ(ViaWriter("plain"), "\"plain\"");
  EXPECT_EQ(ViaWriter(""), "\"\"");
  EXPECT_EQ(ViaWriter("a\"b\\c\nd\re\tf"), "\"a\\\"b\\\\c\\nd\\re\\tf\"");
  EXPECT_EQ(ViaWriter(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(ViaWriter(std::string(1, '\0')), "\"\\u0000\"");
  // The word-at-a-time scan must find a special byte wherever it sits in an 8-byte word, and
  // leave bytes >= 0x80 (UTF-8) and 0x7f alone.
  for (size_t len = 1; len <= 24; ++len) {
    for (size_t at = 0; at < len; ++at) {
      for (char c : {'"', '\\', '\n', '\x1f'}) {
        std::string s(len, 'a');
        s[at] = c;
        const std::string want = nlohmann::json(s).dump();
        ASSERT_EQ(ViaWriter(s), want) << "len " << len << " at " << at;
        ASSERT_EQ(ViaAppend(s), want);
      }
    }
  }
  EXPECT_EQ(ViaWriter("caf\xc3\xa9 \x7f"), "\"caf\xc3\xa9 \x7f\"");
}

TEST(JsonText, RandomBytesRoundTripThroughAJsonParser) {
  std::mt19937 rng(7);
  for (int n = 0; n < 2000; ++n) {
    std::string s(rng() % 40, ' ');
    for (char& c : s) c = static_cast<char>(rng() % 128);  // ASCII incl. controls: valid UTF-8
    const std::string a = ViaWriter(s), b = ViaAppend(s);
    ASSERT_EQ(a, b);
    ASSERT_EQ(nlohmann::json::parse(a).get<std::string>(), s);
  }
}

TEST(JsonText, NumbersAsPrintfWouldWriteThem) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int n = 0; n < 5000; ++n) {
    const double v = u(rng) * std::pow(10.0, static_cast<int>(rng() % 30) - 15);
    JsonWriter w(JsonWriter::kMaxNumber);
    w.Dbl9(v);
    char want[64];
    std::snprintf(want, sizeof want, "%.9g", v);
    ASSERT_EQ(std::move(w).Take(), want);
  }
  JsonWriter w(3 * JsonWriter::kMaxNumber + 8);
  w.Int(INT64_MIN);
  w.Raw(',');
  w.Int(INT64_MAX);
  w.Raw(',');
  w.Dbl9(-1.234567891234e-300);
  EXPECT_EQ(std::move(w).Take(), "-9223372036854775808,9223372036854775807,-1.23456789e-300");
}

}  // namespace
}  // namespace rtb
