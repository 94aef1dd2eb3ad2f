// A2C (advantage actor-critic), the on-policy baseline: per agent a Gaussian policy
// N(mu_i([g, x_j]), std_i^2) with the DCMAB actor as its mean and a learned log std per
// cluster, and a state-value critic V_i(s) (the critic network with no actions). After each
// episode, for every agent i on the episode's steps t:
//
//   G_t = r_i,t + gamma G_t+1 (G = 0 after the day's last step)     discounted return
//   A_t = G_t - V_i(s_t)                                             advantage
//   actor loss  -mean_t log pi_i(x_t | s_t) A_t - entropy_coef H(pi_i)  (x_t: the sampled,
//                                                                      unclipped actions)
//   value loss  0.5 mean_t A_t^2
//
// and one Adam step on both (gradient norm clipped), log std kept in [-4, 0.5].
#include <cmath>

#include "method.h"

namespace rtb::learn {
namespace {

using torch::indexing::Slice;

class A2c : public LearningMethod {
 public:
  A2c(const AlgoSpec& s, const HyperParams& h, const Normalizer& n)
      : spec_(s), hp_(h), N(n.agents), L(n.clusters), raw_(static_cast<size_t>(N * L), 0.0f) {
    for (int i = 0; i < N; ++i) {
      actors_.emplace_back(n.ActorInputDim(), hp_.actor_hidden);
      values_.emplace_back(n.StateDim(), 0, hp_.critic_hidden);
      log_std_.push_back(torch::full({L}, hp_.a2c_init_log_std).set_requires_grad(true));
      opts_.push_back(std::make_unique<torch::optim::Adam>(Parameters(i, true),
                                                           torch::optim::AdamOptions(hp_.a2c_lr)));
    }
  }

  Actor& actor(int i) override { return actors_[static_cast<size_t>(i)]; }

  // Samples the policy; keeps the sample (before clipping) for the update.
  double Explore(int i, int j, double mu, Exploration& x) override {
    const double std = std::exp(log_std_[static_cast<size_t>(i)][j].item<double>());
    const double v = mu + std * x.rng.Normal();
    raw_[static_cast<size_t>(i * L + j)] = static_cast<float>(v);
    return v;
  }
  void Explored() override { episode_raw_.push_back(raw_); }
  void EndEpisode() override { episode_raw_.clear(); }

  UpdateStats UpdateOnEpisode(const std::vector<Transition>& ep) override;
  Status SaveAgent(int i, const std::string& prefix) const override;
  Status LoadAgent(int i, const std::string& prefix) override;

 private:
  // Agent i's actor and value parameters (and its log std when with_log_std).
  std::vector<torch::Tensor> Parameters(int i, bool with_log_std) const {
    const size_t k = static_cast<size_t>(i);
    std::vector<torch::Tensor> params = actors_[k]->parameters();
    for (auto& p : values_[k]->parameters()) params.push_back(p);
    if (with_log_std) params.push_back(log_std_[k]);
    return params;
  }

  AlgoSpec spec_;
  HyperParams hp_;
  int N, L;
  std::vector<Actor> actors_;
  std::vector<Critic> values_;
  std::vector<torch::Tensor> log_std_;
  std::vector<std::unique_ptr<torch::optim::Adam>> opts_;
  std::vector<float> raw_;                       // the last exploring Act's samples
  std::vector<std::vector<float>> episode_raw_;  // every step's of this episode
};

UpdateStats A2c::UpdateOnEpisode(const std::vector<Transition>& ep) {
  UpdateStats stats;
  if (ep.empty() || episode_raw_.size() != ep.size()) return stats;
  const Batch b = MakeBatch(ep);
  const int64_t T = static_cast<int64_t>(ep.size());
  std::vector<float> raw_flat;
  for (const auto& r : episode_raw_) raw_flat.insert(raw_flat.end(), r.begin(), r.end());
  const torch::Tensor raw = torch::from_blob(raw_flat.data(), {T, N * L}, torch::kFloat).clone();
  const torch::Tensor in = ActorInputs(b.s, N, L);
  for (int i = 0; i < N; ++i) {
    if (!spec_.learns[static_cast<size_t>(i)]) continue;
    const size_t k = static_cast<size_t>(i);
    // Discounted returns G_t (the episode ends at its last step).
    std::vector<float> g(static_cast<size_t>(T));
    double acc = 0;
    for (int64_t t = T - 1; t >= 0; --t) {
      acc = b.r[t][i].item<double>() + spec_.gamma * (ep[static_cast<size_t>(t)].done ? 0.0 : acc);
      g[static_cast<size_t>(t)] = static_cast<float>(acc);
    }
    const torch::Tensor G = torch::from_blob(g.data(), {T, 1}, torch::kFloat).clone();
    const torch::Tensor v = values_[k]->forward(b.s, torch::Tensor());
    const torch::Tensor adv = G - v;
    const torch::Tensor mu = actors_[k]->forward(in).reshape({T, L});
    const torch::Tensor log_std = log_std_[k].unsqueeze(0).expand({T, L});
    const torch::Tensor x = raw.index({Slice(), Slice(i * L, (i + 1) * L)});
    const torch::Tensor logp =
        (-0.5 * ((x - mu) / log_std.exp()).pow(2) - log_std - 0.5 * std::log(2 * M_PI))
            .sum(1, true);
    const torch::Tensor entropy = (log_std_[k] + 0.5 * std::log(2 * M_PI * M_E)).sum();
    const torch::Tensor actor_loss = -(logp * adv.detach()).mean() - hp_.a2c_entropy * entropy;
    const torch::Tensor value_loss = 0.5 * adv.pow(2).mean();
    opts_[k]->zero_grad();
    (actor_loss + value_loss).backward();
    torch::nn::utils::clip_grad_norm_(Parameters(i, false), hp_.grad_clip);
    opts_[k]->step();
    {
      torch::NoGradGuard ng;
      log_std_[k].clamp_(-4.0, 0.5);
    }
    stats.actor_loss += actor_loss.item<double>();
    stats.critic_loss += value_loss.item<double>();
    stats.updates += 1;
  }
  return stats;
}

Status A2c::SaveAgent(int i, const std::string& p) const {
  const size_t k = static_cast<size_t>(i);
  RTB_RETURN_IF_ERROR(SaveTorch(actors_[k], p + "actor.pt"));
  RTB_RETURN_IF_ERROR(SaveTorch(values_[k], p + "value.pt"));
  RTB_RETURN_IF_ERROR(SaveTorch(std::vector<torch::Tensor>{log_std_[k]}, p + "log_std.pt"));
  return SaveTorch(*opts_[k], p + "opt.pt", "optimizer");
}

Status A2c::LoadAgent(int i, const std::string& p) {
  const size_t k = static_cast<size_t>(i);
  RTB_RETURN_IF_ERROR(LoadTorch(actors_[k], p + "actor.pt"));
  RTB_RETURN_IF_ERROR(LoadTorch(values_[k], p + "value.pt"));
  try {
    std::vector<torch::Tensor> ls;
    torch::load(ls, p + "log_std.pt");
    torch::NoGradGuard g;
    log_std_[k].copy_(ls.at(0));
    torch::load(*opts_[k], p + "opt.pt");
  } catch (const std::exception& e) {
    return Status::Corruption(p + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace

std::unique_ptr<LearningMethod> NewA2c(const AlgoSpec& spec, const HyperParams& hp,
                                       const Normalizer& norm) {
  return std::make_unique<A2c>(spec, hp, norm);
}

}  // namespace rtb::learn
