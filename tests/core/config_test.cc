#include "rtb/core/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace rtb {
namespace {

struct Cfg {
  int n = 3;  // a documented field
  double x = 0.5;
  std::string mode = "a";
  std::vector<double> v = {1, 2};
  int inner = 0;
};

Status Read(const std::string& text, Cfg* c, const std::string& env_prefix = "") {
  auto f = ConfigFile::Parse(text, "test.yaml");
  if (!f.ok()) return f.status();
  if (!env_prefix.empty()) (*f)->UseEnvironment(env_prefix);
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

// Sets environment variables for one test and removes them after.
class Env {
 public:
  ~Env() {
    for (const auto& n : names_) ::unsetenv(n.c_str());
  }
  void Set(const std::string& n, const std::string& v) {
    names_.push_back(n);
    ::setenv(n.c_str(), v.c_str(), 1);
  }

 private:
  std::vector<std::string> names_;
};

TEST(ConfigEnvironment, EveryKeyMayComeFromItsVariableWhichWinsOverTheFile) {
  Env env;
  env.Set("RTBT_N", "7");
  env.Set("RTBT_V", "[4, 5.5]");
  env.Set("RTBT_SECTION_INNER", "9");  // the section is not even in the file
  env.Set("RTBT_MODE", "a: b # taken whole");
  Cfg c;
  ASSERT_TRUE(Read("n: 2\nx: 1.5\nmode: z\n", &c, "RTBT_").ok());
  EXPECT_EQ(c.n, 7);
  EXPECT_EQ(c.x, 1.5);  // no variable: the file's
  EXPECT_EQ(c.v, (std::vector<double>{4, 5.5}));
  EXPECT_EQ(c.inner, 9);
  EXPECT_EQ(c.mode, "a: b # taken whole");
  Cfg plain;  // without UseEnvironment the file alone counts
  ASSERT_TRUE(Read("n: 2\n", &plain).ok());
  EXPECT_EQ(plain.n, 2);
  EXPECT_EQ(plain.inner, 0);
}

TEST(ConfigEnvironment, AWrongValueNamesTheVariableAndKeyNeverTheValue) {
  Env env;
  env.Set("RTBT_N", "s3cr3t-not-a-number");
  Cfg c;
  const Status st = Read("n: 2\n", &c, "RTBT_");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "RTBT_N (environment): key 'n' expects an integer");
  env.Set("RTBT_N", "-1");  // the range check holds for the environment's values too
  EXPECT_EQ(Read("n: 2\n", &c, "RTBT_").message(),
            "RTBT_N (environment): key 'n' must be positive");
}

TEST(ConfigEnvironment, AStringComesFromAFileNamedByItsFileVariable) {
  const std::string path = ::testing::TempDir() + "/rtb-secret";
  std::ofstream(path) << "p@ss: word\n";
  Env env;
  env.Set("RTBT_MODE_FILE", path);
  Cfg c;
  ASSERT_TRUE(Read("mode: in-the-file\n", &c, "RTBT_").ok());
  EXPECT_EQ(c.mode, "p@ss: word");  // one trailing newline dropped
  env.Set("RTBT_MODE_FILE", path + ".missing");
  const Status st = Read("", &c, "RTBT_");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "RTBT_MODE_FILE: cannot read " + path + ".missing: No such file or directory");
}

TEST(ConfigEnvironment, AMappingTakesOneVariablePerName) {
  const std::string path = ::testing::TempDir() + "/rtb-sasl";
  std::ofstream(path) << "from-a-file\n";
  Env env;
  env.Set("RTBT_PROPS_SASL_USERNAME", "alice");
  env.Set("RTBT_PROPS_SASL_PASSWORD_FILE", path);
  auto f = ConfigFile::Parse("props:\n  security.protocol: SASL_SSL\n  sasl.username: bob\n", "t");
  ASSERT_TRUE(f.ok());
  (*f)->UseEnvironment("RTBT_");
  std::vector<std::pair<std::string, std::string>> props;
  ConfigMap root = (*f)->Root();
  root.Get("props", &props);
  ASSERT_TRUE((*f)->Finish().ok());
  std::map<std::string, std::string> m(props.begin(), props.end());
  EXPECT_EQ(m["security.protocol"], "SASL_SSL");
  EXPECT_EQ(m["sasl.username"], "alice");
  EXPECT_EQ(m["sasl.password"], "from-a-file");
  EXPECT_EQ(props.size(), 3u);
  EXPECT_TRUE(root.FromEnvironment("props.sasl.password"));
  EXPECT_FALSE(root.FromEnvironment("props.security.protocol"));
  EXPECT_EQ((*f)->EnvironmentName("advertisers[2].daily_budget"),
            "RTBT_ADVERTISERS_2_DAILY_BUDGET");
}

TEST(Config, MissingFileIsNotFound) {
  auto f = ConfigFile::Load("/nonexistent/x.yaml");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace rtb
