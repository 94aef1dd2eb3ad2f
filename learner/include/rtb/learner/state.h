// From the environment's raw observation to the networks' normalised inputs (docs/dcmab.md s4).
// Torch-free: the offline trainer and the online learner (fed by Kafka) share it.
//
// s^q = [g_cost (N*L), g_revenue (N*L), x_1 .. x_L] with
//   g_cost_ij    = cost_ij / budget_i            (the current day's budget of agent i)
//   g_revenue_ij = revenue_ij / (budget_i * roi_scale)
//   x_j          = [onehot_L(j), revenue_hist_j(t) / max revenue_hist, cost_hist_j(t) / max
//   cost_hist]
// The actor of agent i sees [g, x_j] (2NL + L + 2 numbers; 23 for N = L = 3).
// Rewards are normalised the same way: r_i / (budget_i * roi_scale) (coordinated: by the total
// budget). The scales are stored with the model (Normalizer).
#pragma once

#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/learner/transition.h"
#include "rtb/simulator/env.h"

namespace rtb::learn {

struct Normalizer {
  int agents = 0, clusters = 0;
  double roi_scale = 4.0;
  double x_revenue_scale = 1.0;  // max revenue_hist over steps and clusters
  double x_cost_scale = 1.0;     // max cost_hist over steps and clusters

  int StateDim() const { return 2 * agents * clusters + clusters * (clusters + 2); }
  int ActorInputDim() const { return 2 * agents * clusters + clusters + 2; }

  std::vector<float> EncodeState(const sim::Observation& o,
                                 const std::vector<double>& agent_budgets) const;
  std::vector<float> EncodeD(const sim::Observation& o) const;
  // rewards (currency units, per agent) -> normalised rewards.
  std::vector<float> EncodeRewards(const std::vector<double>& rewards,
                                   const std::vector<double>& agent_budgets,
                                   bool coordinated) const;
  // The budget-delivery term of the last step: per agent max(0, target - cost_i / budget_i),
  // from the cumulative cost in the final observation; coordinated gives every agent the sum.
  std::vector<float> DeliveryShortfall(const sim::Observation& final_obs,
                                       const std::vector<double>& agent_budgets, double target,
                                       bool coordinated) const;
  std::string ToJson() const;
  static Result<Normalizer> FromJson(const std::string& json);
};

Normalizer MakeNormalizer(const sim::Market& m, double roi_scale);

// One played step, as the offline trainer (the simulated environment) and the online learner
// (the bidders' events) both see it.
struct PlayedStep {
  std::vector<float> s;            // the normalised state the actions were computed from
  const sim::Observation* before;  // the raw observation at the step's start (its d)
  std::vector<float> a;            // the executed (noisy) actions a^q
  std::vector<double> rewards;     // revenue per agent in the step, currency units
  const sim::Observation* after;   // the raw observation at the step's end
  bool done = false;               // the day's last step
  uint64_t episode = 0;
  uint32_t step = 0;
};

// The delivery term (LearnerConfig::delivery_target, delivery_penalty): at the day's last step
// r_i -= penalty x max(0, target - cost_i / budget_i).
struct DeliveryTerm {
  double target = 0.995;
  double penalty = 0.0;          // 0 = none
  std::vector<double> by_agent;  // per agent instead of `penalty` ([] = `penalty` for all)
};
// The delivery term of a config (delivery_target, delivery_penalty, delivery_penalty_by_agent)
// for a market of `agents` agents; an error when the per-agent list does not have one value per
// agent.
Result<DeliveryTerm> MakeDeliveryTerm(double target, double penalty,
                                      const std::vector<double>& by_agent, int agents);

// The transition of docs/dcmab.md section 5, normalised: (s^q, d, a^q, r, s^q', d', done).
// The one builder both learners use.
Transition BuildTransition(const Normalizer& norm, const PlayedStep& p,
                           const std::vector<double>& agent_budgets, bool coordinated,
                           const DeliveryTerm& delivery);

}  // namespace rtb::learn
