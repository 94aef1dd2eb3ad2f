#include "rtb/simulator/outcome_replay.h"

#include <cmath>

#include "rtb/core/bid.h"
#include "rtb/core/line_reader.h"
#include "rtb/core/text.h"

namespace rtb::sim {
namespace {

std::string BidKey(const Event& e) {
  return e.auction_id + '\x1f' + e.imp_id + '\x1f' + std::to_string(e.advertiser);
}

void ApplyNotice(const Event& e, LoggedBid* b) {
  if (e.type == "win" || e.type == "billing") {
    // The billing price is what was charged; a win notice alone also shows the clearing price.
    if (!b->won || e.type == "billing") b->price_micros = e.price_micros;
    b->won = true;
  } else if (e.type == "click") {
    b->clicks += e.count;
  } else if (e.type == "conversion") {
    b->conversions += e.count;
    b->value_micros += e.price_micros;
  }
  // loss: nothing to record (the bid stays lost unless a win says otherwise).
}

}  // namespace

Status OutcomeLogBuilder::Add(const Event& e) {
  const bool priced = e.type == "bid" || e.type == "win" || e.type == "billing";
  if ((priced || e.type == "conversion") && e.price_micros < 0) {
    return Status::InvalidArgument("event: negative " +
                                   std::string(priced ? "price" : "conversion value") + " (" +
                                   std::to_string(e.price_micros) + " micros) refused");
  }
  const int64_t cost = e.type == "win" || e.type == "billing" ? e.price_micros / 1000 : 0;
  const int64_t value = e.type == "conversion" ? e.price_micros : 0;
  int64_t cost_total = 0, value_total = 0;
  if (__builtin_add_overflow(cost_total_, cost, &cost_total) ||
      __builtin_add_overflow(value_total_, value, &value_total)) {
    return Status::InvalidArgument(
        "event: " + e.type + " of " + std::to_string(e.price_micros) + " micros would take the " +
        (value > 0 ? "value" : "cost") +
        " of the log past the int64 range of micros (9223372036854.775807): refused");
  }
  cost_total_ = cost_total;
  value_total_ = value_total;
  ++log_.events;
  if (!e.eid.empty() && !seen_eids_.emplace(e.eid, true).second) {
    ++log_.duplicates;
    return Status::Ok();
  }
  if (e.type == "nobid" || e.test) {
    ++log_.other;
    return Status::Ok();
  }
  if (e.type == "bid") {
    const std::string key = BidKey(e);
    if (index_.count(key) != 0) return Status::Ok();  // the same bid logged twice (another eid)
    LoggedBid b;
    b.auction_id = e.auction_id;
    b.imp_id = e.imp_id;
    b.advertiser = e.advertiser;
    b.agent = e.agent;
    b.cluster = e.cluster;
    b.ts_ms = e.ts_ms;
    b.sim_ms = e.sim_ms;
    b.arm = e.arm;
    b.bid_micros = e.price_micros;
    b.pctr = e.pctr;
    b.pcvr = e.pcvr;
    b.alpha = e.alpha;
    b.first_price = e.at == 1;
    index_.emplace(key, log_.bids.size());
    log_.bids.push_back(std::move(b));
    return Status::Ok();
  }
  const auto it = index_.find(BidKey(e));
  if (it == index_.end()) {
    early_.push_back(e);  // may precede its bid (another partition); joined at Finish
    return Status::Ok();
  }
  ApplyNotice(e, &log_.bids[it->second]);
  return Status::Ok();
}

void OutcomeLogBuilder::AddMalformed(const std::string& where) {
  if (log_.skipped++ == 0) log_.first_skipped = where;
}

OutcomeLog OutcomeLogBuilder::Finish() {
  std::unordered_map<std::string, LoggedBid> orphaned;  // by bid key: what the notices say
  for (const Event& e : early_) {
    const std::string key = BidKey(e);
    const auto it = index_.find(key);
    if (it == index_.end()) {
      ++log_.orphans;
      ApplyNotice(e, &orphaned[key]);
    } else {
      ApplyNotice(e, &log_.bids[it->second]);
    }
  }
  for (const auto& [key, b] : orphaned) {
    if (!b.won) continue;
    ++log_.orphan_impressions;
    log_.orphan_cost_micros += b.price_micros / 1000;  // CPM: one impression's charge
  }
  early_.clear();
  return std::move(log_);
}

namespace {

// The dump's lines, read from `in` one at a time.
Result<OutcomeLog> ParseOutcomeLines(LineReader& in, bool skip_malformed) {
  OutcomeLogBuilder b;
  std::string_view line;
  while (in.Next(&line)) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto e = DecodeEvent(line);
    const Status st = e.ok() ? b.Add(*e) : e.status();
    if (!st.ok()) {
      const std::string where =
          in.name() + ":" + std::to_string(in.line_no()) + ": " + st.message();
      if (!skip_malformed) return Status::InvalidArgument(where);
      b.AddMalformed(where);
    }
  }
  RTB_RETURN_IF_ERROR(in.status());
  return b.Finish();
}

}  // namespace

Result<OutcomeLog> ParseOutcomeDump(std::string_view text, const std::string& name,
                                    bool skip_malformed) {
  LineReader in(text, name);
  return ParseOutcomeLines(in, skip_malformed);
}

Result<OutcomeLog> ReadOutcomeDump(const std::string& path, bool skip_malformed) {
  LineReader in(path, "events dump");
  return ParseOutcomeLines(in, skip_malformed);
}

OutcomeReplayResult ReplayOutcomes(const OutcomeLog& log, const OutcomeBid& bid,
                                   int64_t advertiser) {
  OutcomeReplayResult r;
  for (const LoggedBid& b : log.bids) {
    if (advertiser >= 0 && b.advertiser != advertiser) continue;
    Outcome& o = r.by_advertiser[b.advertiser];
    ++o.auctions;
    const int64_t nb = bid(b);
    // What the logged win says the new bid must reach, and what it then pays.
    const int64_t reach = b.first_price ? b.bid_micros : b.price_micros;
    if (b.won && nb >= reach) {
      ++o.impressions;
      o.clicks += b.clicks;
      o.conversions += b.conversions;
      o.cost = Micros(o.cost.value() + (b.first_price ? nb : b.price_micros) / 1000);
      o.revenue = Micros(o.revenue.value() + b.value_micros);
    } else if (b.won ? b.first_price : nb > b.bid_micros) {
      ++r.unknown;
    }
  }
  for (const auto& [adv, o] : r.by_advertiser) r.total += o;
  return r;
}

Result<OutcomeBid> OutcomeStrategy(const std::string& spec) {
  if (spec == "logged") return OutcomeBid([](const LoggedBid& b) { return b.bid_micros; });
  if (spec == "manual") {
    return OutcomeBid(
        [](const LoggedBid& b) { return UndoAdjustedBid(Micros(b.bid_micros), b.alpha).value(); });
  }
  if (spec.rfind("scale:", 0) == 0) {
    double f = 0;
    if (!ParseWhole(std::string_view(spec).substr(6), &f) || !(f >= 0)) {
      return Status::InvalidArgument("strategy '" + spec + "': scale:<factor >= 0>");
    }
    return OutcomeBid([f](const LoggedBid& b) {
      return static_cast<int64_t>(std::llround(static_cast<double>(b.bid_micros) * f));
    });
  }
  return Status::InvalidArgument("unknown strategy '" + spec +
                                 "' for outcome events (logged, manual, scale:<f>)");
}

}  // namespace rtb::sim
