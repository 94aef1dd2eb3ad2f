#include "rtb/learner/tune.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "rtb/core/log.h"
#include "rtb/core/progress.h"
#include "rtb/core/report.h"
#include "rtb/core/report_doc.h"
#include "rtb/core/rng.h"
#include "rtb/learner/agents.h"
#include "rtb/simulator/simulate.h"
#include "train_run.h"

namespace rtb::learn {
namespace fs = std::filesystem;

namespace {

// Log-uniform in [lo, hi], to 3 significant digits: what best.yaml writes is what was trained.
double LogUniform(Rng& rng, double lo, double hi) {
  const double v = std::exp(std::log(lo) + rng.Uniform() * (std::log(hi) - std::log(lo)));
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(v)));
  return std::clamp(std::round(v * scale) / scale, lo, hi);
}

int OneOf(Rng& rng, std::initializer_list<int> xs) {
  return *(xs.begin() + static_cast<std::ptrdiff_t>(rng.UniformInt(xs.size())));
}

// The per-episode selection score of a trial's run (episodes.csv: validation_score, or
// train_score without validation days).
std::vector<double> ReadCurve(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<double> curve;
  if (!std::getline(in, line)) return curve;
  std::vector<std::string> head;
  std::stringstream hs(line);
  for (std::string c; std::getline(hs, c, ',');) head.push_back(c);
  const auto col = [&](const std::string& name) {
    return static_cast<int>(std::find(head.begin(), head.end(), name) - head.begin());
  };
  const int val = col("validation_score"), train = col("train_score");
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    const int k = val < static_cast<int>(cells.size()) && !cells[static_cast<size_t>(val)].empty()
                      ? val
                      : train;
    if (k < static_cast<int>(cells.size()))
      curve.push_back(std::stod(cells[static_cast<size_t>(k)]));
  }
  return curve;
}

nlohmann::json ParamsJson(const TrialParams& p) {
  return {{"actor_lr", p.actor_lr},
          {"critic_lr", p.critic_lr},
          {"tau", p.tau},
          {"batch_size", p.batch_size},
          {"updates_per_step", p.updates_per_step},
          {"noise_sigma", p.noise_sigma},
          {"delivery_penalty", p.delivery_penalty}};
}

// The value of the first `key:` line of a YAML text (after indentation; up to a comment or the
// end of the line), replaced by edit(old value): comments and every other line kept. False when
// no such line.
bool EditKeyLine(std::string& text, const std::string& key,
                 const std::function<std::string(std::string)>& edit) {
  const std::regex re("(^|\\n)([ \\t]*" + key +
                      ":[ \\t]*)([^#\\n]*?)([ \\t]*(#[^\\n]*)?)(?=\\n|$)");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return false;
  text.replace(static_cast<size_t>(m.position(0)), static_cast<size_t>(m.length(0)),
               m[1].str() + m[2].str() + edit(m[3].str()) + m[4].str());
  return true;
}

std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

Status WriteTuneReport(const TuneResult& r, const TuneOptions& opt, const LearnerConfig& cfg) {
  nlohmann::json j;
  j["kind"] = "tune";
  j["algo"] = opt.algo;
  j["config"] = doc::ShownPath(opt.config_path);
  j["rungs"] = r.rungs;
  j["eta"] = opt.eta;
  j["seed"] = opt.seed;
  j["best_trial"] = r.best;
  j["episodes_trained"] = r.episodes;
  j["full_runs"] = r.full_runs;
  j["full_run_episodes"] = static_cast<int64_t>(cfg.episodes) * cfg.seeds;
  j["seconds"] = r.seconds;
  j["trials"] = nlohmann::json::array();
  for (const Trial& t : r.trials) {
    j["trials"].push_back({{"id", t.id},
                           {"params", ParamsJson(t.params)},
                           {"scores", t.scores},
                           {"episodes", t.episodes},
                           {"converged", t.converged},
                           {"stopped_at", t.stopped_at},
                           {"curve", t.curve}});
  }

  doc::Document d;
  d.title = "rtb tune: " + opt.algo + ", successive halving over " +
            std::to_string(r.trials.size()) + " configurations";
  d.Add(doc::KeyValues{
      {{"config", doc::ShownPath(opt.config_path)},
       {"rungs (episodes)",
        [&] {
          std::string s;
          for (int x : r.rungs) s += (s.empty() ? "" : ", ") + std::to_string(x);
          return s;
        }()},
       {"kept at each rung", "the best 1/" + std::to_string(opt.eta)},
       {"score", "the model-picking score of one seed (base seed " + std::to_string(cfg.base_seed) +
                     "): revenue on the validation days, discounted below 99% delivery"},
       {"cost", std::to_string(r.episodes) + " episodes = " + Short(r.full_runs) +
                    " full runs of " + std::to_string(cfg.seeds) + " seeds x " +
                    std::to_string(cfg.episodes) + " episodes"},
       {"best", "trial " + std::to_string(r.best) + (r.best == 0 ? " (the config as given)" : "") +
                    "; its config: best.yaml"}}});
  d.Add(doc::Heading{2, "Trials"});
  doc::Table t;
  t.columns = {{"trial", doc::Fmt::kCount},      {"actor lr", doc::Fmt::kText},
               {"critic lr", doc::Fmt::kText},   {"tau", doc::Fmt::kText},
               {"batch", doc::Fmt::kCount},      {"updates / step", doc::Fmt::kCount},
               {"noise sigma", doc::Fmt::kText}, {"delivery penalty", doc::Fmt::kText}};
  for (int rung : r.rungs) {
    t.columns.push_back({"score @" + std::to_string(rung), doc::Fmt::kCount});
  }
  t.columns.push_back({"stopped", doc::Fmt::kText});
  for (const Trial& x : r.trials) {
    std::vector<doc::Value> row = {doc::Value::Num(x.id),
                                   doc::Value::Text(Short(x.params.actor_lr)),
                                   doc::Value::Text(Short(x.params.critic_lr)),
                                   doc::Value::Text(Short(x.params.tau)),
                                   doc::Value::Num(x.params.batch_size),
                                   doc::Value::Num(x.params.updates_per_step),
                                   doc::Value::Text(Short(x.params.noise_sigma)),
                                   doc::Value::Text(Short(x.params.delivery_penalty))};
    for (size_t k = 0; k < r.rungs.size(); ++k) {
      row.push_back(k < x.scores.size() ? doc::Value::Num(x.scores[k])
                                        : doc::Value::Num(doc::kNone));
    }
    row.push_back(doc::Value::Text(
        x.stopped_at > 0
            ? "evicted at " + std::to_string(x.stopped_at) + " episodes"
            : (x.converged ? "converged after " + std::to_string(x.episodes) : "finished") +
                  (x.id == r.best ? " (best)" : "")));
    t.rows.push_back(std::move(row));
  }
  d.Add(std::move(t));
  doc::Chart c;
  c.title = "Validation score per episode, every trial (a line ends where the trial stopped)";
  c.x = {"episode", doc::Fmt::kCount, doc::kNone, doc::kNone, true};
  c.y = {"score (revenue, discounted below 99% delivery)", doc::Fmt::kCount};
  for (const Trial& x : r.trials) {
    doc::Series s;
    s.name = "trial " + std::to_string(x.id);
    for (size_t e = 0; e < x.curve.size(); ++e) {
      s.x.push_back(static_cast<double>(e + 1));
      s.y.push_back(x.curve[e]);
    }
    s.markers = false;
    s.dashed = x.stopped_at > 0;
    c.series.push_back(std::move(s));
  }
  d.Add(std::move(c));
  d.Add(doc::Paragraph{
      "Next: train the winner with every seed and compare it with the config as given: "
      "rtb train --algo " +
      opt.algo + " --config " + doc::ShownPath(opt.out) + "/best.yaml"});
  RTB_RETURN_IF_ERROR(WriteFileAtomic(opt.out + "/report.json", j.dump(1)));
  RTB_RETURN_IF_ERROR(WriteFileAtomic(opt.out + "/report.md", doc::RenderMarkdown(d)));
  return WriteFileAtomic(opt.out + "/report.html", doc::RenderHtml(d));
}

}  // namespace

Result<std::vector<int>> TuneRungs(int min_episodes, int eta, int max_episodes) {
  if (min_episodes < 1) return Status::InvalidArgument("--min-episodes must be >= 1");
  if (eta < 2) return Status::InvalidArgument("--eta must be >= 2");
  if (max_episodes < min_episodes) {
    return Status::InvalidArgument("--max-episodes must be >= --min-episodes");
  }
  std::vector<int> rungs;
  for (int64_t r = min_episodes; r < max_episodes; r *= eta) rungs.push_back(static_cast<int>(r));
  rungs.push_back(max_episodes);
  return rungs;
}

TrialParams DrawTrialParams(const LearnerConfig& base, int t, uint64_t seed) {
  TrialParams p;
  if (t == 0) {
    p.actor_lr = base.hp.actor_lr;
    p.critic_lr = base.hp.critic_lr;
    p.tau = base.hp.tau;
    p.batch_size = base.hp.batch_size;
    p.updates_per_step = base.hp.updates_per_step;
    p.noise_sigma = base.hp.noise_sigma;
    p.delivery_penalty = base.delivery_penalty;
    return p;
  }
  Rng rng(Rng::Mix(seed, static_cast<uint64_t>(t)));
  p.actor_lr = LogUniform(rng, 1e-4, 3e-3);
  p.critic_lr = LogUniform(rng, 1e-4, 3e-3);
  p.tau = LogUniform(rng, 0.003, 0.03);
  p.batch_size = OneOf(rng, {32, 64, 128});
  p.updates_per_step = OneOf(rng, {4, 8, 16});
  p.noise_sigma = LogUniform(rng, 0.1, 0.5);
  p.delivery_penalty = LogUniform(rng, 5.0, 40.0);
  return p;
}

LearnerConfig WithParams(const LearnerConfig& base, const TrialParams& p) {
  LearnerConfig c = base;
  c.hp.actor_lr = p.actor_lr;
  c.hp.critic_lr = p.critic_lr;
  c.hp.tau = p.tau;
  c.hp.batch_size = p.batch_size;
  c.hp.updates_per_step = p.updates_per_step;
  c.hp.noise_sigma = p.noise_sigma;
  c.delivery_penalty = p.delivery_penalty;
  return c;
}

Result<std::string> RewriteConfigText(const std::string& text, const TrialParams& p) {
  std::string out = text;
  auto set = [&](const std::string& key, const std::string& value) -> Status {
    if (!EditKeyLine(out, key, [&](const std::string&) { return value; })) {
      return Status::InvalidArgument("the config has no '" + key + "' line to set");
    }
    return Status::Ok();
  };
  char buf[64];
  auto g = [&](double v) {
    // The shortest text that reads back as v exactly (drawn values have 3 digits).
    for (int digits = 3; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
    return std::string(buf);
  };
  RTB_RETURN_IF_ERROR(set("actor_lr", g(p.actor_lr)));
  RTB_RETURN_IF_ERROR(set("critic_lr", g(p.critic_lr)));
  RTB_RETURN_IF_ERROR(set("tau", g(p.tau)));
  RTB_RETURN_IF_ERROR(set("batch_size", std::to_string(p.batch_size)));
  RTB_RETURN_IF_ERROR(set("updates_per_step", std::to_string(p.updates_per_step)));
  RTB_RETURN_IF_ERROR(set("noise_sigma", g(p.noise_sigma)));
  RTB_RETURN_IF_ERROR(set("delivery_penalty", g(p.delivery_penalty)));
  return out;
}

Result<TuneResult> RunTuning(const LearnerConfig& cfg, const TuneOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.trials < 2) return Status::InvalidArgument("--trials must be >= 2");
  RTB_ASSIGN_OR_RETURN(
      const std::vector<int> rungs,
      TuneRungs(opt.min_episodes, opt.eta, opt.max_episodes > 0 ? opt.max_episodes : cfg.episodes));
  if (opt.algo == "manual") return Status::InvalidArgument("--algo manual has nothing to tune");
  if (!cfg.delivery_penalty_by_agent.empty()) {
    return Status::InvalidArgument(
        "rtb tune searches delivery_penalty, which delivery_penalty_by_agent overrides: remove "
        "delivery_penalty_by_agent from the config to tune");
  }
  RTB_ASSIGN_OR_RETURN(const AlgoSpec spec,
                       MakeAlgoSpec(opt.algo, cfg.sim.market.agents, cfg.learning_agents, cfg.hp));
  if (!spec.trains()) return Status::InvalidArgument("--algo " + opt.algo + " does not train");
  std::string base_text;
  {
    std::ifstream in(opt.config_path);
    if (!in) return Status::IoError("cannot read " + opt.config_path);
    std::stringstream ss;
    ss << in.rdbuf();
    base_text = ss.str();
  }
  // Every trial's config must be writable as best.yaml: check before hours of training.
  RTB_RETURN_IF_ERROR(RewriteConfigText(base_text, DrawTrialParams(cfg, 0, opt.seed)).status());
  torch::set_num_threads(1);

  RTB_ASSIGN_OR_RETURN(auto scenario, sim::BuildScenario(cfg.sim, "", "", opt.progress));
  sim::AddTrainingDays(*scenario, cfg.training_days - 1);
  sim::AddValidationDays(*scenario, cfg.validation_days);
  const sim::Scenario& sc = *scenario;

  TuneResult res;
  res.rungs = rungs;
  std::vector<LearnerConfig> cfgs;
  for (int t = 0; t < opt.trials; ++t) {
    Trial x;
    x.id = t;
    x.params = DrawTrialParams(cfg, t, opt.seed);
    res.trials.push_back(x);
    cfgs.push_back(WithParams(cfg, x.params));
  }
  int64_t planned = 0;
  {
    int n = opt.trials, prev = 0;
    for (int r : rungs) {
      planned += static_cast<int64_t>(n) * (r - prev);
      prev = r;
      n = std::max(1, (n + opt.eta - 1) / opt.eta);
    }
  }
  Progress progress("tune", planned, opt.progress);
  std::atomic<int64_t> done_episodes{0};
  std::vector<int> alive(static_cast<size_t>(opt.trials));
  for (int t = 0; t < opt.trials; ++t) alive[static_cast<size_t>(t)] = t;

  const ScenarioDays days = PrepareDays(sc);
  for (size_t k = 0; k < rungs.size(); ++k) {
    // Every surviving trial trains on to this rung, `jobs` at a time.
    std::vector<Status> status(alive.size(), Status::Ok());
    RunParallel(
        alive.size(), opt.jobs,
        [&](size_t q) {
          Trial& x = res.trials[static_cast<size_t>(alive[q])];
          if (!x.converged) {
            auto out =
                TrainOne(cfgs[static_cast<size_t>(x.id)], spec, sc, days, cfg.base_seed, rungs[k],
                         opt.out + "/trial" + std::to_string(x.id), k > 0, &done_episodes);
            if (!out.ok()) {
              status[q] = out.status();
            } else {
              x.episodes = out->episodes;
              x.converged = out->converged;
              x.scores.push_back(out->best_pick);
            }
          } else {
            x.scores.push_back(x.scores.back());  // stopped by the convergence rule: as it was
          }
        },
        progress, done_episodes);
    for (const Status& s : status) RTB_RETURN_IF_ERROR(s);
    // Rank by this rung's score (ties: the lower trial id, so the config as given wins a tie).
    std::stable_sort(alive.begin(), alive.end(), [&](int a, int b) {
      return res.trials[static_cast<size_t>(a)].scores.back() >
             res.trials[static_cast<size_t>(b)].scores.back();
    });
    if (opt.progress) {
      std::string line;
      for (int a : alive) {
        line +=
            " " + std::to_string(a) + ":" + Short(res.trials[static_cast<size_t>(a)].scores.back());
      }
      log::Get("tune").info("rung {} ({} episodes): trial:score{}", k, rungs[k], line);
    }
    if (k + 1 == rungs.size()) break;
    const size_t keep = std::max<size_t>(1, (alive.size() + opt.eta - 1) / opt.eta);
    for (size_t q = keep; q < alive.size(); ++q) {
      res.trials[static_cast<size_t>(alive[q])].stopped_at = rungs[k];
    }
    alive.resize(keep);
  }
  progress.Done();
  res.best = alive.front();
  for (Trial& x : res.trials) {
    x.curve = ReadCurve(opt.out + "/trial" + std::to_string(x.id) + "/episodes.csv");
    res.episodes += static_cast<int64_t>(x.curve.size());
  }
  res.full_runs =
      static_cast<double>(res.episodes) /
      static_cast<double>(std::max<int64_t>(1, static_cast<int64_t>(cfg.episodes) * cfg.seeds));
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RTB_ASSIGN_OR_RETURN(
      const std::string best_text,
      RewriteConfigText(base_text, res.trials[static_cast<size_t>(res.best)].params));
  const std::string header = "# rtb tune's best configuration (trial " + std::to_string(res.best) +
                             " of " + std::to_string(opt.trials) + ", " + opt.algo +
                             "): the config below with its parameters; report.md says how.\n";
  std::string rebased = best_text;
  // best.yaml lives in the output folder: its simulator_config must still find the world.
  const fs::path from = fs::absolute(fs::path(opt.config_path)).parent_path();
  const fs::path out_dir = fs::absolute(fs::path(opt.out));
  EditKeyLine(rebased, "simulator_config", [&](const std::string& v) {
    const fs::path target = fs::path(v).is_absolute() ? fs::path(v) : (from / v).lexically_normal();
    return target.lexically_relative(out_dir).string();
  });
  RTB_RETURN_IF_ERROR(WriteFileAtomic(opt.out + "/best.yaml", header + rebased));
  RTB_RETURN_IF_ERROR(WriteTuneReport(res, opt, cfg));
  return res;
}

}  // namespace rtb::learn
