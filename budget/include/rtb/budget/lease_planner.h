// The bidder's side of budget leases, as decisions (docs/budget-leases.md, section 7): what each
// budget slot of the current day may commit, what to ask the coordinator for, what to give
// back, what to report, and what a holding read from the grants topic changes. No clock and no
// I/O: every call is given the time, the slots' ledger (SlotLedger) and the holdings read, and
// returns the messages to send; the bidder's lease client (bidder/src/lease_client.cc) is the
// Kafka shell around it, and the tests drive it directly.
//
// Rules, in short. Each slot may commit only what the coordinator has granted this bidder
// (its holding), never more than its arm's budget, and no more than the cap of its last report
// Kafka took (so that a coordinator that finds this bidder dead keeps that much of its lease).
// A slot asks for a lease's worth at its recent commit rate (rate sizing) or only with the
// charge of a bid it could not reserve (share sizing: the coordinator sizes leases), gives back
// what it does not need when the pool is dry (set aside until a holding confirms it), and
// reports spend, reservations and caps every report interval (its heartbeat). When Kafka has
// taken no report for the TTL, every slot is frozen at what it has committed. A restarted
// bidder bids on a slot only once a holding that includes this process's messages is read.
//
// Thread safety: one thread (the lease client's) calls everything but View, ReadyDays and
// GetHealth, which any thread may call.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rtb/budget/lease.h"
#include "rtb/budget/lease_msg.h"

namespace rtb::budget {

// What the planner reads and sets of one day's budget slots (the bidder's budget ledger; a
// slot is one advertiser's budget in one A/B arm). Amounts in micros.
class SlotLedger {
 public:
  virtual ~SlotLedger() = default;
  virtual size_t slots() const = 0;
  virtual int64_t committed(size_t k) const = 0;  // spent + reserved
  virtual int64_t spent(size_t k) const = 0;
  virtual int64_t limit(size_t k) const = 0;         // what the slot may commit
  virtual int64_t denied(size_t k) const = 0;        // refused reservations, summed
  virtual int64_t last_refused(size_t k) const = 0;  // the last refused reservation
  virtual int64_t max_charge(size_t k) const = 0;    // the largest reservation made
  virtual int64_t charge_sum(size_t k) const = 0;    // every bid's largest charge, summed
  virtual int64_t charge_n(size_t k) const = 0;      // and counted
  virtual void SetLimit(size_t k, int64_t limit) = 0;
  // What the budget has beyond the slot's limit (sizes bids, not reservations).
  virtual void SetHeadroom(size_t k, int64_t headroom) = 0;
  virtual void SetBidsOpen(size_t k, bool open) = 0;
  // Sets `amount` of the slot's room aside as a reservation no bid can take (a return under
  // way); false when the room is not there. ReleaseSetAside takes it off committed again.
  virtual bool TrySetAside(size_t k, int64_t amount) = 0;
  virtual void ReleaseSetAside(size_t k, int64_t amount) = 0;
};

// What a new ledger of a day starts a slot at: what this bidder holds of it as the grants topic
// last said (a notice right after a restart books inside it), and the limit new bids may use
// from the day's first request once the slot is answered and capped (-1: bids wait for the
// lease client to open the slot).
struct LeaseView {
  int64_t held = 0;
  int64_t open_limit = -1;
};

struct LeasePlannerOptions {
  // Who speaks: the bidder's name (`leases.name`), this process's instance, and the earlier
  // processes of its state store, newest first (docs/budget-leases.md section 4, "Two
  // processes under one name").
  std::string name;
  std::string instance;
  std::vector<std::string> lineage;
  bool share = true;            // share sizing (the coordinator sizes leases), else rate sizing
  int64_t horizon_ms = 60'000;  // rate sizing: a lease covers this long at the slot's rate
  int64_t min_lease = 100'000;  // micros: the least asked for at once (<= budget / 50)
  int64_t report_every_ms = 2'000;
  int full_report_every = 10;  // every this many periodic reports carries every slot
  int64_t ttl_ms = 45'000;     // no report on Kafka for this long: frozen
  // The market's advertisers (ids, in the bidder config's order) and each slot's arm budget
  // (slot k: advertiser k % n in arm k / n, learned first), micros.
  std::vector<uint32_t> advertisers;
  std::vector<int64_t> arm_budget;
  // Trust (docs/reliability.md, "Trust"): the market key ring (null: none) every record of the
  // grants topic (`grants_topic`) must open under; an epoch more than `max_epoch_jump` above the
  // highest read is refused (GrantsReader); a holding of a day ahead of the window (the current
  // day + 1; before the first request, DayWindow with simulated days if `sim_days`) is refused,
  // one behind it ignored; a holding of this bidder is applied only if its (epoch, n) is above
  // the last applied of its budget (LeaseGrant::n). Refusals are counted by reason (Health).
  std::shared_ptr<const MarketKeys> keys;
  std::string grants_topic = "rtb.lease.grants";
  int64_t max_epoch_jump = kMaxEpochJump;
  bool sim_days = false;
};

class LeasePlanner {
 public:
  // `now`: when the process started (its first report's silence counts from it).
  LeasePlanner(LeasePlannerOptions opt, int64_t now);

  // The lease thread's first turn: the TTL's silence counts from `now` (a start reads the
  // grants topic first, which may take seconds).
  void BeginAt(int64_t now) { last_report_ok_ms_ = now; }

  // Called once, when the first holding of this instance is read (the coordinator took this
  // process for the name's). Set before any Apply.
  void OnAnswered(std::function<void()> f) { on_answered_ = std::move(f); }

  // One record of the grants topic (its partition, bytes and offset), read at `now`. `current`
  // is the ledger of the current budget day `day` (null before the first request): a holding
  // that confirms a return lowers the slot's limit there.
  void Apply(int32_t partition, std::string_view payload, int64_t offset, int64_t now, int64_t day,
             SlotLedger* current);

  // A report (the heartbeat) is due: the report interval is up, or a cap holds bids back.
  // `periodic` says which (a periodic report carries the bid requests answered).
  bool ReportDue(int64_t now, bool* periodic) const;
  // The reports of the current day `day` (every slot, or those that changed) and of the next
  // day's changed caps, as sent at `now`; `requests`: the bid requests answered so far
  // (periodic reports carry it). Then Reported with whether Kafka took them all.
  struct Report {
    std::vector<LeaseMessage> messages;
    int64_t day = -1;
    std::vector<std::pair<size_t, int64_t>> caps, next_caps;  // (slot, cap) once Kafka has it
  };
  Report PlanReport(int64_t day, const SlotLedger* ledger, int64_t now, bool periodic,
                    int64_t requests);
  // `flush_ms`: how long Kafka took to take them (the stats line).
  void Reported(const Report& report, bool sent, int64_t now, int64_t flush_ms);

  // Freezes every slot (no new money) when Kafka has taken no report for the TTL.
  void CheckTtl(int64_t now);

  // One pass over the slots of the current day `day`: sets each slot's limit, headroom and
  // whether bids are open, and returns the asks and returns to send (requests for the next
  // day's leases too).
  std::vector<LeaseMessage> Check(int64_t day, SlotLedger& ledger, int64_t now);

  // The stats line of the last kStatsEveryMs (empty: nothing to say, or not due yet).
  std::string StatsLine(int64_t now);

  // Thread-safe. What a new ledger of (day, slot) starts at (DayLedgers::SetLeaseView).
  LeaseView View(int64_t day, size_t slot) const;
  // Thread-safe. What this bidder holds of every (day, slot) it knows, as the grants topic last
  // said (the days ForgetDays keeps): rtb_lease_held_micros.
  std::map<std::pair<int64_t, size_t>, int64_t> Holdings() const;
  // The budget days (the current one and the next) whose every slot has been answered by the
  // coordinator and has its cap on Kafka. -1: none.
  std::pair<int64_t, int64_t> ReadyDays() const { return {ready_day_.load(), ready_next_.load()}; }
  struct Health {
    bool frozen = false;         // Kafka has taken no report for the TTL: no new money
    int64_t report_ok_ms = 0;    // when Kafka last took a report (or the start)
    int64_t asks = 0;            // lease requests sent
    int64_t answers = 0;         // holdings read that answered one
    int64_t returns = 0;         // returns sent
    int64_t reports = 0;         // reports Kafka took
    int64_t resyncs = 0;         // reports after a silence past the TTL
    int64_t stale = 0;           // holdings of a fenced-off coordinator, landed late: ignored
    bool name_conflict = false;  // another live process holds this bidder name
    // Records of the grants topic refused, by reason (LeasePlannerOptions::keys): "unsealed",
    // "unknown_key", "bad_mac", "epoch_jump", "day", "replay".
    std::map<std::string, int64_t> refused;
  };
  Health GetHealth() const;

  size_t Slots() const { return opt_.arm_budget.size(); }
  const std::string& name() const { return opt_.name; }
  const std::string& instance() const { return opt_.instance; }

  static constexpr int64_t kResendMs = 5'000;       // an unanswered return is sent again
  static constexpr int64_t kLeastPrepared = 1'000;  // micros: the least a prepared day asks for
  static constexpr int64_t kKeptDays = 2;  // days before the current one whose slots are kept
  static constexpr int64_t kSoonestReportMs = 20;  // between reports a cap asks for
  static constexpr int64_t kStatsEveryMs = 10'000;
  static constexpr int64_t kAskAgainMs = 1'000;  // an unanswered ask is sent again

 private:
  // Per (day, slot): what the coordinator says this bidder holds, and the slot's bookkeeping.
  struct Slot {
    int64_t held = 0;
    int64_t pool = 0;  // the budget's unleased part, as last published
    int64_t left = 0;  // the budget's unspent part over every bidder, as last published
    int64_t last_committed = 0;
    int64_t last_ms = 0;
    double rate = 0;             // micros per second committed, smoothed
    int64_t asked_ms = -1;       // an unanswered request since then
    int64_t quiet_until_ms = 0;  // the pool was empty: ask again after this
    int64_t last_denied = 0;     // the ledger's refused reservations at the last check
    int64_t last_want = 0;       // the last ask
    // A holding counts only once it is known to include every message of this process
    // (LeaseGrant::seen >= first_seq): one published before a restart may not include a
    // return the dead process sent, and spending it could spend money handed on.
    bool synced = false;
    // What the slot may commit until its next report is on Kafka: a report says it (`cap`), so
    // that a coordinator that finds this bidder dead keeps that much of its lease, never less
    // than the bidder can have used after its last report.
    int64_t cap = 0;
    int64_t slack = 0;          // how far past what is committed a report sets the cap
    int64_t reported_cap = -1;  // the cap, spent and reserved in the last report Kafka took
    int64_t reported_spent = -1, reported_reserved = -1;
    int64_t aside = 0;  // set aside for a return the coordinator has not confirmed
    // The part of that return above the slot's limit: no bid can reserve it, so it is not set
    // aside; until the return is confirmed the limit and the cap stay below held - this.
    int64_t aside_above = 0;
    int64_t aside_seq = 0;  // the return's message
    int64_t aside_ms = 0;   // when it was sent (resent after kResendMs without an answer)
    int64_t wanted = 0;     // others' unmet needs, from the last holding (a recall)
    int64_t target = -1;    // what the coordinator means it to hold unused (-1: not said)
    int64_t charge_sum = 0, charge_n = 0;      // the ledger's charge totals at the last check
    int64_t last_blocked_ms = -1;              // when a reservation was last refused
    int64_t applied_epoch = 0, applied_n = 0;  // the last holding applied (LeaseGrant::n)
  };
  using SlotId = std::pair<int64_t, size_t>;  // (day, slot)
  // What one check of a slot finds of its demand.
  struct Demand {
    int64_t committed = 0;  // as the check began
    int64_t unspent = 0;    // held - committed
    bool blocked = false;   // reservations refused since the last check
    bool fragment = false;  // a lease too small for the bid it refused, the pool dry
    int64_t need = 0;       // what the refused bid misses
  };

  LeaseKey KeyOf(int64_t day, size_t slot) const;
  int64_t ArmBudgetOf(size_t slot) const { return opt_.arm_budget[slot]; }
  static int64_t Usable(const Slot& s) { return s.held - s.aside_above; }
  int64_t MinLease(size_t k) const;
  bool Ready(int64_t day) const;
  void PublishView(int64_t day, size_t k, const Slot& s);
  int64_t NextSeq(int64_t now);
  LeaseMessage Message(LeaseMsgType type, int64_t day, std::vector<LeaseItem> items, int64_t now,
                       int64_t seq = 0);
  // Whose the holding is (this process's, an earlier one's of its state store, or another live
  // process's under the same name); false when it is not this process's to apply.
  bool Owns(const LeaseGrant& g, bool* earlier);
  // Whether a holding's day is in the window of the current day `day` (-1: none yet); one ahead
  // of it is refused (counted), one behind it ignored.
  bool InWindow(const LeaseGrant& g, int64_t day, int64_t now, std::string_view where);
  void ApplyHolding(const LeaseGrant& g, int64_t now, int64_t day, SlotLedger* current);
  void ApplyReturn(size_t slot, Slot& s, SlotLedger* current);
  void SendReturn(int64_t day, size_t k, const SlotLedger& ledger, Slot& s, int64_t now, bool again,
                  std::vector<LeaseMessage>* out);
  bool GiveBack(int64_t day, size_t k, SlotLedger& ledger, Slot& s, int64_t back, int64_t least,
                int64_t now, std::vector<LeaseMessage>* out);
  void Prune(int64_t day);
  void PrepareDay(int64_t day, int64_t now, std::vector<LeaseMessage>* out);
  // Check's parts, per slot: the rate, charges and limit; then what to ask or give back.
  void Measure(size_t k, Slot& s, const SlotLedger& ledger, int64_t committed, int64_t now);
  bool SetLimit(size_t k, Slot& s, SlotLedger& ledger, int64_t committed);
  Demand DemandOf(size_t k, const Slot& s, const SlotLedger& ledger, int64_t committed,
                  bool blocked, int64_t now) const;
  void PlanShare(int64_t day, size_t k, Slot& s, SlotLedger& ledger, const Demand& d, int64_t now,
                 std::vector<LeaseItem>* asks, std::vector<LeaseMessage>* out);
  void PlanRate(int64_t day, size_t k, Slot& s, SlotLedger& ledger, const Demand& d, int64_t now,
                std::vector<LeaseItem>* asks, std::vector<LeaseMessage>* out);
  bool AnswerRecall(int64_t day, size_t k, Slot& s, SlotLedger& ledger, const Demand& d,
                    int64_t now, std::vector<LeaseMessage>* out);
  void Ask(Slot& s, const LeaseKey& key, int64_t want, int64_t need, int64_t now,
           std::vector<LeaseItem>* asks);
  std::vector<LeaseItem> ReportItems(int64_t day, const SlotLedger* ledger, bool full,
                                     std::vector<std::pair<size_t, int64_t>>* caps);

  LeasePlannerOptions opt_;
  std::unordered_map<uint32_t, size_t> index_of_;  // advertiser id -> index
  std::function<void()> on_answered_;              // until called
  int64_t started_ms_;
  std::map<SlotId, Slot> slots_;
  int64_t pruned_for_ = -1;  // the current day when Prune last ran
  // Another process holds this bidder's name (a holding of another instance, not of the
  // lineage, published since this client started): this process spends no new money until a
  // holding of its own comes again.
  std::atomic<bool> name_conflict_{false};
  std::atomic<bool> frozen_{false};
  // Counted since the process started (GetHealth); the stats line says what they grew by.
  std::atomic<int64_t> total_asks_{0}, total_answers_{0}, total_returns_{0}, total_reports_{0},
      total_resyncs_{0}, total_stale_{0};
  std::atomic<int64_t> report_ok_ms_;
  int64_t next_stale_log_ms_ = 0;
  GrantsReader reader_;  // the grants topic's epochs, per partition
  Refusals refusals_;
  DayWindow days_;
  // What else happened since the last stats line (every kStatsEveryMs, when there were asks).
  struct Stats {
    int64_t asks = 0, answers = 0, returns = 0, resyncs = 0;  // the totals at the last line
    int64_t zero = 0, answer_ms = 0, answer_ms_max = 0, blocked = 0, returned = 0;
    int64_t own = 0, own_lag_ms = 0;  // this bidder's holdings read, and how long after publishing
    int64_t reports = 0, report_ms = 0, report_ms_max = 0;  // reports, and how long Kafka took
  } stats_;
  int64_t next_stats_ms_ = 0;
  int64_t next_prepare_ms_ = 0;  // PrepareDay's next pass
  std::atomic<int64_t> ready_day_{-1}, ready_next_{-1};
  mutable std::mutex held_mu_;
  std::map<SlotId, LeaseView> held_known_;  // GUARDED_BY(held_mu_)
  int64_t last_report_ok_ms_, next_report_ms_ = 0, last_report_ms_ = 0;
  int64_t periodic_reports_ = 0;  // the first, and every full_report_every-th, carries every slot
  bool report_soon_ = false;      // a slot's cap holds bids back: report before the interval is up
  int64_t first_seq_ = 0, last_seq_ = 0;  // this process's message numbers
  double answer_ms_ = 100;                // how long answers take, smoothed: asks come earlier
  std::vector<int64_t> charge_;           // per slot: the largest bid charge seen on any day
  std::vector<double> unit_mean_;         // per slot: the running mean bid charge (LeaseItem::unit)
};

}  // namespace rtb::budget
