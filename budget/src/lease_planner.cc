#include "rtb/budget/lease_planner.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "rtb/core/log.h"
#include "rtb/core/types.h"

namespace rtb::budget {

LeasePlanner::LeasePlanner(LeasePlannerOptions opt, int64_t now)
    : opt_(std::move(opt)),
      started_ms_(now),
      report_ok_ms_(now),
      reader_(opt_.keys.get(), opt_.grants_topic, opt_.max_epoch_jump),
      refusals_("lease", "lease client " + opt_.name),
      days_(opt_.sim_days),
      last_report_ok_ms_(now) {
  for (size_t k = 0; k < opt_.advertisers.size(); ++k) index_of_[opt_.advertisers[k]] = k;
  charge_.assign(Slots(), 0);
  unit_mean_.assign(Slots(), 0);
}

LeaseKey LeasePlanner::KeyOf(int64_t day, size_t slot) const {
  const size_t n = opt_.advertisers.size();
  return {day, opt_.advertisers[slot % n], static_cast<uint8_t>(slot / n)};
}

// The least slot k asks for at once: `min_lease`, but never more than a fiftieth of a small
// budget (so that one bidder's first ask does not hold what the others' traffic needs), and
// never less than one and a half of the largest bid charge seen (up to half the budget): a
// sparse campaign's one bid a minute must not wait for its lease.
int64_t LeasePlanner::MinLease(size_t k) const {
  const int64_t arm_budget = ArmBudgetOf(k);
  return std::max(std::min(opt_.min_lease, std::max<int64_t>(1'000, arm_budget / 50)),
                  std::min(arm_budget / 2, charge_[k] * 3 / 2));
}

// Whether every slot of `day` is answered (synced) and has its cap on Kafka.
bool LeasePlanner::Ready(int64_t day) const {
  for (size_t k = 0; k < Slots(); ++k) {
    const auto it = slots_.find({day, k});
    if (it == slots_.end() || !it->second.synced || it->second.reported_cap < 0) return false;
  }
  return true;
}

// What a new ledger of `day` starts slot k at: its holding, and, once answered and capped, the
// limit Check would give it.
void LeasePlanner::PublishView(int64_t day, size_t k, const Slot& s) {
  LeaseView v{s.held, -1};
  if (s.synced && s.reported_cap >= 0 && !frozen_) {
    v.open_limit = std::min({Usable(s), ArmBudgetOf(k), s.cap});
  }
  std::lock_guard<std::mutex> l(held_mu_);
  held_known_[{day, k}] = v;
}

std::map<std::pair<int64_t, size_t>, int64_t> LeasePlanner::Holdings() const {
  std::map<SlotId, int64_t> out;
  std::lock_guard<std::mutex> l(held_mu_);
  for (const auto& [id, v] : held_known_) out.emplace(id, v.held);
  return out;
}

LeaseView LeasePlanner::View(int64_t day, size_t slot) const {
  LeaseView v;
  {
    std::lock_guard<std::mutex> l(held_mu_);
    const auto it = held_known_.find({day, slot});
    if (it != held_known_.end()) v = it->second;
  }
  // No new money while Kafka takes no report, nor while another process holds the name (a
  // process that took it over, e.g. from a copy of this state store, spends the same lease).
  if (frozen_.load() || name_conflict_.load()) v.open_limit = -1;
  return v;
}

LeasePlanner::Health LeasePlanner::GetHealth() const {
  return {.frozen = frozen_.load(),
          .report_ok_ms = report_ok_ms_.load(),
          .asks = total_asks_.load(),
          .answers = total_answers_.load(),
          .returns = total_returns_.load(),
          .reports = total_reports_.load(),
          .resyncs = total_resyncs_.load(),
          .stale = total_stale_.load(),
          .name_conflict = name_conflict_.load(),
          .refused = refusals_.counts()};
}

// Message numbers grow across restarts: microseconds of the clock, or one more.
int64_t LeasePlanner::NextSeq(int64_t now) {
  last_seq_ = std::max(now * 1000, last_seq_ + 1);
  if (first_seq_ == 0) first_seq_ = last_seq_;
  return last_seq_;
}

LeaseMessage LeasePlanner::Message(LeaseMsgType type, int64_t day, std::vector<LeaseItem> items,
                                   int64_t now, int64_t seq) {
  LeaseMessage m;
  m.type = type;
  m.bidder = opt_.name;
  m.instance = opt_.instance;
  m.lineage = opt_.lineage;
  m.day = day;
  m.ts_ms = now;
  m.seq = seq > 0 ? seq : NextSeq(now);
  m.items = std::move(items);
  return m;
}

// ---- The holdings read ----

bool LeasePlanner::Owns(const LeaseGrant& g, bool* earlier) {
  *earlier = false;
  if (!g.instance.empty() && g.instance != opt_.instance) {
    *earlier =
        std::find(opt_.lineage.begin(), opt_.lineage.end(), g.instance) != opt_.lineage.end();
    if (!*earlier) {
      if (g.ts_ms >= started_ms_ && !name_conflict_.exchange(true)) {
        log::Get("lease").error(
            "lease client {}: another process (instance {}) holds this bidder name; this one "
            "(instance {}) gets no lease until that one is gone: give each bidder its own "
            "leases.name",
            opt_.name, g.instance, opt_.instance);
      }
      return false;
    }
  } else if (!g.instance.empty()) {
    if (name_conflict_.exchange(false)) {
      log::Get("lease").info("lease client {}: the name is this process's now (instance {})",
                             opt_.name, opt_.instance);
    }
    if (on_answered_) std::exchange(on_answered_, nullptr)();
  }
  return true;
}

// The holding includes the slot's return: the limit falls to it (and the cap by the amount)
// first, then the set-aside amount leaves committed, so no bid ever sees the room twice.
void LeasePlanner::ApplyReturn(size_t slot, Slot& s, SlotLedger* current) {
  s.cap = std::max<int64_t>(0, s.cap - s.aside);
  stats_.returned += s.aside_above;
  s.aside_above = 0;
  if (current != nullptr) {
    current->SetLimit(slot,
                      std::max(std::min({s.held, ArmBudgetOf(slot), s.cap}), current->spent(slot)));
    current->ReleaseSetAside(slot, s.aside);
  }
  stats_.returned += s.aside;
  s.aside = 0;
}

void LeasePlanner::Apply(int32_t partition, std::string_view payload, int64_t offset, int64_t now,
                         int64_t day, SlotLedger* current) {
  const GrantsReader::Record r = reader_.Take(partition, payload, offset);
  if (r.kind == GrantsReader::Kind::kStale) {
    // Queued by a coordinator that a newer one has fenced off since (docs/budget-leases.md,
    // section 2): what it says may already be granted again, to another bidder.
    const int64_t n = total_stale_.fetch_add(1) + 1;
    if (now >= next_stale_log_ms_) {
      log::Get("lease").warn(
          "lease client {}: a holding of coordinator {} (epoch {}) landed after a newer "
          "coordinator's epoch {}: ignored ({} so far)",
          opt_.name, r.grant.coordinator, r.grant.epoch, reader_.MaxEpoch(), n);
      next_stale_log_ms_ = now + 10'000;
    }
    return;
  }
  const auto where = [&] {
    return fmt::format("a record on {} {}/{}", opt_.grants_topic, partition, offset);
  };
  if (r.kind == GrantsReader::Kind::kRefused) return refusals_.Refuse(r.error, where());
  if (r.kind != GrantsReader::Kind::kHolding || !InWindow(r.grant, day, now, where())) return;
  if (r.grant.bidder == opt_.name && r.grant.n > 0) {
    // Applied once, in order: a genuine holding sent again (or an older one) changes nothing.
    const auto it = index_of_.find(r.grant.key.advertiser);
    if (it != index_of_.end() && r.grant.key.arm <= 1) {
      Slot& s = slots_[{r.grant.key.day, r.grant.key.arm * opt_.advertisers.size() + it->second}];
      if (std::pair{r.grant.epoch, r.grant.n} <= std::pair{s.applied_epoch, s.applied_n}) {
        return refusals_.Refuse("replay", where() + " (holding " + std::to_string(r.grant.n) +
                                              " of " + std::to_string(s.applied_n) + " applied)");
      }
      s.applied_epoch = r.grant.epoch;
      s.applied_n = r.grant.n;
    }
  }
  ApplyHolding(r.grant, now, day, current);
}

bool LeasePlanner::InWindow(const LeaseGrant& g, int64_t day, int64_t now, std::string_view where) {
  const int64_t d = g.key.day;
  const bool behind = day >= 0 ? d < day - kKeptDays : days_.Behind(d, now);
  if (behind) return false;  // history: a start reads the whole topic
  if (day >= 0 ? d <= day + 1 : days_.Admit(d, now)) return true;
  refusals_.Refuse("day", std::string(where) + " (day " + std::to_string(d) + ")");
  return false;
}

void LeasePlanner::ApplyHolding(const LeaseGrant& g, int64_t now, int64_t day,
                                SlotLedger* current) {
  const auto it = index_of_.find(g.key.advertiser);
  if (it == index_of_.end() || g.key.arm > 1) return;
  const size_t slot = g.key.arm * opt_.advertisers.size() + it->second;
  Slot& s = slots_[{g.key.day, slot}];
  s.pool = g.pool;  // any bidder's holding says what is left in the pool
  s.left = g.left;
  if (g.bidder != opt_.name) return;
  bool earlier = false;
  if (!Owns(g, &earlier)) return;
  ++stats_.own;
  stats_.own_lag_ms += std::max<int64_t>(0, now - g.ts_ms);
  s.held = g.held;
  // A recall published before the coordinator had this slot's last return is stale: it asks
  // for money already on its way. Whether it has the return is the holding's `returned`, not
  // `seen`: a later report can be seen while the return itself was lost (it is sent again).
  const bool has_return = g.returned >= s.aside_seq;
  if (has_return) s.wanted = g.wanted;
  s.target = g.target;
  if (first_seq_ > 0 && g.seen >= first_seq_ && !earlier) s.synced = true;
  if (s.aside + s.aside_above > 0 && has_return) {
    ApplyReturn(slot, s, day == g.key.day ? current : nullptr);
  }
  PublishView(g.key.day, slot, s);
  if (s.asked_ms >= 0) {
    answer_ms_ = 0.9 * answer_ms_ + 0.1 * static_cast<double>(now - s.asked_ms);
    ++total_answers_;
    stats_.zero += g.granted == 0 ? 1 : 0;
    stats_.answer_ms += now - s.asked_ms;
    stats_.answer_ms_max = std::max(stats_.answer_ms_max, now - s.asked_ms);
  }
  s.asked_ms = -1;
  // The pool is empty: the others' leases are all there is; ask again half a horizon on.
  if (g.granted == 0 && g.pool == 0) s.quiet_until_ms = now + opt_.horizon_ms / 2;
}

// ---- Returns ----

// Gives back what slot k has set aside (s.aside, s.aside_above), with the spend and
// reservations it leaves and its cap: under a new seq, or (`again`) the first copy's, so that
// a coordinator that has the first copy does not take the amount twice.
void LeasePlanner::SendReturn(int64_t day, size_t k, const SlotLedger& ledger, Slot& s, int64_t now,
                              bool again, std::vector<LeaseMessage>* out) {
  const LeaseKey key = KeyOf(day, k);
  const int64_t spent = ledger.spent(k);
  LeaseItem it{key.advertiser,          key.arm, 0,
               s.aside + s.aside_above, spent,   ledger.committed(k) - spent - s.aside};
  it.cap = s.cap - s.aside;
  if (!again) s.aside_seq = NextSeq(now);
  s.aside_ms = now;
  out->push_back(Message(LeaseMsgType::kReturn, day, {it}, now, s.aside_seq));
}

// Sets `back` aside for a return (Slot::aside, Slot::aside_above) and sends it: the part above
// the slot's limit as it is, the rest with the bids' own compare-and-swap (or not at all, if a
// bid took it first). False when less than `least` could be set aside.
bool LeasePlanner::GiveBack(int64_t day, size_t k, SlotLedger& ledger, Slot& s, int64_t back,
                            int64_t least, int64_t now, std::vector<LeaseMessage>* out) {
  const int64_t above =
      std::clamp<int64_t>(Usable(s) - ledger.limit(k), 0, std::max<int64_t>(0, back));
  int64_t room = back - above;
  if (room > 0 && !ledger.TrySetAside(k, room)) room = 0;
  if (above + room < std::max<int64_t>(1, least)) {
    if (room > 0) ledger.ReleaseSetAside(k, room);
    return false;
  }
  s.aside = room;
  s.aside_above = above;
  ++total_returns_;
  SendReturn(day, k, ledger, s, now, /*again=*/false, out);
  return true;
}

// ---- The check of every slot ----

// Tomorrow's leases, asked for from the start of today: the next day's first requests find
// every slot answered and its cap on Kafka, instead of no-bidding (or, behind an exchange
// whose clock runs as fast as the bidders answer, losing much of the day's start) while the
// first asks travel. Unanswered slots ask again each second.
void LeasePlanner::PrepareDay(int64_t day, int64_t now, std::vector<LeaseMessage>* out) {
  if (now < next_prepare_ms_) return;
  next_prepare_ms_ = now + kAskAgainMs;
  std::vector<LeaseItem> asks;
  for (size_t k = 0; k < Slots(); ++k) {
    Slot& s = slots_[{day, k}];
    if (s.synced || (s.asked_ms >= 0 && now - s.asked_ms < kAskAgainMs)) continue;
    const LeaseKey key = KeyOf(day, k);
    // What this bidder committed of the slot the day before (its share of the traffic), up to
    // a minimum lease: a bidder that sees a tenth of a small budget's requests does not hold
    // half of it all day.
    int64_t first = MinLease(k);
    if (const auto y = slots_.find({day - 2, k}); y != slots_.end()) {
      first = std::min(first, std::max<int64_t>(kLeastPrepared, y->second.last_committed));
    }
    const int64_t want = std::max<int64_t>(0, std::min(first, ArmBudgetOf(k)) - s.held);
    asks.push_back({key.advertiser, key.arm, want, 0, 0, 0, 0});
    s.asked_ms = now;
    s.last_want = want;
    ++total_asks_;
  }
  if (!asks.empty()) out->push_back(Message(LeaseMsgType::kRequest, day, std::move(asks), now));
}

// Forgets the slots of days before the last kKeptDays (a bidder runs for months): what is
// held there is no longer reported, and a new ledger of such a day (a late notice after a
// restart) starts at its spend.
void LeasePlanner::Prune(int64_t day) {
  pruned_for_ = day;
  const SlotId first{day - kKeptDays, 0};
  slots_.erase(slots_.begin(), slots_.lower_bound(first));
  std::lock_guard<std::mutex> l(held_mu_);
  held_known_.erase(held_known_.begin(), held_known_.lower_bound(first));
}

// The slot's commit rate, its largest and mean bid charge.
void LeasePlanner::Measure(size_t k, Slot& s, const SlotLedger& ledger, int64_t committed,
                           int64_t now) {
  if (s.last_ms > 0 && now > s.last_ms) {
    const double inst = static_cast<double>(std::max<int64_t>(0, committed - s.last_committed)) *
                        1000.0 / static_cast<double>(now - s.last_ms);
    s.rate = 0.8 * s.rate + 0.2 * inst;
  }
  s.last_committed = committed;
  s.last_ms = now;
  // The mean bid charge of this advertiser and arm, over the days (each bid weighs 1/8).
  if (const int64_t n = ledger.charge_n(k) - s.charge_n; n > 0) {
    const double bids_mean =
        static_cast<double>(ledger.charge_sum(k) - s.charge_sum) / static_cast<double>(n);
    const double keep = unit_mean_[k] == 0 ? 0 : std::pow(7.0 / 8.0, static_cast<double>(n));
    unit_mean_[k] = keep * unit_mean_[k] + (1 - keep) * bids_mean;
    s.charge_n = ledger.charge_n(k);
    s.charge_sum = ledger.charge_sum(k);
  }
  charge_[k] = std::max({charge_[k], ledger.max_charge(k), ledger.last_refused(k)});
}

// The slot's limit: its lease (never above its share of the budget), or what it has committed
// while frozen. Until a holding includes this process's messages, new bids wait (a return the
// process before a restart sent may not be in it yet), but notices of bids made before may book
// inside it: their reservations are in it, the return is not. Another process holding the name
// counts as frozen: that one spends this lease now. Returns whether reservations were refused
// since the last check (demand the lease did not cover).
bool LeasePlanner::SetLimit(size_t k, Slot& s, SlotLedger& ledger, int64_t committed) {
  const int64_t arm_budget = ArmBudgetOf(k);
  const bool stopped = frozen_ || name_conflict_.load();
  const bool hold_still = stopped || !s.synced;
  // Past the last report's cap, nothing more until the next report is on Kafka.
  const int64_t limit = stopped    ? std::min(committed, Usable(s))
                        : s.synced ? std::min({Usable(s), arm_budget, s.cap})
                                   : std::min(Usable(s), arm_budget);
  ledger.SetBidsOpen(k, s.synced);
  // The cap stays a few bids and two report intervals of spend ahead of what is committed;
  // when it holds bids back while the lease has room, report now.
  s.slack = std::max(
      {2 * charge_[k], MinLease(k),
       static_cast<int64_t>(s.rate * 3 * static_cast<double>(opt_.report_every_ms) / 1000.0),
       int64_t{0}});
  if (s.synced && !frozen_ && s.cap < std::min(Usable(s), arm_budget) &&
      committed + std::max<int64_t>(charge_[k], 1) > s.cap) {
    report_soon_ = true;
  }
  ledger.SetLimit(k, std::max<int64_t>(limit, ledger.spent(k)));
  // Bids are sized to what the whole budget has left (as one bidder's would be), not to the
  // lease: a bid the lease cannot cover is refused, and the refusal asks for room.
  const int64_t lease_left = std::max<int64_t>(0, limit - committed);
  ledger.SetHeadroom(k, hold_still ? 0 : std::max<int64_t>({0, s.pool, s.left - lease_left}));
  const int64_t denied = ledger.denied(k);
  const bool blocked = denied > s.last_denied;
  s.last_denied = denied;
  stats_.blocked += blocked ? 1 : 0;
  return blocked;
}

LeasePlanner::Demand LeasePlanner::DemandOf(size_t k, const Slot& s, const SlotLedger& ledger,
                                            int64_t committed, bool blocked, int64_t now) const {
  Demand d;
  d.committed = committed;
  d.unspent = s.held - committed;
  d.blocked = blocked;
  const int64_t refused = ledger.last_refused(k);
  d.fragment = blocked && now < s.quiet_until_ms && d.unspent > 0 && d.unspent < refused;
  d.need = blocked ? std::max<int64_t>(0, refused - std::max<int64_t>(0, d.unspent)) : 0;
  return d;
}

void LeasePlanner::Ask(Slot& s, const LeaseKey& key, int64_t want, int64_t need, int64_t now,
                       std::vector<LeaseItem>* asks) {
  asks->push_back({key.advertiser, key.arm, want, 0, 0, 0, need});
  s.asked_ms = now;
  s.last_want = want;
  ++total_asks_;
}

// Others wait for money of this budget (a recall): a slot not refused itself within a horizon
// gives back, up to what they want, all it holds beyond a horizon of its own recent commit rate.
// Share sizing: the coordinator asks back what is beyond this bidder's share, or what a
// budget's last bids need; all of it comes back. True when a return went out.
bool LeasePlanner::AnswerRecall(int64_t day, size_t k, Slot& s, SlotLedger& ledger, const Demand& d,
                                int64_t now, std::vector<LeaseMessage>* out) {
  if (!(s.wanted > 0 && s.synced && d.unspent > 0 &&
        (opt_.share || s.last_blocked_ms < 0 || now - s.last_blocked_ms > opt_.horizon_ms))) {
    return false;
  }
  // Share sizing: the coordinator asked from reports a report old; keep what this slot commits
  // until the next answer, and two bids. A holding that says its target (whole bids:
  // docs/budget-leases.md, section 8) keeps no more than that.
  const double answer_s = answer_ms_ / 1000.0;
  int64_t own =
      opt_.share
          ? std::max<int64_t>(
                2 * charge_[k],
                static_cast<int64_t>(
                    s.rate * (static_cast<double>(opt_.report_every_ms) + answer_ms_) / 1000.0))
          : static_cast<int64_t>(s.rate *
                                 (static_cast<double>(opt_.horizon_ms) / 1000.0 + answer_s));
  if (opt_.share && s.target >= 0) {  // the target counts its reservations
    own = std::min(own, std::max<int64_t>(0, s.target - (d.committed - ledger.spent(k))));
  }
  const int64_t back = std::min(s.wanted, d.unspent - own);
  s.wanted = 0;
  // Parted in whole bids, any amount: the coordinator asks exactly what a whole bid misses.
  return GiveBack(day, k, ledger, s, back, opt_.share && s.target >= 0 ? 1 : kLeastPrepared, now,
                  out);
}

// Share sizing: the coordinator tops the lease up from the reports; a slot asks only to learn
// what it holds, or with the charge of a bid it could not reserve. Parted in whole bids (a
// target said), a piece is what the coordinator means it to hold: it stays, and a short bidder
// is topped up.
void LeasePlanner::PlanShare(int64_t day, size_t k, Slot& s, SlotLedger& ledger, const Demand& d,
                             int64_t now, std::vector<LeaseItem>* asks,
                             std::vector<LeaseMessage>* out) {
  if (s.synced && s.pool <= 0 && d.fragment && s.target < 0) {
    GiveBack(day, k, ledger, s, d.unspent, 1, now, out);
    return;
  }
  if (now < s.quiet_until_ms && s.synced && s.pool <= 0) return;
  const int64_t want =
      d.blocked ? std::max<int64_t>(0, std::min(d.need, ArmBudgetOf(k) - s.held)) : 0;
  if (want > 0 || !s.synced) Ask(s, KeyOf(day, k), want, want, now, asks);
}

// Rate sizing, in seconds of the slot's recent commit rate: a lease covers the horizon plus the
// time an answer takes; a slot asks when what it has left covers less than half a horizon plus
// that time, and gives back what is beyond twice the lease.
void LeasePlanner::PlanRate(int64_t day, size_t k, Slot& s, SlotLedger& ledger, const Demand& d,
                            int64_t now, std::vector<LeaseItem>* asks,
                            std::vector<LeaseMessage>* out) {
  const int64_t unspent = d.unspent;
  const bool blocked = d.blocked;
  const int64_t min_micros = MinLease(k);
  const double wait_s = answer_ms_ / 1000.0;
  const double lease_s = static_cast<double>(opt_.horizon_ms) / 1000.0 + wait_s;
  const int64_t keep = std::max<int64_t>(min_micros, static_cast<int64_t>(2 * s.rate * lease_s));
  if (s.synced && s.pool <= 0 && (d.fragment || (!blocked && unspent > keep + min_micros))) {
    GiveBack(day, k, ledger, s, d.fragment ? unspent : unspent - keep, 1, now, out);
    return;
  }
  // The pool was dry at the last answer: wait, unless a holding since says it is not.
  if (now < s.quiet_until_ms && s.synced && s.pool <= 0) return;
  // A lease's worth at the recent commit rate; while refused reservations show that the lease
  // holds the slot back (so that its commit rate understates what it would spend), twice the
  // last ask, as TCP's slow start grows a window. A slot not yet synced asks (for 0 if it holds
  // its whole share) to learn what it holds.
  int64_t want = LeaseWant(s.rate, static_cast<int64_t>(lease_s * 1000), min_micros, unspent);
  if (blocked) want = std::max({want, min_micros, 2 * s.last_want, d.need});
  want = std::max<int64_t>(0, std::min(want, ArmBudgetOf(k) - s.held));
  const bool low =
      unspent <
      std::max<int64_t>(
          std::max(min_micros / 2, charge_[k]),
          static_cast<int64_t>(s.rate * (static_cast<double>(opt_.horizon_ms) / 2000.0 + wait_s)));
  if (((low || blocked) && want > 0) || !s.synced) {
    Ask(s, KeyOf(day, k), want, std::min(d.need, want), now, asks);
  }
}

std::vector<LeaseMessage> LeasePlanner::Check(int64_t day, SlotLedger& ledger, int64_t now) {
  std::vector<LeaseMessage> out;
  if (day < 0) return out;
  if (day != pruned_for_) Prune(day);
  std::vector<LeaseItem> asks;
  for (size_t k = 0; k < Slots() && k < ledger.slots(); ++k) {
    Slot& s = slots_[{day, k}];
    const int64_t committed = ledger.committed(k);
    Measure(k, s, ledger, committed, now);
    const bool blocked = SetLimit(k, s, ledger, committed);
    if (frozen_) continue;
    // A return the coordinator has not confirmed: send it again, under the first copy's seq
    // (a coordinator that has the first copy gives nothing back twice: LeaseGrant::returned).
    if (s.aside + s.aside_above > 0) {
      if (now - s.aside_ms >= kResendMs) SendReturn(day, k, ledger, s, now, /*again=*/true, &out);
      continue;
    }
    if (blocked) s.last_blocked_ms = now;
    const Demand d = DemandOf(k, s, ledger, committed, blocked, now);
    if (AnswerRecall(day, k, s, ledger, d, now, &out)) continue;
    if (s.asked_ms >= 0 && now - s.asked_ms < kAskAgainMs) continue;  // waiting for the answer
    // Give back, when others may need it (the pool is dry), all of a lease too small for the
    // bid it refused (in pieces too small for any one bidder, a small budget would not be
    // spent at all), and under rate sizing what is beyond twice a lease. The amount is set
    // aside first, with the bids' own check.
    if (opt_.share) {
      PlanShare(day, k, s, ledger, d, now, &asks, &out);
    } else {
      PlanRate(day, k, s, ledger, d, now, &asks, &out);
    }
  }
  if (!asks.empty()) out.push_back(Message(LeaseMsgType::kRequest, day, std::move(asks), now));
  if (!frozen_) PrepareDay(day + 1, now, &out);
  if (ready_day_.load() != day && !frozen_ && Ready(day)) ready_day_.store(day);
  if (ready_next_.load() != day + 1 && !frozen_ && Ready(day + 1)) ready_next_.store(day + 1);
  return out;
}

// ---- Reports ----

bool LeasePlanner::ReportDue(int64_t now, bool* periodic) const {
  *periodic = now >= next_report_ms_;
  return *periodic || (report_soon_ && now - last_report_ms_ >= kSoonestReportMs);
}

// One day's report items (a day without a ledger yet has nothing committed), and each slot's
// new cap.
std::vector<LeaseItem> LeasePlanner::ReportItems(int64_t day, const SlotLedger* ledger, bool full,
                                                 std::vector<std::pair<size_t, int64_t>>* caps) {
  std::vector<LeaseItem> items;
  for (size_t k = 0; k < Slots() && (ledger == nullptr || k < ledger->slots()); ++k) {
    if (ledger == nullptr && slots_.find({day, k}) == slots_.end()) continue;
    const LeaseKey key = KeyOf(day, k);
    Slot& s = slots_[{day, k}];
    const int64_t committed = ledger != nullptr ? ledger->committed(k) : 0;
    const int64_t spent = ledger != nullptr ? ledger->spent(k) : 0;
    if (ledger == nullptr) {  // as Check sizes it, before any spend
      s.slack = std::max({s.slack, MinLease(k), 2 * charge_[k]});
    }
    // Unsynced, a restarted bidder may book notices up to its holding; synced, up to the cap.
    const int64_t cap = s.synced ? std::max(committed, std::min(Usable(s), committed + s.slack))
                                 : std::max(committed, std::min(Usable(s), ArmBudgetOf(k)));
    const int64_t reserved = committed - spent - s.aside;  // the aside is a return under way
    if (!full && cap == s.reported_cap && spent == s.reported_spent &&
        reserved == s.reported_reserved) {
      continue;
    }
    LeaseItem it{key.advertiser, key.arm, 0, 0, spent, reserved};
    it.cap = cap - s.aside;
    it.unit = std::llround(unit_mean_[k]);
    items.push_back(it);
    caps->emplace_back(k, cap);
    s.reported_spent = spent;
    s.reported_reserved = reserved;
  }
  return items;
}

// Spend, reservations and caps of the current day: every slot (every full_report_every-th
// periodic report), or those that changed since the last report Kafka took; and the caps of the
// next day's slots that changed (PrepareDay: nothing is spent there yet). A report Kafka takes
// renews the TTL and moves each slot's cap on; any report, even empty, is the heartbeat.
LeasePlanner::Report LeasePlanner::PlanReport(int64_t day, const SlotLedger* ledger, int64_t now,
                                              bool periodic, int64_t requests) {
  Report r;
  bool full = false;
  if (periodic) {
    full = periodic_reports_++ % std::max(1, opt_.full_report_every) == 0;
    next_report_ms_ = now + opt_.report_every_ms;
  }
  last_report_ms_ = now;
  report_soon_ = false;
  if (ledger == nullptr || day < 0) return r;
  r.day = day;
  LeaseMessage m =
      Message(LeaseMsgType::kReport, day, ReportItems(day, ledger, full, &r.caps), now);
  if (periodic) m.requests = requests;
  r.messages.push_back(std::move(m));
  auto next_items = ReportItems(day + 1, nullptr, false, &r.next_caps);
  if (!next_items.empty()) {
    r.messages.push_back(Message(LeaseMsgType::kReport, day + 1, std::move(next_items), now));
  }
  return r;
}

void LeasePlanner::Reported(const Report& r, bool sent, int64_t now, int64_t flush_ms) {
  if (r.day < 0) return;
  ++stats_.reports;
  stats_.report_ms += flush_ms;
  stats_.report_ms_max = std::max(stats_.report_ms_max, flush_ms);
  if (!sent) {
    for (const auto& [k, cap] : r.caps) slots_[{r.day, k}].reported_cap = -1;  // send it again
    for (const auto& [k, cap] : r.next_caps) slots_[{r.day + 1, k}].reported_cap = -1;
    return;
  }
  if (now - last_report_ok_ms_ > opt_.ttl_ms) {
    // Silent past the TTL (and so, by the TTL's rule, maybe past the coordinator's heartbeat
    // timeout): the coordinator may have taken this bidder for dead and granted what it held
    // above its last cap to others. Raising the cap now could spend that money twice, so new
    // bids wait, as after a restart, for holdings that have read this report.
    first_seq_ = last_seq_;
    for (auto& [id, slot] : slots_) slot.synced = false;
    ++total_resyncs_;
    log::Get("lease").warn(
        "lease client: no report on Kafka for {} ms: bids wait for the coordinator's holdings",
        now - last_report_ok_ms_);
  }
  last_report_ok_ms_ = now;
  report_ok_ms_ = now;
  ++total_reports_;
  for (const auto& [d, c] : {std::pair{r.day, &r.caps}, std::pair{r.day + 1, &r.next_caps}}) {
    for (const auto& [k, cap] : *c) {
      Slot& s = slots_[{d, k}];
      s.cap = cap;
      s.reported_cap = cap;
      PublishView(d, k, s);
    }
  }
  if (frozen_) log::Get("lease").info("lease client: Kafka is back; leases apply again");
  frozen_ = false;
}

void LeasePlanner::CheckTtl(int64_t now) {
  if (!frozen_ && now - last_report_ok_ms_ > opt_.ttl_ms) {
    frozen_ = true;
    log::Get("lease").warn(
        "lease client: Kafka has taken no report for {} ms: spending only what is committed",
        now - last_report_ok_ms_);
  }
}

std::string LeasePlanner::StatsLine(int64_t now) {
  if (now < next_stats_ms_) return {};
  next_stats_ms_ = now + kStatsEveryMs;
  const int64_t asks = total_asks_ - stats_.asks, answers = total_answers_ - stats_.answers;
  std::string line;
  if (asks > 0) {
    line = fmt::format(
        "lease client {}: {} asks, {} answered ({} with nothing) in {:.0f} ms on average "
        "(at most {} ms); {} slot checks found refused reservations; {} returns, {:.2f} given "
        "back; {} resyncs after a silence past the TTL; its holdings read {:.0f} ms after they "
        "were published on average; {} reports on Kafka in {:.0f} ms on average (at most {} ms)",
        opt_.name, asks, answers, stats_.zero,
        answers > 0 ? static_cast<double>(stats_.answer_ms) / static_cast<double>(answers) : 0.0,
        stats_.answer_ms_max, stats_.blocked, total_returns_ - stats_.returns,
        Micros(stats_.returned).units(), total_resyncs_ - stats_.resyncs,
        stats_.own > 0 ? static_cast<double>(stats_.own_lag_ms) / static_cast<double>(stats_.own)
                       : 0.0,
        stats_.reports,
        stats_.reports > 0
            ? static_cast<double>(stats_.report_ms) / static_cast<double>(stats_.reports)
            : 0.0,
        stats_.report_ms_max);
  }
  stats_ = {.asks = total_asks_,
            .answers = total_answers_,
            .returns = total_returns_,
            .resyncs = total_resyncs_};
  return line;
}

}  // namespace rtb::budget
