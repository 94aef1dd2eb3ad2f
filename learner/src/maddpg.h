// The MADDPG family (bandit, ddpg, dcmab, dcmab-coord, partial; manual builds it and never
// trains it): deterministic actors, Q critics, target networks, Algorithm 1 on minibatches from
// the replay memory (maddpg.cc). The registry's switches (AlgoSpec) say which parts apply.
#pragma once

#include <memory>
#include <vector>

#include "exact_mlp.h"
#include "method.h"
#include "nets.h"

namespace rtb::learn {

// The critic's layer-1 input width (s, and d when it sees it) and the width of the actions
// joined at its layer 2.
int CriticStateDim(const AlgoSpec& spec, const Normalizer& n);
int CriticActionDim(const AlgoSpec& spec, const Normalizer& n);

// What every agent's update reads from one minibatch, computed once per minibatch
// (Maddpg::Prepare). Must not outlive its Batch.
struct Minibatch {
  const Batch* b = nullptr;
  torch::Tensor next_actions;  // a'^q of every agent at s' (Eq. 9): [B', N*L]
  torch::Tensor actor_in;      // the actors' inputs [g, x_j] at s: [B*L, in]
  torch::Tensor critic_s;      // the critics' layer-1 input at s (s, and d if seen): [B, *]
  torch::Tensor critic_s2;     // the same at s': [B', *]
};

class Maddpg : public LearningMethod {
 public:
  Maddpg(const AlgoSpec& spec, const HyperParams& hp, const Normalizer& norm);

  torch::Tensor ActorInputs(const torch::Tensor& s) const { return learn::ActorInputs(s, N, L); }
  // mu_i (or mu'_i) for every cluster: [B, L].
  torch::Tensor ActorActions(int i, const torch::Tensor& actor_in, bool target);
  // a'^q for every agent, computed once per minibatch: [B', N*L] for the next states s2 [B', Ds]
  // (Batch::s2). Non-learning agents: 0.
  torch::Tensor TargetJointActions(const torch::Tensor& s2);
  torch::Tensor CriticState(const torch::Tensor& s, const torch::Tensor& d) const;
  torch::Tensor CriticActions(const torch::Tensor& joint, int i) const;
  // Every agent's target actions, the actors' inputs and the critics' state inputs, once.
  Minibatch Prepare(const Batch& b);
  // Eq. (9) for agent i: y [B, 1], with Q'_i evaluated on the batch's live rows only.
  torch::Tensor CriticTargets(int i, const Minibatch& mb);
  // Eq. (11): -mean Q_i(s, a_1..mu_i(s)..a_N, d).
  torch::Tensor ActorLoss(int i, const Minibatch& mb);
  // The gradient of Eq. (11)'s loss with respect to agent i's actor parameters, in
  // actor_flat[i].grad (zeroed first); no other network's gradient is computed.
  void ActorGradients(int i, const torch::Tensor& actor_loss);
  // One step of Algorithm 1 for agent i: critic (Eqs. 9, 10), actor (Eq. 11), soft update.
  // Forward and backward run through ExactMlp (exact_mlp.h), or through the LibTorch modules
  // and autograd when `reference_autograd`: the same floats either way, the first faster.
  void UpdateAgent(int i, const Minibatch& mb, UpdateStats* stats);
  // Algorithm 1 on one minibatch shared by every agent: Prepare once (every agent's target
  // actions a'^q, Eq. 9), then UpdateAgent for each learning agent in turn.
  void Update(const Batch& b, UpdateStats* stats);

  // LearningMethod: actions are mu plus the action noise; Algorithm 1 on one shared minibatch
  // (Update) or one per agent (the paper's order); checkpoints hold every network, target and
  // optimiser.
  Actor& actor(int i) override { return actors[static_cast<size_t>(i)]; }
  double Explore(int i, int j, double mu, Exploration& x) override;
  UpdateStats UpdateOnMinibatches(const std::vector<std::vector<Transition>>& batches) override;
  Status SaveAgent(int i, const std::string& prefix) const override;
  Status LoadAgent(int i, const std::string& prefix) override;
  void Loaded() override { Relink(); }

  // The update through torch::nn modules and autograd: the reference ExactMlp is tested
  // against, and the previous version bench/bench_learner.cc times.
  bool reference_autograd = false;

  AlgoSpec spec;
  HyperParams hp;
  Normalizer norm;
  int N, L;
  // Re-links every network's parameters to its flat buffers (after loading a checkpoint).
  void Relink();

  std::vector<Actor> actors, actor_targets;
  std::vector<Critic> critics, critic_targets;
  std::vector<FlatParams> actor_flat, actor_target_flat, critic_flat, critic_target_flat;
  std::vector<std::unique_ptr<torch::optim::Adam>> actor_opts, critic_opts;

 private:
  void UpdateAgentAutograd(int i, const Minibatch& mb, UpdateStats* stats);
  // Gradient clipping (global norm) and Adam on one network's flat buffer.
  void OptimizerStep(FlatParams& flat, torch::optim::Adam& opt) const;
  // The same, and then the soft update of `target` when not null, in one pass
  // (ClipAdamSoftUpdate): the same floats, and the same optimiser state for checkpoints except
  // that subnormal moments are flushed to zero.
  void ExactOptimizerStep(FlatParams& flat, torch::optim::Adam& opt, FlatParams* target) const;

  // Every actor and every critic has one of these two shapes; scratch for their kernels.
  ExactMlp actor_mlp_, critic_mlp_;
};

}  // namespace rtb::learn
