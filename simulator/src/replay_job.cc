#include "rtb/simulator/replay_job.h"

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "rtb/core/events.h"
#include "rtb/core/report_doc.h"
#include "rtb/core/text.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/ipinyou.h"
#include "rtb/simulator/outcome_replay.h"
#include "rtb/simulator/pacing.h"
#include "rtb/simulator/replay.h"
#include "rtb/simulator/rlb_dp.h"
#include "rtb/simulator/simulate.h"

namespace rtb::sim {
namespace {

using json = nlohmann::json;

// printf into a string.
void Appendf(std::string* out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  *out += buf;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) {
    if (!x.empty()) out.push_back(x);
  }
  return out;
}

std::string Fmt(double v, const char* f = "%.6g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The counters every format reports per method in --json.
json MethodJson(const std::string& name, const Outcome& o) {
  return {{"name", name},
          {"auctions", o.auctions},
          {"impressions", o.impressions},
          {"clicks", o.clicks},
          {"conversions", o.conversions},
          {"cost", o.cost.units()},
          {"revenue", o.revenue.units()}};
}

// ---- single-bidder logs (rlb, ipinyou) --------------------------------------------------

struct SingleLog {
  std::vector<LoggedAuction> auctions;
  int64_t skipped = 0;
  std::string first_skipped;
};

struct Loaded {
  SingleLog test, validation;
  bool have_validation = false;
  std::string validation_name;
  CampaignInfo info;
  std::vector<std::pair<std::string, std::string>> meta;
};

Result<Loaded> LoadSingle(const ReplayJob& a) {
  Loaded L;
  const bool skip = a.on_error == "skip";
  if (a.format == "rlb") {
    if (a.info.empty()) return Status::InvalidArgument("--format rlb needs --info");
    RTB_ASSIGN_OR_RETURN(auto log, ReadCompactLog(a.log, {skip}));
    L.test = {std::move(log.auctions), log.skipped, log.first_skipped};
    RTB_ASSIGN_OR_RETURN(L.info, ReadCampaignInfo(a.info));
    const std::string vname = !a.validation_log.empty() ? a.validation_log : a.train_log;
    if (!vname.empty()) {
      RTB_ASSIGN_OR_RETURN(auto v, ReadCompactLog(vname, {skip}));
      L.validation = {std::move(v.auctions), v.skipped, v.first_skipped};
      L.have_validation = true;
      L.validation_name = vname;
    }
    L.meta.push_back({"campaign summary", a.info});
    return L;
  }
  // Raw iPinYou.
  IpinyouReadOptions ro;
  ro.skip_malformed = skip;
  ro.advertiser = a.advertiser;
  RTB_ASSIGN_OR_RETURN(IpinyouLog test, ReadIpinyouLog(a.log, ro));
  std::optional<IpinyouLog> train, validation;
  if (!a.train_log.empty()) {
    RTB_ASSIGN_OR_RETURN(train, ReadIpinyouLog(a.train_log, ro));
  }
  if (!a.validation_log.empty()) {
    RTB_ASSIGN_OR_RETURN(validation, ReadIpinyouLog(a.validation_log, ro));
  }
  if (!test.has_pctr) {
    if (!train) {
      return Status::InvalidArgument(
          a.log + " has no pctr column: give --train-log (the CTR model is fitted on it)");
    }
    if (train->feature_count == 0) {
      return Status::InvalidArgument(a.train_log +
                                     ": no feature column for the CTR model in the header");
    }
    CtrModel model(ro.hash_bits);
    model.Fit(*train, 2, 0.05, 1e-6, a.seed);
    model.Score(&test);
    model.Score(&*train);
    if (validation) model.Score(&*validation);
    std::string feats;
    for (const auto& f : train->feature_names) feats += (feats.empty() ? "" : " ") + f;
    L.meta.push_back({"pCTR", "hashed logistic regression fitted on " + a.train_log + " (" + feats +
                                  "); test log loss " + Fmt(model.LogLoss(test), "%.5f")});
  } else {
    L.meta.push_back({"pCTR", "the log's pctr column"});
  }
  if (a.protocol == "benchmark" && test.has_timestamp) SortByTime(&test);
  if (!a.info.empty()) {
    RTB_ASSIGN_OR_RETURN(L.info, ReadCampaignInfo(a.info));
    L.meta.push_back({"campaign summary", a.info});
  } else if (train) {
    L.info = train->Totals();
    const CampaignInfo t = test.Totals();
    L.info.imp_test = t.imp_test;
    L.info.clk_test = t.clk_test;
    L.info.cost_test = t.cost_test;
    L.meta.push_back({"campaign summary",
                      "computed: training totals of " + a.train_log + ", test totals of " + a.log});
  } else {
    L.info = test.Totals();
    L.meta.push_back({"campaign summary", "computed from the test log itself (no --train-log)"});
  }
  if (L.info.imp_train <= 0 || L.info.clk_train <= 0 || L.info.cost_train <= 0) {
    return Status::InvalidArgument("the training totals need impressions, clicks and cost > 0");
  }
  if (!a.advertiser.empty()) {
    L.meta.push_back({"advertiser", a.advertiser + " (" + std::to_string(test.filtered) +
                                        " lines of others left out)"});
  }
  L.test = {std::move(test.auctions), test.skipped, test.first_skipped};
  if (validation) {
    L.validation = {std::move(validation->auctions), validation->skipped,
                    validation->first_skipped};
    L.have_validation = true;
    L.validation_name = a.validation_log;
  } else if (train) {
    L.validation = {std::move(train->auctions), train->skipped, train->first_skipped};
    L.have_validation = true;
    L.validation_name = a.train_log;
  }
  return L;
}

struct MethodRun {
  std::string name, description;
  ReplayTotals totals;
};

// What the strategies of one RunSingle share while they are made and replayed: the protocol,
// Lin-Bid's b0 (tuned once), RLB's value function (computed once for every strategy that
// reads it: rlb, pacing on RLB) and the report's lines about them.
struct SingleContext {
  const ReplayJob& a;
  const Loaded& L;
  RlbProtocol rlb;
  BenchmarkProtocol bench;
  std::vector<std::pair<std::string, std::string>> meta;
  int64_t b0 = 0;
  std::string b0_note;
  std::shared_ptr<const RlbValueFunction> rlb_v;
  double rlb_secs = 0;  // how long computing rlb_v took

  ReplayTotals RunOn(const std::vector<LoggedAuction>& log, BidStrategy& s) const {
    if (a.protocol == "rlb") return ReplayRlb(log, L.info, rlb, s);
    return ReplayBenchmark(log, L.info, bench, s);
  }

  Result<std::shared_ptr<const RlbValueFunction>> RlbValue(const std::string& who) {
    if (rlb_v != nullptr) return rlb_v;
    const auto t0 = std::chrono::steady_clock::now();
    RTB_ASSIGN_OR_RETURN(rlb_v, RlbForCampaign(L.info, rlb, who));
    rlb_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rlb_v;
  }
};

std::unique_ptr<BidStrategy> MakeLin(SingleContext& c) {
  const Loaded& L = c.L;
  if (c.b0 <= 0) {
    // Tuned the RLB code's way: steps of 6 on the validation log under this protocol.
    const auto& v = L.have_validation ? L.validation.auctions : L.test.auctions;
    const B0Tuning t =
        TuneLinB0([&](BidStrategy& st) { return c.RunOn(v, st); }, L.info.CtrTrain());
    c.b0 = t.b0;
    c.b0_note =
        std::to_string(c.b0) + " (tuned in steps of 6 up to 600 on " +
        (L.have_validation ? L.validation_name : c.a.log + " itself: no validation log given") +
        ", " + std::to_string(t.best.clicks) + " clicks there)";
  } else if (c.b0_note.empty()) {
    c.b0_note = std::to_string(c.b0) + " (given)";
  }
  return LinBid(c.b0, L.info.CtrTrain());
}

Result<std::unique_ptr<BidStrategy>> MakePacing(SingleContext& c) {
  const ReplayJob& a = c.a;
  if (a.pacing.empty()) {
    return Status::InvalidArgument("--strategy pacing needs --pacing <table.json>");
  }
  if (a.protocol != "rlb") {
    return Status::InvalidArgument("the pacing policy plays the rlb protocol (episodes)");
  }
  auto t = ReadPacingTable(a.pacing);
  if (!t.ok()) return t.status();
  if (t->params.episode_size != a.episode_size) {
    return Status::InvalidArgument(
        a.pacing + " was trained on episodes of " + std::to_string(t->params.episode_size) +
        " auctions; --episode-size is " + std::to_string(a.episode_size));
  }
  if (t->params.first_price != (a.auction == "first_price")) {
    return Status::InvalidArgument(a.pacing + " was trained in a " +
                                   (t->params.first_price ? "first" : "second") +
                                   "-price auction; --auction is " + a.auction);
  }
  auto tp = std::make_shared<const PacingTable>(std::move(*t));
  std::shared_ptr<const RlbValueFunction> base_rlb;
  std::string base = "Lin-Bid b0 " + std::to_string(tp->params.b0);
  if (tp->params.base == "rlb") {
    if (std::abs(tp->params.c0 - a.c0) > 1e-12) {
      return Status::InvalidArgument(a.pacing + " scales RLB's bids for c0 = " +
                                     Fmt(tp->params.c0) + "; --c0 is " + Fmt(a.c0));
    }
    if (tp->params.max_bid != a.max_bid) {
      return Status::InvalidArgument(a.pacing + " scales RLB's bids for max bid " +
                                     std::to_string(tp->params.max_bid) + "; --max-bid is " +
                                     std::to_string(a.max_bid));
    }
    if (tp->params.step_model.theta.empty()) {
      RTB_ASSIGN_OR_RETURN(base_rlb, c.RlbValue("a pacing table on RLB's bids"));
      base = "RLB's bid";
    } else {
      RTB_ASSIGN_OR_RETURN(base_rlb, RlbForStepModel(c.L.info, c.rlb, tp->params.step_model));
      base = "the bid of RLB's program on the market by part of the day (" +
             std::to_string(tp->params.step_model.theta.size()) + " parts)";
    }
  }
  c.meta.push_back(
      {"pacing table", a.pacing + " (" + base + " x 1 + clip(a x " + Fmt(tp->params.bratio) +
                           ", +-" + Fmt(tp->params.alpha_range) + "); " +
                           std::to_string(tp->params.steps) + " decisions per episode)"});
  return std::unique_ptr<BidStrategy>(std::make_unique<PacingStrategy>(
      tp->params, [tp](const std::vector<float>& st) { return tp->Lookup(st); }, false, base_rlb));
}

Result<std::unique_ptr<BidStrategy>> MakeRlb(SingleContext& c) {
  if (c.a.protocol != "rlb") {
    return Status::InvalidArgument("RLB's dynamic program plays the rlb protocol (episodes)");
  }
  RTB_ASSIGN_OR_RETURN(std::shared_ptr<const RlbValueFunction> v, c.RlbValue("--strategy rlb"));
  c.meta.push_back({"RLB value function", "V(n, b) for n < " + std::to_string(c.a.episode_size) +
                                              ", b <= " + std::to_string(v->params().budget) +
                                              " in " + Fmt(c.rlb_secs, "%.2f") + " s (" +
                                              std::to_string(v->early_stopped_rows()) +
                                              " rows stopped early at V_max)"});
  return std::unique_ptr<BidStrategy>(std::make_unique<RlbDpStrategy>(v));
}

// The strategy named n (--strategy's list).
Result<std::unique_ptr<BidStrategy>> MakeStrategy(const std::string& n, SingleContext& c) {
  if (n == "lin") return MakeLin(c);
  if (n == "mcpc") return McpcBid(c.L.info.EcpcTrain());
  if (n == "const") return ConstBid(c.a.const_bid);
  if (n == "rand") return RandBid(c.a.rand_max, c.a.seed);
  if (n == "pacing") return MakePacing(c);
  if (n == "rlb") return MakeRlb(c);
  return Status::InvalidArgument("unknown strategy '" + n + "' for " + c.a.format +
                                 " logs (lin, mcpc, const, rand, pacing, rlb)");
}

// The protocol in one line (budget: the first method's, the same for all).
std::string ProtocolLine(const ReplayJob& a, const ReplayTotals& first) {
  return a.protocol == "rlb"
             ? "RLB code (episodes): N = " + std::to_string(a.episode_size) +
                   ", B = int(cpm_train x c0 x N) = " + std::to_string(first.budget) +
                   " per episode (c0 = " + Fmt(a.c0) + "), bid = min(bid, " +
                   std::to_string(a.max_bid) + ", budget left), win iff bid >= payprice" +
                   (a.auction == "first_price" ? ", pay the bid (first price)"
                                               : ", pay payprice (second price)")
             : "benchmark paper (whole log in time order): budget = " + Fmt(a.budget_fraction) +
                   " x test cost = " + std::to_string(first.budget) +
                   ", win iff bid > payprice and bid >= slotprice, bid 0 once cost exceeds the "
                   "budget";
}

// --json: the first method's totals, and every method's when there are several.
std::string SingleJson(const SingleContext& c, const std::vector<MethodRun>& runs) {
  const ReplayTotals& t = runs[0].totals;
  json j = {{"format", c.a.format},
            {"protocol", c.a.protocol},
            {"strategy", runs[0].description},
            {"auctions", t.auctions},
            {"impressions", t.impressions},
            {"clicks", t.clicks},
            {"cost", t.cost},
            {"budget", t.budget},
            {"episodes", t.episodes},
            {"win_rate", t.WinRate()},
            {"cpm", t.Cpm()},
            {"ecpc", t.Ecpc()},
            {"expected_clicks", t.expected_clicks},
            {"skipped_lines", c.L.test.skipped}};
  if (!c.b0_note.empty()) j["b0"] = c.b0;
  if (runs.size() > 1) {
    json ms = json::array();
    for (const auto& m : runs) {
      ms.push_back({{"name", m.name},
                    {"strategy", m.description},
                    {"impressions", m.totals.impressions},
                    {"clicks", m.totals.clicks},
                    {"expected_clicks", m.totals.expected_clicks},
                    {"cost", m.totals.cost},
                    {"win_rate", m.totals.WinRate()},
                    {"cpm", m.totals.Cpm()},
                    {"ecpc", m.totals.Ecpc()}});
    }
    j["methods"] = ms;
  }
  return j.dump();
}

// The text for a person: the protocol, then one line per method.
std::string SingleText(const ReplayJob& a, const std::vector<MethodRun>& runs,
                       const std::string& protocol_line) {
  std::string text;
  Appendf(&text, "protocol: %s\nlog %s (%s)\n", protocol_line.c_str(), a.log.c_str(),
          a.format.c_str());
  for (const auto& m : runs) {
    const auto& t = m.totals;
    Appendf(&text,
            "%-8s auctions %lld, impressions %lld, clicks %lld, cost %lld, win rate %.4f, CPM "
            "%.2f, eCPC %.4f  [%s]\n",
            m.name.c_str(), static_cast<long long>(t.auctions),
            static_cast<long long>(t.impressions), static_cast<long long>(t.clicks),
            static_cast<long long>(t.cost), t.WinRate(), t.Cpm(), t.Ecpc(), m.description.c_str());
  }
  return text;
}

Result<Report> SingleReport(const SingleContext& c, const std::vector<std::string>& names,
                            const std::vector<MethodRun>& runs, const std::string& protocol_line) {
  const ReplayJob& a = c.a;
  Report r;
  r.kind = "replay";
  r.title = "Replay of " + a.log + " (" + a.format + " log, " + a.protocol + " protocol)";
  r.meta = c.meta;
  r.meta.push_back({"protocol", protocol_line});
  r.meta.insert(r.meta.end(), c.L.meta.begin(), c.L.meta.end());
  if (!c.b0_note.empty()) r.meta.push_back({"Lin-Bid b0", c.b0_note});
  r.meta.push_back({"skipped lines", std::to_string(c.L.test.skipped)});
  r.row_label = "campaign";
  r.row_names = {a.advertiser.empty() ? "campaign" : "advertiser " + a.advertiser};
  std::string baseline = a.baseline;
  if (baseline.empty()) {
    baseline = names[0];
    for (const auto& n : names)
      if (n == "lin") baseline = "lin";
  }
  bool found = false;
  for (const auto& m : runs) {
    RunResult run;
    run.rows = {ToOutcome(m.totals)};
    run.total = run.rows[0];
    r.methods.push_back({m.name, m.description, {run}});
    found = found || m.name == baseline;
  }
  if (!found) {
    return Status::InvalidArgument("--baseline " + baseline + " is not in --strategy");
  }
  r.baseline = baseline;
  r.primary = names[0];
  r.objective = "clicks";
  r.relative_metrics = {"clicks", "impressions", "cost", "win_rate", "cpm", "cost_per_click"};
  r.unavailable = {"revenue", "roi", "cost_per_conversion", "conversions"};
  std::vector<double> expected_clicks;
  for (const auto& m : runs) expected_clicks.push_back(m.totals.expected_clicks);
  r.extra_totals = {{"expected clicks", expected_clicks}};
  std::string expected =
      "Expected clicks (sum of pCTR over won impressions; less noisy than "
      "the logged clicks):";
  for (const auto& m : runs) expected += " " + m.name + " " + Fmt(m.totals.expected_clicks, "%.2f");
  r.notes = {expected + ".", "Protocol: " + protocol_line + ".",
             "Prices are the log's CPM unit: cost = sum of payprice / 1000 per impression "
             "(shown in currency units); CPM = cost x 1000 / impressions = mean payprice.",
             "Clicks are the logged clicks of the won impressions; the logs carry no order "
             "value, so revenue, ROI and CPA are n/a.",
             "Relative columns are percentages of the baseline (" + baseline + ")."};
  return r;
}

Result<ReplayOutput> RunSingle(const ReplayJob& a) {
  RTB_ASSIGN_OR_RETURN(const Loaded L, LoadSingle(a));
  const std::vector<std::string> names = SplitList(a.strategy.empty() ? "lin" : a.strategy);
  if (names.empty()) return Status::InvalidArgument("--strategy is empty");
  RTB_ASSIGN_OR_RETURN(const bool first_price, ParseReplayAuction(a.auction));
  if (first_price && a.protocol != "rlb") {
    return Status::InvalidArgument("--auction first_price plays the rlb protocol (episodes)");
  }
  SingleContext c{a,
                  L,
                  RlbProtocol{a.c0, a.episode_size, a.max_bid, first_price},
                  BenchmarkProtocol{a.budget_fraction},
                  {{"format", a.format},
                   {"log", a.log},
                   {"auctions", doc::Grouped(static_cast<double>(L.test.auctions.size()), 0)}},
                  a.b0};
  std::vector<MethodRun> runs;
  for (const std::string& n : names) {
    RTB_ASSIGN_OR_RETURN(const std::unique_ptr<BidStrategy> s, MakeStrategy(n, c));
    runs.push_back({n, s->Describe(), c.RunOn(L.test.auctions, *s)});
  }
  ReplayOutput out;
  if (L.test.skipped > 0) {
    out.warnings.push_back("skipped " + std::to_string(L.test.skipped) +
                           " malformed lines (first: " + L.test.first_skipped + ")");
  }
  const std::string protocol_line = ProtocolLine(a, runs[0].totals);
  out.json = SingleJson(c, runs);
  out.text = SingleText(a, runs, protocol_line);
  if (a.report) {
    RTB_ASSIGN_OR_RETURN(out.report, SingleReport(c, names, runs, protocol_line));
  }
  return out;
}

// ---- full-information logs -------------------------------------------------------------

Result<ReplayOutput> RunFull(const ReplayJob& a) {
  ReplayOutput out;
  auto cfg = LoadSimulatorConfig(a.config);
  if (!cfg.ok()) return cfg.status();
  const std::string train = a.train_log.empty() ? a.log : a.train_log;
  auto sc = BuildScenario(*cfg, train, a.log, a.progress);
  if (!sc.ok()) return sc.status();
  SimulateOptions opt;
  std::vector<std::string> policies =
      a.policies.empty() ? std::vector<std::string>{"manual"} : a.policies;
  opt.policy = policies[0];
  opt.more_policies.assign(policies.begin() + 1, policies.end());
  opt.kind = "replay";
  opt.config_path = a.config;
  opt.progress = a.progress;
  opt.extra_meta = {{"log", a.log},
                    {"clusters built on",
                     train + (a.train_log.empty() ? " (no --train-log: the log itself)" : "")},
                    {"protocol", "full information: every logged candidate re-auctioned, " +
                                     DescribeAuction(cfg->auction)}};
  auto r = Simulate(**sc, opt);
  if (!r.ok()) return r.status();
  {
    json ms = json::array();
    for (const auto& m : r->methods) {
      const Outcome& o = m.runs[0].total;
      json j = MethodJson(m.name, o);
      j["budget"] = o.budget.units();
      j["roi"] = Roi(o);
      ms.push_back(std::move(j));
    }
    const Outcome& o = r->methods[0].runs[0].total;
    json j = {{"format", "full"},       {"protocol", "full-information"}, {"policy", policies[0]},
              {"auctions", o.auctions}, {"impressions", o.impressions},   {"clicks", o.clicks},
              {"cost", o.cost.units()}, {"revenue", o.revenue.units()},   {"methods", ms}};
    out.json = j.dump();
  }
  {
    for (const auto& m : r->methods) {
      const Outcome& o = m.runs[0].total;
      Appendf(&out.text, "%-20s impressions %lld, clicks %.1f, cost %.2f, revenue %.2f, ROI %.3f\n",
              m.name.c_str(), static_cast<long long>(o.impressions), o.clicks, o.cost.units(),
              o.revenue.units(), Roi(o));
    }
  }
  if (a.report) out.report = std::move(*r);
  return out;
}

// ---- the engine's outcome events -------------------------------------------------------

// The events of a Kafka topic (and --dump's copy of them), joined into bids. *source names the
// topic; messages the brokers no longer hold add a warning.
Result<OutcomeLog> ReadTopicEvents(const ReplayJob& a, const TopicReader& topic,
                                   std::string* source, std::vector<std::string>* warnings) {
  const bool skip = a.on_error == "skip";
  *source = "topic " + a.topic + " at " + a.brokers;
  OutcomeLogBuilder b;
  std::unique_ptr<std::ofstream> dump;
  if (!a.dump.empty()) dump = std::make_unique<std::ofstream>(a.dump, std::ios::trunc);
  Status bad = Status::Ok();
  int64_t not_retained = 0;
  if (!topic) return Status::InvalidArgument("events from Kafka need a topic reader");
  const Status st = topic(
      [&](int32_t p, int64_t off, std::string_view payload) {
        if (dump) *dump << payload << '\n';
        auto e = DecodeEvent(payload);
        const Status added = e.ok() ? b.Add(*e) : e.status();
        if (added.ok()) return;
        const std::string where =
            a.topic + "[" + std::to_string(p) + "]@" + std::to_string(off) + ": " + added.message();
        if (!skip && bad.ok()) bad = Status::InvalidArgument(where);
        b.AddMalformed(where);
      },
      &not_retained);
  if (!st.ok()) return st;
  if (not_retained > 0) {
    warnings->push_back("the brokers no longer hold the first " + std::to_string(not_retained) +
                        " messages of " + a.topic + " (retention); the replay covers the rest");
    *source += " (" + std::to_string(not_retained) + " oldest messages no longer retained)";
  }
  if (!bad.ok()) return bad;
  return b.Finish();
}

// The events of the topic (--brokers) or of the dump file (--log), joined into bids.
Result<OutcomeLog> ReadOutcomeEvents(const ReplayJob& a, const TopicReader& topic,
                                     std::string* source, std::vector<std::string>* warnings) {
  OutcomeLog log;
  if (!a.brokers.empty()) {
    RTB_ASSIGN_OR_RETURN(log, ReadTopicEvents(a, topic, source, warnings));
  } else {
    *source = a.log;
    RTB_ASSIGN_OR_RETURN(log, ReadOutcomeDump(a.log, a.on_error == "skip"));
  }
  if (log.skipped > 0) {
    warnings->push_back("skipped " + std::to_string(log.skipped) +
                        " malformed events (first: " + log.first_skipped + ")");
  }
  return log;
}

struct EventsRun {
  std::string name;
  OutcomeReplayResult r;
};

// --json: the first strategy's totals, the log's counts, and every strategy's totals.
std::string EventsJson(const OutcomeLog& log, const std::vector<EventsRun>& runs) {
  json ms = json::array();
  for (const auto& r : runs) {
    json j = MethodJson(r.name, r.r.total);
    j["unknown"] = r.r.unknown;
    ms.push_back(std::move(j));
  }
  const Outcome& o = runs[0].r.total;
  json j = {{"format", "events"},
            {"protocol", "outcomes"},
            {"strategy", runs[0].name},
            {"auctions", o.auctions},
            {"impressions", o.impressions},
            {"clicks", o.clicks},
            {"conversions", o.conversions},
            {"cost", o.cost.units()},
            {"revenue", o.revenue.units()},
            {"unknown", runs[0].r.unknown},
            {"events", log.events},
            {"duplicates", log.duplicates},
            {"orphans", log.orphans},
            {"orphan_impressions", log.orphan_impressions},
            {"orphan_cost", Micros(log.orphan_cost_micros).units()},
            {"skipped", log.skipped},
            {"methods", ms}};
  return j.dump();
}

// The text for a person: what was read, then one line per strategy.
std::string EventsText(const OutcomeLog& log, const std::string& source,
                       const std::vector<EventsRun>& runs) {
  std::string text;
  Appendf(&text, "%lld events from %s: %zu bids, %lld duplicates dropped, %lld orphan notices\n",
          static_cast<long long>(log.events), source.c_str(), log.bids.size(),
          static_cast<long long>(log.duplicates), static_cast<long long>(log.orphans));
  if (log.orphan_impressions > 0) {
    Appendf(&text,
            "%lld won impressions (cost %.2f) have notices but no bid event: not in any "
            "replay below (a bidder killed before its bid events reached Kafka?)\n",
            static_cast<long long>(log.orphan_impressions), Micros(log.orphan_cost_micros).units());
  }
  for (const auto& r : runs) {
    const Outcome& o = r.r.total;
    Appendf(&text,
            "%-10s bids %lld, impressions %lld, clicks %.0f, conversions %.0f, cost %.2f, revenue "
            "%.2f, unknown %lld\n",
            r.name.c_str(), static_cast<long long>(o.auctions),
            static_cast<long long>(o.impressions), o.clicks, o.conversions, o.cost.units(),
            o.revenue.units(), static_cast<long long>(r.r.unknown));
  }
  return text;
}

Report EventsReport(const ReplayJob& a, const std::vector<std::string>& names,
                    const OutcomeLog& log, const std::string& source,
                    const std::vector<EventsRun>& runs) {
  Report rep;
  rep.kind = "replay";
  rep.title = "Replay of the engine's outcome events (" + source + ")";
  std::string orphans;
  Appendf(&orphans, "%lld (cost %.2f)", static_cast<long long>(log.orphan_impressions),
          Micros(log.orphan_cost_micros).units());
  rep.meta = {{"source", source},
              {"events", std::to_string(log.events)},
              {"bids", std::to_string(log.bids.size())},
              {"duplicates dropped", std::to_string(log.duplicates)},
              {"orphan notices", std::to_string(log.orphans)},
              {"won impressions without a bid event", orphans},
              {"skipped", std::to_string(log.skipped)},
              {"protocol", "outcomes (known outcomes only; replay.md section 3)"}};
  rep.row_label = "advertiser";
  std::vector<int64_t> advs;
  for (const auto& [id, o] : runs[0].r.by_advertiser) advs.push_back(id);
  for (const int64_t id : advs) rep.row_names.push_back("advertiser " + std::to_string(id));
  for (const auto& r : runs) {
    RunResult run;
    for (const int64_t id : advs) {
      const auto it = r.r.by_advertiser.find(id);
      run.rows.push_back(it == r.r.by_advertiser.end() ? Outcome{} : it->second);
    }
    run.total = r.r.total;
    rep.methods.push_back(
        {r.name,
         r.name + ": " + std::to_string(r.r.unknown) + " lost bids raised (unknown)",
         {run}});
  }
  rep.baseline = a.baseline.empty() ? names[0] : a.baseline;
  rep.relative_metrics = {
      "revenue", "roi", "clicks", "conversions", "impressions", "cost", "cost_per_conversion"};
  rep.primary = names[0];
  rep.notes = {
      "Protocol: outcomes. A bid the log shows won at clearing price p wins again iff the new "
      "bid >= p (and pays p, with the logged clicks, conversions and value); a lost bid stays "
      "lost. When the new bid is above a lost one the outcome is unknown (a lost auction's "
      "market price is not logged): those are counted as lost, so raising bids is a lower "
      "bound.",
      "manual = the logged bid with the learned action undone: bid / (1 + alpha)."};
  return rep;
}

Result<ReplayOutput> RunEvents(const ReplayJob& a, const TopicReader& topic) {
  ReplayOutput out;
  std::string source;
  RTB_ASSIGN_OR_RETURN(const OutcomeLog log, ReadOutcomeEvents(a, topic, &source, &out.warnings));
  int64_t adv = -1;
  if (!a.advertiser.empty()) {
    try {
      adv = std::stoll(a.advertiser);
    } catch (const std::exception&) {
      return Status::InvalidArgument("--advertiser must be an advertiser id");
    }
  }
  const std::vector<std::string> names =
      SplitList(a.strategy.empty() ? "logged,manual" : a.strategy);
  if (names.empty()) return Status::InvalidArgument("--strategy is empty");
  std::vector<EventsRun> runs;
  for (const auto& n : names) {
    auto s = OutcomeStrategy(n);
    if (!s.ok()) return s.status();
    runs.push_back({n, ReplayOutcomes(log, *s, adv)});
  }
  out.json = EventsJson(log, runs);
  out.text = EventsText(log, source, runs);
  if (a.report) out.report = EventsReport(a, names, log, source, runs);
  return out;
}

Result<ReplayOutput> RunJob(const ReplayJob& a, const TopicReader& topic) {
  if (a.auction != "second_price" && (a.format == "events" || a.format == "full")) {
    return Status::InvalidArgument(
        "--auction is the single-bidder logs' (rlb protocol); " +
        std::string(a.format == "full"
                        ? "a full-information log is re-auctioned by its --config's auction.type"
                        : "an events log replays each bid in the auction it was made in (`at`)"));
  }
  if (a.format == "events") {
    if (a.log.empty() == a.brokers.empty()) {
      return Status::InvalidArgument("--format events needs --log <dump> or --brokers");
    }
    return RunEvents(a, topic);
  }
  if (a.log.empty()) return Status::InvalidArgument("--log is required");
  if (a.format == "full") return RunFull(a);
  return RunSingle(a);
}

}  // namespace

Result<ReplayOutput> RunReplayJob(const ReplayJob& a, const TopicReader& topic) {
  // The logs are read line by line (core/line_reader.h), but what a log holds is kept for the
  // strategies to replay: a log with more of it than the memory (or address-space limit) allows
  // ends the run with an error, not an uncaught exception.
  try {
    return RunJob(a, topic);
  } catch (const std::bad_alloc&) {
    return Status::Unavailable("out of memory holding " +
                               (a.log.empty() ? "topic " + a.topic : a.log) +
                               ": the log holds more than fits in memory");
  }
}

}  // namespace rtb::sim
