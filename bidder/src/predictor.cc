#include "rtb/bidder/predictor.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "rtb/core/text.h"

namespace rtb::bidder {
namespace {

uint64_t Fnv(std::string_view s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double Sum(const std::unordered_map<uint32_t, double>& w, const std::vector<uint32_t>& f) {
  double s = 0;
  if (w.empty()) return s;
  for (uint32_t i : f) {
    auto it = w.find(i);
    if (it != w.end()) s += it->second;
  }
  return s;
}

}  // namespace

std::vector<uint32_t> Predictor::Features(uint32_t advertiser, const BidRequest& r, const Imp& imp,
                                          int cluster) const {
  std::vector<std::string> raw;
  raw.reserve(8 + r.cat.size());
  if (r.has_site) raw.push_back("site=" + r.site_domain);
  if (r.has_app) raw.push_back("app=" + r.app_bundle);
  for (const auto& c : r.cat) raw.push_back("cat=" + c);
  raw.push_back("dev=" + std::to_string(r.device_type));
  raw.push_back("geo=" + r.country);
  if (!imp.formats.empty()) {
    raw.push_back("size=" + std::to_string(imp.formats[0].w) + "x" +
                  std::to_string(imp.formats[0].h));
  }
  raw.push_back("cluster=" + std::to_string(cluster));
  const uint64_t mask = (1ULL << hash_bits) - 1;
  const std::string adv = "adv=" + std::to_string(advertiser) + "|";
  std::vector<uint32_t> out;
  out.reserve(raw.size() * 2);
  for (const auto& f : raw) {
    out.push_back(static_cast<uint32_t>(Fnv(f) & mask));
    out.push_back(static_cast<uint32_t>(Fnv(f, Fnv(adv)) & mask));
  }
  return out;
}

double Predictor::Ctr(uint32_t advertiser, const std::vector<uint32_t>& f) const {
  auto it = advertisers.find(advertiser);
  const AdvertiserModel& m = it == advertisers.end() ? default_model : it->second;
  return Sigmoid(m.ctr_bias + Sum(ctr_weights, f));
}

double Predictor::Cvr(uint32_t advertiser, const std::vector<uint32_t>& f) const {
  auto it = advertisers.find(advertiser);
  const AdvertiserModel& m = it == advertisers.end() ? default_model : it->second;
  return Sigmoid(m.cvr_bias + Sum(cvr_weights, f));
}

double Predictor::AvgPcvr(uint32_t advertiser) const {
  auto it = advertisers.find(advertiser);
  return it == advertisers.end() ? default_model.avg_pcvr : it->second.avg_pcvr;
}

namespace {

// A JSON object key that is a decimal number no larger than max ("7", not "-1", "x1" or "1e3").
bool ParseIndex(const std::string& key, unsigned long max, unsigned long* out) {
  if (key.empty() || key.size() > 10 ||
      !std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  *out = std::stoul(key);
  return *out <= max;
}

}  // namespace

Result<Predictor> ParsePredictor(const std::string& text, const std::string& source) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.value("format", "") != "rtb.predictor" || j.value("schema_version", 0) != 1) {
      return Status::Corruption(source + ": not an rtb.predictor schema_version 1 file");
    }
    Predictor p;
    p.hash_bits = j.value("hash_bits", 16);
    if (p.hash_bits < 4 || p.hash_bits > 30)
      return Status::Corruption(source + ": hash_bits out of range");
    auto read_model = [&](const nlohmann::json& m, AdvertiserModel* out) {
      if (!m.is_object()) return false;
      for (auto [key, field] : {std::pair<const char*, double*>{"ctr_bias", &out->ctr_bias},
                                {"cvr_bias", &out->cvr_bias},
                                {"avg_pcvr", &out->avg_pcvr}}) {
        if (!m.contains(key)) continue;
        if (!m[key].is_number()) return false;
        *field = m[key].get<double>();
        if (!std::isfinite(*field)) return false;
      }
      return out->avg_pcvr >= 0;
    };
    if (j.contains("default") && !read_model(j["default"], &p.default_model)) {
      return Status::Corruption(source + ": bad default model");
    }
    if (j.contains("advertisers")) {
      for (const auto& [k, m] : j["advertisers"].items()) {
        unsigned long id = 0;
        if (!ParseIndex(k, 0xFFFFFFFFUL, &id))
          return Status::Corruption(source + ": advertiser id '" + k + "' is not a number");
        AdvertiserModel am = p.default_model;
        if (!read_model(m, &am))
          return Status::Corruption(source + ": bad model of advertiser " + k);
        p.advertisers[static_cast<uint32_t>(id)] = am;
      }
    }
    for (auto [key, dst] : {std::pair<const char*, std::unordered_map<uint32_t, double>*>{
                                "ctr_weights", &p.ctr_weights},
                            {"cvr_weights", &p.cvr_weights}}) {
      if (!j.contains(key)) continue;
      for (const auto& [idx, w] : j[key].items()) {
        unsigned long i = 0;
        if (!ParseIndex(idx, (1UL << p.hash_bits) - 1, &i) || !w.is_number() ||
            !std::isfinite(w.get<double>())) {
          return Status::Corruption(source + ": bad weight " + idx + " in " + key);
        }
        (*dst)[static_cast<uint32_t>(i)] = w.get<double>();
      }
    }
    return p;
  } catch (const std::exception& e) {
    return Status::Corruption(source + ": " + e.what());
  }
}

Result<Predictor> LoadPredictor(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, "predictor model"));
  return ParsePredictor(text, path);
}

}  // namespace rtb::bidder
