// The bidder's side of budget leases (docs/budget-leases.md, section 7): with `leases.enabled`,
// each budget slot of the current day may commit only what the coordinator (`rtb budget`) has
// granted this bidder, and no more than the cap of its last report Kafka took. A thread checks
// the slots every `check_every_ms`: it asks for a lease's worth at the slot's recent rate (more,
// with a `need`, when reservations were refused), gives back what it does not need when the pool
// is dry (set aside until a holding confirms it), reports spend, reservations and caps every
// `report_every_ms` (its heartbeat), applies the holdings it reads on the grants topic, and
// freezes every slot at what it has committed when Kafka has not taken a report for `ttl_ms`. A
// restarted bidder reads its holdings before it serves and bids on a slot only once answered.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bidder_impl.h"
#include "rtb/bidder/config.h"
#include "rtb/core/status.h"

namespace rtb::bidder {

class LeaseClient {
 public:
  // `requests` counts the bid requests the bidder answers (its reports carry it: the
  // coordinator's measure of this bidder's traffic share); may be null.
  // Who speaks: the bidder's name (`leases.name`), this process's instance, and the earlier
  // processes of its state store, newest first (docs/budget-leases.md section 4, "Two
  // processes under one name").
  struct Identity {
    std::string name;
    std::string instance;
    std::vector<std::string> lineage;
    // Called once, on the lease thread, when the first holding of this instance is read (the
    // coordinator took this process for the name's). May be empty.
    std::function<void()> on_answered;
  };
  static Result<std::unique_ptr<LeaseClient>> Start(const BidderConfig* cfg, DayLedgers* days,
                                                    const std::string& bootstrap, Identity id,
                                                    const Counter* requests);
  ~LeaseClient();  // stops the thread

  // The budget days (the current one and the next) whose every slot has been answered by the
  // coordinator and has its cap on Kafka: the bidder can bid on that day from its first request
  // (PrepareDay asks for the next day's leases as the current one starts). -1: none.
  std::pair<int64_t, int64_t> ReadyDays() const;

  // What /metrics shows of the lease client (rtb_lease_*), since the process started.
  struct Health {
    bool frozen = false;        // Kafka has taken no report for leases.ttl_ms: no new money
    int64_t report_age_ms = 0;  // since Kafka last took a report, or since the client started
    int64_t asks = 0;           // lease requests sent
    int64_t answers = 0;        // holdings read that answered one
    int64_t returns = 0;        // returns sent
    int64_t reports = 0;        // reports Kafka took
    int64_t resyncs = 0;        // reports after a silence past the TTL (bids waited for holdings)
    // Holdings a coordinator fenced off by a newer one's epoch had queued, landed late: ignored.
    int64_t stale = 0;
    bool name_conflict = false;  // another live process holds this bidder name: no lease here
  };
  Health GetHealth() const;

  struct Impl;

 private:
  explicit LeaseClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtb::bidder
