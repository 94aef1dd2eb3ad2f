// `rtb exchange`: an ad exchange for the simulated world, as a load source for real bidders.
//
// For every request of a simulated day (in time order) it POSTs an OpenRTB 2.6 request to a
// bidder over HTTP/1.1 keep-alive (bounded concurrency: `concurrency` connections), carrying
// the world's ground truth in `ext.sim` (the request's simulated time and its candidate
// advertisers with their pCTR/pCVR; schemas/exchange-sim-ext-v1.md). It runs the auction of
// docs/dcmab.md section 3 over the bids it gets back (eCPM ranking, top `slots`; under GSP each
// winner pays the next eCPM or the floor, under first price its own bid; the request's `at`
// says which), and sends the notices the outcome implies: billing (burl) for
// every winner, loss (lurl) for every other bid, and conversion notices with the order value:
// the expected value pCTR x pCVR x ppb per impression (outcomes: expected, the paper's offline
// convention) or sampled clicks and purchases (outcomes: sampled, seeded per request).
//
// The clock is simulated and runs as fast as the bidder answers: after the last auction and
// notice of each step it publishes a step-end marker (schemas/clock-v1.md) to Kafka with its
// own accounting of the step, then (optionally) waits until the bidder serves the table the
// learner computes for the next step, and measures that policy lag.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rtb/core/clock.h"
#include "rtb/core/mac.h"
#include "rtb/core/status.h"
#include "rtb/core/step_marker.h"
#include "rtb/exchange/traffic.h"
#include "rtb/simulator/simulate.h"

namespace rtb::exchange {

struct ExchangeConfig {
  std::string bidder = "127.0.0.1:8080";  // host:port of the bidder
  // Several bidders behind the exchange (sharing budgets through leases): each request goes to
  // one of them, drawn per request with these weights (empty = equal), and its notices go to
  // the bidder that bid. Empty: `bidder` alone.
  std::vector<std::string> bidders;
  std::vector<double> spread;
  // Several bidders: one that refused a connection (its process gone) is out of the rotation
  // until its readiness check passes (GET /readyz after the day's opening request, probed every
  // 250 ms; a bidder without one counts as ready), as a load balancer's health check would have
  // it; then, over this many milliseconds, it takes a linearly growing part of the requests
  // drawn for it (a load balancer's slow start), the rest going to the next bidder. 0: all of
  // them at once (a restarted bidder that shares budgets is given its traffic share of them
  // back as it starts, LeaseLedger::Traffic, and holds it once ready).
  int slow_start_ms = 0;
  // The rotation's time (the probes of a bidder out of it, its slow start); null: the steady
  // clock. Tests move a ManualClock instead of waiting for a probe.
  Clock* clock = nullptr;
  std::string bid_path = "/openrtb2/bid";  // where requests are POSTed
  int concurrency = 8;                     // connections, each one request at a time
  int tmax_ms = 250;                       // tmax sent in every request
  int io_timeout_ms = 2000;                // per HTTP exchange; then the request counts as lost
  std::string outcomes = "expected";       // expected | sampled
  bool send_loss_notices = true;           // lurl for every losing bid
  int notice_retries = 50;                 // a notice that fails (bidder down) is retried
  int notice_retry_ms = 100;               // ... this often
  // Kafka: step-end markers (empty brokers: none are published).
  std::string brokers;
  // librdkafka properties of its producer, after its own (--kafka-property; with --market,
  // the market's kafka.properties first).
  std::vector<std::pair<std::string, std::string>> kafka_properties;
  std::string clock_topic = "rtb.clock";
  // The market's key ring (bidder config market_keys; `rtb exchange --market`): step markers
  // are sealed with it (core/mac.h) and the learner drops one that is not. nullptr: unsealed
  // (the exchange says so once when it has brokers).
  std::shared_ptr<const MarketKeys> market_keys;
  // After each step: wait (up to policy_wait_ms) until the bidder serves the next table (and
  // before each day, for its leases: open_days).
  bool wait_for_policy = true;
  int policy_wait_ms = 30000;
  // Before each day's traffic, open the day on every bidder (a test request at its first
  // instant) and, with wait_for_policy, wait up to policy_wait_ms until the bidders that share
  // budgets have their leases for it: the exchange's clock runs as fast as bidders answer, so a
  // day's start would otherwise pass in the time the first asks take.
  bool open_days = true;
  uint64_t seed = 1;  // sampled outcomes
  // The bidder's A/B test (its ab.learned_share and ab.salt): the exchange assigns each
  // request's user to the same arm as the bidder does (core/ab.h) and keeps its accounting per
  // arm, so the two arms' live results can be compared with the bidder's events.
  double learned_share = 1.0;
  std::string ab_salt = "rtb-ab-1";
};

// What the exchange saw and charged in one step (our advertisers only).
struct StepAccount {
  StepMarker marker;              // as published (also the totals below)
  std::vector<Outcome> by_agent;  // impressions, clicks, conversions, cost, revenue
  // The same per A/B arm: [ArmIndex(arm) * agents + agent]; by_agent is their sum.
  std::vector<Outcome> by_arm_agent;
  double policy_lag_ms = -1;  // marker sent -> bidder serving the next version (-1: n/a)
  uint64_t next_version = 0;  // the version waited for
  int64_t lost_requests = 0;  // no HTTP answer (bidder down, timeout)
  // Requests answered by another bidder than the one drawn for them, because that one refused
  // the connection (its process gone) or was out of the rotation after refusing (several
  // bidders only): not lost, and counted once, where they were answered.
  int64_t rerouted_requests = 0;
  int64_t failed_notices = 0;  // notices never acknowledged
  // Notices the bidder that bid could not take (its process gone, the notice never sent to it)
  // and another bidder took instead (several bidders only).
  int64_t moved_notices = 0;
};

struct DayAccount {
  int64_t day = 0;
  std::vector<StepAccount> steps;
  std::vector<Outcome> by_agent;      // the whole day
  std::vector<Outcome> by_arm_agent;  // the whole day per arm (as in StepAccount)
  // The whole day per (ArmIndex(arm), advertiser id): what each advertiser's goal is scored on.
  std::map<std::pair<int, uint32_t>, Outcome> by_arm_advertiser;
  Outcome total;
  double seconds = 0;
};

class Exchange {
 public:
  // `sc` is the simulated world (market: agents of the advertisers; budgets for reports).
  static Result<std::unique_ptr<Exchange>> Create(const ExchangeConfig& cfg,
                                                  const sim::Scenario& sc);
  // A market the simulator did not generate (traffic.h); the A/B share and salt are the
  // market's bidder config's. `market` must outlive the exchange.
  static Result<std::unique_ptr<Exchange>> Create(const ExchangeConfig& cfg,
                                                  const TrafficMarket& market);
  ~Exchange();

  // Plays `day` as simulated day number `day_index` (sim clock = day_index x 24 h + the
  // request's time). `on_step` runs after each step's marker (and policy wait), e.g. to kill a
  // process in a chaos test.
  Result<DayAccount> PlayDay(const sim::Day& day, int64_t day_index,
                             const std::function<void(const StepAccount&)>& on_step = {});
  // The same for a traffic market's day: real OpenRTB requests (site or app, device, geo,
  // categories, floor) with only the clock in ext.sim, so the bidder's own targeting and
  // predictor decide; the competitors' eCPMs join the auction.
  Result<DayAccount> PlayDay(const TrafficDay& day, int64_t day_index,
                             const std::function<void(const StepAccount&)>& on_step = {});

  // The policy version every bidder in the rotation serves now (the lowest of their /metrics),
  // or an error. (Of several bidders, one out of the rotation is left out: it installs every
  // table from the topic when it is back.)
  Result<uint64_t> BidderPolicyVersion();
  // The policy version bidder `bidder` (its index in `bidders`) serves now, in the rotation or
  // not, or an error (it does not answer).
  Result<uint64_t> BidderPolicyVersion(size_t bidder);
  // Requests sent to each bidder so far (the spread, as played).
  std::vector<int64_t> RequestsPerBidder() const;
  // Runs `hook` once, on the worker about to send request number `request` of the day played
  // next (its index in the day), before that request goes out; the other workers go on
  // meanwhile. For chaos tests: a process killed at a request, not at a moment of the clock, so
  // that the step's later requests meet it down however loaded the machine is. Several hooks
  // may wait at once (a hook may add another); one whose request has already gone out runs
  // before the next request; a hook whose request the day does not reach is dropped when it
  // ends.
  void AtRequest(size_t request, std::function<void()> hook);
  // As AtRequest, but every other worker waits before its next request while `hook` runs (each
  // may still send the one request it had taken when the hook began): the day's traffic stands
  // still. For a process restarted under the demo's compressed clock, whose start (a second or
  // two of wall time, seconds of a real day) would otherwise take half a simulated step. The
  // hook must return: nothing bounds the hold.
  void HoldAtRequest(size_t request, std::function<void()> hook);
  // How many workers wait for a held hook to end right now (a held hook's own check that the
  // day's traffic stands still).
  int WorkersHeld() const;
  // Sends bidder `bidder` the opening request of the day being played and polls its readiness
  // check until it passes, then takes it back into the rotation; an error past `timeout_ms`.
  // For a held hook: the workers that would probe it are waiting.
  Status BringBackWhenReady(size_t bidder, int64_t timeout_ms);

  struct Impl;

 private:
  explicit Exchange(std::unique_ptr<Impl> impl);
  static Result<std::unique_ptr<Exchange>> Create(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtb::exchange
