// The bidder's request logic, apart from the network: the HTTP session reads a request,
// calls one of these, and writes the result (Beast example style). Thread-safe; the server
// calls it from every I/O thread. Each thread passes its own RequestDecoder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rtb/bidder/config.h"
#include "rtb/bidder/event_log.h"
#include "rtb/bidder/openrtb.h"
#include "rtb/bidder/policy.h"
#include "rtb/core/clock.h"

namespace rtb::bidder {

struct HttpResult {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

class StateStore;  // state_store.h

class Bidder {
 public:
  // `clock`: the wall time of budget days, reservations, notices, policy ages and the lease
  // client (tests pass a ManualClock); request latencies are always real time.
  static Result<std::unique_ptr<Bidder>> Create(const BidderConfig& cfg,
                                                Clock* clock = SystemClock());
  ~Bidder();

  // POST <bid_path>. received_us: steady-clock time the request was fully read.
  HttpResult HandleBid(std::string_view body, int64_t received_us, RequestDecoder& decoder,
                       std::string_view openrtb_version);
  // GET /notice/<type>?...
  HttpResult HandleNotice(std::string_view target);
  HttpResult Metrics() const;
  // GET /healthz: liveness (the process answers).
  HttpResult Health() const;
  // GET /readyz: whether to give this bidder traffic, as a load balancer's readiness check
  // asks. 200 once it can bid on its current budget day: sharing budgets, its leases for that
  // day are answered and capped (a restarted bidder reads its holdings first); 503 with the
  // reason until then, and while its state store cannot persist a billing (a full disk: it
  // makes no bid then, and is ready again within a Tick of the store taking writes).
  HttpResult Readiness() const;
  // From now on /readyz answers 503 "draining" (the process is stopping; bids are still made).
  void SetDraining();
  // Routes any request (method, target, body) to the handlers above; 404 / 405 otherwise.
  HttpResult Route(std::string_view method, std::string_view target, std::string_view body,
                   int64_t received_us, RequestDecoder& decoder, std::string_view version);
  // Periodic work (every ~100 ms): expire reservations and old bid records.
  void Tick();
  // Stops consuming policies, flushes (or spills) every event. Idempotent.
  void Shutdown();

  const BidderConfig& config() const;
  EventLog& events();
  PolicyHolder& policy();
  // Today's spend and reservations of advertiser index k over both A/B arms, and in one arm
  // (tests, metrics).
  Micros Spent(size_t k) const;
  Micros Reserved(size_t k) const;
  Micros Spent(size_t k, Arm arm) const;
  Micros Reserved(size_t k, Arm arm) const;
  DecodeLimits decode_limits() const;
  // The durable state (tests: its failure seam, StateStore::FailWritesForTest).
  StateStore& state_store();

  struct Impl;

 private:
  explicit Bidder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtb::bidder
