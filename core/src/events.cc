#include "rtb/core/events.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "rtb/core/text.h"

namespace rtb {

std::string EncodeEvent(const Event& e) {
  constexpr size_t kLiterals = 320;  // keys, punctuation and booleans of every field below
  JsonWriter w(kLiterals + 12 * JsonWriter::kMaxNumber + JsonWriter::Escaped(e.type) +
               JsonWriter::Escaped(e.eid) + JsonWriter::Escaped(e.auction_id) +
               JsonWriter::Escaped(e.imp_id) + JsonWriter::Escaped(e.reason) +
               e.computed.size() * (JsonWriter::kMaxNumber + 1));
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
  w.Raw(",\"charged\":");
  w.Bool(e.charged);
  w.Raw('}');
  return std::move(w).Take();
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
