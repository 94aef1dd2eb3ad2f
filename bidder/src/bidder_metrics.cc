// The bidder's /metrics page (Prometheus text format 0.0.4).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bidder_impl.h"
#include "lease_client.h"
#include "rtb/core/build_info.h"
#include "rtb/core/prometheus.h"

namespace rtb::bidder {

namespace {
// The budget day's ledger on /metrics: per agent and arm always (what sums to the market), per
// advertiser for the first cfg.metrics_advertisers of the file, and the overspend, which no
// correct bidder shows: series stay bounded however many advertisers there are.
void AppendBudgetMetrics(const BidderConfig& cfg, const BudgetLedger& ledger, std::string& o) {
  const size_t n_adv = cfg.advertisers.size();
  int agents = 0;
  for (const auto& a : cfg.advertisers) agents = std::max(agents, a.agent + 1);
  static constexpr struct {
    const char* what;
    const char* help;
    Micros (BudgetLedger::*get)(size_t) const;
  } kKinds[] = {
      {"budget", "The budget day's budget", &BudgetLedger::budget},
      {"spent", "Spent so far this budget day (billed)", &BudgetLedger::spent},
      {"reserved", "Held by bids awaiting their notices", &BudgetLedger::reserved},
  };
  const std::string arms[2] = {ArmName(Arm::kLearned), ArmName(Arm::kManual)};
  // sums[kind][agent * 2 + arm], in one pass over the advertisers.
  std::vector<int64_t> sums[3];
  for (auto& v : sums) v.assign(2 * static_cast<size_t>(agents), 0);
  for (size_t k = 0; k < n_adv; ++k) {
    for (const Arm arm : {Arm::kLearned, Arm::kManual}) {
      const size_t at =
          2 * static_cast<size_t>(cfg.advertisers[k].agent) + static_cast<size_t>(arm);
      for (int i = 0; i < 3; ++i)
        sums[i][at] += (ledger.*kKinds[i].get)(ArmSlot(k, arm, n_adv)).value();
    }
  }
  for (int i = 0; i < 3; ++i) {
    const std::string name = std::string("rtb_agent_") + kKinds[i].what + "_micros";
    prom::Family(
        &o, name, "gauge",
        std::string(kKinds[i].help) + ", summed over each agent's advertisers, per A/B arm.");
    for (size_t at = 0; at < sums[i].size(); ++at) {
      prom::Sample(&o, name,
                   "agent=\"" + std::to_string(at / 2) + "\",arm=\"" + arms[at % 2] + "\"",
                   sums[i][at]);
    }
  }
  const size_t shown = std::min(n_adv, static_cast<size_t>(std::max(0, cfg.metrics_advertisers)));
  for (const auto& kind : kKinds) {
    if (shown == 0) break;
    const std::string name = std::string("rtb_advertiser_") + kind.what + "_micros";
    prom::Family(&o, name, "gauge",
                 std::string(kind.help) +
                     ", per advertiser (the first metrics_advertisers of the "
                     "config) and A/B arm.");
    for (size_t k = 0; k < shown; ++k) {
      for (const Arm arm : {Arm::kLearned, Arm::kManual}) {
        prom::Sample(&o, name,
                     "advertiser=\"" + std::to_string(cfg.advertisers[k].id) + "\",arm=\"" +
                         arms[static_cast<int>(arm)] + "\"",
                     (ledger.*kind.get)(ArmSlot(k, arm, n_adv)).value());
      }
    }
  }
  int64_t over = 0, excess = 0;
  for (size_t s = 0; s < 2 * n_adv; ++s) {
    const int64_t e = ledger.spent(s).value() - ledger.budget(s).value();
    if (e > 0) ++over, excess += e;
  }
  prom::Gauge(&o, "rtb_overspent_budgets",
              "Arm budgets (advertiser x A/B arm) of the budget day spent past their budget: 0 "
              "unless something is wrong.",
              over);
  prom::Gauge(&o, "rtb_overspend_micros", "What those budgets spent past their budget, summed.",
              excess);
  prom::Gauge(&o, "rtb_open_reservations",
              "Bids of the budget day holding a reservation until their notice.",
              static_cast<int64_t>(ledger.outstanding()));
  prom::Gauge(&o, "rtb_reservation_slots", "Slots of the reservation tables (their memory).",
              static_cast<int64_t>(ledger.capacity()));
}

// The targeted advertisers' outcomes per agent and arm (GoalCounters), when any has a target:
// rate(spend) / rate(allowed) over a window is the agent's realised CPA or ROAS against its
// targets (1 = on target), rate(spend) / rate(conversions) its realised CPA.
void AppendGoalMetrics(const GoalCounters& g, std::string& o) {
  if (g.spend.empty()) return;
  static constexpr struct {
    const char* name;
    const char* help;
    const std::vector<Counter> GoalCounters::*of;
    double scale;
  } kKinds[] = {
      {"rtb_goal_spend_micros_total", "Billed spend of the advertisers with a target CPA or ROAS",
       &GoalCounters::spend, 1},
      {"rtb_goal_conversions_total", "Conversions of those advertisers (expected counts summed)",
       &GoalCounters::conversions, 1e-6},
      {"rtb_goal_value_micros_total", "Conversion value of those advertisers", &GoalCounters::value,
       1},
      {"rtb_goal_allowed_spend_micros_total",
       "What their targets allow for those conversions: target CPA x conversions, or value / "
       "target ROAS; spend / allowed above 1 is over target",
       &GoalCounters::allowed, 1},
  };
  const char* arms[2] = {ArmName(Arm::kLearned), ArmName(Arm::kManual)};
  for (const auto& kind : kKinds) {
    prom::Family(&o, kind.name, "counter",
                 std::string(kind.help) + ", per agent and A/B arm, since the process started.");
    const std::vector<Counter>& v = g.*kind.of;
    for (size_t at = 0; at < v.size(); ++at) {
      const std::string labels =
          "agent=\"" + std::to_string(at / 2) + "\",arm=\"" + arms[at % 2] + "\"";
      if (kind.scale == 1) {
        prom::Sample(&o, kind.name, labels, static_cast<int64_t>(v[at].Get()));
      } else {
        prom::Sample(&o, kind.name, labels, static_cast<double>(v[at].Get()) * kind.scale);
      }
    }
  }
}

// The lease client's part of /metrics (with leases.enabled).
void AppendLeaseMetrics(const Bidder::Impl& m, std::string& o) {
  char buf[256];
  auto line = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof buf, fmt, args...);
    o += buf;
  };
  o += "# HELP rtb_lease_day_ready Budget days whose every lease is answered and capped (bids "
       "can start at the day's first request).\n# TYPE rtb_lease_day_ready gauge\n";
  const auto [today, next] = m.leases->ReadyDays();
  for (const int64_t d : {today, next}) {
    if (d >= 0) line("rtb_lease_day_ready{day=\"%s\"} 1\n", BudgetDayName(d).c_str());
  }
  const LeaseClient::Health h = m.leases->GetHealth();
  o += "# HELP rtb_lease_frozen 1 when Kafka has taken no lease report for leases.ttl_ms: the "
       "bidder spends only what it has committed until one goes through.\n"
       "# TYPE rtb_lease_frozen gauge\n";
  line("rtb_lease_frozen %d\n", h.frozen ? 1 : 0);
  o += "# HELP rtb_lease_name_conflict 1 while another live process holds this bidder's "
       "leases.name: this one gets no lease (give each bidder its own name).\n"
       "# TYPE rtb_lease_name_conflict gauge\n";
  line("rtb_lease_name_conflict %d\n", h.name_conflict ? 1 : 0);
  o += "# HELP rtb_lease_report_age_seconds Since Kafka last took a lease report (or since the "
       "lease client started).\n"
       "# TYPE rtb_lease_report_age_seconds gauge\n";
  line("rtb_lease_report_age_seconds %.3f\n", static_cast<double>(h.report_age_ms) / 1000.0);
  o += "# HELP rtb_lease_messages_total Lease messages: asks sent, answers read, returns sent, "
       "reports Kafka took.\n"
       "# TYPE rtb_lease_messages_total counter\n";
  for (const auto& [kind, count] :
       {std::pair{"ask", h.asks}, std::pair{"answer", h.answers}, std::pair{"return", h.returns},
        std::pair{"report", h.reports}}) {
    line("rtb_lease_messages_total{kind=\"%s\"} %lld\n", kind, static_cast<long long>(count));
  }
  prom::Counter(&o, "rtb_lease_resyncs_total",
                "Times the lease client asked for every holding again after Kafka took no report "
                "for leases.ttl_ms.",
                h.resyncs);
  o += "# HELP rtb_lease_stale_holdings_total Holdings of a coordinator fenced off by a newer "
       "one (landed after its epoch marker on the grants topic): ignored.\n"
       "# TYPE rtb_lease_stale_holdings_total counter\n";
  line("rtb_lease_stale_holdings_total %lld\n", static_cast<long long>(h.stale));
  o += "# HELP rtb_lease_refused_total Records of the grants topic refused, by reason (a seal "
       "that does not open, an implausible epoch or day, a holding not newer than the last "
       "applied).\n"
       "# TYPE rtb_lease_refused_total counter\n";
  for (const auto& [reason, count] : h.refused) {
    line("rtb_lease_refused_total{reason=\"%s\"} %lld\n", reason.c_str(),
         static_cast<long long>(count));
  }
  o += "# HELP rtb_lease_held_micros What this bidder holds of each budget day's arm budget, "
       "as the grants topic last said (the first metrics_advertisers advertisers).\n"
       "# TYPE rtb_lease_held_micros gauge\n";
  const size_t advertisers = m.cfg.advertisers.size();
  for (const auto& [id, held] : h.held) {
    if (id.second >= 2 * advertisers) continue;  // ArmSlot's range
    const size_t k = id.second % advertisers;
    if (k >= static_cast<size_t>(m.cfg.metrics_advertisers)) continue;
    const Arm arm = id.second < advertisers ? Arm::kLearned : Arm::kManual;
    line("rtb_lease_held_micros{day=\"%s\",advertiser=\"%u\",arm=\"%s\"} %lld\n",
         BudgetDayName(id.first).c_str(), m.cfg.advertisers[k].id, ArmName(arm),
         static_cast<long long>(held));
  }
}
}  // namespace

HttpResult Bidder::Metrics() const {
  const Impl& m = *impl_;
  const BidderCounters& n = m.counters;
  std::string o;
  char buf[256];
  auto line = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof buf, fmt, args...);
    o += buf;
  };
  o += "# HELP rtb_requests_total Requests by endpoint.\n# TYPE rtb_requests_total counter\n";
  line("rtb_requests_total{endpoint=\"bid\"} %llu\n", (unsigned long long)n.requests_bid.Get());
  line("rtb_requests_total{endpoint=\"notice\"} %llu\n",
       (unsigned long long)n.requests_notice.Get());
  o += "# HELP rtb_bad_requests_total Malformed requests and notices (answered 400).\n"
       "# TYPE rtb_bad_requests_total counter\n";
  line("rtb_bad_requests_total %llu\n", (unsigned long long)n.bad_requests.Get());
  o += "# HELP rtb_bids_total Bids sent.\n# TYPE rtb_bids_total counter\n";
  line("rtb_bids_total %llu\n", (unsigned long long)n.bids.Get());
  o += "# HELP rtb_nobids_total No-bids by reason.\n# TYPE rtb_nobids_total counter\n";
  for (int r = 1; r < kNoBidReasons; ++r) {
    line("rtb_nobids_total{reason=\"%s\"} %llu\n", NoBidReasonName(static_cast<NoBidReason>(r)),
         (unsigned long long)n.nobid[r].Get());
  }
  o += n.latency.Render("rtb_bid_latency_seconds", "Bid request handling time (decode to encode).");
  o += "# HELP rtb_notices_total Notices by type and result.\n# TYPE rtb_notices_total counter\n";
  for (int t = 0; t < kNoticeTypes; ++t) {
    for (int r = 0; r < kNoticeResults; ++r) {
      line("rtb_notices_total{type=\"%s\",result=\"%s\"} %llu\n",
           NoticeTypeName(static_cast<NoticeType>(t)), kNoticeResultNames[r],
           (unsigned long long)n.notices[t][r].Get());
    }
  }
  // The current budget day's ledger: none before a simulated bidder's first request.
  if (const BudgetLedger* cur = m.days->Current(); cur != nullptr) {
    AppendBudgetMetrics(m.cfg, *cur, o);
  }
  AppendGoalMetrics(m.goals, o);
  o += m.events->Metrics();
  const PolicySnapshot* p = m.policy.Current();
  const int64_t now = m.clock->UnixMs();
  if (m.leases != nullptr) AppendLeaseMetrics(m, o);
  o += "# HELP rtb_policy_version Version of the action table in use (0 = none).\n"
       "# TYPE rtb_policy_version gauge\n";
  line("rtb_policy_version %llu\n", (unsigned long long)(p ? p->table.version : 0));
  o += "# HELP rtb_policy_age_seconds Age of the action table (-1 = none).\n"
       "# TYPE rtb_policy_age_seconds gauge\n";
  line("rtb_policy_age_seconds %.3f\n", p ? (now - Impl::BornMs(*p)) / 1000.0 : -1.0);
  o += "# HELP rtb_policy_fallback 1 when bidding manual bids (no policy, or too old).\n"
       "# TYPE rtb_policy_fallback gauge\n";
  line("rtb_policy_fallback %d\n", m.PolicyUsable(p, now) ? 0 : 1);
  o += "# HELP rtb_policy_rejected_total Policy messages refused: older than the one in use, "
       "invalid (not decodable, a field out of range, a version from the far future), or not "
       "sealed with the market's key ring (seal).\n"
       "# TYPE rtb_policy_rejected_total counter\n";
  line("rtb_policy_rejected_total{reason=\"older\"} %llu\n",
       (unsigned long long)m.policy.rejected());
  line("rtb_policy_rejected_total{reason=\"invalid\"} %llu\n",
       (unsigned long long)(m.feed ? m.feed->rejected_invalid() : 0));
  line("rtb_policy_rejected_total{reason=\"seal\"} %llu\n",
       (unsigned long long)(m.feed ? m.feed->rejected_seal() : 0));
  o += "# HELP rtb_fallback_requests_total Requests bid with manual bids for want of a policy.\n"
       "# TYPE rtb_fallback_requests_total counter\n";
  line("rtb_fallback_requests_total %llu\n", (unsigned long long)n.fallback_requests.Get());
  o += "# HELP rtb_kafka_bootstrap_info Where the events go (kcat -b).\n"
       "# TYPE rtb_kafka_bootstrap_info gauge\n";
  o +=
      "rtb_kafka_bootstrap_info{bootstrap=\"" + prom::LabelValue(m.events->bootstrap()) + "\"} 1\n";
  AppendBuildInfo(&o);
  prom::AppendProcessMetrics(&o);
  HttpResult r;
  r.content_type = prom::kContentType;
  r.body = std::move(o);
  return r;
}

}  // namespace rtb::bidder
