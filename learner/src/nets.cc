#include "nets.h"

#include <cmath>

namespace rtb::learn {

using torch::indexing::Slice;

ActorImpl::ActorImpl(int in, int hidden)
    : l1(register_module("l1", torch::nn::Linear(in, hidden))),
      l2(register_module("l2", torch::nn::Linear(hidden, hidden))),
      l3(register_module("l3", torch::nn::Linear(hidden, 1))) {
  // Small last layer: the policy starts near a = 0 (manual bids), as DDPG initialises.
  torch::NoGradGuard g;
  l3->weight.uniform_(-3e-3, 3e-3);
  l3->bias.uniform_(-3e-3, 3e-3);
}

torch::Tensor ActorImpl::preact(const torch::Tensor& x) {
  return l3(torch::relu(l2(torch::relu(l1(x)))));
}

CriticImpl::CriticImpl(int state_in, int act, int hidden)
    : l1(register_module("l1", torch::nn::Linear(state_in, hidden))),
      l2(register_module("l2", torch::nn::Linear(hidden + act, hidden))),
      l3(register_module("l3", torch::nn::Linear(hidden, 1))),
      act_in(act) {}

torch::Tensor CriticImpl::forward(const torch::Tensor& state, const torch::Tensor& actions) {
  torch::Tensor h = torch::relu(l1(state));
  if (act_in > 0) h = torch::cat({h, actions}, 1);
  return l3(torch::relu(l2(h)));
}

void SoftUpdate(torch::Tensor target, const torch::Tensor& source, double tau) {
  torch::NoGradGuard g;
  target.mul_(1.0 - tau).add_(source, tau);
}

void SoftUpdate(torch::nn::Module& target, const torch::nn::Module& source, double tau) {
  auto tp = target.parameters();
  auto sp = source.parameters();
  for (size_t k = 0; k < tp.size(); ++k) SoftUpdate(tp[k], sp[k], tau);
}

void Flatten(torch::nn::Module& m, bool with_grad, FlatParams* flat) {
  torch::NoGradGuard g;
  auto ps = m.parameters();
  int64_t n = 0;
  for (const auto& p : ps) n += p.numel();
  if (!flat->data.defined()) {
    flat->data = torch::empty({n}, torch::kFloat);
    if (with_grad) {
      flat->grad = torch::zeros({n}, torch::kFloat);
      flat->data.set_requires_grad(true);  // a leaf for the optimiser; never in a graph
      flat->data.mutable_grad() = flat->grad;
    }
  }
  int64_t off = 0;
  for (auto& p : ps) {
    const int64_t k = p.numel();
    torch::Tensor view = flat->data.narrow(0, off, k).view(p.sizes());
    view.copy_(p);
    p.set_data(view);
    // Autograd accumulates in place into a defined .grad: backward() writes into flat->grad.
    if (with_grad) p.mutable_grad() = flat->grad.narrow(0, off, k).view(p.sizes());
    off += k;
  }
}

void ClipAdamSoftUpdate(FlatParams& net, torch::optim::Adam& opt, double max_norm,
                        FlatParams* target, double tau) {
  torch::NoGradGuard g;
  const auto& o = static_cast<const torch::optim::AdamOptions&>(opt.param_groups()[0].options());
  TORCH_CHECK(o.weight_decay() == 0 && !o.amsgrad(), "ClipAdamSoftUpdate: plain Adam only");
  TORCH_CHECK(opt.param_groups().size() == 1 && opt.param_groups()[0].params().size() == 1 &&
                  opt.param_groups()[0].params()[0].is_same(net.data),
              "ClipAdamSoftUpdate: the optimiser must hold net.data alone");
  if (opt.state().empty()) {
    // The first step creates Adam's state (moments and step count): LibTorch's own path.
    torch::nn::utils::clip_grad_norm_(net.data, max_norm);
    opt.step();
    if (target != nullptr) SoftUpdate(target->data, net.data, tau);
    return;
  }
  auto& st = static_cast<torch::optim::AdamParamState&>(*opt.state().begin()->second);
  const int64_t n = net.data.numel();
  // clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
  const double coef = max_norm / (std::sqrt(SumOfSquares(net.grad.data_ptr<float>(), n)) + 1e-6);
  // Adam (Kingma & Ba, Algorithm 1), in LibTorch's order of operations.
  st.step(st.step() + 1);
  const double b1 = std::get<0>(o.betas()), b2 = std::get<1>(o.betas());
  const double bc1 = 1 - std::pow(b1, static_cast<double>(st.step()));
  const double bc2 = 1 - std::pow(b2, static_cast<double>(st.step()));
  AdamStep c;
  c.scale = coef < 1.0 ? static_cast<float>(coef) : 1.0f;
  c.beta1 = static_cast<float>(b1);
  c.beta2 = static_cast<float>(b2);
  c.one_minus_beta1 = static_cast<float>(1 - b1);
  c.one_minus_beta2 = static_cast<float>(1 - b2);
  c.sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
  c.eps = static_cast<float>(o.eps());
  c.step_size = static_cast<float>(o.lr() / bc1);
  c.keep = static_cast<float>(1.0 - tau);
  c.move = static_cast<float>(tau);
  AdamSoftUpdate(c, n, net.grad.data_ptr<float>(), net.data.data_ptr<float>(),
                 st.exp_avg().data_ptr<float>(), st.exp_avg_sq().data_ptr<float>(),
                 target != nullptr ? target->data.data_ptr<float>() : nullptr);
}

void HardUpdate(torch::nn::Module& target, const torch::nn::Module& source) {
  torch::NoGradGuard g;
  auto tp = target.parameters();
  auto sp = source.parameters();
  for (size_t k = 0; k < tp.size(); ++k) tp[k].copy_(sp[k]);
}

namespace {
torch::Tensor Stack(const std::vector<Transition>& ts, std::vector<float> Transition::*field) {
  const int64_t B = static_cast<int64_t>(ts.size());
  const int64_t D = static_cast<int64_t>((ts[0].*field).size());
  torch::Tensor t = torch::empty({B, D}, torch::kFloat);
  float* p = t.data_ptr<float>();
  for (int64_t b = 0; b < B; ++b) {
    std::copy((ts[static_cast<size_t>(b)].*field).begin(),
              (ts[static_cast<size_t>(b)].*field).end(), p + b * D);
  }
  return t;
}
}  // namespace

Batch MakeBatch(const std::vector<Transition>& ts) {
  Batch b;
  b.s = Stack(ts, &Transition::s);
  b.d = Stack(ts, &Transition::d);
  b.a = Stack(ts, &Transition::a);
  b.r = Stack(ts, &Transition::r);
  b.s2 = Stack(ts, &Transition::s2);
  b.d2 = Stack(ts, &Transition::d2);
  b.done = torch::empty({static_cast<int64_t>(ts.size()), 1}, torch::kFloat);
  for (size_t i = 0; i < ts.size(); ++i)
    b.done[static_cast<int64_t>(i)][0] = ts[i].done ? 1.0f : 0.0f;
  return b;
}

torch::Tensor ActorInputs(const torch::Tensor& s, int N, int L) {
  const int64_t B = s.size(0);
  const int64_t G = 2 * N * L, W = L + 2;
  torch::Tensor g = s.index({Slice(), Slice(0, G)});                             // [B, 2NL]
  torch::Tensor x = s.index({Slice(), Slice(G, G + L * W)}).reshape({B, L, W});  // [B, L, L+2]
  torch::Tensor in = torch::cat({g.unsqueeze(1).expand({B, L, G}), x}, 2);       // [B, L, 2NL+L+2]
  return in.reshape({B * L, G + W});
}

namespace {
int CriticStateIn(const AlgoSpec& spec, const Normalizer& n) {
  return n.StateDim() + (spec.critic_sees_d ? n.agents * n.clusters : 0);
}
int CriticActIn(const AlgoSpec& spec, const Normalizer& n) {
  return spec.joint_actions ? n.agents * n.clusters : n.clusters;
}
const float* Floats(const torch::Tensor& t) {
  TORCH_CHECK(t.is_contiguous() && t.scalar_type() == torch::kFloat, "expects contiguous float");
  return t.data_ptr<float>();
}
float* Floats(FlatParams& f, bool grad) { return (grad ? f.grad : f.data).data_ptr<float>(); }
}  // namespace

Maddpg::Maddpg(const AlgoSpec& s, const HyperParams& h, const Normalizer& n)
    : spec(s),
      hp(h),
      norm(n),
      N(n.agents),
      L(n.clusters),
      actor_kernel_(n.ActorInputDim(), h.actor_hidden, 0),
      critic_kernel_(CriticStateIn(s, n), h.critic_hidden, CriticActIn(s, n)) {
  const int state_in = CriticStateIn(spec, norm);
  const int act_in = CriticActIn(spec, norm);
  for (int i = 0; i < N; ++i) {
    actors.emplace_back(norm.ActorInputDim(), hp.actor_hidden);
    actor_targets.emplace_back(norm.ActorInputDim(), hp.actor_hidden);
    critics.emplace_back(state_in, act_in, hp.critic_hidden);
    critic_targets.emplace_back(state_in, act_in, hp.critic_hidden);
    HardUpdate(*actor_targets.back(), *actors.back());
    HardUpdate(*critic_targets.back(), *critics.back());
  }
  actor_flat.resize(static_cast<size_t>(N));
  actor_target_flat.resize(static_cast<size_t>(N));
  critic_flat.resize(static_cast<size_t>(N));
  critic_target_flat.resize(static_cast<size_t>(N));
  Relink();
  for (size_t k = 0; k < static_cast<size_t>(N); ++k) {
    // Adam over the flat buffer: elementwise, so the same update as over each layer.
    actor_opts.push_back(std::make_unique<torch::optim::Adam>(
        std::vector<torch::Tensor>{actor_flat[k].data}, torch::optim::AdamOptions(hp.actor_lr)));
    critic_opts.push_back(std::make_unique<torch::optim::Adam>(
        std::vector<torch::Tensor>{critic_flat[k].data}, torch::optim::AdamOptions(hp.critic_lr)));
  }
}

void Maddpg::Relink() {
  for (size_t k = 0; k < static_cast<size_t>(N); ++k) {
    Flatten(*actors[k], true, &actor_flat[k]);
    Flatten(*actor_targets[k], false, &actor_target_flat[k]);
    Flatten(*critics[k], true, &critic_flat[k]);
    Flatten(*critic_targets[k], false, &critic_target_flat[k]);
  }
}

torch::Tensor Maddpg::ActorActions(int i, const torch::Tensor& actor_in, bool target) {
  Actor& net = target ? actor_targets[static_cast<size_t>(i)] : actors[static_cast<size_t>(i)];
  return net->forward(actor_in).reshape({-1, L});
}

torch::Tensor Maddpg::TargetJointActions(const torch::Tensor& s2) {
  const int B = static_cast<int>(s2.size(0));
  const torch::Tensor in = ActorInputs(s2);
  torch::Tensor joint = torch::zeros({B, N * L}, torch::kFloat);
  float* out = joint.data_ptr<float>();
  u_.resize(static_cast<size_t>(B * L));
  for (int o = 0; o < N; ++o) {
    const size_t k = static_cast<size_t>(o);
    if (!spec.learns[k]) continue;
    FlatParams& net = spec.use_targets ? actor_target_flat[k] : actor_flat[k];
    actor_kernel_.Forward(Floats(net, false), Floats(in), nullptr, B * L, u_.data());
    for (int b = 0; b < B; ++b) {
      for (int j = 0; j < L; ++j) out[b * N * L + o * L + j] = std::tanh(u_[b * L + j]);
    }
  }
  return joint;
}

torch::Tensor Maddpg::CriticState(const torch::Tensor& s, const torch::Tensor& d) const {
  return spec.critic_sees_d ? torch::cat({s, d}, 1) : s;
}

Minibatch Maddpg::Prepare(const std::vector<Transition>& ts) {
  Minibatch mb;
  mb.b = MakeBatch(ts);
  mb.actor_in = ActorInputs(mb.b.s);
  mb.next_actions = TargetJointActions(mb.b.s2);
  mb.cs = CriticState(mb.b.s, mb.b.d).contiguous();
  mb.cs2 = CriticState(mb.b.s2, mb.b.d2).contiguous();
  return mb;
}

const float* Maddpg::CriticActions(const float* joint, int rows, int i,
                                   std::vector<float>* scratch) {
  if (spec.joint_actions) return joint;
  scratch->resize(static_cast<size_t>(rows * L));
  for (int b = 0; b < rows; ++b) {
    std::copy(joint + b * N * L + i * L, joint + b * N * L + (i + 1) * L, scratch->data() + b * L);
  }
  return scratch->data();
}

double Maddpg::CriticGradient(int i, const Minibatch& mb, const std::vector<float>& y) {
  FlatParams& net = critic_flat[static_cast<size_t>(i)];
  const int B = static_cast<int>(mb.b.s.size(0));
  q_.resize(static_cast<size_t>(B));
  d_q_.resize(static_cast<size_t>(B));
  const float* acts = CriticActions(Floats(mb.b.a), B, i, &acts_);
  critic_kernel_.Forward(Floats(net, false), Floats(mb.cs), acts, B, q_.data());
  double loss = 0;
  for (int b = 0; b < B; ++b) {
    const float e = q_[b] - y[b];
    loss += static_cast<double>(e) * e;
    d_q_[b] = 2.0f * e / static_cast<float>(B);  // dL/dQ of the mean square
  }
  critic_kernel_.Backward(Floats(net, false), Floats(mb.cs), B, d_q_.data(), Floats(net, true),
                          nullptr);
  return loss / B;
}

double Maddpg::ActorGradient(int i, const Minibatch& mb) {
  FlatParams& actor = actor_flat[static_cast<size_t>(i)];
  FlatParams& critic = critic_flat[static_cast<size_t>(i)];
  const int B = static_cast<int>(mb.b.s.size(0)), R = B * L;
  // Agent i's own L actions come from its actor, tanh(u); the other agents keep their sampled
  // actions.
  u_.resize(static_cast<size_t>(R));
  actor_kernel_.Forward(Floats(actor, false), Floats(mb.actor_in), nullptr, R, u_.data());
  const float* a = Floats(mb.b.a);
  joint_.assign(a, a + B * N * L);
  for (int b = 0; b < B; ++b) {
    for (int j = 0; j < L; ++j) joint_[b * N * L + i * L + j] = std::tanh(u_[b * L + j]);
  }
  const float* acts = CriticActions(joint_.data(), B, i, &acts_);
  q_.resize(static_cast<size_t>(B));
  critic_kernel_.Forward(Floats(critic, false), Floats(mb.cs), acts, B, q_.data());
  // Loss -mean_b Q: dL/dQ = -1/B; back through the critic to its action inputs only.
  double loss = 0;
  for (int b = 0; b < B; ++b) loss -= q_[b];
  loss /= B;
  d_q_.assign(static_cast<size_t>(B), -1.0f / static_cast<float>(B));
  const int A = CriticActIn(spec, norm), own = spec.joint_actions ? i * L : 0;
  d_acts_.resize(static_cast<size_t>(B * A));
  critic_kernel_.Backward(Floats(critic, false), Floats(mb.cs), B, d_q_.data(), nullptr,
                          d_acts_.data());
  // Through tanh into u; plus the deviation (hyper.actor_preact_reg): a small penalty
  // reg * mean(u^2) keeps the actor out of tanh saturation, where its gradient vanishes and
  // a = +-1 could never be left.
  const float reg = static_cast<float>(hp.actor_preact_reg);
  d_u_.resize(static_cast<size_t>(R));
  double penalty = 0;
  for (int b = 0; b < B; ++b) {
    for (int j = 0; j < L; ++j) {
      const float u = u_[b * L + j], t = std::tanh(u);
      d_u_[b * L + j] = d_acts_[b * A + own + j] * (1.0f - t * t) + reg * 2.0f * u / R;
      penalty += static_cast<double>(u) * u;
    }
  }
  actor_kernel_.Backward(Floats(actor, false), Floats(mb.actor_in), R, d_u_.data(),
                         Floats(actor, true), nullptr);
  return reg > 0 ? loss + reg * penalty / R : loss;
}

void Maddpg::UpdateAgent(int i, const Minibatch& mb, UpdateStats* stats) {
  const size_t k = static_cast<size_t>(i);
  const int B = static_cast<int>(mb.b.s.size(0));
  const float* r = Floats(mb.b.r);
  const float* done = Floats(mb.b.done);

  // Critic. Eq. (9): y = r_i + gamma * Q'_i(s', a'_1..a'_N, d'), y = r_i at the last step.
  y_.assign(static_cast<size_t>(B), 0.0f);
  if (spec.gamma > 0) {
    FlatParams& q_target = spec.use_targets ? critic_target_flat[k] : critic_flat[k];
    const float* next = CriticActions(Floats(mb.next_actions), B, i, &acts_);
    critic_kernel_.Forward(Floats(q_target, false), Floats(mb.cs2), next, B, y_.data());
  }
  for (int b = 0; b < B; ++b) y_[b] = CriticTarget(r[b * N + i], done[b], y_[b], spec.gamma);
  // Eq. (10): L(theta_i) = mean (y - Q_i(s, a_1..a_N, d))^2; one Adam step on its gradient.
  // The soft updates of the targets ride along with each network's optimiser step.
  const double critic_loss = CriticGradient(i, mb, y_);
  ClipAdamSoftUpdate(critic_flat[k], *critic_opts[k], hp.grad_clip,
                     spec.use_targets ? &critic_target_flat[k] : nullptr, hp.tau);

  // Actor. Eq. (11): ascend Q_i with agent i's actions replaced by mu_i([g, x_j]).
  const double actor_loss = ActorGradient(i, mb);
  ClipAdamSoftUpdate(actor_flat[k], *actor_opts[k], hp.grad_clip,
                     spec.use_targets ? &actor_target_flat[k] : nullptr, hp.tau);
  stats->critic_loss += critic_loss;
  stats->actor_loss += actor_loss;
  stats->updates += 1;
}

}  // namespace rtb::learn
