// Seeded, platform-independent randomness. Same seed, same sequence, on every machine:
// the generator (xoshiro256**) and every distribution here are implemented in this file's
// .cc, not taken from <random>, whose distributions differ between standard libraries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rtb {

class Rng {
 public:
  explicit Rng(uint64_t seed);

  uint64_t NextU64();
  // Uniform in [0, 1).
  double Uniform();
  // Uniform integer in [0, n). REQUIRES: n > 0.
  uint64_t UniformInt(uint64_t n);
  // Standard normal (Marsaglia polar method, one cached spare).
  double Normal();
  // exp(mu + sigma * N(0,1)).
  double LogNormal(double mu, double sigma);
  // Poisson(lambda) by inversion for small lambda, normal approximation above 50.
  int64_t Poisson(double lambda);
  // Derives an independent child seed (for example one stream per day or per component).
  static uint64_t Mix(uint64_t seed, uint64_t stream);

  struct State {
    uint64_t s[4];
    bool has_spare;
    double spare;
  };
  State GetState() const { return {{s_[0], s_[1], s_[2], s_[3]}, has_spare_, spare_}; }
  void SetState(const State& st);

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

// AliasTable: O(1) sampling of an index with probability proportional to its weight.
class AliasTable {
 public:
  // REQUIRES: weights non-empty, non-negative, with a positive sum.
  explicit AliasTable(const std::vector<double>& weights);
  uint32_t Sample(Rng& rng) const;
  size_t size() const { return prob_.size(); }

 private:
  std::vector<double> prob_;
  std::vector<uint32_t> alias_;
};

}  // namespace rtb
