#include "rtb/core/goal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "rtb/core/metrics.h"
#include "rtb/core/text.h"

namespace rtb {

std::optional<GoalKind> GoalKindNamed(std::string_view name) {
  if (name == "revenue") return GoalKind::kRevenue;
  if (name == "conversions") return GoalKind::kConversions;
  if (name == "value") return GoalKind::kValue;
  return std::nullopt;
}

const char* GoalKindName(GoalKind kind) {
  switch (kind) {
    case GoalKind::kRevenue:
      return "revenue";
    case GoalKind::kConversions:
      return "conversions";
    case GoalKind::kValue:
      return "value";
  }
  return "?";
}

Result<Goal> MakeGoal(std::string_view kind, double target_cpa, double target_roas) {
  const auto k = GoalKindNamed(kind);
  if (!k) {
    return Status::InvalidArgument("goal: must be revenue, conversions or value, not \"" +
                                   std::string(kind) + "\"");
  }
  Goal g;
  g.kind = *k;
  if (!(target_cpa >= 0 && target_cpa < 1e9)) {
    return Status::InvalidArgument("target_cpa: (currency units) must be in [0, 1e9)");
  }
  if (!(target_roas >= 0 && target_roas < 1e6)) {
    return Status::InvalidArgument("target_roas: must be in [0, 1e6)");
  }
  if (*k != GoalKind::kConversions && target_cpa > 0) {
    return Status::InvalidArgument("target_cpa: is the target of goal: conversions, not of goal: " +
                                   std::string(kind));
  }
  if (*k != GoalKind::kValue && target_roas > 0) {
    return Status::InvalidArgument("target_roas: is the target of goal: value, not of goal: " +
                                   std::string(kind));
  }
  if (*k == GoalKind::kConversions) {
    g.target_cpa = Micros::FromUnits(target_cpa);
    if (g.target_cpa.value() <= 0) {
      return Status::InvalidArgument(
          "target_cpa: goal: conversions needs the most a conversion may cost (currency units, "
          "> 0)");
    }
  }
  if (*k == GoalKind::kValue) {
    if (target_roas <= 0) {
      return Status::InvalidArgument(
          "target_roas: goal: value needs the least value per unit spent (> 0)");
    }
    g.target_roas = target_roas;
  }
  return g;
}

GoalScore ScoreGoal(const Goal& goal, double conversions, double cost, double value) {
  GoalScore s;
  switch (goal.kind) {
    case GoalKind::kRevenue:
      s.realised = kNaN;
      s.score = value;
      return s;
    case GoalKind::kConversions: {
      s.realised = SafeDiv(cost, conversions);
      if (conversions <= 0) {
        s.score = 0;
        s.met = cost <= 0;
        return s;
      }
      const double target = goal.target_cpa.units();
      s.score = conversions * std::min(1.0, std::pow(target / s.realised, 2));
      s.met = s.realised <= target * (1 + 1e-12);
      return s;
    }
    case GoalKind::kValue: {
      s.realised = SafeDiv(value, cost);
      if (cost <= 0) {
        s.score = value;
        return s;
      }
      s.score = value * std::min(1.0, std::pow(s.realised / goal.target_roas, 2));
      s.met = s.realised >= goal.target_roas * (1 - 1e-12);
      return s;
    }
  }
  return s;
}

double StepWorth(const Goal& goal, double conversions, double value) {
  return goal.kind == GoalKind::kConversions ? goal.target_cpa.units() * conversions : value;
}

double DayWorth(const Goal& goal, double conversions, double cost, double value) {
  const double score = ScoreGoal(goal, conversions, cost, value).score;
  return goal.kind == GoalKind::kConversions ? goal.target_cpa.units() * score : score;
}

GoalSummary SummarizeGoals(const std::vector<Goal>& goals,
                           const std::vector<Outcome>& per_advertiser) {
  GoalSummary s;
  double ratios = 0, roas_ratios = 0;
  int converted = 0, spent = 0;
  for (size_t k = 0; k < goals.size() && k < per_advertiser.size(); ++k) {
    const Outcome& o = per_advertiser[k];
    s.value += DayWorth(goals[k], o.conversions, o.cost.units(), o.revenue.units());
    if (!goals[k].HasTarget()) continue;
    const GoalScore g = ScoreGoal(goals[k], o.conversions, o.cost.units(), o.revenue.units());
    (goals[k].kind == GoalKind::kConversions ? s.score : s.roas_score) += g.score;
    ++s.targets;
    s.missed += g.met ? 0 : 1;
    if (goals[k].kind == GoalKind::kConversions && o.conversions > 0) {
      ratios += g.realised / goals[k].target_cpa.units();
      ++converted;
    }
    if (goals[k].kind == GoalKind::kValue) {
      ++s.roas_targets;
      if (o.cost.units() > 0) {
        roas_ratios += g.realised / goals[k].target_roas;
        ++spent;
      }
    }
  }
  if (converted > 0) s.cpa_ratio = ratios / converted;
  if (spent > 0) s.roas_ratio = roas_ratios / spent;
  return s;
}

std::string DescribeGoal(const Goal& goal) {
  char buf[64];
  switch (goal.kind) {
    case GoalKind::kRevenue:
      return "revenue";
    case GoalKind::kConversions:
      return "CPA <= " + MicrosDecimal(goal.target_cpa.value(), MicrosFraction::kTrimmed);
    case GoalKind::kValue:
      std::snprintf(buf, sizeof buf, "ROAS >= %.2f", goal.target_roas);
      return buf;
  }
  return "?";
}

}  // namespace rtb
