#include "lease_client.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "rtb/budget/lease_msg.h"
#include "rtb/budget/lease_planner.h"
#include "rtb/core/log.h"
#include "rtb/kafka/kafka.h"

namespace rtb::bidder {
namespace {

// The planner's view of one day's BudgetLedger.
class LedgerSlots final : public budget::SlotLedger {
 public:
  explicit LedgerSlots(BudgetLedger& l) : l_(l) {}
  size_t slots() const override { return l_.advertisers(); }
  int64_t committed(size_t k) const override { return l_.committed(k).value(); }
  int64_t spent(size_t k) const override { return l_.spent(k).value(); }
  int64_t limit(size_t k) const override { return l_.budget(k).value(); }
  int64_t denied(size_t k) const override { return l_.denied(k).value(); }
  int64_t last_refused(size_t k) const override { return l_.last_refused(k).value(); }
  int64_t max_charge(size_t k) const override { return l_.max_charge(k).value(); }
  int64_t charge_sum(size_t k) const override { return l_.charge_sum(k); }
  int64_t charge_n(size_t k) const override { return l_.charge_n(k); }
  void SetLimit(size_t k, int64_t limit) override { l_.SetLimit(k, Micros(limit)); }
  void SetHeadroom(size_t k, int64_t m) override { l_.SetHeadroom(k, Micros(m)); }
  void SetBidsOpen(size_t k, bool open) override { l_.SetBidsOpen(k, open); }
  bool TrySetAside(size_t k, int64_t amount) override { return l_.TrySetAside(k, Micros(amount)); }
  void ReleaseSetAside(size_t k, int64_t amount) override { l_.ReleaseSetAside(k, Micros(amount)); }

 private:
  BudgetLedger& l_;
};

budget::LeasePlannerOptions PlannerOptions(const BidderConfig& cfg, LeaseClient::Identity& id) {
  budget::LeasePlannerOptions o;
  o.name = std::move(id.name);
  o.instance = std::move(id.instance);
  o.lineage = std::move(id.lineage);
  o.share = cfg.leases.sizing == budget::LeaseSizing::kShare;
  o.horizon_ms = cfg.leases.horizon_ms;
  o.min_lease = Micros::FromUnits(cfg.leases.min_lease).value();
  o.report_every_ms = cfg.leases.report_every_ms;
  o.full_report_every = cfg.leases.full_report_every;
  o.ttl_ms = cfg.leases.ttl_ms;
  o.keys = MarketKeysOf(cfg);
  o.grants_topic = cfg.leases.grants_topic;
  o.sim_days = cfg.simulation_hooks;
  for (const Advertiser& a : cfg.advertisers) o.advertisers.push_back(a.id);
  for (const Arm arm : {Arm::kLearned, Arm::kManual}) {  // ArmSlot order
    for (const Advertiser& a : cfg.advertisers) {
      o.arm_budget.push_back(ArmBudget(a.daily_budget, arm, cfg.ab.learned_share).value());
    }
  }
  return o;
}

}  // namespace

struct LeaseClient::Impl {
  Impl(const BidderConfig* c, DayLedgers* d, const Counter* r, Clock* k, Identity& id)
      : cfg(c),
        days(d),
        requests(r),
        clock(k),
        planner(PlannerOptions(*c, id), k->UnixMs()),
        keys(MarketKeysOf(*c)) {}

  const BidderConfig* cfg;
  DayLedgers* days;
  const Counter* requests;  // bid requests answered: the traffic share's measure
  Clock* clock;
  budget::LeasePlanner planner;
  std::shared_ptr<const MarketKeys> keys;  // seals every message (null: none set)
  std::unique_ptr<kafka::Producer> producer;
  std::unique_ptr<kafka::Consumer> grants;
  std::atomic<bool> stop{false};
  std::thread thread;

  bool Send(const budget::LeaseMessage& m) {
    return producer
        ->Produce(
            cfg->leases.requests_topic, kafka::kAnyPartition, m.bidder,
            budget::SealFor(keys.get(), cfg->leases.requests_topic, budget::EncodeLeaseMessage(m)))
        .ok();
  }

  // One holding read from the grants topic, applied to the current day's ledger.
  void Apply(const kafka::Message& msg, int64_t now) {
    BudgetLedger* ledger = days->Current();
    std::optional<LedgerSlots> current;
    if (ledger != nullptr) current.emplace(*ledger);
    planner.Apply(msg.partition(), msg.payload(), msg.offset(), now, days->CurrentDay(),
                  current ? &*current : nullptr);
  }

  // The holdings published since the last turn.
  void ReadGrants(int64_t now) {
    for (;;) {
      auto msg = grants->Poll(0);
      if (!msg) return;
      if (msg->ok()) Apply(*msg, now);
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
    const int64_t end = NowSteadyUs() / 1000 + timeout_ms;  // real time: Kafka's
    auto done = [&] {
      for (size_t p = 0; p < next.size(); ++p) {
        if (next[p] < high[p]) return false;
      }
      return true;
    };
    while (!done()) {
      if (NowSteadyUs() / 1000 > end) {
        return Status::Unavailable("lease client: the grants topic was not read to its end in " +
                                   std::to_string(timeout_ms) + " ms");
      }
      auto msg = grants->Poll(100);
      if (!msg || !msg->ok()) continue;
      const auto p = static_cast<size_t>(msg->partition());
      if (p < next.size()) next[p] = std::max(next[p], msg->offset() + 1);
      Apply(*msg, clock->UnixMs());
    }
    return Status::Ok();
  }

  // The report (the heartbeat), flushed: only what Kafka has taken moves the caps on.
  void Report(int64_t now, bool periodic) {
    const int64_t day = days->CurrentDay();
    BudgetLedger* ledger = days->Current();
    std::optional<LedgerSlots> slots;
    if (ledger != nullptr) slots.emplace(*ledger);
    const int64_t answered = requests != nullptr ? static_cast<int64_t>(requests->Get()) : -1;
    const budget::LeasePlanner::Report r =
        planner.PlanReport(day, slots ? &*slots : nullptr, now, periodic, answered);
    if (r.day < 0) return;
    bool sent = true;
    for (const budget::LeaseMessage& m : r.messages) sent = Send(m) && sent;
    const int64_t flush_from = NowSteadyUs();
    sent = sent && producer->Flush(std::max(100, cfg->leases.report_every_ms)).ok();
    planner.Reported(r, sent, now, (NowSteadyUs() - flush_from) / 1000);
  }

  void Run() {
    // Not lowered like the event threads: few messages, and a slot waits for each answer.
    planner.BeginAt(clock->UnixMs());
    while (!stop.load()) {
      const int64_t now = clock->UnixMs();
      ReadGrants(now);
      if (bool periodic = false; planner.ReportDue(now, &periodic)) Report(now, periodic);
      planner.CheckTtl(now);
      if (BudgetLedger* ledger = days->Current(); ledger != nullptr) {
        LedgerSlots slots(*ledger);
        for (const budget::LeaseMessage& m : planner.Check(days->CurrentDay(), slots, now)) Send(m);
      }
      producer->Poll(0);
      if (const std::string line = planner.StatsLine(now); !line.empty()) {
        log::Get("lease").info("{}", line);
      }
      clock->SleepFor(cfg->leases.check_every_ms, &stop);
    }
  }
};

LeaseClient::LeaseClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::pair<int64_t, int64_t> LeaseClient::ReadyDays() const { return impl_->planner.ReadyDays(); }

LeaseClient::Health LeaseClient::GetHealth() const {
  const budget::LeasePlanner::Health h = impl_->planner.GetHealth();
  return {.frozen = h.frozen,
          .report_age_ms = std::max<int64_t>(0, impl_->clock->UnixMs() - h.report_ok_ms),
          .asks = h.asks,
          .answers = h.answers,
          .returns = h.returns,
          .reports = h.reports,
          .resyncs = h.resyncs,
          .stale = h.stale,
          .name_conflict = h.name_conflict,
          .refused = h.refused,
          .held = impl_->planner.Holdings()};
}

LeaseClient::~LeaseClient() {
  impl_->days->SetLeaseView(nullptr);
  impl_->stop = true;
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<LeaseClient>> LeaseClient::Start(const BidderConfig* cfg, DayLedgers* days,
                                                        const std::string& bootstrap, Identity id,
                                                        const Counter* requests, Clock* clock) {
  auto m = std::make_unique<Impl>(cfg, days, requests, clock, id);
  if (m->keys == nullptr) {
    log::Get("lease").warn(
        "lease client: market_keys not set: messages on {} and {} are not "
        "authenticated",
        cfg->leases.requests_topic, cfg->leases.grants_topic);
  }
  m->planner.OnAnswered(std::move(id.on_answered));
  kafka::Producer::Options po;
  po.bootstrap = bootstrap;
  po.properties = {{"linger.ms", "1"}, {"message.timeout.ms", std::to_string(cfg->leases.ttl_ms)}};
  const auto& site = cfg->kafka.properties;  // the market's (security, client.id...)
  po.properties.insert(po.properties.end(), site.begin(), site.end());
  RTB_ASSIGN_OR_RETURN(m->producer, kafka::Producer::Create(std::move(po)));
  kafka::Consumer::Options co;
  co.bootstrap = bootstrap;
  co.group_id = "rtb-lease-" + m->planner.name();  // assigned, never committed
  // A grant answers a waiting slot: no batching. An offset out of range (a truncated log) reads
  // again from the start, so no marker is skipped (the reader starts that partition's fence
  // again when its offsets go back).
  co.properties = {{"fetch.wait.max.ms", "10"}, {"auto.offset.reset", "earliest"}};
  co.properties.insert(co.properties.end(), site.begin(), site.end());
  RTB_ASSIGN_OR_RETURN(m->grants, kafka::Consumer::Create(std::move(co)));
  RTB_ASSIGN_OR_RETURN(const int parts, m->grants->PartitionCount(cfg->leases.grants_topic, 10000));
  std::vector<kafka::TopicPartition> tp;
  for (int p = 0; p < parts; ++p) {
    tp.push_back({cfg->leases.grants_topic, p, kafka::kOffsetBeginning});
  }
  RTB_RETURN_IF_ERROR(m->grants->Assign(tp));
  Impl* raw = m.get();
  // Every holding the topic has for this bidder, before the first request: a restarted bidder
  // books its last bids' notices inside them.
  RTB_RETURN_IF_ERROR(raw->CatchUp(cfg->leases.grants_topic, parts, 10'000));
  days->SetLeaseView([raw](int64_t day, size_t slot) { return raw->planner.View(day, slot); });
  m->thread = std::thread([raw] { raw->Run(); });
  log::Get("lease").info("lease client {} (instance {}): budgets shared through {} / {}",
                         raw->planner.name(), raw->planner.instance(), cfg->leases.requests_topic,
                         cfg->leases.grants_topic);
  return std::unique_ptr<LeaseClient>(new LeaseClient(std::move(m)));
}

}  // namespace rtb::bidder
