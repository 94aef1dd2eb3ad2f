// LibTorch internals of the learner. Only rtb_learner's sources and its tests include this.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "mlp_kernels.h"
#include "rtb/learner/agents.h"

namespace rtb::learn {

// mu_i: [g, x_j] -> hidden -> hidden -> 1, ReLU, tanh output (dcmab.md section 5).
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
// One optimiser step on a flat network, in one pass over its parameters: the gradient clipped
// to a global norm of max_norm (as torch::nn::utils::clip_grad_norm_), an Adam step (as
// torch::optim::Adam::step, on the optimiser's own state, so checkpoints are unchanged), then
// the soft update of target, if given: theta' <- tau * theta + (1 - tau) * theta'.
// The optimiser must hold exactly net.data, without weight decay or AMSGrad.
void ClipAdamSoftUpdate(FlatParams& net, torch::optim::Adam& opt, double max_norm,
                        FlatParams* target, double tau);

// Makes m's parameters views into flat->data (allocated on first use, reused after), keeping
// their values; with_grad, their gradients views into flat->grad. Called again after
// torch::load, which gives the parameters storage of their own.
void Flatten(torch::nn::Module& m, bool with_grad, FlatParams* flat);

// Eq. (9): y = r + gamma * (1 - done) * Q'(s', a'_1..a'_N, d').
inline float CriticTarget(float r, float done, float q_next, double gamma) {
  return static_cast<float>(r + gamma * (1.0 - done) * q_next);
}

struct Batch {
  torch::Tensor s, d, a, r, s2, d2, done;  // [B, *]; done [B, 1]
};
Batch MakeBatch(const std::vector<Transition>& ts);

// Actor inputs [B*L, 2NL+L+2] for state s [B, Ds]: [g, x_j] for j = 1..L.
torch::Tensor ActorInputs(const torch::Tensor& s, int N, int L);

// One minibatch, prepared once for every agent that updates on it.
struct Minibatch {
  Batch b;
  torch::Tensor actor_in;      // [B*L, 2NL+L+2]: [g, x_j] of s, the actors' inputs
  torch::Tensor next_actions;  // [B, N*L]: a'^q = mu'_k(s') for every agent k (Eq. 9)
  torch::Tensor cs, cs2;       // the critics' state input at s and at s' ([s, d] if it sees d)
};

// The MADDPG family: bandit, ddpg, dcmab, dcmab-coord, partial.
//
// The update's gradients are hand-derived (mlp_kernels.h) rather than taken by autograd: the
// same arithmetic without LibTorch's per-operation overhead. The networks stay torch modules
// (acting, export, checkpoints), and their parameters are views into the flat buffers that the
// kernels read and whose gradients they write.
class Maddpg {
 public:
  Maddpg(const AlgoSpec& spec, const HyperParams& hp, const Normalizer& norm);

  torch::Tensor ActorInputs(const torch::Tensor& s) const { return learn::ActorInputs(s, N, L); }
  // mu_i (or mu'_i) for every cluster: [B, L].
  torch::Tensor ActorActions(int i, const torch::Tensor& actor_in, bool target);
  // a'^q for every agent, computed once per minibatch: [B, N*L]. Non-learning agents: 0.
  torch::Tensor TargetJointActions(const torch::Tensor& s2);
  torch::Tensor CriticState(const torch::Tensor& s, const torch::Tensor& d) const;
  Minibatch Prepare(const std::vector<Transition>& ts);

  // Eq. (10): writes dL/dtheta_i of L = mean_b (y_b - Q_i(s, a_1..a_N, d))^2 into
  // critic_flat[i].grad; returns L.
  double CriticGradient(int i, const Minibatch& mb, const std::vector<float>& y);
  // Eq. (11): writes the gradient of -mean_b Q_i(s, a_1..mu_i(s)..a_N, d) (plus the pre-tanh
  // penalty, hyper.actor_preact_reg) with respect to agent i's actor into actor_flat[i].grad;
  // returns the loss. Nothing else gets a gradient.
  double ActorGradient(int i, const Minibatch& mb);
  // One step of Algorithm 1 for agent i: critic (Eqs. 9, 10), actor (Eq. 11), soft update.
  void UpdateAgent(int i, const Minibatch& mb, UpdateStats* stats);

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
  // The columns of a joint action [B, N*L] that agent i's critic sees: all of them (joint
  // critics) or agent i's own L (a pointer into joint, or into scratch).
  const float* CriticActions(const float* joint, int rows, int i, std::vector<float>* scratch);

  MlpKernel actor_kernel_, critic_kernel_;
  std::vector<float> q_, y_, u_, joint_, acts_, d_q_, d_acts_, d_u_;  // reused scratch
};

}  // namespace rtb::learn
