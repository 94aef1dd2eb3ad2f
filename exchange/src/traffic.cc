#include "rtb/exchange/traffic.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "rtb/bidder/config.h"
#include "rtb/bidder/predictor.h"
#include "rtb/core/config.h"
#include "rtb/core/policy.h"
#include "rtb/core/rng.h"

namespace rtb::exchange {
namespace {

// Cumulative weights normalised to end at 1, for drawing an index by a uniform number.
std::vector<double> Cumulative(const std::vector<double>& w) {
  std::vector<double> c(w.size());
  std::partial_sum(w.begin(), w.end(), c.begin());
  const double total = c.empty() ? 0.0 : c.back();
  for (double& x : c) x /= total;
  if (!c.empty()) c.back() = 1.0;
  return c;
}

size_t Pick(const std::vector<double>& cum, double u) {
  const auto it = std::upper_bound(cum.begin(), cum.end(), u);
  return std::min(static_cast<size_t>(it - cum.begin()), cum.size() - 1);
}

enum Stream : uint64_t { kSegments = 1, kActivity = 2, kDay = 3 };

}  // namespace

Result<TrafficConfig> LoadTrafficConfig(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(auto file, ConfigFile::Load(path));
  ConfigMap root = file->Root();
  TrafficConfig c;
  root.Get("seed", &c.seed);
  root.Get("requests_per_day", &c.requests_per_day);
  root.Check(c.requests_per_day >= 1 && c.requests_per_day <= 100'000'000, "requests_per_day",
             "must be in [1, 1e8]");
  root.Get("users", &c.users);
  root.Check(c.users >= 1 && c.users <= 10'000'000, "users", "must be in [1, 1e7]");
  root.Get("activity_sigma", &c.activity_sigma);
  root.Check(c.activity_sigma >= 0 && c.activity_sigma <= 4, "activity_sigma", "must be in [0, 4]");
  root.Get("hourly", &c.hourly);
  root.Check(c.hourly.empty() ||
                 (c.hourly.size() == 24 &&
                  std::all_of(c.hourly.begin(), c.hourly.end(), [](double w) { return w >= 0; }) &&
                  std::accumulate(c.hourly.begin(), c.hourly.end(), 0.0) > 0),
             "hourly", "must be 24 weights >= 0, not all 0 (or absent: flat)");
  for (ConfigMap s : root.List("segments")) {
    Segment g;
    s.Get("name", &g.name);
    s.Get("share", &g.share);
    s.Check(g.share > 0, "share", "must be positive");
    s.Get("ctr_lift", &g.ctr_lift);
    s.Get("cvr_lift", &g.cvr_lift);
    auto nonneg = [](const std::vector<double>& v) {
      return !v.empty() && std::all_of(v.begin(), v.end(), [](double x) { return x >= 0; });
    };
    s.Check(nonneg(g.ctr_lift), "ctr_lift", "must be one value >= 0 per agent");
    s.Check(nonneg(g.cvr_lift), "cvr_lift", "must be one value >= 0 per agent");
    c.segments.push_back(std::move(g));
  }
  root.Check(!c.segments.empty() && c.segments.size() <= 255, "segments",
             "needs 1 to 255 segments");
  for (ConfigMap p : root.List("placements")) {
    Placement pl;
    double floor = 0;
    p.Get("share", &pl.share);
    p.Check(pl.share > 0, "share", "must be positive");
    p.Get("app", &pl.app);
    p.Get("domain", &pl.domain);
    p.Check(!pl.domain.empty(), "domain", "must be set (site domain or app bundle)");
    p.Get("cat", &pl.cat);
    p.Get("device_type", &pl.device_type);
    p.Check(pl.device_type >= 1 && pl.device_type <= 7, "device_type", "must be in [1, 7]");
    p.Get("country", &pl.country);
    p.Check(pl.country.size() == 3, "country", "must be ISO-3166-1 alpha-3");
    p.Get("w", &pl.w);
    p.Get("h", &pl.h);
    p.Check(pl.w > 0 && pl.h > 0, "w", "banner w and h must be positive");
    p.Get("floor", &floor);
    p.Check(floor >= 0 && floor < 1e6, "floor", "(CPM, currency units) must be >= 0");
    pl.floor_cpm = Micros::FromUnits(floor);
    p.Get("ctr_lift", &pl.ctr_lift);
    p.Check(pl.ctr_lift >= 0, "ctr_lift", "must be >= 0");
    c.placements.push_back(std::move(pl));
  }
  root.Check(!c.placements.empty() && c.placements.size() <= 65535, "placements",
             "needs 1 to 65535 placements");
  ConfigMap comp = root.Section("competition");
  comp.Get("bidders", &c.competition.bidders);
  comp.Check(c.competition.bidders >= 0 && c.competition.bidders <= 64, "bidders",
             "must be in [0, 64]");
  comp.Get("median_cpm", &c.competition.median_cpm);
  comp.Check(c.competition.median_cpm > 0, "median_cpm", "must be positive");
  comp.Get("sigma", &c.competition.sigma);
  comp.Check(c.competition.sigma >= 0 && c.competition.sigma <= 4, "sigma", "must be in [0, 4]");
  root.Get("slots", &c.slots);
  root.Check(c.slots >= 1 && c.slots <= 7, "slots", "must be in [1, 7]");
  root.Get("reserve_cpm", &c.reserve_cpm);
  root.Check(c.reserve_cpm >= 0, "reserve_cpm", "must be >= 0");
  RTB_RETURN_IF_ERROR(file->Finish());
  return c;
}

Result<TrafficMarket> LoadTrafficMarket(const std::string& traffic_path,
                                        const std::string& bidder_config_path) {
  TrafficMarket m;
  RTB_ASSIGN_OR_RETURN(m.traffic, LoadTrafficConfig(traffic_path));
  RTB_ASSIGN_OR_RETURN(const bidder::BidderConfig bc, bidder::LoadBidderConfig(bidder_config_path));
  if (bc.advertisers.empty()) {
    return Status::InvalidArgument(bidder_config_path + ": no advertisers");
  }
  bidder::Predictor predictor;
  if (!bc.predictor_path.empty()) {
    RTB_ASSIGN_OR_RETURN(predictor, bidder::LoadPredictor(bc.predictor_path));
  }
  for (const auto& a : bc.advertisers) m.agents = std::max(m.agents, a.agent + 1);
  const TrafficConfig& t = m.traffic;
  for (size_t j = 0; j < t.segments.size(); ++j) {
    const Segment& g = t.segments[j];
    if (g.ctr_lift.size() != static_cast<size_t>(m.agents) ||
        g.cvr_lift.size() != static_cast<size_t>(m.agents)) {
      return Status::InvalidArgument(traffic_path + ": segment " + std::to_string(j) + " (" +
                                     g.name + ") has " + std::to_string(g.ctr_lift.size()) +
                                     " ctr_lift and " + std::to_string(g.cvr_lift.size()) +
                                     " cvr_lift values; the market (" + bidder_config_path +
                                     ") has " + std::to_string(m.agents) + " agents");
    }
  }
  m.steps = bc.market.steps_per_day;
  m.step_ms = int64_t{bc.market.step_seconds} * 1000;
  m.learned_share = bc.ab.learned_share;
  m.ab_salt = bc.ab.salt;
  // The truth per (advertiser, placement, segment): the bidder's model on that placement and
  // cluster, times the world's lifts it does not know.
  const size_t S = t.segments.size();
  for (const auto& a : bc.advertisers) {
    TrafficMarket::Adv adv;
    adv.agent = a.agent;
    adv.conversion_value = a.conversion_value;
    adv.ctr.resize(t.placements.size() * S);
    adv.cvr.resize(t.placements.size() * S);
    for (size_t p = 0; p < t.placements.size(); ++p) {
      const Placement& pl = t.placements[p];
      bidder::BidRequest r;
      r.has_site = !pl.app;
      r.has_app = pl.app;
      (pl.app ? r.app_bundle : r.site_domain) = pl.domain;
      r.cat = pl.cat;
      r.device_type = pl.device_type;
      r.country = pl.country;
      bidder::Imp imp;
      imp.formats.push_back({pl.w, pl.h});
      for (size_t j = 0; j < S; ++j) {
        const auto f = predictor.Features(a.id, r, imp, static_cast<int>(j));
        const auto i = static_cast<size_t>(a.agent);
        adv.ctr[p * S + j] =
            std::min(1.0, predictor.Ctr(a.id, f) * t.segments[j].ctr_lift[i] * pl.ctr_lift);
        adv.cvr[p * S + j] = std::min(1.0, predictor.Cvr(a.id, f) * t.segments[j].cvr_lift[i]);
      }
    }
    m.advertisers[a.id] = std::move(adv);
  }
  // Each user's segment, drawn once by the shares (seeded).
  std::vector<double> shares;
  for (const auto& g : t.segments) shares.push_back(g.share);
  const auto cum = Cumulative(shares);
  Rng rng(Rng::Mix(t.seed, kSegments));
  m.segment_of_user.resize(static_cast<size_t>(t.users));
  for (auto& s : m.segment_of_user) s = static_cast<uint8_t>(Pick(cum, rng.Uniform()));
  return m;
}

std::vector<size_t> TrafficDay::StepBegins() const {
  std::vector<size_t> b(static_cast<size_t>(steps) + 1, size());
  size_t r = 0;
  for (int s = 0; s < steps; ++s) {
    while (r < size() && time_ms[r] < s * step_ms) ++r;
    b[static_cast<size_t>(s)] = r;
  }
  return b;
}

TrafficDay GenerateTrafficDay(const TrafficMarket& m, int64_t day_index) {
  const TrafficConfig& t = m.traffic;
  TrafficDay d;
  d.steps = m.steps;
  d.step_ms = m.step_ms;
  const int64_t day_ms = m.steps * m.step_ms;
  // Users' request rates (fixed across days) and the hours' weights.
  std::vector<double> activity(static_cast<size_t>(t.users));
  Rng act(Rng::Mix(t.seed, kActivity));
  for (double& a : activity) a = act.LogNormal(0.0, t.activity_sigma);
  const auto user_cum = Cumulative(activity);
  std::vector<double> place_w;
  for (const auto& p : t.placements) place_w.push_back(p.share);
  const auto place_cum = Cumulative(place_w);
  const auto hour_cum = Cumulative(t.hourly.empty() ? std::vector<double>(24, 1.0) : t.hourly);
  Rng rng(Rng::Mix(Rng::Mix(t.seed, kDay), static_cast<uint64_t>(day_index)));
  const auto n = static_cast<size_t>(t.requests_per_day);
  std::vector<int64_t> times(n);
  for (auto& x : times) {
    // The hour by weight, then uniform within it, on the market's day (T x step).
    const double hour = static_cast<double>(Pick(hour_cum, rng.Uniform())) + rng.Uniform();
    x = std::min(day_ms - 1, static_cast<int64_t>(hour / 24.0 * static_cast<double>(day_ms)));
  }
  std::sort(times.begin(), times.end());
  d.time_ms = std::move(times);
  d.user.resize(n);
  d.placement.resize(n);
  const auto B = static_cast<size_t>(t.competition.bidders);
  d.competitor_cpm.resize(n * B);
  const double mu = std::log(t.competition.median_cpm);
  for (size_t r = 0; r < n; ++r) {
    d.user[r] = static_cast<uint32_t>(Pick(user_cum, rng.Uniform()));
    d.placement[r] = static_cast<uint16_t>(Pick(place_cum, rng.Uniform()));
    for (size_t b = 0; b < B; ++b) {
      d.competitor_cpm[r * B + b] = rng.LogNormal(mu, t.competition.sigma);
    }
  }
  return d;
}

std::string TrafficUserId(uint32_t user) {
  std::string id = "u";
  id += std::to_string(user);
  return id;
}

std::string ClusterMapJson(const TrafficMarket& m) {
  ClusterMap c;
  c.clusters = static_cast<int>(m.traffic.segments.size());
  c.default_cluster = 0;
  for (size_t u = 0; u < m.segment_of_user.size(); ++u) {
    c.user_cluster[TrafficUserId(static_cast<uint32_t>(u))] = m.segment_of_user[u];
  }
  return SerializeClusterMap(c);
}

}  // namespace rtb::exchange
