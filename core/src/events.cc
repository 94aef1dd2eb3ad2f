#include "rtb/core/events.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "rtb/core/text.h"

namespace rtb {

std::string Event::Key() const {
  if (advertiser >= 0) return std::to_string(advertiser);
  // ArmPoint is the engine's stable string hash (the same on every platform and build).
  const int bucket = static_cast<int>(ArmPoint(auction_id, "rtb.nobid.key") * kNoBidKeys);
  return "nobid-" + std::to_string(bucket);
}

std::string EncodeEvent(const Event& e) {
  constexpr size_t kLiterals = 352;  // keys, punctuation and booleans of every field below
  JsonWriter w(kLiterals + 13 * JsonWriter::kMaxNumber + JsonWriter::Escaped(e.type) +
               JsonWriter::Escaped(e.eid) + JsonWriter::Escaped(e.auction_id) +
               JsonWriter::Escaped(e.imp_id) + JsonWriter::Escaped(e.reason) +
               JsonWriter::Escaped(e.deal) + e.computed.size() * (JsonWriter::kMaxNumber + 1));
  w.Raw("{\"v\":1,\"type\":");
  w.Str(e.type);
  w.Raw(",\"eid\":");
  w.Str(e.eid);
  w.Raw(",\"ts\":");
  w.Int(e.ts_ms);
  w.Raw(",\"auction\":");
  w.Str(e.auction_id);
  w.Raw(",\"imp\":");
  w.Str(e.imp_id);
  w.Raw(",\"adv\":");
  w.Int(e.advertiser);
  w.Raw(",\"agent\":");
  w.Int(e.agent);
  w.Raw(",\"cluster\":");
  w.Int(e.cluster);
  w.Raw(",\"price_micros\":");
  w.Int(e.price_micros);
  w.Raw(",\"cpc_micros\":");
  w.Int(e.cpc_micros);
  w.Raw(",\"pctr\":");
  w.Dbl9(e.pctr);
  w.Raw(",\"pcvr\":");
  w.Dbl9(e.pcvr);
  w.Raw(",\"alpha\":");
  w.Dbl9(e.alpha);
  w.Raw(",\"policy_version\":");
  w.Int(static_cast<int64_t>(e.policy_version));
  w.Raw(",\"manual_fallback\":");
  w.Bool(e.manual_fallback);
  w.Raw(e.arm == Arm::kLearned ? ",\"arm\":\"learned\"" : ",\"arm\":\"manual\"");
  w.Raw(",\"test\":");
  w.Bool(e.test);
  w.Raw(",\"reason\":");
  w.Str(e.reason);
  if (e.sim_ms >= 0) {
    w.Raw(",\"sim_ms\":");
    w.Int(e.sim_ms);
  }
  if (!e.computed.empty()) {
    w.Raw(",\"computed\":[");
    for (size_t i = 0; i < e.computed.size(); ++i) {
      if (i) w.Raw(',');
      w.Int(e.computed[i]);
    }
    w.Raw(']');
  }
  if (e.count != 1.0) {
    w.Raw(",\"count\":");
    w.Dbl9(e.count);
  }
  if (!e.deal.empty()) {
    w.Raw(",\"deal\":");
    w.Str(e.deal);
  }
  if (e.at != 0) {
    w.Raw(",\"at\":");
    w.Int(e.at);
  }
  w.Raw(",\"charged\":");
  w.Bool(e.charged);
  w.Raw('}');
  return std::move(w).Take();
}

namespace {

// An integer field in [lo, hi], or `def` when absent. A float, a string or a value out of range
// throws (nlohmann converts a float to an integer with a plain cast: undefined behaviour out of
// range, found by the event fuzzer).
int64_t IntField(const nlohmann::json& j, const char* k, int64_t def, int64_t lo, int64_t hi) {
  if (!j.contains(k)) return def;
  const auto& v = j[k];
  if (!v.is_number_integer()) throw std::invalid_argument(std::string(k) + " is not an integer");
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi)) {
      throw std::out_of_range(std::string(k) + " out of range");
    }
    return static_cast<int64_t>(u);
  }
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) throw std::out_of_range(std::string(k) + " out of range");
  return x;
}

double NumberField(const nlohmann::json& j, const char* k) {
  if (!j.contains(k)) return 0.0;
  if (!j[k].is_number()) throw std::invalid_argument(std::string(k) + " is not a number");
  return j[k].get<double>();
}

}  // namespace

Result<Event> DecodeEvent(std::string_view json) {
  constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
  constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  constexpr int64_t kIntMin = std::numeric_limits<int>::min();
  try {
    const auto j = nlohmann::json::parse(json);
    if (!j.is_object()) return Status::Corruption("event: not an object");
    if (IntField(j, "v", 0, kI64Min, kI64Max) != 1) {
      return Status::Corruption("event: unsupported version");
    }
    Event e;
    e.type = j.at("type").get<std::string>();
    e.eid = j.at("eid").get<std::string>();
    if (!j.contains("ts")) return Status::Corruption("event: no ts");
    e.ts_ms = IntField(j, "ts", 0, kI64Min, kI64Max);
    e.auction_id = j.value("auction", "");
    e.imp_id = j.value("imp", "");
    e.advertiser = IntField(j, "adv", -1, kI64Min, kI64Max);
    e.agent = static_cast<int>(IntField(j, "agent", -1, kIntMin, kIntMax));
    e.cluster = static_cast<int>(IntField(j, "cluster", -1, kIntMin, kIntMax));
    e.price_micros = IntField(j, "price_micros", 0, kI64Min, kI64Max);
    e.cpc_micros = IntField(j, "cpc_micros", 0, kI64Min, kI64Max);
    e.pctr = NumberField(j, "pctr");
    e.pcvr = NumberField(j, "pcvr");
    e.alpha = NumberField(j, "alpha");
    e.policy_version = static_cast<uint64_t>(IntField(j, "policy_version", 0, 0, kI64Max));
    e.manual_fallback = j.value("manual_fallback", false);
    if (j.contains("arm")) {
      if (!j["arm"].is_string()) return Status::Corruption("event: arm is not a string");
      const auto arm = ParseArm(j["arm"].get<std::string>());
      if (!arm) return Status::Corruption("event: arm is neither learned nor manual");
      e.arm = *arm;
    }
    e.test = j.value("test", false);
    e.reason = j.value("reason", "");
    e.charged = j.value("charged", false);
    e.sim_ms = IntField(j, "sim_ms", -1, kI64Min, kI64Max);
    if (j.contains("computed")) {
      const auto& c = j["computed"];
      if (!c.is_array()) return Status::Corruption("event: computed is not an array");
      for (const auto& x : c) {
        if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<uint64_t>() > kIntMax) ||
            (!x.is_number_unsigned() &&
             (x.get<int64_t>() < kIntMin || x.get<int64_t>() > kIntMax))) {
          return Status::Corruption("event: computed holds a non-integer or out-of-range value");
        }
        e.computed.push_back(static_cast<int>(x.get<int64_t>()));
      }
    }
    if (j.contains("count")) {
      if (!j["count"].is_number()) return Status::Corruption("event: count is not a number");
      e.count = j["count"].get<double>();
      if (!(e.count >= 0 && e.count <= kMaxEventCount)) {
        return Status::Corruption("event: count is negative or above 1e6");
      }
    }
    if (j.contains("deal")) {
      if (!j["deal"].is_string()) return Status::Corruption("event: deal is not a string");
      e.deal = j["deal"].get<std::string>();
    }
    e.at = static_cast<int>(IntField(j, "at", 0, 0, 3));
    return e;
  } catch (const std::exception& ex) {
    return Status::Corruption(std::string("event: ") + ex.what());
  }
}

namespace {

bool Within(double x, double lo, double hi) { return x >= lo && x <= hi; }  // false for NaN

}  // namespace

std::optional<EventRefusal> CheckEventMoney(const Event& e, const EventMoneyBounds& b) {
  if (!Within(e.pctr, 0, 1) || !Within(e.pcvr, 0, 1) || !Within(e.alpha, -1, 1)) {
    return EventRefusal{"probability_out_of_range"};
  }
  if (!Within(e.count, 0, b.max_count)) return EventRefusal{"count_out_of_range"};
  for (int c : e.computed) {
    if (c < 0 || c > b.max_computed) return EventRefusal{"computed_out_of_range"};
  }
  if (e.price_micros < 0) return EventRefusal{"negative_price"};
  if (e.cpc_micros < 0) return EventRefusal{"negative_cpc"};
  if (e.advertiser < 0 || b.advertisers.empty()) return std::nullopt;
  const auto it = b.advertisers.find(e.advertiser);
  if (it == b.advertisers.end()) return EventRefusal{"unknown_advertiser"};
  const AdvertiserMoneyBounds& a = it->second;
  if (e.type == "conversion") {
    if (e.price_micros > a.max_conversion_value_micros) {
      return EventRefusal{"conversion_value_out_of_range"};
    }
  } else if (e.price_micros > a.max_price_micros) {
    return EventRefusal{"price_above_bid"};
  }
  // The CPC bid: at most the CPM bound's (x 1000 at pCTR 1).
  if (e.cpc_micros > a.max_price_micros / 1000 + 1) return EventRefusal{"cpc_above_bid"};
  return std::nullopt;
}

}  // namespace rtb
