// What a learning method gives the multi-agent learner (MultiAgentLearner, agents.cc): its
// actors, how it explores, its update, its checkpoint files. One file per method implements it
// (a2c.cc, maddpg.cc); the registry (rtb/learner/algo_spec.h) says which one a method name runs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nets.h"
#include "rtb/core/rng.h"
#include "rtb/core/status.h"
#include "rtb/learner/algo_spec.h"
#include "rtb/learner/config.h"
#include "rtb/learner/state.h"
#include "rtb/learner/transition.h"

namespace rtb::learn {

// The exploration state every learner keeps (and checkpoints): its RNG, and the action noise of
// a deterministic policy, N(0, sigma^2) or an Ornstein-Uhlenbeck process per action
// (hyper.noise), whose sigma decays after every episode.
struct Exploration {
  Rng rng;
  double sigma;
  std::vector<double> ou;  // one per action, agent-major
  // mu plus the action noise of action p.
  double AddNoise(size_t p, double mu, const HyperParams& hp);
};

class LearningMethod {
 public:
  virtual ~LearningMethod() = default;

  // mu_i, agent i's actor: what Act plays, Snapshot keeps, ExportTorchScript writes.
  virtual Actor& actor(int i) = 0;
  // The action played for agent i's cluster j while exploring, around its actor's mu (the
  // learner clips it to [-1, 1]).
  virtual double Explore(int i, int j, double mu, Exploration& x) = 0;
  // After each exploring Act.
  virtual void Explored() {}
  // One update on minibatches from the replay memory: one shared, or one per agent.
  virtual UpdateStats UpdateOnMinibatches(const std::vector<std::vector<Transition>>& batches);
  // One update on the episode just played (on-policy).
  virtual UpdateStats UpdateOnEpisode(const std::vector<Transition>& episode);
  virtual void EndEpisode() {}
  // Agent i's networks and optimisers, as files `prefix` + name.
  virtual Status SaveAgent(int i, const std::string& prefix) const = 0;
  virtual Status LoadAgent(int i, const std::string& prefix) = 0;
  // After every agent's LoadAgent.
  virtual void Loaded() {}
};

// The factories of the updates (AlgoEntry::update), each in its method's file. Called with
// LibTorch's generator seeded: they draw the initial weights.
std::unique_ptr<LearningMethod> NewMaddpg(const AlgoSpec& spec, const HyperParams& hp,
                                          const Normalizer& norm);
std::unique_ptr<LearningMethod> NewA2c(const AlgoSpec& spec, const HyperParams& hp,
                                       const Normalizer& norm);

// torch::save / torch::load of a module, an optimiser or tensors, as a Status naming the file
// (IoError when saving, Corruption when loading).
template <typename T>
Status SaveTorch(const T& value, const std::string& path, const std::string& what = "") {
  try {
    torch::save(value, path);
  } catch (const std::exception& e) {
    return Status::IoError((what.empty() ? path : what) + ": " + e.what());
  }
  return Status::Ok();
}
template <typename T>
Status LoadTorch(T& value, const std::string& path) {
  try {
    torch::load(value, path);
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace rtb::learn
