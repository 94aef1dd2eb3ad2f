// `rtb budget`: the lease coordinator (docs/budget-leases.md). It owns every advertiser's daily
// budget per A/B arm, reads the bidders' requests, returns and reports from
// `rtb.lease.requests`, grants from its LeaseLedger (lease.h: never more than a budget),
// reclaims the leases of silent bidders, and publishes every changed holding to the compacted
// `rtb.lease.grants`. On start it reads that topic back, so a restarted coordinator resumes
// with every lease as it was.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rtb/budget/handover.h"
#include "rtb/budget/lease.h"
#include "rtb/core/clock.h"
#include "rtb/core/mac.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::budget {

struct CoordinatorOptions {
  std::string brokers;  // bootstrap.servers
  // librdkafka properties of its clients, after its own (the market's kafka.properties).
  std::vector<std::pair<std::string, std::string>> kafka_properties;
  std::string requests_topic = "rtb.lease.requests";  // bidders -> coordinator
  std::string grants_topic = "rtb.lease.grants";      // coordinator -> bidders (compacted)
  std::string group_id = "rtb-budget";                // consumer group of the requests topic
  // Who serves the market (one partition, compacted; empty: grants_topic + ".coordinators"). A
  // starting coordinator claims the market there and serves only once every earlier claim is
  // handed over (a serving coordinator reads the topic on every turn of its loop, and stops
  // granting and hands over when a newer claim appears) or `handover_timeout_ms` passed. A
  // serving coordinator also writes a beat there about once a second and grants only while it
  // has read one of its own back within half of `handover_timeout_ms` (its self-fence: cut off
  // from that topic or stalled, it stops granting before a newer claim could take it for dead).
  std::string coordinators_topic;
  int handover_timeout_ms = 10'000;
  // How long a day of the market lasts in wall-clock time: the grants topic must keep a day's
  // holdings for two of them (CheckGrantsTopicConfig). A calendar day, unless the market's days
  // are simulated and last seconds (`rtb budget --day-ms`), where compaction may run sooner.
  int64_t day_ms = kCalendarDayMs;
  // When set, a start still waiting for the hand-over gives up (and hands over itself).
  const std::atomic<bool>* stop = nullptr;
  LeaseConfig lease;            // timeouts, grant sizing
  int reclaim_every_ms = 1000;  // how often silent bidders are checked
  // How long a turn of the loop waits for the first message of its batch (ms). Each turn also
  // beats, reads the coordinators' topic and publishes what changed: shorter turns react
  // sooner to a newer claim, longer ones poll the brokers less when idle.
  int poll_ms = 100;
  // The coordinator's time: bidders' silence, reclaims, needs, the hand-over's beats and waits
  // (null: SystemClock()). Kafka's own timeouts stay real time.
  Clock* clock = nullptr;
  int session_timeout_ms = 6000;  // consumer group session: how soon a restarted coordinator reads
  // A need the pool could not meet stands this long: what comes back meanwhile goes to it first,
  // and the other holders are asked for it (`wanted`). After that the bidder asks again.
  int need_stands_ms = 2000;
  // The budgets: advertiser id -> daily budget, split between the arms by learned_share.
  std::unordered_map<uint32_t, Micros> daily_budget;
  double learned_share = 1.0;
  // When set, every lease is written there as CSV on stop (day, adv, arm, budget, bidder, held,
  // spent, reserved): where each budget's money ended up.
  std::string leases_out;
  // When set, the leases read back from the grants topic at start are written there (the same
  // CSV), before anything is served: what a restart rebuilt.
  std::string restored_out;
  // Where the grants topic's configuration comes from (CheckGrantsTopicConfig): unset, the
  // brokers (kafka::Consumer::TopicConfig); tests set it, as the embedded cluster describes none.
  std::function<Result<std::map<std::string, std::string>>(const std::string& topic)>
      describe_topic;

  // Trust (docs/reliability.md, "Trust"). The market key ring (bidder config `market_keys`;
  // null: none). With it, every message read from the requests topic, and every holding and
  // epoch marker read back from the grants topic, must open under it (else it is refused,
  // counted in counters().refusals and logged), and everything this coordinator writes there is
  // sealed. Without it, messages go unsealed and the start logs a warning.
  std::shared_ptr<const MarketKeys> keys;
  // Whatever is sealed, a message is refused unless it says its `instance`, names a day in the
  // window (DayWindow: today +-1 by `clock`; simulated days only with `sim_days`, a market with
  // simulation_hooks), carries a seq above the last applied from its instance (a return: above
  // its budget's last return), and a want, need, amount, spent or reserved of at most the arm's
  // budget (a cap or unit above it is taken as the budget). A traffic count (`requests`) that grows
  // faster than `max_requests_per_s` over the time since the last (by this coordinator's clock,
  // plus 10 s) is not taken (the rest of the message is).
  bool sim_days = false;
  int64_t max_requests_per_s = 1'000'000;
  // A marker or holding on the grants topic more than this above the highest epoch read so far
  // is refused (GrantsReader).
  int64_t max_epoch_jump = kMaxEpochJump;
  // Takes a market whose grants topic carries an epoch above this coordinator's (a marker
  // written by something else than a coordinator): the read-back refuses what is above its own
  // epoch, and it fences the topic again with an epoch above that. Every later start needs it
  // too until the coordinators' topic's offsets pass that epoch (or both topics are recreated).
  bool take_over = false;
};

class Coordinator;
// /healthz: empty while the coordinator's loop turns, else why not (no turn for 30 s).
std::string Unhealthy(const Coordinator& c, int64_t now_ms);

class Coordinator {
 public:
  // Connects, claims the market on the coordinators' topic, waits for the coordinator serving
  // it to hand over (or for the timeout), fences the grants topic with its epoch (EpochMarker),
  // then reads it back into the ledger. FailedPrecondition when a newer coordinator claimed the
  // market meanwhile, or the grants topic carries a higher epoch than this one's.
  static Result<std::unique_ptr<Coordinator>> Create(CoordinatorOptions opt);
  ~Coordinator();  // hands over if Run did not

  // Serves until `stop` is set or a newer coordinator claims the market: each message from the
  // requests topic, then the holdings it changed on the grants topic; reclaims on the way. On
  // the way out it flushes its grants and then hands over (counters().handed_over_to names a
  // newer claim's instance).
  Status Run(const std::atomic<bool>& stop);

  struct Counters {
    int64_t messages = 0, malformed = 0, unknown_budget = 0, grants_published = 0;
    int64_t restored = 0, reclaims = 0;
    int64_t items = 0;  // budget items of the messages read (a report carries one per slot)
    // Messages reclaimed bidders sent before they died, read after: applied, the bidder kept dead.
    int64_t late_from_dead = 0;
    // Messages of a second live process under a bidder name another process holds: refused.
    int64_t refused = 0;
    // At start: earlier coordinators waited for (handed over), and those that never did and
    // were taken for dead after handover_timeout_ms.
    int64_t waited_for = 0, taken_for_dead = 0;
    // Run stopped because a newer coordinator claimed the market (the instance that did).
    std::string handed_over_to;
    // Times it fenced itself: no beat of its own read back within half the hand-over timeout,
    // so it granted nothing (and read no requests) until one was.
    int64_t fences = 0;
    // At start: holdings on the grants topic that landed after a newer epoch's marker (queued
    // by a coordinator fenced off by then): ignored (GrantsReader).
    int64_t stale = 0;
    // This coordinator's epoch on the grants topic (EpochMarker).
    int64_t epoch = 0;
    // Turns of Run's loop done, and reclaim checks among them (a test that moves the clock
    // waits for a turn at the new time before it asserts).
    int64_t turns = 0, reclaim_checks = 0;
    // Messages and records refused, by reason (CoordinatorOptions::keys and below): "unsealed",
    // "unknown_key", "bad_mac" (the seal); "no_instance", "day", "amount", "seq" (a seq far
    // ahead of the clock), "replay" (not above the last applied), "requests" (an implausible
    // traffic count: only the count is dropped); on the grants topic "epoch_jump",
    // "epoch_above" (a take-over) and "day".
    std::map<std::string, int64_t> refusals;
    // Budgets of days behind the window forgotten so far.
    int64_t days_forgotten = 0;
    // When Run's loop last finished a turn (the coordinator's clock, Unix ms); -1 before the first.
    int64_t last_turn_ms = -1;
  };
  Counters counters() const;
  // The coordinator's part of its /metrics page (docs/metrics.md): its counters, epoch and live
  // bidders, and the newest budget day's money (budget, held, spent, overspent budgets). Safe
  // to call from any thread while Run serves.
  std::string Metrics() const;
  const LeaseLedger& ledger() const;

 private:
  struct Impl;
  explicit Coordinator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether the coordinator may judge silence with everything read (LeaseLedger::Silence::kAllRead):
// the high watermarks of the requests topic it must have read to, and whether it has.
class ReadToTheEnd {
 public:
  // The watermarks to have read to at a check at `now_ms`, given the partitions' current ones:
  // those of the previous check if it was at most two intervals of `every_ms` before (under
  // steady traffic some partition nearly always has a message in flight, and waiting for an
  // instant with none delayed reclaims by a second or more), else the current ones. The current
  // ones become the next check's previous.
  std::map<int32_t, int64_t> Target(std::map<int32_t, int64_t> current, int64_t now_ms,
                                    int64_t every_ms);
  // Whether a reader at `next_offset` (per partition: the next offset to read) has read every
  // partition of `target` up to its watermark. A partition never read from counts as read while
  // its watermark is no higher than when it was first asked about (what it held then was read
  // before a restart, or is a bidder's own backlog, whose leases a restart restored as spent).
  bool Reached(const std::map<int32_t, int64_t>& next_offset,
               const std::map<int32_t, int64_t>& target);

 private:
  std::map<int32_t, int64_t> last_;
  int64_t last_ms_ = -1;
  std::map<int32_t, int64_t>
      first_high_;  // per partition never read: its watermark when first asked
};

}  // namespace rtb::budget
