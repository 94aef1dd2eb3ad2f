#include "rtb/core/lease.h"

#include <algorithm>
#include <cmath>

namespace rtb {

int64_t LeaseWant(double spend_micros_per_s, int64_t horizon_ms, int64_t min_micros,
                  int64_t unspent_micros) {
  const double need = std::max(0.0, spend_micros_per_s) * static_cast<double>(horizon_ms) / 1000.0;
  const int64_t target = std::max(min_micros, static_cast<int64_t>(std::ceil(need)));
  return std::max<int64_t>(0, target - std::max<int64_t>(0, unspent_micros));
}

LeaseLedger::LeaseLedger(LeaseConfig cfg) : cfg_(cfg) {}

void LeaseLedger::SetBudget(const LeaseKey& key, Micros budget) {
  std::lock_guard<std::mutex> l(mu_);
  budgets_[key].budget = std::max<int64_t>(0, budget.value());
}

void LeaseLedger::Touch(const std::string& bidder, int64_t now_ms) {
  Bidder& b = bidders_[bidder];
  b.seen_ms = std::max(b.seen_ms, now_ms);
  if (b.dead_since_ms < 0) return;
  // Back from the dead: its holdings are what it had spent and reserved when it died; its
  // reserved part, if not yet released, stays its own again.
  b.dead_since_ms = -1;
  for (auto& [key, bud] : budgets_) {
    auto it = bud.by_bidder.find(bidder);
    if (it == bud.by_bidder.end()) continue;
    it->second.reclaimed = false;
    it->second.reserved_released = false;
  }
}

void LeaseLedger::Heartbeat(const std::string& bidder, int64_t now_ms) {
  std::lock_guard<std::mutex> l(mu_);
  Touch(bidder, now_ms);
}

int64_t LeaseLedger::Request(const std::string& bidder, const LeaseKey& key, int64_t want,
                             int64_t now_ms, int64_t need) {
  std::lock_guard<std::mutex> l(mu_);
  Touch(bidder, now_ms);
  ++grants_;
  auto it = budgets_.find(key);
  want = std::max(want, need);
  if (it == budgets_.end() || want <= 0) return 0;
  Budget& b = it->second;
  const int64_t pool = b.budget - b.held;
  if (pool <= 0) return 0;
  const int64_t cap = std::max<int64_t>(
      std::min(pool, cfg_.min_grant_micros),
      static_cast<int64_t>(std::floor(static_cast<double>(pool) * cfg_.max_pool_share)));
  const int64_t grant = std::min(pool, std::max(need, std::min(want, cap)));
  b.held += grant;
  b.by_bidder[bidder].held += grant;
  return grant;
}

int64_t LeaseLedger::Return(const std::string& bidder, const LeaseKey& key, int64_t amount,
                            int64_t now_ms) {
  std::lock_guard<std::mutex> l(mu_);
  Touch(bidder, now_ms);
  auto it = budgets_.find(key);
  if (it == budgets_.end() || amount <= 0) return 0;
  auto h = it->second.by_bidder.find(bidder);
  if (h == it->second.by_bidder.end()) return 0;
  const int64_t free = h->second.held - h->second.spent - h->second.reserved;
  const int64_t back = std::clamp<int64_t>(amount, 0, std::max<int64_t>(0, free));
  h->second.held -= back;
  it->second.held -= back;
  return back;
}

void LeaseLedger::Report(const std::string& bidder, const LeaseKey& key, int64_t spent,
                         int64_t reserved, int64_t now_ms, int64_t cap) {
  std::lock_guard<std::mutex> l(mu_);
  Touch(bidder, now_ms);
  Holding& h = budgets_[key].by_bidder[bidder];
  if (spent < h.spent) return;  // an older report
  h.spent = spent;
  h.reserved = std::max<int64_t>(0, reserved);
  h.cap = std::max<int64_t>(0, cap);
}

int LeaseLedger::Reclaim(int64_t now_ms) {
  std::lock_guard<std::mutex> l(mu_);
  int reclaimed = 0;
  for (auto& [name, b] : bidders_) {
    if (b.dead_since_ms < 0 && now_ms - b.seen_ms > cfg_.heartbeat_timeout_ms) {
      b.dead_since_ms = now_ms;
    }
    if (b.dead_since_ms < 0) continue;
    const bool window_over =
        now_ms - b.seen_ms > cfg_.heartbeat_timeout_ms + cfg_.billing_window_ms;
    for (auto& [key, bud] : budgets_) {
      auto it = bud.by_bidder.find(name);
      if (it == bud.by_bidder.end()) continue;
      Holding& h = it->second;
      if (!h.reclaimed) {
        h.reclaimed = true;
        const int64_t back = std::max<int64_t>(0, h.held - std::max(h.spent + h.reserved, h.cap));
        if (back > 0) ++reclaimed;
        h.held -= back;
        bud.held -= back;
      }
      if (window_over && !h.reserved_released) {
        h.reserved_released = true;
        const int64_t back = std::max<int64_t>(0, h.held - std::max(h.spent, h.cap));
        h.held -= back;
        bud.held -= back;
        h.reserved = 0;
      }
    }
  }
  reclaims_ += reclaimed;
  return reclaimed;
}

void LeaseLedger::Restore(const std::string& bidder, const LeaseKey& key, int64_t held,
                          int64_t now_ms) {
  std::lock_guard<std::mutex> l(mu_);
  Touch(bidder, now_ms);
  Budget& b = budgets_[key];
  Holding& h = b.by_bidder[bidder];
  b.held += std::max<int64_t>(0, held) - h.held;
  h.held = std::max<int64_t>(0, held);
  // Until its bidder reports, a restored lease counts as spent: a reclaim frees none of it.
  h.spent = std::max(h.spent, h.held);
}

std::vector<LeaseLedger::Lease> LeaseLedger::Leases() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Lease> out;
  for (const auto& [key, b] : budgets_) {
    for (const auto& [name, h] : b.by_bidder)
      out.push_back({key, name, h.held, h.spent, h.reserved});
  }
  return out;
}

LeaseLedger::Totals LeaseLedger::Of(const LeaseKey& key) const {
  std::lock_guard<std::mutex> l(mu_);
  Totals t;
  auto it = budgets_.find(key);
  if (it == budgets_.end()) return t;
  t.budget = it->second.budget;
  t.held = it->second.held;
  for (const auto& [name, h] : it->second.by_bidder) t.spent += h.spent;
  return t;
}

LeaseLedger::Totals LeaseLedger::OfDay(int64_t day, int* budgets) const {
  std::lock_guard<std::mutex> l(mu_);
  Totals t;
  int n = 0;
  for (auto it = budgets_.lower_bound(LeaseKey{day, 0, 0});
       it != budgets_.end() && it->first.day == day; ++it, ++n) {
    t.budget += it->second.budget;
    t.held += it->second.held;
    for (const auto& [name, h] : it->second.by_bidder) t.spent += h.spent;
  }
  if (budgets != nullptr) *budgets = n;
  return t;
}

int64_t LeaseLedger::Held(const std::string& bidder, const LeaseKey& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = budgets_.find(key);
  if (it == budgets_.end()) return 0;
  auto h = it->second.by_bidder.find(bidder);
  return h == it->second.by_bidder.end() ? 0 : h->second.held;
}

int64_t LeaseLedger::reclaims() const {
  std::lock_guard<std::mutex> l(mu_);
  return reclaims_;
}

int64_t LeaseLedger::grants() const {
  std::lock_guard<std::mutex> l(mu_);
  return grants_;
}

}  // namespace rtb
