// OpenRTB 2.5 / 2.6 bid requests and responses: the subset that drives a bid, decoded
// strictly where it matters and tolerantly everywhere else (unknown fields and enum values are
// ignored, 2.6 section 2.6). gdpr, consent and schain are read from their 2.6 top-level places
// or from the 2.5 `ext` objects.
//
// RequestDecoder owns a reusable JSON parser: one per thread, not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::bidder {

struct Format {
  int w = 0, h = 0;
};

// A private marketplace deal offered on an impression (imp.pmp.deals[]).
struct Deal {
  std::string id;
  Micros bidfloor;  // the deal's floor, CPM in micros of `bidfloorcur`
  std::string bidfloorcur = "USD";
  std::vector<std::string> wseat;  // the buyer seats allowed to bid on it; empty = any
  int at =
      0;  // its auction type (1 first, 2 second price, 3 fixed price: bidfloor); 0 = the request's
};

struct Imp {
  std::string id;
  bool banner = false, video = false, native = false, audio = false;
  std::vector<Format> formats;  // banner.w/h and banner.format[]
  Micros bidfloor;              // CPM in micros of `bidfloorcur`
  std::string bidfloorcur = "USD";
  std::string tagid;
  int instl = 0;
  int secure = 0;
  bool has_pmp = false;
  int private_auction = 0;  // 1: only the deals below may be bid on
  std::vector<Deal> deals;
};

// Ground truth of the simulated world, sent by `rtb exchange` in `ext.sim` and read only when
// the bidder's `simulation_hooks` is on (never facing a real exchange): the request's
// simulated time and its candidate advertisers with the world's pCTR and pCVR, which then
// stand in for targeting and the predictor (schemas/exchange-sim-ext-v1.md).
struct SimCandidate {
  uint32_t advertiser = 0;
  double pctr = 0, pcvr = 0;
};
struct SimHints {
  int64_t t_ms = -1;  // simulated clock, ms since the simulation's epoch
  // ext.sim.cand present: the candidates and their pCTR/pCVR (the generated world). Absent
  // (a market the exchange did not generate): targeting and the predictor decide, as live.
  bool has_candidates = false;
  std::vector<SimCandidate> candidates;
};

struct BidRequest {
  std::string id;
  std::vector<Imp> imps;
  bool has_site = false, has_app = false;
  std::string site_id, site_domain, app_id, app_bundle, publisher_id;
  std::vector<std::string> cat;  // site.cat or app.cat (IAB categories)
  int device_type = 0;           // device.devicetype
  std::string country;           // device.geo.country (ISO-3166-1 alpha-3)
  std::string ua, ip;
  std::string device_id;  // device.ifa (the A/B unit when there is no user id)
  std::string user_id, buyeruid;
  int64_t tmax_ms = 0;  // 0 = not given
  int at = 0;           // 1 first price, 2 second price; 0 = not given (the bidder's default_at)
  std::vector<std::string> cur;
  std::vector<std::string> bcat, badv, bapp;
  int cattax = 1;  // the taxonomy of bcat (OpenRTB 2.6; 1 = IAB Content Category Taxonomy 1.0)
  bool test = false;
  int gdpr = -1;                // regs.gdpr or regs.ext.gdpr; -1 = unknown
  std::string consent;          // user.consent or user.ext.consent
  bool has_schain = false;      // source.schain or source.ext.schain
  std::string version;          // x-openrtb-version header, if given
  std::optional<SimHints> sim;  // ext.sim (only when DecodeLimits::sim_hints)
};

struct DecodeLimits {
  size_t max_bytes = 1 << 20;  // larger bodies are refused before parsing
  size_t max_depth = 32;       // JSON nesting; the 100K-level depth bomb fails fast
  size_t max_imps = 64;
  // request.id, imp.id, user.id / buyeruid: longer ones are refused (400). Ids go into every
  // event and notice URL; a 1 MB id would make an event Kafka cannot take.
  size_t max_id_bytes = 256;
  bool sim_hints = false;  // read ext.sim (the simulated exchange's ground truth)
  size_t max_sim_candidates = 256;
};

class RequestDecoder {
 public:
  explicit RequestDecoder(DecodeLimits limits = {});
  ~RequestDecoder();
  // A malformed or invalid request (not JSON, wrong types in required fields, no imp, no id)
  // is an InvalidArgument naming what is wrong.
  Result<BidRequest> Decode(std::string_view body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The bid request an exchange sends, as JSON: what `rtb exchange` sends (its simulated days,
// its traffic model, its day-opening test request) and what tests send. Writes, in this order:
//   id;
//   imp[]: id; banner (when imp.banner) with the first format as w/h and the others as
//     format[]; video, native, audio as {} when set; bidfloor (when > 0, six decimals) with
//     bidfloorcur;
//   site (when has_site: id; domain, cat when set) or app (when has_app: id; bundle, cat when
//     set);
//   device (devicetype when > 0; geo.country when set), user (id, buyeruid when set), tmax
//   (when > 0), test (1 when set), cur (when set);
//   ext.sim (when sim is set: t; cand when has_candidates, [advertiser, pctr, pcvr] with 9
//     significant digits).
// The other fields of BidRequest are not written. Strings are JSON-escaped. A RequestDecoder
// (with DecodeLimits::sim_hints for ext.sim) gives the written fields back.
std::string EncodeBidRequest(const BidRequest& r);

struct Bid {
  std::string id;
  std::string impid;
  Micros price;  // CPM, micros of the response currency
  std::string adid, crid, cid;
  std::vector<std::string> adomain;
  std::string adm;  // markup, or empty when served on the win notice
  std::string nurl, burl, lurl;
  int w = 0, h = 0;
  std::string dealid;            // the deal it bids through; empty = the open auction
  std::vector<std::string> cat;  // the ad's categories (taxonomy `cattax`)
  int cattax = 0;                // 0 = not written (the spec's default, 1)
  int mtype = 0;                 // 1 banner, 2 video, 3 audio, 4 native; 0 = not written
  std::string bundle;            // the advertised app's store id, when it is one
};

struct SeatBid {
  std::string seat;
  std::vector<Bid> bids;
};

struct BidResponse {
  std::string id;
  std::string bidid;
  std::string cur = "USD";
  std::vector<SeatBid> seatbid;
  int nbr = -1;  // no-bid reason; -1 = none
};

std::string EncodeBidResponse(const BidResponse& r);
// Parses a BidResponse (the fixtures round-trip through it).
Result<BidResponse> DecodeBidResponse(std::string_view json);

}  // namespace rtb::bidder
