// The actor and critic of nets.h, forward and hand-derived backward, on their flat parameter
// buffers (FlatParams), through CBLAS (the same OpenBLAS that LibTorch calls).
//
// Why: one DCMAB update is 12 large GEMMs plus ~150 small tensor operations. Through autograd,
// LibTorch's per-operation dispatch and graph bookkeeping cost as much as the arithmetic at batch
// 32 (bench/run_learner_bench.sh). These kernels do the same arithmetic with one BLAS call per
// matrix product and plain loops for the rest, into buffers reused across updates.
//
// The math is exactly that of ActorImpl / CriticImpl, whose parameters sit in the flat buffer in
// Module::parameters() order: l1.weight [H, in], l1.bias [H], l2.weight [H, H + A], l2.bias [H],
// l3.weight [1, H], l3.bias [1] (A = actions joined at layer 2; 0 for the actor). ReLU's
// derivative is taken where its output is > 0, and tanh's as 1 - tanh^2, as autograd does.
// tests/learner/learner_test.cc checks every gradient against autograd's.
#pragma once

#include <vector>

namespace rtb::learn {

// Row-major matrices throughout; rows = minibatch rows (B, or B * L for the actor).
class MlpKernel {
 public:
  // in: inputs to layer 1; hidden: H; joined: A, columns appended to layer 1's output before
  // layer 2 (the critic's actions; 0 for the actor).
  MlpKernel(int in, int hidden, int joined);

  int NumParams() const;

  // out[r] = l3(relu(l2([relu(l1(x_r)), j_r]))) for r < rows: the actor's pre-tanh output or the
  // critic's Q. x: [rows, in]; joined: [rows, A] (unused when A = 0). Keeps the activations for
  // Backward, which must come next and with the same arguments.
  void Forward(const float* params, const float* x, const float* joined, int rows, float* out);

  // Given dLoss/dout [rows] for the last Forward: writes dLoss/dparams into grad (overwriting
  // every entry; nullptr skips the parameter gradient) and dLoss/djoined [rows, A] into
  // d_joined (nullptr skips it).
  void Backward(const float* params, const float* x, int rows, const float* d_out, float* grad,
                float* d_joined);

 private:
  int in_, hidden_, joined_;
  // Offsets of l1.weight, l1.bias, l2.weight, l2.bias, l3.weight, l3.bias in the flat buffer.
  int w1_, b1_, w2_, b2_, w3_, b3_;
  std::vector<float> z_;   // [rows, H + A]: relu(l1(x)) then the joined columns (layer 2 input)
  std::vector<float> h2_;  // [rows, H]: relu(l2(z))
  std::vector<float> dz2_, dz_;  // scratch gradients [rows, H], [rows, H + A]
};

// The elementwise part of ClipAdamSoftUpdate (nets.h), on n parameters p with gradient g:
// g' = scale * g; Adam's moments m, v and step (as LibTorch computes it:
// p -= step_size * m / (sqrt(v) / sqrt_bc2 + eps)); then, if t is not null, the soft update
// t = keep * t + move * p.
struct AdamStep {
  float scale, beta1, beta2, one_minus_beta1, one_minus_beta2, sqrt_bc2, eps, step_size;
  float keep, move;
};
void AdamSoftUpdate(const AdamStep& c, long n, const float* g, float* p, float* m, float* v,
                    float* t);

// sum_k x[k]^2, accumulated in double.
double SumOfSquares(const float* x, long n);

}  // namespace rtb::learn
