// Which method a learner runs (docs/dcmab.md section 6), as the switches its update reads.
// Torch-free.
#pragma once

#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/learner/config.h"

namespace rtb::learn {

enum class Algo { kManual, kBandit, kA2c, kDdpg, kDcmab, kDcmabCoord, kPartial };

struct AlgoSpec {
  Algo algo = Algo::kDcmab;
  std::string name = "dcmab";
  bool joint_actions = true;  // critic sees every agent's actions (else only its own)
  bool critic_sees_d = true;  // d joins the critic's state at layer 1
  bool use_targets = true;    // target networks for the critic target (Eq. 9)
  bool coordinated = false;   // r_i = total revenue
  double gamma = 0.99;
  std::vector<bool> learns;  // per agent
  bool off_policy() const { return algo != Algo::kA2c && algo != Algo::kManual; }
  bool trains() const { return algo != Algo::kManual; }
};

// The method names `rtb train --algo` accepts, in report order.
const std::vector<std::string>& AllAlgoNames();
Result<AlgoSpec> MakeAlgoSpec(const std::string& name, int agents,
                              const std::vector<int>& learning_agents, const HyperParams& hp);

// The losses of one update (summed over the agents updated).
struct UpdateStats {
  double critic_loss = 0;
  double actor_loss = 0;
  int updates = 0;
};

}  // namespace rtb::learn
