// Bidder::Impl: the state that the bid path (bid_handler.cc), the notice path
// (notice_handler.cc), the metrics page (bidder_metrics.cc) and the lifecycle (bidder.cc)
// share. Private to the bidder library.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rtb/bidder/bid_logic.h"
#include "rtb/bidder/bidder.h"
#include "rtb/bidder/budget.h"
#include "rtb/bidder/metrics.h"
#include "rtb/bidder/notice.h"
#include "rtb/bidder/notice_sign.h"
#include "rtb/bidder/policy_feed.h"
#include "rtb/bidder/predictor.h"
#include "rtb/bidder/state_store.h"
#include "rtb/core/clock.h"
#include "rtb/core/log.h"
#include "rtb/core/mac.h"

namespace rtb::bidder {

// One bid's identity as bytes that no two bids share whatever their ids hold:
// "<len>:<auction id><len>:<imp id><advertiser id>" (lengths in decimal).
std::string BidIdentity(std::string_view auction, std::string_view imp, uint32_t advertiser);
void BidIdentityInto(std::string_view auction, std::string_view imp, uint32_t advertiser,
                     std::string* out);
// The key of one bid's state (its budget reservation and its bid record), as the bid path and
// the notices for that bid both name it: BidIdentity, hashed.
Key128 BidKey(std::string_view auction, std::string_view imp, uint32_t advertiser);

class LeaseClient;  // lease_client.h
class NoticeInbox;  // notice_inbox.h

constexpr int kNoBidReasons = static_cast<int>(NoBidReason::kNameConflict) + 1;
constexpr int kNoticeTypes = 5;
// A notice's result (the Prometheus label): applied; a repeat; a price that is not one; a
// price above the signed bid; the state store failed; a signature that does not match (not a
// bid of ours, or altered); after the billing window; a charge the budget cannot take; a
// notice of another bidder's bid, forwarded to it (notice_inbox.h); a conversion value above
// the advertiser's max_conversion_value.
enum NoticeResult {
  kApplied,
  kDuplicate,
  kInvalidPrice,
  kAboveBid,
  kError,
  kForged,
  kLate,
  kOverBudget,
  kForwarded,
  kAboveMaxValue,
  kNoticeResults
};
inline constexpr const char* kNoticeResultNames[] = {
    "applied", "duplicate", "invalid_price", "above_bid", "error",
    "forged",  "late",      "over_budget",   "forwarded", "above_max_value"};

struct BidderCounters {
  Counter requests_bid, requests_notice, requests_other, bad_requests, bids;
  Counter nobid[kNoBidReasons];
  Counter notices[kNoticeTypes][kNoticeResults];
  Counter fallback_requests;
  LatencyHistogram latency;
};

// The outcomes of the advertisers with a target CPA or ROAS since the process started, per agent
// and A/B arm ([agent * 2 + arm]): /metrics shows them as counters (rtb_goal_*_total), from which
// a query gets each agent's realised CPA or ROAS against its targets over any window, across
// restarts (docs/metrics.md). Empty when no advertiser has a target.
struct GoalCounters {
  std::vector<Counter> spend;        // billed, micros
  std::vector<Counter> conversions;  // conversion notices' counts, in millionths
  std::vector<Counter> value;        // their value, micros
  // What the targets allow for those outcomes, micros: target CPA x conversions, or value /
  // target ROAS. spend / allowed <= 1: the agent's targeted advertisers are on target.
  std::vector<Counter> allowed;
  // Books one applied notice of advertiser `a` (nothing for one without a target).
  void Book(const Advertiser& a, Arm arm, NoticeType type, Micros charge, double count,
            int64_t value_micros);
};

struct Bidder::Impl {
  explicit Impl(const BidderConfig& c);
  ~Impl();  // both in bidder.cc, where LeaseClient is complete

  BidderConfig cfg;
  Clock* clock = SystemClock();  // Bidder::Create's
  Predictor predictor;
  std::unordered_map<uint32_t, size_t> index_of;  // advertiser id -> index
  int agents = 0;
  std::unique_ptr<StateStore> state;
  std::unique_ptr<DayLedgers> days;  // after `state`
  std::unique_ptr<EventLog> events;
  PolicyHolder policy;
  std::shared_ptr<const ClusterMap> default_clusters;
  std::unique_ptr<PolicyFeed> feed;
  std::unique_ptr<LeaseClient> leases;  // with leases.enabled: budgets shared with other bidders
  // With leases.enabled: this bidder's name (leases.name, or host:port), which its notice URLs
  // carry as the bid's owner, and its reader of the notices other bidders forward to it.
  std::string name;
  std::unique_ptr<NoticeInbox> inbox;
  std::shared_ptr<const MarketKeys> keys;  // the market's key ring (nullptr: none set)
  // The state store refused a write (a full disk): not ready, no bids (billings could not be
  // booked) until a probe write in Tick succeeds again. One error line per outage.
  std::atomic<bool> state_down{false};
  std::atomic<bool> draining{false};  // SetDraining: /readyz 503 until the process exits
  std::mutex state_down_mu;           // orders the outage's log lines
  void StateFailed(const Status& st);
  void ProbeState();
  log::RateLimit value_refusals{3, std::chrono::seconds(60)};
  std::string instance;
  std::atomic<uint64_t> seq{0};
  std::unique_ptr<NoticeSigner> signer;  // signs and checks notice URLs
  // Per advertiser (index order), fixed by the config: its seat name and its id as a string.
  std::vector<std::string> seat_of, cid_of;
  BidderCounters counters;
  GoalCounters goals;
  int64_t next_retention_ms = 0;  // when Tick next forgets expired dedupe keys (Tick's thread)

  // A notice's dedupe key is kept this long after its bid; older notices are refused.
  int64_t RetentionMs() const { return int64_t{cfg.notice_retention_hours} * kHourMs; }
  static constexpr int64_t kHourMs = 3'600'000;

  bool shut = false;
  std::mutex shut_mu;

  std::string NextEid() { return instance + "-" + std::to_string(seq.fetch_add(1)); }

  // When the table was computed (or, if it does not say, when it was loaded).
  static int64_t BornMs(const PolicySnapshot& p) {
    return p.table.created_unix_ms > 0 ? p.table.created_unix_ms : p.loaded_unix_ms;
  }
  bool PolicyUsable(const PolicySnapshot* p, int64_t now_ms) const {
    return p != nullptr && now_ms - BornMs(*p) <= static_cast<int64_t>(cfg.policy_max_age_s) * 1000;
  }
};

// The notice path (notice_handler.cc): a notice from the exchange (received_ms < 0), or one
// another bidder of the market received at received_ms (Unix ms) and forwarded to this one
// (never forwarded again; its billing window is judged at its receipt).
HttpResult ApplyNotice(Bidder::Impl& m, std::string_view target, int64_t received_ms = -1);

}  // namespace rtb::bidder
