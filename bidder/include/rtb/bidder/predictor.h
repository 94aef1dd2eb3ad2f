// pCTR and pCVR per (advertiser, request): logistic models over hashed request features,
// loaded from a model file (schemas/predictor-v1.md). Immutable after load; thread-safe.
//
//   pCTR = sigmoid(ctr_bias_k + sum_f w_ctr[hash(f) mod 2^bits] + sum_f w_ctr[hash(k, f)])
//   pCVR likewise with the cvr weights.
// Features: site domain, app bundle, each category, device type, country, banner size,
// consumer cluster, each also crossed with the advertiser.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "rtb/bidder/openrtb.h"
#include "rtb/core/status.h"

namespace rtb::bidder {

struct AdvertiserModel {
  double ctr_bias = -4.0;  // logit of the base pCTR
  double cvr_bias = -3.5;  // logit of the base pCVR
  double avg_pcvr = 0;     // 7-day average pCVR (bratio's denominator); 0 = unknown
};

class Predictor {
 public:
  Predictor() = default;
  // Hashed feature indices of (request, imp) for advertiser k.
  std::vector<uint32_t> Features(uint32_t advertiser, const BidRequest& r, const Imp& imp,
                                 int cluster) const;
  double Ctr(uint32_t advertiser, const std::vector<uint32_t>& features) const;
  double Cvr(uint32_t advertiser, const std::vector<uint32_t>& features) const;
  double AvgPcvr(uint32_t advertiser) const;

  int hash_bits = 16;
  AdvertiserModel default_model;
  std::unordered_map<uint32_t, AdvertiserModel> advertisers;
  std::unordered_map<uint32_t, double> ctr_weights, cvr_weights;
};

Result<Predictor> ParsePredictor(const std::string& json, const std::string& source);
Result<Predictor> LoadPredictor(const std::string& path);

}  // namespace rtb::bidder
