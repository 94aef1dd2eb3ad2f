// The budget-lease protocol at scale, in one process (docs/budget-leases.md): many bidders with
// skewed, bursty traffic share every advertiser's daily budget through the coordinator's ledger
// (budget/lease.h), with message latency, bidder crashes and restarts and a coordinator outage.
// Prints overspend, delivery, reclaims and the lease messages per second, against two
// baselines in the same run: every bidder holding the whole budget (what several `rtb serve`
// processes do without leases) and a static split of every budget over the bidders.
//
//   build/release/bench/lease_sim [--bidders 100] [--advertisers 40] [--seed 1] ...
//
// A fluid model: each second every bidder has some money it would spend on each advertiser
// (its demand: its traffic share x the advertiser's rate x the hour x its bursts); it reserves
// what its lease allows, and a reservation settles two seconds later as spend (won: half of
// it, by value) or is released (lost). Deterministic for a seed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "rtb/budget/lease.h"
#include "rtb/core/rng.h"

namespace {

struct Args {
  int bidders = 100;
  int advertisers = 40;
  int seconds = 86'400;
  uint64_t seed = 1;
  double demand_over_budget = 1.6;  // a day's demand / budget: budgets bind
  double skew = 1.1;                // Zipf exponent of the bidders' traffic shares
  int latency_s = 1;                // one way, bidder <-> coordinator (Kafka)
  int horizon_s = 60;               // a lease covers this long at the recent spend rate
  int report_every_s = 5;           // spend/reservation reports (and heartbeats)
  int crashes = 5;                  // bidders SIGKILLed at random times
  int restart_after_s = 120;        // ... and restarted this much later
  int outage_at_s = 43'200;         // the coordinator down for outage_s from here
  int outage_s = 30;
  int lease_ttl_s = 45;      // no answer from the coordinator this long: stop spending
  int empty_backoff_s = 60;  // an empty grant (budget used up): ask again after this
  // Lease sizing (budget/lease.h): rate (each bidder asks for a horizon of its spend rate) or
  // share (the coordinator keeps each bidder at its traffic share of what is left).
  rtb::budget::LeaseSizing sizing = rtb::budget::LeaseSizing::kShare;
};

int64_t Micros(double x) { return static_cast<int64_t>(std::llround(x)); }

double Hour(int t) {  // diurnal traffic, peak in the evening
  const double h = (t % 86'400) / 3600.0;
  return 0.35 + 0.65 * std::pow(std::sin(3.14159265 * std::clamp((h - 5.0) / 19.0, 0.0, 1.0)), 2);
}

struct Result {
  double max_overspend_pct = 0, min_cost_pct = 1e9, median_cost_pct = 0, mean_cost_pct = 0;
  int64_t messages = 0, peak_messages_s = 0, reclaims = 0;
  double billing_refused_pct = 0;
};

enum class Mode { kLeases, kWholeBudgetEach, kStaticSplit };

Result Run(const Args& a, Mode mode) {
  const int B = a.bidders, K = a.advertisers;
  rtb::Rng rng(a.seed);
  // Bidder traffic shares (Zipf), advertiser budgets (log-normal), bursts.
  std::vector<double> share(static_cast<size_t>(B));
  double zs = 0;
  for (int b = 0; b < B; ++b) zs += share[static_cast<size_t>(b)] = 1.0 / std::pow(b + 1, a.skew);
  for (double& s : share) s /= zs;
  std::vector<int64_t> budget(static_cast<size_t>(K));
  double hour_sum = 0;
  for (int t = 0; t < a.seconds; ++t) hour_sum += Hour(t);
  std::vector<double> rate(static_cast<size_t>(K));  // demand micros per second at Hour() = 1
  for (int k = 0; k < K; ++k) {
    budget[static_cast<size_t>(k)] = Micros(rng.LogNormal(std::log(500e6), 1.0));  // ~500 / day
    rate[static_cast<size_t>(k)] =
        a.demand_over_budget * static_cast<double>(budget[static_cast<size_t>(k)]) / hour_sum;
  }
  rtb::budget::LeaseConfig lc;
  lc.heartbeat_timeout_ms = 60'000;
  lc.billing_window_ms = 60'000;
  lc.min_grant_micros = 10'000;
  lc.sizing = a.sizing;
  const bool share_sizing = a.sizing == rtb::budget::LeaseSizing::kShare;
  rtb::budget::LeaseLedger ledger(lc);
  for (int k = 0; k < K; ++k) {
    ledger.SetBudget({0, static_cast<uint32_t>(k), 0}, rtb::Micros(budget[static_cast<size_t>(k)]));
  }
  // Per (bidder, advertiser): what the bidder believes it holds, its spend, its reservations.
  struct Cell {
    int64_t held = 0, spent = 0, reserved = 0;
    double rate = 0;  // EWMA of reserve per second
    bool asked = false;
    int next_ask = 0;  // after an empty answer (the budget is used up), ask again no sooner
  };
  std::vector<Cell> cell(static_cast<size_t>(B * K));
  struct Pending {  // a reservation settling at `at`
    int at, b, k;
    int64_t amount, win;
  };
  std::deque<Pending> pend;
  struct Msg {  // a lease request in flight, and its answer (or a holding the coordinator pushed)
    int at, b, k;
    int64_t want;
    bool answer;
    int64_t grant;
    int64_t recall = 0;  // share sizing: asked back
  };
  std::deque<Msg> msgs;
  std::vector<Msg> pushed;  // holdings published while msgs is being walked
  std::vector<int> dead_until(static_cast<size_t>(B), -1), last_answer(static_cast<size_t>(B), 0);
  std::vector<int> crash_at;
  for (int c = 0; c < a.crashes; ++c) {
    crash_at.push_back(static_cast<int>(rng.UniformInt(static_cast<uint64_t>(a.seconds - 600))));
  }
  std::vector<int> burst_until(static_cast<size_t>(B), -1);
  std::vector<double> requests(static_cast<size_t>(B), 0);  // each bidder's bid requests so far
  std::vector<int64_t> spent_total(static_cast<size_t>(K), 0);
  int64_t refused = 0, billed = 0;
  Result res;
  int64_t messages_this_s = 0;
  // The holdings a Rebalance changed, published to their bidders (they arrive a latency later).
  auto publish = [&](auto& out, const std::vector<rtb::budget::LeaseLedger::Move>& moves, int t,
                     int k) {
    for (const auto& mv : moves) {
      const int o = std::stoi(mv.bidder.substr(7));  // "bidder-<index>"
      out.push_back({t + a.latency_s, o, k, 0, true, mv.grant, mv.recall});
      ++messages_this_s;
    }
  };
  std::vector<std::string> name(static_cast<size_t>(B), "bidder-");
  for (int b = 0; b < B; ++b) name[static_cast<size_t>(b)] += std::to_string(b);
  const uint32_t day_key = 0;
  for (int t = 0; t < a.seconds; ++t) {
    const bool coordinator_up = !(t >= a.outage_at_s && t < a.outage_at_s + a.outage_s);
    messages_this_s = 0;
    // Crashes: the bidder's memory (lease view, reservations) is gone; spend is persisted.
    for (int c : crash_at) {
      if (c != t) continue;
      const int b = static_cast<int>(rng.UniformInt(static_cast<uint64_t>(B)));
      dead_until[static_cast<size_t>(b)] = t + a.restart_after_s;
      requests[static_cast<size_t>(b)] = 0;  // the new process counts from 0
      for (int k = 0; k < K; ++k) {
        Cell& x = cell[static_cast<size_t>(b * K + k)];
        x.held = 0;
        x.reserved = 0;
        x.asked = false;
      }
    }
    // Settle reservations: won money is billed (the notice may reach another bidder, which
    // books it inside its own lease, or refuses it when that lease is used up).
    while (!pend.empty() && pend.front().at <= t) {
      Pending p = pend.front();
      pend.pop_front();
      Cell& x = cell[static_cast<size_t>(p.b * K + p.k)];
      const bool alive = dead_until[static_cast<size_t>(p.b)] < t;
      if (alive) {
        x.reserved -= p.amount;
        x.spent += p.win;
        spent_total[static_cast<size_t>(p.k)] += p.win;
        billed += p.win;
      } else if (p.win > 0) {
        const int o = static_cast<int>(rng.UniformInt(static_cast<uint64_t>(B)));
        Cell& y = cell[static_cast<size_t>(o * K + p.k)];
        const bool room = mode != Mode::kLeases || y.held - y.spent - y.reserved >= p.win;
        if (dead_until[static_cast<size_t>(o)] < t && room) {
          y.spent += p.win;
          spent_total[static_cast<size_t>(p.k)] += p.win;
          billed += p.win;
        } else {
          refused += p.win;
        }
      }
    }
    // Lease answers arrive; the coordinator takes requests that reach it.
    if (mode == Mode::kLeases) {
      for (auto it = msgs.begin(); it != msgs.end();) {
        if (it->at > t) {
          ++it;
          continue;
        }
        const rtb::budget::LeaseKey key{day_key, static_cast<uint32_t>(it->k), 0};
        if (!it->answer) {
          if (!coordinator_up) {
            ++it;
            continue;  // waits in its topic
          }
          const int64_t g =
              ledger.Request(name[static_cast<size_t>(it->b)], key, it->want, int64_t{t} * 1000);
          ++messages_this_s;
          it->answer = true;
          it->grant = g;
          it->at = t + a.latency_s;
          ++it;
          continue;
        }
        Cell& x = cell[static_cast<size_t>(it->b * K + it->k)];
        if (dead_until[static_cast<size_t>(it->b)] < t) {
          // The answer carries the bidder's whole holding: its lease is what the ledger says.
          x.held = ledger.Held(name[static_cast<size_t>(it->b)], key);
          last_answer[static_cast<size_t>(it->b)] = t;
          if (it->grant == 0 && it->recall == 0 && !share_sizing)
            x.next_ask = t + a.empty_backoff_s;
          if (it->recall > 0 && coordinator_up) {  // gives back what it does not need soon
            const int64_t keep = Micros(x.rate * (a.report_every_s + 2 * a.latency_s));
            const int64_t back = std::min(it->recall, x.held - x.spent - x.reserved - keep);
            if (back > 0) {
              x.held -=
                  ledger.Return(name[static_cast<size_t>(it->b)], key, back, int64_t{t} * 1000);
              messages_this_s += 2;
              // What came back goes on.
              publish(pushed, ledger.Rebalance(key, int64_t{t} * 1000), t, it->k);
            }
          }
        }
        x.asked = false;
        ++messages_this_s;
        it = msgs.erase(it);
      }
      msgs.insert(msgs.end(), pushed.begin(), pushed.end());
      pushed.clear();
      if (coordinator_up) res.reclaims += ledger.Reclaim(int64_t{t} * 1000);
    }
    for (int b = 0; b < B; ++b) {
      if (dead_until[static_cast<size_t>(b)] >= t) continue;
      if (dead_until[static_cast<size_t>(b)] == t - 1) last_answer[static_cast<size_t>(b)] = t;
      if (burst_until[static_cast<size_t>(b)] < t && rng.Uniform() < 1.0 / 3600) {
        burst_until[static_cast<size_t>(b)] = t + 300;  // a 5-minute burst, 4x
      }
      const double burst = burst_until[static_cast<size_t>(b)] >= t ? 4.0 : 1.0;
      const bool fresh = t - last_answer[static_cast<size_t>(b)] <= a.lease_ttl_s;
      const bool report =
          mode == Mode::kLeases && coordinator_up && t % a.report_every_s == b % a.report_every_s;
      requests[static_cast<size_t>(b)] += 1000.0 * share[static_cast<size_t>(b)] * Hour(t) * burst;
      if (report) {
        ++messages_this_s;  // one message with every advertiser's spend; its ack renews the TTL
        last_answer[static_cast<size_t>(b)] = t;
        if (share_sizing) {
          ledger.Traffic(name[static_cast<size_t>(b)],
                         static_cast<int64_t>(requests[static_cast<size_t>(b)]), int64_t{t} * 1000);
        }
      }
      for (int k = 0; k < K; ++k) {
        Cell& x = cell[static_cast<size_t>(b * K + k)];
        const rtb::budget::LeaseKey key{day_key, static_cast<uint32_t>(k), 0};
        if (report) {
          ledger.Report(name[static_cast<size_t>(b)], key, x.spent, x.reserved, int64_t{t} * 1000);
          if (x.asked == false && x.held == 0 && x.spent > 0) {
            x.held = ledger.Held(name[static_cast<size_t>(b)], key);  // after a restart
          }
          // Share sizing: the coordinator tops up or asks back; its holdings arrive later.
          publish(msgs, ledger.Rebalance(key, int64_t{t} * 1000, &name[static_cast<size_t>(b)]), t,
                  k);
        }
        // This second's demand: 2x the money it would win (half the reserved value wins).
        const double want = 2.0 * rate[static_cast<size_t>(k)] * share[static_cast<size_t>(b)] *
                            Hour(t) * burst * rng.LogNormal(0.0, 0.5);
        int64_t room = 0;
        if (mode == Mode::kLeases) {
          room = fresh ? std::max<int64_t>(0, x.held - x.spent - x.reserved) : 0;
        } else {
          const int64_t limit = mode == Mode::kWholeBudgetEach ? budget[static_cast<size_t>(k)]
                                                               : budget[static_cast<size_t>(k)] / B;
          room = std::max<int64_t>(0, limit - x.spent - x.reserved);
        }
        const int64_t r = std::min(room, Micros(want));
        const bool blocked = Micros(want) > room;
        if (r > 0) {
          x.reserved += r;
          const int64_t win = r / 2;
          pend.push_back({t + 2, b, k, r, win});
        }
        x.rate = 0.9 * x.rate + 0.1 * want;
        if (mode != Mode::kLeases || x.asked || t < x.next_ask) continue;
        const int64_t unspent = x.held - x.spent - x.reserved;
        if (share_sizing) {  // asks only when its lease held it back (then for that much)
          if (blocked && x.held == 0) {
            msgs.push_back({t + a.latency_s, b, k, Micros(want) - room, false, 0});
            x.asked = true;
            ++messages_this_s;
          }
          continue;
        }
        const int64_t need = rtb::budget::LeaseWant(x.rate, int64_t{a.horizon_s} * 1000,
                                                    lc.min_grant_micros, unspent);
        if (unspent < Micros(x.rate * a.horizon_s / 2.0) && need > 0) {
          msgs.push_back({t + a.latency_s, b, k, need, false, 0});
          x.asked = true;
          ++messages_this_s;
        } else if (unspent > Micros(4.0 * x.rate * a.horizon_s) + lc.min_grant_micros) {
          const int64_t back = unspent - Micros(x.rate * a.horizon_s);
          if (coordinator_up) {
            x.held -= ledger.Return(name[static_cast<size_t>(b)], key, back, int64_t{t} * 1000);
            messages_this_s += 2;
          }
        }
      }
    }
    res.messages += messages_this_s;
    res.peak_messages_s = std::max(res.peak_messages_s, messages_this_s);
  }
  // Settle what is still pending at the end of the day.
  for (const Pending& p : pend) {
    spent_total[static_cast<size_t>(p.k)] += p.win;
    billed += p.win;
  }
  std::vector<double> cost;
  for (int k = 0; k < K; ++k) {
    const double c = 100.0 * static_cast<double>(spent_total[static_cast<size_t>(k)]) /
                     static_cast<double>(budget[static_cast<size_t>(k)]);
    cost.push_back(c);
    res.max_overspend_pct = std::max(res.max_overspend_pct, c - 100.0);
  }
  std::sort(cost.begin(), cost.end());
  res.min_cost_pct = cost.front();
  res.median_cost_pct = cost[cost.size() / 2];
  double sum = 0;
  for (double c : cost) sum += c;
  res.mean_cost_pct = sum / static_cast<double>(cost.size());
  res.billing_refused_pct = 100.0 * static_cast<double>(refused) /
                            static_cast<double>(std::max<int64_t>(1, billed + refused));
  return res;
}

int Flag(int argc, char** argv, const char* name, int def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == name) return std::atoi(argv[i + 1]);
  }
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--help" || f == "-h") {
      std::printf(
          "lease_sim [--bidders N] [--advertisers K] [--seed S] [--crashes C] [--outage-s S] "
          "[--latency-s S] [--horizon-s S] [--sizing share|rate]\n");
      return 0;
    }
  }
  a.bidders = Flag(argc, argv, "--bidders", a.bidders);
  a.advertisers = Flag(argc, argv, "--advertisers", a.advertisers);
  a.seed = static_cast<uint64_t>(Flag(argc, argv, "--seed", static_cast<int>(a.seed)));
  a.crashes = Flag(argc, argv, "--crashes", a.crashes);
  a.outage_s = Flag(argc, argv, "--outage-s", a.outage_s);
  a.latency_s = Flag(argc, argv, "--latency-s", a.latency_s);
  a.horizon_s = Flag(argc, argv, "--horizon-s", a.horizon_s);
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) != "--sizing") continue;
    const std::optional<rtb::budget::LeaseSizing> v = rtb::budget::LeaseSizingNamed(argv[i + 1]);
    if (!v) {
      std::fprintf(stderr, "lease_sim: error: --sizing must be share or rate\n");
      return 1;
    }
    a.sizing = *v;
  }
  if (a.bidders < 1 || a.advertisers < 1 || a.latency_s < 0 || a.horizon_s < 1) {
    std::fprintf(stderr, "lease_sim: error: bidders, advertisers, horizon >= 1, latency >= 0\n");
    return 1;
  }
  std::printf(
      "%d bidders (Zipf %.1f traffic, 5-minute 4x bursts), %d advertisers, one day of 1 s ticks, "
      "demand %.1fx budget, message latency %d s each way, %s sizing (lease horizon %d s), %d "
      "crashes (restart after %d s), coordinator down %d s at noon, seed %llu\n",
      a.bidders, a.skew, a.advertisers, a.demand_over_budget, a.latency_s,
      rtb::budget::LeaseSizingName(a.sizing), a.horizon_s, a.crashes, a.restart_after_s, a.outage_s,
      static_cast<unsigned long long>(a.seed));
  std::printf(
      "| mode | max overspend | COST min / median / mean | lease messages (peak /s) | "
      "reclaims | billing refused |\n|---|---:|---:|---:|---:|---:|\n");
  const struct {
    Mode mode;
    const char* name;
  } modes[] = {{Mode::kLeases, "leases"},
               {Mode::kWholeBudgetEach, "each bidder holds the whole budget"},
               {Mode::kStaticSplit, "static split (budget / bidders)"}};
  for (const auto& m : modes) {
    const Result r = Run(a, m.mode);
    std::printf("| %s | %.3f%% | %.1f / %.1f / %.1f%% | %lld (%lld) | %lld | %.2f%% |\n", m.name,
                std::max(0.0, r.max_overspend_pct), r.min_cost_pct, r.median_cost_pct,
                r.mean_cost_pct, static_cast<long long>(r.messages),
                static_cast<long long>(r.peak_messages_s), static_cast<long long>(r.reclaims),
                r.billing_refused_pct);
    std::fflush(stdout);
  }
  return 0;
}
