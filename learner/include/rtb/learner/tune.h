// `rtb tune`: successive-halving search over learner configurations (the HyperTrick idea: many
// configurations as parallel workers, compared at fixed episode checkpoints, the worst fraction
// evicted at each, so a search costs a few full runs instead of one per configuration).
//
//   trial 0        = the config as given (the default the search must match or beat)
//   trials 1..n-1  = drawn from the search space below with --seed
//   rungs          = min_episodes, min_episodes x eta, ... , max_episodes (episodes trained)
//   at each rung   = every surviving trial trains on to the rung (resuming its checkpoint;
//                    `jobs` at a time), is scored by its model-picking score (the validation
//                    days' score, learner/README.md), and the best ceil(n / eta) go on
//
// Trials train one seed (the config's base_seed) of one method. A trial the paper's convergence
// rule stops early keeps its score and trains no more. Rungs are synchronous (every trial of a
// rung finishes before any is evicted), so the same seed gives the same search.
//
// Search space (each trial draws every parameter; log-uniform for rates and scales):
//   actor_lr, critic_lr in [1e-4, 3e-3]; tau in [0.003, 0.03]; batch_size in {32, 64, 128};
//   updates_per_step in {4, 8, 16}; noise_sigma in [0.1, 0.5]; delivery_penalty in [5, 40].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/learner/config.h"

namespace rtb::learn {

struct TuneOptions {
  std::string algo = "dcmab";  // the method tuned
  int trials = 8;              // configurations (>= 2); trial 0 is the config as given
  int min_episodes = 25;       // the first rung
  int eta = 2;                 // keep the best 1/eta at each rung; rungs grow by eta
  int max_episodes = 0;        // the last rung (0 = the config's episodes)
  uint64_t seed = 1;           // draws the configurations
  int jobs = 2;                // trials trained at once (one intra-op thread each)
  std::string out = "out/tune";
  std::string config_path;  // the learner config (its text is the base of best.yaml)
  bool progress = true;
};

// The parameters a trial sets (the rest of its config is the base config's).
struct TrialParams {
  double actor_lr = 0, critic_lr = 0, tau = 0, noise_sigma = 0, delivery_penalty = 0;
  int batch_size = 0, updates_per_step = 0;
};

struct Trial {
  int id = 0;
  TrialParams params;
  std::vector<double> scores;  // the score at each rung it reached
  int episodes = 0;            // episodes trained
  bool converged = false;      // stopped by the convergence rule
  int stopped_at = 0;          // the rung (episodes) where it was evicted; 0 = it finished
  std::vector<double> curve;   // its validation score per episode (episodes.csv)
};

struct TuneResult {
  std::vector<int> rungs;
  std::vector<Trial> trials;
  int best = 0;          // the trial with the best score at the last rung
  int64_t episodes = 0;  // episodes trained over all trials
  double full_runs = 0;  // episodes / (the config's episodes x seeds)
  double seconds = 0;
};

// The rung schedule: min, min x eta, ... below max, then max. Errors: min < 1, eta < 2,
// max < min.
Result<std::vector<int>> TuneRungs(int min_episodes, int eta, int max_episodes);
// Trial t's parameters: t = 0 is `base`'s; others are drawn with Rng::Mix(seed, t).
TrialParams DrawTrialParams(const LearnerConfig& base, int t, uint64_t seed);
LearnerConfig WithParams(const LearnerConfig& base, const TrialParams& p);
// The config text with the tuned keys' values replaced (comments and every other key kept).
// Errors: a tuned key is missing from the text.
Result<std::string> RewriteConfigText(const std::string& text, const TrialParams& p);

// Runs the search and writes out/: report.{json,md,html}, best.yaml (the base config with the
// winner's parameters), trial<k>/ (each trial's run).
Result<TuneResult> RunTuning(const LearnerConfig& cfg, const TuneOptions& opt);

}  // namespace rtb::learn
