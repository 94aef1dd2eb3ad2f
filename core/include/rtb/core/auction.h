// The auction of docs/dcmab.md section 3, as pure code shared by the simulator, replay and the
// bidder's own ranking of its bids.
//
// Candidates are ranked by eCPM = bid_hat x pCTR (expected cost per impression, micros).
// Ties go to the lower tie-break key (the advertiser id), so the ranking is a total order and
// the same input always gives the same winners. Candidates below the reserve are not ranked.
// The top `slots` candidates win. Under generalized second price (GSP), the winner at rank s
// pays, per impression in expectation, the eCPM of the candidate at rank s+1, or the reserve
// when there is none (per click that is pCTR_next x bid_next / pCTR_s). Under first price each
// winner pays its own eCPM (its own bid per click): with one slot that is the first-price
// auction (OpenRTB at = 1), with several the generalized first-price auction (GFP). Either way
// the price is never below the reserve and never above the winner's own eCPM.
#pragma once

#include <array>
#include <cstdint>

namespace rtb {

inline constexpr int kMaxSlots = 8;
// SlotAuction::RankAll ranks up to this many candidates in one go (more go through Offer).
inline constexpr int kMaxBatch = 64;

// How winners pay (the ranking is the same under both).
enum class Pricing : uint8_t {
  kSecondPrice,  // rank s pays rank s+1's eCPM, or the reserve (GSP; Vickrey with one slot)
  kFirstPrice,   // every winner pays its own eCPM (first price; GFP with several slots)
};

struct AuctionEntry {
  double ecpm = 0;       // bid_hat x pCTR, micros per impression
  uint32_t tie_key = 0;  // lower wins ties (advertiser id)
  uint32_t index = 0;    // the caller's reference to the candidate
};

// True when a ranks strictly above b.
inline bool Outranks(const AuctionEntry& a, const AuctionEntry& b) {
  return a.ecpm > b.ecpm || (a.ecpm == b.ecpm && a.tie_key < b.tie_key);
}

struct SlotResult {
  uint32_t index = 0;     // the winning candidate (AuctionEntry::index)
  double ecpm = 0;        // its own eCPM
  double price_ecpm = 0;  // what it pays per impression in expectation (micros)
};

// SlotAuction: streaming top-(slots+1) selection; no allocation. Offer every eligible
// candidate, then Resolve. Reusable after Reset.
class SlotAuction {
 public:
  // REQUIRES: 1 <= slots <= kMaxSlots, reserve_ecpm >= 0.
  SlotAuction(int slots, double reserve_ecpm, Pricing pricing = Pricing::kSecondPrice)
      : slots_(slots), reserve_(reserve_ecpm), first_price_(pricing == Pricing::kFirstPrice) {}

  void Reset() { n_ = 0; }
  // Starts a fresh auction with another reserve (per-request floors).
  void Reset(double reserve_ecpm) {
    n_ = 0;
    reserve_ = reserve_ecpm;
  }

  // Offers a candidate; ignored when its eCPM is below the reserve or not positive.
  void Offer(const AuctionEntry& e) {
    if (!(e.ecpm >= reserve_) || !(e.ecpm > 0)) return;
    const int keep = slots_ + 1;
    if (n_ == keep && !Outranks(e, top_[n_ - 1])) return;
    int pos = n_ < keep ? n_++ : n_ - 1;
    while (pos > 0 && Outranks(e, top_[pos - 1])) {
      top_[pos] = top_[pos - 1];
      --pos;
    }
    top_[pos] = e;
  }

  // Offers in[0..n) at once: the same ranking as Offer(in[0]), ..., Offer(in[n-1]) on a fresh
  // auction, without Offer's unpredictable branches (the simulator ranks ~1M candidates a day).
  // Each eligible entry's rank is the number of eligible entries that outrank it, or equal it
  // and come earlier (as Offer keeps the earlier of two equal entries first); the top slots+1
  // are kept. O(n^2) compares, all branch-free. REQUIRES: nothing offered since the last Reset.
  void RankAll(const AuctionEntry* in, int n) {
    if (n > kMaxBatch) {
      for (int q = 0; q < n; ++q) Offer(in[q]);
      return;
    }
    std::array<AuctionEntry, kMaxBatch>& left = batch_;
    int m = 0;
    for (int q = 0; q < n; ++q) {
      left[m] = in[q];
      m += static_cast<int>(in[q].ecpm >= reserve_) & static_cast<int>(in[q].ecpm > 0);
    }
    const int keep = m < slots_ + 1 ? m : slots_ + 1;
    // Each entry's rank: how many entries rank above it (an equal earlier entry does).
    for (int q = 0; q < m; ++q) {
      const double e = left[q].ecpm;
      const uint32_t key = left[q].tie_key;
      int rank = 0;
      for (int o = 0; o < m; ++o) {
        const double x = left[o].ecpm;
        const uint32_t ok = left[o].tie_key;
        rank +=
            static_cast<int>(x > e) |
            (static_cast<int>(x == e) & (static_cast<int>(ok < key) |
                                         (static_cast<int>(ok == key) & static_cast<int>(o < q))));
      }
      if (rank < keep) top_[rank] = left[q];
    }
    n_ = keep;
  }

  // Takes a batch ranked outside this class: best first, at most slots + 1 entries, each one
  // this auction's reserve admits; what RankAll keeps for the same offers. The simulator ranks
  // with AVX-512 compares (simulator/src/engine.cc) and hands its top here. REQUIRES: n <=
  // slots + 1.
  void SetRanked(const AuctionEntry* best_first, int n) {
    for (int r = 0; r < n; ++r) top_[r] = best_first[r];
    n_ = n;
  }

  // Writes the winners in rank order to out[0..k) and returns k (<= slots).
  int Resolve(SlotResult* out) const {
    const int winners = n_ < slots_ ? n_ : slots_;
    for (int s = 0; s < winners; ++s) {
      const double next = s + 1 < n_ ? top_[s + 1].ecpm : 0.0;
      const double second = next > reserve_ ? next : reserve_;
      out[s] = {top_[s].index, top_[s].ecpm, first_price_ ? top_[s].ecpm : second};
    }
    return winners;
  }

  int ranked() const { return n_; }
  const AuctionEntry& ranked_at(int r) const { return top_[r]; }

 private:
  int slots_;
  double reserve_;
  bool first_price_;
  int n_ = 0;
  std::array<AuctionEntry, kMaxSlots + 1> top_{};
  std::array<AuctionEntry, kMaxBatch> batch_;  // RankAll's working copy
};

}  // namespace rtb
