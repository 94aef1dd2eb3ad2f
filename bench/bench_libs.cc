// The bidder's hand-written pieces against the Debian library that does the same job, on the
// work the bid path gives them (docs/benchmarks.md, "Library comparisons"):
//   - notice query decoding: the bidder's split + UrlDecode against Boost.URL's parse_query and
//     pct_string_view::decode (libboost-url1.81-dev);
//   - per-bid state: FlatTable (boost::unordered_flat_map of 128-bit key hashes with the
//     bidder's staggered growth and shrink-after-peak) against the bare boost map, in the churn
//     a shard sees (insert the new bid's entry, look it up at the notice, erase the oldest),
//     with bytes per live entry. (The hand-written linear-probing table FlatTable was before
//     ran this at 158 ns against boost's 74 ns, 300K entries, at commit 4a2be5f.)
//   - metrics: a counter increment and a latency observation (what every request does) and a
//     whole /metrics page, the bidder's atomics + snprintf against prometheus-cpp
//     (prometheus-cpp-dev).
// Usage: build/release/bench/bench_libs [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/url/encoding_opts.hpp>
#include <boost/url/parse_query.hpp>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "rtb/bidder/flat_table.h"
#include "rtb/bidder/metrics.h"
#include "rtb/bidder/notice.h"

namespace {

using rtb::bidder::FlatTable;
using rtb::bidder::HashKey;
using rtb::bidder::Key128;

// A billing notice's query as the bidder signs it (percent-encoded auction id, price macro
// already substituted by the exchange).
const std::string kQuery =
    "auction=80ce30c5-3c16-e6ed%2Fe735&imp=1&adv=7&bp=2.500000&ts=1700000000000&x=0"
    "&sig=0123456789abcdef0123456789abcdef&price=1.234567";

// The bidder's loop (bidder/src/notice.cc ParseNotice): split on '&' and '=', decode each value.
bool DecodeOurs(std::string_view query, std::vector<std::pair<std::string, std::string>>* out) {
  out->clear();
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? "" : query.substr(amp + 1);
    const size_t eq = kv.find('=');
    std::string v;
    if (eq != std::string_view::npos && !rtb::bidder::UrlDecode(kv.substr(eq + 1), &v)) {
      return false;
    }
    out->emplace_back(std::string(kv.substr(0, eq)), std::move(v));
  }
  return true;
}

bool DecodeBoost(std::string_view query, std::vector<std::pair<std::string, std::string>>* out) {
  out->clear();
  auto params = boost::urls::parse_query(query);
  if (!params) return false;
  boost::urls::encoding_opts opt;
  opt.space_as_plus = true;
  for (auto p : *params) {
    out->emplace_back(std::string(p.key.data(), p.key.size()),
                      p.has_value ? p.value.decode(opt) : std::string());
  }
  return true;
}

void BM_NoticeQuery_Ours(benchmark::State& state) {
  std::vector<std::pair<std::string, std::string>> kv;
  for (auto _ : state) {
    if (!DecodeOurs(kQuery, &kv)) state.SkipWithError("decode");
    benchmark::DoNotOptimize(kv.data());
  }
}
BENCHMARK(BM_NoticeQuery_Ours);

void BM_NoticeQuery_BoostUrl(benchmark::State& state) {
  std::vector<std::pair<std::string, std::string>> kv;
  for (auto _ : state) {
    if (!DecodeBoost(kQuery, &kv)) state.SkipWithError("decode");
    benchmark::DoNotOptimize(kv.data());
  }
}
BENCHMARK(BM_NoticeQuery_BoostUrl);

// ---- per-bid state ------------------------------------------------------------------------

struct Reservation {  // BudgetLedger's entry
  size_t adv;
  int64_t amount;
  int64_t deadline_ms;
};

struct Key128Hash {
  // The key is already a hash; its second word is as good as any mix of it. avalanching tells
  // boost not to mix it again (FlatTable uses it the same way).
  using is_avalanching = void;
  size_t operator()(const Key128& k) const { return static_cast<size_t>(k.b); }
};

std::vector<Key128> Keys(size_t n) {
  std::vector<Key128> keys;
  keys.reserve(n);
  char buf[64];
  for (size_t i = 0; i < n; ++i) {
    const int len = std::snprintf(buf, sizeof buf, "auction-%zu/1/%zu", i, i % 7);
    keys.push_back(HashKey(std::string_view(buf, static_cast<size_t>(len))));
  }
  return keys;
}

// One shard holding `live` entries: each iteration inserts a new bid's entry, finds it (the
// notice) and erases the oldest (its settlement or expiry). Counters: bytes per live entry.
template <typename Table, typename Insert, typename Find, typename Erase, typename Bytes>
void Churn(benchmark::State& state, Table& t, Insert insert, Find find, Erase erase, Bytes bytes) {
  const size_t live = static_cast<size_t>(state.range(0));
  const std::vector<Key128> keys = Keys(live * 4);
  size_t head = 0, tail = 0;
  for (; head < live; ++head) insert(t, keys[head]);
  for (auto _ : state) {
    const Key128 k = keys[head++ % keys.size()];
    insert(t, k);
    benchmark::DoNotOptimize(find(t, k));
    erase(t, keys[tail++ % keys.size()]);
  }
  state.counters["bytes_per_entry"] = static_cast<double>(bytes(t)) / static_cast<double>(live);
}

// Bytes of boost's layout for `slots` slots: the slots plus one 16-byte metadata word per
// group of 15.
template <typename V>
size_t GroupBytes(size_t slots) {
  return slots * (sizeof(Key128) + sizeof(V)) + (slots / 15 + 1) * 16;
}

// FlatTable is boost::unordered_flat_map plus the bidder's growth and shrink rules: this pair
// measures what those rules cost.
void BM_BidState_FlatTable(benchmark::State& state) {
  FlatTable<Reservation> t(static_cast<size_t>(state.range(0)));
  Churn(
      state, t,
      [](auto& m, Key128 k) {
        m.Emplace(k, Reservation{1, 2'500'000, 60'000});
      },
      [](auto& m, Key128 k) { return m.Find(k); }, [](auto& m, Key128 k) { m.Erase(k); },
      [](auto& m) { return GroupBytes<Reservation>(m.capacity()); });
}
BENCHMARK(BM_BidState_FlatTable)->Arg(10'000)->Arg(300'000);

void BM_BidState_BoostFlatMap(benchmark::State& state) {
  boost::unordered_flat_map<Key128, Reservation, Key128Hash> t;
  t.reserve(static_cast<size_t>(state.range(0)));
  Churn(
      state, t,
      [](auto& m, Key128 k) {
        m.emplace(k, Reservation{1, 2'500'000, 60'000});
      },
      [](auto& m, Key128 k) {
        auto it = m.find(k);
        return it == m.end() ? nullptr : &it->second;
      },
      [](auto& m, Key128 k) { m.erase(k); },
      [](auto& m) { return GroupBytes<Reservation>(m.bucket_count()); });
}
BENCHMARK(BM_BidState_BoostFlatMap)->Arg(10'000)->Arg(300'000);

// ---- metrics ---------------------------------------------------------------------------------

void BM_CounterInc_Ours(benchmark::State& state) {
  static rtb::bidder::Counter c;
  for (auto _ : state) c.Inc();
  benchmark::DoNotOptimize(c.Get());
}
BENCHMARK(BM_CounterInc_Ours)->Threads(1)->Threads(2);

prometheus::Registry& PromRegistry() {
  static prometheus::Registry r;
  return r;
}
prometheus::Counter& PromCounter() {
  static prometheus::Counter& c = prometheus::BuildCounter()
                                      .Name("rtb_bids_total")
                                      .Help("Bids sent.")
                                      .Register(PromRegistry())
                                      .Add({});
  return c;
}
const prometheus::Histogram::BucketBoundaries kBounds = {
    25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3};
prometheus::Histogram& PromHistogram() {
  static prometheus::Histogram& h = prometheus::BuildHistogram()
                                        .Name("rtb_bid_latency_seconds")
                                        .Help("Bid request handling time.")
                                        .Register(PromRegistry())
                                        .Add({}, kBounds);
  return h;
}

void BM_CounterInc_PrometheusCpp(benchmark::State& state) {
  prometheus::Counter& c = PromCounter();
  for (auto _ : state) c.Increment();
  benchmark::DoNotOptimize(c.Value());
}
BENCHMARK(BM_CounterInc_PrometheusCpp)->Threads(1)->Threads(2);

void BM_LatencyObserve_Ours(benchmark::State& state) {
  static rtb::bidder::LatencyHistogram h;
  int64_t us = 0;
  for (auto _ : state) h.Observe(40 + (us++ & 255));
  benchmark::DoNotOptimize(h.count());
}
BENCHMARK(BM_LatencyObserve_Ours)->Threads(1)->Threads(2);

void BM_LatencyObserve_PrometheusCpp(benchmark::State& state) {
  prometheus::Histogram& h = PromHistogram();
  int64_t us = 0;
  for (auto _ : state) h.Observe(static_cast<double>(40 + (us++ & 255)) * 1e-6);
}
BENCHMARK(BM_LatencyObserve_PrometheusCpp)->Threads(1)->Threads(2);

// A /metrics page of the bidder's size: ~60 series (counters by label, the histogram, gauges).
void BM_MetricsPage_Ours(benchmark::State& state) {
  static rtb::bidder::Counter counters[60];
  static rtb::bidder::LatencyHistogram h;
  for (auto _ : state) {
    std::string o;
    char buf[256];
    o += "# HELP rtb_notices_total Notices by type and result.\n# TYPE rtb_notices_total "
         "counter\n";
    for (int i = 0; i < 60; ++i) {
      std::snprintf(buf, sizeof buf, "rtb_notices_total{type=\"t%d\",result=\"r%d\"} %llu\n", i / 6,
                    i % 6, static_cast<unsigned long long>(counters[i].Get()));
      o += buf;
    }
    o += h.Render("rtb_bid_latency_seconds", "Bid request handling time.");
    benchmark::DoNotOptimize(o.data());
  }
}
BENCHMARK(BM_MetricsPage_Ours);

void BM_MetricsPage_PrometheusCpp(benchmark::State& state) {
  static prometheus::Registry reg;
  static bool built = [] {
    auto& fam = prometheus::BuildCounter()
                    .Name("rtb_notices_total")
                    .Help("Notices by type and result.")
                    .Register(reg);
    for (int i = 0; i < 60; ++i) {
      char type[8], result[8];
      std::snprintf(type, sizeof type, "t%d", i / 6);
      std::snprintf(result, sizeof result, "r%d", i % 6);
      fam.Add({{"type", type}, {"result", result}});
    }
    prometheus::BuildHistogram()
        .Name("rtb_bid_latency_seconds")
        .Help("Bid request handling time.")
        .Register(reg)
        .Add({}, kBounds);
    return true;
  }();
  benchmark::DoNotOptimize(built);
  const prometheus::TextSerializer ser;
  for (auto _ : state) {
    std::string o = ser.Serialize(reg.Collect());
    benchmark::DoNotOptimize(o.data());
  }
}
BENCHMARK(BM_MetricsPage_PrometheusCpp);

}  // namespace

BENCHMARK_MAIN();
