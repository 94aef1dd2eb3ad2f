// The learning methods (docs/dcmab.md section 6): the one registry of them, and the switches a
// method's update reads (AlgoSpec). Torch-free: `rtb` reads the names without LibTorch.
#pragma once

#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/learner/config.h"

namespace rtb::learn {

// The update a method runs, one file each under learner/src (the torch side builds it:
// kMethodFactories in agents.cc).
enum class Update {
  kMaddpg,  // maddpg.cc: Algorithm 1, deterministic actors and Q critics, from replay
  kA2c,     // a2c.cc: Gaussian actors and state-value critics, on each episode just played
};

// Which agents learn under a method.
enum class Learners {
  kAll,
  kNone,    // every agent keeps a = 0
  kListed,  // the config's learning_agents (numbered 1..N); the others keep a = 0
};

// One line of the registry: a method's name, what MakeAlgoSpec sets for it, its update and its
// one-line help. Members in the order the registry's designated initializers name them.
struct AlgoEntry {
  const char* name;
  const char* help;
  Update update = Update::kMaddpg;
  bool replay = true;  // learns off-policy from the replay memory
  Learners learners = Learners::kAll;
  bool joint_actions = true;  // critic sees every agent's actions (else only its own)
  bool critic_sees_d = true;  // d joins the critic's state at layer 1
  bool use_targets = true;    // target networks for the critic target (Eq. 9)
  bool coordinated = false;   // r_i = total revenue
  bool one_step = false;      // gamma = 0 (else hyper.gamma)
  bool in_all = true;         // trained by `--algo all`
};

// Every method, in report order. Adding one: learner/README.md ("Adding a method").
const std::vector<AlgoEntry>& AlgoRegistry();

struct AlgoSpec {
  std::string name = "dcmab";
  Update update = Update::kMaddpg;
  bool replay = true;         // learns off-policy from the replay memory (else on-policy)
  bool joint_actions = true;  // critic sees every agent's actions (else only its own)
  bool critic_sees_d = true;  // d joins the critic's state at layer 1
  bool use_targets = true;    // target networks for the critic target (Eq. 9)
  bool coordinated = false;   // r_i = total revenue
  double gamma = 0.99;
  std::vector<bool> learns;  // per agent
  bool trains() const;       // some agent learns
  bool off_policy() const { return replay && trains(); }
};

// The methods `rtb train --algo all` trains, in report order.
const std::vector<std::string>& AllAlgoNames();
// Every method's name, joined by `sep` ("manual|bandit|..."), in report order.
std::string AlgoNameList(const std::string& sep);
// One line per method, "name: help", for --help.
std::string AlgoHelpLines();
Result<AlgoSpec> MakeAlgoSpec(const std::string& name, int agents,
                              const std::vector<int>& learning_agents, const HyperParams& hp);

// The losses of one update (summed over the agents updated).
struct UpdateStats {
  double critic_loss = 0;
  double actor_loss = 0;
  int updates = 0;
};

}  // namespace rtb::learn
