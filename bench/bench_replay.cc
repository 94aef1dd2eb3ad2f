// Replay speed (issue: 156K-line compact log with Lin-Bid under the RLB protocol in < 0.1 s in
// process). The log is the simulator's synthetic campaign (GenerateCompactLog), 156,000 lines.
#include <benchmark/benchmark.h>

#include "rtb/simulator/replay.h"
#include "rtb/simulator/rlb_dp.h"

namespace {

const std::string& Text() {
  static const std::string t = rtb::sim::GenerateCompactLog(156000, 7, nullptr);
  return t;
}

void BM_ParseCompactLog_156K(benchmark::State& state) {
  for (auto _ : state) {
    auto log = rtb::sim::ParseCompactLog(Text(), "bench", {});
    benchmark::DoNotOptimize(log);
  }
  state.SetItemsProcessed(state.iterations() * 156000);
}
BENCHMARK(BM_ParseCompactLog_156K)->Unit(benchmark::kMillisecond);

void BM_ReplayRlbLin_156K(benchmark::State& state) {
  rtb::sim::CampaignInfo info;
  rtb::sim::GenerateCompactLog(156000, 7, &info);
  const auto log = rtb::sim::ParseCompactLog(Text(), "bench", {}).value();
  for (auto _ : state) {
    auto lin = rtb::sim::LinBid(80, info.CtrTrain());
    benchmark::DoNotOptimize(rtb::sim::ReplayRlb(log.auctions, info, {1.0 / 32, 1000, 300}, *lin));
  }
  state.SetItemsProcessed(state.iterations() * 156000);
}
BENCHMARK(BM_ReplayRlbLin_156K)->Unit(benchmark::kMillisecond);

void BM_ParseAndReplayRlbLin_156K(benchmark::State& state) {
  rtb::sim::CampaignInfo info;
  rtb::sim::GenerateCompactLog(156000, 7, &info);
  for (auto _ : state) {
    const auto log = rtb::sim::ParseCompactLog(Text(), "bench", {}).value();
    auto lin = rtb::sim::LinBid(80, info.CtrTrain());
    benchmark::DoNotOptimize(rtb::sim::ReplayRlb(log.auctions, info, {1.0 / 32, 1000, 300}, *lin));
  }
  state.SetItemsProcessed(state.iterations() * 156000);
}
BENCHMARK(BM_ParseAndReplayRlbLin_156K)->Unit(benchmark::kMillisecond);

// RLB's dynamic program, V(n, b) for N = 1000 and the episode budget of c0 = 1 / range(0)
// (1/32 .. 1/2) on the synthetic campaign's price histogram.
void BM_RlbValueFunction(benchmark::State& state) {
  rtb::sim::CampaignInfo info;
  rtb::sim::GenerateCompactLog(156000, 7, &info);
  const rtb::sim::RlbProtocol p{1.0 / static_cast<double>(state.range(0)), 1000, 300};
  for (auto _ : state) {
    auto v = rtb::sim::RlbForCampaign(info, p);
    benchmark::DoNotOptimize(v);
  }
  state.counters["B"] = static_cast<double>(rtb::sim::RlbEpisodeBudget(info, p));
}
BENCHMARK(BM_RlbValueFunction)->Arg(32)->Arg(8)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
