#include "rtb/core/rng.h"

#include <cmath>

namespace rtb {
namespace {

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__extension__ typedef unsigned __int128 U128;

inline uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = SplitMix64(x);
}

void Rng::SetState(const State& st) {
  for (int i = 0; i < 4; ++i) s_[i] = st.s[i];
  has_spare_ = st.has_spare;
  spare_ = st.spare;
}

uint64_t Rng::Mix(uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);
  SplitMix64(x);
  return SplitMix64(x);
}

uint64_t Rng::NextU64() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

double Rng::Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

uint64_t Rng::UniformInt(uint64_t n) {
  // Lemire's nearly divisionless method, with rejection for exact uniformity.
  U128 m = static_cast<U128>(NextU64()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<U128>(NextU64()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::Normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u, v, s;
  do {
    u = 2.0 * Uniform() - 1.0;
    v = 2.0 * Uniform() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double f = std::sqrt(-2.0 * std::log(s) / s);
  spare_ = v * f;
  has_spare_ = true;
  return u * f;
}

double Rng::LogNormal(double mu, double sigma) { return std::exp(mu + sigma * Normal()); }

int64_t Rng::Poisson(double lambda) {
  if (!(lambda > 0)) return 0;
  if (lambda > 50) {
    const double x = std::floor(lambda + std::sqrt(lambda) * Normal() + 0.5);
    return x < 0 ? 0 : static_cast<int64_t>(x);
  }
  const double limit = std::exp(-lambda);
  double p = Uniform();
  int64_t k = 0;
  while (p > limit) {
    p *= Uniform();
    ++k;
  }
  return k;
}

AliasTable::AliasTable(const std::vector<double>& weights)
    : prob_(weights.size()), alias_(weights.size()) {
  const size_t n = weights.size();
  double sum = 0;
  for (double w : weights) sum += w;
  std::vector<double> scaled(n);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = weights[i] * static_cast<double>(n) / sum;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back(), l = large.back();
    small.pop_back();
    prob_[s] = scaled[s];
    alias_[s] = l;
    scaled[l] = (scaled[l] + scaled[s]) - 1.0;
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (uint32_t i : large) prob_[i] = 1.0, alias_[i] = i;
  for (uint32_t i : small) prob_[i] = 1.0, alias_[i] = i;
}

uint32_t AliasTable::Sample(Rng& rng) const {
  const uint32_t i = static_cast<uint32_t>(rng.UniformInt(prob_.size()));
  return rng.Uniform() < prob_[i] ? i : alias_[i];
}

}  // namespace rtb
