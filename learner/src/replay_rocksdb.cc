// RocksDB replay store. Layout (schemas/replay-rocksdb-v1.md):
//   "t" + 8-byte big-endian sequence -> EncodeTransition(t)
//   "m:next"  -> 8-byte big-endian next sequence   (written in the same WriteBatch as the
//   "m:first" -> 8-byte big-endian first sequence   transition: all or nothing)
// The WAL is on; a write that returned OK survives a process kill (kill -9). With sync = true
// it also survives power loss.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <filesystem>
#include <mutex>

#include "rtb/core/rocksdb_log.h"
#include "rtb/learner/replay_store.h"

namespace rtb::learn {
namespace {

std::string Key(uint64_t seq) {
  std::string k(9, '\0');
  k[0] = 't';
  for (int i = 0; i < 8; ++i) k[1 + i] = static_cast<char>((seq >> (56 - 8 * i)) & 0xff);
  return k;
}

std::string U64(uint64_t v) { return Key(v).substr(1); }

bool ParseU64(const std::string& s, uint64_t* v) {
  if (s.size() != 8) return false;
  *v = 0;
  for (int i = 0; i < 8; ++i) *v = (*v << 8) | static_cast<uint8_t>(s[i]);
  return true;
}

class RocksDbReplayStore : public ReplayStore {
 public:
  RocksDbReplayStore(std::unique_ptr<rocksdb::DB> db, ReplayOptions opt, uint64_t first,
                     uint64_t next)
      : db_(std::move(db)), opt_(opt), first_(first), next_(next) {}

  Result<uint64_t> Append(const Transition& t, const Metadata& meta) override {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t seq = next_;
    uint64_t first = first_;
    rocksdb::WriteBatch batch;
    batch.Put(Key(seq), EncodeTransition(t));
    for (const auto& [k, v] : meta) batch.Put("u:" + k, v);
    batch.Put("m:next", U64(seq + 1));
    if (seq + 1 - first > opt_.capacity) {
      batch.Delete(Key(first));
      ++first;
      batch.Put("m:first", U64(first));
    }
    rocksdb::WriteOptions wo;
    wo.sync = opt_.sync;
    const rocksdb::Status st = db_->Write(wo, &batch);
    if (!st.ok()) return Status::IoError("replay store append: " + st.ToString());
    next_ = seq + 1;
    first_ = first;
    return seq;
  }

  Status PutMeta(const Metadata& meta) override {
    rocksdb::WriteBatch batch;
    for (const auto& [k, v] : meta) batch.Put("u:" + k, v);
    rocksdb::WriteOptions wo;
    wo.sync = opt_.sync;
    const rocksdb::Status st = db_->Write(wo, &batch);
    if (!st.ok()) return Status::IoError("replay store metadata: " + st.ToString());
    return Status::Ok();
  }

  Result<std::string> GetMeta(const std::string& key) const override {
    std::string value;
    const rocksdb::Status st = db_->Get(rocksdb::ReadOptions(), "u:" + key, &value);
    if (st.IsNotFound()) return Status::NotFound("no metadata " + key);
    if (!st.ok()) return Status::IoError("replay store metadata: " + st.ToString());
    return value;
  }

  uint64_t Size() const override {
    std::lock_guard<std::mutex> l(mu_);
    return next_ - first_;
  }
  uint64_t NextSeq() const override {
    std::lock_guard<std::mutex> l(mu_);
    return next_;
  }
  uint64_t FirstSeq() const override {
    std::lock_guard<std::mutex> l(mu_);
    return first_;
  }

  Result<Transition> Get(uint64_t seq) const override {
    std::string value;
    const rocksdb::Status st = db_->Get(rocksdb::ReadOptions(), Key(seq), &value);
    if (st.IsNotFound()) return Status::NotFound("no transition " + std::to_string(seq));
    if (!st.ok()) return Status::IoError("replay store get: " + st.ToString());
    return DecodeTransition(value);
  }

  Result<std::vector<Transition>> Sample(size_t n, Rng& rng) const override {
    uint64_t first, next;
    {
      std::lock_guard<std::mutex> l(mu_);
      first = first_;
      next = next_;
    }
    if (next == first) return Status::FailedPrecondition("replay store is empty");
    std::vector<std::string> keys(n);
    std::vector<rocksdb::Slice> slices;
    slices.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      keys[i] = Key(first + rng.UniformInt(next - first));
      slices.emplace_back(keys[i]);
    }
    std::vector<std::string> values;
    const auto statuses = db_->MultiGet(rocksdb::ReadOptions(), slices, &values);
    std::vector<Transition> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!statuses[i].ok())
        return Status::IoError("replay store sample: " + statuses[i].ToString());
      RTB_ASSIGN_OR_RETURN(Transition t, DecodeTransition(values[i]));
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  std::unique_ptr<rocksdb::DB> db_;
  ReplayOptions opt_;
  mutable std::mutex mu_;
  uint64_t first_, next_;
};

}  // namespace

Result<std::unique_ptr<ReplayStore>> OpenRocksDbReplayStore(const std::string& path,
                                                            ReplayOptions opt) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);  // parents too; RocksDB makes only the last
  rocksdb::Options o;
  o.create_if_missing = true;
  o.max_open_files = 64;
  o.info_log = log::NewProcessLogger("replay");  // no LOG file in the state dir (rocksdb_log.h)
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status st = rocksdb::DB::Open(o, path, &raw);
  if (!st.ok()) return Status::IoError(path + ": cannot open replay store: " + st.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  uint64_t first = 0, next = 0;
  std::string v;
  if (db->Get(rocksdb::ReadOptions(), "m:next", &v).ok() && !ParseU64(v, &next)) {
    return Status::Corruption(path + ": replay store marker m:next is malformed");
  }
  if (db->Get(rocksdb::ReadOptions(), "m:first", &v).ok() && !ParseU64(v, &first)) {
    return Status::Corruption(path + ": replay store marker m:first is malformed");
  }
  if (first > next) return Status::Corruption(path + ": replay store markers disagree");
  return std::unique_ptr<ReplayStore>(
      std::make_unique<RocksDbReplayStore>(std::move(db), opt, first, next));
}

}  // namespace rtb::learn
