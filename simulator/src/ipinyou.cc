#include "rtb/simulator/ipinyou.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "rtb/core/line_reader.h"
#include "rtb/core/rng.h"
#include "rtb/core/text.h"

namespace rtb::sim {
namespace {

// Splits a line on tabs (empty fields are kept; a trailing '\r' is dropped).
void SplitTabs(std::string_view line, std::vector<std::string_view>* out) {
  out->clear();
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    out->push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
}

// FNV-1a of "column=value", so equal values in different columns are different features.
uint32_t HashFeature(std::string_view column, std::string_view value, uint32_t mask) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](std::string_view s) {
    for (const char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
  };
  mix(column);
  mix("=");
  mix(value);
  return static_cast<uint32_t>(h ^ (h >> 32)) & mask;
}

double Sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

const std::vector<std::string>& DefaultIpinyouFeatures() {
  static const std::vector<std::string> k = {
      "weekday",        "hour",       "useragent", "region",    "city",
      "adexchange",     "domain",     "slotid",    "slotwidth", "slotheight",
      "slotvisibility", "slotformat", "creative",  "keypage",   "usertag"};
  return k;
}

CampaignInfo IpinyouLog::Totals() const {
  CampaignInfo c;
  c.imp_train = c.imp_test = static_cast<int64_t>(auctions.size());
  for (const auto& a : auctions) {
    c.clk_train += a.click;
    c.cost_train += static_cast<double>(a.payprice);
  }
  c.clk_test = c.clk_train;
  c.cost_test = c.cost_train;
  return c;
}

namespace {

// The log's lines, read from `in` one at a time: the header, then one auction per line.
Result<IpinyouLog> ParseIpinyouLines(LineReader& in, const IpinyouReadOptions& opt) {
  IpinyouLog log;
  const std::string& name = in.name();
  std::string_view first;
  const bool has_header = in.Next(&first);
  RTB_RETURN_IF_ERROR(in.status());
  const std::string header_line(has_header ? first : std::string_view());  // kept: views below
  std::vector<std::string_view> header;
  SplitTabs(header_line, &header);
  auto column = [&header](std::string_view n) -> int {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == n) return static_cast<int>(i);
    return -1;
  };
  const int c_click = column("click"), c_pay = column("payprice"), c_floor = column("slotprice"),
            c_time = column("timestamp"), c_adv = column("advertiser"), c_pctr = column("pctr");
  if (c_click < 0 || c_pay < 0) {
    return Status::InvalidArgument(
        name +
        ":1: the header must name the columns 'click' and 'payprice' (tab-separated); "
        "got '" +
        std::string(header_line.substr(0, 200)) + "'");
  }
  if (!opt.advertiser.empty() && c_adv < 0) {
    return Status::InvalidArgument(name + ":1: --advertiser needs an 'advertiser' column");
  }
  log.has_pctr = c_pctr >= 0;
  log.has_floor = c_floor >= 0;
  log.has_timestamp = c_time >= 0;
  std::vector<int> feat_cols;
  for (const auto& f : opt.features.empty() ? DefaultIpinyouFeatures() : opt.features) {
    const int c = column(f);
    if (c >= 0) {
      feat_cols.push_back(c);
      log.feature_names.push_back(f);
    } else if (!opt.features.empty()) {
      return Status::InvalidArgument(name + ":1: feature column '" + f + "' is not in the header");
    }
  }
  log.feature_count = static_cast<int>(feat_cols.size());
  const uint32_t mask = (1u << std::clamp(opt.hash_bits, 4, 28)) - 1;
  log.auctions.reserve(in.ReserveHint(200));
  std::vector<std::string_view> f;
  std::string_view line;
  while (in.Next(&line)) {
    const int64_t line_no = in.line_no();
    SplitTabs(line, &f);
    std::string why;
    LoggedAuction a;
    int64_t ts = 0;
    auto field = [&f](int c) { return f[static_cast<size_t>(c)]; };
    if (f.size() != header.size()) {
      why = "expected " + std::to_string(header.size()) +
            " tab-separated fields (the header's), "
            "found " +
            std::to_string(f.size());
    } else if (!ParseWhole(field(c_click), &a.click) || (a.click != 0 && a.click != 1)) {
      why = "click must be 0 or 1, got '" + std::string(field(c_click)) + "'";
    } else if (!ParseWhole(field(c_pay), &a.payprice) || a.payprice < 0) {
      why = "payprice must be a non-negative integer, got '" + std::string(field(c_pay)) + "'";
    } else if (c_floor >= 0 && (!ParseWhole(field(c_floor), &a.floor) || a.floor < 0)) {
      why = "slotprice must be a non-negative integer, got '" + std::string(field(c_floor)) + "'";
    } else if (c_time >= 0 && (!ParseWhole(field(c_time), &ts) || field(c_time).size() != 17)) {
      why = "timestamp must be yyyyMMddHHmmssSSS, got '" + std::string(field(c_time)) + "'";
    } else if (c_pctr >= 0 &&
               (!ParseWhole(field(c_pctr), &a.pctr) || !(a.pctr >= 0 && a.pctr <= 1))) {
      why = "pctr must be a number in [0, 1], got '" + std::string(field(c_pctr)) + "'";
    }
    if (!why.empty()) {
      const std::string where = name + ":" + std::to_string(line_no) + ": " + why;
      if (!opt.skip_malformed) return Status::InvalidArgument(where);
      if (log.skipped++ == 0) log.first_skipped = where;
      continue;
    }
    if (!opt.advertiser.empty() && field(c_adv) != opt.advertiser) {
      ++log.filtered;
      continue;
    }
    log.auctions.push_back(a);
    log.timestamps.push_back(ts);
    for (size_t k = 0; k < feat_cols.size(); ++k) {
      log.features.push_back(HashFeature(log.feature_names[k], field(feat_cols[k]), mask));
    }
  }
  RTB_RETURN_IF_ERROR(in.status());
  return log;
}

}  // namespace

Result<IpinyouLog> ParseIpinyouLog(std::string_view text, const std::string& name,
                                   const IpinyouReadOptions& opt) {
  LineReader in(text, name);
  return ParseIpinyouLines(in, opt);
}

Result<IpinyouLog> ReadIpinyouLog(const std::string& path, const IpinyouReadOptions& opt) {
  LineReader in(path, "log");
  return ParseIpinyouLines(in, opt);
}

void SortByTime(IpinyouLog* log) {
  const size_t n = log->auctions.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return log->timestamps[a] < log->timestamps[b]; });
  IpinyouLog sorted = *log;
  const size_t F = static_cast<size_t>(log->feature_count);
  for (size_t i = 0; i < n; ++i) {
    sorted.auctions[i] = log->auctions[order[i]];
    sorted.timestamps[i] = log->timestamps[order[i]];
    for (size_t k = 0; k < F; ++k) sorted.features[i * F + k] = log->features[order[i] * F + k];
  }
  *log = std::move(sorted);
}

CtrModel::CtrModel(int hash_bits)
    : w_(size_t{1} << static_cast<size_t>(std::clamp(hash_bits, 4, 28)), 0.0f) {}

double CtrModel::Predict(const uint32_t* features, int count) const {
  double z = bias_;
  for (int k = 0; k < count; ++k) z += w_[features[k] & (w_.size() - 1)];
  return Sigmoid(z);
}

void CtrModel::Fit(const IpinyouLog& log, int epochs, double lr, double l2, uint64_t seed) {
  const size_t n = log.auctions.size(), F = static_cast<size_t>(log.feature_count);
  if (n == 0) return;
  // The bias starts at the log's CTR, so a model with no features predicts the average.
  int64_t clicks = 0;
  for (const auto& a : log.auctions) clicks += a.click;
  const double ctr = std::clamp(static_cast<double>(clicks) / static_cast<double>(n), 1e-6, 0.5);
  bias_ = static_cast<float>(std::log(ctr / (1 - ctr)));
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  Rng rng(seed);
  for (int e = 0; e < epochs; ++e) {
    for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.UniformInt(i)]);
    for (const size_t i : order) {
      const uint32_t* f = log.features.data() + i * F;
      const double g = Predict(f, static_cast<int>(F)) - log.auctions[i].click;
      bias_ -= static_cast<float>(lr * g);
      for (size_t k = 0; k < F; ++k) {
        float& w = w_[f[k] & (w_.size() - 1)];
        w -= static_cast<float>(lr * (g + l2 * w));
      }
    }
  }
}

void CtrModel::Score(IpinyouLog* log) const {
  const size_t F = static_cast<size_t>(log->feature_count);
  for (size_t i = 0; i < log->auctions.size(); ++i) {
    log->auctions[i].pctr = Predict(log->features.data() + i * F, static_cast<int>(F));
  }
}

double CtrModel::LogLoss(const IpinyouLog& log) const {
  const size_t F = static_cast<size_t>(log.feature_count);
  double sum = 0;
  for (size_t i = 0; i < log.auctions.size(); ++i) {
    const double p =
        std::clamp(Predict(log.features.data() + i * F, static_cast<int>(F)), 1e-9, 1 - 1e-9);
    sum -= log.auctions[i].click ? std::log(p) : std::log(1 - p);
  }
  return log.auctions.empty() ? 0.0 : sum / static_cast<double>(log.auctions.size());
}

B0Tuning TuneLinB0(const std::function<ReplayTotals(BidStrategy&)>& replay, double ctr_avg_train,
                   int64_t step, int64_t max_b0) {
  B0Tuning t;
  for (int64_t b0 = step; b0 <= max_b0; b0 += step) {
    auto s = LinBid(b0, ctr_avg_train);
    const ReplayTotals r = replay(*s);
    t.clicks_by_b0.emplace_back(b0, r.clicks);
    if (t.b0 == 0 || r.clicks > t.best.clicks ||
        (r.clicks == t.best.clicks && r.cost < t.best.cost)) {
      t.b0 = b0;
      t.best = r;
    }
  }
  return t;
}

}  // namespace rtb::sim
