// The multi-agent learner's shell, common to every method: acting (with exploration), the replay
// update loop, model snapshots, checkpoints and the TorchScript export. What a method does of its
// own (its networks, exploration, update, checkpoint files) is its LearningMethod (method.h), one
// file per method, built by the factory its registry entry names.
#include "rtb/learner/agents.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "method.h"
#include "rtb/core/report.h"
#include "rtb/core/rng.h"

namespace rtb::learn {

double Exploration::AddNoise(size_t p, double mu, const HyperParams& hp) {
  if (hp.noise == "ou") {
    ou[p] += hp.ou_theta * (0.0 - ou[p]) + sigma * rng.Normal();
    return mu + ou[p];
  }
  return mu + sigma * rng.Normal();
}

UpdateStats LearningMethod::UpdateOnMinibatches(const std::vector<std::vector<Transition>>&) {
  return {};
}
UpdateStats LearningMethod::UpdateOnEpisode(const std::vector<Transition>&) { return {}; }

namespace {
// The factory of each update the registry names (AlgoEntry::update), in its method's file.
struct MethodFactory {
  Update update;
  std::unique_ptr<LearningMethod> (*make)(const AlgoSpec&, const HyperParams&, const Normalizer&);
};
constexpr MethodFactory kMethodFactories[] = {{Update::kMaddpg, &NewMaddpg},
                                              {Update::kA2c, &NewA2c}};

std::unique_ptr<LearningMethod> NewMethod(const AlgoSpec& spec, const HyperParams& hp,
                                          const Normalizer& norm) {
  for (const MethodFactory& f : kMethodFactories) {
    if (f.update == spec.update) return f.make(spec, hp, norm);
  }
  throw std::logic_error("no factory for the update of algo " + spec.name);
}
}  // namespace

struct MultiAgentLearner::Impl {
  Impl(const AlgoSpec& s, const HyperParams& h, const Normalizer& n, uint64_t seed)
      : spec(s),
        hp(h),
        norm(n),
        N(n.agents),
        L(n.clusters),
        x{Rng(Rng::Mix(seed, 0xac7)), h.noise_sigma,
          std::vector<double>(static_cast<size_t>(N * L), 0.0)} {
    torch::manual_seed(static_cast<uint64_t>(Rng::Mix(seed, 0x70c4)));
    method = NewMethod(spec, hp, norm);
  }

  Actor& actor(int i) const { return method->actor(i); }

  AlgoSpec spec;
  HyperParams hp;
  Normalizer norm;
  int N, L;
  Exploration x;
  std::unique_ptr<LearningMethod> method;
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
double MultiAgentLearner::noise_sigma() const { return impl_->x.sigma; }
int64_t MultiAgentLearner::episodes_done() const { return impl_->episodes; }

std::vector<float> MultiAgentLearner::Act(const std::vector<float>& s, bool explore) {
  Impl& m = *impl_;
  std::vector<float> a(static_cast<size_t>(m.N * m.L), 0.0f);
  if (!m.spec.trains()) return a;
  torch::NoGradGuard g;
  const torch::Tensor st = torch::from_blob(const_cast<float*>(s.data()),
                                            {1, static_cast<int64_t>(s.size())}, torch::kFloat);
  const torch::Tensor in = ActorInputs(st, m.N, m.L);
  for (int i = 0; i < m.N; ++i) {
    if (!m.spec.learns[static_cast<size_t>(i)]) continue;
    const torch::Tensor mu = m.actor(i)->forward(in).reshape({m.L});
    for (int j = 0; j < m.L; ++j) {
      double v = mu[j].item<double>();
      if (explore) v = m.method->Explore(i, j, v, m.x);
      a[static_cast<size_t>(i * m.L + j)] = static_cast<float>(std::clamp(v, -1.0, 1.0));
    }
  }
  if (explore) m.method->Explored();
  return a;
}

UpdateStats MultiAgentLearner::Update(const std::vector<std::vector<Transition>>& batches) {
  if (batches.empty()) return {};
  return impl_->method->UpdateOnMinibatches(batches);
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

UpdateStats MultiAgentLearner::UpdateOnPolicy(const std::vector<Transition>& episode) {
  return impl_->method->UpdateOnEpisode(episode);
}

void MultiAgentLearner::EndEpisode() {
  Impl& m = *impl_;
  ++m.episodes;
  m.x.sigma = std::max(m.hp.noise_min, m.x.sigma * m.hp.noise_decay);
  std::fill(m.x.ou.begin(), m.x.ou.end(), 0.0);
  m.method->EndEpisode();
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

Status MultiAgentLearner::SaveCheckpoint(const std::string& dir) const {
  const Impl& m = *impl_;
  const std::string tmp = dir + ".tmp";
  std::error_code ec;
  std::filesystem::remove_all(tmp, ec);
  std::filesystem::create_directories(tmp, ec);
  if (ec) return Status::IoError(tmp + ": " + ec.message());
  for (int i = 0; i < m.N; ++i) {
    const std::string p = tmp + "/agent" + std::to_string(i) + "_";
    RTB_RETURN_IF_ERROR(m.method->SaveAgent(i, p));
    if (!m.snapshot.empty()) {
      RTB_RETURN_IF_ERROR(SaveTorch(m.snapshot[static_cast<size_t>(i)], p + "best_actor.pt"));
    }
  }
  nlohmann::ordered_json j;
  j["algo"] = m.spec.name;
  j["episodes"] = m.episodes;
  j["sigma"] = m.x.sigma;
  j["ou"] = m.x.ou;
  const Rng::State st = m.x.rng.GetState();
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
    m.x.sigma = j.at("sigma").get<double>();
    m.x.ou = j.at("ou").get<std::vector<double>>();
    Rng::State st{};
    for (int k = 0; k < 4; ++k) st.s[k] = j.at("rng")[k].get<uint64_t>();
    st.has_spare = j.at("rng_has_spare").get<bool>();
    st.spare = j.at("rng_spare").get<double>();
    m.x.rng.SetState(st);
  } catch (const std::exception& e) {
    return Status::Corruption(dir + "/meta.json: " + e.what());
  }
  const bool has_snapshot = j.value("has_snapshot", false);
  m.snapshot.clear();
  for (int i = 0; i < m.N; ++i) {
    const std::string p = dir + "/agent" + std::to_string(i) + "_";
    RTB_RETURN_IF_ERROR(m.method->LoadAgent(i, p));
    if (has_snapshot) {
      std::vector<torch::Tensor> snap;
      RTB_RETURN_IF_ERROR(LoadTorch(snap, p + "best_actor.pt"));
      m.snapshot.push_back(snap);
    }
  }
  m.method->Loaded();
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
