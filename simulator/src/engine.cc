#include "rtb/simulator/engine.h"

#include <algorithm>
#include <cmath>

#include "rtb/core/bid.h"

namespace rtb::sim {

std::shared_ptr<const DayIndex> IndexDay(const Day& day, const Market& market) {
  auto index = std::make_shared<DayIndex>();
  index->cand_agent.resize(day.candidates());
  index->cand_bratio.resize(day.candidates());
  for (size_t c = 0; c < day.candidates(); ++c) {
    const uint32_t k = day.adv[c];
    index->cand_agent[c] = k < market.agent_of.size() ? market.agent_of[k] : 0;
    const double avg = k < market.avg_pcvr.size() ? market.avg_pcvr[k] : 0.0;
    index->cand_bratio[c] = BidRatio(day.pcvr[c], avg);
  }
  index->req_cluster.resize(day.requests());
  for (size_t r = 0; r < day.requests(); ++r) {
    const uint32_t u = day.consumer[r];
    index->req_cluster[r] =
        u < market.cluster_of.size() ? market.cluster_of[u] : market.default_cluster;
  }
  return index;
}

AuctionEngine::AuctionEngine(const Day& day, const Market& market, const AuctionConfig& acfg,
                             double alpha_range, std::vector<Micros> budgets, int burn_buckets,
                             std::shared_ptr<const DayIndex> index)
    : day_(day),
      market_(market),
      acfg_(acfg),
      range_(alpha_range),
      burn_buckets_(std::max(1, burn_buckets)),
      budgets_(std::move(budgets)),
      unlimited_(budgets_.empty()),
      step_begin_(day.StepBegins()),
      index_(index != nullptr && index->cand_agent.size() == day.candidates() &&
                     index->req_cluster.size() == day.requests()
                 ? std::move(index)
                 : IndexDay(day, market)),
      cand_agent_(index_->cand_agent.data()),
      cand_bratio_(index_->cand_bratio.data()),
      req_cluster_(index_->req_cluster.data()),
      reserve_ecpm_(acfg.reserve_cpm * 1e6 / 1000.0) {
  if (unlimited_) budgets_.assign(day.num_advertisers, Micros(0));
  slot_factor_.assign(static_cast<size_t>(acfg.slots), 1.0);
  for (size_t s = 0; s < acfg.slot_ctr_factors.size() && s < slot_factor_.size(); ++s) {
    slot_factor_[s] = acfg.slot_ctr_factors[s];
  }
  Reset(0);
}

void AuctionEngine::Reset(uint64_t seed) {
  step_ = 0;
  rng_ = Rng(Rng::Mix(seed, 0xe9));
  const size_t n = day_.num_advertisers;
  remaining_.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    remaining_[k] = unlimited_ ? INT64_MAX / 4 : budgets_[k].value();
  }
  gone_.assign(n, 0);
  for (size_t k = 0; k < n; ++k) gone_[k] = remaining_[k] < kSpentMicros ? 1 : 0;
  adv_.assign(n, Outcome{});
  for (size_t k = 0; k < n; ++k) adv_[k].budget = budgets_[k];
  const size_t pairs = static_cast<size_t>(market_.agents) * market_.clusters;
  pair_cost_.assign(pairs, Micros(0));
  pair_revenue_.assign(pairs, Micros(0));
  step_revenue_.assign(static_cast<size_t>(market_.agents), Micros(0));
  d_ = market_.d0.size() == pairs ? market_.d0 : std::vector<double>(pairs, 0.0);
  burn_cost_.assign(static_cast<size_t>(market_.agents) * burn_buckets_, 0);
  auctions_ = 0;
  req_revenue_.clear();
  req_cost_.clear();
}

void AuctionEngine::RunStep(const ActionTable& a) {
  if (done()) return;
  std::fill(step_revenue_.begin(), step_revenue_.end(), Micros(0));
  RunRequests(step_begin_[static_cast<size_t>(step_)], step_begin_[static_cast<size_t>(step_) + 1],
              a);
  ++step_;
}

void AuctionEngine::RunToEnd(const ActionTable& a) {
  while (!done()) RunStep(a);
}

// Requests ahead whose winners' data RunRequests fetches early.
constexpr size_t kPrefetchAhead = 8;
// A budget left that caps no bid.
constexpr int64_t kNoCapMicros = INT64_MAX / 4;

void AuctionEngine::RunRequests(size_t from, size_t to, const ActionTable& a) {
  const int N = market_.agents;
  const int L = market_.clusters;
  const bool sampled = acfg_.outcomes == "sampled";
  const ChargeBasis basis = sampled ? ChargeBasis::kPerClick : ChargeBasis::kExpected;
  const size_t pairs = static_cast<size_t>(N) * L;
  std::vector<int64_t> d_count(pairs, 0);
  presences_.assign(adv_.size(), 0);
  // The table by cluster: column j holds a[i][j] for every agent i, contiguous.
  std::vector<double> by_cluster(pairs);
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < L; ++j) by_cluster[static_cast<size_t>(j) * N + i] = a.at(i, j);
  }
  const TimeMs day_ms = day_.steps * day_.step_ms;
  GspAuction auction(acfg_.slots, reserve_ecpm_);
  SlotResult won[kMaxSlots];
  std::vector<AuctionEntry> offers(kMaxBatch);
  if (track_requests_) {
    req_revenue_.resize(day_.requests(), 0);
    req_cost_.resize(day_.requests(), 0);
  }
  const uint32_t* adv = day_.adv.data();
  const int64_t* bid = day_.bid.data();
  const double* cand_pctr = day_.pctr.data();

  for (size_t r = from; r < to; ++r) {
    const int j = req_cluster_[r];
    const double* a_j = &by_cluster[static_cast<size_t>(j) * N];
    int64_t* d_j = &d_count[static_cast<size_t>(j)];
    // The request's reserve per impression: its floor (CPM / 1000) or the exchange minimum.
    const double reserve = std::max(reserve_ecpm_, static_cast<double>(day_.floor_cpm[r]) / 1000.0);
    auction.Reset(reserve);
    // Every candidate still in the day bids; the bids are independent of one another, so this
    // loop carries no dependency from one candidate to the next. GspAuction ranks them after.
    const uint32_t begin = day_.begin[r], end = day_.begin[r + 1];
    // The winners' pCVR and order value are read a request later; fetch them ahead.
    if (r + kPrefetchAhead < to) {
      const uint32_t ahead = day_.begin[r + kPrefetchAhead];
      __builtin_prefetch(day_.pcvr.data() + ahead);
      __builtin_prefetch(day_.ppb.data() + ahead);
      __builtin_prefetch(day_.pcvr.data() + ahead + 8);
      __builtin_prefetch(day_.ppb.data() + ahead + 8);
    }
    if (end - begin > offers.size()) offers.resize(end - begin);
    int n = 0;
    for (uint32_t c = begin; c < end; ++c) {
      // An advertiser that has left the day computes no bid. Which ones have left changes
      // through the day with no pattern a branch predictor could follow, so every candidate is
      // computed and only those still in count and are offered.
      const uint32_t k = adv[c];
      const int in = gone_[k] ? 0 : 1;
      const int i = cand_agent_[c];
      Micros bid_hat = AdjustedBid(Micros(bid[c]), a_j[i], cand_bratio_[c], range_);
      // The largest charge this bid can cause is its own eCPM (expected outcomes) or its CPC
      // (sampled outcomes); it never exceeds the budget left (core/bid.h).
      // A candidate that has left the day is not capped (its bid is not offered): capping it
      // would again branch on who has left.
      const int64_t left = in ? remaining_[k] : kNoCapMicros;
      bid_hat = CapBidToBudget(bid_hat, cand_pctr[c], left, basis);
      d_j[static_cast<size_t>(i) * L] += in;
      presences_[k] += in;
      offers[static_cast<size_t>(n)] = {static_cast<double>(bid_hat.value()) * cand_pctr[c], k, c};
      n += in;
    }
    auction.RankAll(offers.data(), n);
    const int winners = auction.Resolve(won);
    if (winners == 0) continue;
    ++auctions_;
    const int64_t bucket =
        std::min<int64_t>(burn_buckets_ - 1, day_.time_ms[r] * burn_buckets_ / day_ms);
    for (int s = 0; s < winners; ++s) {
      const uint32_t c = won[s].index;
      const uint32_t k = day_.adv[c];
      const int i = cand_agent_[c];
      const double f = slot_factor_[static_cast<size_t>(s)];
      const double pctr = day_.pctr[c] * f;
      Micros cost, revenue;
      double clicks, conversions;
      if (!sampled) {
        cost = Micros::Round(won[s].price_ecpm * f);
        clicks = pctr;
        conversions = pctr * day_.pcvr[c];
        revenue = Micros::Round(conversions * static_cast<double>(day_.ppb[c]));
      } else {
        const bool click = rng_.Uniform() < pctr;
        const bool buy = click && rng_.Uniform() < day_.pcvr[c];
        cost = click ? Micros::Round(won[s].price_ecpm / day_.pctr[c]) : Micros(0);
        clicks = click ? 1 : 0;
        conversions = buy ? 1 : 0;
        revenue = buy ? Micros(day_.ppb[c]) : Micros(0);
      }
      remaining_[k] -= cost.value();
      // Budget spent: once what is left is below kSpentMicros, the advertiser leaves the day.
      if (remaining_[k] < kSpentMicros) gone_[k] = 1;
      Outcome& o = adv_[k];
      ++o.impressions;
      o.clicks += clicks;
      o.conversions += conversions;
      o.cost += cost;
      o.revenue += revenue;
      const size_t p = static_cast<size_t>(i * L + j);
      pair_cost_[p] += cost;
      pair_revenue_[p] += revenue;
      step_revenue_[static_cast<size_t>(i)] += revenue;
      burn_cost_[static_cast<size_t>(i) * burn_buckets_ + bucket] += cost.value();
      if (track_requests_) {
        req_revenue_[r] += revenue.value();
        req_cost_[r] += cost.value();
      }
    }
  }
  for (size_t k = 0; k < adv_.size(); ++k) adv_[k].auctions += presences_[k];
  int64_t total = 0;
  for (int64_t x : d_count) total += x;
  d_.assign(pairs, 0.0);
  if (total > 0) {
    for (size_t p = 0; p < pairs; ++p) d_[p] = static_cast<double>(d_count[p]) / total;
  }
}

std::vector<Outcome> AuctionEngine::AgentOutcomes() const {
  std::vector<Outcome> out(static_cast<size_t>(market_.agents));
  for (size_t k = 0; k < adv_.size(); ++k) {
    const size_t i = k < market_.agent_of.size() ? market_.agent_of[k] : 0;
    out[i] += adv_[k];
  }
  return out;
}

std::vector<std::vector<double>> AuctionEngine::BudgetBurn() const {
  const auto agents = AgentOutcomes();
  std::vector<std::vector<double>> burn(static_cast<size_t>(market_.agents));
  for (size_t i = 0; i < burn.size(); ++i) {
    int64_t cum = 0;
    const double budget = static_cast<double>(agents[i].budget.value());
    for (int b = 0; b < burn_buckets_; ++b) {
      cum += burn_cost_[i * burn_buckets_ + b];
      burn[i].push_back(budget > 0 ? cum / budget : kNaN);
    }
  }
  return burn;
}

double AuctionEngine::burn_bucket_minutes() const {
  return static_cast<double>(day_.steps * day_.step_ms) / burn_buckets_ / 60000.0;
}

std::vector<Micros> ComputeBudgets(const Day& day, const Market& market, const AuctionConfig& acfg,
                                   double fraction) {
  AuctionEngine unlimited(day, market, acfg, 0.0, {});
  unlimited.RunToEnd(ActionTable(market.agents, market.clusters));
  std::vector<Micros> budgets;
  budgets.reserve(day.num_advertisers);
  for (const Outcome& o : unlimited.advertiser_outcomes()) {
    budgets.push_back(Micros(static_cast<int64_t>(std::floor(o.cost.value() * fraction))));
  }
  return budgets;
}

}  // namespace rtb::sim
