#include "rtb/simulator/pacing.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "rtb/core/line_reader.h"
#include "rtb/core/text.h"
#include "rtb/simulator/rlb_dp.h"

namespace rtb::sim {

std::vector<float> PacingState(double budget_left_frac, double auctions_left_frac, double level,
                               double price_level) {
  return {static_cast<float>(budget_left_frac), static_cast<float>(auctions_left_frac), 1.0f,
          static_cast<float>(level), static_cast<float>(price_level)};
}

double PacingTable::Lookup(const std::vector<float>& s) const {
  const int K = params.steps;
  const int k = std::clamp(K - static_cast<int>(std::ceil(s[1] * K - 1e-6)), 0, K - 1);
  const int b =
      std::clamp(static_cast<int>(std::lround(s[0] * (budget_buckets - 1))), 0, budget_buckets - 1);
  const int l = std::clamp(static_cast<int>(std::lround((s[3] + 1) / 2 * (level_buckets - 1))), 0,
                           level_buckets - 1);
  const int p =
      price_buckets > 1
          ? std::clamp(static_cast<int>(std::lround((s[4] + 1) / 2 * (price_buckets - 1))), 0,
                       price_buckets - 1)
          : 0;
  return actions[((static_cast<size_t>(k) * budget_buckets + b) * level_buckets + l) *
                     price_buckets +
                 p];
}

std::vector<std::vector<float>> PacingTable::CellStates() const {
  std::vector<std::vector<float>> out;
  const int K = params.steps;
  for (int k = 0; k < K; ++k) {
    for (int b = 0; b < budget_buckets; ++b) {
      for (int l = 0; l < level_buckets; ++l) {
        for (int p = 0; p < price_buckets; ++p) {
          out.push_back(
              PacingState(static_cast<double>(b) / (budget_buckets - 1),
                          static_cast<double>(K - k) / K, -1.0 + 2.0 * l / (level_buckets - 1),
                          price_buckets > 1 ? -1.0 + 2.0 * p / (price_buckets - 1) : 0.0));
        }
      }
    }
  }
  return out;
}

std::string PacingTable::ToJson() const {
  nlohmann::json j;
  j["schema"] = "rtb.pacing-table.v1";
  if (params.base == "rlb") {
    j["base"] = params.base;
    j["c0"] = params.c0;
    j["max_bid"] = params.max_bid;
    if (!params.step_model.theta.empty()) {
      j["step_theta"] = params.step_model.theta;
      j["step_prices"] = params.step_model.prices;
    }
  }
  if (params.first_price) j["auction"] = "first_price";
  j["b0"] = params.b0;
  j["ctr_avg_train"] = params.ctr_avg_train;
  j["bratio"] = params.bratio;
  j["episode_size"] = params.episode_size;
  j["steps"] = params.steps;
  j["budget_buckets"] = budget_buckets;
  j["level_buckets"] = level_buckets;
  if (price_buckets > 1) {
    j["price_buckets"] = price_buckets;
    j["price_avg"] = params.price_avg;
  }
  j["actions"] = actions;
  return j.dump() + "\n";
}

Result<PacingTable> PacingTable::FromJson(const std::string& json, const std::string& name) {
  try {
    const auto j = nlohmann::json::parse(json);
    if (j.value("schema", "") != "rtb.pacing-table.v1") {
      return Status::InvalidArgument(name + ": not a pacing table (schema rtb.pacing-table.v1)");
    }
    static const char* kKeys[] = {
        "schema",        "base",     "c0",           "max_bid",    "b0",
        "ctr_avg_train", "bratio",   "episode_size", "steps",      "budget_buckets",
        "level_buckets", "actions",  "auction",      "step_theta", "step_prices",
        "price_buckets", "price_avg"};
    for (const auto& [k, v] : j.items()) {
      if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* x) { return k == x; }) ==
          std::end(kKeys)) {
        return Status::InvalidArgument(name + ": unknown key '" + k + "'");
      }
    }
    PacingTable t;
    t.params.base = j.value("base", std::string("lin"));
    if (t.params.base != "lin" && t.params.base != "rlb") {
      return Status::InvalidArgument(name + ": base must be lin or rlb, got '" + t.params.base +
                                     "'");
    }
    if (t.params.base == "rlb") {
      t.params.c0 = j.at("c0").get<double>();
      t.params.max_bid = j.at("max_bid").get<int64_t>();
      if (!(t.params.c0 > 0) || t.params.max_bid < 0) {
        return Status::InvalidArgument(name + ": c0 must be positive and max_bid at least 0");
      }
      if (j.contains("step_theta") || j.contains("step_prices")) {
        RlbStepModel& m = t.params.step_model;
        m.theta = j.at("step_theta").get<std::vector<double>>();
        m.prices = j.at("step_prices").get<std::vector<std::vector<int64_t>>>();
        bool ok = !m.theta.empty() && m.theta.size() == m.prices.size();
        for (size_t k = 0; ok && k < m.theta.size(); ++k) {
          ok = m.theta[k] >= 0 && static_cast<int64_t>(m.prices[k].size()) == t.params.max_bid + 1;
          for (const int64_t c : m.prices[k]) ok = ok && c >= 0;
        }
        if (!ok) {
          return Status::InvalidArgument(
              name +
              ": step_theta and step_prices need one CTR (>= 0) and one histogram of "
              "max_bid + 1 counts (>= 0) per part");
        }
      }
    }
    const auto first_price = ParseReplayAuction(j.value("auction", std::string("second_price")));
    if (!first_price.ok()) {
      return Status::InvalidArgument(name + ": auction: " + first_price.status().message());
    }
    t.params.first_price = *first_price;
    t.params.b0 = j.at("b0").get<int64_t>();
    t.params.ctr_avg_train = j.at("ctr_avg_train").get<double>();
    t.params.bratio = j.at("bratio").get<double>();
    t.params.episode_size = j.at("episode_size").get<int64_t>();
    t.params.steps = j.at("steps").get<int>();
    t.budget_buckets = j.at("budget_buckets").get<int>();
    t.level_buckets = j.at("level_buckets").get<int>();
    t.price_buckets = j.value("price_buckets", 1);
    t.params.price_avg = j.value("price_avg", 0.0);
    if (t.price_buckets < 1 || (t.price_buckets > 1) != (t.params.price_avg > 0)) {
      return Status::InvalidArgument(
          name + ": price_buckets (at least 2) and a positive price_avg go together");
    }
    t.actions = j.at("actions").get<std::vector<float>>();
    if ((t.params.base == "lin" && t.params.b0 <= 0) || !(t.params.ctr_avg_train > 0) ||
        t.params.steps <= 0 || t.params.episode_size <= 0 || t.budget_buckets < 2 ||
        t.level_buckets < 2) {
      return Status::InvalidArgument(name +
                                     ": b0, ctr_avg_train, steps, episode_size must be "
                                     "positive and bucket counts at least 2");
    }
    const size_t want =
        static_cast<size_t>(t.params.steps) * t.budget_buckets * t.level_buckets * t.price_buckets;
    if (t.actions.size() != want) {
      return Status::InvalidArgument(name + ": " + std::to_string(t.actions.size()) +
                                     " actions, expected steps x budget_buckets x level_buckets "
                                     "x price_buckets = " +
                                     std::to_string(want));
    }
    for (const float a : t.actions) {
      if (!(a >= -1.0f && a <= 1.0f)) {
        return Status::InvalidArgument(name + ": actions must lie in [-1, 1]");
      }
    }
    return t;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(name + ": " + e.what());
  }
}

Result<PacingTable> ReadPacingTable(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(std::string text, ReadBoundedFile(path, "pacing table"));
  return PacingTable::FromJson(text, path);
}

PacingStrategy::PacingStrategy(const PacingParams& p, Policy policy, bool record,
                               std::shared_ptr<const RlbValueFunction> rlb)
    : p_(p), rlb_(std::move(rlb)), policy_(std::move(policy)), record_(record) {}

std::string PacingStrategy::Describe() const {
  std::string base = "rlb";
  if (p_.base != "rlb") {
    base = "lin b0 ";
    base += std::to_string(p_.b0);
  }
  base += " x learned multiplier, ";
  base += std::to_string(p_.steps);
  return "pacing (" + base + " steps)";
}

std::vector<float> PacingStrategy::State(int64_t budget_left, int64_t auctions_left) const {
  const double n = static_cast<double>(std::max<int64_t>(1, p_.episode_size));
  return PacingState(budget_ > 0 ? static_cast<double>(budget_left) / budget_ : 0.0,
                     static_cast<double>(auctions_left) / n, level_, price_level_);
}

void PacingStrategy::CloseStep(const std::vector<float>& s2, bool done) {
  if (record_) {
    cur_.s2 = s2;
    cur_.done = done;
    cur_.reward /= p_.ctr_avg_train * static_cast<double>(p_.episode_size) / p_.steps;
    steps_.push_back(cur_);
  }
  open_ = false;
}

void PacingStrategy::Finish() {
  if (open_) CloseStep(State(budget_left_, 0), true);
}

int64_t PacingStrategy::Bid(const LoggedAuction& a, const BidContext& ctx) {
  if (ctx.episode != episode_) {
    Finish();
    episode_ = ctx.episode;
    budget_ = ctx.budget;
    level_ = 0;
    price_level_ = 0;
    bucket_ = -1;
    pctr_sum_ = 0;
    seen_ = 0;
    paid_sum_ = 0;
    wins_ = 0;
  }
  const int64_t n = std::max<int64_t>(1, p_.episode_size);
  const int64_t bucket = (ctx.auctions_left * p_.steps + n - 1) / n;  // ceil(left * K / N)
  if (bucket != bucket_) {
    if (seen_ > 0) {
      const double mean = pctr_sum_ / static_cast<double>(seen_);
      level_ = mean > 0 ? std::clamp(std::log2(mean / p_.ctr_avg_train) / 2, -1.0, 1.0) : -1.0;
      if (p_.price_avg > 0) {
        const double paid = wins_ > 0 ? paid_sum_ / static_cast<double>(wins_) : 0;
        price_level_ = paid > 0 ? std::clamp(std::log2(paid / p_.price_avg), -1.0, 1.0)
                                : (wins_ > 0 ? -1.0 : 1.0);
      }
    }
    const std::vector<float> s = State(ctx.budget_left, ctx.auctions_left);
    if (open_) CloseStep(s, false);
    bucket_ = bucket;
    cur_ = PacingStep{};
    cur_.s = s;
    cur_.a = std::clamp(policy_(s), -1.0, 1.0);
    multiplier_ = BidMultiplier(cur_.a, p_.bratio, p_.alpha_range);
    open_ = true;
    pctr_sum_ = 0;
    seen_ = 0;
    paid_sum_ = 0;
    wins_ = 0;
  }
  budget_left_ = ctx.budget_left;
  if (rlb_ != nullptr) {
    const int64_t n_left = rlb_->params().episode_size - ctx.step;
    if (n_left < 1) return 0;
    const int64_t b = std::clamp<int64_t>(ctx.budget_left, 0, rlb_->params().budget);
    return static_cast<int64_t>(static_cast<double>(rlb_->Bid(n_left, b, a.pctr)) * multiplier_);
  }
  return static_cast<int64_t>(a.pctr * static_cast<double>(p_.b0) / p_.ctr_avg_train * multiplier_);
}

void PacingStrategy::Observe(const LoggedAuction& a, int64_t /*bid*/, bool won, int64_t paid) {
  pctr_sum_ += a.pctr;
  ++seen_;
  if (won) {
    paid_sum_ += static_cast<double>(paid);
    ++wins_;
    budget_left_ -= paid;
    cur_.reward += a.pctr;
    cur_.clicks += a.click;
  }
}

}  // namespace rtb::sim
