// The learning agents, behind a torch-free interface (LibTorch stays inside rtb_learner).
//
// One MultiAgentLearner holds, for every agent i, an actor mu_i and whatever its method needs
// (critics, target networks, optimizers). The methods, and what each learns with, are the
// registry's (AlgoRegistry, algo_spec.h; docs/dcmab.md section 6).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rtb/core/rng.h"
#include "rtb/core/status.h"
#include "rtb/learner/algo_spec.h"
#include "rtb/learner/config.h"
#include "rtb/learner/replay_store.h"
#include "rtb/learner/state.h"
#include "rtb/learner/transition.h"

namespace rtb::learn {

class MultiAgentLearner {
 public:
  MultiAgentLearner(const AlgoSpec& spec, const HyperParams& hp, const Normalizer& norm,
                    uint64_t seed);
  ~MultiAgentLearner();
  MultiAgentLearner(const MultiAgentLearner&) = delete;
  MultiAgentLearner& operator=(const MultiAgentLearner&) = delete;

  // a^q for state s (N*L values, agent-major, in [-1, 1]). explore adds the exploration
  // noise (or samples the A2C policy); agents that do not learn always get 0.
  std::vector<float> Act(const std::vector<float>& s, bool explore);
  // One update of every learning agent (Algorithm 1) on minibatches drawn by the caller:
  // one shared batch, or one per agent (batches.size() == N).
  UpdateStats Update(const std::vector<std::vector<Transition>>& batches);
  // A2C: one update on the episode just played (on-policy).
  UpdateStats UpdateOnPolicy(const std::vector<Transition>& episode);
  // Decays the exploration noise; resets the OU process.
  void EndEpisode();

  // Keeps / brings back a copy of every actor (model selection on the training score).
  void Snapshot();
  void RestoreSnapshot();

  // Checkpoint: every network, target, optimizer, the noise state, the RNG and counters.
  Status SaveCheckpoint(const std::string& dir) const;
  Status LoadCheckpoint(const std::string& dir);
  // Each actor as TorchScript (actor_<i>.pt, loadable by Python's torch.jit.load), plus
  // normalization.json.
  Status ExportTorchScript(const std::string& dir) const;

  const AlgoSpec& spec() const;
  const Normalizer& normalizer() const;
  double noise_sigma() const;
  int64_t episodes_done() const;
  // Flattened parameters of actor i (tests, determinism checks).
  std::vector<float> ActorParameters(int i) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Algorithm 1, lines 10-15, as both learners run it after storing a step's transition:
// `updates` times, every learning agent is updated on minibatches of hp.batch_size sampled from
// the replay memory (one shared by all agents, or one per agent: hp.shared_minibatch). Nothing
// happens before the memory holds hp.warmup_transitions. Returns the last update's losses.
Result<UpdateStats> UpdateFromReplay(MultiAgentLearner& learner, ReplayStore& replay,
                                     const HyperParams& hp, int updates, Rng& sample_rng);

// The allocator settings for a program that trains (rtb/core/memory.h): LibTorch allocates
// each update's activations and gradients (~1 MB tensors at batch 256) afresh; with glibc's
// defaults they are mmap'ed and unmapped every time, and page faults took ~25% of an update.
inline constexpr size_t kTrainMmapThreshold = size_t{256} << 20;
inline constexpr size_t kTrainTrimThreshold = size_t{1} << 30;

}  // namespace rtb::learn
