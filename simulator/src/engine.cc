#include "rtb/simulator/engine.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "rtb/core/bid.h"

namespace rtb::sim {

namespace {

// A budget left that caps no bid.
constexpr int64_t kNoCapMicros = INT64_MAX / 4;

// One request's inputs for BidAndRankAvx512.
struct RequestInputs {
  const uint32_t* adv;
  const int64_t* bid;
  const double* pctr;
  const double* bratio;
  const uint16_t* agent;
  const int64_t* remaining;
  const double* a_j;  // a[i][j] for i < N, N <= 8
  int agents;
  double range;
  bool per_click;
  double reserve;
  int keep_max;  // slots + 1
};

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which it then
// reports as maybe uninitialized (a known false positive of those headers).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define RTB_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))

bool CpuHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
}

// One request's candidates [begin, end), 8 at a time: the scalar loop of RunRequests (the shared
// bid formula, core/bid.h: Alpha, AdjustedBid with RoundHalfAway, CapBidToBudget) with the same
// IEEE operations per candidate, in the same order, so the same bits; then SlotAuction::RankAll's
// ranking by vector compares. An advertiser is still in the day exactly when its budget left is
// at least kSpentMicros (what gone_ records). Writes the top ranked to top[0..return) and counts
// presences (d_j at stride L per agent, presences per advertiser). Returns -1, having counted
// nothing, when a bid is outside what the vector rounding covers (>= 2^52 micros or not a
// number): the caller then runs the scalar loop. REQUIRES: end - begin <= kMaxBatch, every
// candidate's agent < 8.
RTB_AVX512 int BidAndRankAvx512(const RequestInputs& in, uint32_t begin, uint32_t end, int64_t* d_j,
                                int stride_l, int64_t* presences, AuctionEntry* top) {
  alignas(64) double ecpm_buf[kMaxBatch];
  alignas(64) uint32_t key_buf[kMaxBatch];
  alignas(64) uint32_t idx_buf[kMaxBatch];
  __mmask8 in_day[kMaxBatch / 8];
  const __m512d lo = _mm512_set1_pd(-in.range), hi = _mm512_set1_pd(in.range);
  const __m512d one = _mm512_set1_pd(1.0), zero = _mm512_setzero_pd();
  const __m512d inf = _mm512_set1_pd(HUGE_VAL), half = _mm512_set1_pd(0.5);
  const __m512d exact_int = _mm512_set1_pd(4503599627370496.0);  // 2^52: RoundHalfAway's fast range
  const __m512d reserve = _mm512_set1_pd(in.reserve);
  const __m512i no_cap = _mm512_set1_epi64(kNoCapMicros);
  const __m512i spent = _mm512_set1_epi64(AuctionEngine::kSpentMicros);
  const __m512d a_j = _mm512_maskz_loadu_pd(static_cast<__mmask8>((1u << in.agents) - 1u), in.a_j);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int m = 0, vecs = 0;
  for (uint32_t c0 = begin; c0 < end; c0 += 8, ++vecs) {
    const uint32_t cnt = end - c0 < 8 ? end - c0 : 8;
    const auto valid = static_cast<__mmask8>(cnt == 8 ? 0xFFu : (1u << cnt) - 1u);
    const __m256i k = _mm256_maskz_loadu_epi32(valid, in.adv + c0);
    const __m512i left_all = _mm512_mask_i32gather_epi64(no_cap, valid, k, in.remaining, 8);
    const __mmask8 still = _mm512_mask_cmpge_epi64_mask(valid, left_all, spent);
    // Alpha(a[i][j], bratio, range): clip, in two compares; 0 where the product is not finite.
    const __m512i agent = _mm512_cvtepu16_epi64(_mm_maskz_loadu_epi16(valid, in.agent + c0));
    const __m512d x = _mm512_mul_pd(_mm512_permutexvar_pd(agent, a_j),
                                    _mm512_maskz_loadu_pd(valid, in.bratio + c0));
    const __mmask8 finite = _mm512_cmp_pd_mask(_mm512_abs_pd(x), inf, _CMP_LT_OQ);
    const __m512d above = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, lo, _CMP_LT_OQ), x, lo);
    const __m512d alpha = _mm512_maskz_mov_pd(
        finite, _mm512_mask_blend_pd(_mm512_cmp_pd_mask(hi, above, _CMP_LT_OQ), above, hi));
    // AdjustedBid: bid x (1 + alpha), 0 when <= 0, else rounded half away from zero.
    const __m512d v =
        _mm512_mul_pd(_mm512_cvtepi64_pd(_mm512_maskz_loadu_epi64(valid, in.bid + c0)),
                      _mm512_add_pd(one, alpha));
    const __mmask8 positive = _mm512_mask_cmp_pd_mask(valid, v, zero, _CMP_NLE_UQ);
    if (_mm512_mask_cmp_pd_mask(positive, v, exact_int, _CMP_NLT_UQ) != 0) return -1;
    const __m512i t = _mm512_cvttpd_epi64(v);
    const __mmask8 up =
        _mm512_cmp_pd_mask(_mm512_sub_pd(v, _mm512_cvtepi64_pd(t)), half, _CMP_GE_OQ);
    __m512i bid_hat =
        _mm512_maskz_mov_epi64(positive, _mm512_mask_add_epi64(t, up, t, _mm512_set1_epi64(1)));
    // CapBidToBudget against the budget left (no cap for one that has left the day).
    const __m512i left = _mm512_mask_blend_epi64(still, no_cap, left_all);
    const __m512d pctr = _mm512_maskz_loadu_pd(valid, in.pctr + c0);
    if (in.per_click) {
      bid_hat = _mm512_min_epi64(bid_hat, left);
    } else {
      const __m512d left_d = _mm512_cvtepi64_pd(left);
      const __mmask8 over = _mm512_mask_cmp_pd_mask(
          valid, _mm512_mul_pd(_mm512_cvtepi64_pd(bid_hat), pctr), left_d, _CMP_GT_OQ);
      if (over != 0) {
        bid_hat = _mm512_mask_mov_epi64(
            bid_hat, over, _mm512_cvttpd_epi64(_mm512_maskz_div_pd(over, left_d, pctr)));
      }
    }
    // Offered when still in the day; ranked when the reserve admits it (RankAll's filter).
    const __m512d ecpm = _mm512_mul_pd(_mm512_cvtepi64_pd(bid_hat), pctr);
    const __mmask8 ranked = still & _mm512_cmp_pd_mask(ecpm, reserve, _CMP_GE_OQ) &
                            _mm512_cmp_pd_mask(ecpm, zero, _CMP_GT_OQ);
    _mm512_mask_compressstoreu_pd(ecpm_buf + m, ranked, ecpm);
    _mm256_mask_compressstoreu_epi32(key_buf + m, ranked, k);
    _mm256_mask_compressstoreu_epi32(
        idx_buf + m, ranked, _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(c0)), lane));
    m += __builtin_popcount(ranked);
    in_day[vecs] = still;
  }
  // Presences of the candidates still in the day (d of the paper, and auctions per advertiser).
  for (int v = 0; v < vecs; ++v) {
    for (unsigned bits = in_day[v]; bits != 0; bits &= bits - 1) {
      const uint32_t c = begin + static_cast<uint32_t>(v * 8 + __builtin_ctz(bits));
      ++d_j[static_cast<size_t>(in.agent[c]) * stride_l];
      ++presences[in.adv[c]];
    }
  }
  // RankAll's rank: how many entries rank above (higher eCPM; equal eCPM and lower advertiser
  // id; or equal both and earlier).
  const int keep = m < in.keep_max ? m : in.keep_max;
  for (int q = 0; q < m; ++q) {
    const __m512d e = _mm512_set1_pd(ecpm_buf[q]);
    const __m256i key = _mm256_set1_epi32(static_cast<int>(key_buf[q]));
    int rank = 0;
    for (int o0 = 0; o0 < m; o0 += 8) {
      const int cnt = m - o0 < 8 ? m - o0 : 8;
      const auto valid = static_cast<__mmask8>(cnt == 8 ? 0xFFu : (1u << cnt) - 1u);
      const int before_q = q - o0 <= 0 ? 0 : (q - o0 >= 8 ? 8 : q - o0);
      const auto earlier = static_cast<__mmask8>(before_q == 8 ? 0xFFu : (1u << before_q) - 1u);
      const __m512d x = _mm512_maskz_loadu_pd(valid, ecpm_buf + o0);
      const __m256i ok = _mm256_maskz_loadu_epi32(valid, key_buf + o0);
      const __mmask8 above_q =
          _mm512_cmp_pd_mask(x, e, _CMP_GT_OQ) |
          (_mm512_cmp_pd_mask(x, e, _CMP_EQ_OQ) &
           (_mm256_cmplt_epu32_mask(ok, key) | (_mm256_cmpeq_epi32_mask(ok, key) & earlier)));
      rank += __builtin_popcount(static_cast<unsigned>(above_q & valid));
    }
    if (rank < keep) top[rank] = {ecpm_buf[q], key_buf[q], idx_buf[q]};
  }
  return keep;
}
#undef RTB_AVX512
#pragma GCC diagnostic pop
#else
bool CpuHasAvx512() { return false; }
int BidAndRankAvx512(const RequestInputs&, uint32_t, uint32_t, int64_t*, int, int64_t*,
                     AuctionEntry*) {
  return -1;
}
#endif  // __x86_64__

}  // namespace

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
  UseSimd(true);
  Reset(0);
}

bool AuctionEngine::UseSimd(bool on) {
  static const bool cpu = CpuHasAvx512();
  simd_ = on && cpu && market_.agents <= 8 && acfg_.slots <= kMaxSlots;
  return simd_;
}

void AuctionEngine::SplitBudgets(int bidders, SplitRule rule, uint64_t seed) {
  split_bidders_ = std::max(1, bidders);
  split_rule_ = rule;
  split_seed_ = seed;
  if (split_bidders_ > 1) simd_ = false;
}

namespace {

// The piece of `left` held by the bidder a request went to (AuctionEngine::SplitBudgets): with
// `unit` the charge a whole bid is taken to be, equal parts while each is a whole bid or more,
// else (whole rules) whole units to the bidders ranked first, rank = draw % bidders.
int64_t SplitPiece(int64_t left, int64_t unit, int bidders, AuctionEngine::SplitRule rule,
                   uint64_t draw) {
  unit = std::max<int64_t>(unit, 1);
  if (rule == AuctionEngine::SplitRule::kEven || left / bidders >= unit) return left / bidders;
  const int64_t rank = static_cast<int64_t>(draw % static_cast<uint64_t>(bidders));
  return std::clamp<int64_t>(left - rank * unit, 0, unit);
}

}  // namespace

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
  split_unit_.assign(n, 0);
  adv_.assign(n, Outcome{});
  for (size_t k = 0; k < n; ++k) adv_[k].budget = budgets_[k];
  const size_t pairs = static_cast<size_t>(market_.agents) * market_.clusters;
  pair_cost_.assign(pairs, Micros(0));
  pair_revenue_.assign(pairs, Micros(0));
  step_revenue_.assign(static_cast<size_t>(market_.agents), Micros(0));
  d_ = market_.d0.size() == pairs ? market_.d0 : std::vector<double>(pairs, 0.0);
  burn_cost_.assign(static_cast<size_t>(market_.agents) * burn_buckets_, 0);
  auctions_ = 0;
  simd_requests_ = 0;
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

int AuctionEngine::OfferScalar(size_t r, const double* a_j, int64_t* d_j, bool sampled,
                               AuctionEntry* offers) {
  const int L = market_.clusters;
  const ChargeBasis basis = sampled ? ChargeBasis::kPerClick : ChargeBasis::kExpected;
  const uint32_t* adv = day_.adv.data();
  const int64_t* bid = day_.bid.data();
  const double* cand_pctr = day_.pctr.data();
  const uint32_t begin = day_.begin[r], end = day_.begin[r + 1];
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
    int64_t left = in ? remaining_[k] : kNoCapMicros;
    if (split_bidders_ > 1 && in) {
      const double charge = basis == ChargeBasis::kPerClick
                                ? static_cast<double>(bid_hat.value())
                                : static_cast<double>(bid_hat.value()) * cand_pctr[c];
      // The largest charge of this bid, uncapped: the unit itself (kWhole), or folded
      // into the advertiser's running mean (kWholeMean: what a coordinator can know).
      int64_t unit = static_cast<int64_t>(std::ceil(charge));
      if (split_rule_ == SplitRule::kWholeMean) {
        // The mean of the bids before this one (this one's own charge for the first).
        int64_t& mean = split_unit_[k];
        const int64_t before = mean == 0 ? unit : mean;
        mean = mean == 0 ? unit : (mean * 7 + unit) / 8;
        unit = before;
      }
      left = SplitPiece(left, unit, split_bidders_, split_rule_,
                        Rng::Mix(split_seed_ ^ (r * 0x9e3779b97f4a7c15ULL), k));
    }
    bid_hat = CapBidToBudget(bid_hat, cand_pctr[c], left, basis);
    d_j[static_cast<size_t>(i) * L] += in;
    presences_[k] += in;
    offers[static_cast<size_t>(n)] = {static_cast<double>(bid_hat.value()) * cand_pctr[c], k, c};
    n += in;
  }
  return n;
}

void AuctionEngine::SettleWinners(size_t r, int j, const SlotResult* won, int winners, bool sampled,
                                  int64_t bucket) {
  const int L = market_.clusters;
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

void AuctionEngine::RunRequests(size_t from, size_t to, const ActionTable& a) {
  const int N = market_.agents;
  const int L = market_.clusters;
  const bool sampled = acfg_.outcomes == "sampled";
  const size_t pairs = static_cast<size_t>(N) * L;
  std::vector<int64_t> d_count(pairs, 0);
  presences_.assign(adv_.size(), 0);
  // The table by cluster: column j holds a[i][j] for every agent i, contiguous.
  std::vector<double> by_cluster(pairs);
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < L; ++j) by_cluster[static_cast<size_t>(j) * N + i] = a.at(i, j);
  }
  const TimeMs day_ms = day_.steps * day_.step_ms;
  SlotAuction auction(acfg_.slots, reserve_ecpm_, acfg_.pricing());
  SlotResult won[kMaxSlots];
  std::vector<AuctionEntry> offers(kMaxBatch);
  if (track_requests_) {
    req_revenue_.resize(day_.requests(), 0);
    req_cost_.resize(day_.requests(), 0);
  }
  // The vector path's inputs; a_j and reserve are set per request.
  RequestInputs inputs{day_.adv.data(),
                       day_.bid.data(),
                       day_.pctr.data(),
                       cand_bratio_,
                       cand_agent_,
                       remaining_.data(),
                       nullptr,
                       N,
                       range_,
                       sampled,
                       0.0,
                       acfg_.slots + 1};
  for (size_t r = from; r < to; ++r) {
    const int j = req_cluster_[r];
    const double* a_j = &by_cluster[static_cast<size_t>(j) * N];
    int64_t* d_j = &d_count[static_cast<size_t>(j)];
    // The request's reserve per impression: its floor (CPM / 1000) or the exchange minimum.
    const double reserve = std::max(reserve_ecpm_, static_cast<double>(day_.floor_cpm[r]) / 1000.0);
    auction.Reset(reserve);
    // Every candidate still in the day bids; the bids are independent of one another, so this
    // loop carries no dependency from one candidate to the next. SlotAuction ranks them after.
    const uint32_t begin = day_.begin[r], end = day_.begin[r + 1];
    // The winners' pCVR and order value are read a request later; fetch them ahead.
    if (r + kPrefetchAhead < to) {
      const uint32_t ahead = day_.begin[r + kPrefetchAhead];
      __builtin_prefetch(day_.pcvr.data() + ahead);
      __builtin_prefetch(day_.ppb.data() + ahead);
      __builtin_prefetch(day_.pcvr.data() + ahead + 8);
      __builtin_prefetch(day_.ppb.data() + ahead + 8);
    }
    bool ranked = false;
    if (simd_ && split_bidders_ == 1 && end - begin <= static_cast<uint32_t>(kMaxBatch)) {
      AuctionEntry top[kMaxSlots + 1];
      inputs.a_j = a_j;
      inputs.reserve = reserve;
      const int kept = BidAndRankAvx512(inputs, begin, end, d_j, L, presences_.data(), top);
      if (kept >= 0) {
        auction.SetRanked(top, kept);
        ranked = true;
        ++simd_requests_;
      }
    }
    if (!ranked) {
      if (end - begin > offers.size()) offers.resize(end - begin);
      auction.RankAll(offers.data(), OfferScalar(r, a_j, d_j, sampled, offers.data()));
    }
    const int winners = auction.Resolve(won);
    if (winners == 0) continue;
    ++auctions_;
    const int64_t bucket =
        std::min<int64_t>(burn_buckets_ - 1, day_.time_ms[r] * burn_buckets_ / day_ms);
    SettleWinners(r, j, won, winners, sampled, bucket);
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
