#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "../../bidder/src/notice_inbox.h"
#include "rtb/bidder/bid_logic.h"
#include "rtb/bidder/bidder.h"
#include "rtb/bidder/budget.h"
#include "rtb/bidder/config.h"
#include "rtb/bidder/event_log.h"
#include "rtb/bidder/notice.h"
#include "rtb/bidder/notice_sign.h"
#include "rtb/bidder/predictor.h"
#include "rtb/bidder/state_store.h"
#include "rtb/core/bid.h"

namespace rtb::bidder {
namespace {

std::vector<Advertiser> Advertisers() {
  std::vector<Advertiser> v(3);
  for (uint32_t k = 0; k < 3; ++k) {
    v[k].id = k + 1;
    v[k].bid = Micros::FromUnits(1.0 + k);
    v[k].daily_budget = Micros::FromUnits(100);
    v[k].agent = static_cast<int>(k);
    v[k].creatives = {
        {"c" + std::to_string(k), {"d" + std::to_string(k) + ".example"}, 300, 250, ""}};
  }
  return v;
}

BidRequest Banner(double floor = 0) {
  BidRequest r;
  r.id = "auc";
  Imp imp;
  imp.id = "1";
  imp.banner = true;
  imp.formats = {{300, 250}};
  imp.bidfloor = Micros::FromUnits(floor);
  r.imps.push_back(imp);
  r.has_site = true;
  r.user_id = "u1";
  return r;
}

// A predictor file that is not what the schema says is refused, with the file and the reason;
// nothing in it can make a pCTR that is not a number (schemas/predictor-v1.md).
TEST(Predictor, CorruptFilesAreRefusedWithTheFileAndTheReason) {
  const std::string head = R"({"format": "rtb.predictor", "schema_version": 1, )";
  const std::pair<std::string, std::string> cases[] = {
      {"not json at all", "m.json: "},
      {head + R"("hash_bits": 16, "ctr_weights": {"1": 0.5)", "m.json: "},  // truncated
      {R"({"format": "rtb.other", "schema_version": 1})", "not an rtb.predictor"},
      {head + R"("hash_bits": 40})", "hash_bits out of range"},
      {head + R"("default": {"ctr_bias": "high"}})", "bad default model"},
      {head + R"("advertisers": {"7": {"avg_pcvr": -0.1}}})", "bad model of advertiser 7"},
      {head + R"("advertisers": {"seven": {}}})", "advertiser id 'seven'"},
      {head + R"("advertisers": {"-1": {}}})", "advertiser id '-1'"},
      {head + R"("hash_bits": 8, "ctr_weights": {"256": 0.5}})", "bad weight 256 in ctr_weights"},
      {head + R"("ctr_weights": {"x1": 0.5}})", "bad weight x1 in ctr_weights"},
      {head + R"("cvr_weights": {"3": "big"}})", "bad weight 3 in cvr_weights"},
      {head + R"("cvr_weights": {"3": 1e999}})", "number overflow"},
      {head + R"("default": {"ctr_bias": -1e999}})", "number overflow"},
  };
  for (const auto& [text, reason] : cases) {
    auto p = ParsePredictor(text, "m.json");
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find(reason), std::string::npos)
        << text << " -> " << p.status().message();
    EXPECT_EQ(p.status().message().rfind("m.json: ", 0), 0u) << p.status().message();
  }
  auto good = ParsePredictor(head + R"("hash_bits": 8, "advertisers": {"7": {"ctr_bias": -3}},
                                      "ctr_weights": {"255": 0.5}})",
                             "m.json");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->advertisers.at(7).ctr_bias, -3);
  auto missing = LoadPredictor("/nonexistent/model.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/model.json"), std::string::npos);
}

TEST(BidLogic, AppliesTheDcmabFormulaPerAgentAndCluster) {
  Predictor p;  // defaults: pCTR = sigmoid(-4), pCVR = sigmoid(-3.5), avg pCVR unknown
  auto clusters = std::make_shared<ClusterMap>();
  clusters->user_cluster["u1"] = 1;
  PolicySnapshot snap;
  snap.table = ActionTable(3, 2);
  snap.table.set(2, 1, -0.5);
  snap.clusters = clusters;
  const Decision d = DecideBids(Banner(), Advertisers(), p, &snap, {});
  ASSERT_EQ(d.bids.size(), 3u);
  EXPECT_EQ(d.cluster, 1);
  const double pctr = 1 / (1 + std::exp(4.0));
  for (const Candidate& c : d.bids) {
    const double a = c.agent == 2 ? -0.5 : 0.0;
    EXPECT_EQ(c.cpc, AdjustedBid(Micros::FromUnits(c.advertiser), a, 1.0));
    EXPECT_EQ(c.price, CpmPrice(c.cpc, pctr));
  }
  // Ranked by eCPM: advertiser 3 bids 3.0 x 0.5 = 1.5, advertiser 2 bids 2.0.
  EXPECT_EQ(d.bids[0].advertiser, 2u);
  EXPECT_EQ(d.bids[1].advertiser, 3u);
}

TEST(BidLogic, ClipsWithThePolicysAlphaRange) {
  Predictor p;
  auto clusters = std::make_shared<ClusterMap>();
  PolicySnapshot snap;
  snap.table = ActionTable(3, 1);
  for (int i = 0; i < 3; ++i) snap.table.set(i, 0, -1.0);
  snap.clusters = clusters;
  snap.alpha_range = 0.5;  // the range the table was trained with, not the paper's 0.9
  const Decision d = DecideBids(Banner(), Advertisers(), p, &snap, {});
  ASSERT_EQ(d.bids.size(), 3u);
  for (const Candidate& c : d.bids) {
    EXPECT_DOUBLE_EQ(c.alpha, -0.5);
    EXPECT_EQ(c.cpc, Micros::FromUnits(c.advertiser * 0.5));
  }
}

TEST(BidLogic, CapsEachBidToTheBudgetLeftAsTheSimulatorDoes) {
  Predictor p;
  const double pctr = 1 / (1 + std::exp(4.0));
  DecideOptions opt;
  // Advertiser index 2 (bid 3.0) may still reserve 2,000 micros; the others are unlimited.
  opt.budget_left = [](size_t k) -> int64_t { return k == 2 ? 2000 : 1'000'000'000; };
  const Decision d = DecideBids(Banner(), Advertisers(), p, nullptr, opt);
  ASSERT_EQ(d.bids.size(), 3u);
  for (const Candidate& c : d.bids) {
    if (c.advertiser_index != 2) {
      EXPECT_EQ(c.cpc, Micros::FromUnits(c.advertiser));
      continue;
    }
    EXPECT_EQ(c.cpc, CapBidToBudget(Micros::FromUnits(3.0), pctr, 2000, ChargeBasis::kExpected));
    EXPECT_LT(c.cpc, Micros::FromUnits(3.0));
    EXPECT_LE((c.price.value() + 999) / 1000, 2000);  // one impression fits the budget left
  }
  // Below the smallest budget that still bids, no cap: the reservation refuses it instead.
  opt.budget_left = [](size_t) -> int64_t { return kMinBudgetLeftMicros - 1; };
  for (const Candidate& c : DecideBids(Banner(), Advertisers(), p, nullptr, opt).bids) {
    EXPECT_EQ(c.cpc, Micros::FromUnits(c.advertiser));
  }
}

// A bid whose reservation a lease cannot cover is lowered to the room it has, as a bid is at a
// budget's end; never under the floor, never with no room.
TEST(BidLogic, LowerToRoomFitsOneImpressionInTheRoomOrGivesNothing) {
  Candidate c;
  c.pctr = 0.02;
  c.cpc = Micros::FromUnits(1.0);  // CPM 20.00: one impression charges up to 20,000 micros
  c.price = CpmPrice(c.cpc, c.pctr);
  ASSERT_EQ(MaxCharge(c.price).value(), 20'000);
  const auto lowered = LowerToRoom(c, 7'000, Micros(0));
  ASSERT_TRUE(lowered.has_value());
  EXPECT_LE(MaxCharge(lowered->price).value(), 7'000);
  EXPECT_GT(MaxCharge(lowered->price).value(), 6'900);  // as much of the room as it can
  EXPECT_EQ(lowered->cpc, CapBidToBudget(c.cpc, c.pctr, 7'000, ChargeBasis::kExpected));
  EXPECT_EQ(lowered->price, CpmPrice(lowered->cpc, c.pctr));
  // Room enough: unchanged.
  EXPECT_EQ(LowerToRoom(c, 50'000, Micros(0))->price, c.price);
  // Under the floor (a CPM of 7.00 against 8.00), no room, or no pCTR: nothing.
  EXPECT_FALSE(LowerToRoom(c, 7'000, Micros::FromUnits(8.0)).has_value());
  EXPECT_FALSE(LowerToRoom(c, kMinBudgetLeftMicros - 1, Micros(0)).has_value());
  Candidate no_ctr = c;
  no_ctr.pctr = 0;
  EXPECT_FALSE(LowerToRoom(no_ctr, 7'000, Micros(0)).has_value());
}

TEST(BidLogic, FloorsCurrencyBlocksAndFallback) {
  Predictor p;
  auto advs = Advertisers();
  EXPECT_EQ(DecideBids(Banner(1000), advs, p, nullptr, {}).reason, NoBidReason::kBelowFloor);
  BidRequest eur = Banner(0.01);
  eur.imps[0].bidfloorcur = "EUR";
  EXPECT_EQ(DecideBids(eur, advs, p, nullptr, {}).reason, NoBidReason::kCurrency);
  BidRequest blocked = Banner();
  blocked.badv = {"d0.example", "d1.example", "d2.example"};
  EXPECT_TRUE(DecideBids(blocked, advs, p, nullptr, {}).bids.empty());
  DecideOptions one;
  one.max_bids_per_imp = 1;
  const Decision d = DecideBids(Banner(), advs, p, nullptr, one);
  ASSERT_EQ(d.bids.size(), 1u);
  EXPECT_TRUE(d.manual_fallback);
  EXPECT_EQ(d.bids[0].alpha, 0.0);
  BidRequest video = Banner();
  video.imps[0].banner = false;
  video.imps[0].video = true;
  EXPECT_EQ(DecideBids(video, advs, p, nullptr, {}).reason, NoBidReason::kNoMatchingCampaign);
}

// A private auction is bid only through a deal the advertiser holds, whose wseat names its seat,
// at or above the deal's floor, the bid naming the deal; an advertiser without one never bids
// there. In an open auction a met deal is bid through, otherwise the open bid stands.
TEST(BidLogic, APrivateAuctionIsBidOnlyThroughAHeldDealAtOrAboveItsFloor) {
  Predictor p;
  auto advs = Advertisers();
  for (auto& a : advs) a.seat = "adv-" + std::to_string(a.id);
  advs[2].deals = {{"D-3"}};
  advs[1].deals = {{"D-2"}};
  advs[1].seat = "Agency2";
  const Decision open = DecideBids(Banner(), advs, p, nullptr, {});
  ASSERT_EQ(open.bids.size(), 3u);
  Micros price3;
  for (const Candidate& c : open.bids) {
    EXPECT_EQ(c.deal, -1);
    if (c.advertiser == 3) price3 = c.price;
  }
  ASSERT_GT(price3.value(), 0);
  BidRequest r = Banner();
  r.imps[0].private_auction = 1;
  r.imps[0].deals = {{"D-2", Micros(1), "USD", {"Agency1"}, 0},  // not advertiser 2's seat
                     {"D-3", price3, "USD", {"adv-3"}, 1}};
  Decision d = DecideBids(r, advs, p, nullptr, {});
  ASSERT_EQ(d.bids.size(), 1u);
  EXPECT_EQ(d.bids[0].advertiser, 3u);
  EXPECT_EQ(d.bids[0].deal, 1);
  EXPECT_EQ(d.bids[0].floor, price3);
  // A fixed-price deal (at 3): the bid is the deal's price.
  r.imps[0].deals[1].at = 3;
  r.imps[0].deals[1].bidfloor = Micros(price3.value() / 2);
  d = DecideBids(r, advs, p, nullptr, {});
  ASSERT_EQ(d.bids.size(), 1u);
  EXPECT_EQ(d.bids[0].price, Micros(price3.value() / 2));
  r.imps[0].deals[1].at = 1;
  // The floor one micro above the price: no bid (below the floor), and no open bid instead.
  r.imps[0].deals[1].bidfloor = Micros(price3.value() + 1);
  d = DecideBids(r, advs, p, nullptr, {});
  EXPECT_TRUE(d.bids.empty());
  EXPECT_EQ(d.reason, NoBidReason::kBelowFloor);
  // Deals no advertiser holds: no bid, no_deal.
  BidRequest none = r;
  none.imps[0].deals = {{"D-9", Micros(1), "USD", {}, 0}};
  d = DecideBids(none, advs, p, nullptr, {});
  EXPECT_TRUE(d.bids.empty());
  EXPECT_EQ(d.reason, NoBidReason::kNoDeal);
  EXPECT_STREQ(NoBidReasonName(d.reason), "no_deal");
  // Advertiser 2's seat named: it bids through D-2 too.
  r.imps[0].deals[0].wseat = {"Agency2"};
  d = DecideBids(r, advs, p, nullptr, {});
  ASSERT_EQ(d.bids.size(), 1u);
  EXPECT_EQ(d.bids[0].advertiser, 2u);
  EXPECT_EQ(d.bids[0].deal, 0);
  // The same deals in an open auction: 2 through its deal, 1 and 3 in the open auction.
  r.imps[0].private_auction = 0;
  d = DecideBids(r, advs, p, nullptr, {});
  ASSERT_EQ(d.bids.size(), 3u);
  for (const Candidate& c : d.bids) EXPECT_EQ(c.deal, c.advertiser == 2 ? 0 : -1);
}

// bcat is checked against the ad's own categories (its tier-1 parent blocks a sub-category), in
// the same taxonomy only; bapp against the advertised app; an advertiser's other creative that
// is not blocked still bids. (bcat used to be compared with the advertiser's targeting.)
TEST(BidLogic, BcatBappAndBadvAreCheckedAgainstTheAdItself) {
  Predictor p;
  auto advs = Advertisers();
  advs[0].creatives[0].cat = {"IAB3-1"};
  advs[1].creatives[0].bundle = "com.example.game";
  advs[2].targeting.categories = {"IAB3"};
  advs[2].creatives = {{"c2a", {"d2.example"}, 300, 250, "<b/>", {"IAB3"}},
                       {"c2b", {"d2.example"}, 300, 250, "<b/>", {"IAB7"}}};
  BidRequest r = Banner();
  r.cat = {"IAB3"};
  r.bcat = {"IAB3"};
  r.bapp = {"com.example.game"};
  Decision d = DecideBids(r, advs, p, nullptr, {});
  ASSERT_EQ(d.bids.size(), 1u);
  EXPECT_EQ(d.bids[0].advertiser, 3u);  // targets IAB3 sites, with its IAB7 ad
  EXPECT_EQ(d.bids[0].creative_index, 1u);
  r.cattax = 2;  // bcat in another taxonomy: the IAB 1.0 categories are not compared
  r.bapp.clear();
  d = DecideBids(r, advs, p, nullptr, {});
  EXPECT_EQ(d.bids.size(), 3u);
  r.cattax = 1;
  r.bcat = {"IAB3", "IAB7"};
  r.badv = {"d1.example"};
  d = DecideBids(r, advs, p, nullptr, {});
  EXPECT_TRUE(d.bids.empty());
  EXPECT_EQ(d.reason, NoBidReason::kBlocked);
}

TEST(BidLogic, SimulationHintsReplaceCandidatesAndPredictionsAndCountComputations) {
  Predictor p;
  const auto advs = Advertisers();
  const std::unordered_map<uint32_t, size_t> index_of = {{1, 0}, {2, 1}, {3, 2}};
  auto clusters = std::make_shared<ClusterMap>();
  clusters->user_cluster["u1"] = 1;
  BidRequest r = Banner(/*floor=*/0.5);
  SimHints h;
  h.t_ms = 3'600'000;
  h.has_candidates = true;
  // Advertiser 9 is not ours (skipped); 2 is priced below the floor (computed, not bid).
  h.candidates = {{3, 0.5, 0.02}, {9, 0.9, 0.9}, {2, 0.0001, 0.02}};
  r.sim = h;
  DecideOptions opt;
  opt.agents = 3;
  opt.index_of = &index_of;
  opt.clusters = clusters.get();
  const Decision d = DecideBids(r, advs, p, nullptr, opt);
  ASSERT_EQ(d.bids.size(), 1u);
  EXPECT_EQ(d.bids[0].advertiser, 3u);
  EXPECT_DOUBLE_EQ(d.bids[0].pctr, 0.5);  // the hint, not the predictor's prior
  EXPECT_EQ(d.bids[0].price, CpmPrice(Micros::FromUnits(3.0), 0.5));
  EXPECT_EQ(d.cluster, 1);  // from the fallback map: there is no policy
  EXPECT_EQ(d.computed, (std::vector<int>{0, 1, 1}));
  // An advertiser without budget computes nothing.
  opt.has_budget = [](size_t k) { return k != 2; };
  const Decision d2 = DecideBids(r, advs, p, nullptr, opt);
  EXPECT_TRUE(d2.bids.empty());
  EXPECT_EQ(d2.computed, (std::vector<int>{0, 1, 0}));
  // The clock alone (a hand-written market): every campaign is a candidate, priced by the
  // predictor, as with a real exchange.
  r.sim->has_candidates = false;
  r.sim->candidates.clear();
  opt.has_budget = nullptr;
  const Decision d3 = DecideBids(r, advs, p, nullptr, opt);
  const Decision live = [&] {
    BidRequest plain = r;
    plain.sim.reset();
    return DecideBids(plain, advs, p, nullptr, opt);
  }();
  ASSERT_FALSE(d3.bids.empty());
  EXPECT_EQ(d3.computed, live.computed);
  ASSERT_EQ(d3.bids.size(), live.bids.size());
  for (size_t b = 0; b < d3.bids.size(); ++b) {
    EXPECT_EQ(d3.bids[b].advertiser, live.bids[b].advertiser);
    EXPECT_EQ(d3.bids[b].price, live.bids[b].price);
  }
}

// Dedupe keys live under their bid's hour; forgetting the hours before H drops exactly those
// keys (and nothing else: spend, newer keys and the outbox stay), across a reopen.
// The lease lineage a state store keeps: newest first; past the limit the oldest unanswered
// processes go first, so the one that holds the name (answered) stays however many starts fail
// before reaching the coordinator; only this process is marked answered.
TEST(StateStore, TheLeaseLineageKeepsTheAnsweredProcessThroughACrashLoop) {
  LeaseLineage l = NextLeaseLineage("", "p1", 3);
  EXPECT_TRUE(l.earlier.empty());
  EXPECT_EQ(l.kept, "p1");
  EXPECT_EQ(MarkLeaseAnswered(l.kept, "p1"), "!p1");
  EXPECT_EQ(MarkLeaseAnswered("p2,!p1", "p1"), "");  // not the newest: a later start owns it
  std::string kept = "!p1";
  for (const char* self : {"p2", "p3", "p4", "p5", "p6"}) {  // five starts never answered
    l = NextLeaseLineage(kept, self, 3);
    kept = l.kept;
  }
  EXPECT_EQ(l.earlier, (std::vector<std::string>{"p5", "p4", "p1"}));
  EXPECT_EQ(kept, "p6,p5,p4,!p1");
  // Answered, p6 stays too; with every earlier one answered, the oldest goes.
  kept = MarkLeaseAnswered(kept, "p6");
  EXPECT_EQ(kept, "!p6,p5,p4,!p1");
  l = NextLeaseLineage(kept, "p7", 3);
  EXPECT_EQ(l.earlier, (std::vector<std::string>{"p6", "p5", "p1"}));
  l = NextLeaseLineage("!a,!b,!c,!d", "e", 3);
  EXPECT_EQ(l.earlier, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(l.kept, "e,!a,!b,!c");
}

// RocksDB's own log goes to the process's log, not to a LOG file on the state disk, where a full
// disk made Debian's RocksDB abort the bidder (tests/bidder/full_disk_test.sh).
TEST(StateStore, WritesNoLogFileOfRocksDbsOnTheStateDisk) {
  const std::string dir = ::testing::TempDir() + "/state_nolog_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  for (int open = 0; open < 2; ++open) {
    auto s = StateStore::Open(dir);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_TRUE(*(*s)->ApplyOnce(100, "billing/" + std::to_string(open), 1, "d", Micros(5)));
  }
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    EXPECT_FALSE(f.path().filename().string().starts_with("LOG")) << f.path();
  }
  std::filesystem::remove_all(dir);
}

TEST(StateStore, ForgetsTheDedupeKeysOfOldHoursOnly) {
  const std::string dir = ::testing::TempDir() + "/state_retention_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  {
    auto s = StateStore::Open(dir);
    ASSERT_TRUE(s.ok()) << s.status().message();
    StateStore& st = **s;
    EXPECT_TRUE(*st.ApplyOnce(100, "billing/a", 1, "d", Micros(5)));
    EXPECT_TRUE(*st.ApplyOnce(101, "billing/b", 1, "d", Micros(7)));
    EXPECT_TRUE(*st.ApplyOnce(5'000'000, "billing/c", 1, "d", Micros(0)));
    EXPECT_FALSE(*st.ApplyOnce(100, "billing/a", 1, "d", Micros(5)));  // seen
    ASSERT_TRUE(st.ForgetNoticesBefore(100).ok());                     // hour 100 is kept
    EXPECT_FALSE(*st.ApplyOnce(100, "billing/a", 1, "d", Micros(5)));
    ASSERT_TRUE(st.ForgetNoticesBefore(101).ok());
    EXPECT_EQ(st.Spent(1, "d").value(), 12);  // spend is not a dedupe key
  }
  auto s = StateStore::Open(dir);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(*(*s)->ApplyOnce(100, "billing/a", 1, "d", Micros(0)));   // forgotten
  EXPECT_FALSE(*(*s)->ApplyOnce(101, "billing/b", 1, "d", Micros(0)));  // kept
  EXPECT_FALSE(*(*s)->ApplyOnce(5'000'000, "billing/c", 1, "d", Micros(0)));
  ASSERT_TRUE((*s)->ForgetNoticesBefore(-3).ok());  // nothing before the first hour
  EXPECT_FALSE(*(*s)->ApplyOnce(101, "billing/b", 1, "d", Micros(0)));
  s->reset();
  std::filesystem::remove_all(dir);
}

TEST(Notice, UrlDecodeTakesOnlyTwoHexDigitEscapes) {
  std::string out;
  ASSERT_TRUE(UrlDecode("a%2Fb%2fc+d%41", &out));
  EXPECT_EQ(out, "a/b/c dA");
  ASSERT_TRUE(UrlDecode("%00%FF", &out));
  EXPECT_EQ(out, std::string("\0\xff", 2));
  // A sign, a non-hex digit or a short escape is malformed, not a byte.
  for (const char* bad : {"%-1", "%+f", "%g0", "%4", "%", "ab%4"}) {
    EXPECT_FALSE(UrlDecode(bad, &out)) << bad;
  }
  EXPECT_FALSE(ParseNotice("/notice/billing?auction=a%-1&imp=1&adv=3&price=1.5").ok());
}

TEST(Notice, SimulatedClockParameter) {
  auto n = ParseNotice("/notice/billing?auction=a&imp=1&adv=3&price=1.5&t=86400123");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->sim_ms, 86'400'123);
  EXPECT_EQ(ParseNotice("/notice/billing?auction=a&imp=1&adv=3&price=1.5")->sim_ms, -1);
  EXPECT_FALSE(ParseNotice("/notice/billing?auction=a&imp=1&adv=3&t=-4").ok());
  EXPECT_FALSE(ParseNotice("/notice/billing?auction=a&imp=1&adv=3&t=12x").ok());
}

TEST(Notice, ExpectedOutcomesCountParameter) {
  // Expected outcomes: a click or conversion notice says how many it reports.
  auto c = ParseNotice("/notice/click?auction=a&imp=1&adv=3&n=0.0125");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->count.has_value());
  EXPECT_DOUBLE_EQ(*c->count, 0.0125);
  auto v = ParseNotice("/notice/conversion?auction=a&imp=1&adv=3&value=0.25&n=3.5e-4");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_DOUBLE_EQ(*v->count, 3.5e-4);
  EXPECT_EQ(v->value->value(), 250'000);
  EXPECT_FALSE(ParseNotice("/notice/click?auction=a&imp=1&adv=3")->count.has_value());  // = 1
  // Out of range or not a number: a clear error, not a silent 1.
  for (const char* bad : {"0", "-1", "1e7", "nan", "inf", "abc", "", "0.5x"}) {
    auto r = ParseNotice(std::string("/notice/click?auction=a&imp=1&adv=3&n=") + bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("n (how many"), std::string::npos)
          << r.status().message();
    }
  }
  // A win, billing or loss counts one impression: n there is an error.
  for (const char* type : {"win", "billing", "loss"}) {
    EXPECT_FALSE(
        ParseNotice(std::string("/notice/") + type + "?auction=a&imp=1&adv=3&price=1&n=0.5").ok())
        << type;
  }
}

TEST(Budget, ManyThreadsNeverOverspendBeyondReservations) {
  BudgetLedger ledger({Micros(1'000'000)}, {Micros(0)});
  std::atomic<int64_t> billed{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&, t] {
      for (int k = 0; k < 5000; ++k) {
        const std::string key = std::to_string(t) + "/" + std::to_string(k);
        if (!ledger.TryReserve(0, key, Micros(997), 0, 1LL << 60)) continue;
        EXPECT_LE(ledger.spent(0).value() + ledger.reserved(0).value(), 1'000'000);
        if (k % 3 == 0) {
          ledger.Release(key);  // a loss
        } else {
          ledger.Settle(0, key, Micros(500 + k % 400));  // billed below the reservation
          billed.fetch_add(500 + k % 400);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ledger.spent(0).value(), billed.load());
  EXPECT_LE(ledger.spent(0).value(), 1'000'000);
  EXPECT_GT(ledger.spent(0).value(), 1'000'000 - 997);  // the budget was used up
  EXPECT_EQ(ledger.reserved(0).value(), 0);
  EXPECT_EQ(ledger.outstanding(), 0);
}

// A lease being given back (docs/budget-leases.md): the lease client sets the amount aside with
// the bids' own check while request threads reserve, then, once the coordinator confirms the
// return, lowers the limit and lets the amount go. No interleaving puts what is committed past
// the lowered limit, and refused reservations are counted as demand.
TEST(Budget, AReturnSetAsideWhileBidsReserveNeverLetsCommittedPassTheLoweredLimit) {
  for (int round = 0; round < 50; ++round) {
    BudgetLedger ledger({Micros(1'000'000)}, {Micros(0)});
    std::atomic<bool> go{false};
    std::atomic<int64_t> reserved{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) {
      ts.emplace_back([&, t] {
        while (!go.load()) {
        }
        for (int k = 0; k < 400; ++k) {
          const std::string key =
              std::to_string(round) + "/" + std::to_string(t) + "/" + std::to_string(k);
          if (ledger.TryReserve(0, key, Micros(1'000), 0, 1LL << 60)) reserved.fetch_add(1'000);
        }
      });
    }
    go = true;
    const int64_t back = 300'000;
    const bool aside = ledger.TrySetAside(0, Micros(back));
    if (aside) {
      ledger.SetLimit(0, Micros(1'000'000 - back));  // the confirmed holding
      ledger.ReleaseSetAside(0, Micros(back));
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(ledger.committed(0).value(), reserved.load());
    EXPECT_LE(ledger.committed(0).value(), ledger.budget(0).value()) << "round " << round;
    if (aside) {
      EXPECT_LE(reserved.load(), 1'000'000 - back);
    } else {
      EXPECT_GT(reserved.load(), 1'000'000 - back);  // no room was left to give back
    }
    // 1,600 reservations were tried for at most 1,000 places: the refused ones are demand.
    EXPECT_EQ(ledger.denied(0).value(), 1'600'000 - reserved.load());
    EXPECT_EQ(ledger.last_refused(0).value(), 1'000);
    EXPECT_EQ(ledger.max_charge(0).value(), 1'000);
  }
  // A set-aside never takes room that is not there.
  BudgetLedger small({Micros(1'000)}, {Micros(600)});
  EXPECT_FALSE(small.TrySetAside(0, Micros(500)));
  EXPECT_TRUE(small.TrySetAside(0, Micros(400)));
  EXPECT_FALSE(small.TryReserve(0, "x", Micros(1), 0, 10));
  EXPECT_TRUE(small.bids_open(0));  // open unless a lease client closes it
  small.SetBidsOpen(0, false);
  EXPECT_FALSE(small.bids_open(0));
}

TEST(Budget, ExpiryReleasesAndLateBillingStillBooks) {
  BudgetLedger ledger({Micros(1000)}, {Micros(100)});
  ASSERT_TRUE(ledger.TryReserve(0, "a", Micros(900), 0, 10));
  EXPECT_FALSE(ledger.TryReserve(0, "b", Micros(1), 0, 10));
  EXPECT_EQ(ledger.ExpireBefore(11), 1);
  EXPECT_TRUE(ledger.TryReserve(0, "b", Micros(900), 11, 100));
  EXPECT_EQ(ledger.Settle(0, "a", Micros(50)).value(), 0);  // late: nothing reserved any more
  EXPECT_EQ(ledger.spent(0).value(), 150);
}

TEST(Budget, NewReservationsReleaseExpiredOnesAFewAtATime) {
  BudgetLedger ledger({Micros(1'000'000'000)}, {});
  const int olds = 47 * BudgetLedger::kShards, news = 94 * BudgetLedger::kShards;
  for (int k = 0; k < olds; ++k) {
    ASSERT_TRUE(ledger.TryReserve(0, "old" + std::to_string(k), Micros(100), 0, 10));
  }
  // Before their deadline nothing is released, by a sweep or by new reservations.
  EXPECT_EQ(ledger.ExpireBefore(10), 0);
  ASSERT_TRUE(ledger.TryReserve(0, "early", Micros(1), 10, 100));
  EXPECT_EQ(ledger.outstanding(), olds + 1);
  // A capped sweep releases at most its cap from each shard (~47 old ones in each).
  EXPECT_EQ(ledger.ExpireBefore(11, 5), 5 * BudgetLedger::kShards);
  EXPECT_EQ(ledger.outstanding(), olds + 1 - 5 * BudgetLedger::kShards);
  // Each new reservation releases up to kExpirePerCall expired ones of its shard: ~94 new ones
  // per shard release all the old ones and nothing else.
  for (int k = 0; k < news; ++k) {
    ASSERT_TRUE(ledger.TryReserve(0, "new" + std::to_string(k), Micros(1), 11, 100));
  }
  EXPECT_EQ(ledger.outstanding(), news + 1);
  EXPECT_EQ(ledger.reserved(0).value(), news + 1);
  EXPECT_EQ(ledger.Reserved("early").value(), 1);
  EXPECT_EQ(ledger.Reserved("old7").value(), 0);
}

TEST(Notice, ParsesPricesExactlyAndRefusesBadOnes) {
  auto n = ParseNotice("/notice/billing?auction=A%201&imp=2&bid=b&adv=7&price=1.234567");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->type, NoticeType::kBilling);
  EXPECT_EQ(n->auction_id, "A 1");
  EXPECT_EQ(n->advertiser, 7u);
  EXPECT_EQ(n->price->value(), 1234567);
  for (auto [price, why] : {std::pair<const char*, const char*>{"AUDIT", "audit"},
                            {"-1.0", "negative"},
                            {"abc", "non-numeric"},
                            {"", "missing"},
                            {"${AUCTION_PRICE}", "audit"},
                            {"1e5", "non-numeric"},
                            {"99999999999999999999", "out of range"}}) {
    auto b = ParseNotice(std::string("/notice/win?auction=a&imp=1&adv=1&price=") + price);
    ASSERT_TRUE(b.ok()) << price;
    EXPECT_FALSE(b->price.has_value()) << price;
    EXPECT_EQ(b->invalid_price, why) << price;
  }
  // The largest accepted amount converts to micros without overflow.
  auto big = ParseNotice("/notice/win?auction=a&imp=1&adv=1&price=9000000000000.999999");
  ASSERT_TRUE(big.ok());
  ASSERT_TRUE(big->price.has_value());
  EXPECT_EQ(big->price->value(), 9'000'000'000'000'999'999LL);
  EXPECT_FALSE(ParseNotice("/notice/win?imp=1&adv=1").ok());
  EXPECT_FALSE(ParseNotice("/notice/nope?auction=a&imp=1&adv=1").ok());
  EXPECT_FALSE(ParseNotice("/notice/win?auction=a&imp=1&adv=x").ok());
  EXPECT_FALSE(ParseNotice("/notice/win?auction=%zz&imp=1&adv=1").ok());
  auto loss = ParseNotice("/notice/loss?auction=a&imp=1&adv=1&price=&loss=102");
  ASSERT_TRUE(loss.ok());
  EXPECT_EQ(loss->loss_code, 102);
}

TEST(Notice, UrlsCarryTheSignedBidAndTheExchangesMacros) {
  const std::string q =
      SignedNoticeQuery({"a&b=c", "imp 1", 9, Micros(1234), 77, false, 4, Arm::kManual}, "ab12");
  const std::string u = NoticeUrl("http://h:1", NoticeType::kLoss, q);
  for (const char* m : {"auction=a%26b%3Dc", "imp=imp%201", "adv=9", "bp=1234", "ts=77", "x=0",
                        "c=4", "ab=m", "sig=ab12", "${AUCTION_PRICE}", "${AUCTION_LOSS}"}) {
    EXPECT_NE(u.find(m), std::string::npos) << m;
  }
  // The signed terms come back as they went out, the ids decoded.
  auto n = ParseNotice(u.substr(u.find("/notice/")));
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(n->auction_id, "a&b=c");
  EXPECT_EQ(n->imp_id, "imp 1");
  EXPECT_EQ(n->bid_price, Micros(1234));
  EXPECT_EQ(n->bid_ms, 77);
  EXPECT_FALSE(n->test);
  EXPECT_EQ(n->cluster, 4);
  EXPECT_EQ(n->arm, Arm::kManual);
  EXPECT_EQ(n->sig, "ab12");
  // An arm other than l or m is not a signed term: no arm, so no valid notice.
  for (const char* bad : {"ab=x", "ab=learned", "ab="}) {
    auto b = ParseNotice("/notice/win?auction=a&imp=1&adv=1&" + std::string(bad));
    ASSERT_TRUE(b.ok()) << bad;
    EXPECT_FALSE(b->arm.has_value()) << bad;
  }
  // A cluster that is not an int32 is not a signed term: no cluster, so no valid notice.
  for (const char* bad : {"c=x", "c=-2", "c=4294967296", "c="}) {
    auto b = ParseNotice("/notice/win?auction=a&imp=1&adv=1&" + std::string(bad));
    ASSERT_TRUE(b.ok()) << bad;
    EXPECT_FALSE(b->cluster.has_value()) << bad;
  }
}

TEST(NoticeSigner, SignsTheBidsIdentityAndTermsAndNothingElseVerifies) {
  auto s = NoticeSigner::Create("a secret of sixteen+ bytes");
  ASSERT_TRUE(s.ok());
  const SignedBid b{"auction-1", "1", 7, Micros(2'500'000), 1'700'000'000'000, false, 3};
  const std::string sig = (*s)->Sign(b);
  // Standard HMAC-SHA-256 (Python's hmac module on the same encoded bytes), first 128 bits;
  // a key longer than a block is hashed first.
  EXPECT_EQ(sig, "4adbaf13e5d456297e4144cc6cca2f05");
  auto long_key = NoticeSigner::Create(std::string(100, 'x'));
  ASSERT_TRUE(long_key.ok());
  EXPECT_EQ((*long_key)->Sign(b), "f0236d0fc983917136c9097da6fbdcc5");
  EXPECT_TRUE((*s)->Verify(b, sig));
  // Every field is signed: change any one and the signature no longer matches.
  SignedBid x = b;
  x.auction = "auction-2";
  EXPECT_FALSE((*s)->Verify(x, sig));
  x = b;
  x.imp = "2";
  EXPECT_FALSE((*s)->Verify(x, sig));
  x = b;
  x.advertiser = 8;
  EXPECT_FALSE((*s)->Verify(x, sig));
  x = b;
  x.price_cpm = Micros(2'500'001);
  EXPECT_FALSE((*s)->Verify(x, sig));
  x = b;
  x.bid_unix_ms += 1;
  EXPECT_FALSE((*s)->Verify(x, sig));
  x = b;
  x.test = true;
  EXPECT_FALSE((*s)->Verify(x, sig));
  x = b;
  x.cluster = 4;
  EXPECT_FALSE((*s)->Verify(x, sig));
  x = b;
  x.arm = Arm::kManual;
  EXPECT_FALSE((*s)->Verify(x, sig));
  // Length-prefixed: moving a byte between ids changes the signed input.
  EXPECT_NE((*s)->Sign({"col", "x/1", 7, Micros(1), 1, false}),
            (*s)->Sign({"col/x", "1", 7, Micros(1), 1, false}));
  // Another secret, another signature.
  auto other = NoticeSigner::Create("another secret, also long");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE((*other)->Verify(b, sig));
  EXPECT_FALSE(NoticeSigner::Create("short").ok());
  auto r1 = RandomSecret(), r2 = RandomSecret();
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->size(), 64u);
  EXPECT_NE(*r1, *r2);
}

// The deal a bid was made through is signed too (its notices book spend to it): it cannot be
// altered or stripped, and an open-auction bid signs as before (version 2 or 3).
TEST(NoticeSigner, TheDealIsSignedAndRidesInTheUrl) {
  auto s = NoticeSigner::Create("a secret of sixteen+ bytes");
  ASSERT_TRUE(s.ok());
  const SignedBid open{"auction-1", "1", 7, Micros(2'500'000), 1'700'000'000'000, false, 3};
  EXPECT_EQ((*s)->Sign(open), "4adbaf13e5d456297e4144cc6cca2f05");  // as before deals
  SignedBid deal = open;
  deal.deal = "AB-Agency1-0001";
  const std::string sig = (*s)->Sign(deal);
  EXPECT_TRUE((*s)->Verify(deal, sig));
  EXPECT_FALSE((*s)->Verify(open, sig));  // stripped
  SignedBid other = deal;
  other.deal = "XY-Agency2-0001";
  EXPECT_FALSE((*s)->Verify(other, sig));  // another deal
  // The owner and the deal are both length-prefixed: one cannot pass for the other.
  SignedBid owned = open;
  owned.owner = "AB-Agency1-0001";
  EXPECT_NE((*s)->Sign(owned), sig);
  const std::string q = SignedNoticeQuery(deal, sig);
  EXPECT_NE(q.find("&d=AB-Agency1-0001&sig="), std::string::npos) << q;
  auto n = ParseNotice("/notice/billing?" + q + "&price=2.6");
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(n->deal, "AB-Agency1-0001");
  EXPECT_EQ(SignedNoticeQuery(open, "x").find("&d="), std::string::npos);
}

// The bid's owner (several bidders in a market) is signed too: it cannot be altered, and a URL
// stripped of it does not verify (no owner is signed differently); its URL carries it as o=.
TEST(NoticeSigner, TheBidsOwnerIsSignedAndRidesInTheUrl) {
  auto s = NoticeSigner::Create("a secret of sixteen+ bytes");
  ASSERT_TRUE(s.ok());
  SignedBid b{"auction-1", "1", 7, Micros(2'500'000), 1'700'000'000'000, false, 3};
  b.owner = "bidder-a";
  const std::string sig = (*s)->Sign(b);
  EXPECT_TRUE((*s)->Verify(b, sig));
  SignedBid x = b;
  x.owner = "bidder-b";
  EXPECT_FALSE((*s)->Verify(x, sig));
  x.owner = "";
  EXPECT_FALSE((*s)->Verify(x, sig));
  auto n = ParseNotice("/notice/billing?" + SignedNoticeQuery(b, sig) + "&price=1");
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(n->owner, "bidder-a");
  EXPECT_EQ(n->sig, sig);
}

// A forwarded notice (notice_inbox.h) round-trips, sealed under the market's ring; the ring
// refuses it altered or unsealed, and a message that is not a notice is refused.
TEST(ForwardedNotice, RoundTripsSealedAndTheRingRefusesAnAlteredOrUnsealedOne) {
  auto keys = MarketKeys::Parse("k1=" + std::string(40, 'k'));
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  const ForwardedNotice f{"/notice/billing?auction=a%22b&imp=1&o=x", 1'700'000'000'123};
  const std::string sealed = EncodeForwardedNotice(f, "rtb.notices", &*keys);
  auto back = DecodeForwardedNotice(sealed, "rtb.notices", &*keys);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->target, f.target);
  EXPECT_EQ(back->received_ms, f.received_ms);
  EXPECT_FALSE(DecodeForwardedNotice(sealed, "rtb.other", &*keys).ok());
  std::string altered = sealed;
  altered.replace(altered.find("123"), 3, "999");
  EXPECT_EQ(DecodeForwardedNotice(altered, "rtb.notices", &*keys).status().message(), "bad_mac");
  const std::string plain = EncodeForwardedNotice(f, "rtb.notices", nullptr);
  EXPECT_EQ(DecodeForwardedNotice(plain, "rtb.notices", &*keys).status().message(), "unsealed");
  EXPECT_TRUE(DecodeForwardedNotice(plain, "rtb.notices", nullptr).ok());
  EXPECT_FALSE(DecodeForwardedNotice(R"({"notice":"/metrics","at":1})", "t", nullptr).ok());
  EXPECT_FALSE(DecodeForwardedNotice("not json", "t", nullptr).ok());
}

TEST(Notice, IdsMustBeUtf8AndShort) {
  // Regression: invalid UTF-8 went raw into the event, which the learner then rejected.
  EXPECT_FALSE(ParseNotice("/notice/billing?auction=utf8-%FF%FE&imp=1&adv=1&price=1").ok());
  EXPECT_TRUE(ParseNotice("/notice/billing?auction=caf%C3%A9&imp=1&adv=1&price=1").ok());
  const std::string long_id(300, 'a');
  EXPECT_FALSE(ParseNotice("/notice/billing?auction=" + long_id + "&imp=1&adv=1&price=1").ok());
}

}  // namespace
}  // namespace rtb::bidder

namespace rtb::bidder {
namespace {

// The default config with one line replaced (or appended), written to a temp file and loaded.
Result<BidderConfig> LoadDefaultWith(const std::string& from, const std::string& to) {
  std::ifstream in(RTB_SOURCE_DIR "/configs/bidder/default.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (!from.empty()) {
    const size_t at = text.find(from);
    if (at == std::string::npos) return Status::NotFound("no line " + from);
    text.replace(at, from.size(), to);
  }
  // One file per process and call: ctest runs this file's tests as processes side by side.
  static int calls = 0;
  const std::string path = ::testing::TempDir() + "/bidder_config_test." +
                           std::to_string(::getpid()) + "." + std::to_string(++calls) + ".yaml";
  std::ofstream(path) << text;
  auto cfg = LoadBidderConfig(path);
  std::remove(path.c_str());
  return cfg;
}

TEST(BidderConfig, DefaultLoadsAndThreadSettingsAreChecked) {
  auto def = LoadDefaultWith("", "");
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(def->threads, 2);
  EXPECT_TRUE(def->pin_threads);
  EXPECT_EQ(def->kafka.thread_nice, 10);
  auto unpinned = LoadDefaultWith("pin_threads: true", "pin_threads: false");
  ASSERT_TRUE(unpinned.ok()) << unpinned.status().message();
  EXPECT_FALSE(unpinned->pin_threads);
  auto bad_nice = LoadDefaultWith("thread_nice: 10", "thread_nice: 25");
  ASSERT_FALSE(bad_nice.ok());
  EXPECT_NE(bad_nice.status().message().find("thread_nice"), std::string::npos)
      << bad_nice.status().message();
  auto unknown = LoadDefaultWith("pin_threads: true", "pin_thread: true");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("pin_thread"), std::string::npos);
  // '~' marks a dead process's holdings at the lease coordinator: not in a bidder's name.
  auto tilde = LoadDefaultWith("  name: \"\"", "  name: \"bidder~1\"");
  ASSERT_FALSE(tilde.ok());
  EXPECT_NE(tilde.status().message().find("'~'"), std::string::npos) << tilde.status().message();
}

// A creative without markup could not render (nothing serves it later): the config is refused
// at load with one line naming the creative's key; the default config's creatives all render.
TEST(BidderConfig, ACreativeWithoutMarkupIsRefusedAtLoad) {
  auto def = LoadDefaultWith("", "");
  ASSERT_TRUE(def.ok()) << def.status().message();
  for (const auto& a : def->advertisers) {
    for (const auto& c : a.creatives) EXPECT_FALSE(c.markup.empty()) << c.crid;
  }
  for (const char* to : {", markup: \"\"}", "}"}) {  // empty, and absent
    auto bare = LoadDefaultWith(", markup: \"<div>Globex</div>\"}", to);
    ASSERT_FALSE(bare.ok()) << to;
    EXPECT_NE(bare.status().message().find(
                  "creatives[0].markup' is empty: a bid carries its creative's markup (adm)"),
              std::string::npos)
        << bare.status().message();
  }
}

// An advertiser's goal: read with its target, and a contradictory or incomplete one refused with
// one line naming the advertiser and the key.
TEST(BidderConfig, AnAdvertisersGoalIsReadWithItsTargetAndAContradictionIsRefused) {
  auto def = LoadDefaultWith("", "");
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(def->advertisers[0].goal.kind, GoalKind::kRevenue);      // the default
  EXPECT_EQ(def->advertisers[1].goal.kind, GoalKind::kConversions);  // the example's target CPA
  EXPECT_EQ(def->advertisers[1].goal.target_cpa.value(), 120'000'000);
  const std::string at = "    name: Initech Apps\n";
  auto cpa = LoadDefaultWith(at, at + "    goal: conversions\n    target_cpa: 45.5\n");
  ASSERT_TRUE(cpa.ok()) << cpa.status().message();
  EXPECT_EQ(cpa->advertisers[2].goal.kind, GoalKind::kConversions);
  EXPECT_EQ(cpa->advertisers[2].goal.target_cpa.value(), 45'500'000);
  EXPECT_EQ(AbMarketOf(*cpa)[2].goal.target_cpa.value(), 45'500'000);  // the reports' market
  for (const auto& [keys, error] : std::vector<std::pair<std::string, std::string>>{
           {"    goal: conversions\n", "target_cpa: goal: conversions needs"},
           {"    goal: revenue\n    target_cpa: 4\n",
            "target_cpa: is the target of goal: conversions, not of goal: revenue"},
           {"    goal: value\n    target_roas: 3\n    target_cpa: 4\n",
            "target_cpa: is the target of goal: conversions, not of goal: value"},
           {"    goal: cpc\n", "goal: must be revenue, conversions or value"}}) {
    auto bad = LoadDefaultWith(at, at + keys);
    ASSERT_FALSE(bad.ok()) << keys;
    const std::string& m = bad.status().message();
    EXPECT_NE(m.find("advertisers[2].goal"), std::string::npos) << m;
    EXPECT_NE(m.find(error), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;  // one line
  }
}

// kafka.properties: a real cluster's librdkafka settings, in order; the engine's own are refused.
TEST(BidderConfig, KafkaPropertiesAreReadAndTheEnginesOwnRefused) {
  auto def = LoadDefaultWith("", "");
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_TRUE(def->kafka.properties.empty());
  auto sasl = LoadDefaultWith("  properties: {}",
                              "  properties: {security.protocol: SASL_SSL, sasl.mechanism: PLAIN}");
  ASSERT_TRUE(sasl.ok()) << sasl.status().message();
  EXPECT_EQ(sasl->kafka.properties,
            (std::vector<std::pair<std::string, std::string>>{{"security.protocol", "SASL_SSL"},
                                                              {"sasl.mechanism", "PLAIN"}}));
  // librdkafka's aliases too (delivery.timeout.ms is message.timeout.ms), and the group
  // sessions the learner and rtb budget set from their own options.
  for (const char* owned :
       {"enable.idempotence: false", "message.timeout.ms: 1000", "delivery.timeout.ms: 1000",
        "group.id: x", "bootstrap.servers: h:1", "metadata.broker.list: h:1",
        "session.timeout.ms: 45000", "compression.codec: none"}) {
    auto b = LoadDefaultWith("  properties: {}", std::string("  properties: {") + owned + "}");
    ASSERT_FALSE(b.ok()) << owned;
    EXPECT_NE(b.status().message().find("kafka.properties' may not set"), std::string::npos)
        << b.status().message();
  }
}

// kafka.brokers is a choice the operator makes: a cluster's bootstrap servers, or embedded (an
// in-memory cluster that loses its events when the process ends). Empty or missing, the
// config does not load, and the error names the key and both choices.
TEST(BidderConfig, KafkaBrokersMustBeChosen) {
  auto def = LoadDefaultWith("", "");
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(def->kafka.brokers, kEmbeddedBrokers);
  auto real = LoadDefaultWith("  brokers: embedded", "  brokers: kafka-1:9092,kafka-2:9092");
  ASSERT_TRUE(real.ok()) << real.status().message();
  EXPECT_EQ(real->kafka.brokers, "kafka-1:9092,kafka-2:9092");
  for (const char* unset : {"  brokers: \"\"", "  brokers: ''", ""}) {  // "": no key
    auto b = LoadDefaultWith("  brokers: embedded", unset);
    ASSERT_FALSE(b.ok()) << unset;
    const std::string& msg = b.status().message();
    EXPECT_NE(msg.find("key 'kafka.brokers' must be set"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bootstrap servers (host:port,...)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("or embedded (an in-memory cluster"), std::string::npos) << msg;
    EXPECT_NE(msg.find("loses every event when the process ends"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;  // one line
  }
  // A config without its kafka section at all: the same error.
  const std::string path =
      ::testing::TempDir() + "/no_kafka." + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << "listen: 127.0.0.1:8080\n";
  auto none = LoadBidderConfig(path);
  std::remove(path.c_str());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("key 'kafka.brokers' must be set"), std::string::npos)
      << none.status().message();
  // A config built in code (tests, tools) with no brokers: the event log refuses it too.
  KafkaConfig k;
  k.spill_path = ::testing::TempDir() + "/no_brokers_spill.jsonl";
  auto log = EventLog::Open(k);
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("kafka.brokers must be set"), std::string::npos)
      << log.status().message();
}

// kafka.stats_interval_ms: librdkafka's statistics on /metrics, 0 = off; checked like every key.
TEST(BidderConfig, KafkaStatisticsIntervalIsReadAndChecked) {
  auto def = LoadDefaultWith("", "");
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(def->kafka.stats_interval_ms, 5000);
  auto off = LoadDefaultWith("  stats_interval_ms: 5000", "  stats_interval_ms: 0");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(off->kafka.stats_interval_ms, 0);
  auto bad = LoadDefaultWith("  stats_interval_ms: 5000", "  stats_interval_ms: -1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kafka.stats_interval_ms"), std::string::npos)
      << bad.status().message();
  // The librdkafka property it sets is the key's own.
  auto prop = LoadDefaultWith("  properties: {}", "  properties: {statistics.interval.ms: 10}");
  ASSERT_FALSE(prop.ok());
  EXPECT_NE(prop.status().message().find("may not set statistics.interval.ms"), std::string::npos)
      << prop.status().message();
}

// librdkafka's statistics as /metrics lines: the queue, and per broker its round trips (NaN
// when none was measured), its state and its counters.
TEST(KafkaStatisticsMetrics, EveryFigureIsALine) {
  kafka::Statistics s;
  s.queue_messages = 12;
  s.queue_bytes = 3400;
  kafka::Statistics::Broker up;
  up.name = "10.0.0.1:9092/1";
  up.node_id = 1;
  up.state = "UP";
  up.rtt_samples = 5;
  up.rtt_p50_us = 1500;
  up.rtt_p99_us = 250000;
  up.tx_errors = 2;
  up.tx_retries = 3;
  up.request_timeouts = 4;
  up.connects = 5;
  up.disconnects = 6;
  kafka::Statistics::Broker down;
  down.name = "odd\"host:9092/2";
  down.state = "DOWN";
  s.brokers = {up, down};
  const std::string m = RenderKafkaStatistics(s);
  for (const char* want : {
           "# TYPE rtb_kafka_producer_queue_messages gauge\nrtb_kafka_producer_queue_messages 12\n",
           "\nrtb_kafka_producer_queue_bytes 3400\n",
           "\nrtb_kafka_broker_rtt_p50_seconds{broker=\"10.0.0.1:9092/1\"} 0.001500\n",
           "\nrtb_kafka_broker_rtt_p99_seconds{broker=\"10.0.0.1:9092/1\"} 0.250000\n",
           "\nrtb_kafka_broker_rtt_p50_seconds{broker=\"odd\\\"host:9092/2\"} NaN\n",
           "\nrtb_kafka_broker_state{broker=\"10.0.0.1:9092/1\",state=\"UP\"} 1\n",
           "\nrtb_kafka_broker_state{broker=\"odd\\\"host:9092/2\",state=\"DOWN\"} 1\n",
           "# TYPE rtb_kafka_broker_tx_errors_total counter\n",
           "\nrtb_kafka_broker_tx_errors_total{broker=\"10.0.0.1:9092/1\"} 2\n",
           "\nrtb_kafka_broker_tx_retries_total{broker=\"10.0.0.1:9092/1\"} 3\n",
           "\nrtb_kafka_broker_request_timeouts_total{broker=\"10.0.0.1:9092/1\"} 4\n",
           "\nrtb_kafka_broker_connects_total{broker=\"10.0.0.1:9092/1\"} 5\n",
           "\nrtb_kafka_broker_disconnects_total{broker=\"10.0.0.1:9092/1\"} 6\n",
           "\nrtb_kafka_broker_disconnects_total{broker=\"odd\\\"host:9092/2\"} 0\n",
       }) {
    EXPECT_NE(m.find(want), std::string::npos) << want << "\nnot in:\n" << m;
  }
  // No broker known yet: the queue alone.
  const std::string none = RenderKafkaStatistics(kafka::Statistics{});
  EXPECT_NE(none.find("rtb_kafka_producer_queue_messages 0\n"), std::string::npos) << none;
  EXPECT_EQ(none.find("rtb_kafka_broker"), std::string::npos) << none;
}

TEST(BidderConfig, TheAbSectionIsReadAndChecked) {
  auto def = LoadDefaultWith("", "");
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(def->ab.learned_share, 1.0);  // no test unless asked for
  auto half = LoadDefaultWith("learned_share: 1.0", "learned_share: 0.5");
  ASSERT_TRUE(half.ok()) << half.status().message();
  EXPECT_EQ(half->ab.learned_share, 0.5);
  for (const char* bad : {"learned_share: 1.5", "learned_share: -0.1"}) {
    auto b = LoadDefaultWith("learned_share: 1.0", bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("ab.learned_share"), std::string::npos)
        << b.status().message();
  }
  auto typo = LoadDefaultWith("learned_share: 1.0", "learned_shares: 0.5");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("learned_shares"), std::string::npos)
      << typo.status().message();
  EXPECT_FALSE(LoadDefaultWith("salt: rtb-ab-1", "salt: \"\"").ok());
}

TEST(BidderConfig, ExpectedBidRateIsCheckedAndSizesTheReservationTables) {
  auto def = LoadDefaultWith("", "");
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(def->expected_bids_per_second, 0);
  for (const char* bad : {"expected_bids_per_second: -1", "expected_bids_per_second: 100000000"}) {
    auto b = LoadDefaultWith("expected_bids_per_second: 0", bad);  // x 60 s: over 2^32 bids
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("expected_bids_per_second"), std::string::npos)
        << b.status().message();
  }
  // Sized at start: slots for 200K bids/s over a 1 s TTL at the fullest shard limit (3/4), and
  // none of that without the setting.
  auto slots = [](int rate) -> int64_t {
    auto cfg = LoadDefaultWith("expected_bids_per_second: 0",
                               "expected_bids_per_second: " + std::to_string(rate));
    EXPECT_TRUE(cfg.ok());
    cfg->reservation_timeout_ms = 1000;
    cfg->state_path = ::testing::TempDir() + "/bidder_presize_" + std::to_string(rate);
    std::filesystem::remove_all(cfg->state_path);
    auto b = Bidder::Create(*cfg);
    EXPECT_TRUE(b.ok()) << b.status().message();
    const std::string m = (*b)->Metrics().body;
    const std::string key = "\nrtb_reservation_slots ";
    const size_t at = m.find(key);
    EXPECT_NE(at, std::string::npos) << m;
    (*b)->Shutdown();
    std::filesystem::remove_all(cfg->state_path);
    return std::stoll(m.substr(at + key.size()));
  };
  const int64_t presized = slots(200000), small = slots(0);
  EXPECT_GE(presized * 3, int64_t{200000} * 4);
  EXPECT_LT(small * 3, int64_t{200000} * 4);
}

}  // namespace
}  // namespace rtb::bidder
