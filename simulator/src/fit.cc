#include "rtb/simulator/fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "rtb/core/clock.h"
#include "rtb/core/rng.h"
#include "rtb/simulator/engine.h"

namespace rtb::sim {
namespace {

// ln values binned (width 0.005) with their counts: the likelihood sums over bins, not bids.
using Bins = std::map<int64_t, double>;
constexpr double kBin = 0.005;
void AddBin(Bins* b, double ln_value) {
  (*b)[static_cast<int64_t>(std::llround(ln_value / kBin))] += 1;
}

double LogTail(double z) {  // ln P(Z > z)
  return std::log(std::max(0.5 * std::erfc(z / std::sqrt(2.0)), 1e-300));
}

// The competition's log-likelihood: exact ln prices, ln bids it was above (lost), ln bids it was
// at most (first-price wins).
double LogLikelihood(double mu, double sigma, const Bins& exact, const Bins& above,
                     const Bins& below) {
  double ll = 0;
  for (const auto& [k, n] : exact) {
    const double z = (static_cast<double>(k) * kBin - mu) / sigma;
    ll += n * (-0.5 * z * z - std::log(sigma));
  }
  for (const auto& [k, n] : above) ll += n * LogTail((static_cast<double>(k) * kBin - mu) / sigma);
  for (const auto& [k, n] : below) ll += n * LogTail(-(static_cast<double>(k) * kBin - mu) / sigma);
  return ll;
}

// Maximum likelihood over (mu, sigma): a 21 x 21 grid around the best point, narrowed 12 times.
void FitCompetition(const Bins& exact, const Bins& above, const Bins& below, double* mu,
                    double* sigma) {
  double m = 0, n = 0;
  for (const auto& [k, c] : exact) m += c * static_cast<double>(k) * kBin, n += c;
  for (const auto& [k, c] : above) m += c * static_cast<double>(k) * kBin, n += c;
  double best_mu = n > 0 ? m / n : 0, best_sigma = 0.5;
  double mu_span = 3, sigma_span = 1.5;
  for (int round = 0; round < 12; ++round) {
    double best = -INFINITY, bm = best_mu, bs = best_sigma;
    for (int a = -10; a <= 10; ++a) {
      for (int b = -10; b <= 10; ++b) {
        const double u = best_mu + mu_span * a / 10.0;
        const double s = best_sigma + sigma_span * b / 10.0;
        if (s < 0.01 || s > 5) continue;
        const double ll = LogLikelihood(u, s, exact, above, below);
        if (ll > best) best = ll, bm = u, bs = s;
      }
    }
    best_mu = bm;
    best_sigma = bs;
    mu_span /= 3;
    sigma_span = std::min(sigma_span / 3, best_sigma / 2);
  }
  *mu = best_mu;
  *sigma = best_sigma;
}

int StepOf(int64_t ms, int64_t step_ms, int steps) {
  const int64_t s = (ms % kDayMs) / step_ms;
  return static_cast<int>(std::clamp<int64_t>(s, 0, steps - 1));
}

double PredictedValue(const FittedWorld& w, const FittedBid& b) {
  return b.pctr * b.pcvr * w.market.advertisers[b.adv].conversion_value.units();
}

// A day of the given bids (each once, in step order), competing eCPMs drawn from `seed`.
Day DayOf(const FittedWorld& w, const std::vector<const FittedBid*>& bids, uint64_t seed) {
  Rng rng(Rng::Mix(seed, 0xf17d));
  Day d;
  d.steps = w.market.steps;
  d.step_ms = w.market.step_ms;
  d.num_advertisers = static_cast<uint32_t>(w.market.advertisers.size());
  d.num_consumers = static_cast<uint32_t>(w.market.clusters);
  std::vector<const FittedBid*> sorted = bids;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const FittedBid* a, const FittedBid* b) { return a->step < b->step; });
  std::vector<int64_t> in_step(static_cast<size_t>(d.steps), 0), seen(in_step.size(), 0);
  for (const FittedBid* b : sorted) ++in_step[static_cast<size_t>(b->step)];
  for (const FittedBid* b : sorted) {
    const auto t = static_cast<size_t>(b->step);
    // Spread evenly over the step, in the order drawn.
    d.time_ms.push_back(b->step * d.step_ms +
                        seen[t]++ * d.step_ms / std::max<int64_t>(1, in_step[t]));
    d.consumer.push_back(static_cast<uint32_t>(b->cluster));
    d.floor_cpm.push_back(
        static_cast<int64_t>(std::llround(rng.LogNormal(w.comp_mu, w.comp_sigma) * 1e6)));
    d.begin.push_back(static_cast<uint32_t>(d.adv.size()));
    const FitAdvertiser& a = w.market.advertisers[b->adv];
    d.adv.push_back(b->adv);
    d.bid.push_back(a.bid.value());
    d.pctr.push_back(b->pctr);
    d.pcvr.push_back(b->pcvr);
    const double lift = w.lift[static_cast<size_t>(b->adv) * w.market.clusters + b->cluster];
    d.ppb.push_back(static_cast<int64_t>(std::llround(a.conversion_value.value() * lift)));
  }
  d.begin.push_back(static_cast<uint32_t>(d.adv.size()));
  return d;
}

}  // namespace

Result<FittedWorld> FitWorld(const OutcomeLog& log, const FitMarket& market) {
  if (market.advertisers.empty()) return Status::InvalidArgument("fit: no advertiser declared");
  if (market.clusters < 1 || market.steps < 1 || market.step_ms < 1) {
    return Status::InvalidArgument("fit: clusters, steps and step_ms must be positive");
  }
  FittedWorld w;
  w.market = market;
  const int L = market.clusters, T = market.steps;
  std::unordered_map<int64_t, uint32_t> index;
  for (size_t k = 0; k < market.advertisers.size(); ++k) {
    index[market.advertisers[k].id] = static_cast<uint32_t>(k);
  }
  Bins exact, above, below;
  const size_t cells = market.advertisers.size() * static_cast<size_t>(L);
  std::vector<double> value(cells, 0), predicted(cells, 0), won(cells, 0), pcvr_sum;
  std::vector<double> pcvr_n(market.advertisers.size(), 0);
  pcvr_sum.assign(market.advertisers.size(), 0);
  w.revenue_hist.assign(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(L), 0));
  w.cost_hist = w.revenue_hist;
  int64_t first_day = INT64_MAX, last_day = INT64_MIN;
  for (const LoggedBid& lb : log.bids) {
    if (lb.test) continue;
    const auto it = index.find(lb.advertiser);
    if (it == index.end()) {
      return Status::InvalidArgument("fit: a bid of advertiser " + std::to_string(lb.advertiser) +
                                     ", which the bidder config does not declare");
    }
    if (lb.cluster < 0 || lb.cluster >= L) {
      return Status::InvalidArgument("fit: a bid in cluster " + std::to_string(lb.cluster) +
                                     ", outside the cluster map's " + std::to_string(L));
    }
    const int64_t ms = lb.sim_ms >= 0 ? lb.sim_ms : lb.ts_ms;
    FittedBid b;
    b.step = StepOf(ms, market.step_ms, T);
    b.cluster = lb.cluster;
    b.adv = it->second;
    b.pctr = lb.pctr;
    b.pcvr = lb.pcvr;
    b.manual_arm = lb.arm == Arm::kManual;
    b.day = ms / kDayMs;
    b.won = lb.won;
    b.price_micros = lb.won ? lb.price_micros : 0;
    b.value = static_cast<double>(lb.value_micros) / 1e6;
    first_day = std::min(first_day, b.day);
    last_day = std::max(last_day, b.day);
    w.bids.push_back(b);
    pcvr_sum[b.adv] += b.pcvr;
    pcvr_n[b.adv] += 1;
    const double bid_cpm = static_cast<double>(lb.bid_micros) / 1e6;
    if (lb.won && lb.first_price) {
      if (bid_cpm > 0) AddBin(&below, std::log(bid_cpm));
    } else if (lb.won) {
      if (lb.price_micros > 0) AddBin(&exact, std::log(static_cast<double>(lb.price_micros) / 1e6));
    } else if (bid_cpm > 0) {
      AddBin(&above, std::log(bid_cpm));
    }
    if (lb.won) {
      const size_t c = static_cast<size_t>(b.adv) * L + b.cluster;
      value[c] += static_cast<double>(lb.value_micros) / 1e6;
      predicted[c] += PredictedValue(w, b);
      won[c] += 1;
      const auto t = static_cast<size_t>(b.step), j = static_cast<size_t>(b.cluster);
      w.revenue_hist[t][j] += static_cast<double>(lb.value_micros) / 1e6;
      w.cost_hist[t][j] += static_cast<double>(lb.price_micros) / 1e9;
    }
  }
  if (w.bids.empty()) return Status::InvalidArgument("fit: the events hold no bid");
  for (const auto& [k, n] : exact) w.exact += static_cast<int64_t>(n);
  for (const auto& [k, n] : above) w.censored += static_cast<int64_t>(n);
  for (const auto& [k, n] : below) w.censored += static_cast<int64_t>(n);
  if (w.exact == 0 || above.empty()) {
    return Status::InvalidArgument(
        "fit: the competition needs second-price auctions both won and lost (won at a clearing "
        "price: " +
        std::to_string(w.exact) + ", lost: " + std::to_string(above.size() > 0) + ")");
  }
  for (FittedBid& b : w.bids) b.day -= first_day;
  w.days = static_cast<int>(last_day - first_day + 1);
  FitCompetition(exact, above, below, &w.comp_mu, &w.comp_sigma);
  for (auto& row : w.revenue_hist)
    for (double& x : row) x /= w.days;
  for (auto& row : w.cost_hist)
    for (double& x : row) x /= w.days;
  // Lifts: the advertiser's own where it won enough in the cluster, else its agent's there.
  std::map<std::pair<int, int>, std::pair<double, double>> pooled;  // (agent, j) -> value, pred
  for (size_t k = 0; k < market.advertisers.size(); ++k) {
    for (int j = 0; j < L; ++j) {
      auto& p = pooled[{market.advertisers[k].agent, j}];
      p.first += value[k * L + j];
      p.second += predicted[k * L + j];
    }
  }
  w.lift.assign(cells, 1.0);
  for (size_t k = 0; k < market.advertisers.size(); ++k) {
    for (int j = 0; j < L; ++j) {
      const size_t c = k * L + j;
      const auto& p = pooled[{market.advertisers[k].agent, j}];
      if (won[c] >= market.min_impressions && predicted[c] > 0) {
        w.lift[c] = value[c] / predicted[c];
      } else if (p.second > 0) {
        w.lift[c] = p.first / p.second;
      }
    }
  }
  w.avg_pcvr.resize(market.advertisers.size());
  for (size_t k = 0; k < w.avg_pcvr.size(); ++k) {
    w.avg_pcvr[k] = pcvr_n[k] > 0 ? pcvr_sum[k] / pcvr_n[k] : 0;
  }
  return w;
}

std::string FittedWorld::ToJson() const {
  nlohmann::json j;
  j["schema"] = "rtb.fitted-world.v1";
  j["clusters"] = market.clusters;
  j["steps"] = market.steps;
  j["step_ms"] = market.step_ms;
  j["learned_share"] = market.learned_share;
  j["min_impressions"] = market.min_impressions;
  auto& advs = j["advertisers"] = nlohmann::json::array();
  for (const FitAdvertiser& a : market.advertisers) {
    nlohmann::json x = {{"id", a.id},
                        {"agent", a.agent},
                        {"bid_micros", a.bid.value()},
                        {"daily_budget_micros", a.daily_budget.value()},
                        {"conversion_value_micros", a.conversion_value.value()},
                        {"goal", GoalKindName(a.goal.kind)}};
    if (a.goal.kind == GoalKind::kConversions) x["target_cpa_micros"] = a.goal.target_cpa.value();
    if (a.goal.kind == GoalKind::kValue) x["target_roas"] = a.goal.target_roas;
    advs.push_back(x);
  }
  j["days"] = days;
  j["competition"] = {
      {"mu", comp_mu}, {"sigma", comp_sigma}, {"exact", exact}, {"censored", censored}};
  j["lift"] = lift;
  j["avg_pcvr"] = avg_pcvr;
  j["revenue_hist"] = revenue_hist;
  j["cost_hist"] = cost_hist;
  // [step, cluster, advertiser index, pCTR, pCVR, manual arm, day, won, clearing CPM, value]
  auto& bs = j["bids"] = nlohmann::json::array();
  for (const FittedBid& b : bids) {
    bs.push_back({b.step, b.cluster, b.adv, b.pctr, b.pcvr, b.manual_arm ? 1 : 0, b.day,
                  b.won ? 1 : 0, b.price_micros, b.value});
  }
  return j.dump() + "\n";
}

Result<FittedWorld> FittedWorld::FromJson(const std::string& json, const std::string& name) {
  try {
    const auto j = nlohmann::json::parse(json);
    if (j.value("schema", std::string()) != "rtb.fitted-world.v1") {
      return Status::InvalidArgument(name + ": not a fitted world (schema rtb.fitted-world.v1)");
    }
    FittedWorld w;
    FitMarket& m = w.market;
    m.clusters = j.at("clusters").get<int>();
    m.steps = j.at("steps").get<int>();
    m.step_ms = j.at("step_ms").get<int64_t>();
    m.learned_share = j.at("learned_share").get<double>();
    m.min_impressions = j.at("min_impressions").get<int>();
    for (const auto& x : j.at("advertisers")) {
      FitAdvertiser a;
      a.id = x.at("id").get<int64_t>();
      a.agent = x.at("agent").get<int>();
      a.bid = Micros(x.at("bid_micros").get<int64_t>());
      a.daily_budget = Micros(x.at("daily_budget_micros").get<int64_t>());
      a.conversion_value = Micros(x.at("conversion_value_micros").get<int64_t>());
      RTB_ASSIGN_OR_RETURN(
          a.goal, MakeGoal(x.at("goal").get<std::string>(),
                           static_cast<double>(x.value("target_cpa_micros", int64_t{0})) / 1e6,
                           x.value("target_roas", 0.0)));
      if (a.agent < 0) return Status::InvalidArgument(name + ": an agent below 0");
      m.advertisers.push_back(a);
    }
    w.days = j.at("days").get<int>();
    const auto& c = j.at("competition");
    w.comp_mu = c.at("mu").get<double>();
    w.comp_sigma = c.at("sigma").get<double>();
    w.exact = c.at("exact").get<int64_t>();
    w.censored = c.at("censored").get<int64_t>();
    w.lift = j.at("lift").get<std::vector<double>>();
    w.avg_pcvr = j.at("avg_pcvr").get<std::vector<double>>();
    w.revenue_hist = j.at("revenue_hist").get<std::vector<std::vector<double>>>();
    w.cost_hist = j.at("cost_hist").get<std::vector<std::vector<double>>>();
    const size_t A = m.advertisers.size(), L = static_cast<size_t>(m.clusters);
    bool ok = A > 0 && m.clusters > 0 && m.steps > 0 && m.step_ms > 0 && w.days > 0 &&
              w.comp_sigma > 0 && w.lift.size() == A * L && w.avg_pcvr.size() == A &&
              w.revenue_hist.size() == static_cast<size_t>(m.steps) &&
              w.cost_hist.size() == w.revenue_hist.size();
    for (const auto& x : j.at("bids")) {
      FittedBid b;
      b.step = x.at(0).get<int>();
      b.cluster = x.at(1).get<int>();
      b.adv = x.at(2).get<uint32_t>();
      b.pctr = x.at(3).get<double>();
      b.pcvr = x.at(4).get<double>();
      b.manual_arm = x.at(5).get<int>() != 0;
      b.day = x.at(6).get<int64_t>();
      b.won = x.at(7).get<int>() != 0;
      b.price_micros = x.at(8).get<int64_t>();
      b.value = x.at(9).get<double>();
      ok = ok && b.step >= 0 && b.step < m.steps && b.cluster >= 0 && b.cluster < m.clusters &&
           b.adv < A && b.day >= 0 && b.day < w.days;
      w.bids.push_back(b);
    }
    if (!ok || w.bids.empty()) {
      return Status::InvalidArgument(name + ": sizes or indices out of range");
    }
    return w;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(name + ": " + e.what());
  }
}

Day DrawFittedDay(const FittedWorld& w, double share, uint64_t seed) {
  Rng rng(Rng::Mix(seed, 0xd4a7));
  std::vector<std::vector<const FittedBid*>> by_step(static_cast<size_t>(w.market.steps));
  for (const FittedBid& b : w.bids) by_step[static_cast<size_t>(b.step)].push_back(&b);
  std::vector<const FittedBid*> drawn;
  for (const auto& pool : by_step) {
    if (pool.empty()) continue;
    const auto n =
        static_cast<int64_t>(std::llround(static_cast<double>(pool.size()) / w.days * share));
    for (int64_t i = 0; i < n; ++i) drawn.push_back(pool[rng.UniformInt(pool.size())]);
  }
  return DayOf(w, drawn, seed);
}

Market FittedMarket(const FittedWorld& w, const Day& day) {
  Market m;
  const int L = w.market.clusters;
  for (const FitAdvertiser& a : w.market.advertisers) {
    m.agents = std::max(m.agents, a.agent + 1);
    m.agent_of.push_back(static_cast<uint16_t>(a.agent));
  }
  m.clusters = L;
  m.steps = w.market.steps;
  for (int j = 0; j < L; ++j) m.cluster_of.push_back(static_cast<uint16_t>(j));
  m.avg_pcvr = w.avg_pcvr;
  m.revenue_hist = w.revenue_hist;
  m.cost_hist = w.cost_hist;
  m.d0.assign(static_cast<size_t>(m.agents) * L, 0.0);
  double total = 0;
  for (size_t r = 0; r < day.requests() && day.StepOf(r) == 0; ++r) {
    for (uint32_t c = day.begin[r]; c < day.begin[r + 1]; ++c) {
      m.d0[static_cast<size_t>(m.agent_of[day.adv[c]]) * L + day.consumer[r]] += 1;
      total += 1;
    }
  }
  for (double& x : m.d0) x = total > 0 ? x / total : 0;
  m.agent_history.assign(static_cast<size_t>(m.agents), Outcome{});
  m.agent_advertisers.assign(static_cast<size_t>(m.agents), 0);
  m.agent_presences.assign(static_cast<size_t>(m.agents), 0);
  for (const FitAdvertiser& a : w.market.advertisers) ++m.agent_advertisers[a.agent];
  return m;
}

std::vector<Micros> FittedBudgets(const FittedWorld& w, double share) {
  std::vector<Micros> b;
  for (const FitAdvertiser& a : w.market.advertisers) {
    b.push_back(Micros(static_cast<int64_t>(std::llround(a.daily_budget.value() * share))));
  }
  return b;
}

AuctionConfig FittedAuction() {
  AuctionConfig a;
  a.type = "gsp";
  a.slots = 1;
  a.reserve_cpm = 0;
  return a;
}

std::unique_ptr<Scenario> FittedScenario(const SimulatorConfig& base, const FittedWorld& w,
                                         double share, int training_days, int validation_days) {
  auto sc = std::make_unique<Scenario>();
  sc->cfg = base;
  const std::string outcomes = base.auction.outcomes;
  sc->cfg.auction = FittedAuction();
  sc->cfg.auction.outcomes = outcomes;
  const std::vector<Micros> budgets = FittedBudgets(w, share);
  auto draw = [&](uint64_t k) { return DrawFittedDay(w, share, Rng::Mix(base.seed, k)); };
  sc->train = draw(1);
  sc->test = draw(2);
  for (int k = 1; k < training_days; ++k) sc->extra_train.push_back(draw(100 + k - 1));
  for (int k = 0; k < validation_days; ++k) sc->validation.push_back(draw(200 + k));
  sc->market = FittedMarket(w, sc->train);
  sc->cfg.market.agents = sc->market.agents;
  sc->cfg.market.consumer_clusters = sc->market.clusters;
  sc->cfg.day.steps = w.market.steps;
  sc->cfg.day.step_minutes = w.market.step_ms / 60000;
  sc->cfg.day.requests = static_cast<int64_t>(sc->train.requests());
  sc->train_budgets = sc->test_budgets = budgets;
  sc->extra_train_budgets.assign(sc->extra_train.size(), budgets);
  sc->validation_budgets.assign(sc->validation.size(), budgets);
  for (const FitAdvertiser& a : w.market.advertisers) sc->goals.push_back(a.goal);
  return sc;
}

FitCheck CheckFit(const FittedWorld& w, uint64_t seed) {
  FitCheck out;
  const double share = 1 - w.market.learned_share;
  std::vector<std::vector<const FittedBid*>> by_day(static_cast<size_t>(w.days));
  for (const FittedBid& b : w.bids) {
    if (b.manual_arm) by_day[static_cast<size_t>(b.day)].push_back(&b);
  }
  const AuctionConfig acfg = FittedAuction();
  for (size_t d = 0; d < by_day.size(); ++d) {
    if (by_day[d].empty()) continue;
    for (const FittedBid* b : by_day[d]) {
      out.wins_log += b->won ? 1 : 0;
      out.spend_log += static_cast<double>(b->price_micros) / 1e9;
      out.value_log += b->value;
    }
    const Day day = DayOf(w, by_day[d], Rng::Mix(seed, d));
    const Market market = FittedMarket(w, day);
    const ActionTable manual(market.agents, market.clusters);  // a = 0: manual bids
    AuctionEngine engine(day, market, acfg, 0.9, FittedBudgets(w, share));
    engine.Reset(Rng::Mix(seed, d + 1));
    engine.RunToEnd(manual);
    for (const Outcome& o : engine.advertiser_outcomes()) {
      out.wins_fit += static_cast<double>(o.impressions);
      out.spend_fit += o.cost.units();
      out.value_fit += o.revenue.units();
    }
    out.bids += static_cast<int64_t>(by_day[d].size());
  }
  return out;
}

}  // namespace rtb::sim
