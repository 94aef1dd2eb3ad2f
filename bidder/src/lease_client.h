// The bidder's side of budget leases on Kafka (docs/budget-leases.md, section 7): the I/O shell
// around budget::LeasePlanner, which makes every decision. With `leases.enabled`, a thread
// reads the holdings the coordinator (`rtb budget`) publishes on the grants topic, sends the
// planner's reports on the report interval (the heartbeat: flushed, so that Kafka has taken
// each one), and every `check_every_ms` has the planner check the current day's slots and sends
// its asks and returns. A restarted bidder reads its holdings before it serves.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rtb/bidder/budget.h"
#include "rtb/bidder/config.h"
#include "rtb/bidder/metrics.h"
#include "rtb/core/clock.h"
#include "rtb/core/status.h"

namespace rtb::bidder {

class LeaseClient {
 public:
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
  // `requests` counts the bid requests the bidder answers (its reports carry it: the
  // coordinator's measure of this bidder's traffic share); may be null. `clock` times the
  // checks, reports and the TTL (tests move it).
  static Result<std::unique_ptr<LeaseClient>> Start(const BidderConfig* cfg, DayLedgers* days,
                                                    const std::string& bootstrap, Identity id,
                                                    const Counter* requests, Clock* clock);
  ~LeaseClient();  // stops the thread

  // The budget days (the current one and the next) whose every slot has been answered by the
  // coordinator and has its cap on Kafka: the bidder can bid on that day from its first request
  // (the planner asks for the next day's leases as the current one starts). -1: none.
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
    // Records of the grants topic refused, by reason (budget::LeasePlanner::Health::refused).
    std::map<std::string, int64_t> refused;
    // What this bidder holds, by (budget day, slot): the latest holding of each it read.
    std::map<std::pair<int64_t, size_t>, int64_t> held;
  };
  Health GetHealth() const;

  struct Impl;

 private:
  explicit LeaseClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtb::bidder
