#include "rtb/budget/lease.h"

#include <algorithm>
#include <cmath>

namespace rtb::budget {
namespace {
// Sums of non-negative money: at INT64_MAX rather than wrapped.
int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? (b < 0 ? INT64_MIN : INT64_MAX) : r;
}
}  // namespace

int64_t LeaseWant(double spend_micros_per_s, int64_t horizon_ms, int64_t min_micros,
                  int64_t unspent_micros) {
  const double need = std::max(0.0, spend_micros_per_s) * static_cast<double>(horizon_ms) / 1000.0;
  const int64_t target = std::max(min_micros, static_cast<int64_t>(std::ceil(need)));
  return std::max<int64_t>(0, target - std::max<int64_t>(0, unspent_micros));
}

LeaseLedger::LeaseLedger(LeaseConfig cfg) : cfg_(cfg) {}

std::optional<LeaseSizing> LeaseSizingNamed(std::string_view name) {
  if (name == "rate") return LeaseSizing::kRate;
  if (name == "share") return LeaseSizing::kShare;
  return std::nullopt;
}

const char* LeaseSizingName(LeaseSizing sizing) {
  return sizing == LeaseSizing::kShare ? "share" : "rate";
}

void LeaseLedger::SetBudget(const LeaseKey& key, Micros budget) {
  std::lock_guard<std::mutex> l(mu_);
  budgets_[key].budget = std::max<int64_t>(0, budget.value());
}

LeaseLedger::Bidder& LeaseLedger::BidderNamed(const std::string& bidder) {
  auto [it, added] = bidders_.try_emplace(bidder);
  if (added) shares_dirty_ = true;
  return it->second;
}

void LeaseLedger::Touch(const std::string& bidder, int64_t now_ms) {
  Bidder& b = BidderNamed(bidder);
  b.seen_ms = std::max(b.seen_ms, now_ms);
  if (b.late) return;  // sent before it died, read late: it stays dead (Heartbeat)
  if (b.dead_since_ms < 0) return;
  // Back from the dead: its holdings are what it had spent and reserved when it died; its
  // reserved part, if not yet released, stays its own again.
  b.dead_since_ms = -1;
  b.dead_sent_ms = -1;
  shares_dirty_ = true;
  for (auto& [key, bud] : budgets_) {
    auto it = bud.by_bidder.find(bidder);
    if (it == bud.by_bidder.end()) continue;
    it->second.reclaimed = false;
    it->second.reserved_released = false;
    bud.unused_live += Unused(it->second);
  }
}

template <typename F>
void LeaseLedger::Change(Budget& b, const std::string& bidder, Holding& h, F&& f) {
  const bool alive = Alive(bidder);
  if (alive) b.unused_live -= Unused(h);
  f(h);
  if (alive) b.unused_live += Unused(h);
}

bool LeaseLedger::Heartbeat(const std::string& bidder, int64_t now_ms, int64_t sent_ms) {
  std::lock_guard<std::mutex> l(mu_);
  Bidder& b = BidderNamed(bidder);
  // Sent before the bidder was found dead (by the bidders' clocks): one of the last messages of
  // a process that is gone, read after the reclaim. Its restart speaks later than that.
  b.late = b.dead_since_ms >= 0 && sent_ms >= 0 && sent_ms <= b.dead_sent_ms;
  Touch(bidder, now_ms);
  if (sent_ms >= 0) {
    // A late message moves both clocks of its silence on (Touch takes the read time): its
    // reserved part is released a billing window after its last message, not earlier.
    b.sent_ms = std::max(b.sent_ms, sent_ms);
    newest_sent_ms_ = std::max(newest_sent_ms_, sent_ms);
  }
  return b.dead_since_ms < 0;
}

int64_t LeaseLedger::SilentMs(const Bidder& b, int64_t now_ms, Silence silence) const {
  const int64_t by_clock = now_ms - b.seen_ms;
  if (b.sent_ms < 0 || newest_sent_ms_ < 0) return by_clock;
  const int64_t by_sent = newest_sent_ms_ - b.sent_ms;
  return silence == Silence::kAllRead ? std::max(by_clock, by_sent) : std::min(by_clock, by_sent);
}

void LeaseLedger::Traffic(const std::string& bidder, int64_t requests, int64_t at_ms) {
  std::lock_guard<std::mutex> l(mu_);
  Bidder& b = BidderNamed(bidder);
  // Counts closer together than this wait for a later one (a rate over a few milliseconds is
  // noise).
  constexpr int64_t kLeastSpanMs = 50;
  if (b.requests >= 0 && requests >= b.requests && at_ms - b.requests_ms < kLeastSpanMs) return;
  if (b.requests >= 0 && requests >= b.requests && at_ms > b.requests_ms) {
    const double inst = static_cast<double>(requests - b.requests) * 1000.0 /
                        static_cast<double>(at_ms - b.requests_ms);
    // A tenth of each new count's rate: a report interval's count is noisy (requests come in
    // bursts), a bidder's share of the traffic is not.
    b.rate = b.rate < 0 ? inst : 0.9 * b.rate + 0.1 * inst;
    shares_dirty_ = true;
  }
  if (b.requests < 0 || requests < b.requests || at_ms > b.requests_ms) {
    b.requests = requests;
    b.requests_ms = at_ms;
  }
}

const std::vector<LeaseLedger::Share>& LeaseLedger::Shares() const {
  if (!shares_dirty_) return shares_;
  shares_dirty_ = false;
  shares_.clear();
  double known = 0;
  int n_known = 0;
  for (const auto& [name, b] : bidders_) {  // by name
    if (b.dead_since_ms >= 0) continue;
    shares_.push_back({&name, b.rate, b.rate >= 0});
    if (b.rate >= 0) {
      known += b.rate;
      ++n_known;
    }
  }
  if (shares_.empty()) return shares_;
  if (n_known == 0 || known <= 0) {
    for (Share& x : shares_) x.share = 1.0 / static_cast<double>(shares_.size());
    RankShares();
    return shares_;
  }
  const double mean = known / n_known;
  double total = 0;
  for (Share& x : shares_) total += x.share = x.share >= 0 ? x.share : mean;
  for (Share& x : shares_) x.share /= total;
  RankShares();
  return shares_;
}

void LeaseLedger::RankShares() const {
  std::vector<size_t> line(shares_.size());
  for (size_t i = 0; i < line.size(); ++i) line[i] = i;
  const double k = static_cast<double>(shares_.size());
  auto step = [&](size_t i) {
    return std::lround(std::log(std::max(shares_[i].share * k, 1e-9)) / std::log(1.25));
  };
  // shares_ is by name: a stable sort by step keeps names in order within a step.
  std::stable_sort(line.begin(), line.end(), [&](size_t a, size_t b) { return step(a) > step(b); });
  for (size_t r = 0; r < line.size(); ++r) shares_[line[r]].rank = static_cast<int64_t>(r);
}

const LeaseLedger::Share* LeaseLedger::ShareOf(const std::string& bidder) const {
  const auto& w = Shares();
  const auto it = std::lower_bound(
      w.begin(), w.end(), bidder, [](const Share& x, const std::string& n) { return *x.name < n; });
  return it != w.end() && *it->name == bidder ? &*it : nullptr;
}

double LeaseLedger::TrafficShare(const std::string& bidder) const {
  std::lock_guard<std::mutex> l(mu_);
  const Share* s = ShareOf(bidder);
  return s == nullptr ? 0.0 : s->share;
}

std::vector<std::pair<std::string, double>> LeaseLedger::TrafficShares() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::pair<std::string, double>> out;
  for (const Share& s : Shares()) out.emplace_back(*s.name, s.share);
  return out;
}

bool LeaseLedger::IsAlive(const std::string& bidder) const {
  std::lock_guard<std::mutex> l(mu_);
  return Alive(bidder);
}

int64_t LeaseLedger::Unused(const Holding& h) {
  return std::max<int64_t>(0, h.held - h.spent - h.reserved);
}

bool LeaseLedger::Alive(const std::string& bidder) const {
  const auto it = bidders_.find(bidder);
  return it != bidders_.end() && it->second.dead_since_ms < 0;
}

int64_t LeaseLedger::Available(const Budget& b) {
  return std::max<int64_t>(0, b.budget - b.held) + b.unused_live;
}

bool LeaseLedger::SharesApplyTo(const Budget& b, size_t live) const {
  // Too little left to give every live bidder one bid's charge, and no mean bid charge known to
  // part it in whole bids: the refused bids' needs move what is left (Request), not the shares.
  return cfg_.sizing == LeaseSizing::kShare && live > 0 &&
         (WholeBids(b, live) ||
          !(b.unit > 0 && Available(b) / static_cast<int64_t>(live) < b.unit));
}

int64_t LeaseLedger::WholeBase(const Budget& b) const {
  int64_t base = std::max<int64_t>(0, b.budget - b.held);
  for (const auto& [name, h] : b.by_bidder) {
    if (Alive(name) && !h.reclaimed) base += std::max<int64_t>(0, h.held - h.spent);
  }
  return base;
}

bool LeaseLedger::WholeBids(const Budget& b, size_t live) const {
  return b.mean_unit > 0 && live > 1 && WholeBase(b) / static_cast<int64_t>(live) < b.mean_unit;
}

LeaseLedger::Part LeaseLedger::PartOf(const Budget& b, const Share& x, int64_t available) const {
  const auto h = b.by_bidder.find(*x.name);
  const int64_t unused = h == b.by_bidder.end() ? 0 : Unused(h->second);
  if (WholeBids(b, Shares().size())) {
    // Whole bids to the first in line, the rest to the next, nothing to the others; a bidder
    // short of its target by any amount is low (a bid it cannot cover whole would bid low).
    // Its reservations count as its own: a bid in flight moves nothing.
    const int64_t base = WholeBase(b);
    const int64_t n = base / b.mean_unit;
    const int64_t target = x.rank < n ? b.mean_unit : x.rank == n ? base - n * b.mean_unit : 0;
    const int64_t own =
        h == b.by_bidder.end() ? 0 : std::max<int64_t>(0, h->second.held - h->second.spent);
    return {&x, target, own, target, true};
  }
  const int64_t target = static_cast<int64_t>(std::floor(static_cast<double>(available) * x.share));
  // Below half its target, or unable to cover one bid's charge while its target could.
  const int64_t low = std::max(target / 2, target >= b.unit ? b.unit : int64_t{0});
  return {&x, target, unused, low, false};
}

void LeaseLedger::NoteUnit(const LeaseKey& key, int64_t unit) {
  if (unit <= 0) return;
  std::lock_guard<std::mutex> l(mu_);
  const auto it = budgets_.find(key);
  if (it == budgets_.end()) return;
  Budget& b = it->second;
  unit = std::min(unit, b.budget);
  b.unit_smoothed = b.unit_smoothed == 0 ? unit : b.unit_smoothed - b.unit_smoothed / 4 + unit / 4;
  if (b.mean_unit == 0 || std::abs(b.unit_smoothed - b.mean_unit) > b.mean_unit / 8) {
    b.mean_unit = b.unit_smoothed;
  }
}

int64_t LeaseLedger::TargetOf(const std::string& bidder, const LeaseKey& key) const {
  std::lock_guard<std::mutex> l(mu_);
  const auto it = budgets_.find(key);
  if (it == budgets_.end() || cfg_.sizing != LeaseSizing::kShare ||
      !WholeBids(it->second, Shares().size())) {
    return -1;
  }
  const Share* s = ShareOf(bidder);
  return s == nullptr ? -1 : PartOf(it->second, *s, Available(it->second)).target;
}

int64_t LeaseLedger::AvailableOf(const LeaseKey& key) const {
  std::lock_guard<std::mutex> l(mu_);
  const auto it = budgets_.find(key);
  return it == budgets_.end() ? 0 : Available(it->second);
}

bool LeaseLedger::SharesApply(const LeaseKey& key) const {
  std::lock_guard<std::mutex> l(mu_);
  const auto it = budgets_.find(key);
  return it != budgets_.end() && SharesApplyTo(it->second, Shares().size());
}

void LeaseLedger::Grant(Budget& b, const std::string& bidder, int64_t amount) {
  b.held += amount;
  Change(b, bidder, b.by_bidder[bidder], [&](Holding& h) { h.held += amount; });
}

int64_t LeaseLedger::Request(const std::string& bidder, const LeaseKey& key, int64_t want,
                             int64_t now_ms, int64_t need) {
  std::lock_guard<std::mutex> l(mu_);
  Touch(bidder, now_ms);
  ++grants_;
  if (!Alive(bidder)) return 0;  // an ask it sent before it died
  auto it = budgets_.find(key);
  if (it == budgets_.end()) return 0;
  Budget& b = it->second;
  b.unit = std::max(b.unit, need);
  const int64_t pool = b.budget - b.held;
  if (pool <= 0) return 0;
  const int64_t cap = std::max<int64_t>(
      std::min(pool, cfg_.min_grant_micros),
      static_cast<int64_t>(std::floor(static_cast<double>(pool) * cfg_.max_pool_share)));
  int64_t grant = 0;
  if (cfg_.sizing == LeaseSizing::kShare) {
    // Whatever it asked: up to its target, or its need. The share cap still applies: a bidder
    // asking before the others have said a word would otherwise count as the only one.
    const Share* s = ShareOf(bidder);
    const int64_t top_up = s == nullptr ? 0 : [&] {
      const Part p = PartOf(b, *s, Available(b));
      return p.target - p.unused;
    }();
    // Parted in whole bids, the parts decide: a need past its part would take the piece
    // another bidder's whole bid waits for.
    grant = WholeBids(b, Shares().size()) ? std::min(pool, std::max<int64_t>(0, top_up))
                                          : std::min(pool, std::max(need, std::min(top_up, cap)));
  } else {
    want = std::max(want, need);
    if (want <= 0) return 0;
    grant = std::min(pool, std::max(need, std::min(want, cap)));
  }
  grant = std::max<int64_t>(0, grant);
  Grant(b, bidder, grant);
  return grant;
}

std::vector<LeaseLedger::Move> LeaseLedger::Rebalance(const LeaseKey& key, int64_t now_ms,
                                                      const std::string* reporter) {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Move> moves;
  if (cfg_.sizing != LeaseSizing::kShare) return moves;
  auto it = budgets_.find(key);
  if (it == budgets_.end()) return moves;
  Budget& b = it->second;
  const auto& w = Shares();
  if (!SharesApplyTo(b, w.size())) return moves;
  const int64_t avail = Available(b);
  auto is_short = [&](const Part& p) {
    return p.unused < p.low && (p.whole || p.target - p.unused >= cfg_.min_grant_micros);
  };
  if (reporter != nullptr) {  // nothing to do unless the reporter is short
    const Share* x = ShareOf(*reporter);
    if (x == nullptr || !is_short(PartOf(b, *x, avail))) return moves;
  }
  std::vector<Part> parts;
  parts.reserve(w.size());
  for (const Share& x : w) parts.push_back(PartOf(b, x, avail));
  int64_t shortfall = 0;  // what the bidders still below their low marks miss of their targets
  for (Part& p : parts) {
    if (!is_short(p)) continue;
    // Money goes unasked only to a bidder whose traffic is measured: the first report of a
    // bidder the others have not been heard of yet would otherwise take all of it.
    if (!p.share->measured) continue;
    const int64_t g = std::min(std::max<int64_t>(0, b.budget - b.held), p.target - p.unused);
    if (g > 0) {
      Grant(b, *p.share->name, g);
      p.unused += g;
      moves.push_back({*p.share->name, g, 0});
    }
    if (p.unused < p.low) shortfall += p.target - p.unused;
  }
  if (shortfall <= 0) return moves;
  // The pool could not top everyone up: ask back what is held beyond a target (by more than a
  // quarter of it, so that the ordinary ups and downs of spend move nothing), no more in all
  // than the shortfall, from each holder in proportion to its excess.
  auto excess_of = [&](const Part& p) {
    const int64_t excess = p.unused - p.target;
    // Parted in whole bids, any excess (the bidder gives back any amount it is asked for; a bid
    // in flight only once its notice has come, so its holding may be asked again).
    if (p.whole) return std::max<int64_t>(0, excess);
    return excess >= std::max(cfg_.min_grant_micros, p.target / 4) ? excess : int64_t{0};
  };
  int64_t excess_sum = 0;
  for (const Part& p : parts) excess_sum += excess_of(p);
  for (const Part& p : parts) {
    const int64_t excess = excess_of(p);
    if (excess == 0) continue;
    const int64_t ask =
        excess_sum <= shortfall
            ? excess
            : static_cast<int64_t>(static_cast<double>(excess) * static_cast<double>(shortfall) /
                                   static_cast<double>(excess_sum));
    if (ask < (p.whole ? 1 : cfg_.min_grant_micros)) continue;
    Holding& h = b.by_bidder[*p.share->name];
    if (h.recalled_ms >= 0 && now_ms - h.recalled_ms < cfg_.recall_quiet_ms) continue;
    h.recalled_ms = now_ms;
    moves.push_back({*p.share->name, 0, ask});
  }
  return moves;
}

int64_t LeaseLedger::Return(const std::string& bidder, const LeaseKey& key, int64_t amount,
                            int64_t now_ms) {
  std::lock_guard<std::mutex> l(mu_);
  Touch(bidder, now_ms);
  auto it = budgets_.find(key);
  if (it == budgets_.end() || amount <= 0) return 0;
  auto h = it->second.by_bidder.find(bidder);
  if (h == it->second.by_bidder.end()) return 0;
  const int64_t back = std::clamp<int64_t>(amount, 0, Unused(h->second));
  Change(it->second, bidder, h->second, [&](Holding& x) {
    x.held -= back;
    if (back > 0) x.recalled_ms = -1;  // it gave: it may be asked again
  });
  it->second.held -= back;
  return back;
}

void LeaseLedger::Report(const std::string& bidder, const LeaseKey& key, int64_t spent,
                         int64_t reserved, int64_t now_ms, int64_t cap, int64_t seq) {
  std::lock_guard<std::mutex> l(mu_);
  Touch(bidder, now_ms);
  Budget& b = budgets_[key];
  Holding& h = b.by_bidder[bidder];
  // The first report since a restore that is newer than the restored holding says what the
  // bidder spent of it; otherwise spend only grows (a lower one is an older report).
  const bool after_restore = h.restored_seen >= 0 && seq > h.restored_seen;
  if (spent < h.spent && !after_restore) return;
  Change(b, bidder, h, [&](Holding& x) {
    if (after_restore) x.restored_seen = -1;
    x.spent = std::max<int64_t>(0, spent);
    x.reserved = std::max<int64_t>(0, reserved);
    x.cap = std::max<int64_t>(0, cap);
  });
}

bool LeaseLedger::AnyLiveBidderSilent(int64_t now_ms, Silence silence) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [name, b] : bidders_) {
    if (b.dead_since_ms < 0 && SilentMs(b, now_ms, silence) > cfg_.heartbeat_timeout_ms) {
      return true;
    }
  }
  return false;
}

void LeaseLedger::MarkDead(const std::string& bidder, int64_t now_ms) {
  std::lock_guard<std::mutex> l(mu_);
  const auto it = bidders_.find(bidder);
  if (it == bidders_.end()) return;
  Die(it->first, it->second, now_ms);
}

void LeaseLedger::Die(const std::string& name, Bidder& b, int64_t now_ms) {
  if (b.dead_since_ms >= 0) return;
  // Dead: its holdings no longer count as money it could give back.
  for (auto& [key, bud] : budgets_) {
    const auto it = bud.by_bidder.find(name);
    if (it != bud.by_bidder.end()) bud.unused_live -= Unused(it->second);
  }
  b.dead_since_ms = now_ms;
  b.dead_sent_ms = newest_sent_ms_;
  shares_dirty_ = true;
}

int LeaseLedger::Reclaim(int64_t now_ms, std::vector<std::pair<LeaseKey, std::string>>* changed,
                         Silence silence) {
  std::lock_guard<std::mutex> l(mu_);
  int reclaimed = 0;
  for (auto& [name, b] : bidders_) {
    const int64_t silent = SilentMs(b, now_ms, silence);
    if (b.dead_since_ms < 0 && silent > cfg_.heartbeat_timeout_ms) Die(name, b, now_ms);
    if (b.dead_since_ms < 0) continue;
    const bool window_over = silent > cfg_.heartbeat_timeout_ms + cfg_.billing_window_ms;
    for (auto& [key, bud] : budgets_) {
      auto it = bud.by_bidder.find(name);
      if (it == bud.by_bidder.end()) continue;
      Holding& h = it->second;
      if (!h.reclaimed) {
        h.reclaimed = true;
        const int64_t back = std::max<int64_t>(0, h.held - std::max(h.spent + h.reserved, h.cap));
        if (back > 0) {
          ++reclaimed;
          if (changed != nullptr) changed->emplace_back(key, name);
        }
        h.held -= back;
        bud.held -= back;
      }
      if (window_over && !h.reserved_released) {
        h.reserved_released = true;
        const int64_t back = std::max<int64_t>(0, h.held - std::max(h.spent, h.cap));
        if (back > 0 && changed != nullptr) changed->emplace_back(key, name);
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
                          int64_t now_ms, int64_t seen) {
  std::lock_guard<std::mutex> l(mu_);
  Touch(bidder, now_ms);
  Budget& b = budgets_[key];
  Holding& h = b.by_bidder[bidder];
  b.held += std::max<int64_t>(0, held) - h.held;
  Change(b, bidder, h, [&](Holding& x) {
    x.held = std::max<int64_t>(0, held);
    // Until its bidder reports, a restored lease counts as spent: a reclaim frees none of it.
    x.spent = std::max(x.spent, x.held);
    x.restored_seen = std::max<int64_t>(0, seen);
  });
}

std::vector<LeaseKey> LeaseLedger::Retire(const std::string& bidder, const std::string& as) {
  std::lock_guard<std::mutex> l(mu_);
  const auto it = bidders_.find(bidder);
  if (it == bidders_.end() || it->second.dead_since_ms < 0 || as == bidder) return {};
  std::vector<LeaseKey> moved;
  for (auto& [key, b] : budgets_) {
    const auto h = b.by_bidder.find(bidder);
    if (h == b.by_bidder.end()) continue;
    // Both names are dead: neither counts in unused_live, and b.held is unchanged.
    Holding& to = b.by_bidder[as];
    to.held += h->second.held;
    to.spent += h->second.spent;
    to.reserved += h->second.reserved;
    to.cap += h->second.cap;
    to.reclaimed = h->second.reclaimed;
    to.reserved_released = h->second.reserved_released;
    b.by_bidder.erase(h);
    moved.push_back(key);
  }
  Bidder& retired = bidders_[as];
  retired = it->second;
  bidders_.erase(bidder);
  shares_dirty_ = true;
  return moved;
}

size_t LeaseLedger::ForgetDays(const std::function<bool(int64_t day)>& behind) {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (auto it = budgets_.begin(); it != budgets_.end();) {
    if (behind(it->first.day)) {
      it = budgets_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
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
  for (const auto& [name, h] : it->second.by_bidder) t.spent = SatAdd(t.spent, h.spent);
  return t;
}

LeaseLedger::Totals LeaseLedger::OfDay(int64_t day, int* budgets) const {
  std::lock_guard<std::mutex> l(mu_);
  Totals t;
  int n = 0;
  for (auto it = budgets_.lower_bound(LeaseKey{day, 0, 0});
       it != budgets_.end() && it->first.day == day; ++it, ++n) {
    t.budget = SatAdd(t.budget, it->second.budget);
    t.held = SatAdd(t.held, it->second.held);
    int64_t spent = 0;
    for (const auto& [name, h] : it->second.by_bidder) spent = SatAdd(spent, h.spent);
    t.spent = SatAdd(t.spent, spent);
    if (spent > it->second.budget) {
      ++t.overspent;
      t.overspend = SatAdd(t.overspend, spent - it->second.budget);
    }
  }
  if (budgets != nullptr) *budgets = n;
  return t;
}

std::vector<int64_t> LeaseLedger::Days() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<int64_t> days;
  for (auto it = budgets_.begin(); it != budgets_.end();
       it = budgets_.lower_bound(LeaseKey{it->first.day + 1, 0, 0})) {
    days.push_back(it->first.day);
  }
  return days;
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

}  // namespace rtb::budget
