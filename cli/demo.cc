#include "demo.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rtb/core/action_table.h"
#include "rtb/core/config.h"
#include "rtb/core/metrics.h"
#include "rtb/core/policy.h"
#include "rtb/core/report.h"
#include "rtb/core/rng.h"
#include "rtb/core/text.h"
#include "rtb/exchange/exchange.h"
#include "rtb/kafka/kafka.h"
#include "rtb/learner/replay_store.h"
#include "rtb/simulator/export.h"
#include "rtb/simulator/simulate.h"
#include "rtb/simulator/world.h"

namespace rtb::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kEventPartitions = 16;

// configs/demo/default.yaml; every field documented there and here.
struct DemoConfig {
  std::string learner_config = "learner.yaml";           // learner + world (relative to file)
  std::string bidder_config = "../bidder/default.yaml";  // base bidder config (limits, paths)
  std::string out = "out/demo";                          // report and every process's state
  int days = 4;                                          // simulated days played live
  bool pretrain = true;               // DCMAB trained offline first (learner config episodes)
  uint64_t first_day_seed = 1000;     // live day k is the world's day Mix(seed, this + k)
  int bidder_threads = 2;             // the bidder's I/O threads
  exchange::ExchangeConfig exchange;  // section exchange (bidder, brokers: set by the demo)
  std::vector<std::string> chaos;     // "kill-learner@D:S" / "kill-bidder@D:S": SIGKILL that
                                      // process while step S of live day D is played, restart
};

Result<DemoConfig> LoadDemoConfig(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(auto file, ConfigFile::Load(path));
  DemoConfig c;
  ConfigMap root = file->Root();
  root.Get("learner_config", &c.learner_config);
  root.Get("bidder_config", &c.bidder_config);
  root.Get("out", &c.out);
  root.Get("days", &c.days);
  root.Check(c.days >= 1 && c.days <= 365, "days", "must be between 1 and 365");
  root.Get("pretrain", &c.pretrain);
  root.Get("first_day_seed", &c.first_day_seed);
  root.Get("bidder_threads", &c.bidder_threads);
  root.Check(c.bidder_threads >= 1, "bidder_threads", "must be >= 1");
  root.Get("chaos", &c.chaos);
  ConfigMap e = root.Section("exchange");
  e.Get("concurrency", &c.exchange.concurrency);
  e.Check(c.exchange.concurrency >= 1, "concurrency", "must be >= 1");
  e.Get("tmax_ms", &c.exchange.tmax_ms);
  e.Get("io_timeout_ms", &c.exchange.io_timeout_ms);
  e.Get("outcomes", &c.exchange.outcomes);
  e.Check(c.exchange.outcomes == "expected" || c.exchange.outcomes == "sampled", "outcomes",
          "must be expected or sampled");
  e.Get("send_loss_notices", &c.exchange.send_loss_notices);
  e.Get("policy_wait_ms", &c.exchange.policy_wait_ms);
  e.Get("seed", &c.exchange.seed);
  RTB_RETURN_IF_ERROR(file->Finish());
  const fs::path dir = fs::path(path).parent_path();
  for (std::string* p : {&c.learner_config, &c.bidder_config}) {
    if (fs::path(*p).is_relative()) *p = (dir / *p).lexically_normal().string();
  }
  return c;
}

// A child process with its output appended to a log file.
struct Child {
  std::string name;
  std::vector<std::string> args;
  std::string log;
  pid_t pid = -1;

  bool Start() {
    // Everything the child needs is built before fork: after it, only async-signal-safe calls.
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const char* path = log.c_str();
    pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    return pid > 0;
  }
  bool Running() {
    if (pid <= 0) return false;
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) {
      pid = -1;
      return false;
    }
    return true;
  }
  // SIGTERM, then SIGKILL after timeout_ms. Returns the exit status (or -signal).
  int Stop(int sig, int timeout_ms) {
    if (pid <= 0) return 0;
    ::kill(pid, sig);
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    int st = 0;
    while (Clock::now() < deadline) {
      if (::waitpid(pid, &st, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
    pid = -1;
    return -SIGKILL;
  }
  ~Child() { Stop(SIGKILL, 1000); }
};

int FreePort() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

// The embedded Kafka: librdkafka's mock cluster, alive as long as this process.
struct EmbeddedKafka {
  std::unique_ptr<kafka::MockCluster> mock;
  std::string bootstrap;
  Status Start() {
    RTB_ASSIGN_OR_RETURN(mock, kafka::MockCluster::Start(3));
    bootstrap = mock->bootstrap();
    // librdkafka 2.0.2's mock keeps the last 5 MB of each partition (rdkafka_mock.c); 16
    // partitions of lz4 batches hold far more than a reader lagging one step behind needs.
    RTB_RETURN_IF_ERROR(mock->CreateTopic("rtb.events", kEventPartitions, 3));
    RTB_RETURN_IF_ERROR(mock->CreateTopic("rtb.policy", 1, 3));
    RTB_RETURN_IF_ERROR(mock->CreateTopic("rtb.clock", 1, 3));
    return Status::Ok();
  }
};

// Every action table the learner published (policy topic), by version.
std::map<uint64_t, ActionTable> ReadPublishedTables(const std::string& bootstrap) {
  std::map<uint64_t, ActionTable> out;
  // A failure leaves the tables read so far; the report then shows manual for the rest.
  (void)kafka::ReadWholeTopic({.bootstrap = bootstrap}, "rtb.policy", 10000,
                              [&](int, int64_t, std::string_view v) {
                                auto m = DecodePolicyMessage(v, "policy topic");
                                if (m.ok()) out[m->table.version] = m->table;
                              });
  return out;
}

json OutcomeJson(const Outcome& o) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json j;
  j["revenue"] = o.revenue.units();
  j["cost"] = o.cost.units();
  j["budget"] = o.budget.units();
  j["clicks"] = o.clicks;
  j["conversions"] = o.conversions;
  j["impressions"] = o.impressions;
  j["roi"] = num(Roi(o));
  j["cost_per_click"] = num(CostPerClick(o));
  j["cost_over_budget"] = num(CostOverBudget(o));
  return j;
}

std::string Fmt(double v, int prec = 2) {
  if (!std::isfinite(v)) return "n/a";
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

struct Chaos {
  std::string what;  // kill-learner | kill-bidder
  int64_t day = 0;
  int step = 0;
};

Result<std::vector<Chaos>> ParseChaos(const std::vector<std::string>& specs) {
  std::vector<Chaos> out;
  for (const auto& s : specs) {
    const size_t at = s.find('@'), colon = s.find(':');
    Chaos c;
    c.what = s.substr(0, at);
    if (at == std::string::npos || colon == std::string::npos || colon < at ||
        (c.what != "kill-learner" && c.what != "kill-bidder")) {
      return Status::InvalidArgument("chaos '" + s + "': want kill-learner@D:S or kill-bidder@D:S");
    }
    try {
      c.day = std::stoll(s.substr(at + 1, colon - at - 1));
      c.step = std::stoi(s.substr(colon + 1));
    } catch (const std::exception&) {
      return Status::InvalidArgument("chaos '" + s + "': day and step must be integers");
    }
    out.push_back(c);
  }
  return out;
}

std::string RenderMarkdown(const json& r) {
  std::ostringstream o;
  o << "# " << r["title"].get<std::string>() << "\n\n";
  for (const auto& line : r["about"]) o << "- " << line.get<std::string>() << "\n";
  o << "\n## Learned (live) vs manual, per day\n\n"
    << "| day | learned revenue | manual revenue | ratio | learned COST | manual COST | learned "
       "ROI | manual ROI | learned CPC | manual CPC | learned clicks | manual clicks |\n"
    << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& d : r["days"]) {
    const auto& l = d["learned"];
    const auto& m = d["manual"];
    auto pct = [](const json& v) {
      return v.is_null() ? std::string("n/a") : Fmt(100.0 * v.get<double>(), 1) + "%";
    };
    auto num = [](const json& v) {
      return v.is_null() ? std::string("n/a") : Fmt(v.get<double>());
    };
    o << "| " << d["day"].get<int64_t>() << " | " << Fmt(l["revenue"].get<double>()) << " | "
      << Fmt(m["revenue"].get<double>()) << " | " << num(d["revenue_ratio"]) << "x | "
      << pct(l["cost_over_budget"]) << " | " << pct(m["cost_over_budget"]) << " | " << num(l["roi"])
      << " | " << num(m["roi"]) << " | " << num(l["cost_per_click"]) << " | "
      << num(m["cost_per_click"]) << " | " << Fmt(l["clicks"].get<double>(), 1) << " | "
      << Fmt(m["clicks"].get<double>(), 1) << " |\n";
  }
  o << "\nPer agent (learned / manual revenue, COST):\n\n| day | agent | learned revenue | manual "
       "revenue | learned COST | manual COST |\n|---|---|---|---|---|---|\n";
  for (const auto& d : r["days"]) {
    for (size_t i = 0; i < d["learned"]["by_agent"].size(); ++i) {
      const auto& l = d["learned"]["by_agent"][i];
      const auto& m = d["manual"]["by_agent"][i];
      auto pct = [](const json& v) {
        return v.is_null() ? std::string("n/a") : Fmt(100.0 * v.get<double>(), 1) + "%";
      };
      o << "| " << d["day"].get<int64_t>() << " | " << i + 1 << " | "
        << Fmt(l["revenue"].get<double>()) << " | " << Fmt(m["revenue"].get<double>()) << " | "
        << pct(l["cost_over_budget"]) << " | " << pct(m["cost_over_budget"]) << " |\n";
    }
  }
  o << "\n## Action tables served (a[i][j], version = 1 + day x T + step)\n\n| day:step | version "
       "| table (agent rows, cluster columns) | policy lag (ms) | learner = exchange |\n"
       "|---|---|---|---|---|\n";
  for (const auto& d : r["days"]) {
    for (const auto& s : d["steps"]) {
      o << "| " << d["day"].get<int64_t>() << ":" << s["step"].get<int>() << " | "
        << s["policy_version"].get<uint64_t>() << " | ";
      for (const auto& row : s["table"]) {
        o << "[";
        for (size_t j = 0; j < row.size(); ++j) o << (j ? " " : "") << Fmt(row[j].get<double>());
        o << "]";
      }
      o << " | "
        << (s["policy_lag_ms"].is_null() ? "n/a" : Fmt(s["policy_lag_ms"].get<double>(), 1))
        << " | " << (s["learner_matches_exchange"].get<bool>() ? "yes" : "NO") << " |\n";
    }
  }
  const auto& lag = r["policy_lag_ms"];
  o << "\n## Policy lag\n\nFrom the exchange's step-end marker to the bidder serving the next "
       "table: p50 "
    << Fmt(lag["p50"].get<double>(), 1) << " ms, p90 " << Fmt(lag["p90"].get<double>(), 1)
    << " ms, max " << Fmt(lag["max"].get<double>(), 1) << " ms over " << lag["n"].get<int>()
    << " steps.\n";
  const auto& lc = r["loop_check"];
  o << "\n## Loop bookkeeping\n\n- transitions in the replay store: "
    << lc["transitions"].get<int64_t>() << " (expected "
    << lc["expected_transitions"].get<int64_t>() << "), missing steps: " << lc["missing"].size()
    << ", duplicated steps: " << lc["duplicated"].size()
    << "\n- per-step cost and revenue, learner vs exchange: "
    << (lc["totals_match"].get<bool>() ? "equal in every step" : "DIFFER (see report.json)")
    << "\n";
  if (!r["chaos"].empty()) {
    o << "\n## Chaos\n\n";
    for (const auto& c : r["chaos"]) o << "- " << c.get<std::string>() << "\n";
  }
  return o.str();
}

std::string RenderHtml(const json& r, const std::string& md) {
  // The revenue chart (SVG), then the Markdown body as preformatted text sections.
  std::vector<double> learned, manual;
  for (const auto& d : r["days"]) {
    learned.push_back(d["learned"]["revenue"].get<double>());
    manual.push_back(d["manual"]["revenue"].get<double>());
  }
  double hi = 1;
  for (double v : learned) hi = std::max(hi, v);
  for (double v : manual) hi = std::max(hi, v);
  const double W = 640, H = 260, pad = 40;
  auto x = [&](size_t k) {
    return pad + (learned.size() > 1 ? (W - 2 * pad) * k / (learned.size() - 1.0) : 0);
  };
  auto y = [&](double v) { return H - pad - (H - 2 * pad) * v / (hi * 1.1); };
  auto line = [&](const std::vector<double>& v, const char* color) {
    std::string s =
        "<polyline fill='none' stroke-width='2' stroke='" + std::string(color) + "' points='";
    for (size_t k = 0; k < v.size(); ++k) s += Fmt(x(k), 1) + "," + Fmt(y(v[k]), 1) + " ";
    s += "'/>";
    for (size_t k = 0; k < v.size(); ++k) {
      s += "<circle r='3' fill='" + std::string(color) + "' cx='" + Fmt(x(k), 1) + "' cy='" +
           Fmt(y(v[k]), 1) + "'/>";
    }
    return s;
  };
  std::string svg = "<svg width='" + Fmt(W, 0) + "' height='" + Fmt(H, 0) +
                    "' xmlns='http://www.w3.org/2000/svg'><rect width='100%' height='100%' "
                    "fill='white' stroke='#ccc'/>";
  svg += line(manual, "#888") + line(learned, "#1a7f37");
  svg += "<text x='" + Fmt(pad, 0) +
         "' y='20' font-size='12'>daily revenue: learned (green, "
         "live loop) vs manual (grey, same traffic)</text>";
  for (size_t k = 0; k < learned.size(); ++k) {
    svg += "<text font-size='11' x='" + Fmt(x(k) - 10, 1) + "' y='" + Fmt(H - 12, 0) + "'>day " +
           std::to_string(k) + "</text>";
  }
  svg += "</svg>";
  std::string h = "<!doctype html><html><head><meta charset='utf-8'><title>";
  h += HtmlEscape(r["title"].get<std::string>());
  h += "</title><style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}pre{"
       "background:#f6f8fa;padding:1em;overflow-x:auto}</style></head><body><h1>";
  h += HtmlEscape(r["title"].get<std::string>());
  h += "</h1>" + svg + "<pre>";
  h += HtmlEscape(md);
  h += "</pre></body></html>\n";
  return h;
}

}  // namespace

fs::path ExeDir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : p.parent_path();
}

int RunDemo(const DemoArgs& args) {
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "rtb demo: error: %s\n", st.message().c_str());
    return 1;
  };
  auto say = [&](const std::string& s) {
    if (!args.quiet) std::fprintf(stderr, "rtb demo: %s\n", s.c_str());
  };
  auto cfg_or = LoadDemoConfig(args.config);
  if (!cfg_or.ok()) return fail(cfg_or.status());
  DemoConfig cfg = *cfg_or;
  if (!args.out.empty()) cfg.out = args.out;
  if (args.days > 0) cfg.days = args.days;
  for (const auto& c : args.chaos) cfg.chaos.push_back(c);
  auto chaos_or = ParseChaos(cfg.chaos);
  if (!chaos_or.ok()) return fail(chaos_or.status());
  const std::vector<Chaos> chaos = *chaos_or;
  auto lcfg_or = ConfigFile::Load(cfg.learner_config);  // validated by rtb-learner; world:
  if (!lcfg_or.ok()) return fail(lcfg_or.status());
  std::string sim_rel = "../simulator/default.yaml";
  {
    ConfigMap root = (*lcfg_or)->Root();
    if (root.Has("simulator_config")) root.Get("simulator_config", &sim_rel);
  }
  fs::path sim_path = sim_rel;
  if (sim_path.is_relative()) sim_path = fs::path(cfg.learner_config).parent_path() / sim_path;
  auto simcfg = sim::LoadSimulatorConfig(sim_path.lexically_normal().string());
  if (!simcfg.ok()) return fail(simcfg.status());

  const auto t_start = Clock::now();
  std::error_code ec;
  // Only an earlier demo's output (marked) is replaced; any other non-empty directory is an
  // error, so a mistyped --out never deletes someone's files.
  if (fs::exists(cfg.out) && !fs::is_empty(cfg.out, ec)) {
    if (!fs::exists(cfg.out + "/.rtb-demo")) {
      return fail(Status::InvalidArgument(cfg.out + ": exists and is not an rtb demo output; "
                                                    "choose another --out"));
    }
    fs::remove_all(cfg.out, ec);
  }
  fs::create_directories(cfg.out + "/logs", ec);
  if (!ec) std::ofstream(cfg.out + "/.rtb-demo") << "rtb demo output; rerunning replaces it\n";
  if (ec) return fail(Status::IoError(cfg.out + ": " + ec.message()));
  const std::string out = fs::absolute(cfg.out).lexically_normal().string();

  say("building the world from " + sim_path.lexically_normal().string());
  auto sc_or = sim::BuildScenario(*simcfg, "", "", false);
  if (!sc_or.ok()) return fail(sc_or.status());
  const sim::Scenario& sc = **sc_or;
  const sim::World world = sim::GenerateWorld(sc.cfg.world, sc.cfg.seed);
  const int N = sc.market.agents, L = sc.market.clusters, T = sc.market.steps;

  // 1. Offline pre-training (the learner's own executable; LibTorch stays out of `rtb`).
  const std::string learner_exe = (ExeDir() / "rtb-learner").string();
  std::string init_ckpt;
  if (cfg.pretrain && args.episodes != 0) {
    say("pre-training DCMAB offline in the simulator (log: " + out + "/logs/pretrain.log)");
    Child pre{"pretrain",
              {learner_exe, "train", "--config", cfg.learner_config, "--algo", "dcmab", "--seeds",
               "1", "--out", out + "/pretrain", "--quiet"},
              out + "/logs/pretrain.log"};
    if (args.episodes > 0) {
      pre.args.push_back("--episodes");
      pre.args.push_back(std::to_string(args.episodes));
    }
    if (!pre.Start()) return fail(Status::Internal("cannot start " + learner_exe));
    int st = 0;
    ::waitpid(pre.pid, &st, 0);
    pre.pid = -1;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      return fail(Status::Internal("pre-training failed; see " + out + "/logs/pretrain.log"));
    }
    for (const auto& e : fs::recursive_directory_iterator(out + "/pretrain")) {
      if (e.is_directory() && e.path().filename() == "best") init_ckpt = e.path().string();
    }
    if (init_ckpt.empty()) return fail(Status::NotFound("pre-training left no best checkpoint"));
  }

  // 2. Kafka, the bidder (the world's advertisers), the learner.
  EmbeddedKafka kafka;
  if (auto st = kafka.Start(); !st.ok()) return fail(st);
  say("embedded Kafka (mock cluster) at " + kafka.bootstrap);
  const int port = FreePort();
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  {
    std::ifstream in(cfg.bidder_config);
    if (!in) return fail(Status::NotFound(cfg.bidder_config + ": cannot open bidder config"));
    std::ostringstream base;
    std::string line;
    bool in_kafka = false;
    auto key_of = [](const std::string& l) { return l.substr(0, l.find(':')); };
    while (std::getline(in, line)) {
      if (line.rfind("advertisers:", 0) == 0) break;
      const std::string k = key_of(line);
      if (!line.empty() && line[0] != ' ' && line[0] != '#') in_kafka = k == "kafka";
      if (k == "listen") line = "listen: " + listen;
      if (k == "threads") line = "threads: " + std::to_string(cfg.bidder_threads);
      if (k == "notice_base_url") line = "notice_base_url: http://" + listen;
      if (k == "max_bids_per_imp") {
        line = "max_bids_per_imp: " + std::to_string(std::min(8, sc.cfg.auction.slots + 1));
      }
      if (k == "policy_max_age_s") line = "policy_max_age_s: 86400";
      if (k == "state_path") line = "state_path: " + out + "/bidder/state";
      if (k == "simulation_hooks") line = "simulation_hooks: true";
      if (in_kafka && k == "  brokers") line = "  brokers: " + kafka.bootstrap;
      if (in_kafka && k == "  spill_path") line = "  spill_path: " + out + "/bidder/spill.jsonl";
      base << line << "\n";
    }
    base << "advertisers: []\n";
    if (auto st = WriteFileAtomic(out + "/bidder-base.yaml", base.str()); !st.ok()) return fail(st);
    if (auto st = sim::ExportBidderWorld(sc, world, out + "/bidder", out + "/bidder-base.yaml");
        !st.ok()) {
      return fail(st);
    }
  }
  Child bidder{"bidder",
               {(ExeDir() / "rtb").string(), "serve", "--config", out + "/bidder/bidder.yaml"},
               out + "/logs/bidder.log"};
  std::vector<std::string> learner_args = {learner_exe,        "learn",         "--config",
                                           cfg.learner_config, "--brokers",     kafka.bootstrap,
                                           "--state-dir",      out + "/learner"};
  if (!init_ckpt.empty()) {
    learner_args.push_back("--init");
    learner_args.push_back(init_ckpt);
  }
  Child learner{"learner", learner_args, out + "/logs/learner.log"};
  if (!bidder.Start() || !learner.Start()) return fail(Status::Internal("cannot start children"));

  exchange::ExchangeConfig xc = cfg.exchange;
  xc.bidder = listen;
  xc.brokers = kafka.bootstrap;
  auto ex_or = exchange::Exchange::Create(xc, sc);
  if (!ex_or.ok()) return fail(ex_or.status());
  exchange::Exchange& ex = **ex_or;
  // Ready when the bidder answers and serves the learner's first table.
  {
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    bool ready = false;
    while (Clock::now() < deadline && !ready) {
      auto v = ex.BidderPolicyVersion();
      ready = v.ok() && *v >= 1;
      if (!bidder.Running())
        return fail(Status::Internal("the bidder exited; see logs/bidder.log"));
      if (!learner.Running()) {
        return fail(Status::Internal("the learner exited; see logs/learner.log"));
      }
      if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!ready) return fail(Status::Unavailable("bidder/learner not ready after 120 s"));
  }
  say("bidder on " + listen + " and learner running; playing " + std::to_string(cfg.days) +
      " simulated days live");

  // 3. The days: live (exchange -> bidder -> Kafka -> learner -> policy) and manual.
  json report;
  report["title"] = "rtb demo: the closed loop, learned (live) vs manual bids";
  report["kind"] = "demo";
  report["days"] = json::array();
  std::vector<std::string> chaos_log;
  std::vector<double> lags;
  std::vector<Micros> agent_budget(static_cast<size_t>(N), Micros(0));
  for (size_t k = 0; k < sc.test_budgets.size() && k < sc.market.agent_of.size(); ++k) {
    agent_budget[sc.market.agent_of[k]] += sc.test_budgets[k];
  }
  std::vector<exchange::DayAccount> accounts;
  std::vector<RunResult> manuals;
  std::vector<sim::Day> days;  // kept for the simulator's replay of the served tables below
  days.reserve(static_cast<size_t>(cfg.days));
  for (int d = 0; d < cfg.days; ++d) {
    days.push_back(
        sim::GenerateDay(world, sc.cfg.day, Rng::Mix(sc.cfg.seed, cfg.first_day_seed + d)));
    const sim::Day& day = days.back();
    // Chaos during this day's steps: a timer kills the process halfway through the step.
    std::vector<std::thread> timers;
    std::vector<Chaos> todays;
    for (const auto& c : chaos) {
      if (c.day == d) todays.push_back(c);
    }
    auto on_step_start = [&](int step) {
      for (const auto& c : todays) {
        if (c.step != step) continue;
        Child& victim = c.what == "kill-learner" ? learner : bidder;
        const std::string what = c.what;
        timers.emplace_back([&victim, what, d, step, &chaos_log] {
          std::this_thread::sleep_for(std::chrono::milliseconds(400));
          victim.Stop(SIGKILL, 0);
          chaos_log.push_back(what + " (SIGKILL) during day " + std::to_string(d) + " step " +
                              std::to_string(step) + "; restarted after 1 s");
          std::this_thread::sleep_for(std::chrono::seconds(1));
          victim.Start();
        });
      }
    };
    on_step_start(0);
    auto acct = ex.PlayDay(day, d, [&](const exchange::StepAccount& sa) {
      for (auto& t : timers) t.join();
      timers.clear();
      if (sa.marker.step + 1 < T) on_step_start(sa.marker.step + 1);
    });
    for (auto& t : timers) t.join();
    if (!acct.ok()) return fail(acct.status());
    // Manual bids on the same day, same budgets, in the simulator's engine.
    RunResult manual = sim::EvaluateTable(sc, day, sc.test_budgets, ActionTable(N, L));
    double lr = acct->total.revenue.units(), mr = manual.total.revenue.units();
    char line[256];
    std::snprintf(line, sizeof line,
                  "day %d: learned revenue %.0f vs manual %.0f (%.2fx), spend %.1f%% vs %.1f%% of "
                  "budget, %.1f s",
                  d, lr, mr, mr > 0 ? lr / mr : 0.0,
                  100.0 * acct->total.cost.units() / manual.total.budget.units(),
                  100.0 * CostOverBudget(manual.total), acct->seconds);
    say(line);
    accounts.push_back(*acct);
    manuals.push_back(manual);
  }

  // 4. Stop the learner and the bidder cleanly; read what they recorded.
  const int learner_exit = learner.Stop(SIGTERM, 30000);
  const int bidder_exit = bidder.Stop(SIGTERM, 30000);
  const auto tables = ReadPublishedTables(kafka.bootstrap);
  std::map<std::pair<int64_t, int>, json> learner_steps;
  int64_t transitions = 0;
  std::vector<std::string> missing, duplicated;
  json online = json::object();  // the learner's last consumer position
  {
    auto store = learn::OpenRocksDbReplayStore(out + "/learner/replay");
    if (!store.ok()) return fail(store.status());
    if (auto m = (*store)->GetMeta("online"); m.ok()) online = json::parse(*m);
    std::map<std::pair<int64_t, int>, int> seen;
    // The offline pre-training transitions imported first are not the loop's.
    uint64_t imported = 0;
    if (auto im = (*store)->GetMeta("imported"); im.ok()) imported = std::stoull(*im);
    report["replay_imported_offline_transitions"] = imported;
    for (uint64_t q = std::max((*store)->FirstSeq(), imported); q < (*store)->NextSeq(); ++q) {
      auto t = (*store)->Get(q);
      if (!t.ok()) return fail(t.status());
      ++seen[{static_cast<int64_t>(t->episode), static_cast<int>(t->step)}];
      ++transitions;
    }
    for (int d = 0; d < cfg.days; ++d) {
      for (int s = 0; s < T; ++s) {
        const auto it = seen.find({d, s});
        const std::string name = std::to_string(d) + ":" + std::to_string(s);
        if (it == seen.end()) missing.push_back(name);
        if (it != seen.end() && it->second > 1) duplicated.push_back(name);
        auto m = (*store)->GetMeta("step:" + name);
        if (m.ok()) learner_steps[{d, s}] = json::parse(*m);
      }
    }
  }

  // Where the learner stopped reading vs. what the events topic holds, per partition.
  json partitions = json::array();
  int64_t topic_messages = 0;
  {
    kafka::Producer::Options qo;
    qo.bootstrap = kafka.bootstrap;
    auto q = kafka::Producer::Create(std::move(qo));
    for (int p = 0; q.ok() && p < kEventPartitions; ++p) {
      const auto wm = (*q)->Watermarks("rtb.events", p, 5000);
      const int64_t lo = wm.ok() ? wm->first : 0, hi = wm.ok() ? wm->second : 0;
      topic_messages += hi - lo;
      const std::string k = std::to_string(p);
      partitions.push_back(
          {{"partition", p},
           {"high_watermark", hi},
           {"learner_next_offset", online.contains("offsets") && online["offsets"].contains(k)
                                       ? online["offsets"][k]
                                       : json(nullptr)}});
    }
  }
  bool totals_match = true;
  for (int d = 0; d < cfg.days; ++d) {
    const auto& acct = accounts[static_cast<size_t>(d)];
    const RunResult& manual = manuals[static_cast<size_t>(d)];
    json day;
    day["day"] = d;
    Outcome learned_total;
    json by_agent = json::array();
    for (int i = 0; i < N; ++i) {
      Outcome o = acct.by_agent[static_cast<size_t>(i)];
      o.budget = agent_budget[static_cast<size_t>(i)];
      learned_total += o;
      by_agent.push_back(OutcomeJson(o));
    }
    day["learned"] = OutcomeJson(learned_total);
    day["learned"]["by_agent"] = by_agent;
    // The simulator's engine playing the tables the bidder served, on the same day: how far
    // the live loop (HTTP, budgets guarded by reservations, Kafka) is from the offline model.
    {
      std::vector<ActionTable> served;
      for (int s = 0; s < T; ++s) {
        auto it = tables.find(1 + static_cast<uint64_t>(d) * T + s);
        served.push_back(it == tables.end() ? ActionTable(N, L) : it->second);
      }
      const RunResult ls =
          sim::EvaluateTables(sc, days[static_cast<size_t>(d)], sc.test_budgets, served);
      day["learned_in_simulator"] = OutcomeJson(ls.total);
      day["learned_in_simulator"]["by_agent"] = json::array();
      for (const auto& o : ls.rows)
        day["learned_in_simulator"]["by_agent"].push_back(OutcomeJson(o));
    }
    day["manual"] = OutcomeJson(manual.total);
    day["manual"]["by_agent"] = json::array();
    for (const auto& o : manual.rows) day["manual"]["by_agent"].push_back(OutcomeJson(o));
    day["revenue_ratio"] = manual.total.revenue.value() > 0
                               ? json(learned_total.revenue.units() / manual.total.revenue.units())
                               : json(nullptr);
    day["seconds"] = acct.seconds;
    day["steps"] = json::array();
    for (const auto& sa : acct.steps) {
      json s;
      s["step"] = sa.marker.step;
      const uint64_t version = 1 + static_cast<uint64_t>(d) * T + sa.marker.step;
      s["policy_version"] = version;
      json tab = json::array();
      auto it = tables.find(version);
      for (int i = 0; i < N; ++i) {
        json row = json::array();
        for (int j = 0; j < L; ++j) row.push_back(it == tables.end() ? 0.0 : it->second.at(i, j));
        tab.push_back(row);
      }
      s["table"] = tab;
      s["policy_lag_ms"] = sa.policy_lag_ms >= 0 ? json(sa.policy_lag_ms) : json(nullptr);
      if (sa.policy_lag_ms >= 0) lags.push_back(sa.policy_lag_ms);
      s["exchange"] = json::parse(EncodeStepMarker(sa.marker));
      s["lost_requests"] = sa.lost_requests;
      s["failed_notices"] = sa.failed_notices;
      const auto ls = learner_steps.find({d, sa.marker.step});
      bool match = false;
      if (ls != learner_steps.end()) {
        s["learner"] = ls->second;
        match = ls->second["total_cost_micros"].get<int64_t>() == sa.marker.cost_micros &&
                ls->second["total_revenue_micros"].get<int64_t>() == sa.marker.revenue_micros;
      }
      s["learner_matches_exchange"] = match;
      totals_match = totals_match && match;
      day["steps"].push_back(s);
    }
    report["days"].push_back(day);
  }
  std::sort(lags.begin(), lags.end());
  auto q = [&](double p) {
    return lags.empty() ? 0.0
                        : lags[std::min(lags.size() - 1, static_cast<size_t>(p * lags.size()))];
  };
  report["policy_lag_ms"] = {{"p50", q(0.5)},
                             {"p90", q(0.9)},
                             {"max", lags.empty() ? 0.0 : lags.back()},
                             {"n", static_cast<int>(lags.size())}};
  report["loop_check"] = {{"transitions", transitions},
                          {"expected_transitions", static_cast<int64_t>(cfg.days) * T},
                          {"missing", missing},
                          {"duplicated", duplicated},
                          {"totals_match", totals_match},
                          {"events_topic_messages", topic_messages},
                          {"events_partitions", partitions}};
  // The events topic as a JSON-lines dump: what `rtb replay --format events` reads offline.
  {
    std::ofstream dump(out + "/events.jsonl", std::ios::trunc);
    int64_t dumped = 0, not_retained = 0;
    const Status st = kafka::ReadWholeTopic(
        {.bootstrap = kafka.bootstrap}, "rtb.events", 30000,
        [&](int, int64_t, std::string_view payload) {
          dump << payload << '\n';
          ++dumped;
        },
        &not_retained);
    // The embedded mock cluster keeps about 5 MB per partition: on long runs the oldest events
    // are gone before the dump (a real cluster's retention is a config value).
    report["events_dump"] = {{"file", "events.jsonl"},
                             {"messages", dumped},
                             {"read_to_end", st.ok()},
                             {"messages_no_longer_retained", not_retained},
                             {"complete", st.ok() && not_retained == 0},
                             {"replay", "rtb replay --format events --log " + cfg.out +
                                            "/events.jsonl --strategy logged,manual"}};
  }
  report["chaos"] = chaos_log;
  report["processes"] = {{"learner_exit", learner_exit}, {"bidder_exit", bidder_exit}};
  report["about"] = {
      "Learned: the live loop. " + std::to_string(cfg.days) + " simulated days of the world in " +
          sim_path.lexically_normal().string() +
          " were played by `rtb exchange` against a real bidder (`rtb serve`, OpenRTB over HTTP) "
          "whose action tables came from the online learner (`rtb learn`) over Kafka; revenue, "
          "cost and clicks are the exchange's accounting (outcomes: " +
          xc.outcomes + ").",
      "Manual: the same days' requests (same candidates, floors and budgets) run through the "
      "simulator's GSP auction (`rtb simulate`'s engine) with manual bids, a = 0, expected "
      "outcomes: the counterfactual for the same traffic.",
      std::string("The learner started from ") +
          (init_ckpt.empty() ? "fresh networks" : "DCMAB pre-trained offline (" + init_ckpt + ")") +
          " and kept learning online: one transition per step, " +
          "updates after each step, a new table published before the next step.",
      "Budgets: each advertiser's daily budget is 1/3 of its cost under manual bids with no "
      "budget (the paper's setting); COST = spend / budget.",
      "Rerun: rtb demo --config " + args.config + " --out " + cfg.out};
  report["seconds"] = std::chrono::duration<double>(Clock::now() - t_start).count();
  const std::string md = RenderMarkdown(report);
  if (auto st = WriteFileAtomic(cfg.out + "/report.json", report.dump(2) + "\n"); !st.ok())
    return fail(st);
  if (auto st = WriteFileAtomic(cfg.out + "/report.md", md); !st.ok()) return fail(st);
  if (auto st = WriteFileAtomic(cfg.out + "/report.html", RenderHtml(report, md)); !st.ok())
    return fail(st);
  std::printf("%s", md.c_str());
  std::printf("\nwrote %s/report.{json,md,html} in %.0f s\n", cfg.out.c_str(),
              report["seconds"].get<double>());
  return 0;
}

}  // namespace rtb::cli
