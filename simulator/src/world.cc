#include "rtb/simulator/world.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace rtb::sim {
namespace {

// Probabilities are kept on a 1e-9 grid, so that the text log (9 decimals) reads back to the
// very same doubles and a replay of a written day matches the in-memory run exactly.
double Quantize(double p) { return std::round(p * 1e9) / 1e9; }

}  // namespace

World GenerateWorld(const SimulatorConfig& cfg) {
  WorldConfig w = cfg.world;
  if (cfg.auction.first_price()) w.bid_margin = w.first_price_margin;
  return GenerateWorld(w, cfg.seed);
}

World GenerateWorld(const WorldConfig& cfg, uint64_t seed) {
  Rng rng(Rng::Mix(seed, 0x5701d));
  World w;
  w.advertisers.resize(static_cast<size_t>(cfg.advertisers));
  // Lognormal with the given median-free mean: exp(mu + s^2/2) = mean.
  auto mean_lognormal = [&](double mean, double sigma) {
    return rng.LogNormal(std::log(mean) - sigma * sigma / 2, sigma);
  };
  for (auto& a : w.advertisers) {
    a.large = rng.Uniform() < cfg.large_share;
    a.weight = rng.LogNormal(0, cfg.weight_sigma) * (a.large ? cfg.large_weight : 1.0);
    a.ctr = std::clamp(mean_lognormal(cfg.ctr_mean, cfg.ctr_sigma), 0.001, 0.3);
    a.cvr = std::clamp(mean_lognormal(cfg.cvr_mean, cfg.cvr_sigma), 0.001, 0.5);
    const double value = mean_lognormal(cfg.order_value_mean, cfg.order_value_sigma) *
                         (a.large ? cfg.large_value_factor : 1.0);
    a.order_value = Micros::FromUnits(value);
    const double bid = a.cvr * value * cfg.bid_margin * rng.LogNormal(0, cfg.bid_noise_sigma);
    a.bid = Micros::FromUnits(std::clamp(bid, cfg.min_bid, cfg.max_bid));
  }
  // Goals from a stream of their own: the shares change no other draw of the world. One
  // uniform per advertiser: below cpa_share a target CPA, the next roas_share a target ROAS.
  if (cfg.cpa_share > 0 || cfg.roas_share > 0) {
    Rng goals(Rng::Mix(seed, 0x90a15));
    for (auto& a : w.advertisers) {
      const double u = goals.Uniform();
      if (u < cfg.cpa_share) {
        a.goal.kind = GoalKind::kConversions;
        a.goal.target_cpa = Micros::FromUnits(cfg.cpa_target_margin * a.order_value.units());
        a.bid = Micros::FromUnits(
            std::clamp(a.goal.target_cpa.units() * a.cvr, cfg.min_bid, cfg.max_bid));
      } else if (u < cfg.cpa_share + cfg.roas_share) {
        a.goal.kind = GoalKind::kValue;
        a.goal.target_roas = 1.0 / cfg.roas_target_margin;
        a.bid = Micros::FromUnits(std::clamp(a.cvr * a.order_value.units() / a.goal.target_roas,
                                             cfg.min_bid, cfg.max_bid));
      }
    }
  }
  w.consumers.resize(static_cast<size_t>(cfg.consumers));
  for (auto& c : w.consumers) {
    c.activity = rng.LogNormal(0, cfg.consumer_activity_sigma);
    c.value = mean_lognormal(1.0, cfg.consumer_value_sigma);
    c.click = mean_lognormal(1.0, cfg.consumer_click_sigma);
  }
  return w;
}

std::vector<size_t> Day::StepBegins() const {
  std::vector<size_t> b(static_cast<size_t>(steps) + 1, requests());
  b[0] = 0;
  size_t r = 0;
  for (int s = 1; s < steps; ++s) {
    while (r < requests() && StepOf(r) < s) ++r;
    b[static_cast<size_t>(s)] = r;
  }
  return b;
}

Day GenerateDay(const World& world, const DayConfig& cfg, uint64_t seed) {
  Rng rng(Rng::Mix(seed, 0xda7));
  Day day;
  day.steps = cfg.steps;
  day.step_ms = cfg.step_minutes * 60 * 1000;
  day.num_advertisers = static_cast<uint32_t>(world.advertisers.size());
  day.num_consumers = static_cast<uint32_t>(world.consumers.size());

  std::vector<double> adv_w, con_w;
  for (const auto& a : world.advertisers) adv_w.push_back(a.weight);
  for (const auto& c : world.consumers) con_w.push_back(c.activity);
  const AliasTable adv_pick(adv_w), con_pick(con_w);

  // Requests per step in proportion to the traffic profile.
  double wsum = 0;
  for (double t : cfg.traffic_by_step) wsum += t;
  std::vector<int64_t> per_step(static_cast<size_t>(cfg.steps));
  int64_t assigned = 0;
  for (int s = 0; s < cfg.steps; ++s) {
    per_step[static_cast<size_t>(s)] =
        s + 1 == cfg.steps ? cfg.requests - assigned
                           : std::llround(static_cast<double>(cfg.requests) *
                                          cfg.traffic_by_step[static_cast<size_t>(s)] / wsum);
    assigned += per_step[static_cast<size_t>(s)];
  }

  const size_t expect = static_cast<size_t>(cfg.requests * cfg.candidates_mean * 1.05);
  day.adv.reserve(expect);
  day.bid.reserve(expect);
  day.pctr.reserve(expect);
  day.pcvr.reserve(expect);
  day.ppb.reserve(expect);
  day.begin.push_back(0);

  std::vector<uint32_t> chosen;
  for (int s = 0; s < cfg.steps; ++s) {
    const int64_t n = per_step[static_cast<size_t>(s)];
    std::vector<TimeMs> times(static_cast<size_t>(std::max<int64_t>(n, 0)));
    for (auto& t : times) {
      t = s * day.step_ms + static_cast<TimeMs>(rng.UniformInt(static_cast<uint64_t>(day.step_ms)));
    }
    std::sort(times.begin(), times.end());
    const double value_mult = cfg.value_by_step[static_cast<size_t>(s)];
    for (TimeMs t : times) {
      const uint32_t u = con_pick.Sample(rng);
      const Consumer& con = world.consumers[u];
      day.time_ms.push_back(t);
      day.consumer.push_back(u);
      const double floor_noise = rng.LogNormal(0, cfg.floor_sigma);
      const int64_t nc = std::clamp<int64_t>(rng.Poisson(cfg.candidates_mean), cfg.candidates_min,
                                             cfg.candidates_max);
      chosen.clear();
      for (int attempt = 0; static_cast<int64_t>(chosen.size()) < nc && attempt < 50 * nc;
           ++attempt) {
        const uint32_t k = adv_pick.Sample(rng);
        if (std::find(chosen.begin(), chosen.end(), k) == chosen.end()) chosen.push_back(k);
      }
      for (uint32_t k : chosen) {
        const Advertiser& a = world.advertisers[k];
        day.adv.push_back(k);
        day.bid.push_back(a.bid.value());
        day.pctr.push_back(Quantize(
            std::clamp(a.ctr * con.click * rng.LogNormal(0, cfg.pctr_noise_sigma), 1e-5, 0.5)));
        day.pcvr.push_back(Quantize(
            std::clamp(a.cvr * con.value * rng.LogNormal(0, cfg.pcvr_noise_sigma), 1e-5, 0.9)));
        day.ppb.push_back(std::llround(static_cast<double>(a.order_value.value()) * value_mult *
                                       rng.LogNormal(0, cfg.value_noise_sigma)));
      }
      // Dynamic floor: a fraction of the clearing price of the last slot under manual bids.
      std::vector<double> ecpm;
      for (size_t c = day.begin.back(); c < day.adv.size(); ++c) {
        ecpm.push_back(static_cast<double>(day.bid[c]) * day.pctr[c]);
      }
      std::sort(ecpm.begin(), ecpm.end(), std::greater<double>());
      const double clearing = ecpm.empty() ? 0.0 : ecpm[std::min(ecpm.size() - 1, size_t{3})];
      day.floor_cpm.push_back(std::llround(cfg.floor_fraction * clearing * 1000.0 * floor_noise));
      day.begin.push_back(static_cast<uint32_t>(day.adv.size()));
    }
  }
  return day;
}

}  // namespace rtb::sim
