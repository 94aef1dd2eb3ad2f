// The networks and minibatches of the learning methods (LibTorch). Only rtb_learner's sources
// and its tests include this.
#pragma once

#include <torch/torch.h>

#include <vector>

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

// Actor inputs [B*L, 2NL+L+2] for state s [B, Ds]: [g, x_j] for j = 1..L.
torch::Tensor ActorInputs(const torch::Tensor& s, int N, int L);

}  // namespace rtb::learn
