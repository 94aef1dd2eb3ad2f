#include "rtb/core/config.h"

#include <gtest/gtest.h>

namespace rtb {
namespace {

struct Cfg {
  int n = 3;  // a documented field
  double x = 0.5;
  std::string mode = "a";
  std::vector<double> v = {1, 2};
  int inner = 0;
};

Status Read(const std::string& text, Cfg* c) {
  auto f = ConfigFile::Parse(text, "test.yaml");
  if (!f.ok()) return f.status();
  ConfigMap root = (*f)->Root();
  root.Get("n", &c->n);
  root.Check(c->n > 0, "n", "must be positive");
  root.Get("x", &c->x);
  root.Get("mode", &c->mode);
  root.Get("v", &c->v);
  ConfigMap sec = root.Section("section");
  sec.Get("inner", &c->inner);
  return (*f)->Finish();
}

TEST(Config, DefaultsStayWhenKeysAreAbsent) {
  Cfg c;
  ASSERT_TRUE(Read("n: 7\n", &c).ok());
  EXPECT_EQ(c.n, 7);
  EXPECT_EQ(c.x, 0.5);
  EXPECT_EQ(c.v, (std::vector<double>{1, 2}));
}

TEST(Config, ReadsNestedSectionsAndLists) {
  Cfg c;
  ASSERT_TRUE(Read("v: [3, 4.5]\nsection:\n  inner: 9\n", &c).ok());
  EXPECT_EQ(c.v, (std::vector<double>{3, 4.5}));
  EXPECT_EQ(c.inner, 9);
}

TEST(Config, UnknownKeyNamesFileLineAndKey) {
  Cfg c;
  Status st = Read("n: 1\nsection:\n  inner: 2\n  typo: 3\n", &c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("test.yaml:4"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("section.typo"), std::string::npos) << st.message();
}

TEST(Config, WrongTypeNamesTheKey) {
  Cfg c;
  Status st = Read("n: seven\n", &c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("test.yaml:1"), std::string::npos);
  EXPECT_NE(st.message().find("'n'"), std::string::npos);
  EXPECT_NE(st.message().find("integer"), std::string::npos);
}

TEST(Config, RangeCheckNamesTheKey) {
  Cfg c;
  Status st = Read("n: -2\n", &c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'n' must be positive"), std::string::npos) << st.message();
}

TEST(Config, SyntaxErrorNamesTheLine) {
  auto f = ConfigFile::Parse("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("bad.yaml:"), std::string::npos);
}

TEST(Config, SectionMustBeAMapping) {
  Cfg c;
  Status st = Read("section: 5\n", &c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("section"), std::string::npos);
}

// Free-form names (a client library's properties): in file order, every scalar as its text; a
// value that is not a single value is an error naming the key and the line.
TEST(Config, AMappingOfNamesToValuesKeepsTheFileOrder) {
  auto f = ConfigFile::Parse("props:\n  b.x: 1\n  a.y: true\n  c: \"s p\"\n", "t.yaml");
  ASSERT_TRUE(f.ok());
  std::vector<std::pair<std::string, std::string>> props = {{"old", "1"}};
  (*f)->Root().Get("props", &props);
  ASSERT_TRUE((*f)->Finish().ok());
  EXPECT_EQ(props, (std::vector<std::pair<std::string, std::string>>{
                       {"b.x", "1"}, {"a.y", "true"}, {"c", "s p"}}));
  for (const char* bad : {"props: [1, 2]\n", "props:\n  a: [1]\n", "props: 3\n"}) {
    auto g = ConfigFile::Parse(bad, "t.yaml");
    ASSERT_TRUE(g.ok());
    std::vector<std::pair<std::string, std::string>> p;
    (*g)->Root().Get("props", &p);
    const Status st = (*g)->Finish();
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("t.yaml:"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("'props' expects a mapping of names to single values"),
              std::string::npos)
        << st.message();
  }
}

TEST(Config, MissingFileIsNotFound) {
  auto f = ConfigFile::Load("/nonexistent/x.yaml");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace rtb
