#include "rtb/budget/coordinator.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "rtb/budget/handover.h"
#include "rtb/budget/lease_msg.h"
#include "rtb/core/ab.h"
#include "rtb/core/clock.h"
#include "rtb/core/host.h"
#include "rtb/core/log.h"
#include "rtb/core/report.h"
#include "rtb/kafka/kafka.h"

namespace rtb::budget {

struct Coordinator::Impl {
  CoordinatorOptions opt;
  Clock* clock;  // opt.clock, never null
  LeaseLedger ledger;
  std::unique_ptr<kafka::Producer> producer;
  std::unique_ptr<kafka::Consumer> consumer;
  using Granted = std::map<std::pair<LeaseKey, std::string>, int64_t>;
  // Needs the pool could not meet, per budget and bidder (what is missing, since when). The
  // other holders of the budget are asked to give back (`wanted` on their holdings), and what
  // comes back goes to these bidders first. A need stands until met, asked again, or
  // opt.need_stands_ms.
  struct Want {
    int64_t need = 0;
    int64_t since_ms = 0;
  };
  std::map<LeaseKey, std::map<std::string, Want>> wanted;

  // Per partition of the requests topic: the next offset to read (what was read).
  std::map<int32_t, int64_t> next_offset;
  int partitions = -1;
  int64_t behind_skips = 0, next_behind_log_ms = 0;
  // Since the last status line: how late messages were read (now - the bidder's ts_ms).
  int64_t lag_sum_ms = 0, lag_max_ms = 0, lag_n = 0;

  ReadToTheEnd read_to_end;

  // Whether everything on the requests topic as of the last check (ReadToTheEnd::Target) has
  // been read. Only then is a bidder's silence its own: each bidder writes to its own
  // partition, and a coordinator behind some of them (under load, partitions are read
  // unevenly) has not read what a live bidder sent, nor the caps it raised, which the bidder may
  // already be spending up to. A live bidder whose only unread messages reached the topic within
  // the last two checks, after a silence of the heartbeat timeout, was cut off from Kafka for
  // longer than its TTL and spends nothing new until resynced (section 4 of
  // docs/budget-leases.md).
  bool CaughtUp(int64_t now) {
    const int64_t asked_us = NowSteadyUs();  // how long the brokers take: real time
    if (partitions < 0) {
      auto n = consumer->PartitionCount(opt.requests_topic, 1'000);
      if (!n.ok()) return Unreachable(now);
      partitions = *n;
    }
    std::map<int32_t, int64_t> high;
    for (int32_t p = 0; p < partitions; ++p) {
      auto wm = consumer->Watermarks(opt.requests_topic, p, 1'000);
      if (!wm.ok()) return Unreachable(now);
      high[p] = wm->second;
    }
    // Answers that waited for the brokers (down when asked, back before the queries timed out)
    // end an outage too; and the outage lasted until they came, not until they were asked for.
    if (NowSteadyUs() - asked_us > kSlowQueriesMs * 1000) unreachable = true;
    Reachable(std::max(now, clock->UnixMs()));
    return read_to_end.Reached(next_offset,
                               read_to_end.Target(std::move(high), now, opt.reclaim_every_ms));
  }

  // The coordinator's own Kafka outages. While it cannot ask the brokers it reclaims nothing
  // (CaughtUp fails). When it can again after more than half a heartbeat timeout without
  // contact, the bidders' silence was the outage's as much as theirs: each of them was cut off too
  // (and has frozen past its TTL) or will be heard from as soon as its own client reconnects, which
  // can be after the coordinator's. So no reclaim for a heartbeat timeout from then: a bidder that
  // died meanwhile is reclaimed after it; a live one is not taken for dead for a race of
  // reconnects.
  // A query failed, or waited for the brokers, since the last one answered.
  bool unreachable = false;
  static constexpr int64_t kSlowQueriesMs = 1'000;  // CaughtUp's queries, all partitions
  int64_t last_contact_ms, reclaims_paused_until_ms = 0;
  bool Unreachable(int64_t) {
    unreachable = true;
    return false;
  }
  void Reachable(int64_t now) {
    // The outage is counted from the last contact (a message read, or a query answered): the
    // coordinator asks only once some bidder looks silent, well into an outage.
    if (unreachable && now - last_contact_ms > opt.lease.heartbeat_timeout_ms / 2) {
      reclaims_paused_until_ms = now + opt.lease.heartbeat_timeout_ms;
      log::Get("budget").info(
          "coordinator: Kafka answers again after {} ms without contact: no reclaim for {} ms "
          "(the bidders' silence was the outage's)",
          now - last_contact_ms, opt.lease.heartbeat_timeout_ms);
    }
    unreachable = false;
    last_contact_ms = now;
  }

  // What the other bidders wait for of a budget (a holding's `wanted`).
  int64_t WantedFrom(const LeaseKey& key, const std::string& bidder, int64_t now) const {
    const auto it = wanted.find(key);
    if (it == wanted.end()) return 0;
    int64_t sum = 0;
    for (const auto& [b, w] : it->second) {
      if (b != bidder && now - w.since_ms <= opt.need_stands_ms) sum += w.need;
    }
    return sum;
  }

  // A need went unmet: publish the holdings of the other bidders that hold some of the budget,
  // with `wanted` (they give back what they do not use).
  void Recall(const LeaseKey& key, const std::string& asker, Granted* granted) {
    for (const auto& [b, seq] : seen_seq) {
      if (b != asker && ledger.Held(b, key) > 0) (*granted)[{key, b}] += 0;
    }
  }

  // Money came back to the pool: to the bidders waiting for it, oldest first. A need of a
  // bidder that has since died is dropped: serving it would count as a word from the bidder and
  // bring it back (LeaseLedger::Request), and the next check would reclaim it again.
  void ServeWaiting(const LeaseKey& key, int64_t now, Granted* granted) {
    const auto it = wanted.find(key);
    if (it == wanted.end()) return;
    for (auto w = it->second.begin(); w != it->second.end();) {
      if (now - w->second.since_ms > opt.need_stands_ms || !ledger.IsAlive(w->first)) {
        w = it->second.erase(w);
        continue;
      }
      if (ledger.Of(key).pool() <= 0) break;
      const int64_t g = ledger.Request(w->first, key, w->second.need, now, w->second.need);
      (*granted)[{key, w->first}] += g;
      w->second.need -= g;
      w = w->second.need <= 0 ? it->second.erase(w) : std::next(w);
    }
    if (it->second.empty()) wanted.erase(it);
  }

  // Share sizing: what Rebalance asked back of each holding (its `wanted` when published next).
  std::map<std::pair<LeaseKey, std::string>, int64_t> recalls;

  // Share sizing: tops up the bidders of `key` below their part, asks back the excess of the
  // others when the pool cannot (LeaseLedger::Rebalance); every changed holding is published.
  // `reporter`: the bidder whose report this follows (nothing moves unless it is short).
  void Rebalance(const LeaseKey& key, int64_t now, Granted* granted,
                 const std::string* reporter = nullptr) {
    for (const LeaseLedger::Move& mv : ledger.Rebalance(key, now, reporter)) {
      (*granted)[{key, mv.bidder}] += mv.grant;
      if (mv.recall > 0) recalls[{key, mv.bidder}] = mv.recall;
    }
  }

  // Drops the needs nobody met in time.
  void ForgetOldWants(int64_t now) {
    for (auto it = wanted.begin(); it != wanted.end();) {
      std::erase_if(it->second,
                    [&](const auto& w) { return now - w.second.since_ms > opt.need_stands_ms; });
      it = it->second.empty() ? wanted.erase(it) : std::next(it);
    }
  }
  mutable std::mutex counters_mu;
  Counters counters;

  explicit Impl(CoordinatorOptions o)
      : opt(std::move(o)),
        clock(opt.clock != nullptr ? opt.clock : SystemClock()),
        ledger(opt.lease),
        last_contact_ms(clock->UnixMs()),
        refusals("budget", "coordinator", clock) {}

  // Sets the budget of a (day, advertiser, arm) the first time it is seen; false when the
  // advertiser is not in the market.
  bool EnsureBudget(const LeaseKey& key) {
    const auto it = opt.daily_budget.find(key.advertiser);
    if (it == opt.daily_budget.end()) return false;
    if (seen.insert(key).second) {
      ledger.SetBudget(key, ArmBudget(it->second, static_cast<Arm>(key.arm), opt.learned_share));
    }
    return true;
  }

  // Publishes the holdings a batch answered or changed (`granted`: every one of them, even a
  // grant of 0, since a bidder waits for its answer).
  Status PublishChanges(const Granted& granted, int64_t now) {
    for (const auto& [id, amount] : granted) {
      const auto& [key, bidder] = id;
      LeaseGrant g;
      g.bidder = bidder;
      g.key = key;
      g.held = ledger.Held(bidder, key);
      g.granted = amount;
      const LeaseLedger::Totals t = ledger.Of(key);
      g.pool = t.pool();
      g.left = t.left();
      g.ts_ms = now;
      const auto si = seen_seq.find(bidder);
      g.seen = si == seen_seq.end() ? 0 : si->second;
      const auto ri = returned_seq.find(id);
      g.returned = ri == returned_seq.end() ? 0 : ri->second;
      g.wanted = WantedFrom(key, bidder, now);
      if (const auto o = owner.find(bidder); o != owner.end()) g.instance = o->second;
      g.coordinator = instance;
      g.epoch = handover->epoch();
      if (const auto r = recalls.find(id); r != recalls.end()) {
        g.wanted = std::max(g.wanted, r->second);
        recalls.erase(r);
      }
      g.target = ledger.TargetOf(bidder, key);
      g.n = ++grant_n[id];
      RTB_RETURN_IF_ERROR(
          producer->Produce(opt.grants_topic, kafka::kAnyPartition, LeaseGrantKey(key, bidder),
                            SealFor(opt.keys.get(), opt.grants_topic, EncodeLeaseGrant(g))));
      std::lock_guard<std::mutex> lk(counters_mu);
      ++counters.grants_published;
    }
    return Status::Ok();
  }

  // Per bidder name: the process its holdings belong to (LeaseMessage::instance). Two processes
  // under one name (a copied config, a name left at its default on machines that share a host
  // name) would each spend the one lease; the coordinator serves one of them.
  std::map<std::string, std::string> owner;
  std::set<std::string> retired;  // "<name>~<instance>": a dead process's holdings, set aside
  std::map<std::string, int64_t> shown_owner_ms;  // per name: when a refused process last was
  std::map<std::string, int64_t> refusal_log_ms;  // per name: the next refusal logged
  Status publish_error = Status::Ok();            // a hand-over's records could not be published
  Granted unpublished;  // decided, then fenced before publishing (Run): published once fresh

  // What the coordinator keeps per name moves with a name's holdings (Retire), so that the
  // process that takes a name does not inherit another's message numbers, returns or needs.
  void MoveName(const std::vector<LeaseKey>& keys, const std::string& from, const std::string& to) {
    for (const LeaseKey& key : keys) {
      if (const auto r = returned_seq.find({key, from}); r != returned_seq.end()) {
        returned_seq[{key, to}] = r->second;
        returned_seq.erase(r);
      }
      recalls.erase({key, from});
      if (const auto w = wanted.find(key); w != wanted.end()) w->second.erase(from);
    }
    if (const auto s = seen_seq.find(from); s != seen_seq.end()) {
      int64_t& t = seen_seq[to];
      t = std::max(t, s->second);
      seen_seq.erase(from);
    }
  }

  // Whether m's process may speak for its name: the name is free, or m is from the process
  // that holds it, or from a restart of it (its state store's lineage names that process: two
  // live processes cannot open one state store), or the process that holds it is dead. Then
  // the dead one's holdings are set aside as "<name>~<instance>" (still counted against their
  // budgets; its spend is not the newcomer's), and a record set aside earlier of a process in
  // m's lineage (its state store lost the name once) comes back under the name: its spend is
  // in that store. Anything else is refused, counted and logged, and not applied (no
  // heartbeat, no spend, no ask). The refused process is shown the owner's holding of a budget
  // it named (which also publishes the owner's holding again), so that it sees whose the name
  // is: a bidder never spends from another instance's holding.
  bool Admit(const LeaseMessage& m, int64_t now, Granted* granted) {
    if (m.instance.empty()) return true;  // a bidder from before instances
    const auto [it, fresh] = owner.try_emplace(m.bidder, m.instance);
    if (fresh || it->second == m.instance) return true;
    const std::string held_by = it->second;
    if (std::find(m.lineage.begin(), m.lineage.end(), held_by) != m.lineage.end()) {
      log::Get("budget").info("coordinator: bidder {} restarted (instance {} -> {})", m.bidder,
                              held_by, m.instance);
      it->second = m.instance;
      return true;
    }
    if (!ledger.IsAlive(m.bidder)) {
      it->second = m.instance;
      // Published at once, the records that hold money first: a coordinator that dies between
      // two of them restores too much held (delivery may suffer), never too little.
      Granted money, zero;
      const std::string aside = m.bidder + "~" + held_by;
      const std::vector<LeaseKey> set_aside = ledger.Retire(m.bidder, aside);
      for (const LeaseKey& key : set_aside) {
        money[{key, aside}] += 0;
        zero[{key, m.bidder}] += 0;
      }
      MoveName(set_aside, m.bidder, aside);
      if (!set_aside.empty()) retired.insert(aside);
      std::string back;
      for (const std::string& l : m.lineage) {
        const std::string r = m.bidder + "~" + l;
        if (retired.count(r) == 0) continue;
        const std::vector<LeaseKey> keys = ledger.Retire(r, m.bidder);
        for (const LeaseKey& key : keys) {
          money[{key, m.bidder}] += 0;
          zero.erase({key, m.bidder});
          zero[{key, r}] += 0;
        }
        MoveName(keys, r, m.bidder);
        retired.erase(r);
        back = r;
        break;
      }
      publish_error = PublishChanges(money, now);
      if (publish_error.ok()) publish_error = producer->Flush(10'000);
      for (const auto& [id, g] : zero) (*granted)[id] += g;
      log::Get("budget").info(
          "coordinator: bidder {}: instance {} takes the name from {} (dead, not in its "
          "lineage); {} holdings set aside as {}{}",
          m.bidder, m.instance, held_by, set_aside.size(), aside,
          back.empty() ? "" : ", and its own lineage's " + back + " back");
      return true;
    }
    {
      std::lock_guard<std::mutex> lk(counters_mu);
      ++counters.refused;
    }
    if (int64_t& next = refusal_log_ms[m.bidder]; now >= next) {
      log::Get("budget").error(
          "coordinator: two live processes use bidder name {} (instance {} holds it, {} is "
          "refused and gets no lease): give each bidder its own leases.name",
          m.bidder, held_by, m.instance);
      next = now + 10'000;
    }
    int64_t& shown = shown_owner_ms[m.bidder];
    if (!m.items.empty() && now >= shown) {
      const LeaseKey key{m.day, m.items.front().advertiser, m.items.front().arm};
      if (EnsureBudget(key)) (*granted)[{key, m.bidder}] += 0;
      shown = now + 1'000;
    }
    return false;
  }

  void Apply(const LeaseMessage& m, int64_t now, Granted* granted) {
    if (!Admit(m, now, granted)) return;
    // A message a reclaimed bidder sent before it died, read late: its spend and returns count,
    // its asks get nothing (LeaseLedger::Heartbeat), and no one is asked back for it.
    const bool alive = ledger.Heartbeat(m.bidder, now, m.ts_ms > 0 ? m.ts_ms : -1);
    if (!alive) {
      std::lock_guard<std::mutex> lk(counters_mu);
      ++counters.late_from_dead;
    }
    // The bidder's own send time: messages arrive in batches, so arrival times would make a
    // rate of noise.
    if (m.requests >= 0 && m.ts_ms > 0) {
      if (PlausibleCount(m, now)) {
        ledger.Traffic(m.bidder, m.requests, m.ts_ms);
      } else {
        refusals.Refuse("requests", fmt::format("the traffic count {} of bidder {} (instance {})",
                                                m.requests, m.bidder, m.instance));
      }
    }
    int64_t& seen_of = seen_seq[m.bidder];
    seen_of = std::max(seen_of, m.seq);
    for (const LeaseItem& i : m.items) {
      const LeaseKey key{m.day, i.advertiser, i.arm};
      if (!EnsureBudget(key)) {
        std::lock_guard<std::mutex> lk(counters_mu);
        ++counters.unknown_budget;
        continue;
      }
      switch (m.type) {
        case LeaseMsgType::kRequest: {
          if (!alive) {
            // Answered with what it holds, in case a restart's first ask was read as late (its
            // clock behind the others'): it resyncs on that instead of asking again.
            (*granted)[{key, m.bidder}] += 0;
            break;
          }
          const int64_t g = ledger.Request(m.bidder, key, i.want, now, i.need);
          (*granted)[{key, m.bidder}] += g;  // answered even when 0: the bidder waits for it
          // Under share sizing an unmet need asks the others back only once shares no longer
          // apply (a budget's last bids): before that, the shares move the money.
          if (i.need > g && !ledger.SharesApply(key)) {
            wanted[key][m.bidder] = {i.need - g, now};
            Recall(key, m.bidder, granted);
          } else if (const auto w = wanted.find(key); w != wanted.end()) {
            w->second.erase(m.bidder);
          }
          break;
        }
        case LeaseMsgType::kReturn: {
          // What the bidder has committed once it set the amount aside, then the return; the
          // holding is published even when nothing came back: the bidder waits for it.
          // A return sent again (its answer was late or the first copy was lost) carries the
          // first copy's seq, and a restart can deliver one twice: the budget's last applied
          // return seq says whether this one is in already (then it gives nothing back twice).
          int64_t& last = returned_seq[{key, m.bidder}];
          const bool repeated = m.seq > 0 && m.seq <= last;
          ledger.Report(m.bidder, key, i.spent, i.reserved, now, i.cap, m.seq);
          const int64_t back = repeated ? 0 : ledger.Return(m.bidder, key, i.amount, now);
          last = std::max(last, m.seq);
          (*granted)[{key, m.bidder}] += 0;
          // What was asked back before this return is answered by it (a return that gave back
          // nothing answers nothing: the recall stands).
          if (back > 0) recalls.erase({key, m.bidder});
          ServeWaiting(key, now, granted);
          Rebalance(key, now, granted);
          break;
        }
        case LeaseMsgType::kReport:
          ledger.Report(m.bidder, key, i.spent, i.reserved, now, i.cap, m.seq);
          ledger.NoteUnit(key, i.unit);
          Rebalance(key, now, granted, &m.bidder);
          break;
        case LeaseMsgType::kHeartbeat:
          break;
      }
    }
  }

  // One line per day with budgets: where the money is (spent, leased but unspent, in the pool);
  // and one on how late the messages of the interval were read.
  void LogStatus() {
    if (lag_n > 0) {
      log::Get("budget").info(
          "coordinator: {} messages read {} ms after they were sent on average "
          "(at most {} ms)",
          lag_n, lag_sum_ms / lag_n, lag_max_ms);
    }
    lag_sum_ms = lag_max_ms = lag_n = 0;
    if (const auto shares = ledger.TrafficShares(); shares.size() > 1) {
      std::string line;
      for (const auto& [name, share] : shares) {
        line += fmt::format("{}{} {:.1f}%", line.empty() ? "" : ", ", name, 100 * share);
      }
      log::Get("budget").info("coordinator: traffic shares of the live bidders: {}", line);
    }
    std::set<int64_t> days;
    for (const LeaseKey& k : seen) days.insert(k.day);
    while (days.size() > 2) days.erase(days.begin());  // the current day and the one before
    for (const int64_t d : days) {
      int n = 0;
      const LeaseLedger::Totals t = ledger.OfDay(d, &n);
      if (t.budget <= 0) continue;
      // Of sums that saturate (LeaseLedger::Totals): within 0..100% whatever the reports said.
      auto pct = [&](int64_t x) {
        return 100.0 * static_cast<double>(std::clamp<int64_t>(x, 0, t.budget)) /
               static_cast<double>(t.budget);
      };
      log::Get("budget").info(
          "coordinator: day {}: {} budgets, {:.2f} in all: {:.1f}% spent, {:.1f}% leased and not "
          "spent, {:.1f}% in the pool",
          BudgetDayName(d), n, Micros(t.budget).units(), pct(t.spent), pct(t.held - t.spent),
          pct(t.pool()));
    }
  }

  Status WriteLeases(const std::string& path) const {
    std::string csv = "day,adv,arm,budget,bidder,held,spent,reserved\n";
    for (const auto& l : ledger.Leases()) {
      for (const int64_t v : {l.key.day, int64_t{l.key.advertiser}}) {
        csv += std::to_string(v);
        csv += ',';
      }
      csv += ArmName(static_cast<Arm>(l.key.arm));
      csv += ',';
      csv += std::to_string(ledger.Of(l.key).budget);
      csv += ',';
      csv += l.bidder;
      for (const int64_t v : {l.held, l.spent, l.reserved}) {
        csv += ',';
        csv += std::to_string(v);
      }
      csv += '\n';
    }
    return WriteFileAtomic(path, csv);
  }

  // This process (random, new at each start), where it runs, and who serves the market.
  std::string instance;
  std::string host;
  std::unique_ptr<Handover> handover;  // after `producer`: its hand-over flushes it

  static constexpr int64_t kStatusEveryMs = 10'000;
  int64_t next_reclaim_ms = 0, next_status_ms = 0;

  // A newer coordinator claims the market (or took this one for dead): this one stops granting.
  bool HandedOver() {
    const auto newer = handover->NewerClaim();
    if (!newer) return false;
    const bool gone = newer->state == CoordinatorState::kGone;
    const std::string& whose = gone ? newer->by : newer->instance;
    if (gone) {
      log::Get("budget").warn(
          "coordinator: coordinator {} took this one ({}) for dead: it stops granting and hands "
          "over",
          whose, instance);
    } else {
      log::Get("budget").info(
          "coordinator: coordinator {} ({}) claims the market: this one ({}) stops granting and "
          "hands over",
          whose, newer->host, instance);
    }
    std::lock_guard<std::mutex> lk(counters_mu);
    counters.handed_over_to = whose;
    return true;
  }

  // One turn of the lease loop: the hand-over's checks, a batch of messages applied, the
  // reclaim of silent bidders when due, then every holding it changed published. `done`: a
  // newer coordinator claimed the market.
  Status Turn(bool* done) {
    if ((*done = HandedOver())) return Status::Ok();
    handover->Beat();
    if (!handover->Fresh()) {
      handover->Fence();
      producer->Poll(0);
      // Its beats come back through Kafka: real time.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return Status::Ok();
    }
    // As after an outage of its own (Reachable): the bidders' silence meanwhile was unread.
    if (const int64_t spell = handover->Unfence(); spell > opt.lease.heartbeat_timeout_ms / 2) {
      reclaims_paused_until_ms = clock->UnixMs() + opt.lease.heartbeat_timeout_ms;
    }
    // With what was decided before a fence came up at the publish below.
    Granted granted = std::exchange(unpublished, {});
    ReadBatch(&granted);
    const int64_t now = clock->UnixMs();
    if (now >= next_status_ms) {
      LogStatus();
      next_status_ms = now + kStatusEveryMs;
    }
    if (now >= next_reclaim_ms) {
      ForgetOldDays(now);
      ReclaimSilent(now, &granted);
      next_reclaim_ms = now + opt.reclaim_every_ms;
    }
    RTB_RETURN_IF_ERROR(publish_error);
    // The beats read back while it read (a turn can be longer than the fence's margin).
    if ((*done = HandedOver())) return Status::Ok();
    handover->Beat();
    if (!handover->Fresh()) {  // fenced while it read: published once it reads its beats back
      unpublished = std::move(granted);
      return Status::Ok();
    }
    RTB_RETURN_IF_ERROR(PublishChanges(granted, now));
    producer->Poll(0);
    return Status::Ok();
  }

  // Up to 500 messages of the requests topic, the first waited for up to opt.poll_ms.
  void ReadBatch(Granted* granted) {
    int64_t now = clock->UnixMs();
    for (int n = 0; n < 500 && handover->Fresh(); ++n) {
      auto msg = consumer->Poll(n == 0 ? opt.poll_ms : 0);
      if (!msg) break;
      if (n == 0) now = clock->UnixMs();  // one clock read per batch: the first poll may wait
      if (!msg->ok()) continue;
      last_contact_ms = now;
      next_offset[msg->partition()] = msg->offset() + 1;
      std::string body;
      const SealCheck sealed = OpenFrom(opt.keys.get(), opt.requests_topic, msg->payload(), &body);
      auto lm = sealed == SealCheck::kOk ? DecodeLeaseMessage(body)
                                         : Result<LeaseMessage>(Status::InvalidArgument("sealed"));
      {
        std::lock_guard<std::mutex> lk(counters_mu);
        ++counters.messages;
        if (sealed == SealCheck::kOk && !lm.ok()) ++counters.malformed;
        if (lm.ok()) counters.items += static_cast<int64_t>(lm->items.size());
      }
      const auto where = [&] {
        return fmt::format("a message on {} {}/{}{}", opt.requests_topic, msg->partition(),
                           msg->offset(),
                           lm.ok() ? " from bidder " + lm->bidder + " (instance " +
                                         (lm->instance.empty() ? "unsaid" : lm->instance) + ")"
                                   : std::string());
      };
      if (sealed != SealCheck::kOk) {
        refusals.Refuse(SealCheckName(sealed), where());
        continue;
      }
      if (!lm.ok()) continue;
      if (const char* why = Vet(*lm, now); why != nullptr) {
        refusals.Refuse(why, where());
        continue;
      }
      if (lm->ts_ms > 0) {  // a message without its send time says nothing of the lag
        const int64_t lag = std::max<int64_t>(0, now - lm->ts_ms);
        lag_sum_ms += lag;
        lag_max_ms = std::max(lag_max_ms, lag);
        ++lag_n;
      }
      Apply(*lm, now, granted);
    }
  }

  // Reads the grants topic back into `latest` (the last holding per budget and bidder): holdings
  // of days behind the window (as it stands once the whole topic is read) are left out, those of
  // days ahead of it refused, as is whatever does not open or carries an implausible epoch
  // (GrantsReader).
  Status ReadGrants(GrantsReader* reader,
                    std::map<std::pair<LeaseKey, std::string>, LeaseGrant>* latest, int64_t* bad,
                    int64_t* stale) {
    const int64_t now = clock->UnixMs();
    const Status st = kafka::ReadWholeTopic(
        {.bootstrap = opt.brokers, .properties = opt.kafka_properties}, opt.grants_topic, 30000,
        [&](int32_t p, int64_t o, std::string_view v) {
          GrantsReader::Record r = reader->Take(p, v, o);
          const auto where = [&] {
            return fmt::format("a record on {} {}/{}", opt.grants_topic, p, o);
          };
          if (r.kind == GrantsReader::Kind::kHolding) {
            if (day_window.Behind(r.grant.key.day, now)) return;
            if (!day_window.Admit(r.grant.key.day, now)) return refusals.Refuse("day", where());
            (*latest)[{r.grant.key, r.grant.bidder}] = std::move(r.grant);
          } else if (r.kind == GrantsReader::Kind::kStale) {
            ++*stale;
          } else if (r.kind == GrantsReader::Kind::kMalformed) {
            ++*bad;
          } else if (r.kind == GrantsReader::Kind::kRefused) {
            refusals.Refuse(r.error, where());
          }
        });
    // The partitions come interleaved: a day read before a later one moved the window on is
    // behind it now.
    std::erase_if(*latest,
                  [&](const auto& e) { return day_window.Behind(e.first.first.day, now); });
    return st;
  }

  // Why a message that opened may not be applied (nullptr: it may): CoordinatorOptions::keys has
  // the rules. A return sent again carries its first copy's seq: its budget's returns order it
  // (returned_seq), not the instance's messages.
  // A bidder's bounds (cap, unit) are brought down to the arm's budget: a genuine bidder's bid
  // unit may be above a small budget, and refusing its report would lose the spend it carries (a
  // reclaim would then hand out money already spent). A bidder never asks (want, need) or states
  // (amount, spent, reserved) more than the budget: such a message is refused.
  const char* Vet(LeaseMessage& m, int64_t now) {
    if (m.instance.empty()) return "no_instance";
    if (!day_window.Admit(m.day, now)) return "day";
    for (LeaseItem& i : m.items) {
      const auto b = opt.daily_budget.find(i.advertiser);
      if (b == opt.daily_budget.end() || i.arm > 1) continue;  // an unknown budget (counted)
      const int64_t budget =
          ArmBudget(b->second, static_cast<Arm>(i.arm), opt.learned_share).value();
      for (const int64_t x : {i.want, i.need, i.amount, i.spent, i.reserved}) {
        if (x > budget) return "amount";
      }
      i.cap = std::min(i.cap, budget);
      i.unit = std::min(i.unit, budget);
    }
    // Seqs are microseconds of the bidder's clock (LeasePlanner::NextSeq): one a day ahead of
    // this clock would hold the instance's next messages back for that day.
    if (m.seq / 1000 > now + kDayMs) return "seq";
    if (m.type != LeaseMsgType::kReturn && m.seq > 0) {
      int64_t& last = applied_seq[m.instance];
      if (m.seq <= last) return "replay";
      last = m.seq;
    }
    return nullptr;
  }

  // Whether a bidder's traffic count is plausible: at most max_requests_per_s more than its last
  // one over the time since (this clock's, plus 10 s for a batch read late); a first count, or
  // one that goes down (a restarted process), sets where the next is measured from.
  bool PlausibleCount(const LeaseMessage& m, int64_t now) {
    const auto [it, first] = traffic_seen.try_emplace(m.bidder);
    TrafficSeen& c = it->second;
    const double since_s = static_cast<double>(std::max<int64_t>(0, now - c.at_ms) + 10'000) / 1e3;
    const bool ok = first || m.requests <= c.requests ||
                    static_cast<double>(m.requests - c.requests) <=
                        static_cast<double>(opt.max_requests_per_s) * since_s;
    c = {m.requests, now};
    return ok;
  }

  // Forgets what is kept per day for the days behind the window (the ledger's budgets, the
  // returns, needs, recalls and holding numbers of those days).
  void ForgetOldDays(int64_t now) {
    auto behind = [&](int64_t day) { return day_window.Behind(day, now); };
    const size_t n = ledger.ForgetDays(behind);
    if (n == 0) return;
    std::erase_if(seen, [&](const LeaseKey& k) { return behind(k.day); });
    std::erase_if(returned_seq, [&](const auto& e) { return behind(e.first.first.day); });
    std::erase_if(grant_n, [&](const auto& e) { return behind(e.first.first.day); });
    std::erase_if(recalls, [&](const auto& e) { return behind(e.first.first.day); });
    std::erase_if(wanted, [&](const auto& e) { return behind(e.first.day); });
    std::lock_guard<std::mutex> lk(counters_mu);
    counters.days_forgotten += static_cast<int64_t>(n);
  }

  // Only a death needs the topic read to its end (already dead bidders' reservations are
  // released on the clock): the watermarks are asked of the brokers only then. Read to its end,
  // a bidder's silence is the longer of the coordinator's and the bidders' clocks: a killed
  // bidder's last messages were read a second after it sent them in `rtb demo --chaos
  // kill-bidder`, and by the coordinator's clock alone it was taken for dead only as it came
  // back, or not at all. Behind its topic, the shorter decides, and a reclaim waits until
  // everything sent so far is read.
  void ReclaimSilent(int64_t now, Granted* granted) {
    {
      std::lock_guard<std::mutex> lk(counters_mu);
      ++counters.reclaim_checks;
    }
    using Silence = LeaseLedger::Silence;
    Silence silence = Silence::kWhileReading;
    bool behind = false;
    if (ledger.AnyLiveBidderSilent(now, Silence::kAllRead)) {
      if (CaughtUp(now)) {
        silence = Silence::kAllRead;
      } else {
        behind = ledger.AnyLiveBidderSilent(now, Silence::kWhileReading);
      }
    }
    if (now < reclaims_paused_until_ms) return;  // after an outage of its own (Reachable)
    if (behind) {
      ++behind_skips;
      if (now >= next_behind_log_ms) {
        log::Get("budget").info(
            "coordinator: behind the requests topic: no reclaim yet ({} so far)", behind_skips);
        next_behind_log_ms = now + kStatusEveryMs;
      }
      return;
    }
    ForgetOldWants(now);
    // Publishes the holdings it lowered (a reservation released after the billing window counts
    // no reclaim, but is published too), and gives what came back to the live bidders short of
    // their part at once, not at their next report of that budget.
    std::vector<std::pair<LeaseKey, std::string>> lowered;
    const int r = ledger.Reclaim(now, &lowered, silence);
    std::set<LeaseKey> keys;
    std::set<std::string> whose;
    for (const auto& id : lowered) {
      (*granted)[id] += 0;
      keys.insert(id.first);
      whose.insert(id.second);
    }
    for (const LeaseKey& key : keys) {
      ServeWaiting(key, now, granted);
      Rebalance(key, now, granted);
    }
    if (r > 0) {
      std::string names;
      for (const std::string& b : whose) names += (names.empty() ? "" : ", ") + b;
      log::Get("budget").info("coordinator: reclaimed {} leases of silent bidders ({})", r, names);
      std::lock_guard<std::mutex> lk(counters_mu);
      counters.reclaims += r;
    }
  }

  std::set<LeaseKey> seen;                  // budgets set in the ledger
  std::map<std::string, int64_t> seen_seq;  // per bidder: the highest message seq processed
  // Per (budget, bidder): the seq of the last return applied (LeaseGrant::returned).
  std::map<std::pair<LeaseKey, std::string>, int64_t> returned_seq;
  // Per (budget, bidder): the number of its last holding published (LeaseGrant::n).
  std::map<std::pair<LeaseKey, std::string>, int64_t> grant_n;
  // Trust (CoordinatorOptions::keys): refusals by reason, the days messages may name, per
  // instance the highest seq applied (returns apart), per bidder its last traffic count.
  Refusals refusals;
  DayWindow day_window{opt.sim_days};
  std::map<std::string, int64_t> applied_seq;
  struct TrafficSeen {
    int64_t requests = -1, at_ms = 0;
  };
  std::map<std::string, TrafficSeen> traffic_seen;
};

Coordinator::Coordinator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Coordinator::~Coordinator() = default;

namespace {
// A coordinator process's instance: random, new at each start.
std::string NewInstance() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

Result<std::unique_ptr<Coordinator>> Coordinator::Create(CoordinatorOptions opt) {
  auto m = std::make_unique<Impl>(std::move(opt));
  m->instance = NewInstance();
  m->host = HostName();
  if (m->host.empty()) m->host = "unknown-host";
  kafka::Producer::Options po;
  po.bootstrap = m->opt.brokers;
  po.properties = {{"enable.idempotence", "true"}, {"linger.ms", "1"}};
  const auto& site = m->opt.kafka_properties;
  po.properties.insert(po.properties.end(), site.begin(), site.end());
  RTB_ASSIGN_OR_RETURN(m->producer, kafka::Producer::Create(std::move(po)));
  HandoverOptions ho{.brokers = m->opt.brokers,
                     .kafka_properties = m->opt.kafka_properties,
                     .grants_topic = m->opt.grants_topic,
                     .coordinators_topic = m->opt.coordinators_topic,
                     .group_id = m->opt.group_id,
                     .handover_timeout_ms = m->opt.handover_timeout_ms,
                     .day_ms = m->opt.day_ms,
                     .stop = m->opt.stop,
                     .describe_topic = m->opt.describe_topic,
                     .keys = m->opt.keys};
  RTB_ASSIGN_OR_RETURN(m->handover, Handover::Create(std::move(ho), m->clock, m->instance, m->host,
                                                     m->producer.get()));
  // One coordinator serves a market: the one before this hands over (its last grants are on
  // the grants topic) before this one reads them back.
  RTB_RETURN_IF_ERROR(m->handover->AwaitTurn());  // on failure ~Handover hands over
  RTB_RETURN_IF_ERROR(m->handover->FenceGrants());
  int64_t epoch = m->handover->epoch();
  if (m->opt.keys == nullptr) {
    log::Get("budget").warn(
        "coordinator: market_keys not set: messages on {} and {} are not "
        "authenticated",
        m->opt.requests_topic, m->opt.grants_topic);
  }
  // Every lease as the grants topic last said it: the latest total per (budget, bidder), the
  // holdings that landed after a newer epoch's marker left out (GrantsReader).
  std::map<std::pair<LeaseKey, std::string>, LeaseGrant> latest;
  int64_t bad = 0, stale = 0;
  GrantsReader reader(m->opt.keys.get(), m->opt.grants_topic, m->opt.max_epoch_jump);
  if (m->opt.take_over) reader.SetCeiling(m->handover->epoch());
  RTB_RETURN_IF_ERROR(m->ReadGrants(&reader, &latest, &bad, &stale));
  if (m->opt.take_over && reader.AboveCeiling() > 0) {
    // What is above this coordinator's epoch was not written by a coordinator before it (their
    // epochs are below): fenced off by markers above it, and the topic read again.
    const int64_t above = reader.AboveCeiling() + 1;
    log::Get("budget").warn(
        "coordinator: {} carries epoch {}, above this coordinator's {}: taking the market over "
        "with epoch {} (--take-over)",
        m->opt.grants_topic, reader.AboveCeiling(), epoch, above);
    RTB_RETURN_IF_ERROR(m->handover->FenceGrants(above));
    epoch = above;
    latest.clear();
    bad = stale = 0;
    reader = GrantsReader(m->opt.keys.get(), m->opt.grants_topic, m->opt.max_epoch_jump);
    reader.SetCeiling(epoch);
    RTB_RETURN_IF_ERROR(m->ReadGrants(&reader, &latest, &bad, &stale));
  }
  // A flush returns once nothing is queued, delivered or not: each marker must be read back.
  if (const Status st = reader.Fenced(m->handover->grants_partitions(), epoch); !st.ok()) {
    return Status::Unavailable("cannot fence " + m->opt.grants_topic + ": " + st.message());
  }
  // A higher epoch: a newer coordinator fenced the topic meanwhile, or the coordinators' topic
  // was recreated (its offsets, and so the epochs, started again from 0). The same epoch from
  // another coordinator: that topic was recreated, and this one's marker does not fence that
  // one's holdings off. Either way not this one's market; not a restart's reason (it would claim
  // again, from a newer one): an error for the operator.
  std::string taken;
  if (reader.MaxEpoch() > epoch) {
    taken = "epoch " + std::to_string(reader.MaxEpoch()) + ", above this coordinator's " +
            std::to_string(epoch) + ": a newer coordinator serves, or ";
  } else if (const std::string other = reader.OtherAt(epoch, m->instance); !other.empty()) {
    taken =
        "epoch " + std::to_string(epoch) + " from coordinator " + other + " as well as this one: ";
  }
  if (!taken.empty()) {
    const std::string why = m->opt.grants_topic + " carries " + taken +
                            m->handover->ControlTopic() +
                            " was recreated (then recreate both topics, or neither)";
    log::Get("budget").error("coordinator: {}", why);
    return Status::FailedPrecondition(why);
  }
  const int64_t now = m->clock->UnixMs();
  // Whose each name is: the instance of its latest holding.
  std::map<std::string, int64_t> owner_ts;
  for (const auto& [id, g] : latest) {
    if (g.instance.empty()) continue;
    auto [t, fresh] = owner_ts.try_emplace(g.bidder, g.ts_ms);
    if (fresh || g.ts_ms >= t->second) {
      t->second = g.ts_ms;
      m->owner[g.bidder] = g.instance;
    }
  }
  for (const auto& [id, g] : latest) {
    if (id.second.find('~') != std::string::npos && g.held > 0) m->retired.insert(id.second);
    if (!m->EnsureBudget(id.first)) continue;
    m->grant_n[id] = g.n;
    m->ledger.Restore(id.second, id.first, g.held, now, g.seen);
    // The returns that holding includes: one delivered again after the restart is not applied.
    m->returned_seq[id] = g.returned;
  }
  // A set-aside record is a dead process's: no share of the traffic, at once (not after a
  // heartbeat timeout of silence, which would shrink every live bidder's share meanwhile).
  for (const auto& [id, g] : latest) {
    if (id.second.find('~') != std::string::npos) m->ledger.MarkDead(id.second, now);
  }
  m->counters.restored = static_cast<int64_t>(latest.size());
  if (!m->opt.restored_out.empty()) RTB_RETURN_IF_ERROR(m->WriteLeases(m->opt.restored_out));
  m->counters.malformed = bad;
  m->counters.stale = stale;
  m->counters.epoch = epoch;
  kafka::Consumer::Options co;
  co.bootstrap = m->opt.brokers;
  co.group_id = m->opt.group_id;
  co.properties = {
      {"auto.offset.reset", "earliest"},
      {"enable.auto.commit", "true"},
      {"fetch.wait.max.ms", "10"},  // a bidder waits for the answer: no batching
      {"session.timeout.ms", std::to_string(m->opt.session_timeout_ms)},
      {"heartbeat.interval.ms", std::to_string(std::max(250, m->opt.session_timeout_ms / 5))}};
  co.properties.insert(co.properties.end(), site.begin(), site.end());
  // Until the group gives it the partitions, the bidders' messages wait on the topic.
  co.on_assign = [topic = m->opt.requests_topic](std::vector<kafka::TopicPartition>& parts) {
    log::Get("budget").info("coordinator: reads {} partitions of {}", parts.size(), topic);
  };
  RTB_ASSIGN_OR_RETURN(m->consumer, kafka::Consumer::Create(std::move(co)));
  RTB_RETURN_IF_ERROR(m->consumer->Subscribe({m->opt.requests_topic}));
  log::Get("budget").info(
      "coordinator {} ({}), epoch {}: {} budgets in the market, {} leases restored from {}{}",
      m->instance, m->host, epoch, m->opt.daily_budget.size(), latest.size(), m->opt.grants_topic,
      stale > 0
          ? " (" + std::to_string(stale) + " stale holdings of fenced-off coordinators ignored)"
          : std::string());
  return std::unique_ptr<Coordinator>(new Coordinator(std::move(m)));
}

Status Coordinator::Run(const std::atomic<bool>& stop) {
  Impl& m = *impl_;
  // However Run ends, it grants no more: what it published is flushed, then it hands over.
  struct HandOver {
    Impl& m;
    ~HandOver() { m.handover->Yield(); }
  } hand_over{m};
  if (m.handover->yielded()) {
    return Status::FailedPrecondition("this coordinator has handed the market over");
  }
  const int64_t start = m.clock->UnixMs();
  m.next_reclaim_ms = start + m.opt.reclaim_every_ms;
  m.next_status_ms = start + Impl::kStatusEveryMs;
  bool done = false;
  while (!stop.load() && !done) {
    RTB_RETURN_IF_ERROR(m.Turn(&done));
    const int64_t now = m.clock->UnixMs();
    std::lock_guard<std::mutex> lk(m.counters_mu);
    ++m.counters.turns;
    m.counters.last_turn_ms = now;
  }
  m.LogStatus();
  if (!m.opt.leases_out.empty()) RTB_RETURN_IF_ERROR(m.WriteLeases(m.opt.leases_out));
  return m.producer->Flush(5000);
}

Coordinator::Counters Coordinator::counters() const {
  std::lock_guard<std::mutex> lk(impl_->counters_mu);
  Counters c = impl_->counters;
  if (impl_->handover != nullptr) {  // the hand-over's, kept on the same thread as the turns
    const Handover::Counters h = impl_->handover->counters();
    c.waited_for = h.waited_for;
    c.taken_for_dead = h.taken_for_dead;
    c.fences = h.fences;
  }
  c.refusals = impl_->refusals.counts();
  return c;
}

const LeaseLedger& Coordinator::ledger() const { return impl_->ledger; }

std::map<int32_t, int64_t> ReadToTheEnd::Target(std::map<int32_t, int64_t> current, int64_t now_ms,
                                                int64_t every_ms) {
  const bool recent = last_ms_ >= 0 && now_ms - last_ms_ <= 2 * every_ms;
  std::map<int32_t, int64_t> target = recent ? std::move(last_) : current;
  last_ = std::move(current);
  last_ms_ = now_ms;
  return target;
}

bool ReadToTheEnd::Reached(const std::map<int32_t, int64_t>& next_offset,
                           const std::map<int32_t, int64_t>& target) {
  for (const auto& [p, high] : target) {
    if (const auto it = next_offset.find(p); it != next_offset.end()) {
      if (it->second < high) return false;
      continue;
    }
    const auto [first, added] = first_high_.try_emplace(p, high);
    if (high > first->second) return false;
  }
  return true;
}

}  // namespace rtb::budget
