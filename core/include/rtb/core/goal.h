// What an advertiser asks of its campaign, and how a day's outcome is scored against it: the
// advertiser's goal (config: goal, target_cpa, target_roas) and the AuctionNet-style score
// (NeurIPS 2024 benchmark: conversions x min(1, (target CPA / realised CPA)^2)). Pure functions,
// shared by the bidder's config, the reports and the simulator.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rtb/core/metrics.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb {

enum class GoalKind {
  kRevenue,      // the most conversion value under the budget (the paper's objective)
  kConversions,  // as many conversions as the budget buys at no more than target_cpa each
  kValue,        // the most conversion value at no less than target_roas per unit spent
};
// "revenue" | "conversions" | "value"; nullopt for anything else.
std::optional<GoalKind> GoalKindNamed(std::string_view name);
const char* GoalKindName(GoalKind kind);

struct Goal {
  GoalKind kind = GoalKind::kRevenue;
  Micros target_cpa;       // kConversions: the most a conversion may cost, on average over a day
  double target_roas = 0;  // kValue: the least conversion value per unit of spend over a day

  bool HasTarget() const { return kind != GoalKind::kRevenue; }
};

// A goal as written (the config's three keys) checked: a target the goal does not use, or a
// goal without its target, is an error naming the key.
Result<Goal> MakeGoal(std::string_view kind, double target_cpa, double target_roas);

// One day's outcome against the goal.
struct GoalScore {
  // kConversions: cost / conversions (NaN with no conversion); kValue: value / cost (NaN with
  // no spend); kRevenue: NaN (no target).
  double realised = 0;
  // kRevenue: the value. kConversions: conversions x min(1, (target / realised)^2), 0 with no
  // conversion. kValue: value x min(1, (realised / target)^2).
  double score = 0;
  // The target held: realised CPA at most the target (a day with spend and no conversion
  // missed it; a day without spend held it), ROAS at least the target; always for kRevenue.
  bool met = true;
};
// `value` and `cost` in currency units.
GoalScore ScoreGoal(const Goal& goal, double conversions, double cost, double value);

// What an outcome is worth to the advertiser in currency, before and after its day is scored:
// StepWorth is what the goal pays as it goes (conversions: target CPA x conversions; value and
// revenue: the value), DayWorth what the whole day is worth once scored (conversions: target
// CPA x score; value: the ROAS score; revenue: the value). DayWorth - StepWorth of a day's
// totals is the shortfall of a day that missed its target (0 when it held).
double StepWorth(const Goal& goal, double conversions, double value);
double DayWorth(const Goal& goal, double conversions, double cost, double value);

// The advertisers with a target (goals[k].HasTarget()), each scored on its day's outcome
// (per_advertiser[k]: conversions, cost and revenue as its value): the target-CPA advertisers'
// scores summed (conversions), the target-ROAS ones' (currency), and how many missed their
// target. `value`: the day's DayWorth over every advertiser (what the environment's goal
// rewards sum to, and what training picks models by).
struct GoalSummary {
  double score = 0;       // target-CPA advertisers: AuctionNet's score, in conversions
  double roas_score = 0;  // target-ROAS advertisers: value x min(1, (ROAS / target)^2)
  int targets = 0, missed = 0;
  double value = 0;
  // The mean over the target-CPA advertisers that converted of realised CPA / target (NaN: none).
  double cpa_ratio = kNaN;
  // Of `targets`, those with a target ROAS, and the mean over those that spent of realised
  // ROAS / target (NaN: none).
  int roas_targets = 0;
  double roas_ratio = kNaN;
};
GoalSummary SummarizeGoals(const std::vector<Goal>& goals,
                           const std::vector<Outcome>& per_advertiser);

// "CPA <= 12.5" (the target exactly) | "ROAS >= 3.00" | "revenue".
std::string DescribeGoal(const Goal& goal);

}  // namespace rtb
