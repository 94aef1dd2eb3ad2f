// Durable bidder state on RocksDB: spend per advertiser and day, and notice de-duplication.
// A notice is applied once per (type, auction id, imp id, advertiser), also across a restart: the
// dedupe key and the spend it books are written in one WriteBatch (all or nothing). Dedupe keys
// are filed under the hour of their bid, and the hours past the retention are deleted whole
// (ForgetNoticesBefore).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtb/core/ab.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::bidder {

struct OutboxEntry {
  std::string eid, topic, key, payload;
};

// The lease lineage a state store keeps (meta "lease_lineage"): the processes that used the store,
// newest first, ',' between them, '!' before one the lease coordinator answered (one that may
// hold the bidder's name). A process starting on `kept` is `self`: `earlier` is what its
// lease messages say (at most `max` processes), `kept` what the store keeps now. Past `max`
// earlier processes, the oldest unanswered ones go first: starts that never reached the
// coordinator (a crash loop while Kafka is down) do not push out the one that holds the name.
struct LeaseLineage {
  std::vector<std::string> earlier;
  std::string kept;
};
LeaseLineage NextLeaseLineage(const std::string& kept, const std::string& self, size_t max);
// `kept` with its first process, `self`, marked answered; "" when `self` is not first.
std::string MarkLeaseAnswered(const std::string& kept, const std::string& self);

// How the store's RocksDB is tuned.
struct StateStoreOptions {
  // The memtable's size, MB. What a process killed mid-day leaves in RocksDB's write-ahead log
  // is at most about twice this much (a memtable being flushed and the next), and the next
  // start replays it before it serves: 8 MB opened in 0.03-0.12 s after 60,000-200,000 booked
  // notices, RocksDB's default 64 MB in 0.80-1.03 s (bench/state_store_reopen.cc).
  int write_buffer_mb = 8;
};

class StateStore {
 public:
  static Result<std::unique_ptr<StateStore>> Open(const std::string& path,
                                                  const StateStoreOptions& opt = {});
  ~StateStore();
  // Marks (key) of a bid made in hour `bid_hour` (unix ms / 3,600,000) seen and adds `spend`
  // to advertiser `adv`'s budget of arm `arm` on `day` in one batch. Returns false (and changes
  // nothing) if the key was seen before. `outbox` (optional): an event to keep in the same batch
  // until Kafka or the spill file has it (transactional outbox: a notice's event survives kill -9
  // of the bidder).
  Result<bool> ApplyOnce(int64_t bid_hour, const std::string& key, uint32_t adv,
                         const std::string& day, Micros spend, const OutboxEntry* outbox = nullptr,
                         Arm arm = Arm::kLearned);
  // Deletes the dedupe keys of bids made before hour `hour` (one range deletion; RocksDB's
  // compactions then drop the data). The caller refuses notices of those bids from then on.
  Status ForgetNoticesBefore(int64_t hour);
  // Drops an outbox entry (its event reached Kafka or the spill file).
  void ForgetOutbox(const std::string& eid);
  // Outbox entries left by an earlier run (to re-send at start).
  std::vector<OutboxEntry> Outbox() const;
  Micros Spent(uint32_t adv, const std::string& day, Arm arm = Arm::kLearned) const;
  // The value of meta key `key` (kNotFound when absent), and setting it (durably).
  Result<std::string> GetMeta(const std::string& key) const;
  Status PutMeta(const std::string& key, const std::string& value);
  // Whether the store takes writes again after one failed (a full disk): resumes RocksDB from
  // its background error if it is in one, then writes (synced) and deletes a probe key.
  Status Probe();

  // Failure seam (tests): while set, every write (ApplyOnce, PutMeta, Probe) fails as on a
  // full disk ("No space left on device") and changes nothing.
  void FailWritesForTest(bool fail);

 private:
  struct Impl;
  explicit StateStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtb::bidder
