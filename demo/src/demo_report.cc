// The demo report's renderings. report.json is written with nlohmann::json (keys in order, two
// spaces); Markdown and HTML are one document (core's report_doc.h renders it, as every other
// report): the answer first (learned against manual per day, with the ratio and the delivery),
// then the budget burn per agent over the day, then the action tables served as heat maps,
// then the loop's bookkeeping.
#include "demo_report.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "rtb/core/report.h"

namespace rtb::demo {

using nlohmann::json;

namespace {

constexpr Arm kBoth[] = {Arm::kLearned, Arm::kManual};
int Index(Arm arm) { return static_cast<int>(arm); }

// The ways of serving the budgets that split_in_simulator plays, in the order shown.
constexpr const char* kSplitRuns[] = {"one_bidder", "even", "whole_mean", "whole"};

const SplitRun* FindRun(const SplitInSimulator& sp, const std::string& name) {
  for (const auto& [n, run] : sp.runs) {
    if (n == name) return &run;
  }
  return nullptr;
}

// ---- report.json ------------------------------------------------------------------------

// A number that may not exist: null.
json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json OutcomeJson(const Outcome& o) {
  json j;
  j["revenue"] = o.revenue.units();
  j["cost"] = o.cost.units();
  j["budget"] = o.budget.units();
  j["clicks"] = o.clicks;
  j["conversions"] = o.conversions;
  j["impressions"] = o.impressions;
  j["roi"] = Num(Roi(o));
  j["cost_per_click"] = Num(CostPerClick(o));
  j["cost_over_budget"] = Num(CostOverBudget(o));
  return j;
}

json RowsJson(const OutcomeRows& rows) {
  json j = OutcomeJson(rows.total);
  j["by_agent"] = json::array();
  for (const auto& o : rows.by_agent) j["by_agent"].push_back(OutcomeJson(o));
  return j;
}

json SplitJson(const SplitInSimulator& sp) {
  json j;
  j["bidders"] = sp.bidders;
  for (const auto& [name, run] : sp.runs) {
    json r;
    for (const Arm arm : kBoth) {
      const SplitRun::ArmRun& a = run.arms[Index(arm)];
      json cost = json::array();
      for (const double c : a.cost_over_budget_by_agent) cost.push_back(Num(c));
      r[ArmName(arm)] = {{"cost_over_budget_by_agent", cost}, {"revenue", a.revenue}};
    }
    r["revenue_ratio"] = Num(run.revenue_ratio);
    j[name] = r;
  }
  return j;
}

json StepJson(const DemoStep& s) {
  json st;
  st["step"] = s.step;
  st["policy_version"] = s.policy_version;
  json tab = json::array();
  for (const auto& row : s.table) {
    json r = json::array();
    for (const double a : row) r.push_back(a);
    tab.push_back(r);
  }
  st["table"] = tab;
  st["policy_lag_ms"] = Num(s.policy_lag_ms);
  if (s.policy_switch) {
    st["policy_switch"] = {{"bidders", s.policy_switch->bidders},
                           {"spread_ms", s.policy_switch->spread_ms}};
  }
  st["exchange"] = json::parse(EncodeStepMarker(s.exchange));
  st["lost_requests"] = s.lost_requests;
  if (s.rerouted_requests > 0) st["rerouted_requests"] = s.rerouted_requests;
  st["failed_notices"] = s.failed_notices;
  if (s.moved_notices > 0) st["moved_notices"] = s.moved_notices;
  if (s.learner) st["learner"] = json::parse(s.learner->record);
  st["learner_matches_exchange"] = s.learner_matches_exchange;
  return st;
}

json DayJson(const DemoDay& d) {
  json day;
  day["day"] = d.day;
  for (const Arm arm : kBoth) day[ArmName(arm)] = RowsJson(d.arms[Index(arm)]);
  day["learned_in_simulator"] = RowsJson(d.learned_in_simulator);
  if (d.learned_arm_in_simulator) {
    day["learned_arm_in_simulator"] = RowsJson(*d.learned_arm_in_simulator);
  }
  if (d.split_in_simulator) day["split_in_simulator"] = SplitJson(*d.split_in_simulator);
  day["manual_in_simulator"] = RowsJson(d.manual_in_simulator);
  day["revenue_ratio"] = Num(d.revenue_ratio);
  day["revenue_ratio_to_simulated_manual"] = Num(d.revenue_ratio_to_simulated_manual);
  day["seconds"] = d.seconds;
  day["steps"] = json::array();
  for (const auto& s : d.steps) day["steps"].push_back(StepJson(s));
  return day;
}

json CiJson(const RatioCi& c) {
  return {{"ratio", Num(c.ratio)},
          {"ci95", {Num(c.lo), Num(c.hi)}},
          {"resamples", c.resamples},
          {"buckets", c.buckets}};
}

json EventsBudgetJson(const EventsBudgetCheck& b) {
  return {{"max_overspend_pct", b.max_overspend_pct},
          {"min_cost_pct", Num(b.min_cost_pct)},
          {"min_arm_cost_pct", Num(b.min_arm_cost_pct)}};
}

// "; goals: ..." of the A/B paragraph (empty when no advertiser has a target).
std::string GoalSentence(const GoalCheck& g) {
  if (g.targets == 0) return "";
  auto arm = [&](Arm a) {
    return doc::Format(doc::Value::Num(g.score[Index(a)]), doc::Fmt::kNumber, 1) + " (" +
           std::to_string(g.missed[Index(a)]) + " missed)";
  };
  return "; " + std::to_string(g.targets) + " advertisers with a target, scored learned " +
         arm(Arm::kLearned) + ", manual " + arm(Arm::kManual) +
         ", each advertiser's score and realised CPA or ROAS " +
         (g.matches_exchange_within_0_1_pct
              ? "equal to the exchange's accounting within 0.1%"
              : "NOT equal to the exchange's accounting (" + g.first_difference + ")");
}

json AbJson(const AbFromEvents& ab) {
  if (!ab.error.empty()) return {{"error", ab.error}};
  json out = {{"file", ab.file},
              {"rerun", ab.rerun},
              {"comparison",
               {{"revenue_ratio", CiJson(ab.comparison.revenue_ratio)},
                {"roi_ratio", CiJson(ab.comparison.roi_ratio)},
                {"per_share", ab.comparison.per_share}}},
              {"events_counted", ab.events_counted},
              {"malformed", ab.malformed}};
  for (const Arm arm : kBoth) {
    const ArmTotals& t = ab.arms[Index(arm)];
    out["arms"][ArmName(arm)] = {{"spend", t.spend.units()},
                                 {"revenue", t.revenue.units()},
                                 {"clicks", t.clicks},
                                 {"conversions", t.conversions}};
  }
  out["matches_exchange_within_0_1_pct"] = ab.matches_exchange_within_0_1_pct;
  out["budget_check"] = EventsBudgetJson(ab.budget_check);
  const GoalCheck& g = ab.goals;
  if (g.targets > 0) {
    json goals = {{"targets", g.targets},
                  {"compared", g.compared},
                  {"matches_exchange_within_0_1_pct", g.matches_exchange_within_0_1_pct},
                  {"first_difference", g.first_difference}};
    for (const Arm arm : kBoth) {
      goals["arms"][ArmName(arm)] = {{"score", g.score[Index(arm)]},
                                     {"missed", g.missed[Index(arm)]}};
    }
    out["goals"] = goals;
  }
  return out;
}

json BudgetCheckJson(const DemoReport& r) {
  json bc = EventsBudgetJson(r.ab_from_events.budget_check);
  bc["bidders"] = r.budget_check.bidders;
  bc["lease_reclaims"] = r.budget_check.lease_reclaims;
  if (!r.budget_check.in_simulator.empty()) {
    json in;
    for (const auto& [name, s] : r.budget_check.in_simulator) {
      in[name] = {{"min_cost_pct", Num(s.min_cost_pct)},
                  {"revenue_ratio_min", Num(s.revenue_ratio_min)},
                  {"revenue_ratio_max", Num(s.revenue_ratio_max)}};
    }
    bc["in_simulator"] = in;
  }
  return bc;
}

json LoopCheckJson(const LoopCheck& lc) {
  json parts = json::array();
  for (const auto& p : lc.events_partitions) {
    parts.push_back({{"partition", p.partition},
                     {"high_watermark", p.high_watermark},
                     {"learner_next_offset",
                      p.learner_next_offset ? json(*p.learner_next_offset) : json(nullptr)}});
  }
  return {{"transitions", lc.transitions},   {"expected_transitions", lc.expected_transitions},
          {"missing", lc.missing},           {"duplicated", lc.duplicated},
          {"totals_match", lc.totals_match}, {"events_topic_messages", lc.events_topic_messages},
          {"events_partitions", parts}};
}

json ReportJson(const DemoReport& r) {
  json report;
  report["title"] = r.title;
  report["kind"] = r.kind;
  report["days"] = json::array();
  for (const auto& d : r.days) report["days"].push_back(DayJson(d));
  report["replay_imported_offline_transitions"] = r.replay_imported_offline_transitions;
  report["learned_share"] = r.learned_share;
  for (const Arm arm : kBoth) {
    const Outcome& o = r.arms[Index(arm)];
    report["arms"][ArmName(arm)] = {{"revenue", o.revenue.units()},
                                    {"spend", o.cost.units()},
                                    {"budget", o.budget.units()},
                                    {"clicks", o.clicks},
                                    {"conversions", o.conversions},
                                    {"impressions", o.impressions},
                                    {"roi", Num(Roi(o))},
                                    {"cpa", Num(CostPerConversion(o))},
                                    {"cost", Num(CostOverBudget(o))}};
  }
  const Quantiles& lag = r.policy_lag_ms;
  report["policy_lag_ms"] = {{"p50", lag.p50}, {"p90", lag.p90}, {"max", lag.max}, {"n", lag.n}};
  if (const auto& sw = r.policy_switch_spread_ms) {
    report["policy_switch_spread_ms"] = {{"p50", sw->p50}, {"max", sw->max}, {"tables", sw->n}};
  }
  report["loop_check"] = LoopCheckJson(r.loop_check);
  report["chaos"] = r.chaos;
  report["processes"] = {{"learner_exit", r.processes.learner_exit},
                         {"bidder_exit", r.processes.bidder_exit}};
  if (r.processes.budget_exit) report["processes"]["budget_exit"] = *r.processes.budget_exit;
  report["kafka"] = {{"cluster", r.kafka.cluster}};
  if (!r.kafka.run.empty()) {
    report["kafka"]["run"] = r.kafka.run;
    for (const auto& [role, name] : r.kafka.topics) report["kafka"]["topics"][role] = name;
    report["kafka"]["topics_deleted_after_run"] = true;
    report["kafka"]["properties"] = r.kafka.properties;
  }
  report["bidders"] = r.bidders;
  report["requests_per_bidder"] = r.requests_per_bidder;
  report["about"] = r.about;
  if (!r.pretrain_report.empty()) report["pretrain_report"] = r.pretrain_report;
  const EventsDump& e = r.events_dump;
  report["events_dump"] = {{"file", e.file},
                           {"messages", e.messages},
                           {"read_to_end", e.read_to_end},
                           {"messages_no_longer_retained", e.messages_no_longer_retained},
                           {"complete", e.complete},
                           {"replay", e.replay}};
  report["ab_from_events"] = AbJson(r.ab_from_events);
  if (r.ab_from_events.error.empty()) report["budget_check"] = BudgetCheckJson(r);
  report["seconds"] = r.seconds;
  return report;
}

// ---- The document -----------------------------------------------------------------------

// A ratio or share that may not exist (an infinite one shows as n/a, as in report.json).
doc::Value Finite(double v) { return doc::Value::Num(std::isfinite(v) ? v : doc::kNone); }
doc::Value N(double v) { return doc::Value::Num(v); }

std::string Money(double v) { return doc::Format(doc::Value::Num(v), doc::Fmt::kMoney); }

// The lowest COST of any agent, over some lists of them (n/a if none has a budget).
doc::Value Lowest(std::initializer_list<const std::vector<double>*> lists) {
  double lo = 1e300;
  for (const auto* list : lists) {
    for (const double c : *list) {
      if (std::isfinite(c)) lo = std::min(lo, c);
    }
  }
  return doc::Value::Num(lo < 1e299 ? lo : doc::kNone);
}

std::vector<double> CostsOf(const std::vector<Outcome>& rows) {
  std::vector<double> out;
  for (const auto& o : rows) out.push_back(CostOverBudget(o));
  return out;
}

// 1. The answer: the arms' revenue over the days, per unit of share, and their delivery.
void AddAnswer(const DemoReport& r, const std::string& currency, doc::Document* d) {
  using doc::Fmt;
  const auto& days = r.days;
  double learned = 0, manual = 0, l_cost = 0, m_cost = 0, l_budget = 0, m_budget = 0;
  for (const auto& day : days) {
    const Outcome &l = day.arms[Index(Arm::kLearned)].total,
                  &m = day.arms[Index(Arm::kManual)].total;
    learned += l.revenue.units();
    manual += m.revenue.units();
    l_cost += l.cost.units();
    m_cost += m.cost.units();
    l_budget += l.budget.units();
    m_budget += m.budget.units();
  }
  const double share = r.learned_share;
  // Per unit of each arm's share of the users and the budgets.
  const double ratio =
      manual > 0 && share < 1 ? (learned / share) / (manual / (1 - share)) : doc::kNone;
  char share_text[32];
  std::snprintf(share_text, sizeof share_text, "%.0f%%", 100 * share);
  d->Add(doc::Paragraph{
      "A live A/B test over " + std::to_string(days.size()) + " simulated day" +
      (days.size() == 1 ? "" : "s") + ": " + share_text +
      " of the users (and of every advertiser's budget) in the learned arm, bid by the online "
      "learner's tables; the rest in the manual arm (a = 0), through the same bidder and "
      "exchange on the same days. The learned arm earned " +
      Money(learned) + " " + currency + " against the manual arm's " + Money(manual) + " " +
      currency + ": " + doc::Format(doc::Value::Num(ratio), Fmt::kRatio) +
      " per unit of share. It spent " +
      doc::Format(doc::Value::Num(l_budget > 0 ? l_cost / l_budget : doc::kNone), Fmt::kPercent,
                  1) +
      " of its budgets (manual arm " +
      doc::Format(doc::Value::Num(m_budget > 0 ? m_cost / m_budget : doc::kNone), Fmt::kPercent,
                  1) +
      ")."});
  const AbFromEvents& ab = r.ab_from_events;
  if (ab.error.empty()) {
    auto ci = [](const RatioCi& c) {
      return doc::Format(Finite(c.ratio), Fmt::kRatio) + " (95% interval " +
             doc::Format(Finite(c.lo), Fmt::kRatio) + " to " +
             doc::Format(Finite(c.hi), Fmt::kRatio) + ")";
    };
    d->Add(doc::Link{
        "the A/B report (rtb report)", ab.file,
        "From the bidder's own events: revenue per share " + ci(ab.comparison.revenue_ratio) +
            ", ROI " + ci(ab.comparison.roi_ratio) +
            "; arms' spend, revenue, clicks and conversions " +
            (ab.matches_exchange_within_0_1_pct ? "equal to the exchange's accounting within 0.1%"
                                                : "NOT equal to the exchange's accounting") +
            GoalSentence(ab.goals) + ". Per day, agent and advertiser: "});
  }
}

// The arms per day (a table and, over several days, a chart of their revenue).
void AddPerDay(const DemoReport& r, const std::string& cur, doc::Document* d) {
  using doc::Fmt;
  d->Add(doc::Heading{2, "Learned arm against manual arm, per day"});
  doc::Table t;
  t.columns = {{"day", Fmt::kCount},
               {"learned revenue" + cur, Fmt::kMoney},
               {"manual revenue" + cur, Fmt::kMoney},
               {"learned / manual (per share)", Fmt::kRatio},
               {"learned delivery (COST)", Fmt::kPercent, 1},
               {"manual delivery (COST)", Fmt::kPercent, 1},
               {"learned ROI", Fmt::kRatio},
               {"manual ROI", Fmt::kRatio},
               {"learned cost per click" + cur, Fmt::kMoney},
               {"manual cost per click" + cur, Fmt::kMoney},
               {"learned clicks", Fmt::kCount},
               {"manual clicks", Fmt::kCount}};
  doc::Chart rev;
  rev.title = "Revenue per day";
  rev.x.title = "simulated day";
  rev.x.whole = true;
  rev.y.title = "revenue" + cur;
  rev.y.fmt = Fmt::kMoney;
  doc::Series ls{"learned arm (live)"}, ms{"manual arm (live)"};
  ms.color = 1;
  for (const auto& day : r.days) {
    const Outcome &l = day.arms[Index(Arm::kLearned)].total,
                  &m = day.arms[Index(Arm::kManual)].total;
    const double k = day.day;
    t.rows.push_back({N(k), N(l.revenue.units()), N(m.revenue.units()), N(day.revenue_ratio),
                      Finite(CostOverBudget(l)), Finite(CostOverBudget(m)), Finite(Roi(l)),
                      Finite(Roi(m)), Finite(CostPerClick(l)), Finite(CostPerClick(m)), N(l.clicks),
                      N(m.clicks)});
    ls.x.push_back(k), ls.y.push_back(l.revenue.units());
    ms.x.push_back(k), ms.y.push_back(m.revenue.units());
  }
  d->Add(t);
  rev.series = {ls, ms};
  if (r.days.size() > 1) d->Add(rev);
}

// Per day and agent; with the served tables in the simulator on the learned arm (A/B runs).
void AddPerAgent(const DemoReport& r, const std::string& cur, doc::Document* d) {
  using doc::Fmt;
  doc::Table agents;
  agents.caption = "Per agent";
  agents.columns = {{"day", Fmt::kCount},
                    {"agent", Fmt::kText},
                    {"learned revenue" + cur, Fmt::kMoney},
                    {"manual revenue" + cur, Fmt::kMoney},
                    {"learned delivery (COST)", Fmt::kPercent, 1},
                    {"manual delivery (COST)", Fmt::kPercent, 1}};
  const bool replayed = !r.days.empty() && r.days[0].learned_arm_in_simulator.has_value();
  if (replayed) agents.columns.push_back({"learned delivery, simulator", Fmt::kPercent, 1});
  for (const auto& day : r.days) {
    const auto &ls = day.arms[Index(Arm::kLearned)].by_agent,
               &ms = day.arms[Index(Arm::kManual)].by_agent;
    for (size_t i = 0; i < ls.size(); ++i) {
      agents.rows.push_back({N(day.day), doc::Value::Text("agent " + std::to_string(i + 1)),
                             N(ls[i].revenue.units()), N(ms[i].revenue.units()),
                             Finite(CostOverBudget(ls[i])), Finite(CostOverBudget(ms[i]))});
      if (replayed) {
        agents.rows.back().push_back(
            Finite(CostOverBudget(day.learned_arm_in_simulator->by_agent[i])));
      }
    }
  }
  d->Add(agents);
  if (replayed) {
    d->Add(doc::Paragraph{
        "Learned delivery, simulator: the tables the bidder served, played by the simulator on "
        "the learned arm's users with its part of the budgets (as one bidder spends them)."});
  }
}

// Several bidders: the live run beside the simulator's one bidder and ideal coordinators.
void AddSplit(const DemoReport& r, doc::Document* d) {
  using doc::Fmt;
  if (r.days.empty() || !r.days[0].split_in_simulator) return;
  const std::string ks = std::to_string(r.days[0].split_in_simulator->bidders) + " bidders";
  doc::Table split;
  split.caption = "Budgets over several bidders: live, and in the simulator";
  split.columns = {{"day", Fmt::kCount},
                   {"budgets served by", Fmt::kText},
                   {"lowest agent delivery (COST)", Fmt::kPercent, 1},
                   {"learned / manual per share", Fmt::kRatio}};
  const std::pair<const char*, std::string> labels[] = {
      {kSplitRuns[0], "1 bidder, simulator"},
      {kSplitRuns[1], ks + ", equal parts, simulator"},
      {kSplitRuns[2], ks + ", whole mean bids, simulator"},
      {kSplitRuns[3], ks + ", whole bids first, simulator"}};
  for (const auto& day : r.days) {
    if (!day.split_in_simulator) continue;
    const auto l = CostsOf(day.arms[Index(Arm::kLearned)].by_agent),
               m = CostsOf(day.arms[Index(Arm::kManual)].by_agent);
    split.rows.push_back(
        {N(day.day), doc::Value::Text(ks + ", live"), Lowest({&l, &m}), N(day.revenue_ratio)});
    for (const auto& [name, label] : labels) {
      const SplitRun* run = FindRun(*day.split_in_simulator, name);
      if (run == nullptr) continue;
      split.rows.push_back({N(day.day), doc::Value::Text(label),
                            Lowest({&run->arms[Index(Arm::kLearned)].cost_over_budget_by_agent,
                                    &run->arms[Index(Arm::kManual)].cost_over_budget_by_agent}),
                            N(run->revenue_ratio)});
    }
  }
  d->Add(split);
  d->Add(doc::Paragraph{
      "The simulator plays each arm's users with its part of the budgets and the tables served "
      "(manual bids on the manual arm). Its bidders hold pieces of each budget set by an ideal "
      "coordinator that rebalances before every request: equal parts; whole mean bids (below "
      "one mean bid per bidder, whole units of the advertiser's mean bid to the bidders first "
      "in line: the live leases' rule, without their delays); or whole bids first (knowing each "
      "bid before it is made, which no coordinator can). A bid is lowered to its bidder's piece, "
      "as the live bidders' are to their leases."});
}

// 2. Budget burn per agent over each day: the learner's per-step spend (agent x cluster),
// cumulated, against the agent's budget.
void AddBudgetBurn(const DemoReport& r, doc::Document* d) {
  if (r.days.empty()) return;
  doc::Chart burn;
  burn.title = "Cumulative spend over the day, learned arm (live)";
  burn.x.title = "hour of the simulated day";
  burn.x.whole = true;
  burn.x.min = 0;
  burn.y.title = "spend (% of the agent's daily budget)";
  burn.y.fmt = doc::Fmt::kPoints;
  burn.y.max = 100;
  burn.references.push_back({"daily budget (100%)", 100});
  const size_t n_agents = r.days[0].arms[Index(Arm::kLearned)].by_agent.size();
  for (const auto& day : r.days) {
    for (size_t i = 0; i < n_agents; ++i) {
      doc::Series s;
      s.name = "day " + std::to_string(day.day) + ", agent " + std::to_string(i + 1);
      s.color = static_cast<int>(i);
      s.dashed = day.day != r.days.back().day;  // earlier days dashed
      s.markers = false;
      const double b = day.arms[Index(Arm::kLearned)].by_agent[i].budget.units();
      double spent = 0;
      s.x.push_back(0), s.y.push_back(0);
      for (const auto& st : day.steps) {
        if (!st.learner) continue;
        const auto& cost = st.learner->cost_micros;
        const size_t L = n_agents > 0 ? cost.size() / n_agents : 0;
        for (size_t j = 0; j < L; ++j) spent += static_cast<double>(cost[i * L + j]) / 1e6;
        const double hours = (st.step + 1.0) * static_cast<double>(st.exchange.step_ms) / 3.6e6;
        s.x.push_back(hours);
        s.y.push_back(b > 0 ? 100 * spent / b : doc::kNone);
      }
      if (s.x.size() > 1) burn.series.push_back(s);
    }
  }
  if (!burn.series.empty()) {
    d->Add(doc::Heading{2, "Budget burn per agent"});
    d->Add(doc::Paragraph{"One colour per agent; the last day solid, earlier days dashed."});
    d->Add(burn);
  }
}

// 3. The action tables served, one heat map per step.
void AddTables(const DemoReport& r, doc::Document* d) {
  using doc::Fmt;
  d->Add(doc::Heading{2, "Action tables served"});
  d->Add(doc::Paragraph{
      "a[i][j] per agent (row) and consumer cluster (column), as the bidder served it at each "
      "step: the bid is the manual bid x (1 + clip(a x bratio)). Orange raises the bid, blue "
      "lowers it. Version = 1 + day x T + step."});
  doc::Table steps;
  steps.caption = "Steps";
  steps.columns = {{"day", Fmt::kCount},
                   {"step", Fmt::kCount},
                   {"policy version", Fmt::kCount},
                   {"policy lag (ms)", Fmt::kNumber, 1},
                   {"learner = exchange", Fmt::kText}};
  for (const auto& day : r.days) {
    for (const auto& st : day.steps) {
      doc::Grid g;
      g.caption = "day " + std::to_string(day.day) + ", step " + std::to_string(st.step) +
                  " (version " + std::to_string(st.policy_version) + ")";
      g.row_title = "agent";
      g.column_title = "cluster";
      g.values = st.table;
      for (size_t i = 0; i < g.values.size(); ++i) g.rows.push_back(std::to_string(i + 1));
      for (size_t j = 0; !g.values.empty() && j < g.values[0].size(); ++j) {
        g.columns.push_back(std::to_string(j + 1));
      }
      d->Add(g);
      steps.rows.push_back({N(day.day), N(st.step), N(static_cast<double>(st.policy_version)),
                            Finite(st.policy_lag_ms),
                            doc::Value::Text(st.learner_matches_exchange ? "yes" : "NO")});
    }
  }
  d->Add(steps);
}

// 4. The loop's bookkeeping, the chaos and how this was made.
void AddBookkeeping(const DemoReport& r, doc::Document* d) {
  using doc::Fmt;
  const Quantiles& lag = r.policy_lag_ms;
  const LoopCheck& lc = r.loop_check;
  const EventsDump& e = r.events_dump;
  d->Add(doc::Heading{2, "Loop bookkeeping"});
  doc::KeyValues kv;
  auto count = [](int64_t v) { return doc::Grouped(static_cast<double>(v), 0); };
  kv.items = {{"policy lag (step end to the next table served)",
               "p50 " + doc::Format(N(lag.p50), Fmt::kNumber, 1) + " ms, p90 " +
                   doc::Format(N(lag.p90), Fmt::kNumber, 1) + " ms, max " +
                   doc::Format(N(lag.max), Fmt::kNumber, 1) + " ms over " + std::to_string(lag.n) +
                   " steps"},
              {"transitions in the replay store",
               count(lc.transitions) + " (expected " + count(lc.expected_transitions) + ")"},
              {"missing / duplicated steps",
               std::to_string(lc.missing.size()) + " / " + std::to_string(lc.duplicated.size())},
              {"per-step spend and revenue, learner against exchange",
               lc.totals_match ? "equal in every step" : "DIFFER (see report.json)"},
              {"events still on the topic (the embedded cluster keeps 5 MB a partition)",
               count(lc.events_topic_messages)},
              {"events dumped for offline replay",
               count(e.messages) + " in events.jsonl" +
                   (e.complete ? "" : " (not complete, see report.json)") +
                   "; replay: " + doc::ShownPaths(e.replay)}};
  d->Add(kv);
  if (!r.chaos.empty()) {
    d->Add(doc::Heading{2, "Chaos"});
    d->Add(doc::Bullets{r.chaos});
  }
  d->Add(doc::Heading{2, "How this was made"});
  doc::Bullets about;
  for (const auto& line : r.about) about.items.push_back(doc::ShownPaths(line));
  d->Add(about);
  if (!r.pretrain_report.empty()) {
    d->Add(doc::Link{"the pre-training report", r.pretrain_report,
                     "The offline pre-training the learner started from: "});
  }
}

}  // namespace

Quantiles QuantilesOf(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto q = [&](double f) {
    return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<size_t>(f * ms.size()))];
  };
  return {q(0.5), q(0.9), ms.empty() ? 0.0 : ms.back(), static_cast<int>(ms.size())};
}

void SummariseDays(DemoReport* r) {
  std::vector<double> lags;
  for (Outcome& o : r->arms) o = Outcome();
  r->loop_check.totals_match = true;
  for (const auto& day : r->days) {
    for (const Arm arm : kBoth) r->arms[Index(arm)] += day.arms[Index(arm)].total;
    for (const auto& st : day.steps) {
      if (std::isfinite(st.policy_lag_ms)) lags.push_back(st.policy_lag_ms);
      r->loop_check.totals_match = r->loop_check.totals_match && st.learner_matches_exchange;
    }
  }
  r->policy_lag_ms = QuantilesOf(std::move(lags));
}

std::vector<std::pair<std::string, SplitSummary>> SummariseSplits(
    const std::vector<DemoDay>& days) {
  std::vector<std::pair<std::string, SplitSummary>> out;
  if (days.empty() || !days[0].split_in_simulator) return out;
  for (const auto& [name, first] : days[0].split_in_simulator->runs) {
    double min_cost = 1e300, lo = 1e300, hi = -1e300;
    for (const auto& day : days) {
      const SplitRun* run =
          day.split_in_simulator ? FindRun(*day.split_in_simulator, name) : nullptr;
      if (run == nullptr) continue;
      for (const auto& arm : run->arms) {
        for (const double c : arm.cost_over_budget_by_agent) {
          if (std::isfinite(c)) min_cost = std::min(min_cost, 100 * c);
        }
      }
      if (std::isfinite(run->revenue_ratio)) {
        lo = std::min(lo, run->revenue_ratio);
        hi = std::max(hi, run->revenue_ratio);
      }
    }
    // A running minimum or maximum (started at +-1e300), or none if nothing was seen.
    auto seen = [](double v) { return std::abs(v) < 1e299 ? v : kNaN; };
    out.push_back({name, {seen(min_cost), seen(lo), seen(hi)}});
  }
  return out;
}

std::string RenderDemoJson(const DemoReport& r) { return ReportJson(r).dump(2) + "\n"; }

doc::Document BuildDemoDocument(const DemoReport& r, const std::string& currency) {
  doc::Document d;
  d.title = r.title;
  const std::string cur = " (" + currency + ")";
  AddAnswer(r, currency, &d);
  AddPerDay(r, cur, &d);
  AddPerAgent(r, cur, &d);
  AddSplit(r, &d);
  AddBudgetBurn(r, &d);
  AddTables(r, &d);
  AddBookkeeping(r, &d);
  return d;
}

std::string RenderDemoMarkdown(const DemoReport& r, const std::string& currency) {
  return doc::RenderMarkdown(BuildDemoDocument(r, currency));
}

std::string RenderDemoHtml(const DemoReport& r, const std::string& currency) {
  return doc::RenderHtml(BuildDemoDocument(r, currency));
}

Status WriteDemoReportFiles(const DemoReport& r, const std::string& dir, std::string* md) {
  *md = RenderDemoMarkdown(r);
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.json", RenderDemoJson(r)));
  RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.md", *md));
  return WriteFileAtomic(dir + "/report.html", RenderDemoHtml(r));
}

}  // namespace rtb::demo
