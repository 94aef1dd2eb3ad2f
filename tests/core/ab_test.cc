#include "rtb/core/ab.h"

#include <gtest/gtest.h>

#include <string>

namespace rtb {
namespace {

// "<prefix><n>" (appended, not operator+: GCC 12 warns falsely on "literal" + to_string).
std::string Id(const char* prefix, int n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

TEST(Ab, TheSameUnitAlwaysLandsInTheSameArm) {
  for (int u = 0; u < 1000; ++u) {
    const std::string id = Id("user-", u);
    const Arm first = ArmOf(id, "salt", 0.5);
    for (int again = 0; again < 3; ++again) EXPECT_EQ(ArmOf(id, "salt", 0.5), first);
  }
  // A pure function of its inputs: these points are fixed for every process and version.
  EXPECT_DOUBLE_EQ(ArmPoint("user-1", "salt"), ArmPoint(std::string("user-1"), "salt"));
  EXPECT_NE(ArmPoint("user-1", "salt"), ArmPoint("user-2", "salt"));
}

TEST(Ab, RealisedSharesAreWithinOnePercentOverOneHundredThousandUsers) {
  for (const double share : {0.1, 0.5, 0.9}) {
    int learned = 0;
    const int users = 100'000;
    for (int u = 0; u < users; ++u) {
      learned += ArmOf(Id("u", u), "rtb-ab", share) == Arm::kLearned;
    }
    EXPECT_NEAR(static_cast<double>(learned) / users, share, 0.01) << share;
  }
  EXPECT_EQ(ArmOf("anyone", "s", 1.0), Arm::kLearned);
  EXPECT_EQ(ArmOf("anyone", "s", 0.0), Arm::kManual);
}

TEST(Ab, ANewSaltDealsTheUsersAgain) {
  int moved = 0;
  const int users = 20'000;
  for (int u = 0; u < users; ++u) {
    const std::string id = Id("u", u);
    moved += ArmOf(id, "salt-1", 0.5) != ArmOf(id, "salt-2", 0.5);
  }
  // Independent draws: about half the users change arm.
  EXPECT_NEAR(static_cast<double>(moved) / users, 0.5, 0.02);
}

TEST(Ab, TheUnitIsTheUserElseTheDeviceElseTheRequest) {
  EXPECT_EQ(ArmUnit("u", "d", "r"), "u");
  EXPECT_EQ(ArmUnit("", "d", "r"), "d");
  EXPECT_EQ(ArmUnit("", "", "r"), "r");
}

TEST(Ab, TheArmsBudgetsAddUpToTheBudgetExactly) {
  for (const int64_t b : {0ll, 1ll, 7ll, 1'000'001ll, 500'000'000'000ll}) {
    for (const double share : {0.0, 0.25, 0.5, 1.0 / 3, 1.0}) {
      const Micros l = ArmBudget(Micros(b), Arm::kLearned, share);
      const Micros m = ArmBudget(Micros(b), Arm::kManual, share);
      EXPECT_EQ(l.value() + m.value(), b);
      EXPECT_GE(l.value(), 0);
      EXPECT_GE(m.value(), 0);
      EXPECT_LE(std::abs(static_cast<double>(l.value()) - b * share), 0.5 + 1e-6);
    }
  }
  EXPECT_EQ(ArmBudget(Micros(100), Arm::kManual, 1.0).value(), 0);
  EXPECT_EQ(ArmBudget(Micros(100), Arm::kLearned, 0.0).value(), 0);
}

TEST(Ab, ArmNamesRoundTripAndNothingElseParses) {
  for (const Arm a : {Arm::kLearned, Arm::kManual}) EXPECT_EQ(ParseArm(ArmName(a)), a);
  EXPECT_FALSE(ParseArm("").has_value());
  EXPECT_FALSE(ParseArm("Learned").has_value());
  EXPECT_FALSE(ParseArm("control").has_value());
}

}  // namespace
}  // namespace rtb
