// The notice path: win, billing, loss, click and conversion notices.
//
// A notice counts only for a bid this bidder made: its URL carries the bid's terms signed at bid
// time (notice_sign.h), and a notice whose signature does not match is refused (403, counted
// "forged"). The money rules, in the order they are checked:
//   - a price above the signed bid price, or no valid price, is not charged;
//   - a win or billing later than the billing window (reservation_timeout_ms after the bid;
//     a forwarded one: when the bidder that forwarded it received it) is refused ("late"); so is
//     any notice later than notice_retention_hours, whose dedupe key may be gone (410, not logged);
//   - a test=1 bid's notices never touch a budget;
//   - a billing settles the bid's reservation; without one (a restart, or a loss notice that
//     came first) it is charged only if the budget can still take it ("over_budget"
//     otherwise).
//   - a conversion value above the advertiser's max_conversion_value is refused (400,
//     counted "above_max_value", logged rate-limited);
//   - a notice of another bidder's bid (its signed owner, `o=`) books nothing here: it is
//     forwarded to its owner (notice_inbox.h), which books it once for the whole market.
// So an advertiser's booked spend never exceeds its budget (bidder/README.md states the bound).
// Each notice is applied once (its de-duplication key, the spend and its event go into the
// state store in one write, and the event leaves through the store's outbox).
#include <algorithm>
#include <cmath>

#include "bidder_impl.h"
#include "notice_inbox.h"

namespace rtb::bidder {

namespace {

HttpResult Answer(int status, std::string body) {
  HttpResult res;
  res.status = status;
  res.content_type = "text/plain";
  res.body = std::move(body);
  return res;
}

// The most one conversion of advertiser k may be worth (a config built in code leaves 0: the
// loader's default then).
Micros MaxConversionValue(const Advertiser& a) {
  if (a.max_conversion_value.value() > 0) return a.max_conversion_value;
  return a.conversion_value.value() > 0 ? Micros(10 * a.conversion_value.value())
                                        : Micros::FromUnits(1000);
}

// A notice of a bid another bidder of the market made: put on the notices topic for its owner
// through the state store's outbox (once per bid and type: a retry to this bidder forwards
// nothing more), and answered at once.
HttpResult Forward(Bidder::Impl& m, const Notice& n, std::string_view target,
                   const std::string& once) {
  const int t = static_cast<int>(n.type);
  OutboxEntry ob;
  ob.eid = m.NextEid();
  ob.topic = m.cfg.leases.notices_topic;
  ob.key = n.owner;
  ob.payload =
      EncodeForwardedNotice({std::string(target), m.clock->UnixMs()}, ob.topic, m.keys.get());
  auto applied = m.state->ApplyOnce(n.bid_ms / Bidder::Impl::kHourMs, "forward/" + once,
                                    n.advertiser, "", Micros(0), &ob);
  if (!applied.ok()) {
    m.counters.notices[t][kError].Inc();
    m.StateFailed(applied.status());
    return Answer(503, "the bidder's state store cannot take the notice now\n");
  }
  if (!*applied) {
    m.counters.notices[t][kDuplicate].Inc();
    return Answer(200, "");
  }
  m.counters.notices[t][kForwarded].Inc();
  m.events->LogOutboxed(ob.topic, ob.key, ob.payload, ob.eid);
  return Answer(200, "forwarded: " + n.owner + "\n");
}

// Books a notice of this bidder's own bid (signed, within the retention): the event, the
// budget, once.
// received_ms: when the notice reached the market (another bidder that forwarded it), or -1 (now).
HttpResult BookNotice(Bidder::Impl& m, const Notice& notice, size_t k, const std::string& once,
                      int64_t received_ms) {
  const Notice* n = &notice;
  const int t = static_cast<int>(n->type);
  auto count = [&](NoticeResult result) { m.counters.notices[t][result].Inc(); };
  HttpResult res = Answer(200, "");
  const Key128 key = BidKey(n->auction_id, n->imp_id, n->advertiser);

  Event e;
  e.type = NoticeTypeName(n->type);
  e.eid = m.NextEid();
  e.ts_ms = m.clock->UnixMs();
  e.auction_id = n->auction_id;
  e.imp_id = n->imp_id;
  e.advertiser = n->advertiser;
  e.agent = m.cfg.advertisers[k].agent;
  e.test = n->test;
  e.sim_ms = m.cfg.simulation_hooks ? n->sim_ms : -1;
  // The bid's budget day (a billing after midnight still settles the day of its bid).
  const int64_t day = BudgetDayOf(e.sim_ms >= 0 ? e.ts_ms : n->bid_ms, e.sim_ms);
  BudgetLedger& ledger = *m.days->Get(day);
  const std::string day_name = BudgetDayName(day);
  e.cluster = *n->cluster;
  e.arm = *n->arm;
  e.deal = n->deal;
  // The arm's budget of this advertiser: the slot of the day's ledger it reserved and books.
  const size_t slot = ArmSlot(k, e.arm, m.cfg.advertisers.size());

  const bool money = n->type == NoticeType::kBilling || n->type == NoticeType::kWin;
  NoticeResult refused = kApplied;  // a win or billing we do not book
  Micros charge(0);
  if (money) {
    if (!n->price) {
      e.reason = n->invalid_price;
      refused = kInvalidPrice;
    } else if (*n->price > *n->bid_price) {
      e.reason = "above_bid";
      refused = kAboveBid;
    } else if ((received_ms >= 0 ? std::min(received_ms, e.ts_ms) : e.ts_ms) - n->bid_ms >
               m.cfg.reservation_timeout_ms) {
      e.reason = "late";
      refused = kLate;
    } else {
      e.price_micros = n->price->value();
      if (n->type == NoticeType::kBilling && !n->test) {
        charge = Micros((n->price->value() + 500) / 1000);
      }
    }
  } else if (n->type == NoticeType::kConversion) {
    // The order value the exchange or the advertiser reported (at most max_conversion_value),
    // else the campaign's value of a conversion (0 when neither is known).
    e.price_micros = n->value ? n->value->value() : m.cfg.advertisers[k].conversion_value.value();
    e.count = n->count.value_or(1.0);
  } else if (n->type == NoticeType::kClick) {
    e.count = n->count.value_or(1.0);
  } else if (n->type == NoticeType::kLoss) {
    e.reason = std::to_string(n->loss_code);
  }

  // A charge without an open reservation (a restart, or the loss notice came first) takes
  // budget now, or is refused.
  bool took_budget = false;
  if (charge.value() > 0 && ledger.Reserved(key).value() == 0) {
    if (!ledger.TryReserve(slot, key, charge, e.ts_ms, e.ts_ms + m.cfg.reservation_timeout_ms)) {
      e.reason = "over_budget";
      refused = kOverBudget;
      charge = Micros(0);
    } else {
      took_budget = true;
    }
  }
  if (n->type == NoticeType::kBilling && refused == kApplied && !n->test) e.charged = true;

  OutboxEntry ob;
  ob.eid = e.eid;
  ob.topic = m.events->events_topic();
  ob.key = e.Key();
  ob.payload = EncodeEvent(e);
  // Refused notices are still de-duplicated, so that a retry is not counted twice.
  auto applied = m.state->ApplyOnce(n->bid_ms / Bidder::Impl::kHourMs, once, n->advertiser,
                                    day_name, charge, &ob, e.arm);
  if (!applied.ok() || !*applied) {
    if (took_budget) ledger.Release(key);
    count(applied.ok() ? kDuplicate : kError);  // a repeated notice changes nothing
    if (!applied.ok()) {
      m.StateFailed(applied.status());
      res.status = 503;
    }
    return res;
  }
  if (refused != kApplied) {
    count(refused);
    // Still 200 (the notice is taken and logged), but the body says it was not booked, so that
    // an exchange or a reconciliation job can tell a refused charge from a booked one.
    res.body = std::string("refused: ") + kNoticeResultNames[refused] + "\n";
  } else {
    if (n->type == NoticeType::kBilling && !n->test) {
      ledger.Settle(slot, key, charge);
    } else if (n->type == NoticeType::kLoss) {
      ledger.Release(key);
    }
    if (!n->test)
      m.goals.Book(m.cfg.advertisers[k], e.arm, n->type, charge, e.count, e.price_micros);
    count(kApplied);
  }
  m.events->LogOutboxed(ob.topic, ob.key, ob.payload, ob.eid);
  return res;
}

}  // namespace

void GoalCounters::Book(const Advertiser& a, Arm arm, NoticeType type, Micros charge, double count,
                        int64_t value_micros) {
  if (!a.goal.HasTarget() || spend.empty()) return;
  const size_t at = 2 * static_cast<size_t>(a.agent) + static_cast<size_t>(arm);
  if (type == NoticeType::kBilling) {
    spend[at].Inc(static_cast<uint64_t>(std::max<int64_t>(0, charge.value())));
  } else if (type == NoticeType::kConversion) {
    conversions[at].Inc(static_cast<uint64_t>(std::llround(std::max(0.0, count) * 1e6)));
    value[at].Inc(static_cast<uint64_t>(std::max<int64_t>(0, value_micros)));
    const double allows = a.goal.kind == GoalKind::kConversions
                              ? static_cast<double>(a.goal.target_cpa.value()) * count
                              : static_cast<double>(value_micros) / a.goal.target_roas;
    allowed[at].Inc(static_cast<uint64_t>(std::llround(std::max(0.0, allows))));
  }
}

HttpResult Bidder::HandleNotice(std::string_view target) { return ApplyNotice(*impl_, target); }

HttpResult ApplyNotice(Bidder::Impl& m, std::string_view target, int64_t received_ms) {
  const bool forwarded = received_ms >= 0;
  m.counters.requests_notice.Inc();
  auto n = ParseNotice(target);
  if (!n.ok()) {
    m.counters.bad_requests.Inc();
    return Answer(400, n.status().message() + "\n");
  }
  auto it = m.index_of.find(n->advertiser);
  if (it == m.index_of.end()) {
    m.counters.bad_requests.Inc();
    return Answer(400, "unknown advertiser\n");
  }
  const size_t k = it->second;
  const int t = static_cast<int>(n->type);
  auto count = [&](NoticeResult result) { m.counters.notices[t][result].Inc(); };

  // Only for a bid of the market's bidders: the signed terms (its owner's name among them) must
  // match. A forwarded notice must be one of this bidder's bids.
  if (!n->bid_price || n->bid_ms < 0 || !n->cluster || !n->arm ||
      (forwarded && n->owner != m.name) ||
      !m.signer->Verify({n->auction_id, n->imp_id, n->advertiser, *n->bid_price, n->bid_ms, n->test,
                         *n->cluster, *n->arm, n->owner, n->deal},
                        n->sig)) {
    count(kForged);
    return Answer(403, "not a notice for a bid of this bidder (signature)\n");
  }

  // Past the retention its dedupe key may have been deleted: applying it could count it twice.
  if (m.clock->UnixMs() - n->bid_ms > m.RetentionMs()) {
    count(kLate);
    return Answer(410, "notice of a bid older than notice_retention_hours\n");
  }

  // Once per bid: (type, auction, imp, advertiser), length-prefixed so that no two bids' keys
  // meet. Several seats can win one impression on a multi-slot exchange (the simulated GSP
  // sells 3 slots per request).
  const std::string once = std::string(NoticeTypeName(n->type)) + "/" +
                           BidIdentity(n->auction_id, n->imp_id, n->advertiser);
  // Another bidder's bid (it shares this one's notice secret): its owner books it.
  if (!n->owner.empty() && n->owner != m.name && m.leases != nullptr) {
    return Forward(m, *n, target, once);
  }

  // Money from outside is bounded: a conversion is worth at most what the advertiser declared.
  if (n->type == NoticeType::kConversion && n->value &&
      *n->value > MaxConversionValue(m.cfg.advertisers[k])) {
    count(kAboveMaxValue);
    uint64_t skipped = 0;
    if (m.value_refusals.Allow(&skipped)) {
      log::Get("notices").warn(
          "conversion notice of advertiser {} refused: value {} micros above its "
          "max_conversion_value {} ({} more since)",
          n->advertiser, n->value->value(), MaxConversionValue(m.cfg.advertisers[k]).value(),
          skipped);
    }
    return Answer(400, "conversion value above the advertiser's max_conversion_value\n");
  }
  return BookNotice(m, *n, k, once, received_ms);
}

}  // namespace rtb::bidder
