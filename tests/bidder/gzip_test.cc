// gzip bodies: what inflates, what is refused, and what a decompression bomb costs.
#include "rtb/bidder/gzip.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace rtb::bidder {
namespace {

constexpr size_t kLimit = 1 << 20;  // the bidder's default max_body_bytes

// gzip of `n` zero bytes, fed to zlib 64 KiB at a time: the bomb is made without holding what
// it claims (so that the process's peak memory before the inflate stays small).
std::string ZeroBomb(size_t n) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  const std::string zeros(64 * 1024, '\0');
  std::string out;
  char buf[64 * 1024];
  for (size_t left = n; left > 0 || z.avail_in > 0;) {
    if (z.avail_in == 0) {
      const size_t take = std::min(left, zeros.size());
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
      z.avail_in = static_cast<uInt>(take);
      left -= take;
    }
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    deflate(&z, left == 0 ? Z_FINISH : Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  for (int rc = Z_OK; rc != Z_STREAM_END;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = deflate(&z, Z_FINISH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  deflateEnd(&z);
  return out;
}

TEST(Gzip, ABodyInflatesBackToItselfUpToExactlyTheLimit) {
  std::string body;
  for (int i = 0; body.size() < kLimit; ++i) body += "{\"id\":\"" + std::to_string(i) + "\"},";
  body.resize(kLimit);
  std::string out;
  ASSERT_TRUE(GzipInflate(GzipDeflate(body), kLimit, &out).ok());
  EXPECT_EQ(out, body);
  const Status over = GzipInflate(GzipDeflate(body + "x"), kLimit, &out);
  EXPECT_FALSE(over.ok());
  EXPECT_NE(over.message().find("more than 1048576 bytes"), std::string::npos) << over.message();
}

TEST(Gzip, CorruptTruncatedAndPlainBodiesAreRefusedWithTheReason) {
  const std::string gz = GzipDeflate("{\"id\":\"a\",\"imp\":[{\"id\":\"1\"}]}");
  std::string out;
  const Status truncated = GzipInflate(std::string_view(gz).substr(0, gz.size() / 2), kLimit, &out);
  EXPECT_FALSE(truncated.ok());
  EXPECT_NE(truncated.message().find("truncated"), std::string::npos) << truncated.message();
  const Status plain = GzipInflate("{\"id\":\"a\"}", kLimit, &out);
  EXPECT_FALSE(plain.ok());
  EXPECT_NE(plain.message().find("cannot be inflated"), std::string::npos) << plain.message();
  std::string flipped = gz;
  flipped[gz.size() - 6] ^= 0x5a;  // the CRC no longer matches
  EXPECT_FALSE(GzipInflate(flipped, kLimit, &out).ok());
  const Status trailing = GzipInflate(gz + "junk", kLimit, &out);
  EXPECT_FALSE(trailing.ok());
  EXPECT_NE(trailing.message().find("trailing data"), std::string::npos) << trailing.message();
}

// Several gzip members one after another are one body (RFC 1952), the limit over all of them.
TEST(Gzip, ConcatenatedMembersInflateToTheirConcatenationUnderOneLimit) {
  std::string out;
  ASSERT_TRUE(GzipInflate(GzipDeflate("{\"id\":") + GzipDeflate("\"a\"}"), kLimit, &out).ok());
  EXPECT_EQ(out, "{\"id\":\"a\"}");
  const std::string half(kLimit / 2 + 1, 'x');
  EXPECT_FALSE(GzipInflate(GzipDeflate(half) + GzipDeflate(half), kLimit, &out).ok());
}

// 20 MB of zeros gzip to about 20 KB: inflated to the limit and no further, within 10 ms, and
// the process's peak memory grows by about the limit, not by the 20 MB the body claims.
TEST(Gzip, ATwentyMegabyteBombIsRefusedInUnderTenMillisecondsWithBoundedMemory) {
  const std::string bomb = ZeroBomb(20u << 20);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  std::vector<double> ms;
  std::string out;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const Status st = GzipInflate(bomb, kLimit, &out);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    EXPECT_FALSE(st.ok());
  }
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  std::sort(ms.begin(), ms.end());
  const long grown_kb = after.ru_maxrss - before.ru_maxrss;
  std::printf(
      "gzip bomb: %zu bytes claiming 20 MiB: refused in %.2f ms (median of 5), peak RSS "
      "+%ld KiB, buffer %zu bytes\n",
      bomb.size(), ms[2], grown_kb, out.capacity());
  EXPECT_LT(ms[2], 10.0);
  EXPECT_LE(out.capacity(), 2 * kLimit);
  EXPECT_LT(grown_kb, 4 * 1024);
}

TEST(Gzip, AcceptEncodingAdmitsGzipUnlessItsQualityIsZero) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.8, br"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("br, gzip; q=0.000"));
  EXPECT_FALSE(AcceptsGzip("x-gzipped"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0, *"));  // named, refused: the * does not bring it back
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
}

}  // namespace
}  // namespace rtb::bidder
