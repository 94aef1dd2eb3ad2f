#include "exact_mlp.h"

#include <torch/torch.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

// The Fortran BLAS entry LibTorch calls for every float matrix product (libblas.so.3: OpenBLAS
// once scripts/setup.sh has switched the alternative).
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c, const int* ldc);

namespace rtb::learn {

namespace {

size_t Sz(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

// Column-major C = A B (+ C when accumulate), as the arguments reach sgemm_ from LibTorch's
// at::native::cpublas::gemm, leading dimensions included.
void Gemm(char ta, char tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
          bool accumulate, float* c, int ldc) {
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  sgemm_(&ta, &tb, &m, &n, &k, &one, a, &lda, b, &ldb, &beta, c, &ldc);
}

// y [rows, out] = x [rows, k] W^T + b, W [out, k]: torch::nn::Linear's forward, which is
// at::addmm(b, x, W^T): y starts as b in every row, then one sgemm_ with beta = 1. With one
// output column ATen sees y as column-major and multiplies the other way round.
void LinearForward(const float* x, const float* w, const float* b, int rows, int k, int out,
                   float* y) {
  for (int r = 0; r < rows; ++r) std::copy(b, b + out, y + Sz(r, out));
  if (out == 1) {
    Gemm('T', 'N', rows, 1, k, x, k, w, k, true, y, rows);
  } else {
    Gemm('T', 'N', out, rows, k, w, k, x, k, true, y, out);
  }
}

// addmm's backward: dx [rows, k] = dy [rows, out] W [out, k].
void LinearInputGrad(const float* dy, const float* w, int rows, int k, int out, float* dx) {
  Gemm('N', 'N', k, rows, out, w, k, dy, out, false, dx, k);
}

// addmm's backward: dW [out, k] = dy^T x; db [out] = dy summed over rows by ATen (at::sum_to,
// whose reduction order is ATen's own).
void LinearParamGrad(const float* dy, const float* x, int rows, int k, int out, float* dw,
                     float* db) {
  Gemm('N', 'T', k, out, rows, x, k, dy, out, false, dw, k);
  const torch::Tensor dy_t = torch::from_blob(const_cast<float*>(dy), {rows, out});
  torch::Tensor db_t = torch::from_blob(db, {1, out});
  at::sum_out(db_t, dy_t, {0}, /*keepdim=*/true);
}

// GCC function multi-versioning: the loops below built for AVX-512, AVX2 and the baseline ISA.
// They select and copy floats, never round, so every version gives the same bits.
#define RTB_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// relu in place: 0 where p < 0 (a NaN stays NaN, as with ATen's relu).
RTB_VECTOR_CLONES void ReluInPlace(float* __restrict p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = p[i] < 0.0f ? 0.0f : p[i];
}

// ReLU's derivative as ATen's threshold_backward takes it: 0 where the output y is <= 0.
RTB_VECTOR_CLONES void ReluGradRow(const float* __restrict g, const float* __restrict o, int n,
                                   float* __restrict d) {
  for (int c = 0; c < n; ++c) d[c] = o[c] <= 0.0f ? 0.0f : g[c];
}

void ReluGrad(const float* dy, int ldy, const float* y, int rows, int cols, float* dx) {
  for (int r = 0; r < rows; ++r)
    ReluGradRow(dy + Sz(r, ldy), y + Sz(r, cols), cols, dx + Sz(r, cols));
}

}  // namespace

ExactMlp::ExactMlp(int in, int hidden, int joined) : in_(in), hidden_(hidden), joined_(joined) {
  w1_ = 0;
  b1_ = w1_ + hidden * in;
  w2_ = b1_ + hidden;
  b2_ = w2_ + hidden * (hidden + joined);
  w3_ = b2_ + hidden;
  b3_ = w3_ + hidden;
}

void ExactMlp::Forward(const float* params, const float* x, const float* joined, int rows,
                       float* out) {
  const int H = hidden_, Z = hidden_ + joined_;
  h1_.resize(Sz(rows, H));
  h2_.resize(Sz(rows, H));
  LinearForward(x, params + w1_, params + b1_, rows, in_, H, h1_.data());
  ReluInPlace(h1_.data(), h1_.size());
  const float* x2 = h1_.data();
  if (joined_ > 0) {  // torch::cat({h1, joined}, 1)
    x2_.resize(Sz(rows, Z));
    for (int r = 0; r < rows; ++r) {
      std::copy(h1_.data() + Sz(r, H), h1_.data() + Sz(r + 1, H), x2_.data() + Sz(r, Z));
      std::copy(joined + Sz(r, joined_), joined + Sz(r + 1, joined_), x2_.data() + Sz(r, Z) + H);
    }
    x2 = x2_.data();
  }
  LinearForward(x2, params + w2_, params + b2_, rows, Z, H, h2_.data());
  ReluInPlace(h2_.data(), h2_.size());
  LinearForward(h2_.data(), params + w3_, params + b3_, rows, H, 1, out);
}

void ExactMlp::Backward(const float* params, const float* x, int rows, const float* d_out,
                        float* grad, float* d_layer2_in) {
  const int H = hidden_, Z = hidden_ + joined_;
  const float* x2 = joined_ > 0 ? x2_.data() : h1_.data();
  // Layer 3, then ReLU.
  dh2_.resize(Sz(rows, H));
  dz2_.resize(Sz(rows, H));
  LinearInputGrad(d_out, params + w3_, rows, H, 1, dh2_.data());
  if (grad != nullptr) LinearParamGrad(d_out, h2_.data(), rows, H, 1, grad + w3_, grad + b3_);
  ReluGrad(dh2_.data(), H, h2_.data(), rows, H, dz2_.data());
  // Layer 2: its input's gradient is needed for layer 1's (grad) or for the joined columns.
  if (grad != nullptr) LinearParamGrad(dz2_.data(), x2, rows, Z, H, grad + w2_, grad + b2_);
  if (grad == nullptr && d_layer2_in == nullptr) return;
  float* dx2 = d_layer2_in;
  if (dx2 == nullptr) {
    dx2_.resize(Sz(rows, Z));
    dx2 = dx2_.data();
  }
  LinearInputGrad(dz2_.data(), params + w2_, rows, Z, H, dx2);
  if (grad == nullptr) return;
  // Layer 1 (x is data: no input gradient), through ReLU on the first H columns of dx2.
  dz1_.resize(Sz(rows, H));
  ReluGrad(dx2, Z, h1_.data(), rows, H, dz1_.data());
  LinearParamGrad(dz1_.data(), x, rows, in_, H, grad + w1_, grad + b1_);
}

bool AtenFusesMultiplyAdd() {
  static const bool fused = [] {
    // (1 + 2^-12)(1 + 2^-13) - 1 = 2^-12 + 2^-13 + 2^-25: exact with one rounding; rounding the
    // product first loses the 2^-25. 64 elements, so that ATen's vectorised loop runs.
    const float a = 1.0f + std::ldexp(1.0f, -12), b = 1.0f + std::ldexp(1.0f, -13);
    torch::Tensor self = torch::full({64}, -1.0f), other = torch::full({64}, a);
    self.add_(other, b);
    return self[0].item<float>() != a * b - 1.0f;
  }();
  return fused;
}

namespace {

constexpr unsigned kFlushToZero = 0x8000;       // MXCSR.FTZ: subnormal results become 0
constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR.DAZ: subnormal inputs read as 0

template <bool kFused>
__attribute__((always_inline)) inline float MulAdd(float a, float b, float c) {
  if constexpr (kFused) {
    return std::fma(a, b, c);
  } else {
    return c + a * b;
  }
}

template <bool kFused, bool kSoft>
__attribute__((always_inline)) inline void AdamLoop(const AdamStepCoefficients& c, long n,
                                                    const float* __restrict g, float* __restrict p,
                                                    float* __restrict m, float* __restrict v,
                                                    float* __restrict t) {
  // Local copies, so that the compiler need not reload them after every store (and vectorises).
  const float clip = c.clip, b1 = c.beta1, b1c = c.one_minus_beta1, b2 = c.beta2,
              b2c = c.one_minus_beta2, sqrt_bc2 = c.sqrt_bc2, eps = c.eps, lr = c.neg_step_size,
              keep = c.keep, tau = c.tau;
  for (long i = 0; i < n; ++i) {
    const float gi = g[i] * clip;                              // grad.mul_(clip)
    const float mi = MulAdd<kFused>(gi, b1c, m[i] * b1);       // exp_avg.mul_().add_()
    const float vi = MulAdd<kFused>(b2c * gi, gi, v[i] * b2);  // exp_avg_sq.mul_().addcmul_()
    m[i] = mi;
    v[i] = vi;
    const float pi = p[i] + lr * mi / (std::sqrt(vi) / sqrt_bc2 + eps);  // p.addcdiv_()
    p[i] = pi;
    if constexpr (kSoft) t[i] = MulAdd<kFused>(pi, tau, t[i] * keep);  // t.mul_().add_()
  }
}

template <bool kFused>
__attribute__((always_inline)) inline void AdamAndSoft(const AdamStepCoefficients& c, long n,
                                                       const float* g, float* p, float* m, float* v,
                                                       float* t) {
  if (t != nullptr) {
    AdamLoop<kFused, true>(c, n, g, p, m, v, t);
  } else {
    AdamLoop<kFused, false>(c, n, g, p, m, v, t);
  }
}

// Built for AVX2 with FMA (ATen's AVX2 and AVX-512 kernels round as this does), and for the
// baseline ISA without (as ATen's baseline kernels do).
__attribute__((target("avx2,fma"))) void AdamFused(const AdamStepCoefficients& c, long n,
                                                   const float* g, float* p, float* m, float* v,
                                                   float* t) {
  AdamAndSoft<true>(c, n, g, p, m, v, t);
}

void AdamUnfused(const AdamStepCoefficients& c, long n, const float* g, float* p, float* m,
                 float* v, float* t) {
  AdamAndSoft<false>(c, n, g, p, m, v, t);
}

}  // namespace

AdamStepCoefficients AdamCoefficients(double lr, double beta1, double beta2, double eps,
                                      int64_t step, float clip, double tau) {
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  AdamStepCoefficients c;
  c.clip = clip;
  c.beta1 = static_cast<float>(beta1);
  c.one_minus_beta1 = static_cast<float>(1 - beta1);
  c.beta2 = static_cast<float>(beta2);
  c.one_minus_beta2 = static_cast<float>(1 - beta2);
  c.sqrt_bc2 = static_cast<float>(std::sqrt(bias_correction2));
  c.eps = static_cast<float>(eps);
  c.neg_step_size = static_cast<float>(-(lr / bias_correction1));
  c.keep = static_cast<float>(1.0 - tau);
  c.tau = static_cast<float>(tau);
  c.fused = AtenFusesMultiplyAdd();
  return c;
}

void ClipAdamSoftUpdate(const AdamStepCoefficients& c, long n, const float* g, float* p, float* m,
                        float* v, float* t) {
  // Subnormal floats flushed to zero, in this loop only (MXCSR's FTZ and DAZ bits, restored
  // after). A unit that ReLU has switched off gets gradient 0 on every weight it touches, and
  // its moments decay towards 0 without reaching it: 0.9 x 2^-149 rounds back to 2^-149, so m
  // and v stay subnormal for good, and every operation on a subnormal takes a microcode assist
  // (~100 cycles). In `rtb train` this loop was a quarter of the run. Flushed, those moments
  // are 0; what they would add to p is at most lr x 2^-126 / eps (~1e-33 at lr 1e-3), below
  // half an ulp of any weight larger than ~1e-26, so the parameters and targets keep ATen's
  // floats (checked: every report, table and network of `rtb train --algo all` byte-identical;
  // tests/learner: Adam.SubnormalMomentsAreFlushedAndTheWeightsKeepAtensFloats); only such
  // moments differ in a checkpoint.
  const unsigned csr = _mm_getcsr();
  if (c.flush_subnormals) _mm_setcsr(csr | kFlushToZero | kDenormalsAreZero);
  if (c.fused) {
    AdamFused(c, n, g, p, m, v, t);
  } else {
    AdamUnfused(c, n, g, p, m, v, t);
  }
  _mm_setcsr(csr);
}

}  // namespace rtb::learn
