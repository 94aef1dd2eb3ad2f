// Domain types shared by every module: strong ids and integer money.
//
// Money is always an integer number of micros (1e-6 of the currency unit). Doubles appear only
// in probabilities (pCTR, pCVR), ratios and expected values before they are rounded to micros.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace rtb {

// StrongId<Tag>: an integer id that cannot be mixed up with another kind of id.
template <typename Tag, typename Rep = uint32_t>
class StrongId {
 public:
  using rep_type = Rep;
  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }
  constexpr auto operator<=>(const StrongId&) const = default;

 private:
  Rep v_ = 0;
};

using AdvertiserId = StrongId<struct AdvertiserTag>;  // one advertiser (the paper's merchant)
using ConsumerId = StrongId<struct ConsumerTag>;      // one user
using AgentId = StrongId<struct AgentTag>;            // advertiser cluster i = 0..N-1
using ClusterId = StrongId<struct ClusterTag>;        // consumer cluster j = 0..L-1

// std::llround (halves away from zero), without the library call on the hot paths: for
// 0 <= x < 2^52, x - trunc(x) is exact, so comparing it with 0.5 rounds exactly as llround
// does. Anything else (negative, huge, NaN) goes to llround itself.
inline int64_t RoundHalfAway(double x) {
  if (x >= 0 && x < 4503599627370496.0) {
    const auto t = static_cast<int64_t>(x);
    return t + (x - static_cast<double>(t) >= 0.5 ? 1 : 0);
  }
  return std::llround(x);
}

// Micros: an amount of money in millionths of the currency unit.
class Micros {
 public:
  constexpr Micros() = default;
  constexpr explicit Micros(int64_t v) : v_(v) {}
  static constexpr Micros FromUnits(double units) {
    return Micros(static_cast<int64_t>(units * 1e6 + (units >= 0 ? 0.5 : -0.5)));
  }
  // Rounds a non-negative expected value in micros (for example pCTR x bid) to whole micros.
  static Micros Round(double micros) { return Micros(RoundHalfAway(micros)); }
  static constexpr Micros Max() { return Micros(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t value() const { return v_; }
  constexpr double units() const { return static_cast<double>(v_) / 1e6; }

  constexpr auto operator<=>(const Micros&) const = default;
  constexpr Micros operator+(Micros o) const { return Micros(v_ + o.v_); }
  constexpr Micros operator-(Micros o) const { return Micros(v_ - o.v_); }
  constexpr Micros& operator+=(Micros o) {
    v_ += o.v_;
    return *this;
  }
  constexpr Micros& operator-=(Micros o) {
    v_ -= o.v_;
    return *this;
  }

 private:
  int64_t v_ = 0;
};

// Simulated or wall-clock time in milliseconds since the start of the day (simulator) or the
// Unix epoch (bidder); the meaning is fixed by the field that holds it.
using TimeMs = int64_t;

}  // namespace rtb

template <typename Tag, typename Rep>
struct std::hash<rtb::StrongId<Tag, Rep>> {
  size_t operator()(const rtb::StrongId<Tag, Rep>& id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
