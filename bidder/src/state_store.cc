#include "rtb/bidder/state_store.h"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "rtb/core/rocksdb_log.h"

namespace rtb::bidder {

struct StateStore::Impl {
  std::unique_ptr<rocksdb::DB> db;
  std::mutex mu;                         // serialises check-then-write of one key
  std::atomic<bool> fail_writes{false};  // FailWritesForTest
  Status Injected() const {
    return Status::IoError("bidder state: IO error: No space left on device (injected)");
  }
};

StateStore::StateStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StateStore::~StateStore() = default;

Result<std::unique_ptr<StateStore>> StateStore::Open(const std::string& path,
                                                     const StateStoreOptions& opt) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  rocksdb::Options o;
  o.create_if_missing = true;
  o.info_log = log::NewProcessLogger("state");  // no LOG file on the state disk (rocksdb_log.h)
  o.write_buffer_size = static_cast<size_t>(std::max(1, opt.write_buffer_mb)) << 20;
  // A notice's key is looked up before it is booked, and is almost never there: with more,
  // smaller files, a Bloom filter answers most of those lookups without reading a block.
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* raw = nullptr;
  const auto st = rocksdb::DB::Open(o, path, &raw);
  if (!st.ok()) return Status::IoError(path + ": cannot open bidder state: " + st.ToString());
  auto impl = std::make_unique<Impl>();
  impl->db.reset(raw);
  return std::unique_ptr<StateStore>(new StateStore(std::move(impl)));
}

namespace {
// "notice/<hour, 10 digits>/<key>": sorted by the bid's hour, so old hours are one range.
std::string NoticePrefix(int64_t hour) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "notice/%010lld/",
                static_cast<long long>(std::clamp<int64_t>(hour, 0, 9'999'999'999)));
  return buf;
}
// The learned arm's key is the one spend had before the A/B test (all spend was learned then).
std::string SpendKey(uint32_t adv, const std::string& day, Arm arm) {
  return "spend/" + day + "/" + std::to_string(adv) + (arm == Arm::kManual ? "/manual" : "");
}
int64_t Decode(const std::string& v) {
  int64_t x = 0;
  if (v.size() == sizeof x) std::memcpy(&x, v.data(), sizeof x);
  return x;
}
std::string Encode(int64_t x) { return std::string(reinterpret_cast<const char*>(&x), sizeof x); }
}  // namespace

Result<bool> StateStore::ApplyOnce(int64_t bid_hour, const std::string& key, uint32_t adv,
                                   const std::string& day, Micros spend, const OutboxEntry* outbox,
                                   Arm arm) {
  std::lock_guard<std::mutex> l(impl_->mu);
  if (impl_->fail_writes.load()) return impl_->Injected();
  std::string v;
  const std::string nk = NoticePrefix(bid_hour) + key;
  auto st = impl_->db->Get(rocksdb::ReadOptions(), nk, &v);
  if (st.ok()) return false;
  if (!st.IsNotFound()) return Status::IoError("bidder state: " + st.ToString());
  rocksdb::WriteBatch b;
  b.Put(nk, "1");
  if (outbox != nullptr) {
    b.Put("outbox/" + outbox->eid, outbox->topic + '\t' + outbox->key + '\t' + outbox->payload);
  }
  if (spend.value() != 0) {
    std::string cur;
    const std::string sk = SpendKey(adv, day, arm);
    int64_t total = 0, next = 0;
    if (impl_->db->Get(rocksdb::ReadOptions(), sk, &cur).ok()) total = Decode(cur);
    // Checked: a spend that would overflow (or go negative) is refused, never wrapped.
    if (spend.value() < 0 || __builtin_add_overflow(total, spend.value(), &next)) {
      return Status::InvalidArgument("spend of advertiser " + std::to_string(adv) +
                                     " would overflow");
    }
    b.Put(sk, Encode(next));
  }
  st = impl_->db->Write(rocksdb::WriteOptions(), &b);
  if (!st.ok()) return Status::IoError("bidder state: " + st.ToString());
  return true;
}

void StateStore::ForgetOutbox(const std::string& eid) {
  impl_->db->Delete(rocksdb::WriteOptions(), "outbox/" + eid);
}

std::vector<OutboxEntry> StateStore::Outbox() const {
  std::vector<OutboxEntry> out;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix = "outbox/";
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const std::string v = it->value().ToString();
    const size_t t1 = v.find('\t'), t2 = t1 == std::string::npos ? t1 : v.find('\t', t1 + 1);
    if (t2 == std::string::npos) continue;
    out.push_back({it->key().ToString().substr(prefix.size()), v.substr(0, t1),
                   v.substr(t1 + 1, t2 - t1 - 1), v.substr(t2 + 1)});
  }
  return out;
}

Status StateStore::ForgetNoticesBefore(int64_t hour) {
  const std::string from = NoticePrefix(0), to = NoticePrefix(hour);
  if (from >= to) return Status::Ok();
  const auto st =
      impl_->db->DeleteRange(rocksdb::WriteOptions(), impl_->db->DefaultColumnFamily(), from, to);
  if (!st.ok()) return Status::IoError("bidder state: " + st.ToString());
  return Status::Ok();
}

Micros StateStore::Spent(uint32_t adv, const std::string& day, Arm arm) const {
  std::string v;
  if (impl_->db->Get(rocksdb::ReadOptions(), SpendKey(adv, day, arm), &v).ok()) {
    return Micros(Decode(v));
  }
  return Micros(0);
}

LeaseLineage NextLeaseLineage(const std::string& kept, const std::string& self, size_t max) {
  std::vector<std::pair<std::string, bool>> earlier;  // (instance, answered)
  for (size_t at = 0; at <= kept.size();) {
    const size_t comma = std::min(kept.find(',', at), kept.size());
    std::string e = kept.substr(at, comma - at);
    at = comma + 1;
    const bool answered = !e.empty() && e[0] == '!';
    if (answered) e.erase(0, 1);
    if (!e.empty()) earlier.emplace_back(std::move(e), answered);
  }
  while (earlier.size() > max) {
    const auto oldest =
        std::find_if(earlier.rbegin(), earlier.rend(), [](const auto& e) { return !e.second; });
    earlier.erase(oldest != earlier.rend() ? std::next(oldest).base() : earlier.end() - 1);
  }
  LeaseLineage out;
  out.kept = self;
  for (auto& [e, answered] : earlier) {
    out.kept += ",";
    if (answered) out.kept += "!";
    out.kept += e;
    out.earlier.push_back(std::move(e));
  }
  return out;
}

std::string MarkLeaseAnswered(const std::string& kept, const std::string& self) {
  if (kept != self && kept.rfind(self + ",", 0) != 0) return "";
  return "!" + kept;
}

Result<std::string> StateStore::GetMeta(const std::string& key) const {
  std::string v;
  const auto st = impl_->db->Get(rocksdb::ReadOptions(), "meta/" + key, &v);
  if (st.IsNotFound()) return Status::NotFound(key);
  if (!st.ok()) return Status::IoError("bidder state: " + st.ToString());
  return v;
}

Status StateStore::PutMeta(const std::string& key, const std::string& value) {
  if (impl_->fail_writes.load()) return impl_->Injected();
  rocksdb::WriteOptions wo;
  wo.sync = true;
  const auto st = impl_->db->Put(wo, "meta/" + key, value);
  if (!st.ok()) return Status::IoError("bidder state: " + st.ToString());
  return Status::Ok();
}

}  // namespace rtb::bidder

namespace rtb::bidder {

Status StateStore::Probe() {
  if (impl_->fail_writes.load()) return impl_->Injected();
  // A write that failed for lack of space leaves RocksDB in a background error: every later
  // write fails until it resumes (which it can once there is room).
  (void)impl_->db->Resume();
  rocksdb::WriteOptions wo;
  wo.sync = true;
  auto st = impl_->db->Put(wo, "probe", std::string(4096, 'p'));
  if (st.ok()) st = impl_->db->Delete(wo, "probe");
  if (!st.ok()) return Status::IoError("bidder state: " + st.ToString());
  return Status::Ok();
}

void StateStore::FailWritesForTest(bool fail) { impl_->fail_writes.store(fail); }

}  // namespace rtb::bidder
