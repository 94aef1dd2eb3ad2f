// A tiny world and small networks for the learner's quick end-to-end tests; each test sets
// what it is about (days, episodes, update sizes) on top.
#pragma once

#include "rtb/learner/config.h"

namespace rtb::learn {

inline LearnerConfig TinyLearnerConfig() {
  LearnerConfig c;
  c.sim.world.advertisers = 200;
  c.sim.world.consumers = 1000;
  c.sim.day.requests = 3000;
  c.seeds = 2;
  c.patience = 50;
  c.hp.actor_hidden = 32;
  c.hp.critic_hidden = 16;
  c.hp.rollouts_per_episode = 2;
  c.hp.warmup_transitions = 4;
  return c;
}

}  // namespace rtb::learn
