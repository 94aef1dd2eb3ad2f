#include "rtb/bidder/budget.h"

#include <algorithm>
#include <charconv>

#include "rtb/bidder/state_store.h"
#include "rtb/core/log.h"

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

namespace {

// The state store's last current budget day (DayLedgers::Get).
constexpr char kBudgetDayMeta[] = "budget_day";

}  // namespace

// A simulated day is told only by its requests (ext.sim.t): opening the wall clock's day
// instead, a bidder that shares budgets asked leases for a day nobody plays (every slot, and
// the day after), and a restarted one did so before asking those of the day it was brought
// back into.
std::optional<int64_t> DayLedgers::StartDay() const {
  const int64_t today = clock_->UnixMs() / kDayMs;
  if (!cfg_->simulation_hooks) return today;
  const auto kept = state_->GetMeta(kBudgetDayMeta);
  if (!kept.ok()) return std::nullopt;
  int64_t day = 0;
  const auto [end, ec] = std::from_chars(kept->data(), kept->data() + kept->size(), day);
  if (ec != std::errc() || end != kept->data() + kept->size()) return std::nullopt;
  return day >= kSimDay ? day : today;
}

BudgetLedger* DayLedgers::Get(int64_t day) {
  if (day == cur_day_.load(std::memory_order_acquire)) return cur_ledger_.load();
  std::lock_guard<std::mutex> l(mu_);
  auto it = ledgers_.find(day);
  if (it == ledgers_.end()) {
    std::vector<Micros> budgets, spent;
    const std::string name = BudgetDayName(day);
    for (const Arm arm : {Arm::kLearned, Arm::kManual}) {  // ArmSlot order
      for (const Advertiser& a : cfg_->advertisers) {
        budgets.push_back(ArmBudget(a.daily_budget, arm, cfg_->ab.learned_share));
        spent.push_back(state_->Spent(a.id, name, arm));
      }
    }
    // The share may have changed since this day's spend was booked (a restart with another
    // ab.learned_share): what an arm spent beyond its new part comes off the other arm's, so
    // the advertiser's total never passes its budget.
    const size_t n = cfg_->advertisers.size();
    for (size_t k = 0; k < n; ++k) {
      const int64_t over_l = std::max<int64_t>(0, spent[k].value() - budgets[k].value());
      const int64_t over_m = std::max<int64_t>(0, spent[n + k].value() - budgets[n + k].value());
      budgets[n + k] = Micros(std::max<int64_t>(0, budgets[n + k].value() - over_l));
      budgets[k] = Micros(std::max<int64_t>(0, budgets[k].value() - over_m));
    }
    // Sharing budgets with other bidders: nothing more than what was spent until the lease
    // client applies this bidder's leases (LeaseClient).
    std::vector<bool> open(budgets.size(), false);
    if (cfg_->leases.enabled) {
      for (size_t k = 0; k < budgets.size(); ++k) {
        const LeaseView v = lease_view_ ? lease_view_(day, k) : LeaseView{};
        open[k] = v.open_limit >= 0;
        budgets[k] = Micros(std::max(
            spent[k].value(), std::min(budgets[k].value(), open[k] ? v.open_limit : v.held)));
      }
    }
    // The first day's tables are sized for the expected traffic (a bidder restarted under
    // load); later days grow theirs from small.
    const int64_t expected = ledgers_.empty() ? int64_t{cfg_->expected_bids_per_second} *
                                                    cfg_->reservation_timeout_ms / 1000
                                              : 0;
    it = ledgers_.emplace(day, std::make_unique<BudgetLedger>(budgets, spent, expected)).first;
    if (cfg_->leases.enabled) {
      for (size_t k = 0; k < budgets.size(); ++k) it->second->SetBidsOpen(k, open[k]);
    }
  }
  if (day > cur_day_.load()) {
    cur_ledger_.store(it->second.get());
    cur_day_.store(day, std::memory_order_release);
    // A restart under the simulated clock opens this day again (Bidder::Create).
    if (const Status st = state_->PutMeta(kBudgetDayMeta, std::to_string(day)); !st.ok()) {
      log::Get("bidder").warn("the current budget day {} was not kept: {}", BudgetDayName(day),
                              st.message());
    }
  }
  return it->second.get();
}

void DayLedgers::SetLeaseView(std::function<LeaseView(int64_t, size_t)> view) {
  std::lock_guard<std::mutex> l(mu_);
  lease_view_ = std::move(view);
}

void DayLedgers::ExpireBefore(int64_t now_ms, int max_per_shard) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [day, ledger] : ledgers_) ledger->ExpireBefore(now_ms, max_per_shard);
}

}  // namespace rtb::bidder
