// `rtb train`: train every requested method on the training day for several seeds, evaluate
// each deterministically (no noise) on the test day, and build the comparison report.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rtb/core/report.h"
#include "rtb/learner/agents.h"
#include "rtb/learner/config.h"
#include "rtb/simulator/simulate.h"

namespace rtb::learn {

struct TrainOptions {
  std::vector<std::string> algos;  // methods to run ("manual" is always added as the baseline)
  int seeds = 0;                   // 0 = the config's
  int episodes = 0;                // 0 = the config's
  std::string out = "out/train";
  std::string config_path;
  int jobs = 2;         // runs trained in parallel (one intra-op thread each)
  bool resume = false;  // continue from each run's last checkpoint
  bool progress = true;
  // < 1: train for the learned arm of a live A/B test (sim::RestrictToArm): only the users the
  // bidders hash to the learned arm with ab_salt, and that share of every budget.
  double learned_share = 1.0;
  std::string ab_salt = "rtb-ab-1";
  // A world fitted to a market's logged events (`rtb fit`, sim::FittedWorld) to train in
  // instead of the simulator config's generated one: its market, and the learned arm's part of
  // it (learned_share when below 1, else the fitted market's own).
  std::string world;
};

// The result of one policy over one day: per-agent outcomes and the tables it used per step.
struct Evaluation {
  RunResult run;
  std::vector<ActionTable> tables;  // one per step
};

// Plays `day` with the learner's deterministic policy: at each step the table is
// a[i][j] = mu_i([g, x_j]) for the current state (docs/dcmab.md section 2). `index`:
// sim::IndexDay(day, sc.market) when the caller keeps one, else null (built here).
Evaluation EvaluatePolicy(MultiAgentLearner& learner, const sim::Scenario& sc, const sim::Day& day,
                          const std::vector<Micros>& budgets,
                          std::shared_ptr<const sim::DayIndex> index = nullptr);

// The delivery a policy is held to on a day, per agent: `pick_delivery` (0.99), or the most the
// agent can deliver that day when that is less: its delivery when it bids its highest (a = +1)
// against manual bids. A budget is a contract, but a day can make 0.99 unreachable: in the
// learned arm of an A/B test a small advertiser's budget is a few impressions and its last one
// rarely fits what is left (agent 1 of the demo's arm delivers ~98.8% at its highest bids), and
// the coordination world's one slot leaves its agent 1 ~96%. Held to 0.99 there, every policy
// would be discounted and the score would rank policies by that agent's last impressions, not by
// their revenue.
std::vector<double> DeliveryReference(double pick_delivery, const sim::Scenario& sc,
                                      const sim::Day& day, const std::vector<Micros>& budgets);

// The score of a policy on some days: total revenue (with goals, their worth: RunResult::goals
// value), discounted by (worst delivery /
// reference)^50 when some agent spends less than its reference (DeliveryReference) on some day:
// at 1% under it a policy keeps 60% of its score. On the training days it drives the paper's
// convergence rule; on the validation days it picks the model. refs[k] belongs to runs[k].
double TrainingScore(const std::vector<RunResult>& runs,
                     const std::vector<std::vector<double>>& refs);

Result<Report> RunTraining(const LearnerConfig& cfg, const TrainOptions& opt);

}  // namespace rtb::learn
