// The actor's and critic's forward and backward (nets.h) written out on their flat parameter
// buffers, without autograd, computing the same floats as LibTorch 1.13's autograd.
//
// Why: at batch 32 one DCMAB update spent about as long in LibTorch's per-operation dispatch and
// graph bookkeeping as in arithmetic (bench/run_learner_bench.sh). An earlier hand-derived update
// (branch exp/hand-derived-update) was faster but rounded differently, so it trained different
// agents. This one makes, for every matrix product, the very BLAS call (sgemm_, same transposes,
// dimensions and leading dimensions) that LibTorch's addmm and its backward make, and leaves to
// ATen itself the few steps whose rounding is ATen's own (in Maddpg::UpdateAgent: tanh and its
// derivative, the gradient norm; here: the bias gradients' column sums). ReLU and its
// derivative, copies, and the bias broadcast are exact in any order; the scalar arithmetic
// (Eq. 9, the MSE derivative) is written with ATen's rounding. So the update gives
// bit-identical parameters; tests/learner/learner_test.cc compares it with the autograd update.
//
// Parameters sit in the flat buffer in Module::parameters() order: l1.weight [H, in], l1.bias
// [H], l2.weight [H, H + A], l2.bias [H], l3.weight [1, H], l3.bias [1], with A the columns joined
// to layer 1's output before layer 2 (the critic's actions; 0 for the actor).
#pragma once

#include <cstdint>
#include <vector>

namespace rtb::learn {

// Row-major matrices throughout; rows = minibatch rows (B, or B x L for an actor).
class ExactMlp {
 public:
  // in: inputs to layer 1; hidden: H; joined: A.
  ExactMlp(int in, int hidden, int joined);

  // out[r] = l3(relu(l2([relu(l1(x_r)), joined_r]))): an actor's pre-tanh output or a critic's
  // Q. x: [rows, in]; joined: [rows, A] (unused when A = 0). Keeps the activations for Backward.
  void Forward(const float* params, const float* x, const float* joined, int rows, float* out);

  // For the last Forward, given dLoss/dout [rows]:
  //   grad != nullptr: every parameter's gradient into grad (overwritten, as into a zeroed .grad);
  //   d_layer2_in != nullptr: dLoss/d[relu(l1(x)), joined], [rows, H + A] (the joined columns are
  //   dLoss/dactions).
  // x must be Forward's x (layer 1's weight gradient reads it).
  void Backward(const float* params, const float* x, int rows, const float* d_out, float* grad,
                float* d_layer2_in);

  int NumParams() const { return b3_ + 1; }

 private:
  int in_, hidden_, joined_;
  int w1_, b1_, w2_, b2_, w3_, b3_;           // offsets in the flat buffer
  std::vector<float> h1_;                     // [rows, H]: relu(l1(x))
  std::vector<float> x2_;                     // [rows, H + A]: [h1, joined] (layer 2's input)
  std::vector<float> h2_;                     // [rows, H]: relu(l2(x2))
  std::vector<float> dh2_, dz2_, dx2_, dz1_;  // scratch gradients
};

// Whether ATen's elementwise CPU kernels round a * b + c once (a fused multiply-add): its AVX2
// and AVX-512 kernels do, its baseline kernels do not (ATEN_CPU_CAPABILITY=default). Measured once
// on ATen itself.
bool AtenFusesMultiplyAdd();

// One optimiser step on a network's flat buffers (n floats), in one pass, computing what
// torch::nn::utils::clip_grad_norm_, torch::optim::Adam::step (no weight decay, no AMSGrad) and
// SoftUpdate compute, float for float:
//   g' = g * clip                                     (clip = min(max_norm / (|g| + 1e-6), 1))
//   m = m * beta1 + (1 - beta1) g';  v = v * beta2 + (1 - beta2) g' g'
//   p = p + (-step_size) m / (sqrt(v) / sqrt_bc2 + eps)
//   t = t * (1 - tau) + tau p                          (when t is not null: the soft update)
// The coefficients are the floats ATen's kernels receive; `fused` says whether the sums round
// once (AtenFusesMultiplyAdd()). One deviation, with no effect on p or t: subnormal floats are
// flushed to zero in this loop (moments stuck at subnormals cost a microcode assist per
// operation; see exact_mlp.cc), where ATen would keep them in m and v.
struct AdamStepCoefficients {
  float clip, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bc2, eps, neg_step_size;
  float keep, tau;  // 1 - tau and tau for the soft update
  bool fused;
  // Flush subnormals to zero in the loop (see above). false keeps them, as ATen does: only for
  // measuring what the flush saves (bench_learner's BM_AdamStep).
  bool flush_subnormals = true;
};
void ClipAdamSoftUpdate(const AdamStepCoefficients& c, long n, const float* g, float* p, float* m,
                        float* v, float* t);
// The coefficients torch::optim::Adam's step number `step` (1 for the first) computes from its
// options (lr, betas, eps), with the gradient scaled by `clip` and the soft update's tau.
AdamStepCoefficients AdamCoefficients(double lr, double beta1, double beta2, double eps,
                                      int64_t step, float clip, double tau);

}  // namespace rtb::learn
