// The lease messages on Kafka (schemas/lease-v1.md): what bidders send the coordinator
// (rtb.lease.requests) and the holdings it publishes (rtb.lease.grants, compacted).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rtb/budget/lease.h"
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

// Reads the grants topic as every reader must: records of a partition in their order, each
// holding checked against the highest epoch that partition has shown so far.
class GrantsReader {
 public:
  enum class Kind {
    kHolding,    // a holding to apply (`grant`)
    kMarker,     // a coordinator's epoch marker (`epoch`): nothing to apply
    kStale,      // a holding below its partition's epoch (`grant`): ignored
    kMalformed,  // neither (`error`)
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

 private:
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
