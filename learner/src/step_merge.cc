#include "rtb/learner/step_merge.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "rtb/core/clock.h"

namespace rtb::learn {
namespace {

nlohmann::json TotalsJson(const StepTotals& t, bool with_eids) {
  nlohmann::json j;
  j["day"] = t.key.day;
  j["step"] = t.key.step;
  j["cost_micros"] = t.cost_micros;
  j["revenue_micros"] = t.revenue_micros;
  j["computed"] = t.computed;
  j["clicks"] = t.clicks;
  j["count_by_type"] = t.count_by_type;
  j["events"] = t.events;
  j["unattributed"] = t.unattributed;
  j["manual_arm"] = t.manual_arm;
  if (!t.by_advertiser.empty()) {  // [id, cost_micros, conversions, value_micros]
    auto& by = j["by_advertiser"] = nlohmann::json::array();
    for (const auto& [id, a] : t.by_advertiser) {
      by.push_back({id, a.cost_micros, a.conversions, a.value_micros});
    }
  }
  if (t.overflow) j["overflow"] = true;
  j["total_cost_micros"] = t.TotalCost();
  j["total_revenue_micros"] = t.TotalRevenue();
  if (with_eids) j["eids"] = t.eids;
  return j;
}

// *sum += x, saturating at int64's ends; says whether it did.
bool AddSaturating(int64_t* sum, int64_t x) {
  if (!__builtin_add_overflow(*sum, x, sum)) return false;
  *sum = x < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  return true;
}

int64_t SumSaturating(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) AddSaturating(&s, x);
  return s;
}

}  // namespace

int64_t StepTotals::TotalCost() const { return SumSaturating(cost_micros); }

int64_t StepTotals::TotalRevenue() const { return SumSaturating(revenue_micros); }

std::string StepTotals::SummaryJson() const { return TotalsJson(*this, false).dump(); }

StepMerger::StepMerger(int agents, int clusters, int64_t step_ms)
    : agents_(agents), clusters_(clusters), step_ms_(step_ms > 0 ? step_ms : 3'600'000) {}

StepKey StepMerger::KeyOf(const Event& e) const {
  const int64_t ms = e.sim_ms >= 0 ? e.sim_ms : e.ts_ms;
  return {ms / kDayMs, static_cast<int>((ms % kDayMs) / step_ms_)};
}

StepTotals& StepMerger::Open(const StepKey& k) {
  auto it = open_.find(k);
  if (it != open_.end()) return it->second;
  StepTotals t;
  t.key = k;
  const size_t pairs = static_cast<size_t>(agents_) * clusters_;
  t.cost_micros.assign(pairs, 0);
  t.revenue_micros.assign(pairs, 0);
  t.computed.assign(pairs, 0);
  t.clicks.assign(pairs, 0);
  return open_.emplace(k, std::move(t)).first->second;
}

MergeResult StepMerger::Add(const Event& e) {
  if (e.test) return MergeResult::kIgnored;
  const StepKey k = KeyOf(e);
  if (closed_ && k <= *closed_) {
    ++late_;
    return MergeResult::kLate;
  }
  StepTotals& t = Open(k);
  if (!t.eids.insert(e.eid).second) {
    ++duplicates_;
    return MergeResult::kDuplicate;
  }
  ++t.events;
  ++t.count_by_type[e.type];
  // The learner learns from the learned arm alone: the manual arm is the A/B test's control.
  if (e.arm == Arm::kManual) {
    ++t.manual_arm;
    return MergeResult::kMerged;
  }
  int j = e.cluster;
  if (j < 0 || j >= clusters_) {
    j = 0;
    if (e.type == "billing" || e.type == "conversion" || e.type == "click") ++t.unattributed;
  }
  // Bid computations: per agent, in the request's cluster.
  for (size_t i = 0; i < e.computed.size() && i < static_cast<size_t>(agents_); ++i) {
    t.overflow |= AddSaturating(&t.computed[i * clusters_ + j], e.computed[i]);
  }
  if (e.agent < 0 || e.agent >= agents_) return MergeResult::kMerged;
  const size_t p = static_cast<size_t>(e.agent) * clusters_ + j;
  if (e.type == "billing" && e.charged) {
    // One impression at the CPM price (price_micros / 1000 rounded, without overflowing).
    const int64_t cost = e.price_micros / 1000 + (e.price_micros % 1000 >= 500 ? 1 : 0);
    t.overflow |= AddSaturating(&t.cost_micros[p], cost);
    t.overflow |= AddSaturating(&t.by_advertiser[e.advertiser].cost_micros, cost);
  } else if (e.type == "conversion") {
    t.overflow |= AddSaturating(&t.revenue_micros[p], e.price_micros);
    AdvertiserTotals& a = t.by_advertiser[e.advertiser];
    t.overflow |= AddSaturating(&a.value_micros, e.price_micros);
    a.conversions += e.count;
  } else if (e.type == "click") {
    t.clicks[p] += e.count;
  }
  return MergeResult::kMerged;
}

int64_t StepMerger::EventsIn(const StepKey& k) const {
  auto it = open_.find(k);
  return it == open_.end() ? 0 : it->second.events;
}

StepTotals StepMerger::Close(const StepKey& k) {
  StepTotals out = Open(k);
  out.eids.clear();
  for (auto it = open_.begin(); it != open_.end() && it->first <= k;) it = open_.erase(it);
  if (!closed_ || *closed_ < k) closed_ = k;
  return out;
}

std::string StepMerger::ToJson() const {
  nlohmann::json j;
  j["agents"] = agents_;
  j["clusters"] = clusters_;
  j["step_ms"] = step_ms_;
  j["late"] = late_;
  j["duplicates"] = duplicates_;
  if (closed_) j["closed"] = {closed_->day, closed_->step};
  j["open"] = nlohmann::json::array();
  for (const auto& [k, t] : open_) j["open"].push_back(TotalsJson(t, true));
  return j.dump();
}

Result<StepMerger> StepMerger::FromJson(const std::string& json) {
  try {
    const auto j = nlohmann::json::parse(json);
    StepMerger m(j.at("agents").get<int>(), j.at("clusters").get<int>(),
                 j.at("step_ms").get<int64_t>());
    m.late_ = j.at("late").get<int64_t>();
    m.duplicates_ = j.at("duplicates").get<int64_t>();
    if (j.contains("closed")) m.closed_ = StepKey{j["closed"][0], j["closed"][1]};
    for (const auto& o : j.at("open")) {
      StepTotals& t = m.Open({o.at("day").get<int64_t>(), o.at("step").get<int>()});
      t.cost_micros = o.at("cost_micros").get<std::vector<int64_t>>();
      t.revenue_micros = o.at("revenue_micros").get<std::vector<int64_t>>();
      t.computed = o.at("computed").get<std::vector<int64_t>>();
      t.clicks = o.at("clicks").get<std::vector<double>>();
      t.count_by_type = o.at("count_by_type").get<std::map<std::string, int64_t>>();
      t.events = o.at("events").get<int64_t>();
      t.unattributed = o.at("unattributed").get<int64_t>();
      t.manual_arm = o.value("manual_arm", int64_t{0});
      t.overflow = o.value("overflow", false);
      t.eids = o.at("eids").get<std::set<std::string>>();
      for (const auto& a : o.value("by_advertiser", nlohmann::json::array())) {
        t.by_advertiser[a.at(0).get<int64_t>()] = {a.at(1).get<int64_t>(), a.at(2).get<double>(),
                                                   a.at(3).get<int64_t>()};
      }
    }
    return m;
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("step merger state: ") + e.what());
  }
}

}  // namespace rtb::learn
