// One full DCMAB update (every agent: critic Eq. 9-10, actor Eq. 11, soft update) at batch 256
// and 32, N = L = 3, paper network sizes, one intra-op thread; the update's large matrix
// products alone (its fp32 floor); and one replay-store insert and one sample of a minibatch.
// Compare with bench/python/dcmab_update.py (same update in Python PyTorch) in the same run:
// bench/run_learner_bench.sh.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

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

// The floor under any implementation of that update in fp32: its products with an actor's
// 300x300 layer 2 (rows = batch x L = 3 clusters), alone, through the same OpenBLAS. Per agent:
// the target actor's forward at s' on the rows that go on (Eq. 9; 2 of 3 rows in this batch,
// as in BM_DcmabUpdate), and the actor's forward, weight gradient and input gradient (Eq. 11).
// The Python baseline does these on every row, and 6 more (target actions per agent).
void BM_Layer2GemmFloor(benchmark::State& state) {
  torch::set_num_threads(1);
  const int batch = static_cast<int>(state.range(0)), rows = batch * 3, h = 300, agents = 3;
  const int live_rows = (batch - batch / 3) * 3;  // rows k % 3 != 2 go on
  std::vector<float> x(static_cast<size_t>(rows * h), 0.5f), w(static_cast<size_t>(h * h), 0.25f);
  std::vector<float> y(x.size()), gw(w.size());
  for (auto _ : state) {
    for (int i = 0; i < agents; ++i) {
      for (const int m : {live_rows, rows}) {  // target actor at s', actor at s: y = x W^T
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, h, h, 1.0f, x.data(), h, w.data(),
                    h, 0.0f, y.data(), h);
      }
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h, h, rows, 1.0f, y.data(), h, x.data(),
                  h, 0.0f, gw.data(), h);  // dW = dY^T X
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, h, h, 1.0f, y.data(), h,
                  w.data(), h, 0.0f, x.data(), h);  // dX = dY W
    }
    benchmark::DoNotOptimize(x.data());
  }
}
BENCHMARK(BM_Layer2GemmFloor)->Arg(256)->Arg(32)->Unit(benchmark::kMillisecond);

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
