#include "rtb/bidder/bid_logic.h"

#include <algorithm>

#include "rtb/core/auction.h"
#include "rtb/core/bid.h"

namespace rtb::bidder {

const char* NoBidReasonName(NoBidReason r) {
  switch (r) {
    case NoBidReason::kNone:
      return "none";
    case NoBidReason::kNoMatchingCampaign:
      return "no_matching_campaign";
    case NoBidReason::kBelowFloor:
      return "below_floor";
    case NoBidReason::kNoDeal:
      return "no_deal";
    case NoBidReason::kCurrency:
      return "currency";
    case NoBidReason::kBudget:
      return "budget";
    case NoBidReason::kTmax:
      return "tmax";
    case NoBidReason::kStateUnavailable:
      return "state_unavailable";
    case NoBidReason::kNameConflict:
      return "name_conflict";
    case NoBidReason::kBlocked:
      return "blocked";
  }
  return "unknown";
}

namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool Targets(const Advertiser& a, const BidRequest& r) {
  const Targeting& t = a.targeting;
  if (r.has_site && !t.site) return false;
  if (r.has_app && !t.app) return false;
  if (!t.categories.empty()) {
    bool any = false;
    for (const auto& c : r.cat) any = any || Contains(t.categories, c);
    if (!any) return false;
  }
  if (!t.device_types.empty() && std::find(t.device_types.begin(), t.device_types.end(),
                                           r.device_type) == t.device_types.end()) {
    return false;
  }
  if (!t.countries.empty() && !Contains(t.countries, r.country)) return false;
  return true;
}

// Whether a block list of categories names `cat` or its tier-1 parent ("IAB3" blocks "IAB3-1").
bool CategoryBlocked(const std::vector<std::string>& bcat, const std::string& cat) {
  for (const std::string& b : bcat) {
    if (cat == b ||
        (cat.size() > b.size() && cat.compare(0, b.size(), b) == 0 && cat[b.size()] == '-')) {
      return true;
    }
  }
  return false;
}

// Whether the request's block lists refuse this ad: its domains (badv), its categories (bcat,
// when in the same taxonomy), its advertised app (bapp).
bool AdBlocked(const Creative& cr, const BidRequest& r) {
  for (const auto& d : cr.adomain) {
    if (Contains(r.badv, d)) return true;
  }
  if (cr.cattax == r.cattax) {
    for (const auto& c : cr.cat) {
      if (CategoryBlocked(r.bcat, c)) return true;
    }
  }
  return !cr.bundle.empty() && Contains(r.bapp, cr.bundle);
}

// The deal of `imp` that `a` bids through at `price` (index into imp.deals), or -1: one the
// advertiser holds, whose wseat names its seat (or is empty), in the bid's currency, whose floor
// the price reaches; of several, the one with the highest floor (the most premium tier).
// *under_floor: whether a deal it could bid through was missed only on its floor.
int PickDeal(const Advertiser& a, const Imp& imp, Micros price, const std::string& currency,
             bool* under_floor) {
  int best = -1;
  for (size_t i = 0; i < imp.deals.size(); ++i) {
    const Deal& d = imp.deals[i];
    const auto held = std::find_if(a.deals.begin(), a.deals.end(),
                                   [&](const DealTerms& t) { return t.id == d.id; });
    if (held == a.deals.end()) continue;
    if (!d.wseat.empty() && !Contains(d.wseat, a.seat)) continue;
    if (d.bidfloor.value() > 0 && d.bidfloorcur != currency) continue;
    if (price < d.bidfloor) {
      *under_floor = true;
      continue;
    }
    if (best < 0 || d.bidfloor > imp.deals[static_cast<size_t>(best)].bidfloor) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

// The first creative that fits the impression and is not blocked; -1 if none (*blocked: a
// creative was passed over for a block list).
int PickCreative(const Advertiser& a, const BidRequest& r, const Imp& imp, bool* blocked) {
  if (!imp.banner) return -1;  // this bidder serves banners
  for (size_t c = 0; c < a.creatives.size(); ++c) {
    const Creative& cr = a.creatives[c];
    if (AdBlocked(cr, r)) {
      *blocked = true;
      continue;
    }
    if (cr.w == 0 && cr.h == 0) return static_cast<int>(c);
    for (const auto& f : imp.formats) {
      if (f.w == cr.w && f.h == cr.h) return static_cast<int>(c);
    }
  }
  return -1;
}

}  // namespace

Decision DecideBids(const BidRequest& req, const std::vector<Advertiser>& advertisers,
                    const Predictor& predictor, const PolicySnapshot* policy,
                    const DecideOptions& opt) {
  Decision d;
  const bool use_policy = opt.use_policy && policy != nullptr;
  d.manual_fallback = !use_policy;
  d.policy_version = use_policy ? policy->table.version : 0;
  const std::string& user = !req.buyeruid.empty() ? req.buyeruid : req.user_id;
  const ClusterMap* cmap =
      policy != nullptr && policy->clusters ? policy->clusters.get() : opt.clusters;
  d.cluster = cmap != nullptr ? cmap->Lookup(user) : 0;
  d.computed.assign(static_cast<size_t>(std::max(0, opt.agents)), 0);
  if (!req.cur.empty() && !Contains(req.cur, opt.currency)) {
    d.reason = NoBidReason::kCurrency;
    return d;
  }
  // The candidate advertisers: every campaign, or the generated world's list.
  const bool hinted = req.sim && req.sim->has_candidates;
  std::vector<std::pair<size_t, const SimCandidate*>> pool;  // (advertiser index, hint)
  if (hinted && opt.index_of != nullptr) {
    for (const SimCandidate& sc : req.sim->candidates) {
      auto it = opt.index_of->find(sc.advertiser);
      if (it != opt.index_of->end()) pool.emplace_back(it->second, &sc);
    }
  }
  const size_t pool_size = hinted ? pool.size() : advertisers.size();
  bool any_target = false, any_floor_fail = false, any_currency_fail = false, any_blocked = false,
       any_no_deal = false;
  std::vector<Candidate> per_imp;
  for (size_t ii = 0; ii < req.imps.size(); ++ii) {
    const Imp& imp = req.imps[ii];
    if (imp.bidfloor.value() > 0 && imp.bidfloorcur != opt.currency) {
      any_currency_fail = true;
      continue;
    }
    per_imp.clear();
    SlotAuction rank(std::min(opt.max_bids_per_imp, kMaxSlots), 0.0);
    for (size_t pi = 0; pi < pool_size; ++pi) {
      const size_t k = hinted ? pool[pi].first : pi;
      const Advertiser& a = advertisers[k];
      if (opt.has_budget && !opt.has_budget(k)) continue;
      if (!Targets(a, req)) continue;
      const int creative = PickCreative(a, req, imp, &any_blocked);
      if (creative < 0) continue;
      any_target = true;
      Candidate c;
      c.advertiser = a.id;
      c.advertiser_index = k;
      c.imp_index = ii;
      c.creative_index = static_cast<size_t>(creative);
      c.agent = a.agent;
      c.cluster = d.cluster;
      if (a.agent >= 0 && static_cast<size_t>(a.agent) < d.computed.size()) {
        ++d.computed[static_cast<size_t>(a.agent)];
      }
      if (hinted) {
        c.pctr = pool[pi].second->pctr;
        c.pcvr = pool[pi].second->pcvr;
      } else {
        // Bias-only models (no feature weights) need no features: skip the hashing.
        static const std::vector<uint32_t> kNone;
        const bool weighted = !predictor.ctr_weights.empty() || !predictor.cvr_weights.empty();
        const std::vector<uint32_t> features =
            weighted ? predictor.Features(a.id, req, imp, d.cluster) : kNone;
        c.pctr = predictor.Ctr(a.id, features);
        c.pcvr = predictor.Cvr(a.id, features);
      }
      c.bratio = BidRatio(c.pcvr, predictor.AvgPcvr(a.id));
      if (use_policy && a.agent < policy->table.agents() && d.cluster < policy->table.clusters()) {
        c.action = policy->table.at(a.agent, d.cluster);
      }
      const double range = use_policy ? policy->alpha_range : kDefaultAlphaRange;
      c.alpha = Alpha(c.action, c.bratio, range);
      c.cpc = AdjustedBid(a.bid, c.action, c.bratio, range);
      // A bid never risks more than the budget left (the simulator's rule, core/bid.h): an
      // impression charges at most its CPM price / 1000 = cpc x pCTR.
      if (opt.budget_left && c.pctr > 0) {
        const int64_t left = opt.budget_left(k);
        if (left >= kMinBudgetLeftMicros) {
          c.cpc = CapBidToBudget(c.cpc, c.pctr, left, ChargeBasis::kExpected);
        }
      }
      c.price = CpmPrice(c.cpc, c.pctr);
      // A deal whose floor the price reaches is bid through (its floor then the one to keep);
      // a private auction takes deal bids only, an open one an open bid otherwise.
      bool deal_under_floor = false;
      c.deal =
          c.price.value() > 0 ? PickDeal(a, imp, c.price, opt.currency, &deal_under_floor) : -1;
      if (c.deal < 0 && imp.private_auction == 1) {
        (deal_under_floor ? any_floor_fail : any_no_deal) = true;
        continue;
      }
      c.floor = c.deal >= 0 ? imp.deals[static_cast<size_t>(c.deal)].bidfloor : imp.bidfloor;
      // A fixed-price deal (at 3, OpenRTB 2.6): the bid is its price.
      if (c.deal >= 0 && imp.deals[static_cast<size_t>(c.deal)].at == 3) c.price = c.floor;
      if (c.price.value() <= 0 || c.price < c.floor) {
        any_floor_fail = true;
        continue;
      }
      per_imp.push_back(c);
      rank.Offer(
          {static_cast<double>(c.price.value()), a.id, static_cast<uint32_t>(per_imp.size() - 1)});
    }
    for (int r = 0; r < rank.ranked() && r < opt.max_bids_per_imp; ++r) {
      d.bids.push_back(per_imp[rank.ranked_at(r).index]);
    }
  }
  if (d.bids.empty()) {
    d.reason = any_floor_fail               ? NoBidReason::kBelowFloor
               : any_no_deal                ? NoBidReason::kNoDeal
               : any_currency_fail          ? NoBidReason::kCurrency
               : any_blocked && !any_target ? NoBidReason::kBlocked
                                            : NoBidReason::kNoMatchingCampaign;
  }
  return d;
}

std::optional<Candidate> LowerToRoom(const Candidate& c, int64_t room_micros, Micros floor) {
  if (room_micros < kMinBudgetLeftMicros || !(c.pctr > 0)) return std::nullopt;
  Candidate out = c;
  out.cpc = CapBidToBudget(c.cpc, c.pctr, room_micros, ChargeBasis::kExpected);
  out.price = CpmPrice(out.cpc, c.pctr);
  if (MaxCharge(out.price).value() > room_micros) out.price = Micros(room_micros * 1000);
  if (out.price.value() <= 0 || out.price < floor) return std::nullopt;
  return out;
}

}  // namespace rtb::bidder
