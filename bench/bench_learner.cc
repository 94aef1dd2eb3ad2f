// One full DCMAB update (every agent: critic Eq. 9-10, actor Eq. 11, soft update) at batch 256
// and 32, N = L = 3, paper network sizes, one intra-op thread, as training runs it (ExactMlp) and
// through autograd (the previous version, the same floats); the update's large matrix products
// alone (its fp32 floor); one optimiser step with normal and with subnormal moments, flushed
// and kept; and one replay-store insert and one sample of a minibatch.
// Compare with bench/python/dcmab_update.py (same update in Python PyTorch) in the same run:
// bench/run_learner_bench.sh. Runs on the kernels training uses (PinNumericKernels).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels.h"
#include "maddpg.h"
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

// The previous version in the same run: the same update (the same floats, bit for bit) through
// torch::nn modules and autograd (Maddpg::reference_autograd).
void BM_DcmabUpdateAutograd(benchmark::State& state) {
  torch::set_num_threads(1);
  rtb::learn::HyperParams hp;
  hp.batch_size = static_cast<int>(state.range(0));
  auto spec = rtb::learn::MakeAlgoSpec("dcmab", 3, {}, hp);
  rtb::learn::Maddpg alg(*spec, hp, Norm());
  alg.reference_autograd = true;
  rtb::Rng rng(1);
  std::vector<Transition> batch;
  for (int k = 0; k < hp.batch_size; ++k) batch.push_back(Random(rng, k % 3 == 2));
  for (auto _ : state) {
    rtb::learn::UpdateStats stats;
    alg.Update(rtb::learn::MakeBatch(batch), &stats);
    benchmark::DoNotOptimize(stats.updates);
  }
}
BENCHMARK(BM_DcmabUpdateAutograd)->Arg(256)->Arg(32)->Unit(benchmark::kMillisecond);

// Row-major products through OpenBLAS, the shapes of a Linear layer (the floor benchmarks).
void Gemm(bool ta, bool tb, int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, c, n);
}
// y[m, n] = x[m, k] W^T, W [n, k]: a Linear layer's forward.
void Fwd(int m, int k, int n, const float* x, const float* w, float* y) {
  Gemm(false, true, m, n, k, x, w, y);
}
// dW[n, k] = dY^T[n, m] X[m, k] and (with_dx) dX[m, k] = dY[m, n] W[n, k]: its backward.
void Bwd(int m, int k, int n, const float* x, const float* w, const float* dy, float* dw,
         float* dx) {
  Gemm(true, false, n, k, m, dy, x, dw);
  if (dx != nullptr) Gemm(false, false, m, k, n, dy, w, dx);
}

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
      Fwd(live_rows, h, h, x.data(), w.data(), y.data());                  // target actor at s'
      Fwd(rows, h, h, x.data(), w.data(), y.data());                       // actor at s
      Bwd(rows, h, h, x.data(), w.data(), y.data(), gw.data(), x.data());  // dW, dX
    }
    benchmark::DoNotOptimize(x.data());
  }
}
BENCHMARK(BM_Layer2GemmFloor)->Arg(256)->Arg(32)->Unit(benchmark::kMillisecond);

// Every matrix product the update cannot do without, with nothing else (no bias, activation,
// loss, optimiser or soft update), through the same OpenBLAS: a lower bound on the update's
// time in fp32 on this core, whatever the code around the products. Per agent, with R = 3B
// actor rows (B rows x L = 3 clusters), R' = the rows that go on (2 in 3), actor 23-300-300-1,
// critic 42-100 then 109-100-1 (9 joint actions joined at layer 2):
//   Eq. (9):  target actor at s' (R' rows, 3 layers), target critic at s' (B' rows, 3 layers);
//   Eq. (10): critic at s (B rows) forward, its weight gradients (3 layers) and the input
//             gradient of layers 3 and 2 (layer 1's input gradient is not needed);
//   Eq. (11): actor at s (R rows) forward, its weight gradients (3 layers) and input gradients
//             of layers 3 and 2; critic forward at (s, own actions) and the gradient of its
//             output with respect to agent i's 3 actions only (layers 3, then 2's action columns).
// Layer 1 runs on [g, x_j] per row, as the networks are written. g is the same for a sample's
// 3 clusters, so its part of layer 1 could run once per sample: that saves less than the
// ~1.1 ms that layer 1's products take at batch 256 (a 768-row forward ~125 us and a weight
// gradient ~170 us on this machine, 3 agents).
void BM_AllGemmFloor(benchmark::State& state) {
  torch::set_num_threads(1);
  const int B = static_cast<int>(state.range(0)), live = B - B / 3, agents = 3, H = 300, C = 100;
  const int R = 3 * B, Rl = 3 * live, A_IN = 23, S_IN = 42, J = 9;
  std::vector<float> x(static_cast<size_t>(R) * 512, 0.5f), y(x.size()), dy(x.size(), 0.1f),
      dx(x.size()), w(512 * 512, 0.25f), dw(w.size());
  const float *X = x.data(), *W = w.data(), *DY = dy.data();
  float *Y = y.data(), *DW = dw.data(), *DX = dx.data();
  for (auto _ : state) {
    for (int i = 0; i < agents; ++i) {
      // Eq. (9): target actor and target critic on the rows that go on.
      Fwd(Rl, A_IN, H, X, W, Y), Fwd(Rl, H, H, X, W, Y), Fwd(Rl, H, 1, X, W, Y);
      Fwd(live, S_IN, C, X, W, Y), Fwd(live, C + J, C, X, W, Y), Fwd(live, C, 1, X, W, Y);
      // Eq. (10): critic forward and backward.
      Fwd(B, S_IN, C, X, W, Y), Fwd(B, C + J, C, X, W, Y), Fwd(B, C, 1, X, W, Y);
      Bwd(B, C, 1, X, W, DY, DW, DX), Bwd(B, C + J, C, X, W, DY, DW, DX);
      Bwd(B, S_IN, C, X, W, DY, DW, nullptr);
      // Eq. (11): actor forward, critic forward, d Q / d own actions, actor backward.
      Fwd(R, A_IN, H, X, W, Y), Fwd(R, H, H, X, W, Y), Fwd(R, H, 1, X, W, Y);
      Fwd(B, S_IN, C, X, W, Y), Fwd(B, C + J, C, X, W, Y), Fwd(B, C, 1, X, W, Y);
      Gemm(false, false, B, C, 1, DY, W, DX), Gemm(false, false, B, 3, C, DY, W, DX);
      Bwd(R, H, 1, X, W, DY, DW, DX), Bwd(R, H, H, X, W, DY, DW, DX);
      Bwd(R, A_IN, H, X, W, DY, DW, nullptr);
    }
    benchmark::DoNotOptimize(Y);
    benchmark::DoNotOptimize(DW);
    benchmark::DoNotOptimize(DX);
  }
}
BENCHMARK(BM_AllGemmFloor)->Arg(256)->Arg(32)->Unit(benchmark::kMillisecond);

// One optimiser step (clip, Adam, soft update; ClipAdamSoftUpdate) on an actor-sized buffer
// (300-300 hidden: ~96K floats). range(0): 0 = every moment a normal float; 1 = half of them stuck
// at subnormals with zero gradient (units ReLU switched off, as in training). range(1): 1 = the
// loop flushes subnormals (as shipped), 0 = it keeps them as ATen does (the previous version).
void BM_AdamStep(benchmark::State& state) {
  const long n = 96'601;
  const bool stuck = state.range(0) == 1;
  rtb::Rng rng(4);
  std::vector<float> g(static_cast<size_t>(n)), p(g.size()), m(g.size()), v(g.size()), t(g.size());
  for (size_t k = 0; k < g.size(); ++k) {
    const bool off = stuck && k % 2 == 0;
    g[k] = off ? 0.0f : static_cast<float>(rng.Normal() * 1e-3);
    p[k] = t[k] = static_cast<float>(rng.Normal() * 0.05);
    m[k] = off ? std::ldexp(1.0f, -149) : static_cast<float>(rng.Normal() * 1e-4);
    v[k] = off ? std::ldexp(1.0f, -140) : static_cast<float>(rng.Uniform() * 1e-6);
  }
  // Adam's defaults at step 100, no clip, tau 0.01.
  rtb::learn::AdamStepCoefficients c =
      rtb::learn::AdamCoefficients(1e-3, 0.9, 0.999, 1e-8, 100, 1.0f, 0.01);
  c.flush_subnormals = state.range(1) == 1;
  for (auto _ : state) {
    rtb::learn::ClipAdamSoftUpdate(c, n, g.data(), p.data(), m.data(), v.data(), t.data());
    benchmark::DoNotOptimize(p.data());
  }
  state.SetLabel(std::string(stuck ? "half the moments subnormal" : "normal moments") +
                 (c.flush_subnormals ? ", flushed" : ", kept (ATen's way)"));
}
BENCHMARK(BM_AdamStep)->Args({0, 1})->Args({1, 1})->Args({1, 0})->Unit(benchmark::kMicrosecond);

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
  // The kernels rtb-learner trains with (kernels.h: OpenBLAS's Haswell ones, ATen's AVX2),
  // not the ones OpenBLAS picks for this CPU: on a CPU it does not know (a Sapphire Rapids Xeon)
  // it picks SSE3 ones, which took the update's products 2.3x longer. RTB_NATIVE_KERNELS=1
  // measures the CPU's own choice.
  rtb::learn::PinNumericKernels(argv);
  benchmark::AddCustomContext("kernels", rtb::learn::NumericKernels());
  // As rtb-learner does (rtb/learner/agents.h); RTB_BENCH_GLIBC_MALLOC=1 measures without it.
  const char* plain = std::getenv("RTB_BENCH_GLIBC_MALLOC");
  if (plain == nullptr || std::string(plain) != "1")
    rtb::KeepFreedMemoryForReuse(rtb::learn::kTrainMmapThreshold, rtb::learn::kTrainTrimThreshold);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
