// The bidder's per-bid state (budget reservations, bid records) is one small entry per
// auction/imp/advertiser, millions of them at once at tens of thousands of bids per second.
// Kept in a std::unordered_map<std::string, ...> it cost three allocations per bid (node, key,
// the expiry queue's copy of the key) and a rehash of a whole shard, node by node, on the bid
// path at every doubling. This table stores a 128-bit hash of the key instead of the key, in
// boost::unordered_flat_map (open addressing, SIMD-probed groups: no allocation per entry, one
// flat array of key + value, 40 bytes for the bidder's). bench/bench_libs.cc measured it 2.1x
// faster than the hand-written linear-probing table it replaced, at the same bytes per entry.
// Around it, two rules of the bidder's own: a fill limit per shard (StaggeredMaxLoad) that
// decides when the table doubles, and a halving once the table is 1/8 full, so that the memory
// of a traffic peak comes back when the peak's entries expire.
//
// Not thread-safe: callers shard and lock (BudgetLedger, Bidder).
#pragma once

#include <algorithm>
#include <boost/unordered/unordered_flat_map.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace rtb::bidder {

// Two independent 64-bit hashes of a key. Two different keys collide with probability ~2^-127
// per pair: at 10 million live entries, ~10^-25.
struct Key128 {
  uint64_t a = 0, b = 0;
  bool operator==(const Key128&) const = default;
};
Key128 HashKey(std::string_view key);  // never {0, 0}

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
      : max_load_(std::clamp(max_load, 0.5, 0.75)) {
    Rehash(static_cast<size_t>(static_cast<double>(std::max<size_t>(expected, 1)) / max_load_));
    min_capacity_ = capacity();
  }

  size_t size() const { return m_.size(); }
  size_t capacity() const { return m_.bucket_count(); }

  V* Find(Key128 k) {
    auto it = m_.find(k);
    return it == m_.end() ? nullptr : &it->second;
  }
  // Inserts (k, v) unless k is present; returns the entry and whether it was inserted.
  std::pair<V*, bool> Emplace(Key128 k, const V& v) {
    if (m_.size() >= grow_at_) Rehash(2 * capacity() + 1);  // twice the groups of 15 slots
    auto [it, inserted] = m_.try_emplace(k, v);
    return {&it->second, inserted};
  }
  // Removes k; false if absent. Halves the array once it is less than 1/8 full (never below
  // the initial size).
  bool Erase(Key128 k) {
    if (m_.erase(k) == 0) return false;
    if (m_.size() * 8 < capacity() && capacity() > min_capacity_) Rehash(capacity() / 2);
    return true;
  }

 private:
  // The key is already a hash: its second word is used as is (is_avalanching: boost does not
  // mix it again).
  struct Hash {
    using is_avalanching = void;
    size_t operator()(const Key128& k) const { return static_cast<size_t>(k.b); }
  };

  void Rehash(size_t slots) {
    m_.rehash(slots);
    grow_at_ = static_cast<size_t>(static_cast<double>(capacity()) * max_load_);
  }

  double max_load_;
  size_t grow_at_ = 0;  // doubles before an insert that would hold more than this
  size_t min_capacity_ = 0;
  boost::unordered_flat_map<Key128, V, Hash> m_;
};

}  // namespace rtb::bidder
