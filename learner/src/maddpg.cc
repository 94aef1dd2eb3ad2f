// Algorithm 1 of the paper (Jin et al., CIKM 2018), the update step, for every method of the
// MADDPG family (bandit, ddpg, dcmab, dcmab-coord, partial; AlgoSpec says which parts apply),
// and the family's networks, exploration and checkpoint files (the LearningMethod, method.h):
//
//   for each agent i (that learns):
//     sample a minibatch of transitions (s^q, d, a^q, r, s^q', d', done) from the replay
//     Eq. (9)   y = r_i + gamma * Q'_i(s^q', a'_1..a'_N, d'),  a'_o = mu'_o([g', x'_j]) for all
//               o and j; y = r_i at the day's last step                    (CriticTargets)
//     Eq. (10)  critic loss = mean (y - Q_i(s^q, a_1..a_N, d))^2; one Adam step on theta^Q_i
//     Eq. (11)  actor loss = -mean Q_i(s^q, a_1..mu_i([g, x_j])..a_N, d): agent i's own L
//               actions from its actor, the others' as sampled; one Adam step on theta^mu_i
//                                                                          (ActorLoss)
//     soft update  theta' <- tau theta + (1 - tau) theta'  for Q'_i and mu'_i
//
// UpdateOnMinibatches is that loop (or, with one minibatch shared by every agent, Update), and
// UpdateAgent its body. Its back end is ExactMlp (exact_mlp.h): the forward and
// backward passes written out on the networks' flat parameter buffers with LibTorch's own BLAS
// calls and ATen's rounding, and ClipAdamSoftUpdate fusing gradient clipping, Adam and the soft
// update; UpdateAgentAutograd is the same step through torch::nn and autograd, the reference
// the exact path is tested against bit for bit (tests/learner/learner_test.cc). Prepare
// computes what every agent's update reads from one minibatch once (every agent's target
// actions a'^q, the actors' inputs, the critics' state inputs).
//
// Built with -ffp-contract=off (learner/CMakeLists.txt): the exact path rounds as ATen does.
#include "maddpg.h"

namespace rtb::learn {

using torch::indexing::Slice;

torch::Tensor Maddpg::TargetJointActions(const torch::Tensor& s2) {
  torch::NoGradGuard g;
  const torch::Tensor in = ActorInputs(s2);
  if (reference_autograd) {
    std::vector<torch::Tensor> parts;
    for (int o = 0; o < N; ++o) {
      parts.push_back(spec.learns[static_cast<size_t>(o)] ? ActorActions(o, in, spec.use_targets)
                                                          : torch::zeros({s2.size(0), L}));
    }
    return torch::cat(parts, 1);
  }
  const int64_t rows = in.size(0);
  torch::Tensor joint = torch::zeros({s2.size(0), N * L});
  torch::Tensor pre = torch::empty({s2.size(0), L});
  for (int o = 0; o < N; ++o) {
    const size_t k = static_cast<size_t>(o);
    if (!spec.learns[k] || rows == 0) continue;
    const FlatParams& net = spec.use_targets ? actor_target_flat[k] : actor_flat[k];
    actor_mlp_.Forward(net.data.data_ptr<float>(), in.data_ptr<float>(), nullptr,
                       static_cast<int>(rows), pre.data_ptr<float>());
    torch::Tensor part = joint.narrow(1, o * L, L);
    at::tanh_out(part, pre);
  }
  return joint;
}

torch::Tensor Maddpg::CriticState(const torch::Tensor& s, const torch::Tensor& d) const {
  return spec.critic_sees_d ? torch::cat({s, d}, 1) : s;
}

torch::Tensor Maddpg::CriticActions(const torch::Tensor& joint, int i) const {
  return spec.joint_actions ? joint : joint.index({Slice(), Slice(i * L, (i + 1) * L)});
}

Minibatch Maddpg::Prepare(const Batch& b) {
  Minibatch mb;
  mb.b = &b;
  mb.next_actions = TargetJointActions(b.s2);
  mb.actor_in = ActorInputs(b.s);
  mb.critic_s = CriticState(b.s, b.d).contiguous();
  mb.critic_s2 = CriticState(b.s2, b.d2).contiguous();
  return mb;
}

torch::Tensor Maddpg::ActorLoss(int i, const Minibatch& mb) {
  const Batch& b = *mb.b;
  const torch::Tensor& actor_in = mb.actor_in;
  // Agent i's own L actions come from its actor; the other agents keep their sampled actions.
  const torch::Tensor pre = actors[static_cast<size_t>(i)]->preact(actor_in).reshape({-1, L});
  const torch::Tensor own = torch::tanh(pre);
  std::vector<torch::Tensor> parts;
  if (i > 0) parts.push_back(b.a.index({Slice(), Slice(0, i * L)}));
  parts.push_back(own);
  if (i + 1 < N) parts.push_back(b.a.index({Slice(), Slice((i + 1) * L, N * L)}));
  const torch::Tensor joint = torch::cat(parts, 1);
  Critic& q = critics[static_cast<size_t>(i)];
  const torch::Tensor loss = -q->forward(mb.critic_s, CriticActions(joint, i)).mean();
  // Deviation (hyper.actor_preact_reg): a small penalty on the pre-tanh output keeps the actor
  // out of tanh saturation, where its gradient vanishes and a = +-1 could never be left.
  return hp.actor_preact_reg > 0 ? loss + hp.actor_preact_reg * pre.pow(2).mean() : loss;
}

torch::Tensor Maddpg::CriticTargets(int i, const Minibatch& mb) {
  torch::NoGradGuard g;
  const Batch& b = *mb.b;
  const torch::Tensor& next_actions = mb.next_actions;
  const bool bootstrap = spec.gamma > 0 && b.live.numel() > 0;
  if (reference_autograd) {
    const torch::Tensor r_i = b.r.index({Slice(), Slice(i, i + 1)});
    Critic& q_target =
        spec.use_targets ? critic_targets[static_cast<size_t>(i)] : critics[static_cast<size_t>(i)];
    // Q'_i on the rows that go on; 0 on the last steps, where (1 - done) drops it anyway.
    torch::Tensor q_next = torch::zeros_like(r_i);
    if (bootstrap) {
      q_next.index_copy_(0, b.live,
                         q_target->forward(mb.critic_s2, CriticActions(next_actions, i)));
    }
    return CriticTarget(r_i, b.done, q_next, spec.gamma);
  }
  // The same through ExactMlp, and CriticTarget's arithmetic as ATen rounds it:
  // y = r + (gamma (1 - done)) q', with q' = 0 on the last steps.
  const int64_t B = b.r.size(0), live = b.live.numel();
  std::vector<float> q_next(static_cast<size_t>(B), 0.0f), q_live(static_cast<size_t>(live));
  if (bootstrap) {
    const FlatParams& net = spec.use_targets ? critic_target_flat[static_cast<size_t>(i)]
                                             : critic_flat[static_cast<size_t>(i)];
    const torch::Tensor actions = CriticActions(next_actions, i).contiguous();
    critic_mlp_.Forward(net.data.data_ptr<float>(), mb.critic_s2.data_ptr<float>(),
                        actions.data_ptr<float>(), static_cast<int>(live), q_live.data());
    const int64_t* rows = b.live.data_ptr<int64_t>();
    for (int64_t j = 0; j < live; ++j) q_next[static_cast<size_t>(rows[j])] = q_live[j];
  }
  torch::Tensor y = torch::empty({B, 1});
  const float gamma = static_cast<float>(spec.gamma);
  const float *r = b.r.data_ptr<float>(), *done = b.done.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const int64_t stride = b.r.size(1);
  for (int64_t row = 0; row < B; ++row) {
    yp[row] = r[row * stride + i] + ((1.0f - done[row]) * gamma) * q_next[static_cast<size_t>(row)];
  }
  return y;
}

void Maddpg::ActorGradients(int i, const torch::Tensor& actor_loss) {
  const size_t k = static_cast<size_t>(i);
  actor_flat[k].grad.zero_();
  // Into theta^mu_i only: the critic's weight gradients on this graph would be computed and
  // never read (the critic's next update zeroes them first).
  actor_loss.backward({}, c10::nullopt, false, actors[k]->parameters());
}

void Maddpg::OptimizerStep(FlatParams& flat, torch::optim::Adam& opt) const {
  torch::nn::utils::clip_grad_norm_(flat.data, hp.grad_clip);
  opt.step();
}

void Maddpg::ExactOptimizerStep(FlatParams& flat, torch::optim::Adam& opt,
                                FlatParams* target) const {
  auto& options = static_cast<torch::optim::AdamOptions&>(opt.param_groups()[0].options());
  // Maddpg builds its optimisers with AdamOptions(lr) alone, and checkpoints keep that.
  TORCH_CHECK(options.weight_decay() == 0 && !options.amsgrad(),
              "ExactOptimizerStep computes Adam without weight decay or AMSGrad");
  // clip_grad_norm_: clip = clamp(max_norm / (|g| + 1e-6), max 1), in ATen's float arithmetic
  // on a 0-dim tensor (max_norm / x is reciprocal(x) * max_norm).
  const float grad_norm = flat.grad.norm(2.0).item<float>();
  const float clip = std::min(
      1.0f / (grad_norm + static_cast<float>(1e-6)) * static_cast<float>(hp.grad_clip), 1.0f);
  // Adam's state, created as Adam::step creates it.
  auto& states = opt.state();
  const std::string key = c10::guts::to_string(flat.data.unsafeGetTensorImpl());
  auto it = states.find(key);
  if (it == states.end()) {
    auto fresh = std::make_unique<torch::optim::AdamParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(flat.data, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(flat.data, torch::MemoryFormat::Preserve));
    it = states.emplace(key, std::move(fresh)).first;
  }
  auto& state = static_cast<torch::optim::AdamParamState&>(*it->second);
  state.step(state.step() + 1);
  const AdamStepCoefficients c =
      AdamCoefficients(options.lr(), std::get<0>(options.betas()), std::get<1>(options.betas()),
                       options.eps(), state.step(), clip, hp.tau);
  ClipAdamSoftUpdate(c, flat.data.numel(), flat.grad.data_ptr<float>(), flat.data.data_ptr<float>(),
                     state.exp_avg().data_ptr<float>(), state.exp_avg_sq().data_ptr<float>(),
                     target != nullptr ? target->data.data_ptr<float>() : nullptr);
}

void Maddpg::Update(const Batch& b, UpdateStats* stats) {
  const Minibatch mb = Prepare(b);
  for (int i = 0; i < N; ++i) {
    if (spec.learns[static_cast<size_t>(i)]) UpdateAgent(i, mb, stats);
  }
}

UpdateStats Maddpg::UpdateOnMinibatches(const std::vector<std::vector<Transition>>& batches) {
  UpdateStats stats;
  if (batches.size() == 1) {
    // One minibatch for every agent: every agent's target actions a'^q once (Eq. 9).
    Update(MakeBatch(batches[0]), &stats);
  } else {
    // The paper's order: for each agent, its own minibatch, critic, actor, soft update.
    for (int i = 0; i < N; ++i) {
      if (!spec.learns[static_cast<size_t>(i)]) continue;
      const Batch b = MakeBatch(batches[static_cast<size_t>(i)]);
      UpdateAgent(i, Prepare(b), &stats);
    }
  }
  return stats;
}

void Maddpg::UpdateAgentAutograd(int i, const Minibatch& mb, UpdateStats* stats) {
  const size_t k = static_cast<size_t>(i);
  const Batch& b = *mb.b;

  // Critic. Eq. (9): y = r_i + gamma * Q'_i(s', a'_1..a'_N, d'), y = r_i at the last step.
  const torch::Tensor y = CriticTargets(i, mb);
  // Eq. (10): L(theta_i) = mean (y - Q_i(s, a_1..a_N, d))^2.
  const torch::Tensor q = critics[k]->forward(mb.critic_s, CriticActions(b.a, i));
  const torch::Tensor critic_loss = torch::mse_loss(q, y);
  critic_flat[k].grad.zero_();
  critic_loss.backward();
  OptimizerStep(critic_flat[k], *critic_opts[k]);

  // Actor. Eq. (11): ascend Q_i with agent i's actions replaced by mu_i([g, x_j]).
  const torch::Tensor actor_loss = ActorLoss(i, mb);
  ActorGradients(i, actor_loss);
  OptimizerStep(actor_flat[k], *actor_opts[k]);

  // Soft update of the targets.
  if (spec.use_targets) {
    SoftUpdate(actor_target_flat[k].data, actor_flat[k].data, hp.tau);
    SoftUpdate(critic_target_flat[k].data, critic_flat[k].data, hp.tau);
  }
  stats->critic_loss += critic_loss.item<double>();
  stats->actor_loss += actor_loss.item<double>();
  stats->updates += 1;
}

void Maddpg::UpdateAgent(int i, const Minibatch& mb, UpdateStats* stats) {
  if (reference_autograd) return UpdateAgentAutograd(i, mb, stats);
  torch::NoGradGuard no_graph;
  const size_t k = static_cast<size_t>(i);
  const Batch& b = *mb.b;
  const torch::Tensor& actor_in = mb.actor_in;
  const torch::Tensor& state = mb.critic_s;
  const int B = static_cast<int>(b.s.size(0)), R = B * L;
  float* const critic = critic_flat[k].data.data_ptr<float>();
  float* const actor = actor_flat[k].data.data_ptr<float>();

  // Critic. Eq. (9): y = r_i + gamma * Q'_i(s', a'_1..a'_N, d'), y = r_i at the last step.
  const torch::Tensor y = CriticTargets(i, mb);
  // Eq. (10): L(theta_i) = mean (y - Q_i(s, a_1..a_N, d))^2, and its gradient: mse_loss's
  // derivative as ATen computes it, (2 / B) (q - y) x 1, then the critic's backward.
  const torch::Tensor taken = CriticActions(b.a, i).contiguous();
  torch::Tensor q = torch::empty({B, 1});
  critic_mlp_.Forward(critic, state.data_ptr<float>(), taken.data_ptr<float>(), B,
                      q.data_ptr<float>());
  const torch::Tensor critic_loss = torch::mse_loss(q, y);
  std::vector<float> dq(static_cast<size_t>(B));
  {
    const float two_over_b = static_cast<float>(2. / B);
    const float *qp = q.data_ptr<float>(), *yp = y.data_ptr<float>();
    for (int r = 0; r < B; ++r) dq[static_cast<size_t>(r)] = two_over_b * (qp[r] - yp[r]) * 1.0f;
  }
  critic_mlp_.Backward(critic, state.data_ptr<float>(), B, dq.data(),
                       critic_flat[k].grad.data_ptr<float>(), nullptr);
  // Its optimiser step, and (soft update) its target's, which nothing reads before Eq. (11).
  ExactOptimizerStep(critic_flat[k], *critic_opts[k],
                     spec.use_targets ? &critic_target_flat[k] : nullptr);

  // Actor. Eq. (11): ascend Q_i with agent i's L actions replaced by mu_i([g, x_j]) (the other
  // agents keep their sampled actions): loss -mean Q_i (+ actor_preact_reg * mean pre^2).
  torch::Tensor pre = torch::empty({B, L});
  actor_mlp_.Forward(actor, actor_in.data_ptr<float>(), nullptr, R, pre.data_ptr<float>());
  const torch::Tensor own = torch::tanh(pre);
  // The critic's actions: every agent's sampled ones with agent i's replaced (or its own alone).
  torch::Tensor acted = own;
  if (spec.joint_actions) {
    acted = torch::empty({B, N * L});
    const float *a = b.a.data_ptr<float>(), *o = own.data_ptr<float>();
    float* out = acted.data_ptr<float>();
    const int NL = N * L;
    std::copy(a, a + static_cast<size_t>(B) * NL, out);
    for (int r = 0; r < B; ++r) std::copy(o + r * L, o + (r + 1) * L, out + r * NL + i * L);
  }
  torch::Tensor q_acted = torch::empty({B, 1});
  critic_mlp_.Forward(critic, state.data_ptr<float>(), acted.data_ptr<float>(), B,
                      q_acted.data_ptr<float>());
  torch::Tensor actor_loss = -q_acted.mean();
  if (hp.actor_preact_reg > 0) actor_loss = actor_loss + hp.actor_preact_reg * pre.pow(2).mean();
  // dLoss/dQ = -1/B on every row; back through the critic to agent i's own action columns.
  const int A = CriticActionDim(spec, norm), C = hp.critic_hidden;
  const int own_col = C + (spec.joint_actions ? i * L : 0);
  std::vector<float> d_q(static_cast<size_t>(B), -1.0f / static_cast<float>(B));
  torch::Tensor d_layer2_in = torch::empty({B, C + A});
  critic_mlp_.Backward(critic, state.data_ptr<float>(), B, d_q.data(), nullptr,
                       d_layer2_in.data_ptr<float>());
  // Through tanh (ATen's own derivative), plus the penalty's 2 reg pre / (B L).
  torch::Tensor d_own = torch::empty({B, L});
  for (int r = 0; r < B; ++r) {
    const float* from = d_layer2_in.data_ptr<float>() + r * (C + A) + own_col;
    std::copy(from, from + L, d_own.data_ptr<float>() + r * L);
  }
  torch::Tensor d_pre = at::tanh_backward(d_own, own);
  if (hp.actor_preact_reg > 0) {
    const float c = static_cast<float>(hp.actor_preact_reg) / static_cast<float>(R);
    float* d = d_pre.data_ptr<float>();
    const float* p = pre.data_ptr<float>();
    for (int r = 0; r < R; ++r) d[r] = d[r] + c * (2.0f * p[r]);
  }
  actor_mlp_.Backward(actor, actor_in.data_ptr<float>(), R, d_pre.data_ptr<float>(),
                      actor_flat[k].grad.data_ptr<float>(), nullptr);
  // Its optimiser step, and the soft update of its target.
  ExactOptimizerStep(actor_flat[k], *actor_opts[k],
                     spec.use_targets ? &actor_target_flat[k] : nullptr);
  stats->critic_loss += critic_loss.item<double>();
  stats->actor_loss += actor_loss.item<double>();
  stats->updates += 1;
}

// The networks: an actor, a critic and their targets per agent, each over a flat buffer.

int CriticStateDim(const AlgoSpec& spec, const Normalizer& n) {
  return n.StateDim() + (spec.critic_sees_d ? n.agents * n.clusters : 0);
}
int CriticActionDim(const AlgoSpec& spec, const Normalizer& n) {
  return spec.joint_actions ? n.agents * n.clusters : n.clusters;
}

Maddpg::Maddpg(const AlgoSpec& s, const HyperParams& h, const Normalizer& n)
    : spec(s),
      hp(h),
      norm(n),
      N(n.agents),
      L(n.clusters),
      actor_mlp_(n.ActorInputDim(), h.actor_hidden, 0),
      critic_mlp_(CriticStateDim(s, n), h.critic_hidden, CriticActionDim(s, n)) {
  const int state_in = CriticStateDim(spec, norm);
  const int act_in = CriticActionDim(spec, norm);
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
    // Adam over the flat buffer: elementwise, so the same update as over each layer. No weight
    // decay, no AMSGrad: ExactOptimizerStep computes exactly this.
    actor_opts.push_back(std::make_unique<torch::optim::Adam>(
        std::vector<torch::Tensor>{actor_flat[k].data}, torch::optim::AdamOptions(hp.actor_lr)));
    critic_opts.push_back(std::make_unique<torch::optim::Adam>(
        std::vector<torch::Tensor>{critic_flat[k].data}, torch::optim::AdamOptions(hp.critic_lr)));
    // ExactMlp reads the flat buffers in Module::parameters() order, with these sizes.
    TORCH_CHECK(actor_flat[k].data.numel() == actor_mlp_.NumParams() &&
                    critic_flat[k].data.numel() == critic_mlp_.NumParams(),
                "ExactMlp's parameter layout does not match the networks'");
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

double Maddpg::Explore(int i, int j, double mu, Exploration& x) {
  return x.AddNoise(static_cast<size_t>(i * L + j), mu, hp);
}

Status Maddpg::SaveAgent(int i, const std::string& p) const {
  const size_t k = static_cast<size_t>(i);
  RTB_RETURN_IF_ERROR(SaveTorch(actors[k], p + "actor.pt"));
  RTB_RETURN_IF_ERROR(SaveTorch(actor_targets[k], p + "actor_target.pt"));
  RTB_RETURN_IF_ERROR(SaveTorch(critics[k], p + "critic.pt"));
  RTB_RETURN_IF_ERROR(SaveTorch(critic_targets[k], p + "critic_target.pt"));
  RTB_RETURN_IF_ERROR(SaveTorch(*actor_opts[k], p + "actor_opt.pt", "optimizer"));
  return SaveTorch(*critic_opts[k], p + "critic_opt.pt", "optimizer");
}

Status Maddpg::LoadAgent(int i, const std::string& p) {
  const size_t k = static_cast<size_t>(i);
  RTB_RETURN_IF_ERROR(LoadTorch(actors[k], p + "actor.pt"));
  RTB_RETURN_IF_ERROR(LoadTorch(actor_targets[k], p + "actor_target.pt"));
  RTB_RETURN_IF_ERROR(LoadTorch(critics[k], p + "critic.pt"));
  RTB_RETURN_IF_ERROR(LoadTorch(critic_targets[k], p + "critic_target.pt"));
  RTB_RETURN_IF_ERROR(LoadTorch(*actor_opts[k], p + "actor_opt.pt"));
  return LoadTorch(*critic_opts[k], p + "critic_opt.pt");
}

std::unique_ptr<LearningMethod> NewMaddpg(const AlgoSpec& spec, const HyperParams& hp,
                                          const Normalizer& norm) {
  return std::make_unique<Maddpg>(spec, hp, norm);
}

}  // namespace rtb::learn
