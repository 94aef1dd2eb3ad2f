// One training run (a method, a seed), shared by `rtb train` (train.cc) and `rtb tune`
// (tune.cc). Private to learner/src.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rtb/core/progress.h"
#include "rtb/core/report.h"
#include "rtb/learner/agents.h"
#include "rtb/learner/config.h"
#include "rtb/simulator/engine.h"
#include "rtb/simulator/simulate.h"

namespace rtb::learn {

struct RunOutput {
  RunResult test;
  std::vector<ActionTable> tables;
  int episodes = 0;
  double seconds = 0;
  // The best selection score so far (validation days; training days if none): what picks the
  // model, and what `rtb tune` compares trials by.
  double best_pick = -1;
  bool converged = false;  // stopped by the paper's convergence rule (patience) before `episodes`
};

// What every run on a scenario reads about its days: properties of the days alone, computed once
// per scenario and shared read-only by all of its runs and rungs.
struct ScenarioDays {
  // The most each agent can deliver on each scored day (DeliveryReference before pick_delivery
  // caps it): training days (train, then extra_train) and validation days.
  std::vector<std::vector<double>> most_train, most_validation;
  // What the auction engines on each day precompute (sim::IndexDay), in the same order, and the
  // test day's: an evaluation reuses it instead of redoing it every episode.
  std::vector<std::shared_ptr<const sim::DayIndex>> train_index, validation_index;
  std::shared_ptr<const sim::DayIndex> test_index;
};
ScenarioDays PrepareDays(const sim::Scenario& sc);

// Trains `spec` with `seed` up to `episodes` episodes in `dir` (the training loop of Algorithm
// 1), resuming from dir's last checkpoint when `resume` and one exists, then evaluates the
// picked model on the test day. `days` is PrepareDays(sc). `progress` counts episodes.
Result<RunOutput> TrainOne(const LearnerConfig& cfg, const AlgoSpec& spec, const sim::Scenario& sc,
                           const ScenarioDays& days, uint64_t seed, int episodes,
                           const std::string& dir, bool resume, std::atomic<int64_t>* progress);

// Runs work(k) for every k in [0, n) on `jobs` threads (at least one), each taking the next k in
// order, and updates `progress` from `done` (episodes) until all have finished.
void RunParallel(size_t n, int jobs, const std::function<void(size_t)>& work, Progress& progress,
                 const std::atomic<int64_t>& done);

}  // namespace rtb::learn
