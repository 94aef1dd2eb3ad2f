#include "rtb/learner/config.h"

#include <algorithm>
#include <filesystem>

#include "rtb/core/log.h"

namespace rtb::learn {

Result<LearnerConfig> LoadLearnerConfig(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(auto file, ConfigFile::Load(path));
  LearnerConfig c;
  ConfigMap root = file->Root();
  root.Get("log_level", &c.log_level);
  root.Check(log::ParseLevel(c.log_level).ok(), "log_level",
             "must be trace, debug, info, warn, error or off");
  root.Get("simulator_config", &c.simulator_config);
  root.Get("seeds", &c.seeds);
  root.Check(c.seeds >= 1 && c.seeds <= 100, "seeds", "must be between 1 and 100");
  root.Get("base_seed", &c.base_seed);
  root.Get("episodes", &c.episodes);
  root.Check(c.episodes >= 1, "episodes", "must be at least 1");
  root.Get("patience", &c.patience);
  root.Check(c.patience >= 1, "patience", "must be at least 1");
  root.Get("checkpoint_every", &c.checkpoint_every);
  root.Get("training_days", &c.training_days);
  root.Check(c.training_days >= 1 && c.training_days <= 100, "training_days",
             "must be between 1 and 100");
  root.Get("validation_days", &c.validation_days);
  root.Check(c.validation_days >= 0 && c.validation_days <= 100, "validation_days",
             "must be between 0 and 100");
  root.Check(c.checkpoint_every >= 0, "checkpoint_every", "must be >= 0");
  root.Get("roi_scale", &c.roi_scale);
  root.Check(c.roi_scale > 0, "roi_scale", "must be positive");
  root.Get("pick_delivery", &c.pick_delivery);
  root.Check(c.pick_delivery > 0 && c.pick_delivery <= 1, "pick_delivery", "must be in (0, 1]");
  root.Get("learning_agents", &c.learning_agents);
  root.Get("delivery_target", &c.delivery_target);
  root.Check(c.delivery_target >= 0 && c.delivery_target <= 1, "delivery_target",
             "must be in [0, 1]");
  root.Get("goal_reward", &c.goal_reward);
  root.Get("delivery_penalty", &c.delivery_penalty);
  root.Check(c.delivery_penalty >= 0, "delivery_penalty", "must be >= 0");
  root.Get("delivery_penalty_by_agent", &c.delivery_penalty_by_agent);
  root.Check(std::all_of(c.delivery_penalty_by_agent.begin(), c.delivery_penalty_by_agent.end(),
                         [](double x) { return x >= 0; }),
             "delivery_penalty_by_agent", "must be >= 0 for every agent");

  ConfigMap h = root.Section("hyper");
  HyperParams& hp = c.hp;
  h.Get("actor_lr", &hp.actor_lr);
  h.Get("critic_lr", &hp.critic_lr);
  h.Check(hp.actor_lr > 0 && hp.critic_lr > 0, "actor_lr", "and critic_lr must be positive");
  h.Get("gamma", &hp.gamma);
  h.Check(hp.gamma >= 0 && hp.gamma <= 1, "gamma", "must be in [0, 1]");
  h.Get("tau", &hp.tau);
  h.Check(hp.tau > 0 && hp.tau <= 1, "tau", "must be in (0, 1]");
  h.Get("batch_size", &hp.batch_size);
  h.Check(hp.batch_size >= 1 && hp.batch_size <= 65536, "batch_size", "must be in [1, 65536]");
  h.Get("grad_clip", &hp.grad_clip);
  h.Check(hp.grad_clip > 0, "grad_clip", "must be positive");
  h.Get("updates_per_step", &hp.updates_per_step);
  h.Check(hp.updates_per_step >= 0, "updates_per_step", "must be >= 0");
  h.Get("rollouts_per_episode", &hp.rollouts_per_episode);
  h.Check(hp.rollouts_per_episode >= 1 && hp.rollouts_per_episode <= 1000, "rollouts_per_episode",
          "must be between 1 and 1000");
  h.Get("warmup_transitions", &hp.warmup_transitions);
  h.Get("actor_hidden", &hp.actor_hidden);
  h.Get("critic_hidden", &hp.critic_hidden);
  h.Check(hp.actor_hidden >= 1 && hp.critic_hidden >= 1, "actor_hidden",
          "and critic_hidden must be positive");
  h.Get("noise", &hp.noise);
  h.Check(hp.noise == "gaussian" || hp.noise == "ou", "noise", "must be gaussian or ou");
  h.Get("noise_sigma", &hp.noise_sigma);
  h.Get("noise_decay", &hp.noise_decay);
  h.Get("noise_min", &hp.noise_min);
  h.Check(hp.noise_sigma >= 0 && hp.noise_min >= 0 && hp.noise_decay > 0 && hp.noise_decay <= 1,
          "noise_decay", "must be in (0, 1] with non-negative sigmas");
  h.Get("ou_theta", &hp.ou_theta);
  h.Get("actor_preact_reg", &hp.actor_preact_reg);
  h.Check(hp.actor_preact_reg >= 0, "actor_preact_reg", "must be >= 0");
  h.Get("a2c_lr", &hp.a2c_lr);
  h.Get("a2c_entropy", &hp.a2c_entropy);
  h.Get("a2c_init_log_std", &hp.a2c_init_log_std);
  h.Get("shared_minibatch", &hp.shared_minibatch);

  ConfigMap r = root.Section("replay");
  r.Get("backend", &c.replay.backend);
  r.Check(c.replay.backend == "rocksdb" || c.replay.backend == "memory", "backend",
          "must be rocksdb or memory");
  r.Get("capacity", &c.replay.capacity);
  r.Check(c.replay.capacity >= 1, "capacity", "must be positive");
  r.Get("sync", &c.replay.sync);

  if (root.Has("online")) {
    ConfigMap o = root.Section("online");
    OnlineConfig& on = c.online;
    o.Get("brokers", &on.brokers);
    o.Get("events_topic", &on.events_topic);
    o.Get("policy_topic", &on.policy_topic);
    o.Get("clock_topic", &on.clock_topic);
    o.Get("group_id", &on.group_id);
    o.Get("state_dir", &on.state_dir);
    o.Get("clock", &on.clock);
    o.Check(on.clock == "markers" || on.clock == "wall", "clock", "must be markers or wall");
    o.Get("step_grace_ms", &on.step_grace_ms);
    o.Check(on.step_grace_ms >= 0, "step_grace_ms", "must be >= 0");
    o.Get("explore", &on.explore);
    o.Get("updates_per_step", &on.updates_per_step);
    o.Check(on.updates_per_step >= 0, "updates_per_step", "must be >= 0");
    o.Get("checkpoint_every", &on.checkpoint_every);
    o.Check(on.checkpoint_every >= 1, "checkpoint_every", "must be >= 1");
    o.Get("cold_start_range", &on.cold_start_range);
    o.Check(on.cold_start_range >= 0 && on.cold_start_range <= 1, "cold_start_range",
            "must be between 0 and 1");
    o.Get("max_table_move", &on.max_table_move);
    o.Check(on.max_table_move > 0 && on.max_table_move <= 2, "max_table_move",
            "must be above 0 and at most 2");
    o.Get("max_steps_ahead", &on.max_steps_ahead);
    o.Check(on.max_steps_ahead >= 1, "max_steps_ahead", "must be >= 1");
    o.Get("progress_every_ms", &on.progress_every_ms);
    o.Check(on.progress_every_ms >= 0, "progress_every_ms", "must be >= 0");
    o.Get("admin_listen", &on.admin_listen);
    o.Get("market", &on.market);
    o.Get("history", &on.history);
    o.Check(on.history == "events" || on.history == "prior", "history", "must be events or prior");
  }
  RTB_RETURN_IF_ERROR(file->Finish());

  std::filesystem::path sim_path = c.simulator_config;
  if (sim_path.is_relative()) sim_path = std::filesystem::path(path).parent_path() / sim_path;
  RTB_ASSIGN_OR_RETURN(c.sim, sim::LoadSimulatorConfig(sim_path.lexically_normal().string()));
  c.simulator_config = sim_path.lexically_normal().string();
  for (int a : c.learning_agents) {
    if (a < 1 || a > c.sim.market.agents) {
      return Status::InvalidArgument(path + ": learning_agents: agent " + std::to_string(a) +
                                     " outside 1.." + std::to_string(c.sim.market.agents));
    }
  }
  return c;
}

}  // namespace rtb::learn
