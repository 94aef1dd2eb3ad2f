// A market the simulator did not generate: the exchange's side of a hand-written market.
//
// A team's market is two files. The bidder config (bidder/include/rtb/bidder/config.h) holds
// the campaigns: advertisers, agents, manual bids, budgets, targeting, conversion values, the
// predictor and the cluster map. The traffic file (this header, configs/markets/*/traffic.yaml)
// holds what the bidder cannot know and the exchange plays: how many requests come when, from
// which users on which placements, how the users' true click and conversion rates differ from
// the bidder's predictor by consumer segment, and the competing demand of other bidders, drawn
// per request from a market-price distribution.
//
// The world's truth for advertiser k (agent i) shown to a user of segment j on placement p:
//   pCTR = predictor pCTR_k x segment[j].ctr_lift[i] x placement[p].ctr_lift   (clipped to 1)
//   pCVR = predictor pCVR_k x segment[j].cvr_lift[i]                             (clipped to 1)
//   order value = the advertiser's conversion_value
// so the bidder's predictor is right on average and blind to the segments: what a learned
// action per (agent, cluster) can find. Same seed, same traffic.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::exchange {

// A consumer segment of the world. Segment j is consumer cluster j of the written cluster map.
struct Segment {
  std::string name;              // for reports
  double share = 0;              // share of the users (the shares are normalised)
  std::vector<double> ctr_lift;  // per agent: true CTR / the predictor's (>= 0)
  std::vector<double> cvr_lift;  // per agent: true CVR / the predictor's (>= 0)
};

// Where the ads show: one kind of impression, with its share of the requests.
struct Placement {
  double share = 0;              // share of the requests (normalised)
  bool app = false;              // app inventory (else site)
  std::string domain;            // site.domain, or app.bundle
  std::vector<std::string> cat;  // IAB categories (site.cat / app.cat)
  int device_type = 2;           // device.devicetype (OpenRTB: 1 mobile, 2 PC, 4 phone, 5 tablet)
  std::string country = "USA";   // device.geo.country (alpha-3)
  int w = 300, h = 250;          // banner size
  Micros floor_cpm;              // imp.bidfloor (config: floor, currency units CPM)
  double ctr_lift = 1.0;         // true CTR / the predictor's on this placement
};

// Other bidders' demand: per request, `bidders` eCPMs drawn from a log-normal distribution.
struct Competition {
  int bidders = 3;          // competing bids per request (0 = none)
  double median_cpm = 1.0;  // median competing eCPM, currency units
  double sigma = 0.8;       // log-normal spread
};

struct TrafficConfig {
  uint64_t seed = 1;                  // the whole traffic (users, times, placements, competition)
  int64_t requests_per_day = 40000;   // requests in a day
  int users = 20000;                  // user ids u0 .. u<users - 1>
  double activity_sigma = 1.0;        // users' request rates: log-normal spread (0 = all alike)
  std::vector<double> hourly;         // 24 relative weights of the hours (empty = flat)
  std::vector<Segment> segments;      // at least one
  std::vector<Placement> placements;  // at least one
  Competition competition;
  int slots = 1;             // ad slots per request (GSP: each pays the next eCPM)
  double reserve_cpm = 0.0;  // exchange reserve price, currency units CPM
};

Result<TrafficConfig> LoadTrafficConfig(const std::string& path);

// The market the exchange plays: the traffic plus what it needs of the bidder config.
struct TrafficMarket {
  TrafficConfig traffic;
  int agents = 0;
  int steps = 24;             // the bidder config's market.steps_per_day
  int64_t step_ms = 3600000;  // market.step_seconds
  struct Adv {
    int agent = 0;
    Micros conversion_value;
    // The world's truth per (placement p, segment j): [p * segments + j].
    std::vector<double> ctr, cvr;
  };
  std::unordered_map<uint32_t, Adv> advertisers;  // by advertiser id
  std::vector<uint8_t> segment_of_user;           // segment of user u
  double learned_share = 1.0;                     // the bidder's A/B test
  std::string ab_salt;
};

// Reads both files; the segments' lifts must have one value per agent of the bidder config.
Result<TrafficMarket> LoadTrafficMarket(const std::string& traffic_path,
                                        const std::string& bidder_config_path);

// One day of requests in time order.
struct TrafficDay {
  int steps = 0;
  int64_t step_ms = 0;
  std::vector<int64_t> time_ms;        // ms into the day
  std::vector<uint32_t> user;          // user index
  std::vector<uint16_t> placement;     // placement index
  std::vector<double> competitor_cpm;  // [r * bidders + b], currency units CPM
  size_t size() const { return time_ms.size(); }
  // First request of each step, plus size() at the end.
  std::vector<size_t> StepBegins() const;
};

TrafficDay GenerateTrafficDay(const TrafficMarket& m, int64_t day_index);

// User u's id on the wire (OpenRTB user.id, what the A/B test hashes): "u<u>".
std::string TrafficUserId(uint32_t user);

// The cluster map (schemas/cluster-map-v1.md) that labels every user with its segment.
std::string ClusterMapJson(const TrafficMarket& m);

}  // namespace rtb::exchange
