#include "rtb/learner/agents.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nets.h"
#include "rtb/core/report.h"
#include "rtb/core/rng.h"

namespace rtb::learn {

using torch::indexing::Slice;

const std::vector<std::string>& AllAlgoNames() {
  static const std::vector<std::string> names = {"manual", "bandit", "a2c",
                                                 "ddpg",   "dcmab",  "dcmab-coord"};
  return names;
}

Result<AlgoSpec> MakeAlgoSpec(const std::string& name, int agents,
                              const std::vector<int>& learning_agents, const HyperParams& hp) {
  AlgoSpec s;
  s.name = name;
  s.gamma = hp.gamma;
  s.learns.assign(static_cast<size_t>(agents), true);
  if (name == "manual") {
    s.algo = Algo::kManual;
    s.learns.assign(static_cast<size_t>(agents), false);
  } else if (name == "bandit") {
    s.algo = Algo::kBandit;
    s.gamma = 0;
    s.use_targets = false;
    s.critic_sees_d = false;
  } else if (name == "a2c") {
    s.algo = Algo::kA2c;
    s.joint_actions = false;
    s.critic_sees_d = false;
  } else if (name == "ddpg") {
    s.algo = Algo::kDdpg;
    s.joint_actions = false;
    s.critic_sees_d = false;
  } else if (name == "dcmab") {
    s.algo = Algo::kDcmab;
  } else if (name == "dcmab-coord") {
    s.algo = Algo::kDcmabCoord;
    s.coordinated = true;
  } else if (name == "partial") {
    s.algo = Algo::kPartial;
    s.coordinated = true;
    if (learning_agents.empty()) {
      return Status::InvalidArgument("algo 'partial' needs learning_agents (for example [3])");
    }
    s.learns.assign(static_cast<size_t>(agents), false);
    for (int a : learning_agents) {
      if (a < 1 || a > agents) {
        return Status::InvalidArgument("learning_agents: agent " + std::to_string(a) +
                                       " is not in 1.." + std::to_string(agents));
      }
      s.learns[static_cast<size_t>(a - 1)] = true;
    }
  } else {
    return Status::InvalidArgument("unknown algo '" + name +
                                   "' (manual, bandit, a2c, ddpg, dcmab, dcmab-coord, partial)");
  }
  return s;
}

struct MultiAgentLearner::Impl {
  Impl(const AlgoSpec& s, const HyperParams& h, const Normalizer& n, uint64_t seed)
      : spec(s), hp(h), norm(n), N(n.agents), L(n.clusters), rng(Rng::Mix(seed, 0xac7)) {
    torch::manual_seed(static_cast<uint64_t>(Rng::Mix(seed, 0x70c4)));
    if (spec.algo == Algo::kA2c) {
      for (int i = 0; i < N; ++i) {
        a2c_actors.emplace_back(norm.ActorInputDim(), hp.actor_hidden);
        a2c_values.emplace_back(norm.StateDim(), 0, hp.critic_hidden);
        a2c_log_std.push_back(torch::full({L}, hp.a2c_init_log_std).set_requires_grad(true));
        std::vector<torch::Tensor> params = a2c_actors.back()->parameters();
        for (auto& p : a2c_values.back()->parameters()) params.push_back(p);
        params.push_back(a2c_log_std.back());
        a2c_opts.push_back(
            std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(hp.a2c_lr)));
      }
    } else {
      maddpg = std::make_unique<Maddpg>(spec, hp, norm);
    }
    sigma = hp.noise_sigma;
    ou.assign(static_cast<size_t>(N * L), 0.0);
  }

  Actor& actor(int i) {
    return maddpg ? maddpg->actors[static_cast<size_t>(i)] : a2c_actors[static_cast<size_t>(i)];
  }
  const Actor& actor(int i) const {
    return maddpg ? maddpg->actors[static_cast<size_t>(i)] : a2c_actors[static_cast<size_t>(i)];
  }

  AlgoSpec spec;
  HyperParams hp;
  Normalizer norm;
  int N, L;
  Rng rng;
  std::unique_ptr<Maddpg> maddpg;  // bandit, ddpg, dcmab, dcmab-coord, partial
  std::vector<Actor> a2c_actors;
  std::vector<Critic> a2c_values;
  std::vector<torch::Tensor> a2c_log_std;
  std::vector<std::unique_ptr<torch::optim::Adam>> a2c_opts;
  std::vector<std::vector<float>> a2c_raw;  // sampled (unclipped) actions of this episode
  double sigma;
  std::vector<double> ou;
  int64_t episodes = 0;
  std::vector<std::vector<torch::Tensor>> snapshot;
};

namespace {
// LibTorch initialises weights from one global generator: seeding it and building the networks
// must not interleave between threads, or the same seed would give different weights.
std::mutex& InitMutex() {
  static std::mutex mu;
  return mu;
}
}  // namespace

MultiAgentLearner::MultiAgentLearner(const AlgoSpec& spec, const HyperParams& hp,
                                     const Normalizer& norm, uint64_t seed) {
  std::lock_guard<std::mutex> l(InitMutex());
  impl_ = std::make_unique<Impl>(spec, hp, norm, seed);
}

MultiAgentLearner::~MultiAgentLearner() = default;

const AlgoSpec& MultiAgentLearner::spec() const { return impl_->spec; }
const Normalizer& MultiAgentLearner::normalizer() const { return impl_->norm; }
double MultiAgentLearner::noise_sigma() const { return impl_->sigma; }
int64_t MultiAgentLearner::episodes_done() const { return impl_->episodes; }

std::vector<float> MultiAgentLearner::Act(const std::vector<float>& s, bool explore) {
  Impl& m = *impl_;
  std::vector<float> a(static_cast<size_t>(m.N * m.L), 0.0f);
  if (!m.spec.trains()) return a;
  torch::NoGradGuard g;
  const torch::Tensor st = torch::from_blob(const_cast<float*>(s.data()),
                                            {1, static_cast<int64_t>(s.size())}, torch::kFloat);
  const torch::Tensor in = ActorInputs(st, m.N, m.L);
  std::vector<float> raw(a.size(), 0.0f);
  for (int i = 0; i < m.N; ++i) {
    if (!m.spec.learns[static_cast<size_t>(i)]) continue;
    const torch::Tensor mu = m.actor(i)->forward(in).reshape({m.L});
    for (int j = 0; j < m.L; ++j) {
      const size_t p = static_cast<size_t>(i * m.L + j);
      double v = mu[j].item<double>();
      if (explore) {
        if (m.spec.algo == Algo::kA2c) {
          const double std = std::exp(m.a2c_log_std[static_cast<size_t>(i)][j].item<double>());
          v += std * m.rng.Normal();
          raw[p] = static_cast<float>(v);
        } else if (m.hp.noise == "ou") {
          m.ou[p] += m.hp.ou_theta * (0.0 - m.ou[p]) + m.sigma * m.rng.Normal();
          v += m.ou[p];
        } else {
          v += m.sigma * m.rng.Normal();
        }
      }
      a[p] = static_cast<float>(std::clamp(v, -1.0, 1.0));
    }
  }
  if (explore && m.spec.algo == Algo::kA2c) m.a2c_raw.push_back(raw);
  return a;
}

UpdateStats MultiAgentLearner::Update(const std::vector<std::vector<Transition>>& batches) {
  Impl& m = *impl_;
  UpdateStats stats;
  if (!m.maddpg || batches.empty()) return stats;
  Maddpg& alg = *m.maddpg;
  if (batches.size() == 1) {
    // One minibatch for every agent: every agent's target actions a'^q once (Eq. 9).
    alg.Update(MakeBatch(batches[0]), &stats);
  } else {
    // The paper's order: for each agent, its own minibatch, critic, actor, soft update.
    for (int i = 0; i < m.N; ++i) {
      if (!m.spec.learns[static_cast<size_t>(i)]) continue;
      const Batch b = MakeBatch(batches[static_cast<size_t>(i)]);
      alg.UpdateAgent(i, alg.Prepare(b), &stats);
    }
  }
  return stats;
}

Result<UpdateStats> UpdateFromReplay(MultiAgentLearner& learner, ReplayStore& replay,
                                     const HyperParams& hp, int updates, Rng& sample_rng) {
  UpdateStats last;
  if (replay.Size() < static_cast<uint64_t>(hp.warmup_transitions)) return last;
  const int draws = hp.shared_minibatch ? 1 : learner.normalizer().agents;
  for (int u = 0; u < updates; ++u) {
    std::vector<std::vector<Transition>> batches;
    for (int b = 0; b < draws; ++b) {
      RTB_ASSIGN_OR_RETURN(auto mb, replay.Sample(static_cast<size_t>(hp.batch_size), sample_rng));
      batches.push_back(std::move(mb));
    }
    last = learner.Update(batches);
  }
  return last;
}

UpdateStats MultiAgentLearner::UpdateOnPolicy(const std::vector<Transition>& ep) {
  Impl& m = *impl_;
  UpdateStats stats;
  if (m.spec.algo != Algo::kA2c || ep.empty() || m.a2c_raw.size() != ep.size()) return stats;
  const Batch b = MakeBatch(ep);
  const int64_t T = static_cast<int64_t>(ep.size());
  std::vector<float> raw_flat;
  for (const auto& r : m.a2c_raw) raw_flat.insert(raw_flat.end(), r.begin(), r.end());
  const torch::Tensor raw =
      torch::from_blob(raw_flat.data(), {T, m.N * m.L}, torch::kFloat).clone();
  const torch::Tensor in = ActorInputs(b.s, m.N, m.L);
  for (int i = 0; i < m.N; ++i) {
    if (!m.spec.learns[static_cast<size_t>(i)]) continue;
    const size_t k = static_cast<size_t>(i);
    // Discounted returns G_t (the episode ends at its last step).
    std::vector<float> g(static_cast<size_t>(T));
    double acc = 0;
    for (int64_t t = T - 1; t >= 0; --t) {
      acc = b.r[t][i].item<double>() + m.spec.gamma * (ep[static_cast<size_t>(t)].done ? 0.0 : acc);
      g[static_cast<size_t>(t)] = static_cast<float>(acc);
    }
    const torch::Tensor G = torch::from_blob(g.data(), {T, 1}, torch::kFloat).clone();
    const torch::Tensor v = m.a2c_values[k]->forward(b.s, torch::Tensor());
    const torch::Tensor adv = G - v;
    const torch::Tensor mu = m.a2c_actors[k]->forward(in).reshape({T, m.L});
    const torch::Tensor log_std = m.a2c_log_std[k].unsqueeze(0).expand({T, m.L});
    const torch::Tensor x = raw.index({Slice(), Slice(i * m.L, (i + 1) * m.L)});
    const torch::Tensor logp =
        (-0.5 * ((x - mu) / log_std.exp()).pow(2) - log_std - 0.5 * std::log(2 * M_PI))
            .sum(1, true);
    const torch::Tensor entropy = (m.a2c_log_std[k] + 0.5 * std::log(2 * M_PI * M_E)).sum();
    const torch::Tensor actor_loss = -(logp * adv.detach()).mean() - m.hp.a2c_entropy * entropy;
    const torch::Tensor value_loss = 0.5 * adv.pow(2).mean();
    m.a2c_opts[k]->zero_grad();
    (actor_loss + value_loss).backward();
    std::vector<torch::Tensor> params = m.a2c_actors[k]->parameters();
    for (auto& p : m.a2c_values[k]->parameters()) params.push_back(p);
    torch::nn::utils::clip_grad_norm_(params, m.hp.grad_clip);
    m.a2c_opts[k]->step();
    {
      torch::NoGradGuard ng;
      m.a2c_log_std[k].clamp_(-4.0, 0.5);
    }
    stats.actor_loss += actor_loss.item<double>();
    stats.critic_loss += value_loss.item<double>();
    stats.updates += 1;
  }
  return stats;
}

void MultiAgentLearner::EndEpisode() {
  Impl& m = *impl_;
  ++m.episodes;
  m.sigma = std::max(m.hp.noise_min, m.sigma * m.hp.noise_decay);
  std::fill(m.ou.begin(), m.ou.end(), 0.0);
  m.a2c_raw.clear();
}

void MultiAgentLearner::Snapshot() {
  Impl& m = *impl_;
  m.snapshot.clear();
  for (int i = 0; i < m.N; ++i) {
    std::vector<torch::Tensor> ps;
    for (const auto& p : m.actor(i)->parameters()) ps.push_back(p.detach().clone());
    m.snapshot.push_back(ps);
  }
}

void MultiAgentLearner::RestoreSnapshot() {
  Impl& m = *impl_;
  if (m.snapshot.empty()) return;
  torch::NoGradGuard g;
  for (int i = 0; i < m.N; ++i) {
    auto ps = m.actor(i)->parameters();
    for (size_t k = 0; k < ps.size(); ++k) ps[k].copy_(m.snapshot[static_cast<size_t>(i)][k]);
  }
}

std::vector<float> MultiAgentLearner::ActorParameters(int i) const {
  std::vector<float> out;
  for (const auto& p : impl_->actor(i)->parameters()) {
    const torch::Tensor c = p.detach().contiguous().reshape({-1});
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return out;
}

namespace {

template <typename M>
Status SaveModule(const M& module, const std::string& path) {
  try {
    torch::save(module, path);
  } catch (const std::exception& e) {
    return Status::IoError(path + ": " + e.what());
  }
  return Status::Ok();
}

template <typename M>
Status LoadModule(M& module, const std::string& path) {
  try {
    torch::load(module, path);
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": " + e.what());
  }
  return Status::Ok();
}

Status SaveTensors(const std::vector<torch::Tensor>& ts, const std::string& path) {
  try {
    torch::save(ts, path);
  } catch (const std::exception& e) {
    return Status::IoError(path + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace

Status MultiAgentLearner::SaveCheckpoint(const std::string& dir) const {
  const Impl& m = *impl_;
  const std::string tmp = dir + ".tmp";
  std::error_code ec;
  std::filesystem::remove_all(tmp, ec);
  std::filesystem::create_directories(tmp, ec);
  if (ec) return Status::IoError(tmp + ": " + ec.message());
  for (int i = 0; i < m.N; ++i) {
    const std::string p = tmp + "/agent" + std::to_string(i) + "_";
    const size_t k = static_cast<size_t>(i);
    if (m.maddpg) {
      RTB_RETURN_IF_ERROR(SaveModule(m.maddpg->actors[k], p + "actor.pt"));
      RTB_RETURN_IF_ERROR(SaveModule(m.maddpg->actor_targets[k], p + "actor_target.pt"));
      RTB_RETURN_IF_ERROR(SaveModule(m.maddpg->critics[k], p + "critic.pt"));
      RTB_RETURN_IF_ERROR(SaveModule(m.maddpg->critic_targets[k], p + "critic_target.pt"));
      try {
        torch::save(*m.maddpg->actor_opts[k], p + "actor_opt.pt");
        torch::save(*m.maddpg->critic_opts[k], p + "critic_opt.pt");
      } catch (const std::exception& e) {
        return Status::IoError(std::string("optimizer: ") + e.what());
      }
    } else if (!m.a2c_actors.empty()) {
      RTB_RETURN_IF_ERROR(SaveModule(m.a2c_actors[k], p + "actor.pt"));
      RTB_RETURN_IF_ERROR(SaveModule(m.a2c_values[k], p + "value.pt"));
      RTB_RETURN_IF_ERROR(SaveTensors({m.a2c_log_std[k]}, p + "log_std.pt"));
      try {
        torch::save(*m.a2c_opts[k], p + "opt.pt");
      } catch (const std::exception& e) {
        return Status::IoError(std::string("optimizer: ") + e.what());
      }
    }
    if (!m.snapshot.empty()) RTB_RETURN_IF_ERROR(SaveTensors(m.snapshot[k], p + "best_actor.pt"));
  }
  nlohmann::ordered_json j;
  j["algo"] = m.spec.name;
  j["episodes"] = m.episodes;
  j["sigma"] = m.sigma;
  j["ou"] = m.ou;
  const Rng::State st = m.rng.GetState();
  j["rng"] = {st.s[0], st.s[1], st.s[2], st.s[3]};
  j["rng_has_spare"] = st.has_spare;
  j["rng_spare"] = st.spare;
  j["has_snapshot"] = !m.snapshot.empty();
  j["normalizer"] = nlohmann::json::parse(m.norm.ToJson());
  RTB_RETURN_IF_ERROR(WriteFileAtomic(tmp + "/meta.json", j.dump(2)));
  // Swap the complete checkpoint into place.
  std::filesystem::remove_all(dir + ".old", ec);
  if (std::filesystem::exists(dir)) std::filesystem::rename(dir, dir + ".old", ec);
  std::filesystem::rename(tmp, dir, ec);
  if (ec) return Status::IoError(dir + ": " + ec.message());
  std::filesystem::remove_all(dir + ".old", ec);
  return Status::Ok();
}

Status MultiAgentLearner::LoadCheckpoint(const std::string& dir) {
  Impl& m = *impl_;
  std::ifstream in(dir + "/meta.json");
  if (!in) return Status::NotFound(dir + ": no checkpoint");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
    if (j.at("algo").get<std::string>() != m.spec.name) {
      return Status::InvalidArgument(dir + ": checkpoint is of algo " +
                                     j["algo"].get<std::string>());
    }
    // A checkpoint of another market shape would be served silently wrong: refused.
    if (j.contains("normalizer")) {
      const int n = j["normalizer"].at("agents").get<int>();
      const int l = j["normalizer"].at("clusters").get<int>();
      if (n != m.norm.agents || l != m.norm.clusters) {
        return Status::InvalidArgument(
            dir + ": the checkpoint was trained for " + std::to_string(n) + " agents x " +
            std::to_string(l) + " consumer clusters; this market has " +
            std::to_string(m.norm.agents) + " x " + std::to_string(m.norm.clusters));
      }
    }
    m.episodes = j.at("episodes").get<int64_t>();
    m.sigma = j.at("sigma").get<double>();
    m.ou = j.at("ou").get<std::vector<double>>();
    Rng::State st{};
    for (int k = 0; k < 4; ++k) st.s[k] = j.at("rng")[k].get<uint64_t>();
    st.has_spare = j.at("rng_has_spare").get<bool>();
    st.spare = j.at("rng_spare").get<double>();
    m.rng.SetState(st);
  } catch (const std::exception& e) {
    return Status::Corruption(dir + "/meta.json: " + e.what());
  }
  const bool has_snapshot = j.value("has_snapshot", false);
  m.snapshot.clear();
  for (int i = 0; i < m.N; ++i) {
    const std::string p = dir + "/agent" + std::to_string(i) + "_";
    const size_t k = static_cast<size_t>(i);
    if (m.maddpg) {
      RTB_RETURN_IF_ERROR(LoadModule(m.maddpg->actors[k], p + "actor.pt"));
      RTB_RETURN_IF_ERROR(LoadModule(m.maddpg->actor_targets[k], p + "actor_target.pt"));
      RTB_RETURN_IF_ERROR(LoadModule(m.maddpg->critics[k], p + "critic.pt"));
      RTB_RETURN_IF_ERROR(LoadModule(m.maddpg->critic_targets[k], p + "critic_target.pt"));
      for (auto [opt, file] : {std::pair{m.maddpg->actor_opts[k].get(), "actor_opt.pt"},
                               std::pair{m.maddpg->critic_opts[k].get(), "critic_opt.pt"}}) {
        try {
          torch::load(*opt, p + file);
        } catch (const std::exception& e) {
          return Status::Corruption(p + file + ": " + e.what());
        }
      }
    } else if (!m.a2c_actors.empty()) {
      RTB_RETURN_IF_ERROR(LoadModule(m.a2c_actors[k], p + "actor.pt"));
      RTB_RETURN_IF_ERROR(LoadModule(m.a2c_values[k], p + "value.pt"));
      try {
        std::vector<torch::Tensor> ls;
        torch::load(ls, p + "log_std.pt");
        torch::NoGradGuard g;
        m.a2c_log_std[k].copy_(ls.at(0));
        torch::load(*m.a2c_opts[k], p + "opt.pt");
      } catch (const std::exception& e) {
        return Status::Corruption(p + ": " + e.what());
      }
    }
    if (has_snapshot) {
      std::vector<torch::Tensor> snap;
      try {
        torch::load(snap, p + "best_actor.pt");
      } catch (const std::exception& e) {
        return Status::Corruption(p + "best_actor.pt: " + e.what());
      }
      m.snapshot.push_back(snap);
    }
  }
  // torch::load gave the parameters storage of their own: back into the flat buffers, once.
  if (m.maddpg) m.maddpg->Relink();
  return Status::Ok();
}

Status MultiAgentLearner::ExportTorchScript(const std::string& dir) const {
  const Impl& m = *impl_;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (int i = 0; i < m.N; ++i) {
    const Actor& a = m.actor(i);
    torch::jit::Module mod("RtbActor");
    mod.register_parameter("w1", a->l1->weight.detach().clone(), false);
    mod.register_parameter("b1", a->l1->bias.detach().clone(), false);
    mod.register_parameter("w2", a->l2->weight.detach().clone(), false);
    mod.register_parameter("b2", a->l2->bias.detach().clone(), false);
    mod.register_parameter("w3", a->l3->weight.detach().clone(), false);
    mod.register_parameter("b3", a->l3->bias.detach().clone(), false);
    mod.define(R"JIT(
def forward(self, x):
    # mu_i([g, x_j]) of the DCMAB actor: 300-300 ReLU, tanh output. x: [B, 2NL + L + 2].
    h = torch.relu(torch.matmul(x, self.w1.t()) + self.b1)
    h = torch.relu(torch.matmul(h, self.w2.t()) + self.b2)
    return torch.tanh(torch.matmul(h, self.w3.t()) + self.b3)
)JIT");
    const std::string path = dir + "/actor_" + std::to_string(i) + ".pt";
    try {
      mod.save(path);
    } catch (const std::exception& e) {
      return Status::IoError(path + ": " + e.what());
    }
  }
  // reference_io.json: a sample input [g, x_j] and each actor's output from C++, so that any
  // consumer of the TorchScript files (Python's torch.jit.load, a server) can check itself.
  const int in_dim = m.norm.ActorInputDim();
  std::vector<float> x(static_cast<size_t>(in_dim));
  for (int k = 0; k < in_dim; ++k)
    x[static_cast<size_t>(k)] = static_cast<float>(std::sin(0.7 * k));
  nlohmann::ordered_json ref;
  ref["input"] = x;
  std::vector<double> outs;
  {
    torch::NoGradGuard g;
    const torch::Tensor t = torch::from_blob(x.data(), {1, in_dim}, torch::kFloat).clone();
    for (int i = 0; i < m.N; ++i) {
      Actor a = m.actor(i);  // a shared handle; forward is not const
      outs.push_back(a->forward(t)[0][0].item<double>());
    }
  }
  ref["outputs"] = outs;
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/reference_io.json", ref.dump(2) + "\n"));
  return WriteFileAtomic(dir + "/normalization.json", m.norm.ToJson() + "\n");
}

}  // namespace rtb::learn
