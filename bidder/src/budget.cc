#include "rtb/bidder/budget.h"

#include <algorithm>

namespace rtb::bidder {

BudgetLedger::BudgetLedger(std::vector<Micros> budgets, std::vector<Micros> spent,
                           int64_t expected_open)
    : n_(budgets.size()), slots_(new Slot[budgets.size()]) {
  // Each shard sized for its share, plus 1/8 for an uneven spread; the fill limits are
  // staggered (StaggeredMaxLoad) so that the shards do not double together.
  const auto initial =
      static_cast<size_t>(std::max<int64_t>(kShardInitialSize, expected_open / kShards * 9 / 8));
  for (int i = 0; i < kShards; ++i) {
    shards_[i].open = FlatTable<Reservation>(initial, StaggeredMaxLoad(i, kShards));
  }
  for (size_t k = 0; k < budgets.size(); ++k) {
    slots_[k].limit.store(budgets[k].value());
    const int64_t s = k < spent.size() ? spent[k].value() : 0;
    slots_[k].spent.store(s);
    slots_[k].committed.store(s);
  }
}

bool BudgetLedger::TryReserve(size_t adv, Key128 k, Micros amount, int64_t now_ms,
                              int64_t deadline_ms) {
  Slot& s = slots_[adv];
  int64_t cur = s.committed.load();
  do {
    if (cur + amount.value() > s.limit.load(std::memory_order_relaxed)) {
      s.denied.fetch_add(amount.value(), std::memory_order_relaxed);
      s.last_refused.store(amount.value(), std::memory_order_relaxed);
      return false;
    }
  } while (!s.committed.compare_exchange_weak(cur, cur + amount.value()));
  if (amount.value() > s.max_charge.load(std::memory_order_relaxed)) {
    s.max_charge.store(amount.value(), std::memory_order_relaxed);
  }
  Shard& sh = ShardOf(k);
  std::lock_guard<std::mutex> l(sh.mu);
  ExpireLocked(sh, now_ms, kExpirePerCall);
  const bool inserted = sh.open.Emplace(k, Reservation{adv, amount.value(), deadline_ms}).second;
  if (inserted) sh.by_deadline.emplace_back(deadline_ms, k);
  if (!inserted) {
    // The same key twice (a retried request): keep one reservation.
    s.committed.fetch_sub(amount.value());
    return true;
  }
  outstanding_.fetch_add(1);
  return true;
}

bool BudgetLedger::TrySetAside(size_t adv, Micros amount) {
  Slot& s = slots_[adv];
  int64_t cur = s.committed.load();
  do {
    if (cur + amount.value() > s.limit.load()) return false;
  } while (!s.committed.compare_exchange_weak(cur, cur + amount.value()));
  return true;
}

bool BudgetLedger::Release(Key128 k) {
  Shard& sh = ShardOf(k);
  std::lock_guard<std::mutex> l(sh.mu);
  const Reservation* r = sh.open.Find(k);
  if (r == nullptr) return false;
  slots_[r->adv].committed.fetch_sub(r->amount);
  sh.open.Erase(k);
  outstanding_.fetch_sub(1);
  return true;
}

Micros BudgetLedger::Settle(size_t adv, Key128 k, Micros price) {
  int64_t reserved = 0;
  size_t reserved_in = adv;
  {
    Shard& sh = ShardOf(k);
    std::lock_guard<std::mutex> l(sh.mu);
    if (const Reservation* r = sh.open.Find(k)) {
      reserved = r->amount;
      reserved_in = r->adv;  // the slot that reserved it (another arm's, if the key was reused)
      sh.open.Erase(k);
      outstanding_.fetch_sub(1);
    }
  }
  Slot& s = slots_[adv];
  s.spent.fetch_add(price.value());
  s.committed.fetch_add(price.value());
  slots_[reserved_in].committed.fetch_sub(reserved);
  return Micros(reserved);
}

int BudgetLedger::ExpireLocked(Shard& sh, int64_t now_ms, int max) {
  int n = 0;
  for (int popped = 0;
       popped < max && !sh.by_deadline.empty() && sh.by_deadline.front().first < now_ms; ++popped) {
    const Key128 k = sh.by_deadline.front().second;
    const Reservation* r = sh.open.Find(k);
    if (r != nullptr && r->deadline_ms < now_ms) {
      slots_[r->adv].committed.fetch_sub(r->amount);
      sh.open.Erase(k);
      outstanding_.fetch_sub(1);
      ++n;
    }
    sh.by_deadline.pop_front();
  }
  return n;
}

int BudgetLedger::ExpireBefore(int64_t now_ms, int max_per_shard) {
  int n = 0;
  for (auto& sh : shards_) {
    std::lock_guard<std::mutex> l(sh.mu);
    n += ExpireLocked(sh, now_ms, max_per_shard);
  }
  return n;
}

Micros BudgetLedger::Reserved(Key128 k) const {
  Shard& sh = ShardOf(k);
  std::lock_guard<std::mutex> l(sh.mu);
  const Reservation* r = sh.open.Find(k);
  return Micros(r == nullptr ? 0 : r->amount);
}

size_t BudgetLedger::capacity() const {
  size_t slots = 0;
  for (const Shard& sh : shards_) {
    std::lock_guard<std::mutex> l(sh.mu);
    slots += sh.open.capacity();
  }
  return slots;
}

}  // namespace rtb::bidder
