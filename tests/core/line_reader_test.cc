#include "rtb/core/line_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace rtb {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> AllLines(LineReader& in) {
  std::vector<std::string> out;
  std::string_view line;
  while (in.Next(&line)) out.emplace_back(line);
  return out;
}

fs::path TempFile(const std::string& name, const std::string& content) {
  const fs::path p = fs::temp_directory_path() / ("rtb-line-reader-" + name);
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

TEST(LineReader, ReadsEveryLineFromATextAStreamAndAFileAlike) {
  const std::string text = "a b\n\nlast without newline";
  const std::vector<std::string> want = {"a b", "", "last without newline"};
  LineReader mem(std::string_view(text), "mem");
  EXPECT_EQ(AllLines(mem), want);
  EXPECT_EQ(mem.line_no(), 3);
  std::istringstream ss(text);
  LineReader stream(ss, "stream");
  EXPECT_EQ(AllLines(stream), want);
  const fs::path p = TempFile("lines", text);
  LineReader file(p.string(), "log");
  EXPECT_EQ(AllLines(file), want);
  EXPECT_TRUE(file.status().ok()) << file.status().message();
  EXPECT_EQ(file.size_hint(), text.size());
  fs::remove(p);
}

TEST(LineReader, ALineAtTheLimitIsReadAndOneByteMoreIsAnErrorNamingFileLineAndLimit) {
  // Lines longer than the reader's chunk, read from a file: the buffer grows to the limit only.
  const size_t limit = 200'000;
  const std::string at_limit(limit, 'x');
  const fs::path p = TempFile("limit", "short\n" + at_limit + "\n" + at_limit + "y\nnext\n");
  LineReader in(p.string(), "log", limit);
  std::string_view line;
  ASSERT_TRUE(in.Next(&line));
  ASSERT_TRUE(in.Next(&line));
  EXPECT_EQ(line.size(), limit);
  EXPECT_FALSE(in.Next(&line));
  EXPECT_EQ(in.status().message(), p.string() +
                                       ":3: a line longer than 200000 bytes, the most a line may "
                                       "hold (is this the right file?)");
  EXPECT_FALSE(in.Next(&line));  // stays stopped
  fs::remove(p);
  // The same limit in memory.
  const std::string text = "ok\n" + at_limit + "y";
  LineReader mem(std::string_view(text), "mem", limit);
  EXPECT_EQ(AllLines(mem).size(), 1u);
  EXPECT_EQ(mem.status().message().rfind("mem:2: a line longer than", 0), 0u);
}

TEST(LineReader, AnEndlessInputWithoutNewlineStopsAtTheLimit) {
  LineReader in(std::string("/dev/zero"), "log", 1 << 16);
  std::string_view line;
  EXPECT_FALSE(in.Next(&line));
  EXPECT_EQ(in.status().code(), Status::Code::kCorruption);
  EXPECT_NE(in.status().message().find("/dev/zero:1: a line longer than 65536 bytes"),
            std::string::npos)
      << in.status().message();
}

TEST(LineReader, ADirectoryOrAMissingFileIsAnErrorNamingIt) {
  const std::string dir = fs::temp_directory_path().string();
  LineReader d(dir, "log");
  std::string_view line;
  EXPECT_FALSE(d.Next(&line));
  EXPECT_EQ(d.status().message(), dir + ": is a directory; the log must be a file");
  LineReader missing(std::string("/nonexistent/log.txt"), "log");
  EXPECT_FALSE(missing.Next(&line));
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/log.txt: cannot open log"),
            std::string::npos);
}

TEST(ReadBoundedFile, ReadsUpToItsLimitAndRefusesMore) {
  const fs::path p = TempFile("bounded", std::string(1000, 'j'));
  auto ok = ReadBoundedFile(p.string(), "campaign info", 1000);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 1000u);
  auto big = ReadBoundedFile(p.string(), "campaign info", 999);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(),
            p.string() +
                ": campaign info larger than 999 bytes, the most read at once (is this "
                "the right file?)");
  EXPECT_FALSE(ReadBoundedFile("/dev/zero", "pacing table", 1 << 20).ok());
  EXPECT_FALSE(ReadBoundedFile(fs::temp_directory_path().string(), "pacing table").ok());
  fs::remove(p);
}

}  // namespace
}  // namespace rtb
