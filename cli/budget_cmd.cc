#include "budget_cmd.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common.h"
#include "rtb/bidder/config.h"
#include "rtb/core/admin_server.h"
#include "rtb/core/clock.h"
#include "rtb/core/log.h"

namespace rtb::cli {

CLI::App* AddBudgetCommand(CLI::App* app, BudgetArgs* a) {
  a->c.lease.billing_window_ms = 0;  // 0: the market's reservation_timeout_ms
  auto* bu = app->add_subcommand(
      "budget", "The budget-lease coordinator: several bidders share every budget over Kafka");
  bu->add_option("--market", a->market, "The bidders' config (advertisers, budgets, A/B share)")
      ->required();
  bu->add_option("--brokers", a->c.brokers, "Kafka bootstrap.servers (default: the market's)");
  // Empty: the market's (its leases section), filled in by RunBudget.
  a->c.requests_topic.clear();
  a->c.grants_topic.clear();
  bu->add_option("--requests-topic", a->c.requests_topic,
                 "Bidders' requests and reports (default: the market's leases.requests_topic)");
  bu->add_option("--grants-topic", a->c.grants_topic,
                 "Holdings published, compacted (default: the market's leases.grants_topic)");
  bu->add_option("--group", a->c.group_id,
                 "Consumer group of the requests topic (its coordinators' topic is read under "
                 "<group>.coordinators.<instance>): one per market sharing a cluster")
      ->capture_default_str();
  bu->add_option("--coordinators-topic", a->c.coordinators_topic,
                 "Who serves the market, one coordinator at a time (one partition, compacted; "
                 "default: <grants topic>.coordinators)");
  bu->add_option("--handover-timeout-ms", a->c.handover_timeout_ms,
                 "How long a starting coordinator waits for the one serving to hand over before "
                 "taking it for dead; a serving one grants nothing once the last beat of its own "
                 "it read back was written more than half of it ago")
      ->check(CLI::Range(1'000, 600'000))
      ->capture_default_str();
  bu->add_option("--day-ms", a->c.day_ms,
                 "How long a day of the market lasts in wall-clock time: the grants topic must "
                 "keep a day's holdings for two of them (min.compaction.lag.ms, retention.ms). "
                 "A calendar day unless the market's days are simulated and last seconds "
                 "(simulation_hooks), where a shorter one lets compaction run")
      ->check(CLI::Range(int64_t{1000}, int64_t{86'400'000}))
      ->capture_default_str();
  bu->add_option("--heartbeat-timeout-ms", a->c.lease.heartbeat_timeout_ms,
                 "A bidder silent this long is dead: its unspent lease returns")
      ->check(CLI::Range(int64_t{1000}, int64_t{86'400'000}))
      ->capture_default_str();
  bu->add_option("--reclaim-every-ms", a->c.reclaim_every_ms,
                 "How often silent bidders are checked (a dead bidder is found at most this "
                 "long after its heartbeat timeout)")
      ->check(CLI::Range(50, 60'000))
      ->capture_default_str();
  bu->add_option("--need-stands-ms", a->c.need_stands_ms,
                 "A need the pool could not meet is served first from what comes back, and "
                 "asked of the other holders, for this long")
      ->check(CLI::Range(100, 600'000))
      ->capture_default_str();
  bu->add_flag("--take-over", a->c.take_over,
               "Take over a market whose grants topic carries an epoch above this coordinator's "
               "(a marker no coordinator wrote): fence the topic above it and serve");
  bu->add_option("--max-epoch-jump", a->c.max_epoch_jump,
                 "A marker or holding more than this above the highest epoch read is refused")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  bu->add_option("--admin-listen", a->admin_listen,
                 "host:port of GET /metrics and /healthz (docs/metrics.md); empty: none");
  bu->add_option("--leases-out", a->c.leases_out,
                 "On stop, write every lease (budget, held, spent per bidder) to this CSV");
  bu->add_option("--restored-out", a->c.restored_out,
                 "At start, once the grants topic is read back, write the leases it holds (the "
                 "same CSV) before serving: what the restart rebuilt");
  return bu;
}

namespace {
// "none", or "3 (unsealed 2, day 1)".
std::string RefusalsLine(const std::map<std::string, int64_t>& by_reason) {
  int64_t total = 0;
  std::string parts;
  for (const auto& [reason, n] : by_reason) {
    total += n;
    parts += (parts.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  }
  return total == 0 ? "none" : std::to_string(total) + " (" + parts + ")";
}
}  // namespace

// `rtb budget`: the lease coordinator, until SIGINT or SIGTERM.
int RunBudget(BudgetArgs a) {
  auto cfg = rtb::bidder::LoadBidderConfig(a.market);
  if (!cfg.ok()) return Fail(cfg.status());
  if (a.c.brokers.empty()) a.c.brokers = cfg->kafka.brokers;
  if (a.c.requests_topic.empty()) a.c.requests_topic = cfg->leases.requests_topic;
  if (a.c.grants_topic.empty()) a.c.grants_topic = cfg->leases.grants_topic;
  a.c.kafka_properties = cfg->kafka.properties;
  if (a.c.brokers.empty() || a.c.brokers == rtb::bidder::kEmbeddedBrokers) {
    // An embedded cluster lives inside one `rtb serve`: no coordinator can share it.
    return Fail(rtb::Status::InvalidArgument(
        "rtb budget needs Kafka: --brokers, or kafka.brokers in " + a.market +
        " (not embedded, which is inside one rtb serve process; `rtb kafka --market " + a.market +
        "` runs one that the bidders and rtb budget share)"));
  }
  if (a.c.day_ms != rtb::budget::kCalendarDayMs && !cfg->simulation_hooks) {
    // A market on the calendar's days would let compaction drop a day's holdings while it lasts.
    return Fail(rtb::Status::InvalidArgument(
        "--day-ms is for a simulated market (simulation_hooks: true in " + a.market +
        "); this one's days are the calendar's"));
  }
  for (const auto& adv : cfg->advertisers) a.c.daily_budget[adv.id] = adv.daily_budget;
  a.c.learned_share = cfg->ab.learned_share;
  a.c.lease.sizing = cfg->leases.sizing;
  a.c.keys = rtb::bidder::MarketKeysOf(*cfg);
  a.c.sim_days = cfg->simulation_hooks;
  if (a.c.lease.billing_window_ms <= 0) a.c.lease.billing_window_ms = cfg->reservation_timeout_ms;
  static std::atomic<bool> stop{false};
  std::signal(SIGINT, [](int) { stop = true; });
  std::signal(SIGTERM, [](int) { stop = true; });
  // A coordinator that gave the market to a newer one idles until it is stopped: exiting would
  // make a supervisor (Kubernetes' restartPolicy) start it again, and its claim would take the
  // market back from the new one.
  auto idle_until_stopped = [](const std::string& why) {
    rtb::log::Get("budget").info("{}; serving nothing until stopped (SIGTERM)", why);
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return 0;
  };
  a.c.stop = &stop;
  // The admin port, up before the coordinator (which may wait for a hand-over): /metrics has
  // the process and build families until it serves, its own families from then on.
  // The coordinator the admin port reads, under a lock held while it reads (cleared before the
  // coordinator goes).
  struct Serving {
    std::mutex mu;
    const rtb::budget::Coordinator* co = nullptr;  // GUARDED_BY(mu)
    void Set(const rtb::budget::Coordinator* c) {
      std::lock_guard<std::mutex> lk(mu);
      co = c;
    }
  } serving;
  std::unique_ptr<rtb::AdminServer> admin;
  if (!a.admin_listen.empty()) {
    auto started = rtb::StartAdminPort(
        a.admin_listen,
        [&serving] {
          std::lock_guard<std::mutex> lk(serving.mu);
          return serving.co != nullptr ? serving.co->Metrics() : std::string();
        },
        [&serving] {
          std::lock_guard<std::mutex> lk(serving.mu);
          return serving.co == nullptr
                     ? std::string()
                     : rtb::budget::Unhealthy(*serving.co, rtb::SystemClock()->UnixMs());
        },
        "budget");
    if (!started.ok()) return Fail(started.status());
    admin = std::move(*started);
  }
  auto co = rtb::budget::Coordinator::Create(a.c);
  if (!co.ok()) {
    if (co.status().code() == rtb::Status::Code::kFailedPrecondition) {
      return idle_until_stopped(co.status().message());
    }
    return Fail(co.status());
  }
  serving.Set(co->get());
  struct Clear {  // however this function returns
    Serving& s;
    ~Clear() { s.Set(nullptr); }
  } clear{serving};
  const rtb::Status st = (*co)->Run(stop);
  const auto n = (*co)->counters();
  rtb::log::Get("budget").info(
      "stopped; {} messages ({} malformed, {} for unknown budgets) with {} budget items, {} "
      "holdings published, {} leases reclaimed, {} messages of reclaimed bidders sent before "
      "they died, {} refused (a second process under a bidder's name); refused as not "
      "authentic or not plausible: {}",
      n.messages, n.malformed, n.unknown_budget, n.items, n.grants_published, n.reclaims,
      n.late_from_dead, n.refused, RefusalsLine(n.refusals));
  if (!st.ok()) return Fail(st);
  if (!n.handed_over_to.empty()) {
    serving.Set(nullptr);
    co->reset();  // leaves the requests topic's group
    return idle_until_stopped("handed the market over to coordinator " + n.handed_over_to);
  }
  return 0;
}

}  // namespace rtb::cli
