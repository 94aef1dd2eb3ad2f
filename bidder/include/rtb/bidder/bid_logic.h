// The bid decision as a pure function: request + campaigns + predictor + policy -> the bids to
// send, at their final prices (budget reservation is the caller's). No I/O, no clock, no locks: the
// server, tests and the fuzzer call the same code.
//
// For each impression and each advertiser k whose targeting matches (inventory type,
// categories, device type, country, banner size, not blocked by bcat/badv):
//   j = consumer cluster of the user; i = agent of k
//   bratio = pCVR / avg pCVR_k;  alpha = clip(a[i][j] x bratio, -r, r)   (core/bid.h)
//   (r = the policy's alpha range, 0.9 by default)
//   CPC bid = manual bid x (1 + alpha), lowered to what the budget left allows;
//   CPM price = CPC bid x pCTR x 1000
// With ext.sim candidate hints (the generated world) the listed advertisers are the candidates and
// the listed pCTR/pCVR replace the predictor. A price below the floor is not bid. Per impression,
// the best `max_bids_per_imp` prices (one per advertiser) are kept, ranked by eCPM (ties: lower
// advertiser id).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rtb/bidder/config.h"
#include "rtb/bidder/openrtb.h"
#include "rtb/bidder/policy.h"
#include "rtb/bidder/predictor.h"

namespace rtb::bidder {

// Why nothing was bid (also the Prometheus label and the no-bid event's reason).
enum class NoBidReason {
  kNone = 0,
  kNoMatchingCampaign,
  kBelowFloor,
  kCurrency,
  kBudget,
  kTmax,
  kBlocked,
  kNoDeal,  // a private auction (pmp.private_auction) offering no deal an advertiser holds
  // Set by the bid path, not DecideBids: the state store cannot persist a billing (a full
  // disk); a leased bidder whose name another live process holds (no lease for it).
  kStateUnavailable,
  kNameConflict,
};
const char* NoBidReasonName(NoBidReason r);

struct Candidate {
  uint32_t advertiser = 0;
  size_t advertiser_index = 0;  // into config.advertisers
  size_t imp_index = 0;
  size_t creative_index = 0;
  int agent = 0;
  int cluster = 0;
  double pctr = 0, pcvr = 0, bratio = 1, action = 0, alpha = 0;
  Micros cpc;     // adjusted CPC bid
  Micros price;   // CPM price
  int deal = -1;  // the deal it bids through (index into the imp's deals); -1 = open auction
  Micros floor;   // the floor it had to reach: the deal's, or the impression's
};

struct Decision {
  std::vector<Candidate> bids;              // in ranking order per impression
  NoBidReason reason = NoBidReason::kNone;  // set when bids is empty
  int cluster = 0;
  bool manual_fallback = false;  // no usable policy: alpha = 0
  uint64_t policy_version = 0;
  // Bid computations per agent (candidates priced, before floors and budgets): the counts
  // behind the learner's d_ij (docs/dcmab.md section 4), logged with the request's events.
  std::vector<int> computed;
};

struct DecideOptions {
  int max_bids_per_imp = 3;
  std::string currency = "USD";
  bool use_policy = true;  // false: the policy is missing or stale, bid manual
  int agents = 0;          // size of Decision::computed
  // With ext.sim hints: advertiser id -> index into advertisers (required then).
  const std::unordered_map<uint32_t, size_t>* index_of = nullptr;
  // Cluster map used when the policy carries none (or there is no policy).
  const ClusterMap* clusters = nullptr;
  // Per advertiser index: false when its budget is spent (it computes no bid, as in the
  // simulator, and is not counted in `computed`). Empty = every advertiser may bid.
  std::function<bool(size_t)> has_budget;
  // Per advertiser index: the budget it may still reserve (micros). Each bid is lowered so that
  // one impression never charges more (CapBidToBudget, core/bid.h); empty = no cap.
  std::function<int64_t(size_t)> budget_left;
};

// The most one impression at a CPM price can charge (micros, rounded up): what a bid reserves.
inline Micros MaxCharge(Micros cpm_price) { return Micros((cpm_price.value() + 999) / 1000); }

// The candidate with its bid lowered so that its largest charge fits in room_micros (the budget
// rule, CapBidToBudget), or nothing when there is no room or the lowered price is under the
// floor. The bid path uses it when a reservation at the full price is refused.
std::optional<Candidate> LowerToRoom(const Candidate& c, int64_t room_micros, Micros floor);

Decision DecideBids(const BidRequest& req, const std::vector<Advertiser>& advertisers,
                    const Predictor& predictor, const PolicySnapshot* policy,
                    const DecideOptions& opt);

}  // namespace rtb::bidder
