// Simulated auctions per second on the default day (configs/simulator/default.yaml).
//
//   build/release/bench/bench_simulator
//
// BM_DefaultDay_Manual runs the whole test day (70K requests, ~1M candidates, budgets on)
// under manual bids; BM_DefaultDay_Policy under a non-trivial action table (every bid goes
// through the DCMAB formula). items_per_second = auctions (requests) per second on one core.
// The ...Scalar variants run the same days on the engine's scalar loop (UseSimd(false)): the
// version before the AVX-512 path, in the same run.
// BM_DefaultDay_PolicyNewEngine builds a new engine per day (as each evaluation did), and
// ...SharedIndex does so on the day's shared sim::DayIndex (as training now does).
// BM_BareAuction is the baseline in the same run: the GSP ranking alone over the same
// candidates, without bids, budgets or bookkeeping.
#include <benchmark/benchmark.h>

#include "rtb/core/auction.h"
#include "rtb/simulator/engine.h"
#include "rtb/simulator/simulate.h"

namespace {

const rtb::sim::Scenario& DefaultScenario() {
  static const rtb::sim::Scenario* sc = [] {
    auto cfg = rtb::sim::LoadSimulatorConfig(std::string(RTB_SOURCE_DIR) +
                                             "/configs/simulator/default.yaml");
    auto s = rtb::sim::BuildScenario(*cfg, "", "", false);
    return std::move(*s).release();
  }();
  return *sc;
}

// simd: the engine's AVX-512 path where the CPU has it; false: the scalar loop (the previous
// version, in the same run).
void RunDay(benchmark::State& state, const rtb::ActionTable& table, bool simd = true) {
  const auto& sc = DefaultScenario();
  rtb::sim::AuctionEngine e(sc.test, sc.market, sc.cfg.auction, 0.9, sc.test_budgets);
  if (e.UseSimd(simd) != simd) {
    state.SkipWithError("no AVX-512 on this CPU");
    return;
  }
  for (auto _ : state) {
    e.Reset(1);
    e.RunToEnd(table);
    benchmark::DoNotOptimize(e.advertiser_outcomes().data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(sc.test.requests()));
  state.counters["candidates_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * sc.test.candidates()), benchmark::Counter::kIsRate);
}

void BM_DefaultDay_Manual(benchmark::State& state) { RunDay(state, rtb::ActionTable(3, 3)); }
BENCHMARK(BM_DefaultDay_Manual)->Unit(benchmark::kMillisecond);
void BM_DefaultDay_ManualScalar(benchmark::State& state) {
  RunDay(state, rtb::ActionTable(3, 3), false);
}
BENCHMARK(BM_DefaultDay_ManualScalar)->Unit(benchmark::kMillisecond);

// A non-trivial table: every bid goes through the DCMAB formula.
rtb::ActionTable PolicyTable() {
  rtb::ActionTable t(3, 3);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) t.set(i, j, -0.7 + 0.1 * i + 0.05 * j);
  }
  return t;
}

void BM_DefaultDay_Policy(benchmark::State& state) { RunDay(state, PolicyTable()); }
BENCHMARK(BM_DefaultDay_Policy)->Unit(benchmark::kMillisecond);
void BM_DefaultDay_PolicyScalar(benchmark::State& state) { RunDay(state, PolicyTable(), false); }
BENCHMARK(BM_DefaultDay_PolicyScalar)->Unit(benchmark::kMillisecond);

// The policy day with a new engine every time, on `index` (null: the engine builds its own).
void RunNewEngineDays(benchmark::State& state, std::shared_ptr<const rtb::sim::DayIndex> index) {
  const auto& sc = DefaultScenario();
  const rtb::ActionTable t = PolicyTable();
  for (auto _ : state) {
    rtb::sim::AuctionEngine e(sc.test, sc.market, sc.cfg.auction, 0.9, sc.test_budgets,
                              rtb::sim::AuctionEngine::kDefaultBurnBuckets, index);
    e.RunToEnd(t);
    benchmark::DoNotOptimize(e.advertiser_outcomes().data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(sc.test.requests()));
}

// What a fresh evaluation paid: construction, allocation and the per-candidate precomputation
// on top of BM_DefaultDay_Policy.
void BM_DefaultDay_PolicyNewEngine(benchmark::State& state) { RunNewEngineDays(state, nullptr); }
BENCHMARK(BM_DefaultDay_PolicyNewEngine)->Unit(benchmark::kMillisecond);

// On the day's shared index (sim::IndexDay), as training now does.
void BM_DefaultDay_PolicyNewEngineSharedIndex(benchmark::State& state) {
  const auto& sc = DefaultScenario();
  RunNewEngineDays(state, rtb::sim::IndexDay(sc.test, sc.market));
}
BENCHMARK(BM_DefaultDay_PolicyNewEngineSharedIndex)->Unit(benchmark::kMillisecond);

void BM_BareAuction(benchmark::State& state) {
  const auto& day = DefaultScenario().test;
  rtb::SlotAuction a(3, 500);
  rtb::SlotResult out[rtb::kMaxSlots];
  for (auto _ : state) {
    int64_t won = 0;
    for (size_t r = 0; r < day.requests(); ++r) {
      a.Reset();
      for (uint32_t c = day.begin[r]; c < day.begin[r + 1]; ++c) {
        a.Offer({static_cast<double>(day.bid[c]) * day.pctr[c], day.adv[c], c});
      }
      won += a.Resolve(out);
    }
    benchmark::DoNotOptimize(won);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(day.requests()));
}
BENCHMARK(BM_BareAuction)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
