// libFuzzer target: any bytes as a bid request body, through the decoder and, when it decodes,
// the whole bid decision and the response encoder (the code a hostile exchange can reach).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "rtb/bidder/bid_logic.h"
#include "rtb/bidder/openrtb.h"

using namespace rtb::bidder;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Simulation hooks on: ext.sim is parsed too (a superset of what a real exchange reaches).
  static RequestDecoder decoder([] {
    DecodeLimits l;
    l.sim_hints = true;
    return l;
  }());
  static const std::unordered_map<uint32_t, size_t> index_of = {{1, 0}, {2, 1}};
  static const std::vector<Advertiser> advertisers = [] {
    std::vector<Advertiser> v(2);
    for (uint32_t k = 0; k < 2; ++k) {
      v[k].id = k + 1;
      v[k].bid = rtb::Micros(1'000'000 * (k + 1));
      v[k].daily_budget = rtb::Micros(1'000'000'000);
      v[k].agent = static_cast<int>(k);
      v[k].creatives = {{"c", {"a.example"}, k == 0 ? 300 : 0, k == 0 ? 250 : 0, "<b/>"}};
    }
    return v;
  }();
  static const Predictor predictor;
  static const PolicySnapshot policy = [] {
    PolicySnapshot p;
    p.table = rtb::ActionTable(2, 3);
    p.table.set(1, 2, -0.7);
    auto c = std::make_shared<ClusterMap>();
    c->user_cluster["u"] = 2;
    p.clusters = c;
    return p;
  }();
  auto req = decoder.Decode(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!req.ok()) return 0;
  DecideOptions opt;
  opt.agents = 2;
  opt.index_of = &index_of;
  const Decision d = DecideBids(*req, advertisers, predictor, &policy, opt);
  BidResponse resp;
  resp.id = req->id;
  for (const Candidate& c : d.bids) {
    Bid b;
    b.id = req->id;
    b.impid = req->imps[c.imp_index].id;
    b.price = c.price;
    resp.seatbid.push_back({"s", {b}});
  }
  auto back = DecodeBidResponse(EncodeBidResponse(resp));
  if (!back.ok()) __builtin_trap();  // what we encode must always parse
  return 0;
}
