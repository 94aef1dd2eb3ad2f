// One full DCMAB update (every agent: critic Eq. 9-10, actor Eq. 11, soft update) at batch 256
// and 32, N = L = 3, paper network sizes, one intra-op thread; and one replay-store insert and
// one sample of a minibatch. Compare with bench/python/dcmab_update.py (same update in Python
// PyTorch) in the same run: bench/run_learner_bench.sh.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "rtb/core/memory.h"
#include "rtb/learner/agents.h"
#include "rtb/learner/replay_store.h"

namespace {

using rtb::learn::Transition;

rtb::learn::Normalizer Norm() {
  rtb::learn::Normalizer n;
  n.agents = 3;
  n.clusters = 3;
  return n;
}

Transition Random(rtb::Rng& rng, bool done) {
  const auto n = Norm();
  Transition t;
  auto fill = [&](std::vector<float>& v, int len) {
    v.resize(static_cast<size_t>(len));
    for (auto& x : v) x = static_cast<float>(rng.Uniform());
  };
  fill(t.s, n.StateDim());
  fill(t.d, 9);
  fill(t.a, 9);
  fill(t.r, 3);
  fill(t.s2, n.StateDim());
  fill(t.d2, 9);
  t.done = done;
  return t;
}

void BM_DcmabUpdate(benchmark::State& state) {
  torch::set_num_threads(1);
  rtb::learn::HyperParams hp;
  hp.batch_size = static_cast<int>(state.range(0));
  auto spec = rtb::learn::MakeAlgoSpec("dcmab", 3, {}, hp);
  rtb::learn::MultiAgentLearner learner(*spec, hp, Norm(), 1);
  rtb::Rng rng(1);
  std::vector<Transition> batch;
  for (int k = 0; k < hp.batch_size; ++k) batch.push_back(Random(rng, k % 3 == 2));
  const std::vector<std::vector<Transition>> batches{batch};
  for (auto _ : state) benchmark::DoNotOptimize(learner.Update(batches).updates);
}
BENCHMARK(BM_DcmabUpdate)->Arg(256)->Arg(32)->Unit(benchmark::kMillisecond);

void BM_ReplayInsert(benchmark::State& state) {
  const std::string dir = "/tmp/rtb_bench_replay_insert";
  std::filesystem::remove_all(dir);
  auto store = rtb::learn::OpenRocksDbReplayStore(dir);
  rtb::Rng rng(2);
  const Transition t = Random(rng, false);
  for (auto _ : state) benchmark::DoNotOptimize((*store)->Append(t).ok());
  store->reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_ReplayInsert)->Unit(benchmark::kMicrosecond);

void BM_ReplaySample(benchmark::State& state) {
  const std::string dir = "/tmp/rtb_bench_replay_sample";
  std::filesystem::remove_all(dir);
  auto store = rtb::learn::OpenRocksDbReplayStore(dir);
  rtb::Rng rng(3);
  for (int k = 0; k < 10000; ++k) (void)(*store)->Append(Random(rng, k % 3 == 2));
  for (auto _ : state)
    benchmark::DoNotOptimize((*store)->Sample(static_cast<size_t>(state.range(0)), rng)->size());
  store->reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_ReplaySample)->Arg(256)->Arg(32)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  // As rtb-learner does (rtb/learner/agents.h); RTB_BENCH_GLIBC_MALLOC=1 measures without it.
  const char* plain = std::getenv("RTB_BENCH_GLIBC_MALLOC");
  if (plain == nullptr || std::string(plain) != "1")
    rtb::KeepFreedMemoryForReuse(rtb::learn::kTrainMmapThreshold, rtb::learn::kTrainTrimThreshold);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
