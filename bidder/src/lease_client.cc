#include "lease_client.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "rtb/budget/lease_msg.h"
#include "rtb/core/ab.h"
#include "rtb/core/clock.h"
#include "rtb/core/lease.h"
#include "rtb/core/log.h"
#include "rtb/kafka/kafka.h"

namespace rtb::bidder {

struct LeaseClient::Impl {
  const BidderConfig* cfg = nullptr;
  DayLedgers* days = nullptr;
  const Counter* requests = nullptr;  // bid requests answered: the traffic share's measure
  bool share = false;                 // leases.sizing: share (the coordinator sizes leases)
  std::string name;
  std::string instance;               // this process (LeaseMessage::instance)
  std::vector<std::string> lineage;   // the earlier processes of its state store, newest first
  std::function<void()> on_answered;  // Identity::on_answered, until called
  int64_t started_ms = NowUnixMs();
  // Another process holds this bidder's name (a holding of another instance, not of the
  // lineage, published since this client started): this process spends no new money until a
  // holding of its own comes again (/metrics).
  std::atomic<bool> name_conflict{false};
  std::unique_ptr<kafka::Producer> producer;
  std::unique_ptr<kafka::Consumer> grants;
  std::unordered_map<uint32_t, size_t> index_of;
  std::atomic<bool> stop{false};
  std::thread thread;

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
    int64_t charge_sum = 0, charge_n = 0;  // the ledger's NoteCharge totals at the last check
    int64_t last_blocked_ms = -1;          // when a reservation was last refused
  };
  static constexpr int64_t kResendMs = 5'000;
  static constexpr int64_t kLeastPrepared = 1'000;  // micros: the least a prepared day asks for
  static constexpr int64_t kKeptDays = 2;  // days before the current one whose slots are kept
  int64_t pruned_for = -1;                 // the current day when Prune last ran
  static constexpr int64_t kSoonestReportMs = 20;  // between reports a cap asks for
  // Counted since the process started (/metrics: GetHealth); the stats line says what they
  // grew by since the last one.
  std::atomic<int64_t> total_asks{0}, total_answers{0}, total_returns{0}, total_reports{0},
      total_resyncs{0};  // resyncs: reports after a silence past the TTL (bids waited for holdings)
  // Holdings of a coordinator fenced off by a newer one's epoch, landed late: ignored.
  std::atomic<int64_t> total_stale{0};
  int64_t next_stale_log_ms = 0;
  budget::GrantsReader reader;  // the grants topic's epochs, per partition
  // What else the client did since the last stats line (logged every kStatsEveryMs with asks).
  struct Stats {
    int64_t asks = 0, answers = 0, returns = 0, resyncs = 0;  // the totals at the last line
    int64_t zero = 0, answer_ms = 0, answer_ms_max = 0, blocked = 0, returned = 0;
    int64_t own = 0, own_lag_ms = 0;  // this bidder's holdings read, and how long after publishing
    int64_t reports = 0, report_ms = 0, report_ms_max = 0;  // reports, and how long Kafka took
  } stats;
  std::atomic<int64_t> report_ok_ms{NowUnixMs()};  // last_report_ok_ms, for GetHealth
  static constexpr int64_t kStatsEveryMs = 10'000;
  int64_t next_stats_ms = 0;
  int64_t next_prepare_ms = 0;                         // PrepareDay's next pass
  std::atomic<int64_t> ready_day{-1}, ready_next{-1};  // ReadyDays()

  // Whether every slot of `day` is answered (synced) and has its cap on Kafka.
  bool Ready(int64_t day) const {
    for (size_t k = 0; k < Slots(); ++k) {
      const auto it = slots.find({day, k});
      if (it == slots.end() || !it->second.synced || it->second.reported_cap < 0) return false;
    }
    return true;
  }
  std::map<std::pair<int64_t, size_t>, Slot> slots;
  // What the grants topic says this bidder holds, for DayLedgers (read from request threads).
  std::mutex held_mu;
  std::map<std::pair<int64_t, size_t>, DayLedgers::LeaseView> held_known;  // GUARDED_BY(held_mu)

  // What a new ledger of `day` starts slot k at (DayLedgers::LeaseView): its holding, and, once
  // answered and capped, the limit Check would give it.
  void PublishView(int64_t day, size_t k, const Slot& s) {
    DayLedgers::LeaseView v{s.held, -1};
    if (s.synced && s.reported_cap >= 0 && !frozen) {
      v.open_limit = std::min({Usable(s), ArmBudgetOf(k), s.cap});
    }
    std::lock_guard<std::mutex> l(held_mu);
    held_known[{day, k}] = v;
  }
  int64_t last_report_ok_ms = 0, next_report_ms = 0, last_report_ms = 0;
  int64_t periodic_reports = 0;  // the first, and every full_report_every-th, carries every slot
  bool report_soon = false;      // a slot's cap holds bids back: report before the interval is up
  std::atomic<bool> frozen{false};      // read by the lease view too
  int64_t first_seq = 0, last_seq = 0;  // this process's message numbers
  double answer_ms = 100;       // how long answers take, smoothed: asks come that much earlier
  std::vector<int64_t> charge;  // per slot: the largest bid charge seen on any day
  std::vector<double>
      unit_mean;  // per slot: the running mean bid charge over the days (LeaseItem::unit)

  size_t Slots() const { return 2 * cfg->advertisers.size(); }
  LeaseKey KeyOf(int64_t day, size_t slot) const {
    const size_t n = cfg->advertisers.size();
    return {day, cfg->advertisers[slot % n].id, static_cast<uint8_t>(slot / n)};
  }

  // Message numbers grow across restarts: microseconds of the clock, or one more.
  int64_t NextSeq() {
    last_seq = std::max(NowUnixMs() * 1000, last_seq + 1);
    if (first_seq == 0) first_seq = last_seq;
    return last_seq;
  }

  // `with_requests`: the message carries the bid requests answered so far (the report of the
  // current day does, once per report interval: the coordinator's traffic rate).
  bool Send(budget::LeaseMsgType type, int64_t day, std::vector<budget::LeaseItem> items,
            int64_t seq = 0, bool with_requests = false) {
    budget::LeaseMessage m;
    m.type = type;
    m.bidder = name;
    m.instance = instance;
    m.lineage = lineage;
    m.day = day;
    m.ts_ms = NowUnixMs();
    m.seq = seq > 0 ? seq : NextSeq();
    if (with_requests && requests != nullptr) {
      m.requests = static_cast<int64_t>(requests->Get());
    }
    m.items = std::move(items);
    return producer
        ->Produce(cfg->leases.requests_topic, kafka::kAnyPartition, name,
                  budget::EncodeLeaseMessage(m))
        .ok();
  }

  // The holdings published for this bidder.
  void ReadGrants(int64_t now) {
    for (;;) {
      auto msg = grants->Poll(0);
      if (!msg) return;
      if (msg->ok()) ApplyGrant(*msg, now);
    }
  }

  // Reads the grants topic up to its end as of now (a restarted bidder's holdings).
  Status CatchUp(const std::string& topic, int parts, int timeout_ms) {
    std::vector<int64_t> high(static_cast<size_t>(parts)), next(static_cast<size_t>(parts), 0);
    for (int p = 0; p < parts; ++p) {
      RTB_ASSIGN_OR_RETURN(const auto wm, grants->Watermarks(topic, p, timeout_ms));
      high[static_cast<size_t>(p)] = wm.second;
      next[static_cast<size_t>(p)] = wm.first;
    }
    const int64_t end = NowUnixMs() + timeout_ms;
    auto done = [&] {
      for (size_t p = 0; p < next.size(); ++p) {
        if (next[p] < high[p]) return false;
      }
      return true;
    };
    while (!done()) {
      if (NowUnixMs() > end) {
        return Status::Unavailable("lease client: the grants topic was not read to its end in " +
                                   std::to_string(timeout_ms) + " ms");
      }
      auto msg = grants->Poll(100);
      if (!msg || !msg->ok()) continue;
      const auto p = static_cast<size_t>(msg->partition());
      if (p < next.size()) next[p] = std::max(next[p], msg->offset() + 1);
      ApplyGrant(*msg, NowUnixMs());
    }
    return Status::Ok();
  }

  // One holding from the grants topic.
  void ApplyGrant(const kafka::Message& msg, int64_t now) {
    budget::GrantsReader::Record r = reader.Take(msg.partition(), msg.payload(), msg.offset());
    if (r.kind == budget::GrantsReader::Kind::kStale) {
      // Queued by a coordinator that a newer one has fenced off since (docs/budget-leases.md,
      // section 2): what it says may already be granted again, to another bidder.
      const int64_t n = total_stale.fetch_add(1) + 1;
      if (now >= next_stale_log_ms) {
        log::Get("lease").warn(
            "lease client {}: a holding of coordinator {} (epoch {}) landed after a newer "
            "coordinator's epoch {}: ignored ({} so far)",
            name, r.grant.coordinator, r.grant.epoch, reader.MaxEpoch(), n);
        next_stale_log_ms = now + 10'000;
      }
      return;
    }
    if (r.kind != budget::GrantsReader::Kind::kHolding) return;
    const budget::LeaseGrant* g = &r.grant;
    const auto it = index_of.find(g->key.advertiser);
    if (it == index_of.end() || g->key.arm > 1) return;
    const size_t slot = g->key.arm * cfg->advertisers.size() + it->second;
    Slot& s = slots[{g->key.day, slot}];
    s.pool = g->pool;  // any bidder's holding says what is left in the pool
    s.left = g->left;
    if (g->bidder != name) return;
    // Whose holding: this process's, an earlier one's of its state store (its restored lease
    // until the coordinator answers this process), or another live process's under the same
    // name, which is never this one's to spend.
    bool earlier = false;
    if (!g->instance.empty() && g->instance != instance) {
      earlier = std::find(lineage.begin(), lineage.end(), g->instance) != lineage.end();
      if (!earlier) {
        if (g->ts_ms >= started_ms && !name_conflict.exchange(true)) {
          log::Get("lease").error(
              "lease client {}: another process (instance {}) holds this bidder name; this one "
              "(instance {}) gets no lease until that one is gone: give each bidder its own "
              "leases.name",
              name, g->instance, instance);
        }
        return;
      }
    } else if (!g->instance.empty()) {
      if (name_conflict.exchange(false)) {
        log::Get("lease").info("lease client {}: the name is this process's now (instance {})",
                               name, instance);
      }
      if (on_answered) std::exchange(on_answered, nullptr)();
    }
    ++stats.own;
    stats.own_lag_ms += std::max<int64_t>(0, now - g->ts_ms);
    s.held = g->held;
    // A recall published before the coordinator had this slot's last return is stale: it asks
    // for money already on its way. Whether it has the return is the holding's `returned`, not
    // `seen`: a later report can be seen while the return itself was lost (it is sent again).
    const bool has_return = g->returned >= s.aside_seq;
    if (has_return) s.wanted = g->wanted;
    s.target = g->target;
    if (first_seq > 0 && g->seen >= first_seq && !earlier) s.synced = true;
    if (s.aside + s.aside_above > 0 && has_return) {
      // The holding includes the return: the limit falls to it (and the cap by the amount)
      // first, then the set-aside amount leaves committed, so no bid ever sees the room twice.
      s.cap = std::max<int64_t>(0, s.cap - s.aside);
      stats.returned += s.aside_above;
      s.aside_above = 0;
      BudgetLedger* ledger = days->Current();
      if (ledger != nullptr && days->CurrentDay() == g->key.day) {
        ledger->SetLimit(slot, Micros(std::max(std::min({s.held, ArmBudgetOf(slot), s.cap}),
                                               ledger->spent(slot).value())));
        ledger->ReleaseSetAside(slot, Micros(s.aside));
      }
      stats.returned += s.aside;
      s.aside = 0;
    }
    PublishView(g->key.day, slot, s);
    if (s.asked_ms >= 0) {
      answer_ms = 0.9 * answer_ms + 0.1 * static_cast<double>(now - s.asked_ms);
      ++total_answers;
      stats.zero += g->granted == 0 ? 1 : 0;
      stats.answer_ms += now - s.asked_ms;
      stats.answer_ms_max = std::max(stats.answer_ms_max, now - s.asked_ms);
    }
    s.asked_ms = -1;
    // The pool is empty: the others' leases are all there is; ask again half a horizon on.
    if (g->granted == 0 && g->pool == 0) {
      s.quiet_until_ms = now + int64_t{cfg->leases.horizon_ms} / 2;
    }
  }

  // Gives back what slot k has set aside (s.aside, s.aside_above), with the spend and
  // reservations it leaves and its cap: under a new seq, or (`again`) the first copy's, so that
  // a coordinator that has the first copy does not take the amount twice.
  void SendReturn(int64_t day, size_t k, const BudgetLedger& ledger, Slot& s, int64_t now,
                  bool again = false) {
    const LeaseKey key = KeyOf(day, k);
    const int64_t spent = ledger.spent(k).value();
    budget::LeaseItem it{
        key.advertiser,          key.arm, 0,
        s.aside + s.aside_above, spent,   ledger.committed(k).value() - spent - s.aside};
    it.cap = s.cap - s.aside;
    if (!again) s.aside_seq = NextSeq();
    s.aside_ms = now;
    Send(budget::LeaseMsgType::kReturn, day, {it}, s.aside_seq);
  }

  // What the slot may use of its holding: all of it but a return under way above its limit.
  static int64_t Usable(const Slot& s) { return s.held - s.aside_above; }

  // Sets `back` aside for a return (Slot::aside, Slot::aside_above) and sends it: the part above
  // the slot's limit as it is, the rest with the bids' own compare-and-swap (or not at all, if a
  // bid took it first). False when less than `least` could be set aside.
  bool GiveBack(int64_t day, size_t k, BudgetLedger& ledger, Slot& s, int64_t back, int64_t least,
                int64_t now) {
    const int64_t above =
        std::clamp<int64_t>(Usable(s) - ledger.budget(k).value(), 0, std::max<int64_t>(0, back));
    int64_t room = back - above;
    if (room > 0 && !ledger.TrySetAside(k, Micros(room))) room = 0;
    if (above + room < std::max<int64_t>(1, least)) {
      if (room > 0) ledger.ReleaseSetAside(k, Micros(room));
      return false;
    }
    s.aside = room;
    s.aside_above = above;
    ++total_returns;
    SendReturn(day, k, ledger, s, now);
    return true;
  }

  int64_t ArmBudgetOf(size_t slot) const {
    const size_t n = cfg->advertisers.size();
    return ArmBudget(cfg->advertisers[slot % n].daily_budget, static_cast<Arm>(slot / n),
                     cfg->ab.learned_share)
        .value();
  }

  // The least slot k asks for at once: `min_lease`, but never more than a fiftieth of a small
  // budget (so that one bidder's first ask does not hold what the others' traffic needs), and
  // never less than one and a half of the largest bid charge seen (up to half the budget): a
  // sparse campaign's one bid a minute must not wait for its lease.
  int64_t MinLease(size_t k) const {
    const int64_t arm_budget = ArmBudgetOf(k);
    const int64_t min_lease = Micros::FromUnits(cfg->leases.min_lease).value();
    const int64_t c = k < charge.size() ? charge[k] : 0;
    return std::max(std::min(min_lease, std::max<int64_t>(1'000, arm_budget / 50)),
                    std::min(arm_budget / 2, c * 3 / 2));
  }

  // Tomorrow's leases, asked for from the start of today: the next day's first requests find
  // every slot answered and its cap on Kafka, instead of no-bidding (or, behind an exchange
  // whose clock runs as fast as the bidders answer, losing much of the day's start) while the
  // first asks travel. Unanswered slots ask again each second.
  void PrepareDay(int64_t day, int64_t now) {
    if (now < next_prepare_ms) return;
    next_prepare_ms = now + 1'000;
    std::vector<budget::LeaseItem> asks;
    for (size_t k = 0; k < Slots(); ++k) {
      Slot& s = slots[{day, k}];
      if (s.synced || (s.asked_ms >= 0 && now - s.asked_ms < 1'000)) continue;
      const LeaseKey key = KeyOf(day, k);
      // What this bidder committed of the slot the day before (its share of the traffic), up to
      // a minimum lease: a bidder that sees a tenth of a small budget's requests does not hold
      // half of it all day.
      int64_t first = MinLease(k);
      if (const auto y = slots.find({day - 2, k}); y != slots.end()) {
        first = std::min(first, std::max<int64_t>(kLeastPrepared, y->second.last_committed));
      }
      const int64_t want = std::max<int64_t>(0, std::min(first, ArmBudgetOf(k)) - s.held);
      asks.push_back({key.advertiser, key.arm, want, 0, 0, 0, 0});
      s.asked_ms = now;
      s.last_want = want;
      ++total_asks;
    }
    if (!asks.empty()) Send(budget::LeaseMsgType::kRequest, day, std::move(asks));
  }

  // Forgets the slots of days before the last kKeptDays (a bidder runs for months): what is
  // held there is no longer reported, and a new ledger of such a day (a late notice after a
  // restart) starts at its spend.
  void Prune(int64_t day) {
    pruned_for = day;
    const std::pair<int64_t, size_t> first{day - kKeptDays, 0};
    slots.erase(slots.begin(), slots.lower_bound(first));
    std::lock_guard<std::mutex> l(held_mu);
    held_known.erase(held_known.begin(), held_known.lower_bound(first));
  }

  void Check(int64_t now) {
    const int64_t day = days->CurrentDay();
    BudgetLedger* ledger = days->Current();
    if (ledger == nullptr || day < 0) return;
    if (day != pruned_for) Prune(day);
    const LeaseClientConfig& lc = cfg->leases;
    std::vector<budget::LeaseItem> asks;
    for (size_t k = 0; k < Slots() && k < ledger->advertisers(); ++k) {
      Slot& s = slots[{day, k}];
      const int64_t committed = ledger->committed(k).value();
      if (s.last_ms > 0 && now > s.last_ms) {
        const double inst =
            static_cast<double>(std::max<int64_t>(0, committed - s.last_committed)) * 1000.0 /
            static_cast<double>(now - s.last_ms);
        s.rate = 0.8 * s.rate + 0.2 * inst;
      }
      s.last_committed = committed;
      s.last_ms = now;
      const int64_t arm_budget = ArmBudgetOf(k);
      if (charge.size() < Slots()) charge.resize(Slots(), 0);
      // The mean bid charge of this advertiser and arm, over the days (each bid weighs 1/8).
      if (unit_mean.size() < Slots()) unit_mean.resize(Slots(), 0);
      if (const int64_t n = ledger->charge_n(k) - s.charge_n; n > 0) {
        const double bids_mean =
            static_cast<double>(ledger->charge_sum(k) - s.charge_sum) / static_cast<double>(n);
        const double keep = unit_mean[k] == 0 ? 0 : std::pow(7.0 / 8.0, static_cast<double>(n));
        unit_mean[k] = keep * unit_mean[k] + (1 - keep) * bids_mean;
        s.charge_n = ledger->charge_n(k);
        s.charge_sum = ledger->charge_sum(k);
      }
      charge[k] =
          std::max({charge[k], ledger->max_charge(k).value(), ledger->last_refused(k).value()});
      const int64_t min_micros = MinLease(k);
      // The slot's limit: its lease (never above its share of the budget), or what it has
      // committed while frozen. Until a holding includes this process's messages, new bids
      // wait (a return the process before a restart sent may not be in it yet), but notices of
      // bids made before may book inside it: their reservations are in it, the return is not.
      // Another process holding the name counts as frozen: that one spends this lease now.
      const bool stopped = frozen || name_conflict.load();
      const bool hold_still = stopped || !s.synced;
      // Past the last report's cap, nothing more until the next report is on Kafka.
      const int64_t limit = stopped    ? std::min(committed, Usable(s))
                            : s.synced ? std::min({Usable(s), arm_budget, s.cap})
                                       : std::min(Usable(s), arm_budget);
      ledger->SetBidsOpen(k, s.synced);
      // The cap stays a few bids and two report intervals of spend ahead of what is committed;
      // when it holds bids back while the lease has room, report now.
      s.slack = std::max({2 * charge[k], min_micros,
                          static_cast<int64_t>(s.rate * 3 * cfg->leases.report_every_ms / 1000.0),
                          int64_t{0}});
      if (s.synced && !frozen && s.cap < std::min(Usable(s), arm_budget) &&
          committed + std::max<int64_t>(charge[k], 1) > s.cap) {
        report_soon = true;
      }
      ledger->SetLimit(k, Micros(std::max<int64_t>(limit, ledger->spent(k).value())));
      // Bids are sized to what the whole budget has left (as one bidder's would be), not to the
      // lease: a bid the lease cannot cover is refused, and the refusal asks for room.
      const int64_t lease_left = std::max<int64_t>(0, limit - committed);
      ledger->SetHeadroom(
          k, Micros(hold_still ? 0 : std::max<int64_t>({0, s.pool, s.left - lease_left})));
      // Demand the lease did not cover: reservations refused since the last check.
      const int64_t denied = ledger->denied(k).value();
      const bool blocked = denied > s.last_denied;
      s.last_denied = denied;
      stats.blocked += blocked ? 1 : 0;
      if (frozen) continue;
      const LeaseKey key = KeyOf(day, k);
      // A return the coordinator has not confirmed: send it again, under the first copy's seq
      // (a coordinator that has the first copy gives nothing back twice: LeaseGrant::returned).
      if (s.aside + s.aside_above > 0) {
        if (now - s.aside_ms >= kResendMs) SendReturn(day, k, *ledger, s, now, /*again=*/true);
        continue;
      }
      const int64_t unspent = s.held - committed;
      if (blocked) s.last_blocked_ms = now;
      // Others wait for money of this budget (a recall): a slot not refused itself within a
      // horizon gives back, up to what they want, all it holds beyond a horizon of its own
      // recent commit rate.
      // Share sizing: the coordinator asks back what is beyond this bidder's share, or what a
      // budget's last bids need; all of it comes back.
      if (s.wanted > 0 && s.synced && unspent > 0 &&
          (share || s.last_blocked_ms < 0 || now - s.last_blocked_ms > lc.horizon_ms)) {
        // Share sizing: the coordinator asked from reports a report old; keep what this slot
        // commits until the next answer, and two bids.
        // A holding that says its target (whole bids: docs/budget-leases.md, section 8) keeps
        // no more than that.
        int64_t own =
            share ? std::max<int64_t>(
                        2 * charge[k],
                        static_cast<int64_t>(s.rate * (lc.report_every_ms + answer_ms) / 1000.0))
                  : static_cast<int64_t>(s.rate * (lc.horizon_ms / 1000.0 + answer_ms / 1000.0));
        if (share && s.target >= 0) {  // the target counts its reservations
          own = std::min(own,
                         std::max<int64_t>(0, s.target - (committed - ledger->spent(k).value())));
        }
        const int64_t back = std::min(s.wanted, unspent - own);
        s.wanted = 0;
        // Parted in whole bids, any amount: the coordinator asks exactly what a whole bid misses.
        if (GiveBack(day, k, *ledger, s, back, share && s.target >= 0 ? 1 : kLeastPrepared, now)) {
          continue;
        }
      }
      if (s.asked_ms >= 0 && now - s.asked_ms < 1'000) continue;  // waiting for the answer
      // Give back, when others may need it (the pool is dry), all of a lease too small for the
      // bid it refused (in pieces too small for any one bidder, a small budget would not be
      // spent at all), and under rate sizing what is beyond twice a lease. The amount is set
      // aside first, with the bids' own check.
      const int64_t refused = ledger->last_refused(k).value();
      const bool fragment = blocked && now < s.quiet_until_ms && unspent > 0 && unspent < refused;
      const int64_t need =
          blocked ? std::max<int64_t>(0, refused - std::max<int64_t>(0, unspent)) : 0;
      if (share) {
        // The coordinator tops the lease up from the reports; a slot asks only to learn what
        // it holds, or with the charge of a bid it could not reserve.
        // Parted in whole bids (a target said), a piece is what the coordinator means it to
        // hold: it stays, and a short bidder is topped up.
        if (s.synced && s.pool <= 0 && fragment && s.target < 0) {
          GiveBack(day, k, *ledger, s, unspent, 1, now);
          continue;
        }
        if (now < s.quiet_until_ms && s.synced && s.pool <= 0) continue;
        const int64_t want =
            blocked ? std::max<int64_t>(0, std::min(need, arm_budget - s.held)) : 0;
        if (want > 0 || !s.synced) {
          asks.push_back({key.advertiser, key.arm, want, 0, 0, 0, want});
          s.asked_ms = now;
          s.last_want = want;
          ++total_asks;
        }
        continue;
      }
      // Rate sizing, in seconds of the slot's recent commit rate: a lease covers the horizon
      // plus the time an answer takes; a slot asks when what it has left covers less than half
      // a horizon plus that time, and gives back what is beyond twice the lease.
      const double wait_s = answer_ms / 1000.0;
      const double lease_s = lc.horizon_ms / 1000.0 + wait_s;
      const int64_t keep =
          std::max<int64_t>(min_micros, static_cast<int64_t>(2 * s.rate * lease_s));
      if (s.synced && s.pool <= 0 && (fragment || (!blocked && unspent > keep + min_micros))) {
        GiveBack(day, k, *ledger, s, fragment ? unspent : unspent - keep, 1, now);
        continue;
      }
      // The pool was dry at the last answer: wait, unless a holding since says it is not.
      if (now < s.quiet_until_ms && s.synced && s.pool <= 0) continue;
      // A lease's worth at the recent commit rate; while refused reservations show that the
      // lease holds the slot back (so that its commit rate understates what it would spend),
      // twice the last ask, as TCP's slow start grows a window. A slot not yet synced asks
      // (for 0 if it holds its whole share) to learn what it holds.
      int64_t want = LeaseWant(s.rate, static_cast<int64_t>(lease_s * 1000), min_micros, unspent);
      if (blocked) want = std::max({want, min_micros, 2 * s.last_want, need});
      want = std::max<int64_t>(0, std::min(want, arm_budget - s.held));
      const bool low =
          unspent <
          std::max<int64_t>(std::max(min_micros / 2, charge[k]),
                            static_cast<int64_t>(s.rate * (lc.horizon_ms / 2000.0 + wait_s)));
      if (((low || blocked) && want > 0) || !s.synced) {
        asks.push_back({key.advertiser, key.arm, want, 0, 0, 0, std::min(need, want)});
        s.asked_ms = now;
        s.last_want = want;
        ++total_asks;
      }
    }
    if (!asks.empty()) Send(budget::LeaseMsgType::kRequest, day, std::move(asks));
    if (!frozen) PrepareDay(day + 1, now);
    if (ready_day.load() != day && !frozen && Ready(day)) ready_day.store(day);
    if (ready_next.load() != day + 1 && !frozen && Ready(day + 1)) ready_next.store(day + 1);
  }

  // Spend, reservations and caps of the current day: every slot (`full`), or those that
  // changed since the last report Kafka took; and the caps of the next day's slots that changed
  // (PrepareDay: nothing is spent there yet). A report Kafka takes renews the TTL and moves
  // each slot's cap on; any report, even empty, is the heartbeat. `periodic`: the report of a
  // report interval (not one a cap asked for early), which carries the bid requests answered.
  void Report(int64_t now, bool periodic, bool full) {
    last_report_ms = now;
    report_soon = false;
    const int64_t day = days->CurrentDay();
    BudgetLedger* ledger = days->Current();
    if (ledger == nullptr || day < 0) return;
    std::vector<std::pair<size_t, int64_t>> caps, next_caps;  // (slot, cap) once Kafka has it
    bool sent = Send(budget::LeaseMsgType::kReport, day, ReportItems(day, ledger, full, &caps), 0,
                     /*with_requests=*/periodic);
    auto next_items = ReportItems(day + 1, nullptr, false, &next_caps);
    if (!next_items.empty()) {
      sent = Send(budget::LeaseMsgType::kReport, day + 1, std::move(next_items)) && sent;
    }
    const int64_t flush_from = NowUnixMs();
    sent = sent && producer->Flush(std::max(100, cfg->leases.report_every_ms)).ok();
    const int64_t flush_ms = NowUnixMs() - flush_from;
    ++stats.reports;
    stats.report_ms += flush_ms;
    stats.report_ms_max = std::max(stats.report_ms_max, flush_ms);
    if (sent) {
      if (now - last_report_ok_ms > cfg->leases.ttl_ms) {
        // Silent past the TTL (and so, by the TTL's rule, maybe past the coordinator's heartbeat
        // timeout): the coordinator may have taken this bidder for dead and granted what it
        // held above its last cap to others. Raising the cap now could spend that money twice,
        // so new bids wait, as after a restart, for holdings that have read this report.
        first_seq = last_seq;
        for (auto& [key, slot] : slots) slot.synced = false;
        ++total_resyncs;
        log::Get("lease").warn(
            "lease client: no report on Kafka for {} ms: bids wait for the coordinator's holdings",
            now - last_report_ok_ms);
      }
      last_report_ok_ms = now;
      report_ok_ms = now;
      ++total_reports;
      for (const auto& [d, c] : {std::pair{day, &caps}, std::pair{day + 1, &next_caps}}) {
        for (const auto& [k, cap] : *c) {
          Slot& s = slots[{d, k}];
          s.cap = cap;
          s.reported_cap = cap;
          PublishView(d, k, s);
        }
      }
      if (frozen) log::Get("lease").info("lease client: Kafka is back; leases apply again");
      frozen = false;
    } else {
      for (const auto& [k, cap] : caps) slots[{day, k}].reported_cap = -1;  // send it again
      for (const auto& [k, cap] : next_caps) slots[{day + 1, k}].reported_cap = -1;
    }
  }

  // One day's report items (a day without a ledger yet has nothing committed), and each slot's
  // new cap.
  std::vector<budget::LeaseItem> ReportItems(int64_t day, const BudgetLedger* ledger, bool full,
                                             std::vector<std::pair<size_t, int64_t>>* caps) {
    std::vector<budget::LeaseItem> items;
    for (size_t k = 0; k < Slots() && (ledger == nullptr || k < ledger->advertisers()); ++k) {
      if (ledger == nullptr && slots.find({day, k}) == slots.end()) continue;
      const LeaseKey key = KeyOf(day, k);
      Slot& s = slots[{day, k}];
      const int64_t committed = ledger != nullptr ? ledger->committed(k).value() : 0;
      const int64_t spent = ledger != nullptr ? ledger->spent(k).value() : 0;
      if (ledger == nullptr) {  // as Check sizes it, before any spend
        s.slack = std::max({s.slack, MinLease(k), 2 * (k < charge.size() ? charge[k] : 0)});
      }
      // Unsynced, a restarted bidder may book notices up to its holding; synced, up to the cap.
      const int64_t cap = s.synced ? std::max(committed, std::min(Usable(s), committed + s.slack))
                                   : std::max(committed, std::min(Usable(s), ArmBudgetOf(k)));
      const int64_t reserved = committed - spent - s.aside;  // the aside is a return under way
      if (!full && cap == s.reported_cap && spent == s.reported_spent &&
          reserved == s.reported_reserved) {
        continue;
      }
      budget::LeaseItem it{key.advertiser, key.arm, 0, 0, spent, reserved};
      it.cap = cap - s.aside;
      if (k < unit_mean.size()) it.unit = std::llround(unit_mean[k]);
      items.push_back(it);
      caps->emplace_back(k, cap);
      s.reported_spent = spent;
      s.reported_reserved = reserved;
    }
    return items;
  }

  void Run() {
    // Not lowered like the event threads: few messages, and a slot waits for each answer.
    last_report_ok_ms = NowUnixMs();
    while (!stop.load()) {
      const int64_t now = NowUnixMs();
      ReadGrants(now);
      if (now >= next_report_ms) {
        Report(now, /*periodic=*/true,
               /*full=*/periodic_reports++ % cfg->leases.full_report_every == 0);
        next_report_ms = now + cfg->leases.report_every_ms;
      } else if (report_soon && now - last_report_ms >= kSoonestReportMs) {
        Report(now, /*periodic=*/false, /*full=*/false);
      }
      if (!frozen && now - last_report_ok_ms > cfg->leases.ttl_ms) {
        frozen = true;
        log::Get("lease").warn(
            "lease client: Kafka has taken no report for {} ms: spending only what is committed",
            now - last_report_ok_ms);
      }
      Check(now);
      producer->Poll(0);
      if (now >= next_stats_ms) {
        const int64_t asks = total_asks - stats.asks, answers = total_answers - stats.answers;
        if (asks > 0) {
          log::Get("lease").info(
              "lease client {}: {} asks, {} answered ({} with nothing) in {:.0f} ms on average "
              "(at most {} ms); {} slot checks found refused reservations; {} returns, {:.2f} "
              "given back; {} resyncs after a silence past the TTL; its holdings read {:.0f} ms "
              "after they were published on average; {} reports on Kafka in {:.0f} ms on "
              "average (at most {} ms)",
              name, asks, answers, stats.zero,
              answers > 0 ? static_cast<double>(stats.answer_ms) / answers : 0.0,
              stats.answer_ms_max, stats.blocked, total_returns - stats.returns,
              Micros(stats.returned).units(), total_resyncs - stats.resyncs,
              stats.own > 0 ? static_cast<double>(stats.own_lag_ms) / stats.own : 0.0,
              stats.reports,
              stats.reports > 0 ? static_cast<double>(stats.report_ms) / stats.reports : 0.0,
              stats.report_ms_max);
        }
        stats = {.asks = total_asks,
                 .answers = total_answers,
                 .returns = total_returns,
                 .resyncs = total_resyncs};
        next_stats_ms = now + kStatsEveryMs;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(cfg->leases.check_every_ms));
    }
  }
};

LeaseClient::LeaseClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::pair<int64_t, int64_t> LeaseClient::ReadyDays() const {
  return {impl_->ready_day.load(), impl_->ready_next.load()};
}

LeaseClient::Health LeaseClient::GetHealth() const {
  const Impl& m = *impl_;
  return {.frozen = m.frozen.load(),
          .report_age_ms = std::max<int64_t>(0, NowUnixMs() - m.report_ok_ms.load()),
          .asks = m.total_asks.load(),
          .answers = m.total_answers.load(),
          .returns = m.total_returns.load(),
          .reports = m.total_reports.load(),
          .resyncs = m.total_resyncs.load(),
          .stale = m.total_stale.load(),
          .name_conflict = m.name_conflict.load()};
}

LeaseClient::~LeaseClient() {
  impl_->days->SetLeaseView(nullptr);
  impl_->stop = true;
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<LeaseClient>> LeaseClient::Start(const BidderConfig* cfg, DayLedgers* days,
                                                        const std::string& bootstrap, Identity id,
                                                        const Counter* requests) {
  auto m = std::make_unique<Impl>();
  m->cfg = cfg;
  m->days = days;
  m->requests = requests;
  m->share = cfg->leases.sizing == LeaseSizing::kShare;
  m->name = std::move(id.name);
  m->instance = std::move(id.instance);
  m->lineage = std::move(id.lineage);
  m->on_answered = std::move(id.on_answered);
  for (size_t k = 0; k < cfg->advertisers.size(); ++k) m->index_of[cfg->advertisers[k].id] = k;
  kafka::Producer::Options po;
  po.bootstrap = bootstrap;
  po.properties = {{"linger.ms", "1"}, {"message.timeout.ms", std::to_string(cfg->leases.ttl_ms)}};
  const auto& site = cfg->kafka.properties;  // the market's (security, client.id...)
  po.properties.insert(po.properties.end(), site.begin(), site.end());
  RTB_ASSIGN_OR_RETURN(m->producer, kafka::Producer::Create(std::move(po)));
  kafka::Consumer::Options co;
  co.bootstrap = bootstrap;
  co.group_id = "rtb-lease-" + m->name;  // assigned, never committed
  // A grant answers a waiting slot: no batching. An offset out of range (a truncated log) reads
  // again from the start, so no marker is skipped (the reader starts that partition's fence
  // again when its offsets go back).
  co.properties = {{"fetch.wait.max.ms", "10"}, {"auto.offset.reset", "earliest"}};
  co.properties.insert(co.properties.end(), site.begin(), site.end());
  RTB_ASSIGN_OR_RETURN(m->grants, kafka::Consumer::Create(std::move(co)));
  RTB_ASSIGN_OR_RETURN(const int parts, m->grants->PartitionCount(cfg->leases.grants_topic, 10000));
  std::vector<kafka::TopicPartition> tp;
  for (int p = 0; p < parts; ++p)
    tp.push_back({cfg->leases.grants_topic, p, kafka::kOffsetBeginning});
  RTB_RETURN_IF_ERROR(m->grants->Assign(tp));
  Impl* raw = m.get();
  // Every holding the topic has for this bidder, before the first request: a restarted bidder
  // books its last bids' notices inside them.
  RTB_RETURN_IF_ERROR(raw->CatchUp(cfg->leases.grants_topic, parts, 10'000));
  days->SetLeaseView([raw](int64_t day, size_t slot) {
    std::lock_guard<std::mutex> l(raw->held_mu);
    const auto it = raw->held_known.find({day, slot});
    DayLedgers::LeaseView v = it == raw->held_known.end() ? DayLedgers::LeaseView{} : it->second;
    // No new money while Kafka takes no report, nor while another process holds the name (a
    // process that took it over, e.g. from a copy of this state store, spends the same lease).
    if (raw->frozen.load() || raw->name_conflict.load()) v.open_limit = -1;
    return v;
  });
  m->thread = std::thread([raw] { raw->Run(); });
  log::Get("lease").info("lease client {} (instance {}): budgets shared through {} / {}", raw->name,
                         raw->instance, cfg->leases.requests_topic, cfg->leases.grants_topic);
  return std::unique_ptr<LeaseClient>(new LeaseClient(std::move(m)));
}

}  // namespace rtb::bidder
