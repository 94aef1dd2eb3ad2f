#include "rtb/learner/state.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

namespace rtb::learn {

Normalizer MakeNormalizer(const sim::Market& m, double roi_scale) {
  Normalizer n;
  n.agents = m.agents;
  n.clusters = m.clusters;
  n.roi_scale = roi_scale;
  double rmax = 0, cmax = 0;
  for (const auto& row : m.revenue_hist) {
    for (double v : row) rmax = std::max(rmax, v);
  }
  for (const auto& row : m.cost_hist) {
    for (double v : row) cmax = std::max(cmax, v);
  }
  n.x_revenue_scale = rmax > 0 ? rmax : 1.0;
  n.x_cost_scale = cmax > 0 ? cmax : 1.0;
  return n;
}

std::vector<float> Normalizer::EncodeState(const sim::Observation& o,
                                           const std::vector<double>& budgets) const {
  const int NL = agents * clusters;
  std::vector<float> s(static_cast<size_t>(StateDim()), 0.0f);
  for (int i = 0; i < agents; ++i) {
    const double b = budgets[static_cast<size_t>(i)] > 0 ? budgets[static_cast<size_t>(i)] : 1.0;
    for (int j = 0; j < clusters; ++j) {
      const size_t p = static_cast<size_t>(i * clusters + j);
      s[p] = static_cast<float>(o.g_cost[p] / b);
      s[static_cast<size_t>(NL) + p] = static_cast<float>(o.g_revenue[p] / (b * roi_scale));
    }
  }
  const int w = clusters + 2;
  for (int j = 0; j < clusters; ++j) {
    for (int q = 0; q < clusters; ++q) {
      s[static_cast<size_t>(2 * NL + j * w + q)] =
          static_cast<float>(o.x[static_cast<size_t>(j * w + q)]);
    }
    s[static_cast<size_t>(2 * NL + j * w + clusters)] =
        static_cast<float>(o.x[static_cast<size_t>(j * w + clusters)] / x_revenue_scale);
    s[static_cast<size_t>(2 * NL + j * w + clusters + 1)] =
        static_cast<float>(o.x[static_cast<size_t>(j * w + clusters + 1)] / x_cost_scale);
  }
  return s;
}

std::vector<float> Normalizer::EncodeD(const sim::Observation& o) const {
  return std::vector<float>(o.d.begin(), o.d.end());
}

std::vector<float> Normalizer::EncodeRewards(const std::vector<double>& rewards,
                                             const std::vector<double>& budgets,
                                             bool coordinated) const {
  const double total_budget = std::accumulate(budgets.begin(), budgets.end(), 0.0);
  std::vector<float> r(rewards.size());
  for (size_t i = 0; i < rewards.size(); ++i) {
    const double b = coordinated ? total_budget : budgets[i];
    r[i] = static_cast<float>(rewards[i] / ((b > 0 ? b : 1.0) * roi_scale));
  }
  return r;
}

std::vector<float> Normalizer::DeliveryShortfall(const sim::Observation& o,
                                                 const std::vector<double>& budgets, double target,
                                                 bool coordinated) const {
  std::vector<float> out(static_cast<size_t>(agents), 0.0f);
  double sum = 0;
  for (int i = 0; i < agents; ++i) {
    double cost = 0;
    for (int j = 0; j < clusters; ++j) cost += o.g_cost[static_cast<size_t>(i * clusters + j)];
    const double b = budgets[static_cast<size_t>(i)];
    const double gap = b > 0 ? std::max(0.0, target - cost / b) : 0.0;
    out[static_cast<size_t>(i)] = static_cast<float>(gap);
    sum += gap;
  }
  if (coordinated) std::fill(out.begin(), out.end(), static_cast<float>(sum));
  return out;
}

std::string Normalizer::ToJson() const {
  nlohmann::ordered_json j;
  j["agents"] = agents;
  j["clusters"] = clusters;
  j["roi_scale"] = roi_scale;
  j["x_revenue_scale"] = x_revenue_scale;
  j["x_cost_scale"] = x_cost_scale;
  return j.dump(2);
}

Result<Normalizer> Normalizer::FromJson(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    Normalizer n;
    n.agents = j.at("agents").get<int>();
    n.clusters = j.at("clusters").get<int>();
    n.roi_scale = j.at("roi_scale").get<double>();
    n.x_revenue_scale = j.at("x_revenue_scale").get<double>();
    n.x_cost_scale = j.at("x_cost_scale").get<double>();
    if (n.agents < 1 || n.clusters < 1 || !(n.roi_scale > 0)) {
      return Status::Corruption("normalizer: out-of-range values");
    }
    return n;
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("normalizer: ") + e.what());
  }
}

Result<DeliveryTerm> MakeDeliveryTerm(double target, double penalty,
                                      const std::vector<double>& by_agent, int agents) {
  if (!by_agent.empty() && static_cast<int>(by_agent.size()) != agents) {
    return Status::InvalidArgument("delivery_penalty_by_agent has " +
                                   std::to_string(by_agent.size()) + " values, the market has " +
                                   std::to_string(agents) + " agents");
  }
  return DeliveryTerm{target, penalty, by_agent};
}

Transition BuildTransition(const Normalizer& norm, const PlayedStep& p,
                           const std::vector<double>& agent_budgets, bool coordinated,
                           const DeliveryTerm& delivery) {
  Transition tr;
  tr.s = p.s;
  tr.d = norm.EncodeD(*p.before);
  tr.a = p.a;
  tr.r = norm.EncodeRewards(p.rewards, agent_budgets, coordinated);
  if (p.done && !delivery.by_agent.empty()) {
    // Each agent's shortfall weighted by its own penalty (coordinated: the weighted sum, for
    // every agent).
    const auto gap = norm.DeliveryShortfall(*p.after, agent_budgets, delivery.target, false);
    std::vector<double> term(tr.r.size(), 0.0);
    double sum = 0;
    for (size_t i = 0; i < tr.r.size() && i < delivery.by_agent.size(); ++i) {
      sum += term[i] = delivery.by_agent[i] * gap[i];
    }
    for (size_t i = 0; i < tr.r.size(); ++i) {
      tr.r[i] -= static_cast<float>(coordinated ? sum : term[i]);
    }
  } else if (p.done && delivery.penalty > 0) {
    // One penalty: its own float arithmetic, so that configs without the list train as before.
    const auto gap = norm.DeliveryShortfall(*p.after, agent_budgets, delivery.target, coordinated);
    for (size_t i = 0; i < tr.r.size(); ++i) {
      tr.r[i] -= static_cast<float>(delivery.penalty) * gap[i];
    }
  }
  tr.s2 = norm.EncodeState(*p.after, agent_budgets);
  tr.d2 = norm.EncodeD(*p.after);
  tr.done = p.done ? 1 : 0;
  tr.episode = p.episode;
  tr.step = p.step;
  return tr;
}

}  // namespace rtb::learn
