#include "rtb/core/events.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "rtb/core/text.h"

namespace rtb {
namespace {

void Str(std::string& o, const char* k, const std::string& v) {
  o += ",\"";
  o += k;
  o += "\":";
  AppendJsonString(o, v);
}

void Int(std::string& o, const char* k, int64_t v) {
  o += ",\"";
  o += k;
  o += "\":";
  o += std::to_string(v);
}

void Dbl(std::string& o, const char* k, double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, ",\"%s\":%.9g", k, v);
  o += buf;
}

}  // namespace

std::string EncodeEvent(const Event& e) {
  std::string o;
  o.reserve(384);
  o += "{\"v\":1";
  Str(o, "type", e.type);
  Str(o, "eid", e.eid);
  Int(o, "ts", e.ts_ms);
  Str(o, "auction", e.auction_id);
  Str(o, "imp", e.imp_id);
  Int(o, "adv", e.advertiser);
  Int(o, "agent", e.agent);
  Int(o, "cluster", e.cluster);
  Int(o, "price_micros", e.price_micros);
  Int(o, "cpc_micros", e.cpc_micros);
  Dbl(o, "pctr", e.pctr);
  Dbl(o, "pcvr", e.pcvr);
  Dbl(o, "alpha", e.alpha);
  Int(o, "policy_version", static_cast<int64_t>(e.policy_version));
  o += e.manual_fallback ? ",\"manual_fallback\":true" : ",\"manual_fallback\":false";
  o += e.test ? ",\"test\":true" : ",\"test\":false";
  Str(o, "reason", e.reason);
  if (e.sim_ms >= 0) Int(o, "sim_ms", e.sim_ms);
  if (!e.computed.empty()) {
    o += ",\"computed\":[";
    for (size_t i = 0; i < e.computed.size(); ++i) {
      if (i) o += ',';
      o += std::to_string(e.computed[i]);
    }
    o += ']';
  }
  o += e.charged ? ",\"charged\":true}" : ",\"charged\":false}";
  return o;
}

Result<Event> DecodeEvent(std::string_view json) {
  try {
    const auto j = nlohmann::json::parse(json);
    if (j.value("v", 0) != 1) return Status::Corruption("event: unsupported version");
    Event e;
    e.type = j.at("type").get<std::string>();
    e.eid = j.at("eid").get<std::string>();
    e.ts_ms = j.at("ts").get<int64_t>();
    e.auction_id = j.value("auction", "");
    e.imp_id = j.value("imp", "");
    e.advertiser = j.value("adv", int64_t{-1});
    e.agent = j.value("agent", -1);
    e.cluster = j.value("cluster", -1);
    e.price_micros = j.value("price_micros", int64_t{0});
    e.cpc_micros = j.value("cpc_micros", int64_t{0});
    e.pctr = j.value("pctr", 0.0);
    e.pcvr = j.value("pcvr", 0.0);
    e.alpha = j.value("alpha", 0.0);
    e.policy_version = j.value("policy_version", uint64_t{0});
    e.manual_fallback = j.value("manual_fallback", false);
    e.test = j.value("test", false);
    e.reason = j.value("reason", "");
    e.charged = j.value("charged", false);
    e.sim_ms = j.value("sim_ms", int64_t{-1});
    if (j.contains("computed")) e.computed = j["computed"].get<std::vector<int>>();
    return e;
  } catch (const std::exception& ex) {
    return Status::Corruption(std::string("event: ") + ex.what());
  }
}

}  // namespace rtb
