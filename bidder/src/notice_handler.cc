// The notice path: win, billing, loss, click and conversion notices. Each notice is applied
// once (its de-duplication key and its event go into the state store in one write, and the
// event leaves through the store's outbox); billing settles the bid's reservation.
#include "bidder_impl.h"

namespace rtb::bidder {

HttpResult Bidder::HandleNotice(std::string_view target) {
  Impl& m = *impl_;
  m.counters.requests_notice.Inc();
  HttpResult res;
  res.content_type = "text/plain";
  auto n = ParseNotice(target);
  if (!n.ok()) {
    m.counters.bad_requests.Inc();
    res.status = 400;
    res.body = n.status().message() + "\n";
    return res;
  }
  auto it = m.index_of.find(n->advertiser);
  if (it == m.index_of.end()) {
    m.counters.bad_requests.Inc();
    res.status = 400;
    res.body = "unknown advertiser\n";
    return res;
  }
  const size_t k = it->second;
  const int t = static_cast<int>(n->type);
  const Key128 key = BidKey(n->auction_id, n->imp_id, n->advertiser);
  // Once per bid: (type, auction, imp, advertiser). Several seats can win one impression on a
  // multi-slot exchange (the simulated GSP sells 3 slots per request).
  const std::string once = std::string(NoticeTypeName(n->type)) + "/" + n->auction_id + "/" +
                           n->imp_id + "/" + std::to_string(n->advertiser);
  auto count = [&](NoticeResult result) { m.counters.notices[t][result].Inc(); };

  Event e;
  e.type = NoticeTypeName(n->type);
  e.eid = m.NextEid();
  e.ts_ms = NowUnixMs();
  e.auction_id = n->auction_id;
  e.imp_id = n->imp_id;
  e.advertiser = n->advertiser;
  e.agent = m.cfg.advertisers[k].agent;
  e.sim_ms = m.cfg.simulation_hooks ? n->sim_ms : -1;
  const int64_t day = DayOf(e.ts_ms, e.sim_ms);
  BudgetLedger& ledger = *m.days->Get(day);
  const std::string day_name = DayName(day);
  Micros charge(0);
  bool rejected = false;  // a billing price we refuse to book
  const std::optional<BidRecord> bid = m.bid_records.Find(key);
  if (bid) e.cluster = bid->cluster;
  if (n->type == NoticeType::kBilling || n->type == NoticeType::kWin) {
    if (!n->price) {
      e.reason = n->invalid_price;
      rejected = true;
    } else if (bid && n->price->value() > bid->price_cpm) {
      e.reason = "above_bid";
      rejected = true;
    } else {
      // A bid we no longer remember (after a restart, or older than an hour) is booked as
      // billed, since the exchange charges it; the event says it could not be checked.
      if (!bid) e.reason = "unverified";
      e.price_micros = n->price->value();
      if (n->type == NoticeType::kBilling) charge = Micros((n->price->value() + 500) / 1000);
    }
  } else if (n->type == NoticeType::kConversion && n->value) {
    e.price_micros = n->value->value();
  } else if (n->type == NoticeType::kLoss) {
    e.reason = std::to_string(n->loss_code);
  }
  OutboxEntry ob;
  ob.eid = e.eid;
  ob.topic = m.events->events_topic();
  ob.key = e.Key();
  if (n->type == NoticeType::kBilling && rejected) {
    // Not charged, counted; still de-duplicated so a retry is not counted twice.
    ob.payload = EncodeEvent(e);
    auto r = m.state->ApplyOnce(once, n->advertiser, day_name, Micros(0), &ob);
    if (!r.ok()) {
      count(kError);
      res.status = 503;
      return res;
    }
    if (!*r) {
      count(kDuplicate);
      return res;
    }
    count(e.reason == "above_bid" ? kAboveBid : kInvalidPrice);
    m.events->LogOutboxed(ob.topic, ob.key, ob.payload, ob.eid);
    return res;
  }
  if (n->type == NoticeType::kBilling) e.charged = true;  // if applied (below)
  ob.payload = EncodeEvent(e);
  auto applied = m.state->ApplyOnce(once, n->advertiser, day_name, charge, &ob);
  if (!applied.ok()) {
    count(kError);
    res.status = 503;
    return res;
  }
  if (!*applied) {
    count(kDuplicate);  // a repeated notice changes nothing
    return res;
  }
  if (n->type == NoticeType::kBilling) {
    ledger.Settle(k, key, charge);
  } else if (n->type == NoticeType::kLoss) {
    ledger.Release(key);
  }
  count(kApplied);
  m.events->LogOutboxed(ob.topic, ob.key, ob.payload, ob.eid);
  return res;
}

}  // namespace rtb::bidder
