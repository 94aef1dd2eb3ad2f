// `rtb budget`'s /metrics page: the coordinator's part (Prometheus text format 0.0.4). The
// command adds the build and process families.
#include <utility>
#include <vector>

#include "rtb/budget/coordinator.h"
#include "rtb/core/admin_server.h"
#include "rtb/core/clock.h"
#include "rtb/core/prometheus.h"

namespace rtb::budget {

std::string Coordinator::Metrics() const {
  const Counters c = counters();
  std::string o;
  static constexpr struct {
    const char* name;
    const char* help;
    int64_t Counters::*value;
  } kCounters[] = {
      {"rtb_coordinator_messages_total", "Messages read from the requests topic.",
       &Counters::messages},
      {"rtb_coordinator_malformed_messages_total",
       "Of them, not decodable (at start: records of the grants topic too).", &Counters::malformed},
      {"rtb_coordinator_unknown_budget_messages_total",
       "Of them, naming a budget the market does not have.", &Counters::unknown_budget},
      {"rtb_coordinator_budget_items_total",
       "Budget items of the messages read (a report carries one per slot).", &Counters::items},
      {"rtb_coordinator_holdings_published_total", "Holdings published on the grants topic.",
       &Counters::grants_published},
      {"rtb_coordinator_reclaims_total",
       "Leases of bidders found dead returned to their budget's pool.", &Counters::reclaims},
      {"rtb_coordinator_late_messages_total",
       "Messages reclaimed bidders sent before they died, read after (applied; the bidder stays "
       "dead).",
       &Counters::late_from_dead},
      {"rtb_coordinator_name_conflicts_total",
       "Messages of a second live process under a bidder name another process holds: refused.",
       &Counters::refused},
      {"rtb_coordinator_fences_total",
       "Times it granted nothing for want of its own beat read back (fenced itself).",
       &Counters::fences},
      {"rtb_coordinator_turns_total", "Turns of the serving loop.", &Counters::turns},
      {"rtb_coordinator_forgotten_budgets_total",
       "Budgets of days behind the window forgotten (its state stays a window of days).",
       &Counters::days_forgotten},
  };
  for (const auto& k : kCounters) prom::Counter(&o, k.name, k.help, c.*k.value);
  prom::Family(&o, "rtb_coordinator_refused_total", "counter",
               "Messages and grants-topic records refused as not authentic or not plausible, by "
               "reason (unsealed, unknown_key, bad_mac, no_instance, day, amount, seq, replay, "
               "requests, epoch_jump, epoch_above).");
  for (const auto& [reason, n] : c.refusals) {
    prom::Sample(&o, "rtb_coordinator_refused_total", "reason=\"" + prom::LabelValue(reason) + "\"",
                 n);
  }
  prom::Gauge(&o, "rtb_coordinator_epoch", "This coordinator's epoch on the grants topic.",
              c.epoch);
  prom::Gauge(&o, "rtb_coordinator_serving",
              "1 while it serves the market; 0 once it handed it over to a newer coordinator.",
              c.handed_over_to.empty() ? int64_t{1} : int64_t{0});
  prom::Gauge(&o, "rtb_coordinator_last_turn_timestamp_seconds",
              "When the serving loop last finished a turn (Unix seconds; 0 before the first).",
              prom::UnixSeconds(c.last_turn_ms));
  const LeaseLedger& ledger = this->ledger();
  prom::Gauge(&o, "rtb_coordinator_live_bidders",
              "Bidders heard from within the heartbeat timeout.",
              static_cast<int64_t>(ledger.TrafficShares().size()));
  // The two newest budget days (today and tomorrow, which the bidders lease ahead), by day.
  std::vector<int64_t> days = ledger.Days();
  if (days.size() > 2) days.erase(days.begin(), days.end() - 2);
  std::vector<std::pair<std::string, LeaseLedger::Totals>> totals;
  std::vector<int> counts;
  for (const int64_t d : days) {
    int n = 0;
    totals.emplace_back("day=\"" + BudgetDayName(d) + "\"", ledger.OfDay(d, &n));
    counts.push_back(n);
  }
  static constexpr struct {
    const char* name;
    const char* help;
    int64_t LeaseLedger::Totals::*value;
  } kMoney[] = {
      {"rtb_coordinator_budget_micros", "The day's budgets (advertiser x A/B arm), summed.",
       &LeaseLedger::Totals::budget},
      {"rtb_coordinator_held_micros",
       "What the bidders hold of them (granted less returned and reclaimed), summed.",
       &LeaseLedger::Totals::held},
      {"rtb_coordinator_spent_micros", "What the bidders reported spent, summed.",
       &LeaseLedger::Totals::spent},
      {"rtb_coordinator_overspent_budgets",
       "Budgets whose reported spend is past the budget: 0 unless a bidder spent past its "
       "lease.",
       &LeaseLedger::Totals::overspent},
      {"rtb_coordinator_overspend_micros", "What those budgets spent past their budget, summed.",
       &LeaseLedger::Totals::overspend},
  };
  prom::Family(&o, "rtb_coordinator_budgets", "gauge",
               "Budgets of the two newest budget days, by day (UTC date, or sim-<n>).");
  for (size_t i = 0; i < totals.size(); ++i) {
    prom::Sample(&o, "rtb_coordinator_budgets", totals[i].first, int64_t{counts[i]});
  }
  for (const auto& k : kMoney) {
    prom::Family(&o, k.name, "gauge", k.help);
    for (const auto& [labels, t] : totals) prom::Sample(&o, k.name, labels, t.*k.value);
  }
  return o;
}

std::string Unhealthy(const Coordinator& c, int64_t now_ms) {
  return LoopStalled("coordinator's loop", c.counters().last_turn_ms, now_ms, 30'000);
}

}  // namespace rtb::budget
