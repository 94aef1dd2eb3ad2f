#include "rtb/core/step_marker.h"

#include <nlohmann/json.hpp>

namespace rtb {

std::string EncodeStepMarker(const StepMarker& m) {
  nlohmann::json j;
  j["v"] = 1;
  j["day"] = m.day;
  j["step"] = m.step;
  j["steps_per_day"] = m.steps_per_day;
  j["step_ms"] = m.step_ms;
  j["expected_events"] = m.expected_events;
  j["sent_unix_ms"] = m.sent_unix_ms;
  j["requests"] = m.requests;
  j["bids"] = m.bids;
  j["impressions"] = m.impressions;
  j["cost_micros"] = m.cost_micros;
  j["revenue_micros"] = m.revenue_micros;
  j["clicks"] = m.clicks;
  j["conversions"] = m.conversions;
  return j.dump();
}

Result<StepMarker> DecodeStepMarker(std::string_view json) {
  try {
    const auto j = nlohmann::json::parse(json);
    if (j.value("v", 0) != 1) return Status::Corruption("step marker: unsupported version");
    StepMarker m;
    m.day = j.at("day").get<int64_t>();
    m.step = j.at("step").get<int>();
    m.steps_per_day = j.at("steps_per_day").get<int>();
    m.step_ms = j.at("step_ms").get<int64_t>();
    m.expected_events = j.at("expected_events").get<int64_t>();
    m.sent_unix_ms = j.value("sent_unix_ms", int64_t{0});
    m.requests = j.value("requests", int64_t{0});
    m.bids = j.value("bids", int64_t{0});
    m.impressions = j.value("impressions", int64_t{0});
    m.cost_micros = j.value("cost_micros", int64_t{0});
    m.revenue_micros = j.value("revenue_micros", int64_t{0});
    m.clicks = j.value("clicks", int64_t{0});
    m.conversions = j.value("conversions", int64_t{0});
    if (m.day < 0 || m.step < 0 || m.steps_per_day <= 0 || m.step >= m.steps_per_day ||
        m.step_ms <= 0 || m.expected_events < 0) {
      return Status::Corruption("step marker: fields out of range");
    }
    return m;
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("step marker: ") + e.what());
  }
}

std::optional<int64_t> StepIndex(int64_t day, int64_t step, int64_t steps_per_day) {
  int64_t index = 0;
  if (__builtin_mul_overflow(day, steps_per_day, &index) ||
      __builtin_add_overflow(index, step, &index)) {
    return std::nullopt;
  }
  return index;
}

}  // namespace rtb
