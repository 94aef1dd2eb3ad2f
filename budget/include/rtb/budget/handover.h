// One coordinator at a time (docs/budget-leases.md, section 2): how a starting `rtb budget`
// claims a market on the coordinators' topic, waits for the one serving it to hand over, fences
// the grants topic with its epoch, keeps itself fenced while it cannot read its own beats back,
// and hands over when a newer claim appears or it stops. The lease loop (coordinator.h) asks it,
// on every turn, whether it may grant (Fresh) and whether to stop (NewerClaim).
//
// Thread safety: one thread (the coordinator's) calls everything.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rtb/budget/lease_msg.h"
#include "rtb/core/clock.h"
#include "rtb/core/status.h"

namespace rtb::kafka {
class Consumer;
class Producer;
}  // namespace rtb::kafka

namespace rtb::budget {

// The market's topics and the hand-over's timing (CoordinatorOptions has the meaning of each).
constexpr int64_t kCalendarDayMs = 86'400'000;  // a day of a market that is not simulated

struct HandoverOptions {
  std::string brokers;
  std::vector<std::pair<std::string, std::string>> kafka_properties;
  std::string grants_topic;
  std::string coordinators_topic;  // "": DefaultCoordinatorsTopic(grants_topic)
  std::string group_id;  // the coordinators' topic is read under group_id + ".coordinators."
  int handover_timeout_ms = 10'000;
  int64_t day_ms = kCalendarDayMs;  // how long a day of the market lasts (CheckGrantsTopicConfig)
  const std::atomic<bool>* stop = nullptr;  // set: a start still waiting gives up
  // Where the grants topic's configuration comes from (unset: the brokers).
  std::function<Result<std::map<std::string, std::string>>(const std::string& topic)>
      describe_topic;
  std::shared_ptr<const MarketKeys> keys;  // seals the epoch markers (null: unsealed)
};

// Whether a grants topic's configuration (as the brokers describe it) keeps every holding
// until its day is over: a day's leases are rebuilt from the latest holding of each key, and a
// holding fenced off by a newer epoch can land after the current one under the same key, so
// compaction must not run on a day's holdings while the day lasts (`min.compaction.lag.ms` of
// at least two days), nor deletion (`retention.ms` at least two days, or -1; `retention.bytes`
// -1, since a size limit deletes the oldest holdings whatever their day). An absent setting is
// Kafka's default: `delete`, 7 days, no size limit, no compaction lag. An empty
// `cleanup.policy` keeps everything. Otherwise an InvalidArgument that names the setting and the
// value to give it. `day_ms`: how long a day of the market lasts in wall-clock time; a
// simulated market whose days last seconds (`rtb budget --day-ms`) lets compaction run sooner.
Status CheckGrantsTopicConfig(const std::map<std::string, std::string>& config,
                              int64_t day_ms = kCalendarDayMs);

class Handover {
 public:
  // `grants`: the lease loop's producer of holdings (the fence's markers go through it, and a
  // hand-over waits until what it queued is delivered); it outlives this.
  static Result<std::unique_ptr<Handover>> Create(HandoverOptions opt, Clock* clock,
                                                  std::string instance, std::string host,
                                                  kafka::Producer* grants);
  ~Handover();  // hands over (Yield)

  // Claims the market, then reads the coordinators' topic from its start: the claims before
  // this one's that are still standing (neither handed over nor gone) are waited for, up to
  // opt.handover_timeout_ms from when this claim is read back; those that never hand over are
  // marked gone. A newer claim meanwhile wins: this one hands over at once and fails. Stops
  // (handing over) when opt.stop is set. Checks the grants topic's configuration first.
  Status AwaitTurn();
  // Fences the grants topic off from every earlier coordinator (EpochMarker): a marker with
  // this one's epoch on each partition, flushed before the topic is read back (the read-back
  // checks that each is there). A holding an earlier coordinator had queued and that lands later
  // is ignored by every reader.
  // `epoch` (0: this claim's, its offset + 1): a take-over fences again above a bad marker.
  Status FenceGrants(int64_t epoch = 0);
  int64_t epoch() const { return epoch_; }
  int grants_partitions() const { return grants_partitions_; }

  // The self-fence. A serving coordinator writes a beat about once a second (Beat) and grants
  // only while it has read one of its own back that it wrote less than half the hand-over
  // timeout ago (Fresh): the topic has one partition, so it has then read every claim written
  // before that beat. A newer claim takes it for dead only after the whole timeout from the
  // newer claim's own read-back, so a coordinator cut off from the topic, or stalled, stops
  // granting at least half the timeout before its successor reads the grants back. Its own
  // claim read back counts as the first beat.
  void Beat();
  bool Fresh() const;
  // No fresh beat read back: grant nothing, read no requests (they wait on the topic).
  void Fence();
  // Fresh again: how long it was fenced (ms) while serving, or -1 (it was not, or had not served
  // yet). The first call also marks it as serving.
  int64_t Unfence();
  // A claim newer than this coordinator's, read since the last call; or this one marked gone by
  // a newer coordinator (`by`), whose claim compaction may have removed by then. Its own beats
  // read back meanwhile renew the fence.
  std::optional<CoordinatorRecord> NewerClaim();
  // Stops granting for good: once everything it published is delivered, the hand-over record.
  // With grants still in flight it writes none (they could land after a successor read the
  // grants topic back): the next coordinator then waits out its timeout.
  void Yield();
  bool yielded() const { return yielded_; }

  // Thread-safe.
  struct Counters {
    int64_t waited_for = 0, taken_for_dead = 0;  // at start: earlier coordinators
    int64_t fences = 0;                          // times it fenced itself while serving
  };
  Counters counters() const { return {waited_for_.load(), taken_for_dead_.load(), fences_.load()}; }
  std::string ControlTopic() const;

 private:
  Handover(HandoverOptions opt, Clock* clock, std::string instance, std::string host,
           kafka::Producer* grants);
  Status CheckGrantsTopic();
  CoordinatorRecord Record(CoordinatorState state, const std::string& whose) const;
  Status Put(const CoordinatorRecord& r, int flush_ms = 10'000);
  void ReadBack(int64_t seq);
  int64_t FenceMs() const { return opt_.handover_timeout_ms / 2; }
  int64_t BeatEveryMs() const;

  const HandoverOptions opt_;
  Clock* clock_;
  std::string instance_, host_;
  kafka::Producer* grants_;
  std::unique_ptr<kafka::Consumer> control_;
  std::unique_ptr<kafka::Producer> control_out_;  // its records (the grants' queue stays its own)
  bool claimed_ = false, yielded_ = false;
  // Where its claim is on that topic: what is before it was settled at the start (a consumer
  // reset to the topic's start must not take an old claim for a newer one).
  int64_t claim_offset_ = -1;
  // Its epoch on the grants topic (EpochMarker): claim_offset + 1, so a later claim's is higher.
  int64_t epoch_ = 0;
  int grants_partitions_ = 0;  // when it fenced the grants topic (its read-back checks each)
  int64_t beat_seq_ = 0, next_beat_ms_ = 0, fresh_until_ms_ = 0;  // steady ms
  std::map<int64_t, int64_t> beats_sent_;  // seq -> when written (steady ms), until read back
  bool fenced_ = false, served_ = false;
  int64_t fenced_since_ms_ = 0;
  std::atomic<int64_t> waited_for_{0}, taken_for_dead_{0}, fences_{0};
};

}  // namespace rtb::budget
