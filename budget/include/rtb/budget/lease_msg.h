// The lease messages on Kafka (schemas/lease-v1.md): what bidders send the coordinator
// (rtb.lease.requests) and the holdings it publishes (rtb.lease.grants, compacted).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rtb/budget/lease.h"
#include "rtb/core/clock.h"
#include "rtb/core/log.h"
#include "rtb/core/mac.h"
#include "rtb/core/status.h"

namespace rtb::budget {

// One budget in a bidder's message: a request (want), a return (amount, with the spent and
// reserved it leaves) or a report (spent, reserved), all in micros.
struct LeaseItem {
  uint32_t advertiser = 0;
  uint8_t arm = 0;  // 0 learned, 1 manual (core/ab.h)
  int64_t want = 0, amount = 0, spent = 0, reserved = 0;
  int64_t need = 0;  // a request's least useful grant (LeaseLedger::Request); 0 = any
  int64_t cap = 0;   // a report's bound on spent + reserved until the next (LeaseLedger::Report)
  // A report's running mean of the largest charges of the advertiser's bids at this bidder (one
  // bid's worth: LeaseLedger::NoteUnit); 0 = not said.
  int64_t unit = 0;
};

enum class LeaseMsgType { kRequest, kReturn, kReport, kHeartbeat };

// How many earlier instances a message's lineage carries.
inline constexpr size_t kMaxLineage = 8;

struct LeaseMessage {
  LeaseMsgType type = LeaseMsgType::kHeartbeat;
  std::string bidder;  // the bidder's name (`leases.name`, stable across its restarts)
  // This process (the bidder's instance id, new at every start; empty: not said, as from a
  // bidder before instances). The coordinator serves one process per name at a time.
  std::string instance;
  // The earlier processes of this bidder's state store, newest first (at most
  // kMaxLineage): a process that names the instance holding its name takes over at once (a
  // restart); any other waits until that one is dead (Coordinator's Admit).
  std::vector<std::string> lineage;
  int64_t day = 0;    // the bidder's budget day
  int64_t ts_ms = 0;  // when the bidder sent it (unix ms)
  // Grows with every message of the bidder, across its restarts (0 = not sent). A holding
  // published with `seen` >= seq already includes this message (LeaseGrant::seen).
  int64_t seq = 0;
  // The bid requests this process has answered since it started (-1 = not said): the
  // coordinator's measure of the bidder's traffic share (LeaseLedger::Traffic).
  int64_t requests = -1;
  std::vector<LeaseItem> items;
};

std::string EncodeLeaseMessage(const LeaseMessage& m);
// A clear error for anything else (the coordinator counts and skips it).
Result<LeaseMessage> DecodeLeaseMessage(std::string_view json);

// What one bidder holds of one budget, after a change (a grant, a return, a reclaim).
struct LeaseGrant {
  std::string bidder;
  LeaseKey key;
  int64_t held = 0;     // the bidder's lease: it may reserve and spend up to this (micros)
  int64_t granted = 0;  // this change's grant (0 for returns and reclaims)
  int64_t pool = 0;     // what is left to grant of the budget
  int64_t left = 0;     // what is not spent yet of the budget, over every bidder's report
  int64_t ts_ms = 0;
  // The highest `seq` of the bidder's messages the coordinator had processed when it published
  // this: `held` includes every return and request up to it. The bidder lets a returned amount
  // go from its books only then, and a restarted bidder trusts a holding only from then.
  int64_t seen = 0;
  // The seq of the bidder's last return of this budget that `held` includes (0 = none): the
  // bidder lets a returned amount go from its books only once this reaches the return's seq
  // (a later report's `seen` does not prove that a lost return arrived), and the coordinator
  // applies a return sent again, or delivered twice, only if its seq is above this.
  int64_t returned = 0;
  // Other bidders' needs of this budget the pool could not meet (a recall: a bidder not using
  // its lease gives back up to this much); 0 = none.
  int64_t wanted = 0;
  // Share sizing: the part of the budget the coordinator means this bidder to hold unused
  // (LeaseLedger::TargetOf); on a recall the bidder keeps no more than this. -1 = not said.
  int64_t target = -1;
  // The process the name's holdings belong to (LeaseMessage::instance; empty: not said). A
  // bidder process bids only on holdings of its own instance; one of its lineage's is what it
  // restores at start (what its state store's earlier process held), never a reason to bid;
  // another process's is ignored.
  std::string instance;
  // The coordinator that published it (its instance; empty: not said): for the operator, and
  // to tell two coordinators' holdings apart on the topic.
  std::string coordinator;
  // That coordinator's epoch (EpochMarker; 0: not said, as from a coordinator before epochs).
  int64_t epoch = 0;
  // The number of this holding among those of its (budget, bidder) (its compaction key): it
  // grows with every one published, and a restarted coordinator goes on from the topic's. A
  // bidder applies a holding only if (epoch, n) is above the last it applied of that budget, so
  // a genuine holding sent again changes nothing. 0: not said (a coordinator before numbers).
  int64_t n = 0;
};

std::string EncodeLeaseGrant(const LeaseGrant& g);
Result<LeaseGrant> DecodeLeaseGrant(std::string_view json);
// The compaction key: one value per (day, advertiser, arm, bidder).
std::string LeaseGrantKey(const LeaseKey& key, const std::string& bidder);

// The grants topic's fence (docs/budget-leases.md, section 2). A coordinator that starts
// serving writes one marker to every partition of the grants topic, with its epoch (its claim's
// offset on the coordinators' topic, plus one: a later claim has a higher one), before it reads
// the topic back, and every holding it publishes carries the epoch. A holding that lands on a
// partition after a marker of a higher epoch is from a coordinator fenced off by then (cut off,
// or stalled, while its successor took over): its readers ignore it. One that landed before the
// marker is in the successor's read-back, so every reader sees the same holdings.
struct EpochMarker {
  int64_t epoch = 0;        // >= 1
  std::string coordinator;  // the coordinator's instance
  int64_t ts_ms = 0;
};
std::string EncodeEpochMarker(const EpochMarker& m);
Result<EpochMarker> DecodeEpochMarker(std::string_view json);
// A marker's compaction key: one per partition and epoch, so that compaction never replaces an
// earlier coordinator's marker with a later one's (a holding between the two would lose its fence).
std::string EpochMarkerKey(int32_t partition, int64_t epoch);

// How far above the highest epoch read so far a marker or holding may be (epochs are offsets on
// the coordinators' topic, which grows by about one beat a second: 2^32 is over a century).
inline constexpr int64_t kMaxEpochJump = int64_t{1} << 32;

// ---- Trust (docs/reliability.md, "Trust") ----

// With the market key ring (`keys` set), `json` sealed for `topic` (MarketKeys::Seal); without
// one, `json` as it is.
std::string SealFor(const MarketKeys* keys, std::string_view topic, std::string json);
// A message read from `topic`: with a ring, opened (kOk and *body without its mac, or why not);
// without one, kOk and *body the whole payload.
SealCheck OpenFrom(const MarketKeys* keys, std::string_view topic, std::string_view payload,
                   std::string* body);

// Messages refused, by reason ("unsealed", "bad_mac", "day", "amount", ...): a counter per reason
// and a warning per refusal, at most 5 lines every 10 s of the clock (the rest counted in the
// next). Thread-safe.
class Refusals {
 public:
  // `who`: the logger's component and the lines' first words ("coordinator", "lease client x").
  Refusals(std::string component, std::string who, const Clock* clock = SystemClock());
  // Counts one refusal of `reason`; `what` says which message (topic, partition/offset, sender).
  void Refuse(std::string_view reason, std::string_view what);
  std::map<std::string, int64_t> counts() const;
  int64_t total() const;

 private:
  const std::string component_, who_;
  log::RateLimit limit_;
  mutable std::mutex mu_;
  std::map<std::string, int64_t, std::less<>> counts_;  // GUARDED_BY(mu_)
};

// Which budget days a lease message or holding may name: the day of the wall clock (of the
// process's Clock) +-1; and, where simulated days are allowed (a market with
// simulation_hooks), a simulated day (>= kSimDay) at most kMaxSimDayJump above the highest
// accepted so far (the first any: a simulation plays days on while the brokers are down, so
// the next message heard may be many days on), down to two below it. Anything else is
// refused, and state of days behind the window is forgotten, so that state kept per day (the
// coordinator's ledger, a bidder's slots) stays bounded whatever arrives.
class DayWindow {
 public:
  static constexpr int64_t kMaxSimDayJump = 1000;
  explicit DayWindow(bool sim_days = false) : sim_days_(sim_days) {}
  // Whether `day` is in the window at `now_ms`; a simulated day accepted moves the window on.
  bool Admit(int64_t day, int64_t now_ms);
  // Whether state of `day` is behind the window at `now_ms` (may be forgotten).
  bool Behind(int64_t day, int64_t now_ms) const;

 private:
  bool sim_days_;
  int64_t sim_high_ = -1;  // the highest simulated day accepted (-1: none)
};

// Reads the grants topic as every reader must: records of a partition in their order, each
// holding checked against the highest epoch that partition has shown so far. With the market key
// ring, each record is opened first; a marker or holding whose epoch is more than
// `max_epoch_jump` above the highest read so far (a forged 2^62 would fence every later holding
// off) is refused.
class GrantsReader {
 public:
  // `keys` (may be null: records are taken unsealed) must outlive the reader.
  explicit GrantsReader(const MarketKeys* keys = nullptr, std::string topic = "rtb.lease.grants",
                        int64_t max_epoch_jump = kMaxEpochJump)
      : keys_(keys), topic_(std::move(topic)), max_epoch_jump_(max_epoch_jump) {}
  enum class Kind {
    kHolding,    // a holding to apply (`grant`)
    kMarker,     // a coordinator's epoch marker (`epoch`): nothing to apply
    kStale,      // a holding below its partition's epoch (`grant`): ignored
    kMalformed,  // neither (`error`)
    kRefused,    // not opened, or an implausible epoch (`error`: the reason, `epoch`)
  };
  struct Record {
    Kind kind = Kind::kMalformed;
    LeaseGrant grant;
    int64_t epoch = 0;
    std::string error;
  };
  // `offset` (if known): a partition read again from an earlier offset (a consumer reset to its
  // start) starts its fence again, so that what is read twice is judged as the first time.
  Record Take(int32_t partition, std::string_view payload, int64_t offset = -1);
  // The highest epoch read anywhere (0: none), and on one partition.
  int64_t MaxEpoch() const { return max_epoch_; }
  int64_t Epoch(int32_t partition) const;
  // Ok when each of partitions 0..partitions-1 shows at least `epoch` (a starting coordinator's
  // read-back must show its own marker everywhere: a flush does not say each was delivered).
  Status Fenced(int partitions, int64_t epoch) const;
  // A coordinator other than `instance` whose marker or holding carries `epoch` ("": none).
  // Epochs are offsets on the coordinators' topic, so two coordinators share one only when that
  // topic was recreated (its offsets started again) while the grants topic kept the earlier
  // epochs: a starting coordinator that finds its own epoch taken does not serve.
  std::string OtherAt(int64_t epoch, std::string_view instance) const;
  // Refuses ("epoch_above") every marker and holding of an epoch above `epoch` from now on (0:
  // none): a coordinator told to take a market over reads its grants topic this way.
  void SetCeiling(int64_t epoch) { ceiling_ = epoch; }
  // The highest epoch refused as above the ceiling (0: none).
  int64_t AboveCeiling() const { return above_ceiling_; }

 private:
  const MarketKeys* keys_;
  std::string topic_;
  int64_t max_epoch_jump_;
  int64_t ceiling_ = 0, above_ceiling_ = 0;
  // Whether `epoch` may raise a fence; else r->kind = kRefused with the reason.
  bool Plausible(int64_t epoch, Record* r);
  std::map<int32_t, int64_t> epoch_;  // per partition: the highest epoch read there
  std::map<int64_t, std::set<std::string, std::less<>>> writers_;  // per epoch: its coordinators
  std::map<int32_t, int64_t> last_offset_;  // per partition: the last offset taken
  int64_t max_epoch_ = 0;
};

// Who serves a market, on the coordinators' topic (one partition, compacted, keyed by
// `instance`): one coordinator grants at a time (docs/budget-leases.md, section 2).
enum class CoordinatorState : uint8_t {
  kClaim,  // a starting coordinator: it serves once every earlier claim is handed over or gone
  kYield,  // it has stopped granting, and its grants are on the grants topic
  kGone,   // an earlier claim that never handed over, taken for dead by `by` after its timeout
  // A serving coordinator's beat (`seq`), written about once a second and read back by itself:
  // it grants only while it has read one of its own beats back within half the hand-over
  // timeout, so it has read every newer claim too (the topic has one partition). Stands for a
  // claim: the latest record of a serving coordinator may be a beat.
  kServing,
};
struct CoordinatorRecord {
  CoordinatorState state = CoordinatorState::kClaim;
  std::string instance;  // whose state this is (random, new at each start)
  std::string host;      // where it runs (for the operator)
  int64_t ts_ms = 0;
  std::string by;   // kGone: the coordinator that wrote it
  int64_t seq = 0;  // kServing: the beat's number, counted from 1 by each instance
};
std::string EncodeCoordinatorRecord(const CoordinatorRecord& r);
// The coordinators' topic of a market whose grants go to `grants_topic`, unless configured.
std::string DefaultCoordinatorsTopic(const std::string& grants_topic);
Result<CoordinatorRecord> DecodeCoordinatorRecord(std::string_view json);

}  // namespace rtb::budget
