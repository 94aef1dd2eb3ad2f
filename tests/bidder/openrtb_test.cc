#include "rtb/bidder/openrtb.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace rtb::bidder {
namespace {

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::filesystem::path kFixtures =
    std::filesystem::path(RTB_SOURCE_DIR) / "tests/fixtures/openrtb";

TEST(Decoder, EveryFixtureRequestDecodesWithIdAndImps) {
  RequestDecoder dec;
  int n = 0;
  for (const char* v : {"2.5", "2.6"}) {
    for (const auto& f : std::filesystem::directory_iterator(kFixtures / v)) {
      const std::string name = f.path().filename().string();
      if (name.rfind("bid-request", 0) != 0) continue;
      auto r = dec.Decode(Read(f.path()));
      ASSERT_TRUE(r.ok()) << name << ": " << r.status().message();
      EXPECT_FALSE(r->id.empty()) << name;
      EXPECT_FALSE(r->imps.empty()) << name;
      ++n;
    }
  }
  EXPECT_EQ(n, 11);
}

TEST(Decoder, EveryFixtureResponseRoundTrips) {
  for (const char* v : {"2.5", "2.6"}) {
    for (const auto& f : std::filesystem::directory_iterator(kFixtures / v)) {
      const std::string name = f.path().filename().string();
      if (name.rfind("bid-response", 0) != 0) continue;
      auto r = DecodeBidResponse(Read(f.path()));
      ASSERT_TRUE(r.ok()) << name << ": " << r.status().message();
      auto back = DecodeBidResponse(EncodeBidResponse(*r));
      ASSERT_TRUE(back.ok()) << name;
      EXPECT_EQ(EncodeBidResponse(*back), EncodeBidResponse(*r)) << name;
      ASSERT_FALSE(r->seatbid.empty()) << name;
      EXPECT_EQ(back->seatbid[0].bids[0].price, r->seatbid[0].bids[0].price) << name;
      EXPECT_EQ(back->seatbid[0].bids[0].adm, r->seatbid[0].bids[0].adm) << name;
      EXPECT_EQ(back->seatbid[0].bids[0].nurl, r->seatbid[0].bids[0].nurl) << name;
    }
  }
}

TEST(Decoder, ReadsGdprConsentSchainFromBothVersions) {
  RequestDecoder dec;
  auto v25 = dec.Decode(R"({"id":"a","imp":[{"id":"1","banner":{"w":300,"h":250}}],
      "regs":{"ext":{"gdpr":1}},"user":{"ext":{"consent":"CO25"}},"source":{"ext":{"schain":{}}}})");
  ASSERT_TRUE(v25.ok());
  EXPECT_EQ(v25->gdpr, 1);
  EXPECT_EQ(v25->consent, "CO25");
  EXPECT_TRUE(v25->has_schain);
  auto v26 = dec.Decode(R"({"id":"a","imp":[{"id":"1","banner":{"format":[{"w":320,"h":50}]}}],
      "regs":{"gdpr":0},"user":{"consent":"CO26"},"source":{"schain":{"ver":"1.0"}}})");
  ASSERT_TRUE(v26.ok());
  EXPECT_EQ(v26->gdpr, 0);
  EXPECT_EQ(v26->consent, "CO26");
  EXPECT_TRUE(v26->has_schain);
  EXPECT_EQ(v26->imps[0].formats[0].w, 320);
}

TEST(Decoder, ToleratesUnknownFieldsAndEnumValues) {
  RequestDecoder dec;
  auto r = dec.Decode(R"({"id":"x","future_field":{"a":[1,2]},"at":99,
      "imp":[{"id":"1","banner":{"w":1,"h":1,"newthing":true},"rwdd":1}],
      "device":{"devicetype":42,"geo":{"country":"USA"}},"tmax":120,"test":1})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->device_type, 42);
  EXPECT_EQ(r->tmax_ms, 120);
  EXPECT_TRUE(r->test);
}

// A valid JSON number is never "not valid JSON": a huge tmax is clamped to a day; a number no
// int64 or double can hold is refused as out of range, saying so.
TEST(Decoder, HugeNumbersAreClampedOrRefusedAsOutOfRangeNotAsInvalidJson) {
  RequestDecoder dec;
  const std::string head = R"({"id":"x","imp":[{"id":"1","banner":{"w":1,"h":1}}],"tmax":)";
  for (const std::string tmax : {"1e20", "1E+20", "9.5e15", "86400001"}) {
    auto r = dec.Decode(head + tmax + "}");
    ASSERT_TRUE(r.ok()) << tmax << ": " << r.status().message();
    EXPECT_EQ(r->tmax_ms, 86'400'000) << tmax;
  }
  for (const std::string tmax : {"100000000000000000000", "1e400"}) {
    auto r = dec.Decode(head + tmax + "}");
    ASSERT_FALSE(r.ok()) << tmax;
    EXPECT_EQ(r.status().message().find("not valid JSON"), std::string::npos)
        << tmax << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().message();
  }
}

TEST(Decoder, RefusesMalformedAndHostileBodies) {
  RequestDecoder dec;
  for (const std::string& body :
       {std::string(R"({"id":"x","imp":[{"id":"1","banner":{"w":300)"), std::string("hello"),
        std::string(""), std::string(R"({"id":5,"imp":"nope"})"), std::string(R"({"id":"x"})"),
        std::string(R"({"id":"x","imp":[]})"), std::string(R"({"id":"x","imp":[{"id":""}]})"),
        std::string(R"([1,2,3])"), std::string(R"({"id":"x","imp":[{"id":"1","bidfloor":-1}]})"),
        std::string(100000, '[') + std::string(100000, ']')}) {
    EXPECT_FALSE(dec.Decode(body).ok()) << body.substr(0, 60);
  }
  DecodeLimits small;
  small.max_bytes = 100;
  RequestDecoder tiny(small);
  EXPECT_FALSE(tiny.Decode(std::string(200, ' ') + "{}").ok());
}

TEST(Encoder, EscapesAndFormatsPrices) {
  BidResponse r;
  r.id = "q\"1";
  r.seatbid.push_back({"s", {}});
  Bid b;
  b.id = "b";
  b.impid = "1";
  b.price = Micros(1234567);
  b.adm = "<a href=\"x\">\n</a>";
  r.seatbid[0].bids.push_back(b);
  const std::string j = EncodeBidResponse(r);
  EXPECT_NE(j.find("\"price\":1.234567"), std::string::npos) << j;
  auto back = DecodeBidResponse(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->id, "q\"1");
  EXPECT_EQ(back->seatbid[0].bids[0].adm, b.adm);
  EXPECT_EQ(back->seatbid[0].bids[0].price, b.price);
  // Trailing zeros trimmed, one digit kept after the point; any int64 amount fits.
  for (auto [micros, text] :
       std::vector<std::pair<int64_t, std::string>>{{1'500'000, "1.5"},
                                                    {2'000'000, "2.0"},
                                                    {0, "0.0"},
                                                    {7, "0.000007"},
                                                    {-2'500'000, "-2.5"},
                                                    {INT64_MAX, "9223372036854.775807"}}) {
    r.seatbid[0].bids[0].price = Micros(micros);
    EXPECT_NE(EncodeBidResponse(r).find("\"price\":" + text + ","), std::string::npos) << text;
  }
  // Many bids with long, escape-heavy fields: the encoder's size bound holds.
  r.seatbid.assign(3, {"seat\"x", {}});
  for (auto& sb : r.seatbid) {
    for (int k = 0; k < 4; ++k) {
      Bid big = b;
      big.adm = std::string(3000, '\x01');
      big.nurl = std::string(500, '"');
      big.adomain = {"a\\b", std::string(100, '\n')};
      big.w = 300;
      big.h = 250;
      sb.bids.push_back(big);
    }
  }
  auto many = DecodeBidResponse(EncodeBidResponse(r));
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->seatbid[2].bids[3].adm, std::string(3000, '\x01'));
  EXPECT_EQ(many->seatbid[2].bids[3].adomain[1], std::string(100, '\n'));
}

TEST(OpenRtb, SimHintsAreReadOnlyWhenEnabledAndValidated) {
  const std::string body = R"({"id":"s","imp":[{"id":"1","banner":{"w":300,"h":250}}],)"
                           R"("ext":{"sim":{"t":7200000,"cand":[[4,0.02,0.03],[7,1,0]]}}})";
  RequestDecoder off;
  auto r = off.Decode(body);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->sim.has_value());  // a real exchange cannot steer the bidder with ext.sim
  DecodeLimits l;
  l.sim_hints = true;
  RequestDecoder on(l);
  r = on.Decode(body);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->sim.has_value());
  EXPECT_EQ(r->sim->t_ms, 7'200'000);
  ASSERT_EQ(r->sim->candidates.size(), 2u);
  EXPECT_EQ(r->sim->candidates[1].advertiser, 7u);
  EXPECT_DOUBLE_EQ(r->sim->candidates[1].pctr, 1.0);
  for (const char* bad :
       {R"("ext":{"sim":{"cand":[]}})", R"("ext":{"sim":{"t":-1,"cand":[]}})",
        R"("ext":{"sim":{"t":1,"cand":[[1,2.0,0.1]]}})",
        R"("ext":{"sim":{"t":1,"cand":[[1,0.1]]}})", R"("ext":{"sim":{"t":1,"cand":{}}})"}) {
    const std::string b =
        std::string(R"({"id":"s","imp":[{"id":"1","banner":{"w":300,"h":250}}],)") + bad + "}";
    EXPECT_FALSE(on.Decode(b).ok()) << bad;
  }
  // The clock alone (a hand-written market's exchange): no candidate list, targeting decides.
  r = on.Decode(R"({"id":"s","imp":[{"id":"1","banner":{"w":300,"h":250}}],)"
                R"("ext":{"sim":{"t":5}}})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->sim.has_value());
  EXPECT_EQ(r->sim->t_ms, 5);
  EXPECT_FALSE(r->sim->has_candidates);
  EXPECT_TRUE(on.Decode(body)->sim->has_candidates);
  // An empty list is a list: no candidates, no bid.
  EXPECT_TRUE(on.Decode(R"({"id":"s","imp":[{"id":"1","banner":{"w":300,"h":250}}],)"
                        R"("ext":{"sim":{"t":5,"cand":[]}}})")
                  ->sim->has_candidates);
}

TEST(OpenRtb, EncodedRequestsDecodeToTheirFields) {
  BidRequest in;
  in.id = "r\"1";  // escaped
  in.imps.resize(2);
  Imp& a = in.imps[0];
  a.id = "1";
  a.banner = true;
  a.formats = {{300, 250}, {320, 50}, {728, 90}};
  a.bidfloor = Micros(1'250'000);
  a.bidfloorcur = "EUR";
  Imp& b = in.imps[1];
  b.id = "2";
  b.video = b.native = b.audio = true;
  in.has_site = true;
  in.site_id = "s1";
  in.site_domain = "news.example";
  in.cat = {"IAB1", "IAB2-3"};
  in.device_type = 4;
  in.country = "DEU";
  in.user_id = "u\\x";
  in.buyeruid = "buyer";
  in.tmax_ms = 120;
  in.at = 1;
  in.test = true;
  in.cur = {"USD", "EUR"};
  in.sim = SimHints{86'400'000, true, {{4, 0.0123456789, 0.5}, {7, 1, 0}}};
  DecodeLimits l;
  l.sim_hints = true;
  RequestDecoder dec(l);
  const auto r = dec.Decode(EncodeBidRequest(in));
  ASSERT_TRUE(r.ok()) << r.status().message() << "\n" << EncodeBidRequest(in);
  EXPECT_EQ(r->id, in.id);
  ASSERT_EQ(r->imps.size(), 2u);
  EXPECT_EQ(r->imps[0].id, "1");
  EXPECT_TRUE(r->imps[0].banner);
  EXPECT_FALSE(r->imps[0].video);
  ASSERT_EQ(r->imps[0].formats.size(), 3u);
  for (size_t f = 0; f < 3; ++f) {
    EXPECT_EQ(r->imps[0].formats[f].w, a.formats[f].w);
    EXPECT_EQ(r->imps[0].formats[f].h, a.formats[f].h);
  }
  EXPECT_EQ(r->imps[0].bidfloor, a.bidfloor);
  EXPECT_EQ(r->imps[0].bidfloorcur, "EUR");
  EXPECT_EQ(r->imps[1].id, "2");
  EXPECT_FALSE(r->imps[1].banner);
  EXPECT_TRUE(r->imps[1].video && r->imps[1].native && r->imps[1].audio);
  EXPECT_EQ(r->imps[1].bidfloor, Micros(0));
  EXPECT_TRUE(r->has_site);
  EXPECT_FALSE(r->has_app);
  EXPECT_EQ(r->site_id, "s1");
  EXPECT_EQ(r->site_domain, "news.example");
  EXPECT_EQ(r->cat, in.cat);
  EXPECT_EQ(r->device_type, 4);
  EXPECT_EQ(r->country, "DEU");
  EXPECT_EQ(r->user_id, in.user_id);
  EXPECT_EQ(r->buyeruid, "buyer");
  EXPECT_EQ(r->at, 1);  // written only when set: unset reads back 0 (the bidder's default_at)
  in.at = 0;
  EXPECT_EQ(EncodeBidRequest(in).find("\"at\""), std::string::npos);
  EXPECT_EQ(r->tmax_ms, 120);
  EXPECT_TRUE(r->test);
  EXPECT_EQ(r->cur, in.cur);
  ASSERT_TRUE(r->sim.has_value());
  EXPECT_EQ(r->sim->t_ms, 86'400'000);
  EXPECT_TRUE(r->sim->has_candidates);
  ASSERT_EQ(r->sim->candidates.size(), 2u);
  EXPECT_EQ(r->sim->candidates[0].advertiser, 4u);
  EXPECT_DOUBLE_EQ(r->sim->candidates[0].pctr, 0.0123456789);  // 9 significant digits
  EXPECT_EQ(r->sim->candidates[0].pcvr, 0.5);
  EXPECT_EQ(r->sim->candidates[1].advertiser, 7u);
  EXPECT_EQ(r->sim->candidates[1].pctr, 1.0);

  // An app, and what is left out when unset: no device, user, tmax, test, cur or ext.sim.
  BidRequest app;
  app.id = "x";
  app.imps.emplace_back().id = "1";
  app.has_app = true;
  app.app_id = "com.example.game";
  app.app_bundle = "com.example.game";
  const std::string body = EncodeBidRequest(app);
  EXPECT_EQ(body, R"({"id":"x","imp":[{"id":"1"}],)"
                  R"("app":{"id":"com.example.game","bundle":"com.example.game"}})");
  const auto ra = dec.Decode(body);
  ASSERT_TRUE(ra.ok()) << ra.status().message();
  EXPECT_TRUE(ra->has_app);
  EXPECT_FALSE(ra->has_site);
  EXPECT_EQ(ra->app_bundle, "com.example.game");
  EXPECT_FALSE(ra->sim.has_value());
  EXPECT_TRUE(ra->cur.empty());
}

// A request with one 300x250 banner impression, id "1", and a site.
BidRequest OneBanner(std::string id, std::string site_id) {
  BidRequest r;
  r.id = std::move(id);
  Imp& imp = r.imps.emplace_back();
  imp.id = "1";
  imp.banner = true;
  imp.formats = {{300, 250}};
  r.has_site = true;
  r.site_id = std::move(site_id);
  return r;
}

// The bytes `rtb exchange` sent when it wrote its requests by hand: the encoder writes them
// unchanged (a simulated day's request with a floor and candidates, the traffic model's,
// and the day-opening test request).
TEST(OpenRtb, EncodedRequestsAreTheExchangesFormerBytes) {
  BidRequest r = OneBanner("d3-r17", "sim");
  r.imps[0].bidfloor = Micros(1'500'000);
  r.site_domain = "sim.example";
  r.device_type = 2;
  r.user_id = "c42";
  r.tmax_ms = 100;
  r.cur = {"USD"};
  r.sim = SimHints{259'200'123, true, {{12, 0.00123456789012, 0.05}, {3, 0.25, 1e-7}}};
  EXPECT_EQ(EncodeBidRequest(r),
            R"({"id":"d3-r17","imp":[{"id":"1","banner":{"w":300,"h":250},"bidfloor":1.500000,)"
            R"("bidfloorcur":"USD"}],"site":{"id":"sim","domain":"sim.example"},)"
            R"("device":{"devicetype":2},"user":{"id":"c42"},"tmax":100,"cur":["USD"],)"
            R"("ext":{"sim":{"t":259200123,"cand":[[12,0.00123456789,0.05],[3,0.25,1e-07]]}}})");

  r.site_id = r.site_domain = "news.example";
  r.cat = {"IAB1"};
  r.country = "USA";
  r.sim = SimHints{5, false, {}};
  EXPECT_EQ(EncodeBidRequest(r),
            R"({"id":"d3-r17","imp":[{"id":"1","banner":{"w":300,"h":250},"bidfloor":1.500000,)"
            R"("bidfloorcur":"USD"}],"site":{"id":"news.example","domain":"news.example",)"
            R"("cat":["IAB1"]},"device":{"devicetype":2,"geo":{"country":"USA"}},)"
            R"("user":{"id":"c42"},"tmax":100,"cur":["USD"],"ext":{"sim":{"t":5}}})");

  BidRequest open = OneBanner("open-d2", "sim");
  open.test = true;
  open.cur = {"USD"};
  open.sim = SimHints{172'800'000, true, {}};
  EXPECT_EQ(
      EncodeBidRequest(open),
      R"({"id":"open-d2","imp":[{"id":"1","banner":{"w":300,"h":250}}],)"
      R"("site":{"id":"sim"},"test":1,"cur":["USD"],"ext":{"sim":{"t":172800000,"cand":[]}}})");
}

}  // namespace
}  // namespace rtb::bidder
