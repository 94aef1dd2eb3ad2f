// `rtb budget`: the lease coordinator (docs/budget-leases.md). It owns every advertiser's daily
// budget per A/B arm, reads the bidders' requests, returns and reports from
// `rtb.lease.requests`, grants from its LeaseLedger (core/lease.h: never more than a budget),
// reclaims the leases of silent bidders, and publishes every changed holding to the compacted
// `rtb.lease.grants`. On start it reads that topic back, so a restarted coordinator resumes
// with every lease as it was.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "rtb/core/lease.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::budget {

struct CoordinatorOptions {
  std::string brokers;                                // bootstrap.servers
  std::string requests_topic = "rtb.lease.requests";  // bidders -> coordinator
  std::string grants_topic = "rtb.lease.grants";      // coordinator -> bidders (compacted)
  std::string group_id = "rtb-budget";                // consumer group of the requests topic
  LeaseConfig lease;                                  // timeouts, grant sizing
  int reclaim_every_ms = 1000;                        // how often silent bidders are checked
  int session_timeout_ms = 6000;  // consumer group session: how soon a restarted coordinator reads
  // The budgets: advertiser id -> daily budget, split between the arms by learned_share.
  std::unordered_map<uint32_t, Micros> daily_budget;
  double learned_share = 1.0;
  // When set, every lease is written there as CSV on stop (day, adv, arm, budget, bidder, held,
  // spent, reserved): where each budget's money ended up.
  std::string leases_out;
};

class Coordinator {
 public:
  // Connects, and reads the grants topic back into the ledger.
  static Result<std::unique_ptr<Coordinator>> Create(CoordinatorOptions opt);
  ~Coordinator();

  // Serves until `stop` is set: each message from the requests topic, then the holdings it
  // changed on the grants topic; reclaims on the way.
  Status Run(const std::atomic<bool>& stop);

  struct Counters {
    int64_t messages = 0, malformed = 0, unknown_budget = 0, grants_published = 0;
    int64_t restored = 0, reclaims = 0;
    int64_t items = 0;  // budget items of the messages read (a report carries one per slot)
  };
  Counters counters() const;
  const LeaseLedger& ledger() const;

 private:
  struct Impl;
  explicit Coordinator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtb::budget
