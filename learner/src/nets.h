// LibTorch internals of the learner. Only rtb_learner's sources and its tests include this.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "exact_mlp.h"
#include "rtb/learner/algo_spec.h"
#include "rtb/learner/state.h"
#include "rtb/learner/transition.h"

namespace rtb::learn {

// mu_i: [g, x_j] -> hidden -> hidden -> 1, ReLU, tanh output (docs/dcmab.md section 5).
struct ActorImpl : torch::nn::Module {
  ActorImpl(int in, int hidden);
  torch::Tensor forward(const torch::Tensor& x) { return torch::tanh(preact(x)); }
  // The output before tanh (for the saturation penalty).
  torch::Tensor preact(const torch::Tensor& x);
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
};
TORCH_MODULE(Actor);

// Q_i: state (and d) into layer 1; actions joined at layer 2 (as in DDPG); linear output.
// With act_in = 0 it is a state-value network V_i(s) (A2C).
struct CriticImpl : torch::nn::Module {
  CriticImpl(int state_in, int act_in, int hidden);
  torch::Tensor forward(const torch::Tensor& state, const torch::Tensor& actions);
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  int act_in;
};
TORCH_MODULE(Critic);

// theta' <- tau * theta + (1 - tau) * theta'
void SoftUpdate(torch::Tensor target, const torch::Tensor& source, double tau);
void SoftUpdate(torch::nn::Module& target, const torch::nn::Module& source, double tau);
void HardUpdate(torch::nn::Module& target, const torch::nn::Module& source);

// One network's parameters, and their gradients, as two contiguous buffers: the module's
// parameters (and their .grad) are views into them. The optimiser step, gradient clipping and
// the soft update then each run as a few whole-network operations instead of a few per layer
// (the same elementwise arithmetic; clipping uses the same global norm).
struct FlatParams {
  torch::Tensor data;  // [P], every parameter in Module::parameters() order; the optimiser's
                       // single parameter
  torch::Tensor grad;  // [P], data's gradient (undefined for target networks)
};
// Makes m's parameters views into flat->data (allocated on first use, reused after), keeping
// their values; with_grad, their gradients views into flat->grad. Called again after
// torch::load, which gives the parameters storage of their own.
void Flatten(torch::nn::Module& m, bool with_grad, FlatParams* flat);

// Eq. (9): y = r + gamma * (1 - done) * Q'(s', a'_1..a'_N, d'). Shapes [B, 1].
torch::Tensor CriticTarget(const torch::Tensor& r, const torch::Tensor& done,
                           const torch::Tensor& q_next, double gamma);

struct Batch {
  torch::Tensor s, d, a, r, done;  // [B, *]; done [B, 1]
  // Eq. (9) uses Q'_i(s', a'_1..a'_N, d') only where the episode goes on (done = 0; y = r_i at
  // the last step): the next states of those rows, and their row numbers in the batch. Target
  // actors and critics run on these rows alone (a third of the rows are last steps when T = 3).
  torch::Tensor s2, d2;  // [B', *], B' = rows with done = 0
  torch::Tensor live;    // [B'] int64
};
Batch MakeBatch(const std::vector<Transition>& ts);

// The critic's layer-1 input width (s, and d when it sees it) and the width of the actions
// joined at its layer 2.
int CriticStateDim(const AlgoSpec& spec, const Normalizer& n);
int CriticActionDim(const AlgoSpec& spec, const Normalizer& n);

// Actor inputs [B*L, 2NL+L+2] for state s [B, Ds]: [g, x_j] for j = 1..L.
torch::Tensor ActorInputs(const torch::Tensor& s, int N, int L);

// What every agent's update reads from one minibatch, computed once per minibatch
// (Maddpg::Prepare). Must not outlive its Batch.
struct Minibatch {
  const Batch* b = nullptr;
  torch::Tensor next_actions;  // a'^q of every agent at s' (Eq. 9): [B', N*L]
  torch::Tensor actor_in;      // the actors' inputs [g, x_j] at s: [B*L, in]
  torch::Tensor critic_s;      // the critics' layer-1 input at s (s, and d if seen): [B, *]
  torch::Tensor critic_s2;     // the same at s': [B', *]
};

// The MADDPG family: bandit, ddpg, dcmab, dcmab-coord, partial.
class Maddpg {
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
