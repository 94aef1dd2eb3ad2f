#include "rtb/learner/algo_spec.h"

#include <algorithm>

namespace rtb::learn {

const std::vector<AlgoEntry>& AlgoRegistry() {
  static const std::vector<AlgoEntry> registry = {
      {.name = "manual",
       .help = "a = 0 (the advertisers' manual bids); nothing learns",
       .learners = Learners::kNone},
      {.name = "bandit",
       .help = "one-step critic Q_i(s, a_1..a_N): gamma = 0, no target networks; replay",
       .critic_sees_d = false,
       .use_targets = false,
       .one_step = true},
      {.name = "a2c",
       .help = "on-policy Gaussian actor and state-value critic V_i(s); no replay",
       .update = Update::kA2c,
       .replay = false,
       .joint_actions = false,
       .critic_sees_d = false},
      {.name = "ddpg",
       .help = "independent learners: critic Q_i(s, a_i) sees only its own actions; replay",
       .joint_actions = false,
       .critic_sees_d = false},
      {.name = "dcmab",
       .help = "centralised critic Q_i(s, a_1..a_N, d), own revenue (Algorithm 1); replay"},
      {.name = "dcmab-coord", .help = "dcmab with every r_i = total revenue", .coordinated = true},
      {.name = "partial",
       .help = "dcmab-coord for learning_agents only; the others keep a = 0",
       .learners = Learners::kListed,
       .coordinated = true,
       .in_all = false},
  };
  return registry;
}

bool AlgoSpec::trains() const {
  return std::find(learns.begin(), learns.end(), true) != learns.end();
}

const std::vector<std::string>& AllAlgoNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const AlgoEntry& e : AlgoRegistry()) {
      if (e.in_all) v.push_back(e.name);
    }
    return v;
  }();
  return names;
}

std::string AlgoNameList(const std::string& sep) {
  std::string out;
  for (const AlgoEntry& e : AlgoRegistry()) out += (out.empty() ? "" : sep) + e.name;
  return out;
}

std::string AlgoHelpLines() {
  std::string out;
  for (const AlgoEntry& e : AlgoRegistry()) {
    out += std::string("\n  ") + e.name + ": " + e.help + (e.in_all ? "" : " (not in all)");
  }
  return out;
}

namespace {

// Who learns: every agent, none, or the listed ones (1..agents).
Result<std::vector<bool>> LearningAgents(const AlgoEntry& e, int agents,
                                         const std::vector<int>& listed) {
  std::vector<bool> learns(static_cast<size_t>(agents), e.learners == Learners::kAll);
  if (e.learners != Learners::kListed) return learns;
  if (listed.empty()) {
    return Status::InvalidArgument(std::string("algo '") + e.name +
                                   "' needs learning_agents (for example [3])");
  }
  for (int a : listed) {
    if (a < 1 || a > agents) {
      return Status::InvalidArgument("learning_agents: agent " + std::to_string(a) +
                                     " is not in 1.." + std::to_string(agents));
    }
    learns[static_cast<size_t>(a - 1)] = true;
  }
  return learns;
}

}  // namespace

Result<AlgoSpec> MakeAlgoSpec(const std::string& name, int agents,
                              const std::vector<int>& learning_agents, const HyperParams& hp) {
  const auto& reg = AlgoRegistry();
  const auto e =
      std::find_if(reg.begin(), reg.end(), [&](const AlgoEntry& x) { return name == x.name; });
  if (e == reg.end()) {
    return Status::InvalidArgument("unknown algo '" + name + "' (" + AlgoNameList(", ") + ")");
  }
  AlgoSpec s;
  s.name = name;
  s.update = e->update;
  s.replay = e->replay;
  s.joint_actions = e->joint_actions;
  s.critic_sees_d = e->critic_sees_d;
  s.use_targets = e->use_targets;
  s.coordinated = e->coordinated;
  s.gamma = e->one_step ? 0 : hp.gamma;
  RTB_ASSIGN_OR_RETURN(s.learns, LearningAgents(*e, agents, learning_agents));
  return s;
}

}  // namespace rtb::learn
