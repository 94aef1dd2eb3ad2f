#include <deque>
#include <map>

#include "rtb/learner/replay_store.h"

namespace rtb::learn {
namespace {

class MemoryReplayStore : public ReplayStore {
 public:
  explicit MemoryReplayStore(ReplayOptions opt) : opt_(opt) {}

  Result<uint64_t> Append(const Transition& t, const Metadata& meta) override {
    for (const auto& [k, v] : meta) meta_[k] = v;
    items_.push_back(t);
    if (items_.size() > opt_.capacity) {
      items_.pop_front();
      ++first_;
    }
    return next_++;
  }
  Status PutMeta(const Metadata& meta) override {
    for (const auto& [k, v] : meta) meta_[k] = v;
    return Status::Ok();
  }
  Result<std::string> GetMeta(const std::string& key) const override {
    auto it = meta_.find(key);
    if (it == meta_.end()) return Status::NotFound("no metadata " + key);
    return it->second;
  }
  uint64_t Size() const override { return items_.size(); }
  uint64_t NextSeq() const override { return next_; }
  uint64_t FirstSeq() const override { return first_; }
  Result<Transition> Get(uint64_t seq) const override {
    if (seq < first_ || seq >= next_)
      return Status::NotFound("no transition " + std::to_string(seq));
    return items_[seq - first_];
  }
  Result<std::vector<Transition>> Sample(size_t n, Rng& rng) const override {
    if (items_.empty()) return Status::FailedPrecondition("replay store is empty");
    std::vector<Transition> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(items_[rng.UniformInt(items_.size())]);
    return out;
  }

 private:
  ReplayOptions opt_;
  std::deque<Transition> items_;
  std::map<std::string, std::string> meta_;
  uint64_t first_ = 0, next_ = 0;
};

}  // namespace

std::unique_ptr<ReplayStore> NewMemoryReplayStore(ReplayOptions opt) {
  return std::make_unique<MemoryReplayStore>(opt);
}

}  // namespace rtb::learn
