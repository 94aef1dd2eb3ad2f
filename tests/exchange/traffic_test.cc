// The traffic of a hand-written market (exchange/include/rtb/exchange/traffic.h): strict config,
// seeded days, the shares it promises, and the cluster map it writes.
#include "rtb/exchange/traffic.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace rtb::exchange {
namespace {

namespace fs = std::filesystem;

const std::string kMarket = std::string(RTB_SOURCE_DIR) + "/configs/markets/metro";

class TrafficTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rtb-traffic-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // The market's bidder config with its predictor path made absolute (tests run anywhere).
    std::ifstream in(kMarket + "/bidder.yaml");
    std::ofstream out(dir_ / "bidder.yaml");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("predictor_path:", 0) == 0)
        line = "predictor_path: " + kMarket + "/predictor.json";
      out << line << "\n";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(TrafficTest, TheHandWrittenMarketLoadsWithItsCampaignsAndSegments) {
  auto m = LoadTrafficMarket(kMarket + "/traffic.yaml", (dir_ / "bidder.yaml").string());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_GE(m->advertisers.size(), 30u);
  EXPECT_EQ(m->agents, 3);
  EXPECT_EQ(m->traffic.segments.size(), 4u);
  EXPECT_EQ(m->steps, 24);
  EXPECT_DOUBLE_EQ(m->learned_share, 0.5);
  std::map<int, int> per_agent;
  for (const auto& [id, a] : m->advertisers) {
    ++per_agent[a.agent];
    EXPECT_GT(a.conversion_value.value(), 0) << id;
    for (double p : a.ctr) EXPECT_TRUE(p > 0 && p <= 1) << id;
  }
  EXPECT_GE(per_agent[0], 10);
  EXPECT_GE(per_agent[1], 10);
  EXPECT_GE(per_agent[2], 10);
  // The truth differs from the predictor by segment: shoppers click retail ads 3x casual users.
  const auto& shoes = m->advertisers.at(101);
  EXPECT_NEAR(shoes.ctr[1] / shoes.ctr[0], 1.8 / 0.6, 1e-9);
}

TEST_F(TrafficTest, SameSeedSameDayAndTheSharesHold) {
  auto m = LoadTrafficMarket(kMarket + "/traffic.yaml", (dir_ / "bidder.yaml").string());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const TrafficDay a = GenerateTrafficDay(*m, 3), b = GenerateTrafficDay(*m, 3);
  const TrafficDay c = GenerateTrafficDay(*m, 4);
  ASSERT_EQ(a.size(), 40000u);
  EXPECT_EQ(a.time_ms, b.time_ms);
  EXPECT_EQ(a.user, b.user);
  EXPECT_EQ(a.competitor_cpm, b.competitor_cpm);
  EXPECT_NE(a.user, c.user);
  EXPECT_TRUE(std::is_sorted(a.time_ms.begin(), a.time_ms.end()));
  EXPECT_GE(a.time_ms.front(), 0);
  EXPECT_LT(a.time_ms.back(), 24 * 3'600'000LL);
  // Placements by their shares (news desktop 14%, puzzle app 14%, travel app 6%).
  std::map<int, int> place;
  for (auto p : a.placement) ++place[p];
  EXPECT_NEAR(place[0] / 40000.0, 0.14, 0.01);
  EXPECT_NEAR(place[6] / 40000.0, 0.14, 0.01);
  EXPECT_NEAR(place[5] / 40000.0, 0.06, 0.01);
  // Users by segment shares (45/25/15/15).
  std::map<int, int> seg;
  for (auto s : m->segment_of_user) ++seg[s];
  EXPECT_NEAR(seg[0] / 30000.0, 0.45, 0.01);
  EXPECT_NEAR(seg[1] / 30000.0, 0.25, 0.01);
  // The evening peak: hour 19 (weight 3.2) carries ~8x hour 3 (0.3... here 3.2 / 0.3).
  const auto begins = a.StepBegins();
  ASSERT_EQ(begins.size(), 25u);
  EXPECT_EQ(begins.front(), 0u);
  EXPECT_EQ(begins.back(), a.size());
  const double h19 = static_cast<double>(begins[20] - begins[19]);
  const double h3 = static_cast<double>(begins[4] - begins[3]);
  EXPECT_NEAR(h19 / h3, 3.2 / 0.3, 2.5);
  // Competing eCPMs: log-normal around the median (7.0).
  std::vector<double> cpm = a.competitor_cpm;
  std::nth_element(cpm.begin(), cpm.begin() + cpm.size() / 2, cpm.end());
  EXPECT_NEAR(cpm[cpm.size() / 2], 7.0, 0.2);
}

TEST_F(TrafficTest, TheClusterMapLabelsEveryUserWithItsSegment) {
  auto m = LoadTrafficMarket(kMarket + "/traffic.yaml", (dir_ / "bidder.yaml").string());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto j = nlohmann::json::parse(ClusterMapJson(*m));
  EXPECT_EQ(j["format"], "rtb.cluster_map");
  EXPECT_EQ(j["clusters"], 4);
  ASSERT_EQ(j["users"].size(), 30000u);
  for (int u : {0, 17, 29999}) {
    EXPECT_EQ(j["users"]["u" + std::to_string(u)].get<int>(), m->segment_of_user[u]);
  }
}

TEST_F(TrafficTest, BadFilesGetOneClearError) {
  const std::string bidder = (dir_ / "bidder.yaml").string();
  const std::string base =
      "segments:\n  - {name: a, share: 1, ctr_lift: [1, 1, 1], cvr_lift: [1, 1, 1]}\n"
      "placements:\n  - {share: 1, domain: x.example}\n";
  EXPECT_TRUE(LoadTrafficMarket(Write("ok.yaml", base), bidder).ok());
  auto unknown = LoadTrafficConfig(Write("unknown.yaml", base + "request_per_day: 5\n"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("request_per_day"), std::string::npos);
  auto lifts = LoadTrafficMarket(
      Write("lifts.yaml",
            "segments:\n  - {name: a, share: 1, ctr_lift: [1, 1], cvr_lift: [1, 1]}\n"
            "placements:\n  - {share: 1, domain: x.example}\n"),
      bidder);
  ASSERT_FALSE(lifts.ok());
  EXPECT_NE(lifts.status().message().find("3 agents"), std::string::npos)
      << lifts.status().message();
  auto none = LoadTrafficConfig(Write("none.yaml", "placements:\n  - {share: 1, domain: x}\n"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("segments"), std::string::npos);
  auto hours = LoadTrafficConfig(Write("hours.yaml", base + "hourly: [1, 2]\n"));
  ASSERT_FALSE(hours.ok());
  EXPECT_NE(hours.status().message().find("hourly"), std::string::npos);
  auto country =
      LoadTrafficConfig(Write("country.yaml",
                              "segments:\n  - {name: a, share: 1, ctr_lift: [1], cvr_lift: [1]}\n"
                              "placements:\n  - {share: 1, domain: x, country: US}\n"));
  ASSERT_FALSE(country.ok());
  EXPECT_NE(country.status().message().find("country"), std::string::npos);
}

}  // namespace
}  // namespace rtb::exchange
