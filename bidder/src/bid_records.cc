#include "rtb/bidder/bid_records.h"

#include <algorithm>

namespace rtb::bidder {

BidRecords::BidRecords(int64_t expected_per_second, int64_t ttl_ms) : ttl_ms_(ttl_ms) {
  // Each shard sized for its share of a TTL's bids, plus 1/8 for an uneven spread; the fill
  // limits are staggered (StaggeredMaxLoad) so that the shards do not double together.
  const int64_t expected = expected_per_second * ttl_ms / 1000 / kShards * 9 / 8;
  for (int i = 0; i < kShards; ++i) {
    shards_[i].m = FlatTable<BidRecord>(static_cast<size_t>(std::max<int64_t>(256, expected)),
                                        StaggeredMaxLoad(i, kShards));
  }
}

void BidRecords::ExpireShard(Shard& s, int64_t now_ms, int max) {
  for (int n = 0; n < max && !s.fifo.empty() && s.fifo.front().first < now_ms; ++n) {
    const Key128 k = s.fifo.front().second;
    const BidRecord* r = s.m.Find(k);
    if (r != nullptr && r->expires_ms < now_ms) s.m.Erase(k);
    s.fifo.pop_front();
  }
}

void BidRecords::Record(Key128 key, Micros price_cpm, int cluster, int64_t now_ms) {
  Shard& s = ShardOf(key);
  const BidRecord rec{price_cpm.value(), now_ms + ttl_ms_, cluster};
  std::lock_guard<std::mutex> l(s.mu);
  ExpireShard(s, now_ms, kExpirePerRecord);
  auto [r, inserted] = s.m.Emplace(key, rec);
  if (!inserted) *r = rec;  // the same key again: the latest bid, remembered from now on
  s.fifo.emplace_back(rec.expires_ms, key);
}

std::optional<BidRecord> BidRecords::Find(Key128 key) const {
  Shard& s = ShardOf(key);
  std::lock_guard<std::mutex> l(s.mu);
  const BidRecord* r = s.m.Find(key);
  if (r == nullptr) return std::nullopt;
  return *r;
}

void BidRecords::Expire(int64_t now_ms, int max_per_shard) {
  for (Shard& s : shards_) {
    std::lock_guard<std::mutex> l(s.mu);
    ExpireShard(s, now_ms, max_per_shard);
  }
}

std::pair<size_t, size_t> BidRecords::Size() const {
  size_t records = 0, slots = 0;
  for (const Shard& s : shards_) {
    std::lock_guard<std::mutex> l(s.mu);
    records += s.m.size();
    slots += s.m.capacity();
  }
  return {records, slots};
}

}  // namespace rtb::bidder
