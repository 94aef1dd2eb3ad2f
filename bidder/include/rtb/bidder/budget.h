// Budget guard: no concurrent set of bids can overspend a budget.
//
// Before a bid is sent its largest possible charge (the bid's CPM price / 1000: one
// impression, and the clearing price never exceeds the bid) is reserved. A reservation is
// released on a loss notice or after a timeout, and settled on the billing notice (the
// reserved amount is replaced by the billed price). committed = spent + reserved never exceeds
// the budget when reserving; only a billing that arrives after its reservation timed out can
// push spend past the budget, by at most that late charge (RTBkit's bound).
//
// Thread-safe: per-advertiser atomics plus sharded maps of outstanding reservations.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rtb/bidder/config.h"
#include "rtb/bidder/flat_table.h"
#include "rtb/budget/lease_planner.h"
#include "rtb/core/ab.h"
#include "rtb/core/clock.h"
#include "rtb/core/types.h"

namespace rtb::bidder {

class BudgetLedger {
 public:
  // budgets[k] for advertiser index k; spent[k] restored from durable state. expected_open
  // sizes the reservation tables up front (their memory is written now, not on the bid path);
  // beyond it they grow.
  BudgetLedger(std::vector<Micros> budgets, std::vector<Micros> spent, int64_t expected_open = 0);

  // Reserves amount for key (auction/imp/advertiser) if the budget covers it, until
  // deadline_ms. Also releases up to kExpirePerCall reservations of the key's shard whose
  // deadline is before now_ms: expiry keeps pace with new reservations a few at a time, on the
  // thread that adds them, instead of in bursts that stall a request thread.
  bool TryReserve(size_t adv, const std::string& key, Micros amount, int64_t now_ms,
                  int64_t deadline_ms) {
    return TryReserve(adv, HashKey(key), amount, now_ms, deadline_ms);
  }
  // The same with the key already hashed (the bid path hashes it once for the ledger and the
  // bid record).
  bool TryReserve(size_t adv, Key128 key, Micros amount, int64_t now_ms, int64_t deadline_ms);
  // Releases a reservation (loss notice). False if none is outstanding.
  bool Release(const std::string& key) { return Release(HashKey(key)); }
  bool Release(Key128 key);
  // Books `price` for advertiser adv and drops the key's reservation if any. Returns the
  // reserved amount (0 when it had timed out or never existed).
  Micros Settle(size_t adv, const std::string& key, Micros price) {
    return Settle(adv, HashKey(key), price);
  }
  Micros Settle(size_t adv, Key128 key, Micros price);
  // Releases reservations whose deadline is before now_ms, at most max_per_shard from each
  // shard (a periodic sweep for when no new reservations come); returns how many.
  int ExpireBefore(int64_t now_ms, int max_per_shard = INT32_MAX);

  static constexpr int kExpirePerCall = 2;
  // Independently locked parts of the reservation table. Many, so that one part's doubling
  // (a copy on the request thread that crosses its fill limit) stays well under a millisecond
  // at millions of reservations.
  static constexpr int kShards = 256;
  static constexpr size_t kShardInitialSize = 256;
  // The reserved amount of an outstanding key (0 = none).
  Micros Reserved(const std::string& key) const { return Reserved(HashKey(key)); }
  Micros Reserved(Key128 key) const;

  // What a slot may commit (spent + reserved): its budget, or its lease when several bidders
  // share the budget (docs/budget-leases.md).
  Micros budget(size_t adv) const { return Micros(slots_[adv].limit.load()); }
  // Sets a slot's limit (a new lease, or a freeze at what is committed). Reservations already
  // made stay; new ones must fit under it.
  void SetLimit(size_t adv, Micros limit) { slots_[adv].limit.store(limit.value()); }
  Micros committed(size_t adv) const { return Micros(slots_[adv].committed.load()); }
  // Sets `amount` of a slot's room aside, as a reservation no bid can take (the same check as
  // TryReserve, so a bid racing it cannot push committed past the limit): a lease being given
  // back. False when the room is not there. ReleaseSetAside takes it off committed again, once
  // the limit has fallen by it.
  bool TrySetAside(size_t adv, Micros amount);
  void ReleaseSetAside(size_t adv, Micros amount) {
    slots_[adv].committed.fetch_sub(amount.value());
  }
  // Whether new bids may reserve on a slot (notices for bids already made may, either way): a
  // restarted bidder's lease client closes a slot until the coordinator has answered it.
  void SetBidsOpen(size_t adv, bool open) { slots_[adv].bids_open.store(open); }
  bool bids_open(size_t adv) const { return slots_[adv].bids_open.load(std::memory_order_relaxed); }
  // What reservations refused for want of limit asked for in total: the demand a lease did not
  // cover (the lease client grows its asks while this grows).
  Micros denied(size_t adv) const { return Micros(slots_[adv].denied.load()); }
  // The last reservation refused: what the lease must at least make room for.
  Micros last_refused(size_t adv) const { return Micros(slots_[adv].last_refused.load()); }
  // The largest reservation made so far (roughly: concurrent ones may miss): what one bid
  // needs, so that a lease is never smaller.
  Micros max_charge(size_t adv) const { return Micros(slots_[adv].max_charge.load()); }
  // Every bid's largest charge, before any lowering to a lease's room (the bid path notes it):
  // their sum and count, for the lease client's mean bid charge (LeaseItem::unit).
  void NoteCharge(size_t adv, Micros charge) {
    slots_[adv].charge_sum.fetch_add(charge.value(), std::memory_order_relaxed);
    slots_[adv].charge_n.fetch_add(1, std::memory_order_relaxed);
  }
  int64_t charge_sum(size_t adv) const { return slots_[adv].charge_sum.load(); }
  int64_t charge_n(size_t adv) const { return slots_[adv].charge_n.load(); }
  // What the budget has beyond this slot's limit, as last heard (with leases: the coordinator's
  // unleased pool). Only for sizing bids: a bid is capped to what the whole budget has left, not
  // to the lease, so that a short lease asks for more instead of bidding low.
  void SetHeadroom(size_t adv, Micros m) { slots_[adv].headroom.store(m.value()); }
  Micros headroom(size_t adv) const { return Micros(slots_[adv].headroom.load()); }
  Micros spent(size_t adv) const { return Micros(slots_[adv].spent.load()); }
  Micros reserved(size_t adv) const {
    return Micros(slots_[adv].committed.load() - slots_[adv].spent.load());
  }
  size_t advertisers() const { return n_; }
  int64_t outstanding() const { return outstanding_.load(); }
  // The slots of the reservation tables (metrics).
  size_t capacity() const;

 private:
  struct Slot {
    std::atomic<int64_t> committed{0};  // spent + reserved
    std::atomic<int64_t> spent{0};
    std::atomic<int64_t> limit{0};   // committed never passes it when reserving
    std::atomic<int64_t> denied{0};  // refused reservations, summed
    std::atomic<int64_t> last_refused{0};
    std::atomic<int64_t> max_charge{0};
    std::atomic<int64_t> charge_sum{0}, charge_n{0};  // NoteCharge
    std::atomic<bool> bids_open{true};
    std::atomic<int64_t> headroom{0};  // budget beyond the limit, as last heard
  };
  struct Reservation {
    size_t adv;
    int64_t amount;
    int64_t deadline_ms;
  };
  struct Shard {
    mutable std::mutex mu;
    FlatTable<Reservation> open;  // GUARDED_BY(mu); sized by the constructor
    // (deadline, key) in reservation order; deadlines grow, so expiry pops from the front
    // and costs O(expired), never a scan. Keys already settled or released are skipped.
    std::deque<std::pair<int64_t, Key128>> by_deadline;  // GUARDED_BY(mu)
  };
  Shard& ShardOf(Key128 key) const { return shards_[key.a % kShards]; }
  int ExpireLocked(Shard& sh, int64_t now_ms, int max);  // REQUIRES(sh.mu)

  size_t n_ = 0;
  std::unique_ptr<Slot[]> slots_;
  mutable Shard shards_[kShards];
  std::atomic<int64_t> outstanding_{0};
};

// The ledger slot of advertiser index k's budget in arm `arm`: learned first, then manual.
inline size_t ArmSlot(size_t k, Arm arm, size_t advertisers) {
  return arm == Arm::kLearned ? k : advertisers + k;
}

class StateStore;

// One budget ledger per budget day; the current one is read without a lock. Older days stay
// until shutdown (late notices still settle on their own day). A ledger holds one budget per
// (advertiser, A/B arm): slot ArmSlot(k, arm, advertisers).
class DayLedgers {
 public:
  // `clock` says which day is today (StartDay); `state` restores each day's spend.
  DayLedgers(const BidderConfig* cfg, StateStore* state, Clock* clock)
      : cfg_(cfg), state_(state), clock_(clock) {}
  // The ledger of a day, created (spend restored from the state store) on first use.
  BudgetLedger* Get(int64_t day);
  BudgetLedger* Current() const { return cur_ledger_.load(); }
  int64_t CurrentDay() const { return cur_day_.load(std::memory_order_acquire); }
  // The budget day a starting bidder opens: today's; with simulation hooks on, the simulated
  // day it served last (today's if it served the wall clock's), or none until the first
  // request says which clock its traffic keeps.
  std::optional<int64_t> StartDay() const;
  // Expires reservations past their deadline on every day, at most max_per_shard per shard.
  void ExpireBefore(int64_t now_ms, int max_per_shard);
  // With leases: what this bidder holds of (day, slot) as the grants topic last said, so that a
  // day's ledger starts at its lease (a notice right after a restart books inside it), and the
  // limit new bids may use from the day's first request when the lease client has the slot
  // answered and capped already (a day it prepared: LeaseClient::ReadyDays); otherwise new
  // bids wait on the slot until the lease client opens it. Empty = nothing known.
  using LeaseView = budget::LeaseView;
  void SetLeaseView(std::function<LeaseView(int64_t, size_t)> view);

 private:
  const BidderConfig* cfg_;
  StateStore* state_;
  Clock* clock_;
  std::atomic<int64_t> cur_day_{-1};
  std::atomic<BudgetLedger*> cur_ledger_{nullptr};
  std::mutex mu_;
  std::map<int64_t, std::unique_ptr<BudgetLedger>> ledgers_;  // GUARDED_BY(mu_)
  std::function<LeaseView(int64_t, size_t)> lease_view_;      // GUARDED_BY(mu_)
};

}  // namespace rtb::bidder
