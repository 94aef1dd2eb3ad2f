// The bidder's side of budget leases (docs/budget-leases.md): with `leases.enabled`, each budget
// slot of the current day may commit only what the coordinator (`rtb budget`) has granted this
// bidder. A thread checks the slots every `check_every_ms`: it asks for a horizon's worth at the
// slot's recent rate when less than half of that is left (it gives nothing back yet), reports spend
// and reservations every `report_every_ms` (its heartbeat), applies the holdings it reads on the
// grants topic, and freezes every slot at what it has committed when Kafka has not taken a report
// for `ttl_ms`.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "bidder_impl.h"
#include "rtb/bidder/config.h"
#include "rtb/core/status.h"

namespace rtb::bidder {

class LeaseClient {
 public:
  static Result<std::unique_ptr<LeaseClient>> Start(const BidderConfig* cfg, DayLedgers* days,
                                                    const std::string& bootstrap, std::string name);
  ~LeaseClient();  // stops the thread

  struct Impl;

 private:
  explicit LeaseClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtb::bidder
