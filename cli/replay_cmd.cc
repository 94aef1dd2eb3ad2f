#include "replay_cmd.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "rtb/core/report.h"
#include "rtb/core/text.h"
#include "rtb/kafka/kafka.h"
#include "rtb/simulator/config.h"
#include "rtb/simulator/ipinyou.h"
#include "rtb/simulator/outcome_replay.h"
#include "rtb/simulator/pacing.h"
#include "rtb/simulator/replay.h"
#include "rtb/simulator/simulate.h"

namespace rtb::cli {
namespace {

using json = nlohmann::json;

int Fail(const Status& st) {
  std::fprintf(stderr, "rtb replay: error: %s\n", st.message().c_str());
  return 1;
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

// Writes the report files when --out is given; prints where.
Status MaybeWrite(const Report& r, const ReplayArgs& a) {
  if (a.out.empty()) return Status::Ok();
  RTB_RETURN_IF_ERROR(WriteReportFiles(r, a.out));
  if (!a.json) std::printf("wrote %s/report.{json,csv,md,html}\n", a.out.c_str());
  return Status::Ok();
}

// ---- single-bidder logs (rlb, ipinyou) --------------------------------------------------

struct SingleLog {
  std::vector<sim::LoggedAuction> auctions;
  int64_t skipped = 0;
  std::string first_skipped;
};

struct Loaded {
  SingleLog test, validation;
  bool have_validation = false;
  std::string validation_name;
  sim::CampaignInfo info;
  std::vector<std::pair<std::string, std::string>> meta;
};

Result<Loaded> LoadSingle(const ReplayArgs& a) {
  Loaded L;
  const bool skip = a.on_error == "skip";
  if (a.format == "rlb") {
    if (a.info.empty()) return Status::InvalidArgument("--format rlb needs --info");
    RTB_ASSIGN_OR_RETURN(auto log, sim::ReadCompactLog(a.log, {skip}));
    L.test = {std::move(log.auctions), log.skipped, log.first_skipped};
    RTB_ASSIGN_OR_RETURN(L.info, sim::ReadCampaignInfo(a.info));
    const std::string vname = !a.validation_log.empty() ? a.validation_log : a.train_log;
    if (!vname.empty()) {
      RTB_ASSIGN_OR_RETURN(auto v, sim::ReadCompactLog(vname, {skip}));
      L.validation = {std::move(v.auctions), v.skipped, v.first_skipped};
      L.have_validation = true;
      L.validation_name = vname;
    }
    L.meta.push_back({"campaign summary", a.info});
    return L;
  }
  // Raw iPinYou.
  sim::IpinyouReadOptions ro;
  ro.skip_malformed = skip;
  ro.advertiser = a.advertiser;
  RTB_ASSIGN_OR_RETURN(sim::IpinyouLog test, sim::ReadIpinyouLog(a.log, ro));
  std::optional<sim::IpinyouLog> train, validation;
  if (!a.train_log.empty()) {
    RTB_ASSIGN_OR_RETURN(train, sim::ReadIpinyouLog(a.train_log, ro));
  }
  if (!a.validation_log.empty()) {
    RTB_ASSIGN_OR_RETURN(validation, sim::ReadIpinyouLog(a.validation_log, ro));
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
    sim::CtrModel model(ro.hash_bits);
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
  if (a.protocol == "benchmark" && test.has_timestamp) sim::SortByTime(&test);
  if (!a.info.empty()) {
    RTB_ASSIGN_OR_RETURN(L.info, sim::ReadCampaignInfo(a.info));
    L.meta.push_back({"campaign summary", a.info});
  } else if (train) {
    L.info = train->Totals();
    const sim::CampaignInfo t = test.Totals();
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
  sim::ReplayTotals totals;
};

int RunSingle(const ReplayArgs& a) {
  auto loaded = LoadSingle(a);
  if (!loaded.ok()) return Fail(loaded.status());
  Loaded& L = *loaded;
  const std::vector<std::string> names = SplitList(a.strategy.empty() ? "lin" : a.strategy);
  if (names.empty()) return Fail(Status::InvalidArgument("--strategy is empty"));
  const sim::RlbProtocol rlb{a.c0, a.episode_size, a.max_bid};
  const sim::BenchmarkProtocol bench{a.budget_fraction};
  auto run_on = [&](const std::vector<sim::LoggedAuction>& log, sim::BidStrategy& s) {
    if (a.protocol == "rlb") return sim::ReplayRlb(log, L.info, rlb, s);
    return sim::ReplayBenchmark(log, L.info, bench, s);
  };
  std::vector<std::pair<std::string, std::string>> meta = {
      {"format", a.format}, {"log", a.log}, {"auctions", std::to_string(L.test.auctions.size())}};
  std::string b0_note;
  int64_t b0 = a.b0;
  std::vector<MethodRun> runs;
  for (const std::string& n : names) {
    std::unique_ptr<sim::BidStrategy> s;
    std::optional<sim::PacingTable> pacing;
    if (n == "lin") {
      if (b0 <= 0) {
        // Tuned the RLB code's way: steps of 6 on the validation log under this protocol.
        const auto& v = L.have_validation ? L.validation.auctions : L.test.auctions;
        const sim::B0Tuning t =
            sim::TuneLinB0([&](sim::BidStrategy& st) { return run_on(v, st); }, L.info.CtrTrain());
        b0 = t.b0;
        b0_note =
            std::to_string(b0) + " (tuned in steps of 6 up to 600 on " +
            (L.have_validation ? L.validation_name : a.log + " itself: no validation log given") +
            ", " + std::to_string(t.best.clicks) + " clicks there)";
      } else if (b0_note.empty()) {
        b0_note = std::to_string(b0) + " (given)";
      }
      s = sim::LinBid(b0, L.info.CtrTrain());
    } else if (n == "mcpc") {
      s = sim::McpcBid(L.info.EcpcTrain());
    } else if (n == "const") {
      s = sim::ConstBid(a.const_bid);
    } else if (n == "rand") {
      s = sim::RandBid(a.rand_max, a.seed);
    } else if (n == "pacing") {
      if (a.pacing.empty()) {
        return Fail(Status::InvalidArgument("--strategy pacing needs --pacing <table.json>"));
      }
      if (a.protocol != "rlb") {
        return Fail(Status::InvalidArgument("the pacing policy plays the rlb protocol (episodes)"));
      }
      auto t = sim::ReadPacingTable(a.pacing);
      if (!t.ok()) return Fail(t.status());
      if (t->params.episode_size != a.episode_size) {
        return Fail(Status::InvalidArgument(
            a.pacing + " was trained on episodes of " + std::to_string(t->params.episode_size) +
            " auctions; --episode-size is " + std::to_string(a.episode_size)));
      }
      pacing = std::move(*t);
      const sim::PacingTable* tp = &*pacing;
      s = std::make_unique<sim::PacingStrategy>(
          tp->params, [tp](const std::vector<float>& st) { return tp->Lookup(st); }, false);
      meta.push_back({"pacing table", a.pacing + " (Lin-Bid b0 " + std::to_string(tp->params.b0) +
                                          " x 1 + clip(a x " + Fmt(tp->params.bratio) +
                                          ", +-0.9); " + std::to_string(tp->params.steps) +
                                          " decisions per episode)"});
    } else {
      return Fail(Status::InvalidArgument("unknown strategy '" + n + "' for " + a.format +
                                          " logs (lin, mcpc, const, rand, "
                                          "pacing)"));
    }
    MethodRun m{n, s->Describe(), run_on(L.test.auctions, *s)};
    runs.push_back(std::move(m));
  }
  if (L.test.skipped > 0) {
    std::fprintf(stderr, "rtb replay: skipped %lld malformed lines (first: %s)\n",
                 static_cast<long long>(L.test.skipped), L.test.first_skipped.c_str());
  }
  const std::string protocol_line =
      a.protocol == "rlb"
          ? "RLB code (episodes): N = " + std::to_string(a.episode_size) +
                ", B = int(cpm_train x c0 x N) = " + std::to_string(runs[0].totals.budget) +
                " per episode (c0 = " + Fmt(a.c0) + "), bid = min(bid, " +
                std::to_string(a.max_bid) + ", budget left), win iff bid >= payprice"
          : "benchmark paper (whole log in time order): budget = " + Fmt(a.budget_fraction) +
                " x test cost = " + std::to_string(runs[0].totals.budget) +
                ", win iff bid > payprice and bid >= slotprice, bid 0 once cost exceeds the budget";
  if (a.json) {
    const sim::ReplayTotals& t = runs[0].totals;
    json j = {{"format", a.format},
              {"protocol", a.protocol},
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
              {"skipped_lines", L.test.skipped}};
    if (!b0_note.empty()) j["b0"] = b0;
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
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("protocol: %s\nlog %s (%s)\n", protocol_line.c_str(), a.log.c_str(),
                a.format.c_str());
    for (const auto& m : runs) {
      const auto& t = m.totals;
      std::printf(
          "%-8s auctions %lld, impressions %lld, clicks %lld, cost %lld, win rate %.4f, CPM "
          "%.2f, eCPC %.4f  [%s]\n",
          m.name.c_str(), static_cast<long long>(t.auctions), static_cast<long long>(t.impressions),
          static_cast<long long>(t.clicks), static_cast<long long>(t.cost), t.WinRate(), t.Cpm(),
          t.Ecpc(), m.description.c_str());
    }
  }
  if (!a.out.empty()) {
    Report r;
    r.kind = "replay";
    r.title = "Replay of " + a.log + " (" + a.format + " log, " + a.protocol + " protocol)";
    r.meta = meta;
    r.meta.push_back({"protocol", protocol_line});
    r.meta.insert(r.meta.end(), L.meta.begin(), L.meta.end());
    if (!b0_note.empty()) r.meta.push_back({"Lin-Bid b0", b0_note});
    r.meta.push_back({"skipped lines", std::to_string(L.test.skipped)});
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
      run.rows = {sim::ToOutcome(m.totals)};
      run.total = run.rows[0];
      r.methods.push_back({m.name, m.description, {run}});
      found = found || m.name == baseline;
    }
    if (!found) {
      return Fail(Status::InvalidArgument("--baseline " + baseline + " is not in --strategy"));
    }
    r.baseline = baseline;
    r.primary = names[0];
    r.objective = "clicks";
    r.relative_metrics = {"clicks", "impressions", "cost", "win_rate", "cpm", "cost_per_click"};
    std::string expected =
        "Expected clicks (sum of pCTR over won impressions; less noisy than "
        "the logged clicks):";
    for (const auto& m : runs)
      expected += " " + m.name + " " + Fmt(m.totals.expected_clicks, "%.2f");
    r.notes = {expected + ".", "Protocol: " + protocol_line + ".",
               "Prices are the log's CPM unit: cost = sum of payprice / 1000 per impression "
               "(shown in currency units); CPM = cost x 1000 / impressions = mean payprice.",
               "Clicks are the logged clicks of the won impressions; the logs carry no order "
               "value, so revenue, ROI and CPA are n/a.",
               "Relative columns are percentages of the baseline (" + baseline + ")."};
    if (auto st = MaybeWrite(r, a); !st.ok()) return Fail(st);
  }
  return 0;
}

// ---- full-information logs -------------------------------------------------------------

int RunFull(const ReplayArgs& a) {
  auto cfg = sim::LoadSimulatorConfig(a.config);
  if (!cfg.ok()) return Fail(cfg.status());
  const std::string train = a.train_log.empty() ? a.log : a.train_log;
  auto sc = sim::BuildScenario(*cfg, train, a.log, !a.quiet && !a.json);
  if (!sc.ok()) return Fail(sc.status());
  sim::SimulateOptions opt;
  std::vector<std::string> policies =
      a.policies.empty() ? std::vector<std::string>{"manual"} : a.policies;
  opt.policy = policies[0];
  opt.more_policies.assign(policies.begin() + 1, policies.end());
  opt.kind = "replay";
  opt.config_path = a.config;
  opt.progress = !a.quiet && !a.json;
  opt.extra_meta = {
      {"log", a.log},
      {"clusters built on",
       train + (a.train_log.empty() ? " (no --train-log: the log itself)" : "")},
      {"protocol", "full information: GSP over eCPM re-run on every logged candidate"}};
  auto r = sim::Simulate(**sc, opt);
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
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
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (const auto& m : r->methods) {
      const Outcome& o = m.runs[0].total;
      std::printf("%-20s impressions %lld, clicks %.1f, cost %.2f, revenue %.2f, ROI %.3f\n",
                  m.name.c_str(), static_cast<long long>(o.impressions), o.clicks, o.cost.units(),
                  o.revenue.units(), Roi(o));
    }
  }
  if (auto st = MaybeWrite(*r, a); !st.ok()) return Fail(st);
  return 0;
}

// ---- the engine's outcome events -------------------------------------------------------

int RunEvents(const ReplayArgs& a) {
  const bool skip = a.on_error == "skip";
  sim::OutcomeLog log;
  std::string source;
  if (!a.brokers.empty()) {
    source = "topic " + a.topic + " at " + a.brokers;
    sim::OutcomeLogBuilder b;
    std::unique_ptr<std::ofstream> dump;
    if (!a.dump.empty()) dump = std::make_unique<std::ofstream>(a.dump, std::ios::trunc);
    Status bad = Status::Ok();
    int64_t not_retained = 0;
    const Status st = kafka::ReadWholeTopic(
        {.bootstrap = a.brokers}, a.topic, 30000,
        [&](int p, int64_t off, std::string_view payload) {
          if (dump) *dump << payload << '\n';
          auto e = DecodeEvent(payload);
          if (e.ok()) {
            b.Add(*e);
            return;
          }
          const std::string where = a.topic + "[" + std::to_string(p) + "]@" + std::to_string(off) +
                                    ": " + e.status().message();
          if (!skip && bad.ok()) bad = Status::InvalidArgument(where);
          b.AddMalformed(where);
        },
        &not_retained);
    if (!st.ok()) return Fail(st);
    if (not_retained > 0) {
      std::fprintf(stderr,
                   "rtb replay: warning: the brokers no longer hold the first %lld messages of "
                   "%s (retention); the replay covers the rest\n",
                   static_cast<long long>(not_retained), a.topic.c_str());
      source += " (" + std::to_string(not_retained) + " oldest messages no longer retained)";
    }
    if (!bad.ok()) return Fail(bad);
    log = b.Finish();
  } else {
    source = a.log;
    auto text = ReadWholeFile(a.log, "events dump");
    if (!text.ok()) return Fail(text.status());
    auto l = sim::ParseOutcomeDump(*text, a.log, skip);
    if (!l.ok()) return Fail(l.status());
    log = std::move(*l);
  }
  if (log.skipped > 0) {
    std::fprintf(stderr, "rtb replay: skipped %lld malformed events (first: %s)\n",
                 static_cast<long long>(log.skipped), log.first_skipped.c_str());
  }
  int64_t adv = -1;
  if (!a.advertiser.empty()) {
    try {
      adv = std::stoll(a.advertiser);
    } catch (const std::exception&) {
      return Fail(Status::InvalidArgument("--advertiser must be an advertiser id"));
    }
  }
  const std::vector<std::string> names =
      SplitList(a.strategy.empty() ? "logged,manual" : a.strategy);
  if (names.empty()) return Fail(Status::InvalidArgument("--strategy is empty"));
  struct Run {
    std::string name;
    sim::OutcomeReplayResult r;
  };
  std::vector<Run> runs;
  for (const auto& n : names) {
    auto s = sim::OutcomeStrategy(n);
    if (!s.ok()) return Fail(s.status());
    runs.push_back({n, sim::ReplayOutcomes(log, *s, adv)});
  }
  if (a.json) {
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
              {"skipped", log.skipped},
              {"methods", ms}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%lld events from %s: %zu bids, %lld duplicates dropped, %lld orphan notices\n",
                static_cast<long long>(log.events), source.c_str(), log.bids.size(),
                static_cast<long long>(log.duplicates), static_cast<long long>(log.orphans));
    for (const auto& r : runs) {
      const Outcome& o = r.r.total;
      std::printf(
          "%-10s bids %lld, impressions %lld, clicks %.0f, conversions %.0f, cost %.2f, revenue "
          "%.2f, unknown %lld\n",
          r.name.c_str(), static_cast<long long>(o.auctions), static_cast<long long>(o.impressions),
          o.clicks, o.conversions, o.cost.units(), o.revenue.units(),
          static_cast<long long>(r.r.unknown));
    }
  }
  if (!a.out.empty()) {
    Report rep;
    rep.kind = "replay";
    rep.title = "Replay of the engine's outcome events (" + source + ")";
    rep.meta = {{"source", source},
                {"events", std::to_string(log.events)},
                {"bids", std::to_string(log.bids.size())},
                {"duplicates dropped", std::to_string(log.duplicates)},
                {"orphan notices", std::to_string(log.orphans)},
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
    if (auto st = MaybeWrite(rep, a); !st.ok()) return Fail(st);
  }
  return 0;
}

}  // namespace

void AddReplayOptions(CLI::App* rp, ReplayArgs* a) {
  rp->footer(
      "Examples:\n"
      "  rtb replay --format rlb --log test.txt --info campaign.json --protocol rlb \\\n"
      "      --strategy lin --b0 36 --c0 0.03125 --episode-size 1000 --max-bid 300 --json\n"
      "  rtb replay --format rlb --log test.txt --info campaign.json --validation-log train.txt "
      "\\\n"
      "      --strategy lin,mcpc,pacing --pacing pacing-table.json --out out/replay\n"
      "  rtb replay --format ipinyou --log test.log.txt --train-log train.log.txt \\\n"
      "      --advertiser 1458 --protocol benchmark --strategy lin,mcpc\n"
      "  rtb replay --format full --log test.tsv --train-log train.tsv --policy a.json \\\n"
      "      --policy b.json --out out/replay-full\n"
      "  rtb replay --format events --log events.jsonl --strategy logged,manual,scale:1.2\n"
      "  rtb replay --format events --brokers host:9092 --topic rtb.events --dump events.jsonl");
  rp->add_option("--format", a->format,
                 "rlb (click payprice pCTR) | ipinyou (raw TSV with header) | full (simulator "
                 "full-information log) | events (the bidder's outcome events)")
      ->check(CLI::IsMember({"rlb", "ipinyou", "full", "events"}))
      ->capture_default_str();
  rp->add_option("--log", a->log, "The log to replay (events: a JSON-lines dump)");
  rp->add_option("--info", a->info,
                 "rlb: campaign summary JSON (imp_train, clk_train, cost_train...); ipinyou: "
                 "optional (else computed from --train-log)");
  rp->add_option("--train-log", a->train_log,
                 "ipinyou: training log (CTR model, campaign totals, b0 tuning); full: the day "
                 "the clusters were built on; rlb: b0 tuning when no --validation-log");
  rp->add_option("--validation-log", a->validation_log,
                 "Lin-Bid b0 is tuned on this log (steps of 6) when --b0 is not given");
  rp->add_option("--advertiser", a->advertiser, "ipinyou/events: replay one advertiser");
  rp->add_option("--protocol", a->protocol, "rlb (episodes) | benchmark (whole log)")
      ->check(CLI::IsMember({"rlb", "benchmark"}))
      ->capture_default_str();
  rp->add_option("--strategy", a->strategy,
                 "Comma-separated; rlb/ipinyou: lin | mcpc | const | rand | pacing (default "
                 "lin); events: logged | manual | scale:<f> (default logged,manual)");
  rp->add_option("--baseline", a->baseline,
                 "The strategy the report is relative to (default lin, else the first)");
  rp->add_option("--b0", a->b0, "Lin-Bid base bid (integer; default: tuned)");
  rp->add_option("--c0", a->c0, "RLB: budget fraction of cpm_train x N")->capture_default_str();
  rp->add_option("--episode-size", a->episode_size, "RLB: auctions per episode (N)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  rp->add_option("--max-bid", a->max_bid, "RLB: bid cap")->capture_default_str();
  rp->add_option("--const", a->const_bid, "Const: the bid")->capture_default_str();
  rp->add_option("--rand-max", a->rand_max, "Rand: bids uniform in [0, max]")
      ->capture_default_str();
  rp->add_option("--seed", a->seed, "Rand and CTR-model seed")->capture_default_str();
  rp->add_option("--budget-fraction", a->budget_fraction,
                 "benchmark: budget = this x total test cost")
      ->capture_default_str();
  rp->add_option("--pacing", a->pacing,
                 "pacing: the table `rtb train-pacing` wrote (schemas/pacing-table-v1.md)");
  rp->add_option("--policy", a->policies,
                 "full: manual | const:<a> | action-table.json (repeat to compare; the first "
                 "is the primary, manual bids are the baseline)");
  rp->add_option("--config", a->config, "full: simulator config (YAML)")->capture_default_str();
  rp->add_option("--brokers", a->brokers, "events: read the topic at these bootstrap.servers");
  rp->add_option("--topic", a->topic, "events: the topic")->capture_default_str();
  rp->add_option("--dump", a->dump, "events from Kafka: also write them here (JSON lines)");
  rp->add_option("--on-error", a->on_error,
                 "Malformed lines: stop (error naming file:line) | skip (skip and count)")
      ->check(CLI::IsMember({"stop", "skip"}))
      ->capture_default_str();
  rp->add_option("--out", a->out, "Write report.{json,csv,md,html} here");
  rp->add_flag("--json", a->json, "Print one JSON object");
  rp->add_flag("--quiet", a->quiet, "No progress lines");
}

int RunReplay(const ReplayArgs& a) {
  if (a.format == "events") {
    if (a.log.empty() == a.brokers.empty()) {
      return Fail(Status::InvalidArgument("--format events needs --log <dump> or --brokers"));
    }
    return RunEvents(a);
  }
  if (a.log.empty()) return Fail(Status::InvalidArgument("--log is required"));
  if (a.format == "full") return RunFull(a);
  return RunSingle(a);
}

}  // namespace rtb::cli
