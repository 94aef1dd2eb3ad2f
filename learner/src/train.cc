#include "rtb/learner/train.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rtb/core/log.h"
#include "rtb/core/progress.h"
#include "rtb/core/report_doc.h"
#include "rtb/learner/replay_store.h"
#include "rtb/learner/state.h"
#include "rtb/simulator/env.h"
#include "rtb/simulator/fit.h"
#include "train_run.h"

namespace rtb::learn {
namespace fs = std::filesystem;

namespace {

ActionTable TableOf(const std::vector<float>& a, int N, int L) {
  ActionTable t(N, L);
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < L; ++j) t.set(i, j, a[static_cast<size_t>(i * L + j)]);
  }
  return t;
}

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct TrainState {  // what a resumed run needs besides the learner's checkpoint
  std::vector<double> curve;
  double best = -1;  // best training score (the paper's convergence rule)
  int since_best = 0;
  double best_pick = -1;    // best selection score (validation days; training days if none)
  Rng::State sample_rng{};  // the minibatch sampler, so a resumed run draws what it would have
  bool has_rng = false;
};

Status SaveTrainState(const TrainState& s, const std::string& path) {
  nlohmann::json j;
  j["curve"] = s.curve;
  j["best"] = s.best;
  j["since_best"] = s.since_best;
  j["best_pick"] = s.best_pick;
  j["rng"] = {s.sample_rng.s[0], s.sample_rng.s[1], s.sample_rng.s[2], s.sample_rng.s[3]};
  j["rng_has_spare"] = s.sample_rng.has_spare;
  j["rng_spare"] = s.sample_rng.spare;
  return WriteFileAtomic(path, j.dump());
}

bool LoadTrainState(const std::string& path, TrainState* s) {
  std::ifstream in(path);
  if (!in) return false;
  try {
    nlohmann::json j;
    in >> j;
    s->curve = j.at("curve").get<std::vector<double>>();
    s->best = j.at("best").get<double>();
    s->since_best = j.at("since_best").get<int>();
    s->best_pick = j.value("best_pick", s->best);  // files before validation days: same pick
    for (int k = 0; k < 4; ++k) s->sample_rng.s[k] = j.at("rng")[k].get<uint64_t>();
    s->sample_rng.has_spare = j.at("rng_has_spare").get<bool>();
    s->sample_rng.spare = j.at("rng_spare").get<double>();
    s->has_rng = true;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::vector<double> DeliveryReference(double pick_delivery, const sim::Scenario& sc,
                                      const sim::Day& day, const std::vector<Micros>& budgets) {
  const int N = sc.market.agents, L = sc.market.clusters;
  std::vector<double> ref;
  for (int i = 0; i < N; ++i) {
    ActionTable t(N, L);
    for (int j = 0; j < L; ++j) t.set(i, j, 1.0);
    const RunResult most = sim::EvaluateTable(sc, day, budgets, t);
    ref.push_back(std::min(pick_delivery, CostOverBudget(most.rows[static_cast<size_t>(i)])));
  }
  return ref;
}

double TrainingScore(const std::vector<RunResult>& runs,
                     const std::vector<std::vector<double>>& refs) {
  double worst = 1.0, revenue = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    for (size_t i = 0; i < runs[k].rows.size(); ++i) {
      if (refs[k][i] > 0) worst = std::min(worst, CostOverBudget(runs[k].rows[i]) / refs[k][i]);
    }
    // With goals, the day's worth under them (revenue, and target CPA x score for a target).
    revenue += runs[k].goals.targets > 0 ? runs[k].goals.value : runs[k].total.revenue.units();
  }
  return worst >= 1.0 ? revenue : revenue * std::pow(worst, 50.0);
}

ScenarioDays PrepareDays(const sim::Scenario& sc) {
  ScenarioDays d;
  d.most_train.push_back(DeliveryReference(1.0, sc, sc.train, sc.train_budgets));
  d.train_index.push_back(sim::IndexDay(sc.train, sc.market));
  for (size_t k = 0; k < sc.extra_train.size(); ++k) {
    d.most_train.push_back(
        DeliveryReference(1.0, sc, sc.extra_train[k], sc.extra_train_budgets[k]));
    d.train_index.push_back(sim::IndexDay(sc.extra_train[k], sc.market));
  }
  for (size_t k = 0; k < sc.validation.size(); ++k) {
    d.most_validation.push_back(
        DeliveryReference(1.0, sc, sc.validation[k], sc.validation_budgets[k]));
    d.validation_index.push_back(sim::IndexDay(sc.validation[k], sc.market));
  }
  d.test_index = sim::IndexDay(sc.test, sc.market);
  return d;
}

namespace {

// What a run carries from episode to episode besides the learner.
struct RunState {
  explicit RunState(uint64_t seed) : sample_rng(Rng::Mix(seed, 0x5a3)) {}
  std::vector<std::unique_ptr<sim::MultiAgentEnv>> envs;  // one per training day
  std::unique_ptr<ReplayStore> replay;
  TrainState ts;
  bool resumed = false;
  // What each scored day holds the policies to (training days, then validation days).
  std::vector<std::vector<double>> train_refs, val_refs;
  Rng sample_rng;     // draws the minibatches
  std::ofstream log;  // episodes.csv: one line per episode (docs: learner/README.md)
};

// A method that does not train (manual): its policy on the test day.
RunOutput Untrained(MultiAgentLearner& learner, const sim::Scenario& sc, const ScenarioDays& days) {
  RunOutput out;
  const Evaluation ev = EvaluatePolicy(learner, sc, sc.test, sc.test_budgets, days.test_index);
  out.test = ev.run;
  out.test.curve = {ev.run.total.revenue.units()};
  out.tables = ev.tables;
  return out;
}

// Environments on the training days; the run resumed from its checkpoint or started afresh in
// `dir`; replay memory; the delivery references; the minibatch sampler; episodes.csv.
Result<std::unique_ptr<RunState>> StartRun(const LearnerConfig& cfg, const AlgoSpec& spec,
                                           const sim::Scenario& sc, const ScenarioDays& days,
                                           uint64_t seed, const std::string& dir, bool resume,
                                           MultiAgentLearner& learner) {
  auto run = std::make_unique<RunState>(seed);
  const sim::RewardMode mode =
      spec.coordinated ? sim::RewardMode::kCoordinated : sim::RewardMode::kSelf;
  run->envs.push_back(std::make_unique<sim::MultiAgentEnv>(
      sc.train, sc.market, sc.cfg.auction, sc.cfg.market.alpha_range, sc.train_budgets, mode,
      days.train_index[0]));
  for (size_t k = 0; k < sc.extra_train.size(); ++k) {
    run->envs.push_back(std::make_unique<sim::MultiAgentEnv>(
        sc.extra_train[k], sc.market, sc.cfg.auction, sc.cfg.market.alpha_range,
        sc.extra_train_budgets[k], mode, days.train_index[k + 1]));
  }
  if (cfg.goal_reward) {
    for (auto& env : run->envs) env->SetGoals(&sc.goals);  // the agents learn their goals
  }
  std::error_code ec;
  run->resumed = resume && LoadTrainState(dir + "/train_state.json", &run->ts) &&
                 learner.LoadCheckpoint(dir + "/checkpoint").ok();
  if (!run->resumed) {
    fs::remove_all(dir, ec);
    run->ts = TrainState{};
  }
  fs::create_directories(dir, ec);
  ReplayOptions ro{cfg.replay.capacity, cfg.replay.sync};
  if (cfg.replay.backend == "rocksdb") {
    RTB_ASSIGN_OR_RETURN(run->replay, OpenRocksDbReplayStore(dir + "/replay", ro));
  } else {
    run->replay = NewMemoryReplayStore(ro);
  }
  auto capped = [&](std::vector<std::vector<double>> refs) {
    for (auto& day : refs) {
      for (double& r : day) r = std::min(cfg.pick_delivery, r);
    }
    return refs;
  };
  run->train_refs = capped(days.most_train);
  run->val_refs = capped(days.most_validation);
  if (run->resumed && run->ts.has_rng) run->sample_rng.SetState(run->ts.sample_rng);
  run->log.open(dir + "/episodes.csv", run->resumed ? std::ios::app : std::ios::trunc);
  if (!run->resumed) {
    const int N = sc.market.agents;
    run->log << "episode,train_revenue,test_revenue,train_score,validation_score";
    for (int i = 0; i < N; ++i) run->log << ",train_cost_over_budget_" << i + 1;
    for (int i = 0; i < N; ++i) run->log << ",test_cost_over_budget_" << i + 1;
    run->log << ",noise_sigma\n";
  }
  return run;
}

// Episode `ep`: K = rollouts_per_episode noisy plays of a training day; at each step act, step,
// store the transition and update (from replay, Algorithm 1 lines 10-15; on-policy methods once
// on the whole episode after it).
Status PlayEpisode(const LearnerConfig& cfg, const AlgoSpec& spec, const DeliveryTerm& delivery,
                   uint64_t seed, int ep, MultiAgentLearner& learner, RunState& run) {
  const Normalizer& norm = learner.normalizer();
  const int N = norm.agents, L = norm.clusters;
  std::vector<Transition> episode_ts;
  for (int k = 0; k < cfg.hp.rollouts_per_episode; ++k) {
    sim::MultiAgentEnv& env =
        *run.envs[static_cast<size_t>(ep * cfg.hp.rollouts_per_episode + k) % run.envs.size()];
    const std::vector<double> budgets = env.AgentBudgets();
    sim::Observation obs = env.Reset(Rng::Mix(seed, static_cast<uint64_t>(ep) * 1000 + k));
    std::vector<float> s = norm.EncodeState(obs, budgets);
    for (int t = 0;; ++t) {
      // Act with exploration noise, step the day.
      const std::vector<float> a = learner.Act(s, /*explore=*/true);
      const sim::StepResult res = env.Step(TableOf(a, N, L));
      // Store the transition.
      const Transition tr = BuildTransition(norm,
                                            {.s = s,
                                             .before = &obs,
                                             .a = a,
                                             .rewards = res.rewards,
                                             .after = &res.next,
                                             .done = res.done,
                                             .episode = static_cast<uint64_t>(ep),
                                             .step = static_cast<uint32_t>(t)},
                                            budgets, spec.coordinated, delivery);
      if (spec.off_policy()) RTB_RETURN_IF_ERROR(run.replay->Append(tr).status());
      episode_ts.push_back(tr);
      // Update every agent's critic, actor and targets (Algorithm 1, lines 10-15).
      if (spec.off_policy()) {
        RTB_RETURN_IF_ERROR(
            UpdateFromReplay(learner, *run.replay, cfg.hp, cfg.hp.updates_per_step, run.sample_rng)
                .status());
      }
      s = tr.s2;
      obs = res.next;
      if (res.done) break;
    }
  }
  if (!spec.off_policy()) learner.UpdateOnPolicy(episode_ts);
  return Status::Ok();
}

// The deterministic policy's scores after an episode.
struct EpisodeScores {
  Evaluation train_ev, test_ev;  // the first training day; the test day (the curve)
  double train_score = 0;        // the training days' (the convergence rule)
  double pick_score = 0;         // the validation days' (picks the model); training's if none
};

EpisodeScores ScoreEpisode(MultiAgentLearner& learner, const sim::Scenario& sc,
                           const ScenarioDays& days, const RunState& run) {
  EpisodeScores e;
  e.train_ev = EvaluatePolicy(learner, sc, sc.train, sc.train_budgets, days.train_index[0]);
  e.test_ev = EvaluatePolicy(learner, sc, sc.test, sc.test_budgets, days.test_index);
  std::vector<RunResult> train_runs = {e.train_ev.run};
  for (size_t k = 0; k < sc.extra_train.size(); ++k) {
    train_runs.push_back(EvaluatePolicy(learner, sc, sc.extra_train[k], sc.extra_train_budgets[k],
                                        days.train_index[k + 1])
                             .run);
  }
  e.train_score = TrainingScore(train_runs, run.train_refs);
  // The model is picked on held-out days when there are any: the training days' best score
  // over ~100 episodes is a winner's-curse pick (models lucky on the days they learn from).
  e.pick_score = e.train_score;
  if (!sc.validation.empty()) {
    std::vector<RunResult> val_runs;
    for (size_t k = 0; k < sc.validation.size(); ++k) {
      val_runs.push_back(EvaluatePolicy(learner, sc, sc.validation[k], sc.validation_budgets[k],
                                        days.validation_index[k])
                             .run);
    }
    e.pick_score = TrainingScore(val_runs, run.val_refs);
  }
  return e;
}

// One line of episodes.csv.
void LogEpisode(std::ostream& log, int ep, const EpisodeScores& e, bool validated,
                double noise_sigma) {
  log << ep << "," << Fmt(e.train_ev.run.total.revenue.units()) << ","
      << Fmt(e.test_ev.run.total.revenue.units()) << "," << Fmt(e.train_score) << ","
      << (validated ? Fmt(e.pick_score) : std::string());
  for (const auto& o : e.train_ev.run.rows) log << "," << Fmt(CostOverBudget(o));
  for (const auto& o : e.test_ev.run.rows) log << "," << Fmt(CostOverBudget(o));
  log << "," << Fmt(noise_sigma) << "\n";
}

// The paper's convergence rule counts episodes since the best training score; the model kept
// (a snapshot of the actors) is the one with the best selection score.
void KeepBest(const EpisodeScores& e, MultiAgentLearner& learner, TrainState& ts) {
  if (e.train_score > ts.best) {
    ts.best = e.train_score;
    ts.since_best = 0;
  } else {
    ++ts.since_best;
  }
  if (e.pick_score > ts.best_pick) {
    ts.best_pick = e.pick_score;
    learner.Snapshot();
  }
}

// The model with the best selection score: saved as the deployable model (what `rtb learn
// --init` starts online learning from), evaluated on the test day, exported with every step's
// action table.
Result<RunOutput> FinishRun(MultiAgentLearner& learner, const AlgoSpec& spec,
                            const sim::Scenario& sc, const ScenarioDays& days,
                            const std::string& dir, const TrainState& ts, bool converged) {
  learner.RestoreSnapshot();
  RTB_RETURN_IF_ERROR(learner.SaveCheckpoint(dir + "/best"));
  const Evaluation ev = EvaluatePolicy(learner, sc, sc.test, sc.test_budgets, days.test_index);
  RunOutput out;
  out.test = ev.run;
  out.test.curve = ts.curve;
  out.tables = ev.tables;
  out.episodes = static_cast<int>(ts.curve.size());
  out.best_pick = ts.best_pick;
  out.converged = converged;
  RTB_RETURN_IF_ERROR(learner.ExportTorchScript(dir + "/actors"));
  for (size_t t = 0; t < ev.tables.size(); ++t) {
    ActionTable tab = ev.tables[t];
    tab.algo = spec.name;
    tab.version = t + 1;
    RTB_RETURN_IF_ERROR(
        SaveActionTable(tab, dir + "/action_table_step" + std::to_string(t) + ".json"));
  }
  return out;
}

}  // namespace

// One (method, seed) run: the training loop of Algorithm 1, top to bottom.
Result<RunOutput> TrainOne(const LearnerConfig& cfg, const AlgoSpec& spec, const sim::Scenario& sc,
                           const ScenarioDays& days, uint64_t seed, int episodes,
                           const std::string& dir, bool resume, std::atomic<int64_t>* progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const Normalizer norm = MakeNormalizer(sc.market, cfg.roi_scale);
  RTB_ASSIGN_OR_RETURN(const DeliveryTerm delivery,
                       MakeDeliveryTerm(cfg.delivery_target, cfg.delivery_penalty,
                                        cfg.delivery_penalty_by_agent, sc.market.agents));
  // Seed; build the networks, their targets and optimisers (in `learner`).
  MultiAgentLearner learner(spec, cfg.hp, norm, seed);
  if (!spec.trains()) return Untrained(learner, sc, days);
  // Environments on the training days; replay memory; exploration (in `learner`).
  RTB_ASSIGN_OR_RETURN(std::unique_ptr<RunState> run,
                       StartRun(cfg, spec, sc, days, seed, dir, resume, learner));
  TrainState& ts = run->ts;
  for (int ep = static_cast<int>(learner.episodes_done()); ep < episodes; ++ep) {
    // Act, step, store, and update the critics, actors and targets; decay the noise.
    RTB_RETURN_IF_ERROR(PlayEpisode(cfg, spec, delivery, seed, ep, learner, *run));
    learner.EndEpisode();
    // Score deterministically: the training days end training, the validation days pick the
    // model, the test day is the curve.
    const EpisodeScores e = ScoreEpisode(learner, sc, days, *run);
    ts.curve.push_back(e.test_ev.run.total.revenue.units());
    LogEpisode(run->log, ep, e, !sc.validation.empty(), learner.noise_sigma());
    KeepBest(e, learner, ts);
    progress->fetch_add(1);
    // Checkpoint.
    const bool last = ep + 1 == episodes || ts.since_best >= cfg.patience;
    if (last || (cfg.checkpoint_every > 0 && (ep + 1) % cfg.checkpoint_every == 0)) {
      ts.sample_rng = run->sample_rng.GetState();
      RTB_RETURN_IF_ERROR(learner.SaveCheckpoint(dir + "/checkpoint"));
      RTB_RETURN_IF_ERROR(SaveTrainState(ts, dir + "/train_state.json"));
    }
    if (ts.since_best >= cfg.patience) break;  // the paper's convergence rule
  }
  RTB_ASSIGN_OR_RETURN(RunOutput out,
                       FinishRun(learner, spec, sc, days, dir, ts, ts.since_best >= cfg.patience));
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void RunParallel(size_t n, int jobs, const std::function<void(size_t)>& work, Progress& progress,
                 const std::atomic<int64_t>& done) {
  std::atomic<size_t> next{0}, finished{0};
  auto worker = [&] {
    for (size_t k = next++; k < n; k = next++) {
      work(k);
      finished.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, jobs); ++t) threads.emplace_back(worker);
  while (finished.load() < n) {
    progress.Update(done.load());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& th : threads) th.join();
}

Evaluation EvaluatePolicy(MultiAgentLearner& learner, const sim::Scenario& sc, const sim::Day& day,
                          const std::vector<Micros>& budgets,
                          std::shared_ptr<const sim::DayIndex> index) {
  const int N = sc.market.agents, L = sc.market.clusters;
  sim::MultiAgentEnv env(day, sc.market, sc.cfg.auction, sc.cfg.market.alpha_range, budgets,
                         sim::RewardMode::kSelf, std::move(index));
  const std::vector<double> agent_budgets = env.AgentBudgets();
  sim::Observation obs = env.Reset(0);
  Evaluation ev;
  for (;;) {
    const ActionTable t = TableOf(learner.Act(learner.normalizer().EncodeState(obs, agent_budgets),
                                              /*explore=*/false),
                                  N, L);
    ev.tables.push_back(t);
    const sim::StepResult r = env.Step(t);
    obs = r.next;
    if (r.done) break;
  }
  ev.run.rows = env.engine().AgentOutcomes();
  for (const auto& o : ev.run.rows) ev.run.total += o;
  ev.run.goals = SummarizeGoals(sc.goals, env.engine().advertiser_outcomes());
  ev.run.budget_burn = env.engine().BudgetBurn();
  return ev;
}

namespace {

// The world to train in: the simulator config's generated one (the learned arm's part of it
// below learned_share 1), or a world fitted to logged events (opt.world), whose market then
// replaces the config's (cfg->sim).
Result<std::unique_ptr<sim::Scenario>> TrainingScenario(LearnerConfig* cfg_ptr,
                                                        const TrainOptions& opt) {
  LearnerConfig& cfg = *cfg_ptr;
  if (opt.learned_share <= 0) {
    return Status::InvalidArgument("--learned-share must be in (0, 1]: no learned arm to train");
  }
  if (!opt.world.empty()) {
    std::ifstream in(opt.world);
    if (!in) return Status::NotFound(opt.world + ": cannot open the fitted world");
    std::stringstream text;
    text << in.rdbuf();
    RTB_ASSIGN_OR_RETURN(const sim::FittedWorld w,
                         sim::FittedWorld::FromJson(text.str(), opt.world));
    const double share = opt.learned_share < 1 ? opt.learned_share : w.market.learned_share;
    auto scenario = sim::FittedScenario(cfg.sim, w, share, cfg.training_days, cfg.validation_days);
    cfg.sim = scenario->cfg;
    return scenario;
  }
  RTB_ASSIGN_OR_RETURN(auto scenario, sim::BuildScenario(cfg.sim, "", "", opt.progress));
  sim::AddTrainingDays(*scenario, cfg.training_days - 1);
  sim::AddValidationDays(*scenario, cfg.validation_days);
  if (opt.learned_share < 1) sim::RestrictToArm(*scenario, opt.learned_share, opt.ab_salt);
  return scenario;
}

}  // namespace

Result<Report> RunTraining(const LearnerConfig& cfg_in, const TrainOptions& opt) {
  LearnerConfig cfg = cfg_in;
  if (opt.seeds > 0) cfg.seeds = opt.seeds;
  if (opt.episodes > 0) cfg.episodes = opt.episodes;
  torch::set_num_threads(1);

  RTB_ASSIGN_OR_RETURN(std::unique_ptr<sim::Scenario> scenario, TrainingScenario(&cfg, opt));
  std::vector<std::string> algos = {"manual"};
  for (const auto& a : opt.algos) {
    if (a != "manual") algos.push_back(a);
  }
  std::vector<AlgoSpec> specs;
  for (const auto& a : algos) {
    RTB_ASSIGN_OR_RETURN(AlgoSpec s,
                         MakeAlgoSpec(a, cfg.sim.market.agents, cfg.learning_agents, cfg.hp));
    specs.push_back(s);
  }
  const sim::Scenario& sc = *scenario;

  // Every (method, seed) run is a job; `jobs` threads take them in order.
  struct Job {
    size_t method;
    int seed;
    Result<RunOutput> result = Status::Internal("not run");
  };
  std::vector<Job> jobs;
  for (size_t m = 0; m < specs.size(); ++m) {
    for (int s = 0; s < cfg.seeds; ++s) {
      // Built in place: GCC 12 warns falsely (maybe-uninitialized) on a moved temporary here.
      jobs.emplace_back();
      jobs.back().method = m;
      jobs.back().seed = s;
    }
  }
  int64_t total_episodes = 0;
  for (const auto& j : jobs) total_episodes += specs[j.method].trains() ? cfg.episodes : 0;
  std::atomic<int64_t> done_episodes{0};
  Progress progress("train", total_episodes, opt.progress);
  const bool any_trains =
      std::any_of(specs.begin(), specs.end(), [](const AlgoSpec& sp) { return sp.trains(); });
  const ScenarioDays days = any_trains ? PrepareDays(sc) : ScenarioDays{};
  RunParallel(
      jobs.size(), opt.jobs,
      [&](size_t k) {
        Job& j = jobs[k];
        const AlgoSpec& spec = specs[j.method];
        const std::string dir = opt.out + "/" + spec.name + "/seed" + std::to_string(j.seed);
        j.result = TrainOne(cfg, spec, sc, days, cfg.base_seed + static_cast<uint64_t>(j.seed),
                            cfg.episodes, dir, opt.resume, &done_episodes);
        if (j.result.ok()) {
          log::Get("train").info("{} seed {}: {} episodes in {:.1f}s, test revenue {:.0f}",
                                 spec.name, j.seed, j.result->episodes, j.result->seconds,
                                 j.result->test.total.revenue.units());
        }
      },
      progress, done_episodes);
  progress.Done();

  Report r;
  r.kind = "train";
  r.title = "Learned bidding vs manual bids on the simulated test day";
  r.meta = {{"config", doc::ShownPath(opt.config_path)},
            {"simulator config",
             opt.world.empty() ? doc::ShownPath(cfg.simulator_config)
                               : "a world fitted to logged events: " + doc::ShownPath(opt.world)},
            {"auction", sim::DescribeAuction(cfg.sim.auction)},
            {"seeds", std::to_string(cfg.seeds) + (cfg.seeds == 1 ? " seed" : " seeds") +
                          " (base seed " + std::to_string(cfg.base_seed) + ")"},
            {"episodes", cfg.patience < cfg.episodes
                             ? "at most " + std::to_string(cfg.episodes) + ", stopping after " +
                                   std::to_string(cfg.patience) + " without a better training score"
                             : std::to_string(cfg.episodes)},
            {"evaluation",
             "deterministic policy (no noise) on the test day; the model with the best score on " +
                 (sc.validation.empty()
                      ? std::string("the training days")
                      : std::to_string(sc.validation.size()) + " held-out validation day(s)")},
            {"budget",
             "fraction of each advertiser's cost under manual bids with unlimited "
             "budget, per day"}};
  if (opt.learned_share < 1) {
    r.meta.push_back(
        {"A/B arm", "trained for the learned arm of a live A/B test: the " +
                        std::to_string(static_cast<int>(std::lround(100 * opt.learned_share))) +
                        "% of users the bidders hash to it (salt " + opt.ab_salt +
                        ") and that share of every budget, on every day"});
  }
  sim::DescribeAgents(sc.market, &r);
  r.baseline = "manual";
  r.primary = algos.size() > 1 ? algos[1] : "manual";
  r.burn_bucket_minutes = sc.test.steps * sc.test.step_ms / 60000.0 / sc.cfg.burn_buckets;
  for (size_t m = 0; m < specs.size(); ++m) {
    MethodResult mr;
    mr.name = specs[m].name;
    mr.description = specs[m].name == "manual"
                         ? "manual bids (a = 0)"
                         : "trained on the training day, " + std::to_string(cfg.seeds) +
                               (cfg.seeds == 1 ? " seed" : " seeds");
    for (auto& j : jobs) {
      if (j.method != m) continue;
      if (!j.result.ok()) return j.result.status();
      mr.runs.push_back(j.result->test);
    }
    r.methods.push_back(std::move(mr));
    // The action tables of seed 0 for the bidder.
    for (auto& j : jobs) {
      if (j.method == m && j.seed == 0 && j.result.ok() && !j.result->tables.empty()) {
        ActionTable t = j.result->tables[0];
        t.algo = specs[m].name;
        t.version = 1;
        std::error_code ec;
        fs::create_directories(opt.out + "/" + specs[m].name, ec);
        RTB_RETURN_IF_ERROR(
            SaveActionTable(t, opt.out + "/" + specs[m].name + "/action_table.json"));
      }
    }
  }
  r.notes = {cfg.seeds > 1
                 ? "Each method trains on the training day and is evaluated on the test day "
                   "(same world, another draw) with its deterministic policy; mean and std "
                   "are over seeds."
                 : "Each method trains on the training day and is evaluated on the test day "
                   "(same world, another draw) with its deterministic policy.",
             "The action table is recomputed at every step from the current state: a[i][j] = "
             "mu_i([g, x_j]). action_table.json (per method) is seed 0's table for the first step; "
             "<method>/seed<k>/action_table_step<t>.json hold every step's table.",
             "Deviations from the paper: one shared minibatch per update for all agents "
             "(hyper.shared_minibatch); A2C's critic is a state-value V_i(s); x_j carries the "
             "history of the coming step's hour; d joins the critic at layer 1.",
             "cost per click is the paper's CPA; COST is spend / budget."};
  return r;
}

}  // namespace rtb::learn
