// BidRecords: what this bidder bid, kept for its notices (win, billing, loss, click...): the
// price bid per (auction, imp, advertiser) and the user's consumer cluster, for
// bid_record_ttl_ms. A notice is checked against its record (a billing above the bid is
// refused) and its event is stamped with the cluster.
//
// Thread-safe: many independently locked shards (FlatTable + an expiry queue each); the bid
// path adds a record and expires a few old ones of the same shard, so expiry keeps pace with
// traffic without a stall; Expire() is the periodic sweep for when traffic stops.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "rtb/bidder/flat_table.h"
#include "rtb/core/types.h"

namespace rtb::bidder {

struct BidRecord {
  int64_t price_cpm = 0;  // the CPM price bid, micros
  int64_t expires_ms = 0;
  int cluster = 0;  // the user's consumer cluster j
};

class BidRecords {
 public:
  // expected_per_second x ttl_ms sizes the shards up front (their memory is written now, not
  // on the bid path).
  BidRecords(int64_t expected_per_second, int64_t ttl_ms);

  // Remembers a bid until now_ms + ttl; the same key again replaces the record.
  void Record(Key128 key, Micros price_cpm, int cluster, int64_t now_ms);
  std::optional<BidRecord> Find(Key128 key) const;
  // Forgets records expired before now_ms, at most max_per_shard per shard.
  void Expire(int64_t now_ms, int max_per_shard);
  // Records held and the slots of their tables (metrics).
  std::pair<size_t, size_t> Size() const;

  static constexpr int kShards = 256;
  static constexpr int kExpirePerRecord = 2;

 private:
  struct Shard {
    mutable std::mutex mu;
    FlatTable<BidRecord> m;                       // GUARDED_BY(mu)
    std::deque<std::pair<int64_t, Key128>> fifo;  // GUARDED_BY(mu), expiry order
  };
  static void ExpireShard(Shard& s, int64_t now_ms, int max);  // REQUIRES(s.mu)
  Shard& ShardOf(Key128 key) const { return shards_[key.a % kShards]; }

  const int64_t ttl_ms_;
  mutable Shard shards_[kShards];
};

}  // namespace rtb::bidder
