// The learner's configuration (configs/learner/default.yaml). Every hyperparameter is
// documented here, where it is declared, cleanrl style; defaults follow docs/dcmab.md section 5.
// Torch-free, so `rtb` can validate a config without loading LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/simulator/config.h"

namespace rtb::learn {

struct HyperParams {
  double actor_lr = 1e-3;          // Adam learning rate of every actor mu_i
  double critic_lr = 1e-3;         // Adam learning rate of every critic Q_i
  double gamma = 0.99;             // discount; the horizon is T = 3 steps
  double tau = 0.01;               // soft target update theta' <- tau*theta + (1-tau)*theta'
  int batch_size = 32;             // minibatch size per update (the paper: 64..1024)
  double grad_clip = 0.5;          // max gradient norm per network and update
  int updates_per_step = 4;        // gradient steps (all agents) per simulated step (the paper:
                                   // 1). 4 at batch 32 trains all methods in 9 min on 2 cores at
                                   // DCMAB's level of 8 at 64 (docs/experiments.md)
  int rollouts_per_episode = 4;    // noisy plays of the training day per episode, like the
                                   // paper's parallel workers (each adds T transitions)
  int warmup_transitions = 32;     // no update before the replay holds this many transitions
  int actor_hidden = 300;          // actor: in -> hidden -> hidden -> 1 (ReLU, tanh out)
  int critic_hidden = 100;         // critic: state -> hidden, [hidden, actions] -> hidden -> 1
  std::string noise = "gaussian";  // exploration process per a_ij: gaussian | ou
  double noise_sigma = 0.3;        // initial noise scale
  double noise_decay = 0.97;       // sigma x decay per episode
  double noise_min = 0.02;         // floor of the decayed sigma
  double ou_theta = 0.15;          // Ornstein-Uhlenbeck mean reversion (noise = ou)
  double actor_preact_reg = 0.01;  // penalty x mean(u^2) on the actor's pre-tanh output u, so
                                   // the actor cannot saturate at a = +-1 (deviation; 0 = off)
  double a2c_lr = 3e-4;            // A2C: Adam learning rate (actor and value)
  double a2c_entropy = 1e-3;       // A2C: entropy bonus weight
  double a2c_init_log_std = -1.0;  // A2C: initial log std of the Gaussian policy
  bool shared_minibatch = true;    // one minibatch for all agents per update, so every
                                   // agent's target actions are computed once (deviation:
                                   // the paper samples per agent; set false for that)
};

struct ReplayConfig {
  std::string backend = "rocksdb";  // rocksdb (durable, default) | memory
  uint64_t capacity = 1000000;      // transitions kept; older ones are evicted
  bool sync = false;                // fsync every append (survives power loss, slower)
};

// The online learner (`rtb learn`): the loop of docs/dcmab.md section 8 fed by the bidders' events.
struct OnlineConfig {
  std::string brokers;                      // bootstrap.servers of the events/policy cluster
  std::string events_topic = "rtb.events";  // the bidders' outcome events (consumed)
  std::string policy_topic = "rtb.policy";  // action tables + cluster map (published)
  std::string clock_topic = "rtb.clock";    // step-end markers from the exchange (consumed)
  // The learner's group: its offsets (committed after the transitions they produced are
  // durable), its claim, and its tables' transactional.id `<group_id>.policy`. One learner
  // publishes a group's tables: a newer one started against the group fences the older off.
  std::string group_id = "rtb-learner";
  std::string state_dir = "out/learner";  // replay store, checkpoint, learner log
  std::string clock = "markers";  // markers: a step closes on the exchange's marker (simulated
                                  // clock) | wall: on the wall clock, step_grace_ms after its end
  int64_t step_grace_ms = 3000;   // wait this long for a step's stragglers once its marker
                                  // (or its end) is seen, unless the marker's counts are met
  bool explore = true;            // add the (decayed) exploration noise to published actions
  int updates_per_step = 8;       // gradient steps per closed step
  int checkpoint_every = 1;       // closed steps between checkpoints
  // The market: the bidders' config (bidder/include/rtb/bidder/config.h: advertisers, agents,
  // budgets, ab.learned_share, market.steps_per_day / step_seconds / alpha_range) and its
  // cluster map. Relative paths in it are the bidders'. --market overrides.
  std::string market;
  // x_j's history: events (each day, the previous day's learned-arm revenue and cost per step
  // and cluster, at the whole market's scale; the market's prior on the first day) | prior
  // (the market's cluster history throughout).
  std::string history = "events";
  // Started with no checkpoint (no --init and none in state_dir): the first table is manual
  // bids (a = 0) and every later one stays within a = 0 +- this, while the agents learn from
  // the transitions of what was played. A learner resumed from its own state keeps the range.
  double cold_start_range = 0.2;
  // The most any action a_ij of a published table may move from the table published before it
  // (actions are in [-1, 1]; 2 = no limit). A table that would move further is clipped to
  // within this of the last one, and the learner logs that it did, how many actions and the
  // largest move it wanted: poisoned experience that slipped past the range checks can steer
  // the bids only this far per step. The clipped table is the one played and learned from.
  double max_table_move = 1.0;
  // A step marker more than this many steps after the last accepted one (the last closed step,
  // or the step before the one playing on a fresh start) is refused, counted and logged, and
  // the learner goes on with the next plausible one: one forged marker of a far-future day
  // cannot end learning. Raise it to join a market whose clock is far ahead of the state dir.
  int max_steps_ahead = 1;
  // A progress line this often while a step waits for its events or its marker (0 = none).
  int progress_every_ms = 10000;
  // The admin port: GET /metrics and /healthz (docs/metrics.md) on host:port; empty = none.
  // --admin-listen overrides.
  std::string admin_listen;
};

struct LearnerConfig {
  // The process log's level: trace | debug | info | warn | error | off (override: --log-level).
  std::string log_level = "info";
  std::string simulator_config = "../simulator/default.yaml";  // relative to this file
  sim::SimulatorConfig sim;                                    // loaded from simulator_config
  int seeds = 4;              // independent runs per method (mean +- std)
  uint64_t base_seed = 1;     // seed of run s is base_seed + s
  int episodes = 150;         // max training episodes (days) per run
  int patience = 50;          // stop when the training score has not improved for this
                              // many episodes (the paper's convergence rule)
  int checkpoint_every = 25;  // episodes between checkpoints (0 = only at the end)
  int training_days = 8;      // days of (generated) training traffic; plays rotate over
                              // them so the policy learns to pace from its state (8: see
                              // learner/README.md, "Training days")
  int validation_days = 2;    // held-out generated days (never trained on, never the test
                              // day): the model with the best score on them is the one
                              // evaluated, exported and reported; 0 = pick on the training
                              // days' score instead (a winner's-curse pick, see README)
  double roi_scale = 4.0;     // reward and revenue normalisation: revenue / (budget x this)
  // The budget delivery a policy is held to when runs are scored (convergence and the model
  // pick): each agent's cost / budget on each scored day, against this or against what manual
  // bids deliver that day when that is less; below it the score is discounted by
  // (delivery / reference)^50. In (0, 1].
  double pick_delivery = 0.99;
  // Budget delivery (deviation from the paper's pure revenue reward, see learner/README.md):
  // at the day's last step r_i -= delivery_penalty x max(0, delivery_target - cost_i/budget_i)
  // (coordinated: the sum over agents, for every agent). 0 = the paper's reward.
  double delivery_target = 0.995;
  double delivery_penalty = 10.0;
  // The penalty per agent instead (agent 1 first, one value per agent of the market; checked
  // when the market is known): a market whose agents' delivery contracts differ, such as one
  // agent of many small budgets that underdelivers where the others do not. [] = the one
  // delivery_penalty for every agent.
  std::vector<double> delivery_penalty_by_agent;
  // In a world where advertisers have goals (world.cpa_share, roas_share), the agents' rewards are
  // the goals' (docs/dcmab.md section 4: target x conversions per step, the shortfall at the day's
  // end); false: their revenue, as if no advertiser had a target (the ablation). Models are
  // picked by the goals' worth either way. `rtb learn` reads the targets from its market's
  // bidder config and pays the same rewards from the events.
  bool goal_reward = true;
  std::vector<int> learning_agents;  // partial coordination: 1-based agents that learn with the
                                     // total reward; the others keep manual bids. Empty = all.
  HyperParams hp;
  ReplayConfig replay;
  OnlineConfig online;
};

Result<LearnerConfig> LoadLearnerConfig(const std::string& path);

}  // namespace rtb::learn
