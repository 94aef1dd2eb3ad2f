// `rtb simulate`: build the world (or read logged days), cluster on the training day,
// evaluate a policy and the manual baseline on the chosen day, and produce the report.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "rtb/core/ab.h"
#include "rtb/core/action_table.h"
#include "rtb/core/report.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/engine.h"
#include "rtb/simulator/market.h"
#include "rtb/simulator/world.h"

namespace rtb::sim {

// Everything an evaluation needs: the two days and the market built on the training day.
struct Scenario {
  SimulatorConfig cfg;
  Day train, test;
  Market market;
  // Each advertiser's goal (the world's; revenue for every advertiser of logged days): the
  // reports score each run against them.
  std::vector<Goal> goals;
  std::vector<Micros> train_budgets, test_budgets;
  // More training days (other draws of the same world), each with its budgets; filled by
  // AddTrainingDays. The market stays the one built on `train`.
  std::vector<Day> extra_train;
  std::vector<std::vector<Micros>> extra_train_budgets;
  // Held-out days for model selection: other draws of the same world, never trained on and
  // never the test day, each with its budgets; filled by AddValidationDays.
  std::vector<Day> validation;
  std::vector<std::vector<Micros>> validation_budgets;
  bool generated = false;  // days come from the generator (not from logs)
};

// Adds `count` more generated training days (seeds Mix(cfg.seed, 100 + k)).
// REQUIRES: sc.generated.
void AddTrainingDays(Scenario& sc, int count);

// Adds `count` held-out validation days (seeds Mix(cfg.seed, 200 + k)).
// REQUIRES: sc.generated.
void AddValidationDays(Scenario& sc, int count);

// The user id of consumer c on the wire (OpenRTB user.id, what the A/B test hashes): "c<c>".
std::string ConsumerUserId(uint32_t consumer);

// The world one arm of a live A/B test serves (core/ab.h): every day keeps only the requests of
// the arm's consumers (ArmOf(ConsumerUserId(c), salt, share) == arm), and every advertiser's
// budget becomes the arm's part (ArmBudget). Training on the learned arm teaches a policy the
// arm's own traffic, including each small advertiser's luck in how its users were dealt.
// REQUIRES: 0 < learned_share <= 1 (< 1 for the manual arm).
void RestrictToArm(Scenario& sc, double learned_share, const std::string& salt,
                   Arm arm = Arm::kLearned);

// Generates the world and both days from cfg.seed, or reads them from logs when the paths
// are not empty; then clusters on the training day and computes budgets.
Result<std::unique_ptr<Scenario>> BuildScenario(const SimulatorConfig& cfg,
                                                const std::string& train_log = "",
                                                const std::string& test_log = "",
                                                bool progress = true);

// A policy for the simulator: "manual", "const:<a>" (every a_ij = a), or an action-table file.
Result<ActionTable> ResolvePolicy(const std::string& spec, int agents, int clusters);

// A policy per step: policies as above, separated by commas, "t0.json,t1.json,t2.json" (the
// per-step tables `rtb train` writes); the last one plays the rest of the day. More than
// `steps` is an error.
Result<std::vector<ActionTable>> ResolveStepPolicies(const std::string& spec, int agents,
                                                     int clusters, int steps);

// Plays the day from a reset engine to its end, table t at step t (the last for the rest).
void PlaySteps(AuctionEngine& engine, const std::vector<ActionTable>& tables);

struct SimulateOptions {
  std::string policy = "manual";
  std::vector<std::string> more_policies;  // further policies in the same report (replay)
  std::string kind = "simulate";           // the report's kind: simulate | replay
  std::vector<std::pair<std::string, std::string>> extra_meta;  // appended to the header
  std::string day = "test";                                     // "train" or "test"
  std::string config_path;                                      // for the report's header
  bool progress = true;
  // Budgets served by this many bidders, split by an ideal coordinator (the policies' runs
  // with budgets; AuctionEngine::SplitBudgets): a ceiling for budget leases. 1: one bidder.
  int bidders = 1;
  AuctionEngine::SplitRule split = AuctionEngine::SplitRule::kEven;
};

Result<Report> Simulate(const Scenario& sc, const SimulateOptions& opt);

// Shared with the learner's and replay's reports: the agent rows (names and info lines).
void DescribeAgents(const Market& m, Report* r);

// Runs one day under one fixed table and returns the run (per agent outcomes, burn).
RunResult EvaluateTable(const Scenario& sc, const Day& day, const std::vector<Micros>& budgets,
                        const ActionTable& a, uint64_t seed = 0);
// The same with one table per step (tables.size() == day.steps; the last repeats if short),
// and the budgets served by `bidders` (AuctionEngine::SplitBudgets).
RunResult EvaluateTables(const Scenario& sc, const Day& day, const std::vector<Micros>& budgets,
                         const std::vector<ActionTable>& tables, uint64_t seed = 0, int bidders = 1,
                         AuctionEngine::SplitRule split = AuctionEngine::SplitRule::kEven);

}  // namespace rtb::sim
