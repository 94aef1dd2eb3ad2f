#include "mlp_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

// GCC function multi-versioning: the same loop built for AVX-512, AVX2 and the baseline ISA.
#define RTB_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace rtb::learn {

namespace {

size_t Sz(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

// y [rows, out] = x [rows, k] W^T + b, W [out, k] row-major with leading dimension ldw.
void Affine(const float* x, int ldx, const float* w, int ldw, const float* b, int rows, int k,
            int out, float* y, int ldy) {
  for (int r = 0; r < rows; ++r) std::copy(b, b + out, y + Sz(r, ldy));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, k, 1.0f, x, ldx, w, ldw, 1.0f, y,
              ldy);
}

void ReluInPlace(float* y, int rows, int cols, int ld) {
  for (int r = 0; r < rows; ++r) {
    float* p = y + Sz(r, ld);
    for (int c = 0; c < cols; ++c) p[c] = std::max(p[c], 0.0f);
  }
}

// gw [out, k] = dy^T [out, rows] x [rows, k]; gb [out] = column sums of dy.
void AffineGrad(const float* dy, int ldy, const float* x, int ldx, int rows, int k, int out,
                float* gw, float* gb) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, k, rows, 1.0f, dy, ldy, x, ldx, 0.0f,
              gw, k);
  std::fill(gb, gb + out, 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* p = dy + Sz(r, ldy);
    for (int c = 0; c < out; ++c) gb[c] += p[c];
  }
}

// d[c] = h[c] > 0 ? g * w[c] : 0 (branch-free, so that it vectorises).
RTB_VECTOR_CLONES void MaskedScale(const float* __restrict h, const float* __restrict w, float g,
                                   int n, float* __restrict d) {
  for (int c = 0; c < n; ++c) d[c] = h[c] > 0.0f ? g * w[c] : 0.0f;
}

}  // namespace

MlpKernel::MlpKernel(int in, int hidden, int joined) : in_(in), hidden_(hidden), joined_(joined) {
  w1_ = 0;
  b1_ = w1_ + hidden * in;
  w2_ = b1_ + hidden;
  b2_ = w2_ + hidden * (hidden + joined);
  w3_ = b2_ + hidden;
  b3_ = w3_ + hidden;
}

int MlpKernel::NumParams() const { return b3_ + 1; }

void MlpKernel::Forward(const float* params, const float* x, const float* joined, int rows,
                        float* out) {
  const int H = hidden_, Z = hidden_ + joined_;
  z_.resize(Sz(rows, Z));
  h2_.resize(Sz(rows, H));
  // Layer 1 into the first H columns of z; the joined columns after it.
  Affine(x, in_, params + w1_, in_, params + b1_, rows, in_, H, z_.data(), Z);
  ReluInPlace(z_.data(), rows, H, Z);
  for (int r = 0; r < rows && joined_ > 0; ++r) {
    std::copy(joined + Sz(r, joined_), joined + Sz(r + 1, joined_), z_.data() + Sz(r, Z) + H);
  }
  // Layer 2, then layer 3 (one output: a dot product per row).
  Affine(z_.data(), Z, params + w2_, Z, params + b2_, rows, Z, H, h2_.data(), H);
  ReluInPlace(h2_.data(), rows, H, H);
  std::fill(out, out + rows, params[b3_]);
  cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, H, 1.0f, h2_.data(), H, params + w3_, 1, 1.0f, out,
              1);
}

void MlpKernel::Backward(const float* params, const float* x, int rows, const float* d_out,
                         float* grad, float* d_joined) {
  const int H = hidden_, Z = hidden_ + joined_;
  dz2_.resize(Sz(rows, H));
  const float* w3 = params + w3_;
  // Layer 3: d l3.weight = sum_r d_out[r] h2[r]; d l3.bias = sum_r d_out[r]. Through the ReLU:
  // dz2[r][c] = d_out[r] w3[c] where h2[r][c] > 0.
  if (grad != nullptr) {
    cblas_sgemv(CblasRowMajor, CblasTrans, rows, H, 1.0f, h2_.data(), H, d_out, 1, 0.0f, grad + w3_,
                1);
    grad[b3_] = 0.0f;
    for (int r = 0; r < rows; ++r) grad[b3_] += d_out[r];
  }
  for (int r = 0; r < rows; ++r)
    MaskedScale(h2_.data() + Sz(r, H), w3, d_out[r], H, dz2_.data() + Sz(r, H));
  if (grad != nullptr) {
    AffineGrad(dz2_.data(), H, z_.data(), Z, rows, Z, H, grad + w2_, grad + b2_);
  }
  const float* w2 = params + w2_;
  if (grad == nullptr) {
    // Only the joined columns' gradient: dz2 [rows, H] times W2's last A columns [H, A].
    if (d_joined != nullptr && joined_ > 0) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, joined_, H, 1.0f, dz2_.data(), H,
                  w2 + H, Z, 0.0f, d_joined, joined_);
    }
    return;
  }
  // d(layer 2 input) = dz2 W2 [rows, H + A]; its first H columns through layer 1's ReLU.
  dz_.resize(Sz(rows, Z));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, Z, H, 1.0f, dz2_.data(), H, w2, Z,
              0.0f, dz_.data(), Z);
  for (int r = 0; r < rows; ++r) {
    float* d = dz_.data() + Sz(r, Z);
    const float* h1 = z_.data() + Sz(r, Z);
    for (int c = 0; c < H; ++c) d[c] = h1[c] > 0.0f ? d[c] : 0.0f;
    if (d_joined != nullptr && joined_ > 0) std::copy(d + H, d + Z, d_joined + Sz(r, joined_));
  }
  AffineGrad(dz_.data(), Z, x, in_, rows, in_, H, grad + w1_, grad + b1_);
}

// Built with -fno-math-errno (learner/CMakeLists.txt), so that sqrt vectorises; the result is
// the same IEEE square root. One clone per vector width, chosen at load time for this CPU.
RTB_VECTOR_CLONES void AdamSoftUpdate(const AdamStep& c, long n, const float* __restrict g,
                                      float* __restrict p, float* __restrict m, float* __restrict v,
                                      float* __restrict t) {
  for (long k = 0; k < n; ++k) {
    const float gk = g[k] * c.scale;
    m[k] = m[k] * c.beta1 + c.one_minus_beta1 * gk;
    v[k] = v[k] * c.beta2 + c.one_minus_beta2 * gk * gk;
    p[k] -= c.step_size * (m[k] / (std::sqrt(v[k]) / c.sqrt_bc2 + c.eps));
  }
  if (t == nullptr) return;
  for (long k = 0; k < n; ++k) t[k] = t[k] * c.keep + c.move * p[k];
}

double SumOfSquares(const float* x, long n) { return cblas_dsdot(static_cast<int>(n), x, 1, x, 1); }

}  // namespace rtb::learn
