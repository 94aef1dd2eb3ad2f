#include "rtb/core/ab_report.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>

#include "rtb/core/clock.h"
#include "rtb/core/line_reader.h"
#include "rtb/core/metrics.h"
#include "rtb/core/report.h"
#include "rtb/core/rng.h"
#include "rtb/core/text.h"

namespace rtb {

namespace {

// a + b, held at the int64 range instead of wrapping. AbTally::Add keeps every sum of spend and
// revenue in range; budgets are the config's, summed over the days of the events.
Micros SaturatingAdd(Micros a, Micros b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a.value(), b.value(), &sum)) return Micros(sum);
  return b.value() > 0 ? Micros::Max() : Micros(std::numeric_limits<int64_t>::min());
}

// Why an event's money is refused, or empty: a negative price or value (bid, win and billing
// prices are CPMs, a conversion's is its order value).
std::string NegativeMoney(const Event& e) {
  if (e.price_micros >= 0) return "";
  if (e.type == "bid" || e.type == "win" || e.type == "billing" || e.type == "conversion") {
    return "event: negative " + std::string(e.type == "conversion" ? "conversion value" : "price") +
           " (" + std::to_string(e.price_micros) + " micros) refused";
  }
  return "";
}

}  // namespace

ArmTotals& ArmTotals::operator+=(const ArmTotals& o) {
  budget = SaturatingAdd(budget, o.budget);
  spend = SaturatingAdd(spend, o.spend);
  revenue = SaturatingAdd(revenue, o.revenue);
  impressions += o.impressions;
  clicks += o.clicks;
  conversions += o.conversions;
  bids += o.bids;
  return *this;
}

double ArmTotals::Cost() const { return SafeDiv(spend.units(), budget.units()); }
double ArmTotals::Roi() const { return SafeDiv(revenue.units(), spend.units()); }
double ArmTotals::Cpa() const { return SafeDiv(spend.units(), conversions); }
double ArmTotals::Cpc() const { return SafeDiv(spend.units(), clicks); }
double ArmTotals::WinRate() const {
  return SafeDiv(static_cast<double>(impressions), static_cast<double>(bids));
}

AbTally::AbTally(std::vector<AbAdvertiser> advertisers, double learned_share, int64_t bucket_ms)
    : advertisers_(std::move(advertisers)),
      share_(learned_share),
      bucket_ms_(std::max<int64_t>(1, bucket_ms)) {
  for (size_t k = 0; k < advertisers_.size(); ++k) {
    index_of_[advertisers_[k].id] = k;
    agents_ = std::max(agents_, advertisers_[k].agent + 1);
  }
}

Status AbTally::Booking(const Event& e, Micros* charge, Micros* value) const {
  if (std::string why = NegativeMoney(e); !why.empty()) return Status::InvalidArgument(why);
  const bool charged = e.type == "billing" && e.charged;
  // As the bidder books a CPM price: price / 1000, rounded half up (without price + 500's
  // overflow).
  *charge = Micros(charged ? e.price_micros / 1000 + (e.price_micros % 1000 >= 500 ? 1 : 0) : 0);
  *value = Micros(e.type == "conversion" ? e.price_micros : 0);
  auto units = [](Micros m) { return MicrosDecimal(m.value(), MicrosFraction::kTrimmed); };
  if (const auto it = index_of_.find(e.advertiser); it != index_of_.end()) {
    const AbAdvertiser& adv = advertisers_[it->second];
    if (adv.daily_budget.value() > 0 && *charge > adv.daily_budget) {
      return Status::InvalidArgument("event: billing charges " + units(*charge) +
                                     ", more than advertiser " + std::to_string(adv.id) +
                                     "'s whole daily budget (" + units(adv.daily_budget) +
                                     "): refused");
    }
    const double most = static_cast<double>(adv.max_conversion_value.value()) *
                        std::max(1.0, e.type == "conversion" ? e.count : 1.0);
    if (adv.max_conversion_value.value() > 0 && static_cast<double>(value->value()) > most) {
      return Status::InvalidArgument("event: conversion value " + units(*value) +
                                     " above advertiser " + std::to_string(adv.id) +
                                     "'s max_conversion_value (" + units(adv.max_conversion_value) +
                                     (e.count > 1 ? " per conversion" : "") + "): refused");
    }
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(spend_total_, charge->value(), &sum) ||
      __builtin_add_overflow(revenue_total_, value->value(), &sum)) {
    return Status::InvalidArgument("event: " + e.type + " of " + std::to_string(e.price_micros) +
                                   " micros would take the booked " +
                                   (charged ? "spend" : "revenue") +
                                   " past the int64 range of micros: refused");
  }
  return Status::Ok();
}

Status AbTally::Add(const Event& e) {
  if (e.test) {
    ++test_;
    return Status::Ok();
  }
  Micros charge, value;
  RTB_RETURN_IF_ERROR(Booking(e, &charge, &value));
  if (!e.eid.empty() && !eids_.insert(e.eid).second) {
    ++duplicates_;
    return Status::Ok();
  }
  ++events_;
  if (e.type == "nobid") return Status::Ok();
  auto it = index_of_.find(e.advertiser);
  if (it == index_of_.end()) {
    ++unknown_;
    if (auto u = unknown_ids_.find(e.advertiser); u != unknown_ids_.end()) {
      ++u->second;
    } else if (unknown_ids_.size() < kMaxUnknownIds) {
      unknown_ids_.emplace(e.advertiser, 1);
    }
    return Status::Ok();
  }
  spend_total_ += charge.value();  // in range: Booking checked it
  revenue_total_ += value.value();
  const size_t k = it->second;
  const int64_t t = e.sim_ms >= 0 ? e.sim_ms : e.ts_ms;
  const int64_t day = t / kDayMs;
  const int arm = static_cast<int>(e.arm);
  Bucket& b = buckets_[t / bucket_ms_];
  for (ArmTotals* c : {&cells_[{day, arm, k}], e.deal.empty() ? nullptr : &deals_[e.deal]}) {
    if (c == nullptr) continue;
    if (e.type == "bid") {
      ++c->bids;
    } else if (e.type == "billing" && e.charged) {
      c->spend += charge;
      ++c->impressions;
    } else if (e.type == "click") {
      c->clicks += e.count;
    } else if (e.type == "conversion") {
      c->conversions += e.count;
      c->revenue += value;
    }
  }
  if (e.type == "billing" && e.charged) {
    b.spend[arm] += charge;
    spend_by_bucket_[{day, (t % kDayMs) / bucket_ms_, arm, advertisers_[k].agent}] +=
        charge.value();
  } else if (e.type == "conversion") {
    b.revenue[arm] += value;
  }
  return Status::Ok();
}

std::vector<int64_t> AbTally::Days() const {
  std::set<int64_t> days;
  for (const auto& [key, t] : cells_) days.insert(std::get<0>(key));
  return {days.begin(), days.end()};
}

ArmTotals AbTally::Of(int64_t day, Arm arm, size_t adv) const {
  ArmTotals t;
  auto it = cells_.find({day, static_cast<int>(arm), adv});
  if (it != cells_.end()) t = it->second;
  t.budget = ArmBudget(advertisers_[adv].daily_budget, arm, share_);
  return t;
}

ArmTotals AbTally::OfAgent(int64_t day, Arm arm, int agent) const {
  ArmTotals t;
  for (size_t k = 0; k < advertisers_.size(); ++k) {
    if (advertisers_[k].agent == agent) t += Of(day, arm, k);
  }
  return t;
}

ArmTotals AbTally::OfDay(int64_t day, Arm arm) const {
  ArmTotals t;
  for (size_t k = 0; k < advertisers_.size(); ++k) t += Of(day, arm, k);
  return t;
}

ArmTotals AbTally::OfArm(Arm arm) const {
  ArmTotals t;
  for (const int64_t d : Days()) t += OfDay(d, arm);
  return t;
}

int64_t AbTally::buckets_per_day() const { return (kDayMs + bucket_ms_ - 1) / bucket_ms_; }

std::vector<double> AbTally::SpendCurve(int64_t day, Arm arm, int agent) const {
  std::vector<double> curve(static_cast<size_t>(buckets_per_day()), 0.0);
  double sum = 0;
  for (int64_t b = 0; b < buckets_per_day(); ++b) {
    auto it = spend_by_bucket_.find({day, b, static_cast<int>(arm), agent});
    if (it != spend_by_bucket_.end()) sum += Micros(it->second).units();
    curve[static_cast<size_t>(b)] = sum;
  }
  return curve;
}

RatioCi AbTally::Bootstrap(bool roi, int resamples, uint64_t seed) const {
  std::vector<const Bucket*> bs;
  for (const auto& [k, b] : buckets_) bs.push_back(&b);
  // learned per share / manual per share (revenue), or ROI over ROI.
  auto ratio = [&](const std::vector<size_t>& pick) {
    double rev[kArms] = {0, 0}, spend[kArms] = {0, 0};
    for (const size_t i : pick) {
      for (int a = 0; a < kArms; ++a) {
        rev[a] += bs[i]->revenue[a].units();
        spend[a] += bs[i]->spend[a].units();
      }
    }
    if (roi) return SafeDiv(SafeDiv(rev[0], spend[0]), SafeDiv(rev[1], spend[1]));
    return SafeDiv(rev[0] / share_, rev[1] / (1.0 - share_));
  };
  RatioCi r;
  r.buckets = static_cast<int>(bs.size());
  if (bs.empty() || share_ <= 0 || share_ >= 1) {
    r.ratio = r.lo = r.hi = kNaN;
    return r;
  }
  std::vector<size_t> all(bs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  r.ratio = ratio(all);
  Rng rng(seed);
  std::vector<double> draws;
  std::vector<size_t> pick(bs.size());
  for (int s = 0; s < resamples; ++s) {
    for (size_t& p : pick) p = static_cast<size_t>(rng.UniformInt(bs.size()));
    const double v = ratio(pick);
    if (std::isfinite(v)) draws.push_back(v);
  }
  r.resamples = static_cast<int>(draws.size());
  if (draws.empty()) {
    r.lo = r.hi = kNaN;
    return r;
  }
  std::sort(draws.begin(), draws.end());
  auto at = [&](double q) {
    const size_t i = std::min(draws.size() - 1, static_cast<size_t>(q * (draws.size() - 1) + 0.5));
    return draws[i];
  };
  r.lo = at(0.025);
  r.hi = at(0.975);
  return r;
}

RatioCi AbTally::RevenueRatio(int resamples, uint64_t seed) const {
  return Bootstrap(false, resamples, seed);
}
RatioCi AbTally::RoiRatio(int resamples, uint64_t seed) const {
  return Bootstrap(true, resamples, seed);
}

}  // namespace rtb

namespace rtb {

namespace {

// One line of a dump: added, skipped (blank), or an error naming name:line_no.
Status AddEventLine(std::string_view line, int64_t line_no, const std::string& name,
                    bool skip_malformed, AbTally* tally, int64_t* malformed,
                    std::string* first_error) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return Status::Ok();
  auto e = DecodeEvent(line);
  const Status st = e.ok() ? tally->Add(*e) : e.status();
  if (!st.ok()) {
    const std::string where = name + ":" + std::to_string(line_no) + ": " + st.message();
    if (!skip_malformed) return Status::InvalidArgument(where);
    if (malformed != nullptr && (*malformed)++ == 0 && first_error != nullptr) {
      *first_error = where;
    }
  }
  return Status::Ok();
}

// Every line of in, in bounded memory; running out of memory (the tally's eids and cells grow
// with the events) is an error, not an exception.
Status AddEvents(LineReader& in, bool skip_malformed, AbTally* tally, int64_t* malformed,
                 std::string* first_error) {
  try {
    std::string_view line;
    while (in.Next(&line)) {
      RTB_RETURN_IF_ERROR(AddEventLine(line, in.line_no(), in.name(), skip_malformed, tally,
                                       malformed, first_error));
    }
    return in.status();
  } catch (const std::bad_alloc&) {
    return Status::Unavailable(in.name() + ":" + std::to_string(in.line_no()) +
                               ": out of memory holding the events read so far");
  }
}

}  // namespace

Status AddEventLines(std::string_view text, const std::string& name, bool skip_malformed,
                     AbTally* tally, int64_t* malformed, std::string* first_error) {
  LineReader in(text, name);
  return AddEvents(in, skip_malformed, tally, malformed, first_error);
}

Status AddEventStream(std::istream& in, const std::string& name, bool skip_malformed,
                      AbTally* tally, int64_t* malformed, std::string* first_error) {
  LineReader lines(in, name);
  return AddEvents(lines, skip_malformed, tally, malformed, first_error);
}

Status AddEventFile(const std::string& path, bool skip_malformed, AbTally* tally,
                    int64_t* malformed, std::string* first_error) {
  LineReader in(path, "events dump");
  return AddEvents(in, skip_malformed, tally, malformed, first_error);
}

namespace {

using nlohmann::json;

// A number, or null when it is not finite (a ratio of nothing).
json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json TotalsJson(const ArmTotals& a) {
  return {{"budget", a.budget.units()},
          {"spend", a.spend.units()},
          {"revenue", a.revenue.units()},
          {"impressions", a.impressions},
          {"clicks", a.clicks},
          {"conversions", a.conversions},
          {"bids", a.bids},
          {"cost", Num(a.Cost())},
          {"roi", Num(a.Roi())},
          {"cpa", Num(a.Cpa())},
          {"cpc", Num(a.Cpc())},
          {"win_rate", Num(a.WinRate())}};
}

json CiJson(const RatioCi& r) {
  return {{"ratio", Num(r.ratio)},
          {"ci95", {Num(r.lo), Num(r.hi)}},
          {"resamples", r.resamples},
          {"buckets", r.buckets}};
}

std::string DayName(int64_t day) {
  if (day < 10'000) return "day " + std::to_string(day);  // a simulated day
  return UtcDate(day);
}

constexpr Arm kBoth[] = {Arm::kLearned, Arm::kManual};

}  // namespace

AbTally::GoalTotals AbTally::GoalOf(Arm arm, size_t adv) const {
  const Goal& goal = advertisers_[adv].goal;
  GoalTotals g;
  for (const int64_t day : Days()) {
    const ArmTotals x = Of(day, arm, adv);
    const GoalScore s = ScoreGoal(goal, x.conversions, x.spend.units(), x.revenue.units());
    g.conversions += x.conversions;
    g.spend += x.spend.units();
    g.value += x.revenue.units();
    g.score += s.score;
    ++g.days;
    g.days_met += s.met ? 1 : 0;
  }
  g.overall = ScoreGoal(goal, g.conversions, g.spend, g.value);
  return g;
}

bool AbTally::AnyTarget() const {
  return std::any_of(advertisers_.begin(), advertisers_.end(),
                     [](const AbAdvertiser& a) { return a.goal.HasTarget(); });
}

std::string AbReportJson(const AbTally& t, const AbReportInfo& info) {
  json j;
  j["kind"] = "ab";
  j["title"] = info.title;
  j["source"] = info.source;
  j["currency"] = info.currency;
  j["learned_share"] = t.learned_share();
  for (const Arm a : kBoth) j["arms"][ArmName(a)] = TotalsJson(t.OfArm(a));
  j["comparison"] = {{"revenue_ratio", CiJson(t.RevenueRatio())},
                     {"roi_ratio", CiJson(t.RoiRatio())},
                     {"per_share",
                      "revenue ratios compare each arm per unit of its share: "
                      "(learned / s) / (manual / (1 - s))"}};
  json days = json::array();
  for (const int64_t d : t.Days()) {
    json day = {{"day", d}, {"name", DayName(d)}};
    for (const Arm a : kBoth) {
      json arm = TotalsJson(t.OfDay(d, a));
      for (int i = 0; i < t.agents(); ++i) {
        json ag = TotalsJson(t.OfAgent(d, a, i));
        ag["agent"] = i;
        arm["agents"].push_back(ag);
      }
      for (size_t k = 0; k < t.advertisers().size(); ++k) {
        json ad = TotalsJson(t.Of(d, a, k));
        ad["id"] = t.advertisers()[k].id;
        ad["name"] = t.advertisers()[k].name;
        ad["agent"] = t.advertisers()[k].agent;
        arm["advertisers"].push_back(ad);
      }
      day["arms"][ArmName(a)] = arm;
    }
    days.push_back(day);
  }
  j["days"] = days;
  json goals = json::array();
  for (size_t k = 0; k < t.advertisers().size(); ++k) {
    const AbAdvertiser& adv = t.advertisers()[k];
    json g = {{"id", adv.id},
              {"name", adv.name},
              {"agent", adv.agent},
              {"goal", GoalKindName(adv.goal.kind)}};
    if (adv.goal.kind == GoalKind::kConversions) g["target_cpa"] = adv.goal.target_cpa.units();
    if (adv.goal.kind == GoalKind::kValue) g["target_roas"] = adv.goal.target_roas;
    for (const Arm a : kBoth) {
      const AbTally::GoalTotals x = t.GoalOf(a, k);
      g["arms"][ArmName(a)] = {{"conversions", x.conversions},
                               {"spend", x.spend},
                               {"value", x.value},
                               {"realised", Num(x.overall.realised)},
                               {"met", x.overall.met},
                               {"score", x.score},
                               {"days", x.days},
                               {"days_met", x.days_met}};
    }
    goals.push_back(g);
  }
  j["goals"] = goals;
  json deals = json::object();
  for (const auto& [id, a] : t.deals()) deals[id] = TotalsJson(a);
  j["deals"] = deals;
  j["events"] = {{"counted", t.events()},
                 {"test_skipped", t.skipped_test()},
                 {"duplicates_skipped", t.duplicates()},
                 {"unknown_advertiser", t.unknown_advertiser()},
                 {"malformed_skipped", info.malformed}};
  j["notes"] = info.notes;
  j["rerun"] = info.rerun;
  return j.dump(2) + "\n";
}

// The report's closing notes: the caller's, the definitions, what was skipped, the rerun.
std::vector<std::string> ReportNotes(const AbTally& t, const AbReportInfo& info) {
  std::vector<std::string> notes = info.notes;
  notes.push_back(
      "Definitions: spend = charged billing notices; impressions = charged billings; "
      "revenue = conversion values; COST = spend / budget; ROI = revenue / spend; "
      "CPA = spend / conversions; CPC = spend / clicks; win rate = impressions / "
      "bids.");
  notes.push_back("Skipped: " + std::to_string(t.skipped_test()) + " test events, " +
                  std::to_string(t.duplicates()) + " repeated events, " +
                  std::to_string(info.malformed) + " malformed lines; " +
                  std::to_string(t.unknown_advertiser()) +
                  " events of advertisers not in the config.");
  if (!info.rerun.empty()) notes.push_back("Rerun: " + info.rerun);
  return notes;
}

// "Per deal": the bids made through each private deal and what their notices booked.
void AddDealsSection(const AbTally& t, const std::string& cur, doc::Document& d) {
  using doc::Fmt;
  using doc::Value;
  d.Add(doc::Heading{2, "Per deal, over every day"});
  doc::Table per_deal;
  per_deal.caption =
      "Bids made through each private deal (dealid) and what their notices booked; this spend "
      "is part of the advertisers' budget spend above.";
  per_deal.columns = {{"deal", Fmt::kText},           {"bids", Fmt::kCount},
                      {"impressions", Fmt::kCount},   {"spend" + cur, Fmt::kMoney},
                      {"clicks", Fmt::kCount},        {"conversions", Fmt::kCount},
                      {"revenue" + cur, Fmt::kMoney}, {"ROI", Fmt::kRatio}};
  for (const auto& [id, a] : t.deals()) {
    per_deal.rows.push_back({Value::Text(id), Value::Num(static_cast<double>(a.bids)),
                             Value::Num(static_cast<double>(a.impressions)),
                             Value::Num(a.spend.units()), Value::Num(a.clicks),
                             Value::Num(a.conversions), Value::Num(a.revenue.units()),
                             Value::Num(a.Roi())});
  }
  d.Add(std::move(per_deal));
}

// "Goals": each advertiser with a target, per arm: its target, what it bought, the realised CPA
// or ROAS over every day, the AuctionNet-style score summed over the days, and the days the
// target held; then per arm the summed score and how many advertisers missed their target.
void AddGoalsSection(const AbTally& t, const std::string& cur, doc::Document& d) {
  using doc::Fmt;
  using doc::Value;
  d.Add(doc::Heading{2, "Goals"});
  doc::Table g;
  g.caption =
      "Each day of each arm scored against the advertiser's goal: conversions x min(1, (target "
      "CPA / realised CPA)^2), or value x min(1, (realised ROAS / target ROAS)^2); the score "
      "column sums the days. Realised and met are over every day's totals.";
  g.columns = {{"advertiser, arm", Fmt::kText},
               {"goal", Fmt::kText},
               {"spend" + cur, Fmt::kMoney},
               {"conversions", Fmt::kCount},
               {"value" + cur, Fmt::kMoney},
               {"realised CPA or ROAS", Fmt::kNumber},
               {"met", Fmt::kText},
               {"days met", Fmt::kText},
               {"score", Fmt::kNumber}};
  struct ArmSum {
    double cpa_score = 0, roas_score = 0;  // conversions; currency
    int targets = 0, missed = 0;
  } sums[2];
  for (size_t k = 0; k < t.advertisers().size(); ++k) {
    const AbAdvertiser& adv = t.advertisers()[k];
    if (!adv.goal.HasTarget()) continue;
    for (const Arm a : kBoth) {
      const AbTally::GoalTotals x = t.GoalOf(a, k);
      ArmSum& sum = sums[static_cast<int>(a)];
      (adv.goal.kind == GoalKind::kConversions ? sum.cpa_score : sum.roas_score) += x.score;
      ++sum.targets;
      sum.missed += x.overall.met ? 0 : 1;
      const std::string name =
          (adv.name.empty() ? "#" + std::to_string(adv.id) : adv.name) + ", " + ArmName(a);
      g.rows.push_back({Value::Text(name), Value::Text(DescribeGoal(adv.goal)), Value::Num(x.spend),
                        Value::Num(x.conversions), Value::Num(x.value),
                        Value::Num(x.overall.realised), Value::Text(x.overall.met ? "yes" : "no"),
                        Value::Text(std::to_string(x.days_met) + " of " + std::to_string(x.days)),
                        Value::Num(x.score)});
    }
  }
  d.Add(std::move(g));
  std::vector<std::string> lines;
  for (const Arm a : kBoth) {
    const ArmSum& sum = sums[static_cast<int>(a)];
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "%s: score %.2f (target CPA, in conversions) and %.2f (target ROAS, in value) "
                  "over %d advertisers with a target, %d missed it",
                  ArmName(a), sum.cpa_score, sum.roas_score, sum.targets, sum.missed);
    lines.push_back(buf);
  }
  d.Add(doc::Bullets{lines});
}

doc::Document AbReportDocument(const AbTally& t, const AbReportInfo& info) {
  using doc::Fmt;
  using doc::Value;
  doc::Document d;
  d.title = info.title;
  const std::string cur = " (" + info.currency + ")";
  char share[64];
  std::snprintf(share, sizeof share, "%.0f%% of users and of every budget",
                t.learned_share() * 100);
  d.Add(doc::KeyValues{{{"events", info.source},
                        {"learned arm", share},
                        {"days", std::to_string(t.Days().size())},
                        {"events counted", doc::Grouped(static_cast<double>(t.events()), 0)}}});

  auto totals_columns = [&](const std::string& first) {
    return std::vector<doc::Column>{{first, Fmt::kText},          {"budget" + cur, Fmt::kMoney},
                                    {"spend" + cur, Fmt::kMoney}, {"COST", Fmt::kPercent, 1},
                                    {"impressions", Fmt::kCount}, {"clicks", Fmt::kCount},
                                    {"conversions", Fmt::kCount}, {"revenue" + cur, Fmt::kMoney},
                                    {"ROI", Fmt::kRatio},         {"CPA" + cur, Fmt::kMoney},
                                    {"CPC" + cur, Fmt::kMoney},   {"win rate", Fmt::kPercent, 1}};
  };
  auto totals_row = [](const std::string& name, const ArmTotals& a) {
    return std::vector<Value>{Value::Text(name),
                              Value::Num(a.budget.units()),
                              Value::Num(a.spend.units()),
                              Value::Num(a.Cost()),
                              Value::Num(static_cast<double>(a.impressions)),
                              Value::Num(a.clicks),
                              Value::Num(a.conversions),
                              Value::Num(a.revenue.units()),
                              Value::Num(a.Roi()),
                              Value::Num(a.Cpa()),
                              Value::Num(a.Cpc()),
                              Value::Num(a.WinRate())};
  };

  d.Add(doc::Heading{2, "The arms"});
  doc::Table arms;
  arms.columns = totals_columns("arm");
  for (const Arm a : kBoth) arms.rows.push_back(totals_row(ArmName(a), t.OfArm(a)));
  d.Add(std::move(arms));
  const RatioCi rev = t.RevenueRatio(), roi = t.RoiRatio();
  doc::Table ratios;
  ratios.caption =
      "Learned against manual, with 95% bootstrap intervals over time buckets. Revenue is "
      "compared per unit of each arm's share of users and budget.";
  ratios.columns = {{"measure", Fmt::kText},
                    {"learned / manual", Fmt::kRatio},
                    {"95% interval, low", Fmt::kRatio},
                    {"95% interval, high", Fmt::kRatio},
                    {"buckets", Fmt::kCount}};
  ratios.rows.push_back({Value::Text("revenue (per share)"), Value::Num(rev.ratio),
                         Value::Num(rev.lo), Value::Num(rev.hi),
                         Value::Num(static_cast<double>(rev.buckets))});
  ratios.rows.push_back({Value::Text("ROI"), Value::Num(roi.ratio), Value::Num(roi.lo),
                         Value::Num(roi.hi), Value::Num(static_cast<double>(roi.buckets))});
  d.Add(std::move(ratios));

  d.Add(doc::Heading{2, "Per day and agent"});
  doc::Table per_day;
  per_day.columns = totals_columns("day, arm, agent");
  for (const int64_t day : t.Days()) {
    for (const Arm a : kBoth) {
      per_day.rows.push_back(
          totals_row(DayName(day) + ", " + ArmName(a) + ", all", t.OfDay(day, a)));
      for (int i = 0; i < t.agents(); ++i) {
        per_day.rows.push_back(
            totals_row(DayName(day) + ", " + ArmName(a) + ", agent " + std::to_string(i + 1),
                       t.OfAgent(day, a, i)));
      }
    }
  }
  d.Add(std::move(per_day));

  d.Add(doc::Heading{2, "Spend over the day"});
  const std::vector<int64_t> days = t.Days();
  if (!days.empty()) {
    const int64_t last = days.back();
    const double bucket_h = 24.0 / static_cast<double>(t.buckets_per_day());
    for (int i = 0; i < t.agents(); ++i) {
      doc::Chart c;
      c.title = "Agent " + std::to_string(i + 1) + ", " + DayName(last) +
                ": spend so far against each arm's budget";
      c.y = {"spend" + cur, Fmt::kMoney};
      // The x axis ends at the last hour with spend (a simulated day can be shorter than 24 h).
      double last_h = std::min(24.0, bucket_h);
      for (const Arm a : kBoth) {
        const std::vector<double> curve = t.SpendCurve(last, a, i);
        double before = 0;
        for (size_t b = 0; b < curve.size(); ++b) {
          if (curve[b] > before) last_h = std::max(last_h, bucket_h * static_cast<double>(b + 1));
          before = curve[b];
        }
      }
      c.x = {"hour of the day", Fmt::kNumber, 0, std::min(24.0, std::ceil(last_h))};
      for (const Arm a : kBoth) {
        doc::Series s;
        s.name = ArmName(a);
        s.markers = false;
        const std::vector<double> curve = t.SpendCurve(last, a, i);
        s.x.push_back(0);
        s.y.push_back(0);
        for (size_t b = 0; b < curve.size(); ++b) {
          const double h = bucket_h * static_cast<double>(b + 1);
          if (h > c.x.max + 1e-9) break;
          s.x.push_back(h);
          s.y.push_back(curve[b]);
        }
        c.series.push_back(std::move(s));
        c.references.push_back(
            {std::string(ArmName(a)) + " budget", t.OfAgent(last, a, i).budget.units()});
      }
      d.Add(std::move(c));
    }
  }

  d.Add(doc::Heading{2, "Per advertiser, over every day"});
  doc::Table per_adv;
  per_adv.columns = totals_columns("advertiser, arm");
  for (size_t k = 0; k < t.advertisers().size(); ++k) {
    const AbAdvertiser& adv = t.advertisers()[k];
    for (const Arm a : kBoth) {
      ArmTotals sum;
      for (const int64_t day : days) sum += t.Of(day, a, k);
      const std::string name = (adv.name.empty() ? "#" + std::to_string(adv.id) : adv.name) +
                               " (agent " + std::to_string(adv.agent + 1) + "), " + ArmName(a);
      per_adv.rows.push_back(totals_row(name, sum));
    }
  }
  d.Add(std::move(per_adv));

  if (t.AnyTarget()) AddGoalsSection(t, cur, d);

  if (!t.deals().empty()) AddDealsSection(t, cur, d);

  const std::vector<std::string> notes = ReportNotes(t, info);
  d.Add(doc::Heading{2, "Notes"});
  d.Add(doc::Bullets{notes});
  return d;
}

Status WriteAbReportFiles(const AbTally& t, const AbReportInfo& info, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": " + ec.message());
  const doc::Document d = AbReportDocument(t, info);
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.json", AbReportJson(t, info)));
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.md", doc::RenderMarkdown(d)));
  return WriteFileAtomic(dir + "/report.html", doc::RenderHtml(d));
}

}  // namespace rtb
