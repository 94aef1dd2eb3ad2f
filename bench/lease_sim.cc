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

rtb::budget::LeaseKey KeyOf(int k) { return {0, static_cast<uint32_t>(k), 0}; }  // the day's key
int64_t NowMs(int t) { return int64_t{t} * 1000; }

rtb::budget::LeaseConfig LeaseConfigFor(const Args& a) {
  rtb::budget::LeaseConfig lc;
  lc.heartbeat_timeout_ms = 60'000;
  lc.billing_window_ms = 60'000;
  lc.min_grant_micros = 10'000;
  lc.sizing = a.sizing;
  return lc;
}

// One day in one mode. Run walks it second by second, calling the phases of a second in order:
// crashes, settling reservations, the coordinator's messages and answers, each bidder's second of
// demand and asks; then the end-of-day summary.
class Sim {
 public:
  Sim(const Args& a, Mode mode);

  // Crashes: the bidder's memory (lease view, reservations) is gone; spend is persisted.
  void Crashes(int t);
  // Settle reservations: won money is billed (the notice may reach another bidder, which
  // books it inside its own lease, or refuses it when that lease is used up).
  void SettleReservations(int t);
  // Lease answers arrive; the coordinator takes requests that reach it. Leases only.
  void CoordinatorMessages(int t);
  // Bidder b's second: its traffic, its report, then its demand and asks for every advertiser.
  void BidderSecond(int b, int t);
  // Adds this second's lease messages to the totals.
  void CountMessages();
  // Settles what is still pending and sums the day up.
  Result EndOfDay();

 private:
  // Per (bidder, advertiser): what the bidder believes it holds, its spend, its reservations.
  struct Cell {
    int64_t held = 0, spent = 0, reserved = 0;
    double rate = 0;  // EWMA of reserve per second
    bool asked = false;
    int next_ask = 0;  // after an empty answer (the budget is used up), ask again no sooner
  };
  struct Pending {  // a reservation settling at `at`
    int at, b, k;
    int64_t amount, win;
  };
  struct Msg {  // a lease request in flight, and its answer (or a holding the coordinator pushed)
    int at, b, k;
    int64_t want;
    bool answer;
    int64_t grant;
    int64_t recall = 0;  // share sizing: asked back
  };
  struct Bidder {
    std::string name;
    double share = 0;  // of the traffic (Zipf)
    int dead_until = -1, last_answer = 0, burst_until = -1;
    double requests = 0;  // its bid requests so far
  };
  struct Advertiser {
    int64_t budget = 0;  // log-normal
    double rate = 0;     // demand micros per second at Hour() = 1
    int64_t spent = 0;
  };

  bool CoordinatorUp(int t) const {
    return !(t >= a_.outage_at_s && t < a_.outage_at_s + a_.outage_s);
  }
  bool Alive(int b, int t) const { return bidders_[static_cast<size_t>(b)].dead_until < t; }
  Cell& CellOf(int b, int k) { return cell_[static_cast<size_t>(b * a_.advertisers + k)]; }
  void Bill(int k, int64_t win);  // won money billed to advertiser k
  void TakeRequest(Msg& m, int t);
  void ReceiveAnswer(const Msg& m, int t);
  void ReportSpend(int b, int k, int t);
  // Reserves what the lease (or the baseline's limit) allows of this second's demand; then, with
  // leases, asks for more or gives back.
  void Demand(int b, int k, int t, double burst, bool fresh);
  int64_t Room(int b, int k, bool fresh);
  void AskOrGiveBack(int b, int k, int t, double want, int64_t room);
  // A lease request for `want` more, reaching the coordinator a latency later.
  void Ask(int b, int k, int t, int64_t want);
  // Returns `back` to the coordinator (a message and its ack).
  void GiveBack(int b, int k, int t, int64_t back);
  // The holdings a Rebalance changed, published to their bidders (they arrive a latency later).
  template <typename Out>
  void Publish(Out& out, const std::vector<rtb::budget::LeaseLedger::Move>& moves, int t, int k);

  const Args a_;
  const Mode mode_;
  const bool share_sizing_;
  const rtb::budget::LeaseConfig lc_;
  rtb::Rng rng_;
  rtb::budget::LeaseLedger ledger_;
  std::vector<Bidder> bidders_;
  std::vector<Advertiser> advertisers_;
  std::vector<Cell> cell_;
  std::deque<Pending> pend_;
  std::deque<Msg> msgs_;
  std::vector<Msg> pushed_;  // holdings published while msgs_ is being walked
  std::vector<int> crash_at_;
  int64_t refused_ = 0, billed_ = 0;
  int64_t messages_this_s_ = 0;
  Result res_;
};

Sim::Sim(const Args& a, Mode mode)
    : a_(a),
      mode_(mode),
      share_sizing_(a.sizing == rtb::budget::LeaseSizing::kShare),
      lc_(LeaseConfigFor(a)),
      rng_(a.seed),
      ledger_(lc_),
      bidders_(static_cast<size_t>(a.bidders)),
      advertisers_(static_cast<size_t>(a.advertisers)),
      cell_(static_cast<size_t>(a.bidders * a.advertisers)) {
  // Bidder traffic shares (Zipf), advertiser budgets (log-normal), bursts.
  double zs = 0;
  for (int b = 0; b < a.bidders; ++b) {
    Bidder& d = bidders_[static_cast<size_t>(b)];
    zs += d.share = 1.0 / std::pow(b + 1, a.skew);
    d.name = "bidder-" + std::to_string(b);
  }
  for (Bidder& d : bidders_) d.share /= zs;
  double hour_sum = 0;
  for (int t = 0; t < a.seconds; ++t) hour_sum += Hour(t);
  for (int k = 0; k < a.advertisers; ++k) {
    Advertiser& ad = advertisers_[static_cast<size_t>(k)];
    ad.budget = Micros(rng_.LogNormal(std::log(500e6), 1.0));  // ~500 / day
    ad.rate = a.demand_over_budget * static_cast<double>(ad.budget) / hour_sum;
    ledger_.SetBudget(KeyOf(k), rtb::Micros(ad.budget));
  }
  for (int c = 0; c < a.crashes; ++c) {
    crash_at_.push_back(static_cast<int>(rng_.UniformInt(static_cast<uint64_t>(a.seconds - 600))));
  }
}

void Sim::Crashes(int t) {
  for (int c : crash_at_) {
    if (c != t) continue;
    const int b = static_cast<int>(rng_.UniformInt(static_cast<uint64_t>(a_.bidders)));
    Bidder& d = bidders_[static_cast<size_t>(b)];
    d.dead_until = t + a_.restart_after_s;
    d.requests = 0;  // the new process counts from 0
    for (int k = 0; k < a_.advertisers; ++k) {
      Cell& x = CellOf(b, k);
      x.held = 0;
      x.reserved = 0;
      x.asked = false;
    }
  }
}

void Sim::Bill(int k, int64_t win) {
  advertisers_[static_cast<size_t>(k)].spent += win;
  billed_ += win;
}

void Sim::SettleReservations(int t) {
  while (!pend_.empty() && pend_.front().at <= t) {
    Pending p = pend_.front();
    pend_.pop_front();
    Cell& x = CellOf(p.b, p.k);
    if (Alive(p.b, t)) {
      x.reserved -= p.amount;
      x.spent += p.win;
      Bill(p.k, p.win);
    } else if (p.win > 0) {
      const int o = static_cast<int>(rng_.UniformInt(static_cast<uint64_t>(a_.bidders)));
      Cell& y = CellOf(o, p.k);
      const bool room = mode_ != Mode::kLeases || y.held - y.spent - y.reserved >= p.win;
      if (Alive(o, t) && room) {
        y.spent += p.win;
        Bill(p.k, p.win);
      } else {
        refused_ += p.win;
      }
    }
  }
}

template <typename Out>
void Sim::Publish(Out& out, const std::vector<rtb::budget::LeaseLedger::Move>& moves, int t,
                  int k) {
  for (const auto& mv : moves) {
    const int o = std::stoi(mv.bidder.substr(7));  // "bidder-<index>"
    out.push_back({t + a_.latency_s, o, k, 0, true, mv.grant, mv.recall});
    ++messages_this_s_;
  }
}

void Sim::CoordinatorMessages(int t) {
  for (auto it = msgs_.begin(); it != msgs_.end();) {
    if (it->at > t) {
      ++it;
      continue;
    }
    if (!it->answer) {
      if (CoordinatorUp(t)) TakeRequest(*it, t);  // else it waits in its topic
      ++it;
      continue;
    }
    ReceiveAnswer(*it, t);
    it = msgs_.erase(it);
  }
  msgs_.insert(msgs_.end(), pushed_.begin(), pushed_.end());
  pushed_.clear();
  if (CoordinatorUp(t)) res_.reclaims += ledger_.Reclaim(NowMs(t));
}

// The coordinator answers a request; the answer reaches the bidder a latency later.
void Sim::TakeRequest(Msg& m, int t) {
  const std::string& name = bidders_[static_cast<size_t>(m.b)].name;
  const int64_t g = ledger_.Request(name, KeyOf(m.k), m.want, NowMs(t));
  ++messages_this_s_;
  m.answer = true;
  m.grant = g;
  m.at = t + a_.latency_s;
}

void Sim::ReceiveAnswer(const Msg& m, int t) {
  Cell& x = CellOf(m.b, m.k);
  Bidder& d = bidders_[static_cast<size_t>(m.b)];
  if (Alive(m.b, t)) {
    // The answer carries the bidder's whole holding: its lease is what the ledger says.
    x.held = ledger_.Held(d.name, KeyOf(m.k));
    d.last_answer = t;
    if (m.grant == 0 && m.recall == 0 && !share_sizing_) x.next_ask = t + a_.empty_backoff_s;
    if (m.recall > 0 && CoordinatorUp(t)) {  // gives back what it does not need soon
      const int64_t keep = Micros(x.rate * (a_.report_every_s + 2 * a_.latency_s));
      const int64_t back = std::min(m.recall, x.held - x.spent - x.reserved - keep);
      if (back > 0) {
        GiveBack(m.b, m.k, t, back);
        // What came back goes on.
        Publish(pushed_, ledger_.Rebalance(KeyOf(m.k), NowMs(t)), t, m.k);
      }
    }
  }
  x.asked = false;
  ++messages_this_s_;
}

void Sim::BidderSecond(int b, int t) {
  Bidder& d = bidders_[static_cast<size_t>(b)];
  if (d.dead_until >= t) return;
  if (d.dead_until == t - 1) d.last_answer = t;
  if (d.burst_until < t && rng_.Uniform() < 1.0 / 3600) {
    d.burst_until = t + 300;  // a 5-minute burst, 4x
  }
  const double burst = d.burst_until >= t ? 4.0 : 1.0;
  const bool fresh = t - d.last_answer <= a_.lease_ttl_s;
  const bool report =
      mode_ == Mode::kLeases && CoordinatorUp(t) && t % a_.report_every_s == b % a_.report_every_s;
  d.requests += 1000.0 * d.share * Hour(t) * burst;
  if (report) {
    ++messages_this_s_;  // one message with every advertiser's spend; its ack renews the TTL
    d.last_answer = t;
    if (share_sizing_) ledger_.Traffic(d.name, static_cast<int64_t>(d.requests), NowMs(t));
  }
  for (int k = 0; k < a_.advertisers; ++k) {
    if (report) ReportSpend(b, k, t);
    Demand(b, k, t, burst, fresh);
  }
}

void Sim::ReportSpend(int b, int k, int t) {
  Cell& x = CellOf(b, k);
  const std::string& name = bidders_[static_cast<size_t>(b)].name;
  ledger_.Report(name, KeyOf(k), x.spent, x.reserved, NowMs(t));
  if (x.asked == false && x.held == 0 && x.spent > 0) {
    x.held = ledger_.Held(name, KeyOf(k));  // after a restart
  }
  // Share sizing: the coordinator tops up or asks back; its holdings arrive later.
  Publish(msgs_, ledger_.Rebalance(KeyOf(k), NowMs(t), &name), t, k);
}

// What bidder b may still reserve for advertiser k.
int64_t Sim::Room(int b, int k, bool fresh) {
  const Cell& x = CellOf(b, k);
  if (mode_ == Mode::kLeases)
    return fresh ? std::max<int64_t>(0, x.held - x.spent - x.reserved) : 0;
  const int64_t budget = advertisers_[static_cast<size_t>(k)].budget;
  const int64_t limit = mode_ == Mode::kWholeBudgetEach ? budget : budget / a_.bidders;
  return std::max<int64_t>(0, limit - x.spent - x.reserved);
}

void Sim::Demand(int b, int k, int t, double burst, bool fresh) {
  Cell& x = CellOf(b, k);
  // This second's demand: 2x the money it would win (half the reserved value wins).
  const double want = 2.0 * advertisers_[static_cast<size_t>(k)].rate *
                      bidders_[static_cast<size_t>(b)].share * Hour(t) * burst *
                      rng_.LogNormal(0.0, 0.5);
  const int64_t room = Room(b, k, fresh);
  const int64_t r = std::min(room, Micros(want));
  if (r > 0) {
    x.reserved += r;
    const int64_t win = r / 2;
    pend_.push_back({t + 2, b, k, r, win});
  }
  x.rate = 0.9 * x.rate + 0.1 * want;
  if (mode_ != Mode::kLeases || x.asked || t < x.next_ask) return;
  AskOrGiveBack(b, k, t, want, room);
}

void Sim::AskOrGiveBack(int b, int k, int t, double want, int64_t room) {
  Cell& x = CellOf(b, k);
  const bool blocked = Micros(want) > room;
  const int64_t unspent = x.held - x.spent - x.reserved;
  if (share_sizing_) {  // asks only when its lease held it back (then for that much)
    if (blocked && x.held == 0) Ask(b, k, t, Micros(want) - room);
    return;
  }
  const int64_t need =
      rtb::budget::LeaseWant(x.rate, int64_t{a_.horizon_s} * 1000, lc_.min_grant_micros, unspent);
  if (unspent < Micros(x.rate * a_.horizon_s / 2.0) && need > 0) {
    Ask(b, k, t, need);
  } else if (unspent > Micros(4.0 * x.rate * a_.horizon_s) + lc_.min_grant_micros) {
    const int64_t back = unspent - Micros(x.rate * a_.horizon_s);
    if (CoordinatorUp(t)) GiveBack(b, k, t, back);
  }
}

void Sim::Ask(int b, int k, int t, int64_t want) {
  msgs_.push_back({t + a_.latency_s, b, k, want, false, 0});
  CellOf(b, k).asked = true;
  ++messages_this_s_;
}

void Sim::GiveBack(int b, int k, int t, int64_t back) {
  const std::string& name = bidders_[static_cast<size_t>(b)].name;
  CellOf(b, k).held -= ledger_.Return(name, KeyOf(k), back, NowMs(t));
  messages_this_s_ += 2;
}

void Sim::CountMessages() {
  res_.messages += messages_this_s_;
  res_.peak_messages_s = std::max(res_.peak_messages_s, messages_this_s_);
  messages_this_s_ = 0;
}

Result Sim::EndOfDay() {
  // Settle what is still pending at the end of the day.
  for (const Pending& p : pend_) Bill(p.k, p.win);
  std::vector<double> cost;
  for (const Advertiser& ad : advertisers_) {
    const double c = 100.0 * static_cast<double>(ad.spent) / static_cast<double>(ad.budget);
    cost.push_back(c);
    res_.max_overspend_pct = std::max(res_.max_overspend_pct, c - 100.0);
  }
  std::sort(cost.begin(), cost.end());
  res_.min_cost_pct = cost.front();
  res_.median_cost_pct = cost[cost.size() / 2];
  double sum = 0;
  for (double c : cost) sum += c;
  res_.mean_cost_pct = sum / static_cast<double>(cost.size());
  res_.billing_refused_pct = 100.0 * static_cast<double>(refused_) /
                             static_cast<double>(std::max<int64_t>(1, billed_ + refused_));
  return res_;
}

Result Run(const Args& a, Mode mode) {
  Sim sim(a, mode);
  for (int t = 0; t < a.seconds; ++t) {
    sim.Crashes(t);
    sim.SettleReservations(t);
    if (mode == Mode::kLeases) sim.CoordinatorMessages(t);
    for (int b = 0; b < a.bidders; ++b) sim.BidderSecond(b, t);
    sim.CountMessages();
  }
  return sim.EndOfDay();
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
