#include "rtb/core/action_table.h"

#include <gtest/gtest.h>

namespace rtb {
namespace {

TEST(ActionTable, RoundTrips) {
  ActionTable t(2, 3);
  t.set(0, 0, -0.5);
  t.set(1, 2, 0.25);
  t.version = 42;
  t.algo = "dcmab";
  auto back = ParseActionTable(SerializeActionTable(t), "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->agents(), 2);
  EXPECT_EQ(back->clusters(), 3);
  EXPECT_EQ(back->at(0, 0), -0.5);
  EXPECT_EQ(back->at(1, 2), 0.25);
  EXPECT_EQ(back->version, 42u);
  EXPECT_EQ(back->algo, "dcmab");
}

TEST(ActionTable, RejectsCorruptFiles) {
  const std::string head = R"({"format":"rtb.action_table","schema_version":1,)";
  EXPECT_FALSE(ParseActionTable("not json", "x").ok());
  EXPECT_FALSE(ParseActionTable("{}", "x").ok());
  EXPECT_FALSE(ParseActionTable(head + R"("actions":[[0.1,0.2],[0.3]]})", "x").ok());
  EXPECT_FALSE(ParseActionTable(head + R"("actions":[[1.5]]})", "x").ok());
  EXPECT_FALSE(ParseActionTable(head + R"("actions":[["a"]]})", "x").ok());
  EXPECT_FALSE(ParseActionTable(head + R"("actions":[]})", "x").ok());
  EXPECT_FALSE(ParseActionTable(head + R"("agents":3,"actions":[[0.1]]})", "x").ok());
  EXPECT_FALSE(
      ParseActionTable(R"({"format":"rtb.action_table","schema_version":2,"actions":[[0]]})", "x")
          .ok());
  auto ok = ParseActionTable(head + R"("actions":[[0.1]]})", "x");
  EXPECT_TRUE(ok.ok());
  auto st = ParseActionTable("not json", "file.json");
  EXPECT_NE(st.status().message().find("file.json"), std::string::npos);
}

}  // namespace
}  // namespace rtb
