// The bid path: decode -> decide -> reserve -> encode -> log. No network call, no lock on the
// policy (one atomic load), budget reservations before the answer leaves.
#include <algorithm>

#include "bidder_impl.h"
#include "lease_client.h"
#include "rtb/core/auction.h"
#include "rtb/core/log.h"

namespace rtb::bidder {

namespace {

HttpResult BadRequest(std::string why) {
  HttpResult r;
  r.status = 400;
  r.content_type = "text/plain";
  r.headers.push_back({"x-rtb-error", why});
  r.body = std::move(why) + "\n";
  return r;
}

// The event of one bid sent.
Event BidEvent(const BidRequest& req, const Candidate& c, const Decision& d, Arm arm,
               int64_t now_ms, int64_t sim_ms, int at) {
  Event e;
  e.type = "bid";
  e.ts_ms = now_ms;
  e.auction_id = req.id;
  e.imp_id = req.imps[c.imp_index].id;
  e.advertiser = c.advertiser;
  e.agent = c.agent;
  e.cluster = c.cluster;
  e.price_micros = c.price.value();
  e.cpc_micros = c.cpc.value();
  e.pctr = c.pctr;
  e.pcvr = c.pcvr;
  e.alpha = c.alpha;
  e.policy_version = d.policy_version;
  e.manual_fallback = d.manual_fallback;
  e.arm = arm;
  e.test = req.test;
  e.sim_ms = sim_ms;
  e.at = at;
  if (c.deal >= 0) {
    const Deal& deal = req.imps[c.imp_index].deals[static_cast<size_t>(c.deal)];
    e.deal = deal.id;
    if (deal.at != 0) e.at = deal.at;  // the deal's own type (3: its fixed price)
  }
  return e;
}

// HandleBid's phases, inline: every bid request runs them.

// What the phases of one request share.
struct BidContext {
  const BidRequest& req;
  int64_t now_ms;
  int64_t sim_ms;  // ext.sim's clock, -1 without
  BudgetLedger& ledger;
  Arm arm;
  size_t slot0;  // the arm's first budget slot
};

// A 204 with its reason header, after logging the request's nobid event.
inline HttpResult NoBid(Bidder::Impl& m, const BidContext& ctx, NoBidReason reason, int cluster,
                        uint64_t policy_version, bool fallback, std::vector<int> computed) {
  m.counters.nobid[static_cast<int>(reason)].Inc();
  Event e;
  e.type = "nobid";
  e.eid = m.NextEid();
  e.ts_ms = ctx.now_ms;
  e.auction_id = ctx.req.id;
  e.cluster = cluster;
  e.policy_version = policy_version;
  e.manual_fallback = fallback;
  e.arm = ctx.arm;
  e.test = ctx.req.test;
  e.reason = NoBidReasonName(reason);
  e.sim_ms = ctx.sim_ms;
  e.computed = std::move(computed);
  m.events->Log(e);
  HttpResult r;
  r.status = 204;
  r.content_type.clear();
  r.headers.push_back({"x-rtb-nobid-reason", NoBidReasonName(reason)});
  return r;
}

// 2. Decide: the final prices, each within what its advertiser's budget can still reserve.
inline Decision Decide(Bidder::Impl& m, const BidContext& ctx) {
  const PolicySnapshot* snap = m.policy.Current();
  DecideOptions opt;
  // A few spares per impression, so that a bidder whose reservation fails gives its place to
  // the next best.
  opt.max_bids_per_imp = std::min(kMaxSlots, m.cfg.max_bids_per_imp + 2);
  opt.currency = m.cfg.currency;
  const bool usable = m.PolicyUsable(snap, ctx.now_ms);
  opt.use_policy = usable && ctx.arm == Arm::kLearned;
  opt.agents = m.agents;
  opt.index_of = &m.index_of;
  opt.clusters = m.default_clusters.get();
  // Whether the whole budget has money left: with leases, what this bidder holds plus what the
  // rest of the budget has (headroom), so that an advertiser whose lease ran dry stays a
  // candidate (and is counted in `computed`, as with one bidder) while its lease is refilled.
  BudgetLedger& ledger = ctx.ledger;
  const size_t slot0 = ctx.slot0;
  opt.has_budget = [&ledger, slot0](size_t k) {
    return ledger.budget(slot0 + k).value() - ledger.spent(slot0 + k).value() +
               ledger.headroom(slot0 + k).value() >=
           kMinBudgetLeftMicros;
  };
  if (!ctx.req.test) {  // test requests never touch a budget
    opt.budget_left = [&ledger, slot0](size_t k) {
      return ledger.budget(slot0 + k).value() - ledger.committed(slot0 + k).value() +
             ledger.headroom(slot0 + k).value();
    };
  }
  if (!usable) m.counters.fallback_requests.Inc();
  Decision d = DecideBids(ctx.req, m.cfg.advertisers, m.predictor, snap, opt);
  if (ctx.arm == Arm::kManual) {  // manual by design, not a fallback: the table's version is noted
    d.manual_fallback = !usable;
  }
  return d;
}

// 3. Reserve the largest possible charge of every bid (one impression at its price) before
// sending it. Returns the bids to send; *budget_limited when a bid was dropped for its budget.
inline std::vector<Candidate> Reserve(Bidder::Impl& m, const BidContext& ctx, Decision& d,
                                      bool* budget_limited) {
  const BidRequest& req = ctx.req;
  BudgetLedger& ledger = ctx.ledger;
  std::vector<Candidate> sent;
  std::vector<int> per_imp(req.imps.size(), 0);
  for (Candidate& c : d.bids) {
    if (per_imp[c.imp_index] >= m.cfg.max_bids_per_imp) continue;
    if (!req.test) {
      const size_t slot = ctx.slot0 + c.advertiser_index;
      const Key128 key = BidKey(req.id, req.imps[c.imp_index].id, c.advertiser);
      const int64_t deadline_ms = ctx.now_ms + m.cfg.reservation_timeout_ms;
      const bool open = ledger.bids_open(slot);
      if (m.cfg.leases.enabled) ledger.NoteCharge(slot, MaxCharge(c.price));
      bool reserved =
          open && ledger.TryReserve(slot, key, MaxCharge(c.price), ctx.now_ms, deadline_ms);
      if (!reserved && open && (m.cfg.leases.lower_bids || !m.cfg.leases.enabled)) {
        // The lease (with one bidder: the budget) has less room than the bid can charge: bid
        // what the room allows, as one bidder does at its budget's end (CapBidToBudget). The
        // refusal above already made the lease client ask for more.
        const int64_t room = ledger.budget(slot).value() - ledger.committed(slot).value();
        std::optional<Candidate> lowered;
        // A fixed-price deal's price cannot be lowered; lowered under a deal's floor in an open
        // auction, the bid goes to the open auction at the impression's floor.
        const Imp& imp = req.imps[c.imp_index];
        const bool fixed = c.deal >= 0 && imp.deals[static_cast<size_t>(c.deal)].at == 3;
        if (!fixed) lowered = LowerToRoom(c, room, c.floor);
        if (!lowered && !fixed && c.deal >= 0 && imp.private_auction != 1) {
          Candidate in_open = c;
          in_open.deal = -1;
          in_open.floor = imp.bidfloor;
          lowered = LowerToRoom(in_open, room, in_open.floor);
        }
        if (lowered) {
          reserved =
              ledger.TryReserve(slot, key, MaxCharge(lowered->price), ctx.now_ms, deadline_ms);
          if (reserved) c = *lowered;
        }
      }
      if (!reserved) {
        *budget_limited = true;
        continue;
      }
    }
    ++per_imp[c.imp_index];
    sent.push_back(c);
  }
  return sent;
}

// 4. Encode: one seat per advertiser.
inline BidResponse Respond(Bidder::Impl& m, const BidContext& ctx,
                           const std::vector<Candidate>& sent) {
  const BidRequest& req = ctx.req;
  BidResponse resp;
  resp.id = req.id;
  resp.cur = m.cfg.currency;
  for (const Candidate& c : sent) {
    const Advertiser& a = m.cfg.advertisers[c.advertiser_index];
    const Creative& cr = a.creatives[c.creative_index];
    const std::string& seat = m.seat_of[c.advertiser_index];
    auto sb = std::find_if(resp.seatbid.begin(), resp.seatbid.end(),
                           [&](const SeatBid& s) { return s.seat == seat; });
    if (sb == resp.seatbid.end()) {
      resp.seatbid.push_back({seat, {}});
      sb = resp.seatbid.end() - 1;
    }
    const Imp& imp = req.imps[c.imp_index];
    Bid b;
    b.id.reserve(req.id.size() + imp.id.size() + 12);
    b.id.append(req.id).append(1, '-').append(imp.id).append(1, '-').append(
        m.cid_of[c.advertiser_index]);
    b.impid = imp.id;
    b.price = c.price;
    b.adid = cr.crid;
    b.crid = cr.crid;
    b.cid = m.cid_of[c.advertiser_index];
    b.adomain = cr.adomain;
    b.w = cr.w;
    b.h = cr.h;
    if (cr.w == 0 && !imp.formats.empty()) {  // an any-size creative fills the slot's size
      b.w = imp.formats.front().w;
      b.h = imp.formats.front().h;
    }
    b.cat = cr.cat;
    b.cattax = cr.cat.empty() ? 0 : cr.cattax;
    b.mtype = cr.mtype;
    b.bundle = cr.bundle;
    if (c.deal >= 0) b.dealid = imp.deals[static_cast<size_t>(c.deal)].id;
    // Notice URLs signed over this bid's identity and terms (notice_sign.h).
    const SignedBid signed_bid{req.id,   imp.id,    a.id,    c.price, ctx.now_ms,
                               req.test, c.cluster, ctx.arm, m.name,  b.dealid};
    const std::string query = SignedNoticeQuery(signed_bid, m.signer->Sign(signed_bid));
    b.nurl = NoticeUrl(m.cfg.notice_base_url, NoticeType::kWin, query);
    b.burl = NoticeUrl(m.cfg.notice_base_url, NoticeType::kBilling, query);
    b.lurl = NoticeUrl(m.cfg.notice_base_url, NoticeType::kLoss, query);
    b.adm = cr.markup;
    sb->bids.push_back(std::move(b));
  }
  return resp;
}

// 5. Log one event per bid; the request's bid computations ride on the first.
inline void LogBids(Bidder::Impl& m, const BidContext& ctx, const std::vector<Candidate>& sent,
                    Decision& d) {
  for (size_t i = 0; i < sent.size(); ++i) {
    m.counters.bids.Inc();
    Event e = BidEvent(ctx.req, sent[i], d, ctx.arm, ctx.now_ms, ctx.sim_ms,
                       ctx.req.at == 1 || ctx.req.at == 2 ? ctx.req.at : m.cfg.default_at);
    e.eid = m.NextEid();
    if (i == 0) e.computed = std::move(d.computed);
    m.events->Log(e);
  }
}

}  // namespace

HttpResult Bidder::HandleBid(std::string_view body, int64_t received_us, RequestDecoder& decoder,
                             std::string_view version) {
  Impl& m = *impl_;
  BidderCounters& n = m.counters;
  n.requests_bid.Inc();
  auto observe = [&](HttpResult r) {
    n.latency.Observe(NowSteadyUs() - received_us);
    return r;
  };

  // 1. Decode.
  auto req = decoder.Decode(body);
  if (!req.ok()) {
    n.bad_requests.Inc();
    return observe(BadRequest(req.status().message()));
  }
  const int64_t now_ms = m.clock->UnixMs();
  const int64_t sim_ms = req->sim ? req->sim->t_ms : -1;
  // The user's A/B arm: its budgets are the arm's part of each advertiser's, and the manual arm
  // bids a = 0.
  const Arm arm =
      ArmOf(ArmUnit(!req->buyeruid.empty() ? req->buyeruid : req->user_id, req->device_id, req->id),
            m.cfg.ab.salt, m.cfg.ab.learned_share);
  const BidContext ctx{*req,   now_ms,
                       sim_ms, *m.days->Get(BudgetDayOf(now_ms, sim_ms)),
                       arm,    arm == Arm::kLearned ? 0 : m.cfg.advertisers.size()};
  // tmax includes the network: no bid when the answer cannot arrive in time.
  if (req->tmax_ms > 0 &&
      (NowSteadyUs() - received_us) / 1000 + m.cfg.tmax_network_ms >= req->tmax_ms) {
    return observe(NoBid(m, ctx, NoBidReason::kTmax, -1, 0, false, {}));
  }
  // A billing could not be booked now (the state store failed a write): no money is bid.
  if (m.state_down.load(std::memory_order_relaxed) && !req->test) {
    return observe(NoBid(m, ctx, NoBidReason::kStateUnavailable, -1, 0, false, {}));
  }
  Decision d = Decide(m, ctx);
  bool budget_limited = false;
  const std::vector<Candidate> sent = Reserve(m, ctx, d, &budget_limited);
  if (sent.empty()) {
    NoBidReason why = budget_limited ? NoBidReason::kBudget : d.reason;
    // No lease at all because another live process holds this bidder's name: say so.
    if (m.leases != nullptr && !req->test && m.leases->GetHealth().name_conflict) {
      why = NoBidReason::kNameConflict;
    }
    return observe(
        NoBid(m, ctx, why, d.cluster, d.policy_version, d.manual_fallback, std::move(d.computed)));
  }
  HttpResult res;
  res.body = EncodeBidResponse(Respond(m, ctx, sent));
  res.headers.push_back({"x-openrtb-version", version.empty() ? "2.6" : std::string(version)});
  LogBids(m, ctx, sent, d);
  return observe(std::move(res));
}

}  // namespace rtb::bidder
