// The demo report as a document (core's report_doc.h renders it, as every other report): the
// answer first (learned against manual per day, with the ratio and the delivery), then the
// budget burn per agent over the day, then the action tables served as heat maps, then the
// loop's bookkeeping.
#include "demo_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "rtb/core/report_doc.h"

namespace rtb::demo {

using nlohmann::json;

namespace {

double Num(const json& v) {
  return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
}
doc::Value V(const json& v) { return doc::Value::Num(Num(v)); }

std::string Money(double v) { return doc::Format(doc::Value::Num(v), doc::Fmt::kMoney); }

}  // namespace

doc::Document BuildDemoDocument(const json& r, const std::string& currency) {
  using doc::Fmt;
  doc::Document d;
  d.title = r.value("title", "rtb demo");
  const json& days = r["days"];
  const std::string cur = " (" + currency + ")";

  // 1. The answer.
  double learned = 0, manual = 0, l_cost = 0, m_cost = 0, l_budget = 0, m_budget = 0;
  for (const auto& day : days) {
    learned += Num(day["learned"]["revenue"]);
    manual += Num(day["manual"]["revenue"]);
    l_cost += Num(day["learned"]["cost"]);
    m_cost += Num(day["manual"]["cost"]);
    l_budget += Num(day["learned"]["budget"]);
    m_budget += Num(day["manual"]["budget"]);
  }
  const double share = r.contains("learned_share") ? Num(r["learned_share"]) : 1.0;
  // Per unit of each arm's share of the users and the budgets.
  const double ratio =
      manual > 0 && share < 1 ? (learned / share) / (manual / (1 - share)) : doc::kNone;
  char share_text[32];
  std::snprintf(share_text, sizeof share_text, "%.0f%%", 100 * share);
  d.Add(doc::Paragraph{
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
  if (r.contains("ab_from_events") && r["ab_from_events"].contains("comparison")) {
    const json& ab = r["ab_from_events"];
    const json& rr = ab["comparison"]["revenue_ratio"];
    const json& roi = ab["comparison"]["roi_ratio"];
    auto ci = [](const json& c) {
      return doc::Format(V(c["ratio"]), Fmt::kRatio) + " (95% interval " +
             doc::Format(V(c["ci95"][0]), Fmt::kRatio) + " to " +
             doc::Format(V(c["ci95"][1]), Fmt::kRatio) + ")";
    };
    d.Add(doc::Link{"the A/B report (rtb report)", ab.value("file", "ab/report.html"),
                    "From the bidder's own events: revenue per share " + ci(rr) + ", ROI " +
                        ci(roi) + "; arms' spend, revenue, clicks and conversions " +
                        (ab.value("matches_exchange_within_0_1_pct", false)
                             ? "equal to the exchange's accounting within 0.1%"
                             : "NOT equal to the exchange's accounting") +
                        ". Per day, agent and advertiser: "});
  }

  d.Add(doc::Heading{2, "Learned arm against manual arm, per day"});
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
  for (const auto& day : days) {
    const json &l = day["learned"], &m = day["manual"];
    const double k = Num(day["day"]);
    t.rows.push_back({doc::Value::Num(k), V(l["revenue"]), V(m["revenue"]), V(day["revenue_ratio"]),
                      V(l["cost_over_budget"]), V(m["cost_over_budget"]), V(l["roi"]), V(m["roi"]),
                      V(l["cost_per_click"]), V(m["cost_per_click"]), V(l["clicks"]),
                      V(m["clicks"])});
    ls.x.push_back(k), ls.y.push_back(Num(l["revenue"]));
    ms.x.push_back(k), ms.y.push_back(Num(m["revenue"]));
  }
  d.Add(t);
  rev.series = {ls, ms};
  if (days.size() > 1) d.Add(rev);

  doc::Table agents;
  agents.caption = "Per agent";
  agents.columns = {{"day", Fmt::kCount},
                    {"agent", Fmt::kText},
                    {"learned revenue" + cur, Fmt::kMoney},
                    {"manual revenue" + cur, Fmt::kMoney},
                    {"learned delivery (COST)", Fmt::kPercent, 1},
                    {"manual delivery (COST)", Fmt::kPercent, 1}};
  // The served tables in the simulator on the learned arm, beside the live arm (A/B runs).
  const bool replayed = !days.empty() && days[0].contains("learned_arm_in_simulator");
  if (replayed) agents.columns.push_back({"learned delivery, simulator", Fmt::kPercent, 1});
  for (const auto& day : days) {
    for (size_t i = 0; i < day["learned"]["by_agent"].size(); ++i) {
      const json &l = day["learned"]["by_agent"][i], &m = day["manual"]["by_agent"][i];
      agents.rows.push_back({V(day["day"]), doc::Value::Text("agent " + std::to_string(i + 1)),
                             V(l["revenue"]), V(m["revenue"]), V(l["cost_over_budget"]),
                             V(m["cost_over_budget"])});
      if (replayed) {
        agents.rows.back().push_back(
            V(day["learned_arm_in_simulator"]["by_agent"][i]["cost_over_budget"]));
      }
    }
  }
  d.Add(agents);
  if (replayed) {
    d.Add(doc::Paragraph{
        "Learned delivery, simulator: the tables the bidder served, played by the simulator on "
        "the learned arm's users with its part of the budgets (as one bidder spends them)."});
  }

  // Several bidders: the live run beside the simulator's one bidder and ideal coordinators.
  if (!days.empty() && days[0].contains("split_in_simulator")) {
    const int k = days[0]["split_in_simulator"]["bidders"].get<int>();
    const std::string ks = std::to_string(k) + " bidders";
    doc::Table split;
    split.caption = "Budgets over several bidders: live, and in the simulator";
    split.columns = {{"day", Fmt::kCount},
                     {"budgets served by", Fmt::kText},
                     {"lowest agent delivery (COST)", Fmt::kPercent, 1},
                     {"learned / manual per share", Fmt::kRatio}};
    auto lowest = [](const json& by_agent_l, const json& by_agent_m, const char* field) {
      double lo = 1e300;
      for (const json* arm : {&by_agent_l, &by_agent_m}) {
        for (const auto& a : *arm) {
          const json& c = field[0] != '\0' ? a[field] : a;
          if (c.is_number()) lo = std::min(lo, c.get<double>());
        }
      }
      return doc::Value::Num(lo < 1e299 ? lo : doc::kNone);
    };
    for (const auto& day : days) {
      const json& sp = day["split_in_simulator"];
      split.rows.push_back(
          {V(day["day"]), doc::Value::Text(ks + ", live"),
           lowest(day["learned"]["by_agent"], day["manual"]["by_agent"], "cost_over_budget"),
           V(day["revenue_ratio"])});
      for (const auto& [name, label] :
           {std::pair{"one_bidder", std::string("1 bidder, simulator")},
            std::pair{"even", ks + ", equal parts, simulator"},
            std::pair{"whole_mean", ks + ", whole mean bids, simulator"},
            std::pair{"whole", ks + ", whole bids first, simulator"}}) {
        const json& run = sp[name];
        split.rows.push_back({V(day["day"]), doc::Value::Text(label),
                              lowest(run["learned"]["cost_over_budget_by_agent"],
                                     run["manual"]["cost_over_budget_by_agent"], ""),
                              V(run["revenue_ratio"])});
      }
    }
    d.Add(split);
    d.Add(doc::Paragraph{
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
  if (!days.empty()) {
    doc::Chart burn;
    burn.title = "Cumulative spend over the day, learned arm (live)";
    burn.x.title = "hour of the simulated day";
    burn.x.whole = true;
    burn.x.min = 0;
    burn.y.title = "spend (% of the agent's daily budget)";
    burn.y.fmt = Fmt::kPoints;
    burn.y.max = 100;
    burn.references.push_back({"daily budget (100%)", 100});
    const size_t n_agents = days[0]["learned"]["by_agent"].size();
    for (const auto& day : days) {
      const int dn = day["day"].get<int>();
      for (size_t i = 0; i < n_agents; ++i) {
        doc::Series s;
        s.name = "day " + std::to_string(dn) + ", agent " + std::to_string(i + 1);
        s.color = static_cast<int>(i);
        s.dashed = dn != days.back()["day"].get<int>();  // earlier days dashed
        s.markers = false;
        const double b = Num(day["learned"]["by_agent"][i]["budget"]);
        double spent = 0;
        s.x.push_back(0), s.y.push_back(0);
        for (const auto& st : day["steps"]) {
          if (!st.contains("learner") || !st.contains("exchange")) continue;
          const auto& cost = st["learner"]["cost_micros"];
          const size_t L = n_agents > 0 ? cost.size() / n_agents : 0;
          for (size_t j = 0; j < L; ++j) spent += Num(cost[i * L + j]) / 1e6;
          const double hours = (Num(st["step"]) + 1) * Num(st["exchange"]["step_ms"]) / 3.6e6;
          s.x.push_back(hours);
          s.y.push_back(b > 0 ? 100 * spent / b : doc::kNone);
        }
        if (s.x.size() > 1) burn.series.push_back(s);
      }
    }
    if (!burn.series.empty()) {
      d.Add(doc::Heading{2, "Budget burn per agent"});
      d.Add(doc::Paragraph{"One colour per agent; the last day solid, earlier days dashed."});
      d.Add(burn);
    }
  }

  // 3. The action tables served, one heat map per step.
  d.Add(doc::Heading{2, "Action tables served"});
  d.Add(doc::Paragraph{
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
  for (const auto& day : days) {
    for (const auto& st : day["steps"]) {
      doc::Grid g;
      g.caption = "day " + std::to_string(day["day"].get<int>()) + ", step " +
                  std::to_string(st["step"].get<int>()) + " (version " +
                  std::to_string(st["policy_version"].get<uint64_t>()) + ")";
      g.row_title = "agent";
      g.column_title = "cluster";
      for (const auto& row : st["table"]) {
        std::vector<double> v;
        for (const auto& x : row) v.push_back(Num(x));
        g.values.push_back(v);
      }
      for (size_t i = 0; i < g.values.size(); ++i) g.rows.push_back(std::to_string(i + 1));
      for (size_t j = 0; !g.values.empty() && j < g.values[0].size(); ++j) {
        g.columns.push_back(std::to_string(j + 1));
      }
      d.Add(g);
      steps.rows.push_back(
          {V(day["day"]), V(st["step"]), V(st["policy_version"]), V(st["policy_lag_ms"]),
           doc::Value::Text(st["learner_matches_exchange"].get<bool>() ? "yes" : "NO")});
    }
  }
  d.Add(steps);

  // 4. The loop's bookkeeping.
  const json& lag = r["policy_lag_ms"];
  const json& lc = r["loop_check"];
  d.Add(doc::Heading{2, "Loop bookkeeping"});
  doc::KeyValues kv;
  kv.items = {{"policy lag (step end to the next table served)",
               "p50 " + doc::Format(V(lag["p50"]), Fmt::kNumber, 1) + " ms, p90 " +
                   doc::Format(V(lag["p90"]), Fmt::kNumber, 1) + " ms, max " +
                   doc::Format(V(lag["max"]), Fmt::kNumber, 1) + " ms over " +
                   std::to_string(lag.value("n", 0)) + " steps"},
              {"transitions in the replay store",
               doc::Grouped(Num(lc["transitions"]), 0) + " (expected " +
                   doc::Grouped(Num(lc["expected_transitions"]), 0) + ")"},
              {"missing / duplicated steps", std::to_string(lc["missing"].size()) + " / " +
                                                 std::to_string(lc["duplicated"].size())},
              {"per-step spend and revenue, learner against exchange",
               lc["totals_match"].get<bool>() ? "equal in every step" : "DIFFER (see report.json)"},
              {"events still on the topic (the embedded cluster keeps 5 MB a partition)",
               doc::Grouped(Num(lc["events_topic_messages"]), 0)}};
  if (r.contains("events_dump")) {
    const json& e = r["events_dump"];
    kv.items.push_back({"events dumped for offline replay",
                        doc::Grouped(Num(e["messages"]), 0) + " in events.jsonl" +
                            (e.value("complete", false) ? "" : " (not complete, see report.json)") +
                            "; replay: " + doc::ShownPaths(e.value("replay", ""))});
  }
  d.Add(kv);
  if (!r["chaos"].empty()) {
    d.Add(doc::Heading{2, "Chaos"});
    doc::Bullets b;
    for (const auto& c : r["chaos"]) b.items.push_back(c.get<std::string>());
    d.Add(b);
  }
  d.Add(doc::Heading{2, "How this was made"});
  doc::Bullets about;
  for (const auto& line : r["about"])
    about.items.push_back(doc::ShownPaths(line.get<std::string>()));
  d.Add(about);
  if (r.value("pretrain_report", std::string()).size() > 0) {
    d.Add(doc::Link{"the pre-training report", r["pretrain_report"].get<std::string>(),
                    "The offline pre-training the learner started from: "});
  }
  return d;
}

std::string RenderDemoMarkdown(const json& r, const std::string& currency) {
  return doc::RenderMarkdown(BuildDemoDocument(r, currency));
}

std::string RenderDemoHtml(const json& r, const std::string& currency) {
  return doc::RenderHtml(BuildDemoDocument(r, currency));
}

}  // namespace rtb::demo
