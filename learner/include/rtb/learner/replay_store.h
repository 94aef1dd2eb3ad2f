// The replay memory of the learner: an append-only sequence of transitions with uniform
// sampling. Two implementations: in memory (tests, A2C-free baselines) and RocksDB (default;
// schemas/replay-rocksdb-v1.md), which survives kill -9: every Append that returned OK is there
// after a crash, with no gaps in the sequence.
//
// Thread safety: one writer; Sample and Get may run concurrently with Append on RocksDB.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtb/core/rng.h"
#include "rtb/core/status.h"
#include "rtb/learner/transition.h"

namespace rtb::learn {

using Metadata = std::vector<std::pair<std::string, std::string>>;

class ReplayStore {
 public:
  virtual ~ReplayStore() = default;
  // Appends t; returns its sequence number (0, 1, 2, ...). Acknowledged once this returns OK.
  Result<uint64_t> Append(const Transition& t) { return Append(t, {}); }
  // Appends t and writes the metadata entries in the same atomic write (all or nothing): the
  // online learner stores its consumer position and open-step totals with each transition.
  // Metadata keys live in their own namespace ("u:" + key on RocksDB).
  virtual Result<uint64_t> Append(const Transition& t, const Metadata& meta) = 0;
  // Writes metadata alone (atomically).
  virtual Status PutMeta(const Metadata& meta) = 0;
  // NotFound when absent.
  virtual Result<std::string> GetMeta(const std::string& key) const = 0;
  // Number of transitions held (after capacity eviction).
  virtual uint64_t Size() const = 0;
  // Sequence number the next Append will get (= transitions ever appended).
  virtual uint64_t NextSeq() const = 0;
  // First sequence number still held.
  virtual uint64_t FirstSeq() const = 0;
  virtual Result<Transition> Get(uint64_t seq) const = 0;
  // n transitions drawn uniformly with replacement from [FirstSeq, NextSeq).
  // REQUIRES: Size() > 0.
  virtual Result<std::vector<Transition>> Sample(size_t n, Rng& rng) const = 0;
};

struct ReplayOptions {
  uint64_t capacity = 1000000;  // transitions kept; the oldest are evicted beyond this
  bool sync = false;            // fsync the WAL on every append (power-loss safety; slower)
};

std::unique_ptr<ReplayStore> NewMemoryReplayStore(ReplayOptions opt = {});
// Opens (or creates) a RocksDB replay store at path; reopening continues the sequence.
Result<std::unique_ptr<ReplayStore>> OpenRocksDbReplayStore(const std::string& path,
                                                            ReplayOptions opt = {});

}  // namespace rtb::learn
