// The auction of docs/dcmab.md section 3, as pure code shared by the simulator, replay and the
// bidder's own ranking of its bids.
//
// Candidates are ranked by eCPM = bid_hat x pCTR (expected cost per impression, micros).
// Ties go to the lower tie-break key (the advertiser id), so the ranking is a total order and
// the same input always gives the same winners. Candidates below the reserve are not ranked.
// The top `slots` candidates win. Under generalized second price, the winner at rank s pays,
// per impression in expectation, the eCPM of the candidate at rank s+1, or the reserve when
// there is none (per click that is pCTR_next x bid_next / pCTR_s). The price is never below
// the reserve and never above the winner's own eCPM.
#pragma once

#include <array>
#include <cstdint>

namespace rtb {

inline constexpr int kMaxSlots = 8;

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
  double price_ecpm = 0;  // what it pays per impression in expectation (GSP, micros)
};

// GspAuction: streaming top-(slots+1) selection; no allocation. Offer every eligible
// candidate, then Resolve. Reusable after Reset.
class GspAuction {
 public:
  // REQUIRES: 1 <= slots <= kMaxSlots, reserve_ecpm >= 0.
  GspAuction(int slots, double reserve_ecpm) : slots_(slots), reserve_(reserve_ecpm) {}

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

  // Writes the winners in rank order to out[0..k) and returns k (<= slots).
  int Resolve(SlotResult* out) const {
    const int winners = n_ < slots_ ? n_ : slots_;
    for (int s = 0; s < winners; ++s) {
      const double next = s + 1 < n_ ? top_[s + 1].ecpm : 0.0;
      out[s] = {top_[s].index, top_[s].ecpm, next > reserve_ ? next : reserve_};
    }
    return winners;
  }

  int ranked() const { return n_; }
  const AuctionEntry& ranked_at(int r) const { return top_[r]; }

 private:
  int slots_;
  double reserve_;
  int n_ = 0;
  std::array<AuctionEntry, kMaxSlots + 1> top_{};
};

}  // namespace rtb
