#include "rtb/core/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

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

TEST(JsonText, WritersReuseAThreadBufferAndNeverShareIt) {
  // Two writers alive at once on one thread: the second must not write into the first's buffer.
  JsonWriter outer(64);
  outer.Raw("[");
  outer.Str("outer");
  {
    JsonWriter inner(64);
    inner.Str("inner");
    EXPECT_EQ(std::move(inner).Take(), "\"inner\"");
  }
  outer.Raw("]");
  EXPECT_EQ(std::move(outer).Take(), "[\"outer\"]");
  // A text larger than the scratch limit, then small ones: each gets exactly its own bytes,
  // nothing left over from the longer text before it.
  const std::string big(JsonWriter::kMaxScratch, 'b');
  EXPECT_EQ(ViaWriter(big), '"' + big + '"');
  EXPECT_EQ(ViaWriter(std::string(1000, 'm')), '"' + std::string(1000, 'm') + '"');
  EXPECT_EQ(ViaWriter("s"), "\"s\"");
  // Writers on other threads at the same time.
  std::vector<std::thread> threads;
  std::vector<std::string> got(4);
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&got, t] {
      for (int n = 0; n < 2000; ++n) {
        const std::string s(t * 50 + static_cast<size_t>(n % 7), static_cast<char>('a' + t));
        if (ViaWriter(s) != '"' + s + '"') return;
      }
      got[t] = "ok";
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(got, std::vector<std::string>(4, "ok"));
}

TEST(MicrosDecimal, SixDigitsOrTrimmed) {
  using F = MicrosFraction;
  EXPECT_EQ(MicrosDecimal(1'500'000, F::kSixDigits), "1.500000");
  EXPECT_EQ(MicrosDecimal(1'500'000, F::kTrimmed), "1.5");
  EXPECT_EQ(MicrosDecimal(26'979'315, F::kSixDigits), "26.979315");
  EXPECT_EQ(MicrosDecimal(26'979'315, F::kTrimmed), "26.979315");
  EXPECT_EQ(MicrosDecimal(0, F::kSixDigits), "0.000000");
  EXPECT_EQ(MicrosDecimal(0, F::kTrimmed), "0.0");
  EXPECT_EQ(MicrosDecimal(1, F::kSixDigits), "0.000001");
  EXPECT_EQ(MicrosDecimal(1, F::kTrimmed), "0.000001");
  EXPECT_EQ(MicrosDecimal(3'000'000, F::kTrimmed), "3.0");
  EXPECT_EQ(MicrosDecimal(10'000, F::kTrimmed), "0.01");
}

TEST(MicrosDecimal, NegativesAndTheInt64Edges) {
  using F = MicrosFraction;
  EXPECT_EQ(MicrosDecimal(-500'000, F::kSixDigits), "-0.500000");
  EXPECT_EQ(MicrosDecimal(-500'000, F::kTrimmed), "-0.5");
  EXPECT_EQ(MicrosDecimal(-1, F::kTrimmed), "-0.000001");
  EXPECT_EQ(MicrosDecimal(-2'000'000, F::kTrimmed), "-2.0");
  EXPECT_EQ(MicrosDecimal(INT64_MAX, F::kSixDigits), "9223372036854.775807");
  EXPECT_EQ(MicrosDecimal(INT64_MIN, F::kSixDigits), "-9223372036854.775808");
  EXPECT_EQ(MicrosDecimal(INT64_MIN, F::kSixDigits).size(), kMaxMicrosDecimal);
}

// kSixDigits is the exchange's former printf format; kTrimmed is a JSON number of that value.
TEST(MicrosDecimal, SixDigitsIsPrintfsFormatAndTrimmedTheSameNumber) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const int64_t m = static_cast<int64_t>(rng() >> (1 + rng() % 63)) * (i % 2 ? -1 : 1);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%s%lld.%06lld", m < 0 ? "-" : "",
                  static_cast<long long>(std::llabs(m) / 1000000),
                  static_cast<long long>(std::llabs(m) % 1000000));
    EXPECT_EQ(MicrosDecimal(m, MicrosFraction::kSixDigits), buf);
    const std::string trimmed = MicrosDecimal(m, MicrosFraction::kTrimmed);
    EXPECT_EQ(std::string(buf).find(trimmed), 0u) << trimmed;
    EXPECT_EQ(nlohmann::json::parse(trimmed).get<double>(),
              nlohmann::json::parse(buf).get<double>());
  }
}

}  // namespace
}  // namespace rtb
