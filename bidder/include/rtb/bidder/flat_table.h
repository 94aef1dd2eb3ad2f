// The bidder's per-bid state (budget reservations, bid records) is one small entry per
// auction/imp/advertiser, millions of them at once at tens of thousands of bids per second.
// Kept in a std::unordered_map<std::string, ...> it cost three allocations per bid (node, key,
// the expiry queue's copy of the key) and a rehash of a whole shard, node by node, on the bid
// path at every doubling. This table stores a 128-bit hash of the key instead of the key, in
// one flat array with linear probing: no allocation per entry, a slot of the key plus the value
// (40 bytes for the bidder's), at most 50-75% full (per shard, see StaggeredMaxLoad), and a
// doubling only moves plain slots.
//
// Not thread-safe: callers shard and lock (BudgetLedger, Bidder).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace rtb::bidder {

// Two independent 64-bit hashes of a key. Two different keys collide with probability ~2^-127
// per pair: at 10 million live entries, ~10^-25.
struct Key128 {
  uint64_t a = 0, b = 0;
  bool operator==(const Key128&) const = default;
};
Key128 HashKey(std::string_view key);  // never {0, 0} (the empty slot)

// The largest fill, between 1/2 and 3/4, of shard `shard` of `shards`. A sharded table whose
// keys spread evenly fills its shards at the same pace: with one fill limit for all, every shard
// doubles within the same fraction of a second, and those doublings (each a copy of the shard
// on the request thread that crosses the limit) add up to a stall of many milliseconds. Spread
// limits spread the doublings over a traffic ramp of 1.5x.
inline double StaggeredMaxLoad(int shard, int shards) {
  return shards <= 1 ? 0.625 : 0.5 + 0.25 * shard / (shards - 1);
}

template <typename V>
class FlatTable {
 public:
  // Room for `expected` entries before the first doubling; doubles once more than max_load
  // (0.5..0.75, clamped) of the slots would be full.
  explicit FlatTable(size_t expected = 0, double max_load = 0.625)
      : load_num_(static_cast<size_t>(kLoadDen * std::clamp(max_load, 0.5, 0.75))),
        min_capacity_(CapacityFor(expected)) {
    Rehash(min_capacity_);
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }

  V* Find(Key128 k) {
    for (size_t i = Home(k);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.k == k) return &s.v;
      if (Empty(s)) return nullptr;
    }
  }
  // Inserts (k, v) unless k is present; returns the entry and whether it was inserted.
  std::pair<V*, bool> Emplace(Key128 k, const V& v) {
    if ((size_ + 1) * kLoadDen > slots_.size() * load_num_) Rehash(2 * slots_.size());
    for (size_t i = Home(k);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.k == k) return {&s.v, false};
      if (Empty(s)) {
        s.k = k;
        s.v = v;
        ++size_;
        return {&s.v, true};
      }
    }
  }
  // Removes k; false if absent. Backward-shift deletion: no tombstones, probes stay short.
  // Halves the array once it is less than 1/8 full (never below the initial size), so the
  // memory of a traffic peak comes back when the peak's entries expire.
  bool Erase(Key128 k) {
    size_t i = Home(k);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].k == k) break;
      if (Empty(slots_[i])) return false;
    }
    for (size_t j = (i + 1) & mask_; !Empty(slots_[j]); j = (j + 1) & mask_) {
      const size_t h = Home(slots_[j].k);
      // slots_[j] may move back to the hole at i unless its home lies cyclically in (i, j].
      const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (!stays) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = Slot{};
    --size_;
    if (size_ * 8 < slots_.size() && slots_.size() > min_capacity_) Rehash(slots_.size() / 2);
    return true;
  }

 private:
  struct Slot {
    Key128 k;
    V v{};
  };
  static constexpr size_t kLoadDen = 1024;  // the fill limit is load_num_ / kLoadDen
  static bool Empty(const Slot& s) { return s.k.a == 0 && s.k.b == 0; }
  size_t Home(Key128 k) const { return static_cast<size_t>(k.b) & mask_; }
  size_t CapacityFor(size_t n) const {
    size_t c = 16;
    while (c * load_num_ < n * kLoadDen) c *= 2;
    return c;
  }
  void Rehash(size_t capacity) {
    std::vector<Slot> old(capacity);
    old.swap(slots_);
    mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (Empty(s)) continue;
      size_t i = Home(s.k);
      while (!Empty(slots_[i])) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  size_t load_num_;
  size_t min_capacity_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace rtb::bidder
