#include "rtb/budget/coordinator.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "rtb/budget/lease_msg.h"
#include "rtb/core/ab.h"
#include "rtb/core/clock.h"
#include "rtb/core/log.h"
#include "rtb/kafka/kafka.h"

namespace rtb::budget {

struct Coordinator::Impl {
  CoordinatorOptions opt;
  LeaseLedger ledger;
  std::unique_ptr<kafka::Producer> producer;
  std::unique_ptr<kafka::Consumer> consumer;
  std::map<std::pair<LeaseKey, std::string>, int64_t> published;  // what the topic says
  mutable std::mutex counters_mu;
  Counters counters;

  explicit Impl(CoordinatorOptions o) : opt(std::move(o)), ledger(opt.lease) {}

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

  // Publishes every holding that differs from what the topic says.
  Status PublishChanges(const std::map<std::pair<LeaseKey, std::string>, int64_t>& granted) {
    for (const auto& l : ledger.Leases()) {
      const auto id = std::make_pair(l.key, l.bidder);
      auto it = published.find(id);
      if (it != published.end() && it->second == l.held && !granted.count(id)) continue;
      LeaseGrant g;
      g.bidder = l.bidder;
      g.key = l.key;
      g.held = l.held;
      const auto gi = granted.find(id);
      g.granted = gi == granted.end() ? 0 : gi->second;
      g.pool = ledger.Of(l.key).pool();
      g.ts_ms = NowUnixMs();
      RTB_RETURN_IF_ERROR(producer->Produce(opt.grants_topic, kafka::kAnyPartition,
                                            LeaseGrantKey(l.key, l.bidder), EncodeLeaseGrant(g)));
      published[id] = l.held;
      std::lock_guard<std::mutex> lk(counters_mu);
      ++counters.grants_published;
    }
    return Status::Ok();
  }

  void Apply(const LeaseMessage& m, std::map<std::pair<LeaseKey, std::string>, int64_t>* granted) {
    const int64_t now = NowUnixMs();
    ledger.Heartbeat(m.bidder, now);
    for (const LeaseItem& i : m.items) {
      const LeaseKey key{m.day, i.advertiser, i.arm};
      if (!EnsureBudget(key)) {
        std::lock_guard<std::mutex> lk(counters_mu);
        ++counters.unknown_budget;
        continue;
      }
      switch (m.type) {
        case LeaseMsgType::kRequest: {
          const int64_t g = ledger.Request(m.bidder, key, i.want, now);
          (*granted)[{key, m.bidder}] += g;  // answered even when 0: the bidder waits for it
          break;
        }
        case LeaseMsgType::kReturn:
          ledger.Return(m.bidder, key, i.amount, now);
          break;
        case LeaseMsgType::kReport:
          ledger.Report(m.bidder, key, i.spent, i.reserved, now);
          break;
        case LeaseMsgType::kHeartbeat:
          break;
      }
    }
  }

  std::set<LeaseKey> seen;  // budgets set in the ledger
};

Coordinator::Coordinator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Coordinator::~Coordinator() = default;

Result<std::unique_ptr<Coordinator>> Coordinator::Create(CoordinatorOptions opt) {
  auto m = std::make_unique<Impl>(std::move(opt));
  kafka::Producer::Options po;
  po.bootstrap = m->opt.brokers;
  po.properties = {{"enable.idempotence", "true"}, {"linger.ms", "1"}};
  RTB_ASSIGN_OR_RETURN(m->producer, kafka::Producer::Create(std::move(po)));
  // Every lease as the grants topic last said it: the latest total per (budget, bidder).
  std::map<std::pair<LeaseKey, std::string>, int64_t> latest;
  int64_t bad = 0;
  RTB_RETURN_IF_ERROR(kafka::ReadWholeTopic({.bootstrap = m->opt.brokers}, m->opt.grants_topic,
                                            30000, [&](int32_t, int64_t, std::string_view v) {
                                              auto g = DecodeLeaseGrant(v);
                                              if (g.ok()) {
                                                latest[{g->key, g->bidder}] = g->held;
                                              } else {
                                                ++bad;
                                              }
                                            }));
  const int64_t now = NowUnixMs();
  for (const auto& [id, held] : latest) {
    if (!m->EnsureBudget(id.first)) continue;
    m->ledger.Restore(id.second, id.first, held, now);
    m->published[id] = held;
  }
  m->counters.restored = static_cast<int64_t>(latest.size());
  m->counters.malformed = bad;
  kafka::Consumer::Options co;
  co.bootstrap = m->opt.brokers;
  co.group_id = m->opt.group_id;
  co.properties = {
      {"auto.offset.reset", "earliest"},
      {"enable.auto.commit", "true"},
      {"session.timeout.ms", std::to_string(m->opt.session_timeout_ms)},
      {"heartbeat.interval.ms", std::to_string(std::max(250, m->opt.session_timeout_ms / 5))}};
  RTB_ASSIGN_OR_RETURN(m->consumer, kafka::Consumer::Create(std::move(co)));
  RTB_RETURN_IF_ERROR(m->consumer->Subscribe({m->opt.requests_topic}));
  log::Get("budget").info("coordinator: {} budgets in the market, {} leases restored from {}",
                          m->opt.daily_budget.size(), latest.size(), m->opt.grants_topic);
  return std::unique_ptr<Coordinator>(new Coordinator(std::move(m)));
}

Status Coordinator::Run(const std::atomic<bool>& stop) {
  Impl& m = *impl_;
  int64_t next_reclaim = NowUnixMs() + m.opt.reclaim_every_ms;
  while (!stop.load()) {
    std::map<std::pair<LeaseKey, std::string>, int64_t> granted;
    for (int n = 0; n < 500; ++n) {  // a batch, then publish
      auto msg = m.consumer->Poll(n == 0 ? 100 : 0);
      if (!msg) break;
      if (!msg->ok()) continue;
      auto lm = DecodeLeaseMessage(msg->payload());
      {
        std::lock_guard<std::mutex> lk(m.counters_mu);
        ++m.counters.messages;
        if (!lm.ok()) ++m.counters.malformed;
      }
      if (lm.ok()) m.Apply(*lm, &granted);
    }
    const int64_t now = NowUnixMs();
    if (now >= next_reclaim) {
      const int r = m.ledger.Reclaim(now);
      if (r > 0) {
        log::Get("budget").info("coordinator: reclaimed {} leases of silent bidders", r);
        std::lock_guard<std::mutex> lk(m.counters_mu);
        m.counters.reclaims += r;
      }
      next_reclaim = now + m.opt.reclaim_every_ms;
    }
    RTB_RETURN_IF_ERROR(m.PublishChanges(granted));
    m.producer->Poll(0);
  }
  return m.producer->Flush(5000);
}

Coordinator::Counters Coordinator::counters() const {
  std::lock_guard<std::mutex> lk(impl_->counters_mu);
  return impl_->counters;
}

const LeaseLedger& Coordinator::ledger() const { return impl_->ledger; }

}  // namespace rtb::budget
