// The learning agents, behind a torch-free interface (LibTorch stays inside rtb_learner).
//
// One MultiAgentLearner holds, for every agent i, an actor mu_i and whatever its algorithm
// needs (critics, target networks, optimizers). Algorithms (docs/dcmab.md section 6):
//   manual       a = 0, nothing learns
//   bandit       one-step (gamma = 0) critic Q_i(s, a_1..a_N) with every agent's action in
//                its context, no target networks; replay
//   a2c          on-policy Gaussian actor + state-value critic V_i(s); no replay
//   ddpg         independent learners: critic Q_i(s, a_i) sees only its own actions; replay
//   dcmab        centralised critic Q_i(s, a_1..a_N, d), self-interest rewards (Algorithm 1)
//   dcmab-coord  the same with every r_i = total revenue
//   partial      dcmab-coord for the agents in learning_agents; the others keep a = 0
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/learner/config.h"
#include "rtb/learner/state.h"
#include "rtb/learner/transition.h"

namespace rtb::learn {

enum class Algo { kManual, kBandit, kA2c, kDdpg, kDcmab, kDcmabCoord, kPartial };

struct AlgoSpec {
  Algo algo = Algo::kDcmab;
  std::string name = "dcmab";
  bool joint_actions = true;  // critic sees every agent's actions (else only its own)
  bool critic_sees_d = true;  // d joins the critic's state at layer 1
  bool use_targets = true;    // target networks for the critic target (Eq. 9)
  bool coordinated = false;   // r_i = total revenue
  double gamma = 0.99;
  std::vector<bool> learns;  // per agent
  bool off_policy() const { return algo != Algo::kA2c && algo != Algo::kManual; }
  bool trains() const { return algo != Algo::kManual; }
};

// The method names `rtb train --algo` accepts, in report order.
const std::vector<std::string>& AllAlgoNames();
Result<AlgoSpec> MakeAlgoSpec(const std::string& name, int agents,
                              const std::vector<int>& learning_agents, const HyperParams& hp);

struct UpdateStats {
  double critic_loss = 0;
  double actor_loss = 0;
  int updates = 0;
};

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

// The allocator settings for a program that trains (rtb/core/memory.h): LibTorch allocates
// each update's activations and gradients (~1 MB tensors at batch 256) afresh; with glibc's
// defaults they are mmap'ed and unmapped every time, and page faults took ~25% of an update.
inline constexpr size_t kTrainMmapThreshold = size_t{256} << 20;
inline constexpr size_t kTrainTrimThreshold = size_t{1} << 30;

}  // namespace rtb::learn
