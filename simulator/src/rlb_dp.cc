#include "rtb/simulator/rlb_dp.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

namespace rtb::sim {
namespace {

constexpr double kUpPrecision = 1e-10;  // the released code's early-stop tolerance

constexpr int64_t kLanes = 8;  // Dot reads whole groups of 8; the arrays are padded with zeros

// sum x[i] * y[i] for n a multiple of 8: the dynamic program's inner loop, two accumulators.
inline __attribute__((always_inline)) double Dot(const double* x, const double* y, int64_t n) {
  using V8 = double __attribute__((vector_size(64)));
  V8 acc0 = {}, acc1 = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    V8 a, b, c, d;
    std::memcpy(&a, x + i, sizeof a);
    std::memcpy(&b, y + i, sizeof b);
    std::memcpy(&c, x + i + 8, sizeof c);
    std::memcpy(&d, y + i + 8, sizeof d);
    acc0 += a * b;
    acc1 += c * d;
  }
  for (; i + 8 <= n; i += 8) {
    V8 a, b;
    std::memcpy(&a, x + i, sizeof a);
    std::memcpy(&b, y + i, sizeof b);
    acc0 += a * b;
  }
  acc0 += acc1;
  double s = 0;
  for (int k = 0; k < 8; ++k) s += acc0[k];
  return s;
}

// What one row's computation reads and writes.
struct RowWork {
  const double* v;       // V(n-1, 0..B)
  double* nv;            // V(n, 0..B), written
  const int64_t* a;      // a(n, 0..B)
  const double* mr;      // m reversed: mr[M - delta] = m(delta), then kLanes zeros
  const double* mass;    // sum_{delta <= k} m(delta)
  const double* moment;  // sum_{delta <= k} delta * m(delta)
  int64_t max_bid;
  double gamma, v1t, v0, v_max;
  // First price: M reversed (massr[M - a] = M(a)) and a x M(a) reversed, then kLanes zeros.
  const double* massr = nullptr;
  const double* amassr = nullptr;
};

// max_{a = 0..ab} massr[M-a] * (c + g * v[b-a]) - v0 * amassr[M-a], 8 lanes at a time over
// the padded arrays (the padding's terms are 0, never above the a = 0 term, M(0) * v1 theta).
inline __attribute__((always_inline)) double MaxGain(const double* massr, const double* amassr,
                                                     const double* v, int64_t len, double c,
                                                     double g, double v0) {
  using V8 = double __attribute__((vector_size(64)));
  V8 best = {}, gv = {}, cv = {}, v0v = {};
  gv += g;
  cv += c;
  v0v += v0;
  for (int64_t i = 0; i + 8 <= len; i += 8) {
    V8 m, am, x;
    std::memcpy(&m, massr + i, sizeof m);
    std::memcpy(&am, amassr + i, sizeof am);
    std::memcpy(&x, v + i, sizeof x);
    const V8 t = m * (cv + gv * x) - v0v * am;
    best = t > best ? t : best;
  }
  double s = best[0];
  for (int k = 1; k < 8; ++k) s = std::max(s, best[k]);
  return s;
}

// The first-price row (rlb_dp.h): V(n, b) for b in [lo, hi]; the early stop as FillRange's.
__attribute__((target_clones("avx512f", "avx2", "default"))) int64_t FillRangeFirstPrice(
    const RowWork& w, int64_t lo, int64_t hi) {
  const int64_t M = w.max_bid;
  for (int64_t b = lo; b <= hi; ++b) {
    const double vb = w.v[b];
    const int64_t ab = std::min(M, b);
    const int64_t len = (ab + 1 + kLanes - 1) / kLanes * kLanes;
    const double nv =
        w.gamma * vb + MaxGain(w.massr + (M - ab), w.amassr + (M - ab), w.v + (b - ab), len,
                               w.v1t - w.gamma * vb, w.gamma, w.v0);
    w.nv[b] = nv;
    if (std::abs(nv - w.v_max) < kUpPrecision) return b;
  }
  return -1;
}

// V(n, b) for b in [lo, hi]; returns the first b whose value is within the tolerance of V_max
// (the code's early stop), or -1. The clones use AVX-512 or AVX2 where the CPU has them.
__attribute__((target_clones("avx512f", "avx2", "default"))) int64_t FillRange(const RowWork& w,
                                                                               int64_t lo,
                                                                               int64_t hi) {
  const int64_t M = w.max_bid;
  for (int64_t b = lo; b <= hi; ++b) {
    const double vb = w.v[b];
    const int64_t ab = w.a[b];
    double nv = w.gamma * vb;
    if (ab >= 0) {
      // Rounded up to whole lanes: the extra terms meet mr's zeros past M (and V's past B).
      const int64_t len = (ab + 1 + kLanes - 1) / kLanes * kLanes;
      const double conv = Dot(w.mr + (M - ab), w.v + (b - ab), len);
      nv += (w.v1t - w.gamma * vb) * w.mass[ab] - w.v0 * w.moment[ab] + w.gamma * conv;
    }
    w.nv[b] = nv;
    if (std::abs(nv - w.v_max) < kUpPrecision) return b;
  }
  return -1;
}

}  // namespace

std::vector<double> MarketPricePdf(const std::vector<int64_t>& counter, double laplace) {
  double sum = 0;
  for (int64_t c : counter) sum += static_cast<double>(c);
  std::vector<double> m(counter.size());
  const double denominator = sum + static_cast<double>(counter.size()) * laplace;
  for (size_t i = 0; i < counter.size(); ++i) {
    m[i] = (static_cast<double>(counter[i]) + laplace) / denominator;
  }
  return m;
}

namespace {

// What a row reads of the market of its auction's part: the prefix sums of m and delta * m, m
// reversed (so that sum_delta m(delta) V(b - delta) is a forward dot product of mr[M - a .. M]
// with V[b - a .. b]), for first price M and a x M(a) reversed, v1 theta and the row's V_max
// increment.
struct PartModel {
  std::vector<double> mass, moment, mr, massr, amassr;
  double v1t = 0, v_inc = 0;
};

PartModel MakePartModel(const std::vector<double>& m, double theta, const RlbDpParams& p) {
  const int64_t M = p.max_bid;
  const double v1t = p.v1 * theta, v0 = p.v0;
  PartModel pm;
  pm.v1t = v1t;
  pm.mass.resize(static_cast<size_t>(M) + 1);
  pm.moment.resize(static_cast<size_t>(M) + 1);
  pm.mr.assign(static_cast<size_t>(M + 1 + kLanes), 0.0);
  pm.massr.assign(static_cast<size_t>(M + 1 + kLanes), 0.0);
  pm.amassr.assign(static_cast<size_t>(M + 1 + kLanes), 0.0);
  double acc = 0, acc_d = 0;
  for (int64_t d = 0; d <= M; ++d) {
    acc += m[static_cast<size_t>(d)];
    acc_d += static_cast<double>(d) * m[static_cast<size_t>(d)];
    pm.mass[static_cast<size_t>(d)] = acc;
    pm.moment[static_cast<size_t>(d)] = acc_d;
    pm.mr[static_cast<size_t>(M - d)] = m[static_cast<size_t>(d)];
    pm.massr[static_cast<size_t>(M - d)] = acc;
    pm.amassr[static_cast<size_t>(M - d)] = static_cast<double>(d) * acc;
  }
  // int(v1 * theta / v0), capped at max_bid (compared as doubles first: the ratio may be huge).
  const double ratio = v0 != 0 ? v1t / v0 : static_cast<double>(M);
  const int64_t a_max =
      !(ratio < static_cast<double>(M)) ? M : std::max<int64_t>(-1, static_cast<int64_t>(ratio));
  for (int64_t d = 0; d <= a_max; ++d) {
    pm.v_inc += m[static_cast<size_t>(d)] * (v1t - v0 * static_cast<double>(d));
  }
  if (p.first_price) {  // max_a M(a) * (v1 theta - v0 a): the budget never binding
    pm.v_inc = 0;
    for (int64_t d = 0; d <= M; ++d) {
      pm.v_inc =
          std::max(pm.v_inc, pm.mass[static_cast<size_t>(d)] * (v1t - v0 * static_cast<double>(d)));
    }
  }
  return pm;
}

}  // namespace

Result<RlbValueFunction> RlbValueFunction::Compute(const RlbDpParams& p,
                                                   const std::vector<double>& m) {
  if (!p.part_theta.empty()) {
    return Status::InvalidArgument("RLB: a program by part needs one price p.d.f. per part");
  }
  return Compute(p, std::vector<std::vector<double>>{m});
}

Result<RlbValueFunction> RlbValueFunction::Compute(
    const RlbDpParams& p, const std::vector<std::vector<double>>& m_by_part) {
  if (p.episode_size < 1) return Status::InvalidArgument("RLB: the episode size N must be >= 1");
  if (p.budget < 0) return Status::InvalidArgument("RLB: the episode budget B must be >= 0");
  if (p.max_bid < 0) return Status::InvalidArgument("RLB: max_bid must be >= 0");
  const size_t parts = std::max<size_t>(1, p.part_theta.size());
  if (m_by_part.size() != parts) {
    return Status::InvalidArgument("RLB: " + std::to_string(m_by_part.size()) +
                                   " price p.d.f.s for " + std::to_string(parts) + " parts");
  }
  for (const auto& m : m_by_part) {
    if (static_cast<int64_t>(m.size()) < p.max_bid + 1) {
      return Status::InvalidArgument("RLB: the market price histogram has " +
                                     std::to_string(m.size()) +
                                     " bins; the dynamic program needs one per price 0..max_bid (" +
                                     std::to_string(p.max_bid + 1) + ")");
    }
  }
  RlbValueFunction f;
  f.p_ = p;
  const int64_t B = p.budget, M = p.max_bid;
  const double g = p.gamma, v0 = p.v0;
  std::vector<PartModel> models;
  for (size_t k = 0; k < parts; ++k) {
    models.push_back(
        MakePartModel(m_by_part[k], p.part_theta.empty() ? p.theta_avg : p.part_theta[k], p));
    f.masses_.push_back(models.back().mass);
  }
  const auto fill = p.first_price ? FillRangeFirstPrice : FillRange;
  std::vector<double> V(static_cast<size_t>(B + 1 + kLanes), 0.0),
      nV(static_cast<size_t>(B + 1 + kLanes), 0.0);
  std::vector<int64_t> a(static_cast<size_t>(B) + 1, 0);
  if (p.first_price) {
    for (int64_t b = 0; b <= B; ++b) a[static_cast<size_t>(b)] = std::min(M, b);
  }
  f.rows_.reserve(static_cast<size_t>(p.episode_size));
  f.rows_.push_back(Row{{0.0}, 0.0});  // V(0, .) = 0
  double v_max = 0;
  const unsigned threads =
      p.threads > 0 ? static_cast<unsigned>(p.threads) : std::thread::hardware_concurrency();
  int64_t prev_stop = 0, prev_prev_stop = 0;  // where the last two rows reached V_max
  for (int64_t n = 1; n < p.episode_size; ++n) {
    const PartModel& pm = models[f.PartOf(n)];  // the market of the auction row n decides
    const double v1t = pm.v1t;
    // a(n, b) from V(n-1, .), by the code's one downward scan (first price: a[b] stays
    // min(b, max_bid), every bid weighed, the work the split below balances).
    int64_t bb = B - 1;
    for (int64_t b = B; b > 0 && !p.first_price; --b) {
      while (bb >= 0 && g * (V[static_cast<size_t>(bb)] - V[static_cast<size_t>(b)]) + v1t -
                                v0 * static_cast<double>(b - bb) >=
                            0) {
        --bb;
      }
      a[static_cast<size_t>(b)] = bb < 0 ? std::min(M, b) : std::min(M, b - bb - 1);
    }
    v_max = g * v_max + pm.v_inc;
    const RowWork w{
        V.data(), nV.data(), a.data(), pm.mr.data(), pm.mass.data(),  pm.moment.data(), M,
        g,        v1t,       v0,       v_max,        pm.massr.data(), pm.amassr.data()};
    // A long row is cut in two parts of equal work (sum of a(n, b) + 1), the second on another
    // thread; the stop is the first in b order, as in the code's one loop. Where the previous
    // rows stopped early, the split covers only up to where this one is expected to stop (the
    // rest, if it does not, runs after it on this thread).
    int64_t first = -1;
    const int64_t expect =
        prev_stop < B ? std::min(B, prev_stop + 2 * (prev_stop - prev_prev_stop) + M) : B;
    if (expect >= p.split_budget && threads > 1) {
      int64_t total = 0;
      for (int64_t b = 1; b <= expect; ++b) total += a[static_cast<size_t>(b)] + 1;
      int64_t mid = 1, run = 0;
      while (mid < expect && run * 2 < total) run += a[static_cast<size_t>(mid++)] + 1;
      int64_t second = -1;
      std::thread worker([&] { second = fill(w, mid + 1, expect); });
      first = fill(w, 1, mid);
      worker.join();
      if (first < 0) first = second;
      if (first < 0 && expect < B) first = fill(w, expect + 1, B);
    } else {
      first = fill(w, 1, B);
    }
    const int64_t stop = first < 0 ? B : first;  // the last b computed; b > stop are V_max
    if (first >= 0) {
      ++f.early_stopped_;
      std::fill(nV.begin() + stop + 1, nV.begin() + B + 1, v_max);
    }
    prev_prev_stop = prev_stop;
    prev_stop = stop;
    V.swap(nV);
    f.rows_.push_back(Row{std::vector<double>(V.begin(), V.begin() + stop + 1), v_max});
  }
  return f;
}

int64_t RlbValueFunction::Bid(int64_t n, int64_t b, double theta) const {
  if (n < 1 || n > p_.episode_size || b < 0 || b > p_.budget) return 0;
  const int64_t row = n - 1;
  const double here = V(row, b);
  int64_t bid = 0;
  const int64_t top = std::min(b, p_.max_bid);
  if (p_.first_price) {  // the smallest arg max of M(a) * (v1 theta + gamma dV - v0 a)
    double best = -1;
    for (int64_t d = 0; d <= top; ++d) {
      const double gain =
          masses_[PartOf(n)][static_cast<size_t>(d)] *
          (p_.v1 * theta + p_.gamma * (V(row, b - d) - here) - p_.v0 * static_cast<double>(d));
      if (gain > best) best = gain, bid = d;
    }
    return bid;
  }
  for (int64_t d = 1; d <= top; ++d) {
    if (p_.v1 * theta + p_.gamma * (V(row, b - d) - here) - p_.v0 * static_cast<double>(d) >= 0) {
      bid = d;
    } else {
      break;
    }
  }
  return bid;
}

int64_t RlbValueFunction::stored_values() const {
  int64_t n = 0;
  for (const auto& r : rows_) n += static_cast<int64_t>(r.v.size());
  return n;
}

int64_t RlbDpStrategy::Bid(const LoggedAuction& a, const BidContext& ctx) {
  const RlbDpParams& p = v_->params();
  const int64_t n = p.episode_size - ctx.step;
  const int64_t b = std::clamp<int64_t>(ctx.budget_left, 0, p.budget);
  if (n < 1) return 0;
  return v_->Bid(n, b, a.pctr);
}

std::string RlbDpStrategy::Describe() const {
  const RlbDpParams& p = v_->params();
  char buf[160];
  std::snprintf(buf, sizeof buf, "RLB dynamic program (N %lld, B %lld, theta_avg %.6g)",
                static_cast<long long>(p.episode_size), static_cast<long long>(p.budget),
                p.theta_avg);
  return buf;
}

namespace {

// The program's parameters for a campaign under the RLB protocol (the market aside).
RlbDpParams CampaignDpParams(const CampaignInfo& info, const RlbProtocol& p) {
  RlbDpParams dp;
  dp.episode_size = p.episode_size;
  dp.budget = RlbEpisodeBudget(info, p);
  dp.max_bid = p.max_bid;
  dp.theta_avg = info.CtrTrain();
  dp.first_price = p.first_price;
  return dp;
}

}  // namespace

Result<std::shared_ptr<const RlbValueFunction>> RlbForCampaign(const CampaignInfo& info,
                                                               const RlbProtocol& p,
                                                               const std::string& who) {
  if (info.price_counter_train.empty()) {
    return Status::InvalidArgument(
        who +
        " needs the campaign summary's price_counter_train (the training log's market price "
        "histogram); `rtb generate --rlb-out` writes it");
  }
  RlbDpParams dp = CampaignDpParams(info, p);
  RTB_ASSIGN_OR_RETURN(RlbValueFunction v,
                       RlbValueFunction::Compute(dp, MarketPricePdf(info.price_counter_train)));
  return std::shared_ptr<const RlbValueFunction>(std::make_shared<RlbValueFunction>(std::move(v)));
}

namespace {

// Between-part spread of `x` over the within-part variance: chi-squared with parts - 1 degrees
// of freedom when the parts are alike (one-way analysis of variance, many samples per part).
template <typename F>
double PartChi2(const std::vector<LoggedAuction>& log, int64_t episode_size, int parts, F x) {
  std::vector<double> sum(static_cast<size_t>(parts), 0), sum2(static_cast<size_t>(parts), 0);
  std::vector<double> n(static_cast<size_t>(parts), 0);
  for (size_t i = 0; i < log.size(); ++i) {
    const size_t k = EpisodePart(static_cast<int64_t>(i) % episode_size, episode_size, parts);
    const double v = x(log[i]);
    sum[k] += v;
    sum2[k] += v * v;
    n[k] += 1;
  }
  double total = 0, count = 0, within = 0;
  for (size_t k = 0; k < n.size(); ++k) {
    total += sum[k];
    count += n[k];
    if (n[k] > 0) within += sum2[k] - sum[k] * sum[k] / n[k];
  }
  const double dof = count - static_cast<double>(parts);
  if (dof <= 0 || within <= 0) return 0;
  const double var = within / dof, mean = total / count;
  double between = 0;
  for (size_t k = 0; k < n.size(); ++k) {
    if (n[k] > 0) between += n[k] * (sum[k] / n[k] - mean) * (sum[k] / n[k] - mean);
  }
  return between / var;
}

}  // namespace

Result<RlbStepModel> FitRlbStepModel(const std::vector<LoggedAuction>& log, int64_t episode_size,
                                     int parts, double theta_avg, int64_t max_bid) {
  if (parts < 1 || episode_size < parts) {
    return Status::InvalidArgument("RLB by part: parts must be in [1, N]");
  }
  if (static_cast<int64_t>(log.size()) < episode_size) {
    return Status::InvalidArgument("RLB by part: the log is shorter than one episode");
  }
  RlbStepModel model;
  model.prices.assign(static_cast<size_t>(parts),
                      std::vector<int64_t>(static_cast<size_t>(max_bid) + 1, 0));
  std::vector<double> pctr(static_cast<size_t>(parts), 0);
  std::vector<int64_t> count(static_cast<size_t>(parts), 0);
  double pctr_all = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    const size_t k = EpisodePart(static_cast<int64_t>(i) % episode_size, episode_size, parts);
    const int64_t price = std::clamp<int64_t>(log[i].payprice, 0, max_bid);
    ++model.prices[k][static_cast<size_t>(price)];
    pctr[k] += log[i].pctr;
    pctr_all += log[i].pctr;
    ++count[k];
  }
  const double mean_all = pctr_all / static_cast<double>(log.size());
  for (size_t k = 0; k < pctr.size(); ++k) {
    const double mean = count[k] > 0 ? pctr[k] / static_cast<double>(count[k]) : mean_all;
    model.theta.push_back(mean_all > 0 ? theta_avg * mean / mean_all : theta_avg);
  }
  model.price_chi2 = PartChi2(log, episode_size, parts, [](const LoggedAuction& a) {
    return std::log1p(static_cast<double>(std::max<int64_t>(a.payprice, 0)));
  });
  model.ctr_chi2 = PartChi2(log, episode_size, parts, [](const LoggedAuction& a) {
    return std::log(std::max(a.pctr, 1e-9));
  });
  model.critical = ChiSquared999(parts - 1);
  return model;
}

double ChiSquared999(int dof) {
  if (dof < 1) return 0;
  const double k = dof;
  const double z = 3.090232;  // the standard normal's 0.999 quantile
  const double c = 1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k));
  return k * c * c * c;
}

Result<std::shared_ptr<const RlbValueFunction>> RlbForStepModel(const CampaignInfo& info,
                                                                const RlbProtocol& p,
                                                                const RlbStepModel& model) {
  if (model.theta.empty() || model.theta.size() != model.prices.size()) {
    return Status::InvalidArgument("RLB by part: one CTR and one price histogram per part");
  }
  RlbDpParams dp = CampaignDpParams(info, p);
  dp.part_theta = model.theta;
  std::vector<std::vector<double>> pdfs;
  for (const auto& counts : model.prices) pdfs.push_back(MarketPricePdf(counts));
  RTB_ASSIGN_OR_RETURN(RlbValueFunction v, RlbValueFunction::Compute(dp, pdfs));
  return std::shared_ptr<const RlbValueFunction>(std::make_shared<RlbValueFunction>(std::move(v)));
}

}  // namespace rtb::sim
