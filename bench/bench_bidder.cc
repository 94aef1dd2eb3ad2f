// The bidder's request path without the network, stage by stage: decode, the whole HandleBid
// (decision, reservations, response, three events to the embedded Kafka), and the two encoders.
// Tells where the per-request cost of bench/run_load_bench.sh's full path goes.
// Usage: build/release/bench/bench_bidder
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "rtb/bidder/bidder.h"
#include "rtb/bidder/budget.h"
#include "rtb/bidder/config.h"
#include "rtb/bidder/gzip.h"
#include "rtb/bidder/notice.h"
#include "rtb/bidder/notice_sign.h"
#include "rtb/core/events.h"

namespace {

using namespace rtb;
using namespace rtb::bidder;

std::string Fixture() {
  for (const char* p :
       {RTB_SOURCE_DIR "/tests/fixtures/openrtb/2.6/bid-request-simple-banner.json",
        RTB_SOURCE_DIR "/tests/fuzz/corpus/openrtb/bid-request-simple-banner.json"}) {
    std::ifstream in(p);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
  }
  return "";
}

constexpr const char* kSecret = "a benchmark secret, long enough";

struct World {
  std::string dir, body;
  std::unique_ptr<Bidder> bidder;
  // leased: a bidder sharing the budgets under the name "bench-a" (on the embedded Kafka,
  // with no coordinator: enough for the notices of other bidders' bids, which it forwards).
  explicit World(bool leased = false) {
    std::string name = leased ? "bench_bidder_leased_" : "bench_bidder_";
    name += std::to_string(::getpid());
    dir = (std::filesystem::temp_directory_path() / name).string();
    std::filesystem::create_directories(dir);
    auto cfg = LoadBidderConfig(RTB_SOURCE_DIR "/configs/bidder/default.yaml");
    if (!cfg.ok()) std::abort();
    cfg->state_path = dir + "/state";
    cfg->kafka.spill_path = dir + "/spill.jsonl";
    cfg->notice_secret = kSecret;
    for (auto& a : cfg->advertisers) a.daily_budget = Micros(int64_t{1'000'000'000'000'000});
    cfg->leases.enabled = leased;
    cfg->leases.name = "bench-a";
    auto b = Bidder::Create(*cfg);
    if (!b.ok()) std::abort();
    bidder = std::move(*b);
    body = Fixture();
  }
  ~World() {
    bidder.reset();
    std::filesystem::remove_all(dir);
  }
};

World& TheWorld() {
  static World w;
  return w;
}

World& LeasedWorld() {
  static World w(true);
  return w;
}

void BM_Decode(benchmark::State& state) {
  World& w = TheWorld();
  RequestDecoder dec(w.bidder->decode_limits());
  for (auto _ : state) benchmark::DoNotOptimize(dec.Decode(w.body));
}
BENCHMARK(BM_Decode);

// The same request body gzipped (Content-Encoding: gzip): inflated (as the server does, into a
// kept buffer) and decoded; against BM_Decode, what a gzip body adds per request.
void BM_DecodeGzip(benchmark::State& state) {
  World& w = TheWorld();
  RequestDecoder dec(w.bidder->decode_limits());
  const std::string gz = GzipDeflate(w.body);
  std::string inflated;
  for (auto _ : state) {
    if (!GzipInflate(gz, 1 << 20, &inflated).ok()) {
      state.SkipWithError("inflate failed");
      break;
    }
    benchmark::DoNotOptimize(dec.Decode(inflated));
  }
}
BENCHMARK(BM_DecodeGzip);

// A bid response gzipped (Accept-Encoding: gzip): what the answer's compression costs.
void BM_GzipResponse(benchmark::State& state) {
  World& w = TheWorld();
  RequestDecoder dec(w.bidder->decode_limits());
  const HttpResult r = w.bidder->HandleBid(w.body, NowSteadyUs(), dec, "2.6");
  for (auto _ : state) benchmark::DoNotOptimize(GzipDeflate(r.body));
  state.counters["bytes"] = static_cast<double>(r.body.size());
  state.counters["gzip_bytes"] = static_cast<double>(GzipDeflate(r.body).size());
}
BENCHMARK(BM_GzipResponse);

void BM_HandleBid(benchmark::State& state) {
  World& w = TheWorld();
  RequestDecoder dec(w.bidder->decode_limits());
  for (auto _ : state) {
    HttpResult r = w.bidder->HandleBid(w.body, NowSteadyUs(), dec, "2.6");
    if (r.status != 200) {
      state.SkipWithError("no bid");
      break;
    }
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_HandleBid);

// Target 6 of docs/reliability.md: a hostile body is refused (4xx) within 1 ms. The whole
// HandleBid of each kind, against BM_HandleBid's valid request in the same run. (A body over
// the size limit never gets here: the server closes the connection once the limit is read.)
const std::vector<std::pair<std::string, std::string>>& HostileBodies() {
  static const auto* kBodies = new std::vector<std::pair<std::string, std::string>>{
      {"truncated", R"({"id":"x","imp":[{"id":"1","banner":{"w":300)"},
      {"not_json", "hello"},
      {"wrong_types", R"({"id":5,"imp":"nope"})"},
      {"no_impressions", R"({"id":"x","imp":[]})"},
      {"depth_100k", std::string(100000, '[') + std::string(100000, ']')},
      {"at_size_limit_1MB", "{\"id\":\"x\",\"pad\":\"" + std::string((1 << 20) - 40, 'x') +
                                "\",\"imp\":[{\"id\":\"\"}]}"},
  };
  return *kBodies;
}

void BM_HandleHostile(benchmark::State& state) {
  World& w = TheWorld();
  RequestDecoder dec(w.bidder->decode_limits());
  const auto& [name, body] = HostileBodies()[static_cast<size_t>(state.range(0))];
  state.SetLabel(name);
  for (auto _ : state) {
    HttpResult r = w.bidder->HandleBid(body, NowSteadyUs(), dec, "2.6");
    if (r.status < 400 || r.status >= 500) {
      // "no impressions" is answered 204 (no bid), as OpenRTB asks.
      if (!(name == "no_impressions" && r.status == 204)) {
        state.SkipWithError("not refused");
        break;
      }
    }
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_HandleHostile)->DenseRange(0, 5);

void BM_EncodeEvent(benchmark::State& state) {
  Event e;
  e.type = "bid";
  e.eid = "1763712000000-12345-1234567";
  e.ts_ms = 1763712000000;
  e.auction_id = "80ce30c53c16e6ede735f123ef6e32361bfc7b22";
  e.imp_id = std::string(1, '1');
  e.advertiser = 3;
  e.agent = 2;
  e.cluster = 1;
  e.price_micros = 1'234'567;
  e.cpc_micros = 2'200'000;
  e.pctr = 0.00123456;
  e.pcvr = 0.0456;
  e.alpha = 0.1234;
  e.computed = {1, 1, 1};
  for (auto _ : state) benchmark::DoNotOptimize(EncodeEvent(e));
}
BENCHMARK(BM_EncodeEvent);

// One candidate's budget step on the bid path: a reservation and its release (a loss notice),
// without (0) and with (1) the lease client's NoteCharge before it (bid_handler.cc, leases on:
// two relaxed atomic adds on the slot). The pair's ratio in one run is what leases add per
// candidate here.
void BM_ReserveRelease(benchmark::State& state) {
  const bool note = state.range(0) != 0;
  BudgetLedger ledger({Micros(int64_t{1'000'000'000'000'000})}, {Micros(0)}, 1024);
  const Key128 key = HashKey("1234567893-r17/1/7");
  const Micros charge(2'500'000);
  for (auto _ : state) {
    if (note) ledger.NoteCharge(0, charge);
    benchmark::DoNotOptimize(ledger.TryReserve(0, key, charge, 1'000, 61'000));
    benchmark::DoNotOptimize(ledger.Release(key));
  }
}
BENCHMARK(BM_ReserveRelease)->Arg(0)->Arg(1);

// One bid's notice signature (HMAC-SHA-256 over its terms), and its three notice URLs.
void BM_SignNotice(benchmark::State& state) {
  auto signer = rtb::bidder::NoticeSigner::Create("a benchmark secret, long enough");
  const rtb::bidder::SignedBid b{"1234567893-r17",  "1",   7, rtb::Micros(2'500'000),
                                 1'700'000'000'000, false, 3};
  for (auto _ : state) benchmark::DoNotOptimize((*signer)->Sign(b));
}
BENCHMARK(BM_SignNotice);

void BM_NoticeUrls(benchmark::State& state) {
  using rtb::bidder::NoticeType;
  for (auto _ : state) {
    const std::string q = rtb::bidder::SignedNoticeQuery(
        {"1234567893-r17", "1", 7, rtb::Micros(2'500'000), 1'700'000'000'000, false, 3},
        "0123456789abcdef0123456789abcdef");
    benchmark::DoNotOptimize(rtb::bidder::NoticeUrl("http://127.0.0.1:8080", NoticeType::kWin, q));
    benchmark::DoNotOptimize(
        rtb::bidder::NoticeUrl("http://127.0.0.1:8080", NoticeType::kBilling, q));
    benchmark::DoNotOptimize(rtb::bidder::NoticeUrl("http://127.0.0.1:8080", NoticeType::kLoss, q));
  }
}
BENCHMARK(BM_NoticeUrls);

// One billing notice on the notice path (parse, signature, budget, the state store's one
// WriteBatch, the event), each for a new bid: what an exchange's billing costs the bidder.
// owner: the bid's owner in its URL ("" = none, as with one bidder).
void Notices(benchmark::State& state, World& w, const std::string& owner,
             const std::string& want_body) {
  auto signer = NoticeSigner::Create(kSecret);
  const uint32_t adv = w.bidder->config().advertisers[0].id;
  // Across the runs google-benchmark makes of this function: every notice is for a new bid
  // (a repeated one would measure the duplicate path).
  static int64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string auction = "bench-notice-" + std::to_string(n++);
    SignedBid b{auction, "1", adv, Micros(2'500'000), NowUnixMs(), false, 0};
    b.owner = owner;
    std::string url = NoticeUrl("", NoticeType::kBilling, SignedNoticeQuery(b, (*signer)->Sign(b)));
    url.replace(url.find("${AUCTION_PRICE}"), 16, "2.0");
    state.ResumeTiming();
    HttpResult r = w.bidder->HandleNotice(url);
    if (r.status != 200 || r.body != want_body) {
      state.SkipWithError(("not booked: " + std::to_string(r.status) + " " + r.body).c_str());
      break;
    }
  }
}

// A notice of this bidder's own bid, booked here (one bidder, no owner in the URL).
void BM_HandleNotice(benchmark::State& state) { Notices(state, TheWorld(), "", ""); }
BENCHMARK(BM_HandleNotice);

// A notice of another bidder's bid: a dedupe key and the notice into the outbox (one state
// store write), the notice to the owner through Kafka; the owner then books it as above.
void BM_ForwardNotice(benchmark::State& state) {
  Notices(state, LeasedWorld(), "bench-b", "forwarded: bench-b\n");
}
BENCHMARK(BM_ForwardNotice);

}  // namespace

BENCHMARK_MAIN();
