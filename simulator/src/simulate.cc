#include "rtb/simulator/simulate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "rtb/core/ab.h"
#include "rtb/core/progress.h"
#include "rtb/core/report_doc.h"
#include "rtb/simulator/engine.h"
#include "rtb/simulator/fulllog.h"
#include "rtb/simulator/market_builder.h"

namespace rtb::sim {
namespace {

// A policy spec as a report shows it: "table:/abs/dir/t.json" -> "table:dir/t.json" (the path
// relative to the working directory, or its last two components); each of a per-step list.
std::string ShownPolicy(const std::string& spec) {
  if (const size_t comma = spec.find(','); comma != std::string::npos) {
    return ShownPolicy(spec.substr(0, comma)) + "," + ShownPolicy(spec.substr(comma + 1));
  }
  const size_t slash = spec.find('/');
  if (slash == std::string::npos) return spec;
  const size_t colon = spec.rfind(':', slash);
  const size_t at = colon == std::string::npos ? 0 : colon + 1;
  return spec.substr(0, at) + doc::ShownPath(spec.substr(at));
}

std::string Pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

// `goals`: each advertiser's (Scenario::goals), scored on the run (RunResult::goals).
RunResult RunOf(const AuctionEngine& e, const std::vector<Micros>& budgets_for_report,
                const std::vector<Goal>& goals) {
  RunResult run;
  run.rows = e.AgentOutcomes();
  run.goals = SummarizeGoals(goals, e.advertiser_outcomes());
  if (!budgets_for_report.empty()) {
    // The engine ran without a budget; report against the budgets of the constrained day.
    std::vector<Micros> b(run.rows.size(), Micros(0));
    for (size_t k = 0; k < budgets_for_report.size(); ++k) {
      b[e.market().agent_of[k]] += budgets_for_report[k];
    }
    for (size_t i = 0; i < run.rows.size(); ++i) run.rows[i].budget = b[i];
  } else {
    run.budget_burn = e.BudgetBurn();
  }
  for (const auto& o : run.rows) run.total += o;
  return run;
}

}  // namespace

Result<std::unique_ptr<Scenario>> BuildScenario(const SimulatorConfig& cfg,
                                                const std::string& train_log,
                                                const std::string& test_log, bool progress) {
  auto sc = std::make_unique<Scenario>();
  sc->cfg = cfg;
  Progress p("scenario", 4, progress);
  if (train_log.empty() != test_log.empty()) {
    return Status::InvalidArgument("give both --train-log and --test-log, or neither");
  }
  if (!train_log.empty()) {
    RTB_ASSIGN_OR_RETURN(sc->train, ReadFullLog(train_log));
    p.Update(1, "read " + train_log);
    RTB_ASSIGN_OR_RETURN(sc->test, ReadFullLog(test_log));
    if (sc->train.num_advertisers != sc->test.num_advertisers ||
        sc->train.steps != sc->test.steps || sc->train.step_ms != sc->test.step_ms) {
      return Status::InvalidArgument(
          test_log + ": header (steps, step_ms, advertisers) differs from " + train_log);
    }
    if (cfg.market.agents > static_cast<int>(sc->train.num_advertisers)) {
      return Status::InvalidArgument("market.agents exceeds the advertisers in " + train_log);
    }
  } else {
    const World world = GenerateWorld(cfg);
    for (const Advertiser& a : world.advertisers) sc->goals.push_back(a.goal);
    sc->generated = true;
    sc->train = GenerateDay(world, cfg.day, Rng::Mix(cfg.seed, 1));
    p.Update(1, "generated the training day");
    sc->test = GenerateDay(world, cfg.day, Rng::Mix(cfg.seed, 2));
  }
  p.Update(2, "clustering");
  RTB_ASSIGN_OR_RETURN(sc->market, BuildMarket(sc->train, cfg.market, cfg.auction));
  p.Update(3, "budgets");
  sc->train_budgets =
      ComputeBudgets(sc->train, sc->market, cfg.auction, cfg.market.budget_fraction);
  sc->test_budgets = ComputeBudgets(sc->test, sc->market, cfg.auction, cfg.market.budget_fraction);
  p.Done();
  return sc;
}

namespace {
// `count` more generated days of sc's world (seeds Mix(cfg.seed, first_seed + k)) and budgets.
void AddDays(Scenario& sc, int count, uint64_t first_seed, std::vector<Day>* days,
             std::vector<std::vector<Micros>>* budgets) {
  if (!sc.generated || count <= 0) return;
  const World world = GenerateWorld(sc.cfg);
  for (int k = 0; k < count; ++k) {
    days->push_back(GenerateDay(world, sc.cfg.day, Rng::Mix(sc.cfg.seed, first_seed + k)));
    budgets->push_back(
        ComputeBudgets(days->back(), sc.market, sc.cfg.auction, sc.cfg.market.budget_fraction));
  }
}
}  // namespace

void AddTrainingDays(Scenario& sc, int count) {
  AddDays(sc, count, 100, &sc.extra_train, &sc.extra_train_budgets);
}

void AddValidationDays(Scenario& sc, int count) {
  AddDays(sc, count, 200, &sc.validation, &sc.validation_budgets);
}

std::string ConsumerUserId(uint32_t consumer) {
  std::string id = "c";
  id += std::to_string(consumer);
  return id;
}

namespace {

// The day's requests whose consumer is in the arm (`in[consumer]`), in the same order.
Day ArmDay(const Day& d, const std::vector<char>& in) {
  Day o;
  o.steps = d.steps;
  o.step_ms = d.step_ms;
  o.num_advertisers = d.num_advertisers;
  o.num_consumers = d.num_consumers;
  o.begin.push_back(0);
  for (size_t r = 0; r < d.requests(); ++r) {
    if (!in[d.consumer[r]]) continue;
    o.time_ms.push_back(d.time_ms[r]);
    o.consumer.push_back(d.consumer[r]);
    o.floor_cpm.push_back(d.floor_cpm[r]);
    for (uint32_t c = d.begin[r]; c < d.begin[r + 1]; ++c) {
      o.adv.push_back(d.adv[c]);
      o.bid.push_back(d.bid[c]);
      o.pctr.push_back(d.pctr[c]);
      o.pcvr.push_back(d.pcvr[c]);
      o.ppb.push_back(d.ppb[c]);
    }
    o.begin.push_back(static_cast<uint32_t>(o.adv.size()));
  }
  return o;
}

}  // namespace

void RestrictToArm(Scenario& sc, double learned_share, const std::string& salt, Arm arm) {
  uint32_t consumers = 0;
  for (const Day* d : {&sc.train, &sc.test}) consumers = std::max(consumers, d->num_consumers);
  std::vector<char> in(consumers, 0);
  for (uint32_t c = 0; c < consumers; ++c) {
    in[c] = ArmOf(ConsumerUserId(c), salt, learned_share) == arm;
  }
  auto arm_budgets = [&](std::vector<Micros>& b) {
    for (Micros& m : b) m = ArmBudget(m, arm, learned_share);
  };
  sc.train = ArmDay(sc.train, in);
  sc.test = ArmDay(sc.test, in);
  arm_budgets(sc.train_budgets);
  arm_budgets(sc.test_budgets);
  for (auto& d : sc.extra_train) d = ArmDay(d, in);
  for (auto& b : sc.extra_train_budgets) arm_budgets(b);
  for (auto& d : sc.validation) d = ArmDay(d, in);
  for (auto& b : sc.validation_budgets) arm_budgets(b);
}

Result<ActionTable> ResolvePolicy(const std::string& spec, int agents, int clusters) {
  if (spec == "manual") {
    ActionTable t(agents, clusters);
    t.algo = "manual";
    return t;
  }
  if (spec.rfind("const:", 0) == 0) {
    const std::string v = spec.substr(6);
    double a = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), a);
    if (ec != std::errc() || p != v.data() + v.size() || !(a >= -1 && a <= 1)) {
      return Status::InvalidArgument("policy '" + spec + "': const:<a> needs a in [-1, 1]");
    }
    ActionTable t(agents, clusters);
    for (int i = 0; i < agents; ++i) {
      for (int j = 0; j < clusters; ++j) t.set(i, j, a);
    }
    t.algo = spec;
    return t;
  }
  RTB_ASSIGN_OR_RETURN(ActionTable t, LoadActionTable(spec));
  if (t.agents() != agents || t.clusters() != clusters) {
    return Status::InvalidArgument(spec + ": action table is " + std::to_string(t.agents()) +
                                   " x " + std::to_string(t.clusters()) + " but the market has " +
                                   std::to_string(agents) + " agents x " +
                                   std::to_string(clusters) + " consumer clusters");
  }
  return t;
}

Result<std::vector<ActionTable>> ResolveStepPolicies(const std::string& spec, int agents,
                                                     int clusters, int steps) {
  std::vector<ActionTable> tables;
  for (size_t from = 0;;) {
    const size_t comma = spec.find(',', from);
    const std::string one = spec.substr(from, comma == std::string::npos ? comma : comma - from);
    if (one.empty()) {
      return Status::InvalidArgument(
          "policy '" + spec + "': an empty entry (one policy per step, separated by commas)");
    }
    RTB_ASSIGN_OR_RETURN(ActionTable t, ResolvePolicy(one, agents, clusters));
    tables.push_back(std::move(t));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (static_cast<int>(tables.size()) > steps) {
    return Status::InvalidArgument("policy '" + spec + "': " + std::to_string(tables.size()) +
                                   " tables, one per step, but the day has " +
                                   std::to_string(steps) + " steps");
  }
  return tables;
}

void PlaySteps(AuctionEngine& engine, const std::vector<ActionTable>& tables) {
  for (size_t t = 0; !engine.done() && !tables.empty(); ++t) {
    engine.RunStep(tables[std::min(t, tables.size() - 1)]);
  }
}

void DescribeAgents(const Market& m, Report* r) {
  double rev = 0, pres = 0, advs = 0;
  for (int i = 0; i < m.agents; ++i) {
    rev += m.agent_history[i].revenue.units();
    pres += static_cast<double>(m.agent_presences[i]);
    advs += m.agent_advertisers[i];
  }
  r->row_label = "agent";
  r->row_names.clear();
  r->row_info.clear();
  for (int i = 0; i < m.agents; ++i) {
    r->row_names.push_back("agent " + std::to_string(i + 1));
    r->row_info.push_back(
        {"history", std::to_string(m.agent_advertisers[i]) + " advertisers (" +
                        Pct(m.agent_advertisers[i] / advs) + "), " +
                        Pct(static_cast<double>(m.agent_presences[i]) / pres) + " of presences, " +
                        Pct(m.agent_history[i].revenue.units() / rev) +
                        " of revenue on the training day (manual bids, unlimited budget)"});
  }
}

RunResult EvaluateTable(const Scenario& sc, const Day& day, const std::vector<Micros>& budgets,
                        const ActionTable& a, uint64_t seed) {
  AuctionEngine e(day, sc.market, sc.cfg.auction, sc.cfg.market.alpha_range, budgets,
                  sc.cfg.burn_buckets);
  e.Reset(seed);
  e.RunToEnd(a);
  return RunOf(e, {}, sc.goals);
}

RunResult EvaluateTables(const Scenario& sc, const Day& day, const std::vector<Micros>& budgets,
                         const std::vector<ActionTable>& tables, uint64_t seed, int bidders,
                         AuctionEngine::SplitRule split) {
  AuctionEngine e(day, sc.market, sc.cfg.auction, sc.cfg.market.alpha_range, budgets,
                  sc.cfg.burn_buckets);
  e.SplitBudgets(bidders, split, seed);
  e.Reset(seed);
  PlaySteps(e, tables);
  return RunOf(e, {}, sc.goals);
}

Result<Report> Simulate(const Scenario& sc, const SimulateOptions& opt) {
  if (opt.day != "train" && opt.day != "test") {
    return Status::InvalidArgument("--day must be train or test");
  }
  const Day& day = opt.day == "train" ? sc.train : sc.test;
  const auto& budgets = opt.day == "train" ? sc.train_budgets : sc.test_budgets;
  const int N = sc.market.agents, L = sc.market.clusters;
  std::vector<std::pair<std::string, std::vector<ActionTable>>> policies;
  for (const std::string& name : [&] {
         std::vector<std::string> all = {opt.policy};
         all.insert(all.end(), opt.more_policies.begin(), opt.more_policies.end());
         return all;
       }()) {
    if (name == "manual") continue;
    RTB_ASSIGN_OR_RETURN(std::vector<ActionTable> t, ResolveStepPolicies(name, N, L, day.steps));
    policies.emplace_back(name, std::move(t));
  }
  // Policies other than manual bids, as the report names them (a file by its path relative
  // to the working directory, never a machine's absolute path).
  std::string names;
  for (const auto& [name, table] : policies) {
    if (name == "manual") continue;
    names += (names.empty() ? "" : ", ") + ShownPolicy(name);
  }

  Progress p(opt.kind, static_cast<int>(policies.size()) + 2, opt.progress);
  Report r;
  r.kind = opt.kind;
  r.title =
      (opt.kind == "replay" ? "Full-information replay of the " : "Simulated ") + opt.day +
      " day: " +
      (names.empty() ? "manual bids, with budgets and without" : names + " against manual bids");
  r.meta = {
      {"config", opt.config_path.empty() ? "(built-in defaults)" : doc::ShownPath(opt.config_path)},
      {"seed", std::to_string(sc.cfg.seed)},
      {"day", opt.day},
      {"policy", names.empty() ? "manual" : names},
      {"requests", doc::Grouped(static_cast<double>(day.requests()), 0)},
      {"candidates", doc::Grouped(static_cast<double>(day.candidates()), 0)},
      {"auction", DescribeAuction(sc.cfg.auction)},
      {"steps", std::to_string(day.steps) + " x " + std::to_string(day.step_ms / 60000) + " min"},
      {"agents x consumer clusters", std::to_string(N) + " x " + std::to_string(L)},
      {"budget", "fraction " + std::to_string(sc.cfg.market.budget_fraction).substr(0, 6) +
                     " of each advertiser's cost under manual bids, unlimited budget"},
      {"outcomes", sc.cfg.auction.outcomes}};
  if (opt.bidders > 1) {
    r.meta.push_back(
        {"bidders", std::to_string(opt.bidders) + ", requests spread evenly, budgets split " +
                        (opt.split == AuctionEngine::SplitRule::kEven    ? "evenly"
                         : opt.split == AuctionEngine::SplitRule::kWhole ? "in whole bids"
                                                                         : "in whole mean bids") +
                        " by an ideal coordinator (a ceiling for budget leases)"});
  }
  r.meta.insert(r.meta.end(), opt.extra_meta.begin(), opt.extra_meta.end());
  DescribeAgents(sc.market, &r);
  r.baseline = "manual";
  r.primary = opt.policy == "manual" ? "manual" : ShownPolicy(opt.policy);

  AuctionEngine limited(day, sc.market, sc.cfg.auction, sc.cfg.market.alpha_range, budgets,
                        sc.cfg.burn_buckets);
  limited.SplitBudgets(opt.bidders, opt.split, sc.cfg.seed);
  r.burn_bucket_minutes = limited.burn_bucket_minutes();
  int done = 0;
  for (const auto& [name, tables] : policies) {
    if (name == "manual") continue;  // the baseline below
    limited.Reset(sc.cfg.seed);
    PlaySteps(limited, tables);
    r.methods.push_back(
        {ShownPolicy(name), "the policy under test, with budgets", {RunOf(limited, {}, sc.goals)}});
    p.Update(++done);
  }
  limited.Reset(sc.cfg.seed);
  limited.RunToEnd(ActionTable(N, L));
  r.methods.push_back(
      {"manual", "manual bids (a = 0), with budgets", {RunOf(limited, {}, sc.goals)}});
  p.Update(++done);
  AuctionEngine unlimited(day, sc.market, sc.cfg.auction, sc.cfg.market.alpha_range, {},
                          sc.cfg.burn_buckets);
  unlimited.Reset(sc.cfg.seed);
  unlimited.RunToEnd(ActionTable(N, L));
  r.methods.push_back({"manual_unlimited",
                       "manual bids with unlimited budget (the reference the budgets come from; "
                       "COST is against the same budgets)",
                       {RunOf(unlimited, budgets, sc.goals)}});
  p.Done();
  r.notes = {
      "Protocol: full-information simulation with expected outcomes (dcmab.md section 3): "
      "candidates ranked by eCPM = bid x pCTR, top slots win, " +
          (sc.cfg.auction.first_price()
               ? std::string("each winner paying its own bid (expected cost pCTR x bid)")
               : std::string("generalized second price (expected cost pCTR_next x bid_next)")) +
          ", revenue pCTR x pCVR x ppb.",
      "Bids: bid x (1 + clip(a_ij x bratio, -range, range)), bratio = pCVR / the advertiser's "
      "average pCVR on the training day.",
      "An advertiser bids only while its remaining budget covers its own eCPM (the largest "
      "possible charge); after that it leaves the day, so spend never exceeds the budget.",
      "Agents and consumer clusters come from the training day under manual bids with unlimited "
      "budget (equal presences / equal request shares by revenue rank).",
      "cost per click is the paper's CPA; cost per conversion is the industry's CPA."};
  return r;
}

}  // namespace rtb::sim
