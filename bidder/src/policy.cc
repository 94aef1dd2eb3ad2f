#include "rtb/bidder/policy.h"

namespace rtb::bidder {

bool PolicyHolder::Install(std::unique_ptr<PolicySnapshot> snap) {
  std::lock_guard<std::mutex> l(mu_);
  const PolicySnapshot* cur = current_.load(std::memory_order_relaxed);
  if (cur != nullptr && snap->table.version < cur->table.version) {
    rejected_.fetch_add(1);
    return false;
  }
  all_.push_back(std::move(snap));
  current_.store(all_.back().get(), std::memory_order_release);
  return true;
}

}  // namespace rtb::bidder
