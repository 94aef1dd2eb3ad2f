#include "rtb/bidder/state_store.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstring>
#include <filesystem>
#include <mutex>

namespace rtb::bidder {

struct StateStore::Impl {
  std::unique_ptr<rocksdb::DB> db;
  std::mutex mu;  // serialises check-then-write of one key
};

StateStore::StateStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StateStore::~StateStore() = default;

Result<std::unique_ptr<StateStore>> StateStore::Open(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  rocksdb::Options o;
  o.create_if_missing = true;
  o.keep_log_file_num = 4;
  rocksdb::DB* raw = nullptr;
  const auto st = rocksdb::DB::Open(o, path, &raw);
  if (!st.ok()) return Status::IoError(path + ": cannot open bidder state: " + st.ToString());
  auto impl = std::make_unique<Impl>();
  impl->db.reset(raw);
  return std::unique_ptr<StateStore>(new StateStore(std::move(impl)));
}

namespace {
std::string SpendKey(uint32_t adv, const std::string& day) {
  return "spend/" + day + "/" + std::to_string(adv);
}
int64_t Decode(const std::string& v) {
  int64_t x = 0;
  if (v.size() == sizeof x) std::memcpy(&x, v.data(), sizeof x);
  return x;
}
std::string Encode(int64_t x) { return std::string(reinterpret_cast<const char*>(&x), sizeof x); }
}  // namespace

Result<bool> StateStore::ApplyOnce(const std::string& key, uint32_t adv, const std::string& day,
                                   Micros spend) {
  std::lock_guard<std::mutex> l(impl_->mu);
  std::string v;
  const std::string nk = "notice/" + key;
  auto st = impl_->db->Get(rocksdb::ReadOptions(), nk, &v);
  if (st.ok()) return false;
  if (!st.IsNotFound()) return Status::IoError("bidder state: " + st.ToString());
  rocksdb::WriteBatch b;
  b.Put(nk, "1");
  if (spend.value() != 0) {
    std::string cur;
    const std::string sk = SpendKey(adv, day);
    int64_t total = 0;
    if (impl_->db->Get(rocksdb::ReadOptions(), sk, &cur).ok()) total = Decode(cur);
    b.Put(sk, Encode(total + spend.value()));
  }
  st = impl_->db->Write(rocksdb::WriteOptions(), &b);
  if (!st.ok()) return Status::IoError("bidder state: " + st.ToString());
  return true;
}

Micros StateStore::Spent(uint32_t adv, const std::string& day) const {
  std::string v;
  if (impl_->db->Get(rocksdb::ReadOptions(), SpendKey(adv, day), &v).ok()) return Micros(Decode(v));
  return Micros(0);
}

}  // namespace rtb::bidder
