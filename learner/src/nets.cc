#include "nets.h"

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

void HardUpdate(torch::nn::Module& target, const torch::nn::Module& source) {
  torch::NoGradGuard g;
  auto tp = target.parameters();
  auto sp = source.parameters();
  for (size_t k = 0; k < tp.size(); ++k) tp[k].copy_(sp[k]);
}

torch::Tensor CriticTarget(const torch::Tensor& r, const torch::Tensor& done,
                           const torch::Tensor& q_next, double gamma) {
  return r + gamma * (1.0 - done) * q_next;
}

namespace {
// Rows `rows` of ts, field `field`, as a [rows.size(), D] tensor.
torch::Tensor Stack(const std::vector<Transition>& ts, std::vector<float> Transition::*field,
                    const std::vector<int64_t>& rows) {
  const int64_t B = static_cast<int64_t>(rows.size());
  const int64_t D = static_cast<int64_t>((ts[0].*field).size());
  torch::Tensor t = torch::empty({B, D}, torch::kFloat);
  float* p = t.data_ptr<float>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& v = ts[static_cast<size_t>(rows[static_cast<size_t>(b)])].*field;
    std::copy(v.begin(), v.end(), p + b * D);
  }
  return t;
}
}  // namespace

Batch MakeBatch(const std::vector<Transition>& ts) {
  std::vector<int64_t> all(ts.size()), live;
  Batch b;
  b.done = torch::empty({static_cast<int64_t>(ts.size()), 1}, torch::kFloat);
  float* done = b.done.data_ptr<float>();
  for (size_t i = 0; i < ts.size(); ++i) {
    all[i] = static_cast<int64_t>(i);
    done[i] = ts[i].done ? 1.0f : 0.0f;
    if (!ts[i].done) live.push_back(static_cast<int64_t>(i));
  }
  b.s = Stack(ts, &Transition::s, all);
  b.d = Stack(ts, &Transition::d, all);
  b.a = Stack(ts, &Transition::a, all);
  b.r = Stack(ts, &Transition::r, all);
  b.s2 = Stack(ts, &Transition::s2, live);
  b.d2 = Stack(ts, &Transition::d2, live);
  b.live = torch::tensor(live, torch::kLong);
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

}  // namespace rtb::learn
