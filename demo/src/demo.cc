// `rtb demo`, phase by phase (the list is in rtb/demo/demo.h).
#include "rtb/demo/demo.h"

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <tuple>

#include "child.h"
#include "demo_config.h"
#include "demo_kafka.h"
#include "demo_report.h"
#include "rtb/bidder/config.h"
#include "rtb/core/ab_report.h"
#include "rtb/core/action_table.h"
#include "rtb/core/config.h"
#include "rtb/core/goal.h"
#include "rtb/core/metrics.h"
#include "rtb/core/policy.h"
#include "rtb/core/report.h"
#include "rtb/core/rng.h"
#include "rtb/core/step_marker.h"
#include "rtb/exchange/exchange.h"
#include "rtb/kafka/kafka.h"
#include "rtb/learner/replay_store.h"
#include "rtb/simulator/export.h"
#include "rtb/simulator/simulate.h"
#include "rtb/simulator/world.h"

namespace rtb::demo {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

fs::path ExeDir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : p.parent_path();
}

namespace {

// A number as a command-line argument that reads back as the same double.
std::string ExactArg(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// The embedded cluster (librdkafka 2.0.2's mock) answers a fetch with at most one batch per
// partition and finds it by walking the partition's batches from the oldest (rdkafka_mock.c,
// rd_kafka_mock_msgset_find): reading costs (batches written) x (batches kept). With the
// bidders' 5 ms linger over 48 partitions each batch held about one event, and in a run of
// 700,000 events the cluster's one thread spent three quarters of its time in that walk and read
// every topic (the lease topics too) seconds late by the end. A 200 ms linger over 24 partitions
// makes batches of about 19 events, a tenth as many a second per partition and half as many
// partitions to read. The mock keeps the last 5 MB of each partition: 24 hold the last ~98% of a
// 4-day demo's events (48 held every one, at twice the thread's time), far more than a reader
// one step behind needs; the dump reads the topic as it is written.
constexpr int kEventPartitions = 24;
constexpr int kEventLingerMs = 200;  // the demo's bidders' kafka.linger_ms (a step lasts ~3 s)
// A real cluster: the bound on making the run's topics (a wrong address fails within it).
constexpr int kCreateTopicsMs = 8000;
// The embedded cluster's thread stands for the brokers' own machines: above the processes it
// serves on this machine's cores (where the process may raise a priority: root).
constexpr int kMockThreadNice = -10;

// What every phase reads: the configs, the output folder, the world.
struct Setup {
  DemoArgs args;
  DemoConfig cfg;
  std::vector<Chaos> chaos;
  std::string sim_path;  // the world's simulator config
  std::string out;       // absolute output folder
  std::unique_ptr<sim::Scenario> sc;
  sim::World world;
  int N = 0, L = 0, T = 0;
  // Kafka: brokers "" is the embedded mock cluster; else a real cluster's bootstrap
  // (--brokers), its client properties (--kafka-properties) and the run's own topics there.
  std::string brokers;
  kafka::Properties kafka_properties;
  RunTopics topics;
  Clock::time_point start = Clock::now();
  bool quiet = false;
  void Say(const std::string& s) const {
    if (!quiet) std::fprintf(stderr, "rtb demo: %s\n", s.c_str());
  }
};

// The embedded Kafka (librdkafka's mock cluster, alive as long as this process) or a real
// cluster's address, the two child processes and the exchange that plays against them.
struct Services {
  std::unique_ptr<kafka::MockCluster> kafka;  // null on a real cluster
  kafka::ClientOptions client;                // every Kafka client of the run: its cluster
  // events.jsonl, written as the events topic is (the tail stops before the file closes).
  std::ofstream events_dump;
  std::unique_ptr<kafka::TopicTail> events_tail;
  std::vector<std::string> listens;  // each bidder's host:port
  std::vector<std::unique_ptr<Child>> bidders;
  std::unique_ptr<Child> learner;
  std::unique_ptr<Child> budget;  // the lease coordinator (several bidders only)
  std::unique_ptr<exchange::Exchange> exchange;
  exchange::ExchangeConfig xc;
  int bidder_exit = 0, learner_exit = 0, budget_exit = 0;
};

// What the live days produced.
struct Played {
  std::vector<sim::Day> days;
  std::vector<exchange::DayAccount> accounts;
  std::vector<RunResult> manuals;  // manual bids on the same days, in the simulator
  std::vector<std::string> chaos_log;
};

// What the learner recorded and what the events topic holds (phase 6).
struct LoopRecord {
  std::map<uint64_t, ActionTable> tables;  // every table published, by version
  std::map<std::pair<int64_t, int>, LearnerStep> learner_steps;
  int64_t transitions = 0;
  uint64_t imported = 0;  // offline transitions imported first
  std::vector<std::string> missing, duplicated;
  std::vector<PartitionCheck> partitions;
  int64_t topic_messages = 0;
  // Per policy version: when each bidder process installed it (unix ms, from its log; a
  // restarted bidder counts once, at its first install).
  std::map<uint64_t, std::vector<int64_t>> installed_ms;
};

// "2026-11-24T06:56:19.453Z ..." -> unix ms; -1 if the line does not start with a timestamp.
int64_t LogLineMs(const std::string& line) {
  std::tm tm{};
  int ms = 0;
  if (line.size() < 24 || line[10] != 'T' || line[23] != 'Z') return -1;
  if (std::sscanf(line.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7) {
    return -1;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}

// Every bidder's log: the first time it installed each policy version.
std::map<uint64_t, std::vector<int64_t>> PolicyInstalls(const Setup& s) {
  std::map<uint64_t, std::vector<int64_t>> out;
  const std::string key = "installed policy version ";
  for (int b = 0; b < s.cfg.bidders; ++b) {
    std::ifstream in(s.out + "/logs/" +
                     (b == 0 ? std::string("bidder") : "bidder-" + std::to_string(b)) + ".log");
    std::map<uint64_t, int64_t> first;
    std::string line;
    while (std::getline(in, line)) {
      const size_t p = line.find(key);
      const int64_t ms = LogLineMs(line);
      if (p == std::string::npos || ms < 0) continue;
      const uint64_t v = std::strtoull(line.c_str() + p + key.size(), nullptr, 10);
      first.emplace(v, ms);
    }
    for (const auto& [v, ms] : first) out[v].push_back(ms);
  }
  return out;
}

// ---- 1. Prepare -------------------------------------------------------------------------

Result<std::unique_ptr<Setup>> Prepare(const DemoArgs& args) {
  auto s = std::make_unique<Setup>();
  s->args = args;
  s->quiet = args.quiet;
  RTB_ASSIGN_OR_RETURN(s->cfg, LoadDemoConfig(args.config));
  DemoConfig& cfg = s->cfg;
  if (!args.out.empty()) cfg.out = args.out;
  if (args.days > 0) cfg.days = args.days;
  if (!args.auction.empty()) cfg.auction = args.auction;
  if (args.cpa_share >= 0) cfg.cpa_share = args.cpa_share;
  if (args.bidders > 0) cfg.bidders = args.bidders;
  if (!args.spread.empty()) cfg.bidder_spread = args.spread;
  if (!cfg.bidder_spread.empty() && static_cast<int>(cfg.bidder_spread.size()) != cfg.bidders) {
    return Status::InvalidArgument("--spread needs one weight per bidder (" +
                                   std::to_string(cfg.bidders) + ")");
  }
  for (const auto& c : args.chaos) cfg.chaos.push_back(c);
  RTB_ASSIGN_OR_RETURN(s->chaos, ParseChaos(cfg.chaos));
  s->brokers = args.brokers;
  if (!args.kafka_properties.empty()) {
    if (args.brokers.empty()) {
      return Status::InvalidArgument("--kafka-properties is for a real cluster (--brokers)");
    }
    RTB_ASSIGN_OR_RETURN(s->kafka_properties, ReadKafkaPropertiesFile(args.kafka_properties));
  }
  if (s->brokers.empty()) {
    s->topics.events_partitions = kEventPartitions;
  } else {
    s->topics = RunTopics::ForRun(NewRunId());
  }
  // The world: the learner config's simulator config (rtb-learner validates the rest).
  RTB_ASSIGN_OR_RETURN(auto lcfg, ConfigFile::Load(cfg.learner_config));
  std::string sim_rel = "../simulator/default.yaml";
  ConfigMap root = lcfg->Root();
  if (root.Has("simulator_config")) root.Get("simulator_config", &sim_rel);
  fs::path sim_path = sim_rel;
  if (sim_path.is_relative()) sim_path = fs::path(cfg.learner_config).parent_path() / sim_path;
  s->sim_path = sim_path.lexically_normal().string();
  RTB_ASSIGN_OR_RETURN(auto simcfg, sim::LoadSimulatorConfig(s->sim_path));
  RTB_RETURN_IF_ERROR(sim::OverrideAuctionType(&simcfg, cfg.auction));
  if (cfg.cpa_share >= 0) simcfg.world.cpa_share = cfg.cpa_share;

  // Only an earlier demo's output (marked) is replaced; any other non-empty directory is an
  // error, so a mistyped --out never deletes someone's files.
  std::error_code ec;
  if (fs::exists(cfg.out) && !fs::is_empty(cfg.out, ec)) {
    if (!fs::exists(cfg.out + "/.rtb-demo")) {
      return Status::InvalidArgument(
          cfg.out + ": exists and is not an rtb demo output; choose another --out");
    }
    fs::remove_all(cfg.out, ec);
  }
  fs::create_directories(cfg.out + "/logs", ec);
  if (!ec) std::ofstream(cfg.out + "/.rtb-demo") << "rtb demo output; rerunning replaces it\n";
  if (ec) return Status::IoError(cfg.out + ": " + ec.message());
  s->out = fs::absolute(cfg.out).lexically_normal().string();

  s->Say("building the world from " + s->sim_path);
  RTB_ASSIGN_OR_RETURN(s->sc, sim::BuildScenario(simcfg, "", "", false));
  s->world = sim::GenerateWorld(s->sc->cfg);
  s->N = s->sc->market.agents;
  s->L = s->sc->market.clusters;
  s->T = s->sc->market.steps;
  return s;
}

// ---- 2. Pretrain ------------------------------------------------------------------------

// DCMAB trained offline by the learner's own executable (LibTorch stays out of `rtb`); the
// path of its best checkpoint, or "" when pre-training is off.
Result<std::string> Pretrain(const Setup& s) {
  if (!s.cfg.pretrain || s.args.episodes == 0) return std::string();
  const std::string exe = (ExeDir() / "rtb-learner").string();
  s.Say("pre-training DCMAB offline in the simulator (log: " + s.out + "/logs/pretrain.log)");
  Child pre{"pretrain",
            {exe, "train", "--config", s.cfg.learner_config, "--algo", "dcmab", "--seeds", "1",
             "--out", s.out + "/pretrain", "--quiet"},
            s.out + "/logs/pretrain.log"};
  if (s.args.episodes > 0) {
    pre.args.push_back("--episodes");
    pre.args.push_back(std::to_string(s.args.episodes));
  }
  if (!s.cfg.auction.empty()) {
    pre.args.push_back("--auction");
    pre.args.push_back(s.cfg.auction);
  }
  if (s.cfg.cpa_share >= 0) {
    pre.args.push_back("--cpa-share");
    pre.args.push_back(ExactArg(s.cfg.cpa_share));
  }
  if (s.cfg.learned_share < 1) {
    // Pre-train for the arm it will serve: its users (the bidder's salt) and its budgets.
    RTB_ASSIGN_OR_RETURN(const bidder::BidderConfig base,
                         bidder::LoadBidderConfig(s.cfg.bidder_config));
    for (std::string a : {std::string("--learned-share"), ExactArg(s.cfg.learned_share),
                          std::string("--ab-salt"), base.ab.salt}) {
      pre.args.push_back(std::move(a));
    }
  }
  if (!pre.Start()) return Status::Internal("cannot start " + exe);
  if (pre.Wait() != 0) {
    return Status::Internal("pre-training failed; see " + s.out + "/logs/pretrain.log");
  }
  std::string best;
  for (const auto& e : fs::recursive_directory_iterator(s.out + "/pretrain")) {
    if (e.is_directory() && e.path().filename() == "best") best = e.path().string();
  }
  if (best.empty()) return Status::NotFound("pre-training left no best checkpoint");
  return best;
}

// The coordinator's heartbeat timeout in the demo: a simulated day lasts about 10 s of wall time,
// and bidders report every 200 ms.
constexpr int64_t kLeaseHeartbeatMs = 1500;
// How often the demo's coordinator looks for silent bidders: a killed bidder is down for the
// heartbeat timeout plus 1 s, and the checks must not straddle that second (with checks every
// second, 1 run in ~15 of the two-bidder loop test found no dead bidder).
constexpr int64_t kLeaseReclaimEveryMs = 200;

// ---- 3. StartServices -------------------------------------------------------------------

// The bidder's config: the base config's limits and paths, set to this demo's port, Kafka,
// folders and the simulated world's hooks, then the world's advertisers (sim::ExportBidderWorld).
Status WriteBidderConfig(const Setup& s, const Services& svc) {
  std::ifstream in(s.cfg.bidder_config);
  if (!in) return Status::NotFound(s.cfg.bidder_config + ": cannot open bidder config");
  std::ostringstream base;
  std::string line;
  bool in_kafka = false, in_ab = false, in_leases = false;
  auto key_of = [](const std::string& l) { return l.substr(0, l.find(':')); };
  while (std::getline(in, line)) {
    if (line.rfind("advertisers:", 0) == 0) break;
    const std::string k = key_of(line);
    if (!line.empty() && line[0] != ' ' && line[0] != '#') {
      in_kafka = k == "kafka";
      in_ab = k == "ab";
      in_leases = k == "leases";
    }
    if (in_ab && k == "  learned_share") {
      line = "  learned_share: " + std::to_string(s.cfg.learned_share);
    }
    if (k == "listen") line = "listen: " + svc.listens[0];
    if (k == "threads") line = "threads: " + std::to_string(s.cfg.bidder_threads);
    if (k == "notice_base_url") line = "notice_base_url: http://" + svc.listens[0];
    if (s.cfg.bidders > 1) {
      // Several bidders: one notice secret (any bidder checks any notice) and budget leases.
      if (k == "notice_secret") line = "notice_secret: rtb-demo-shared-notice-secret";
      if (in_leases && k == "  enabled") line = "  enabled: true";
      if (in_leases && k == "  name") line = "  name: bidder-0";
      if (in_leases && k == "  check_every_ms") line = "  check_every_ms: 20";
      if (in_leases && k == "  report_every_ms") line = "  report_every_ms: 200";
      // Below the coordinator's heartbeat timeout (kLeaseHeartbeatMs), as the TTL's rule wants
      // (docs/budget-leases.md section 4): a bidder silent this long resyncs before bidding.
      if (in_leases && k == "  ttl_ms") {
        line = "  ttl_ms: " + std::to_string(kLeaseHeartbeatMs * 2 / 3);
      }
      // A simulated day lasts about 10 s: leases for half a second of spend.
      if (in_leases && k == "  horizon_ms") line = "  horizon_ms: 500";
    }
    if (k == "max_bids_per_imp") {
      line = "max_bids_per_imp: " + std::to_string(std::min(8, s.sc->cfg.auction.slots + 1));
    }
    if (k == "default_at") line = "default_at: " + std::to_string(s.sc->cfg.auction.openrtb_at());
    if (k == "policy_max_age_s") line = "policy_max_age_s: 86400";
    if (k == "drain_ms") line = "drain_ms: 0";  // stopped at the end: no load balancer to drain
    if (k == "state_path") line = "state_path: " + s.out + "/bidder/state";
    if (k == "simulation_hooks") line = "simulation_hooks: true";
    if (in_kafka && k == "  brokers") line = "  brokers: " + svc.client.bootstrap;
    if (!s.brokers.empty()) {  // a real cluster: the run's own topics, the site's properties
      if (in_kafka && k == "  events_topic") line = "  events_topic: " + s.topics.events;
      if (in_kafka && k == "  policy_topic") line = "  policy_topic: " + s.topics.policy;
      if (in_kafka && k == "  properties") {
        line = "  properties: " + PropertiesYaml(s.kafka_properties);
      }
      if (in_leases && k == "  requests_topic") {
        line = "  requests_topic: " + s.topics.lease_requests;
      }
      if (in_leases && k == "  grants_topic") line = "  grants_topic: " + s.topics.lease_grants;
      if (in_leases && k == "  notices_topic") line = "  notices_topic: " + s.topics.notices;
    }
    if (in_kafka && k == "  linger_ms") line = "  linger_ms: " + std::to_string(kEventLingerMs);
    if (in_kafka && k == "  spill_path") line = "  spill_path: " + s.out + "/bidder/spill.jsonl";
    base << line << "\n";
  }
  base << "advertisers: []\n";
  RTB_RETURN_IF_ERROR(WriteFileAtomic(s.out + "/bidder-base.yaml", base.str()));
  RTB_RETURN_IF_ERROR(
      sim::ExportBidderWorld(*s.sc, s.world, s.out + "/bidder", s.out + "/bidder-base.yaml"));
  // Bidders 1.. : bidder 0's config on their own port, state, spill file and lease name.
  for (int b = 1; b < s.cfg.bidders; ++b) {
    std::ifstream in0(s.out + "/bidder/bidder.yaml");
    std::ostringstream y;
    const std::string dir = s.out + "/bidder-" + std::to_string(b);
    bool leases = false;
    while (std::getline(in0, line)) {
      const std::string k = key_of(line);
      if (!line.empty() && line[0] != ' ' && line[0] != '#') leases = k == "leases";
      if (k == "listen") line = "listen: " + svc.listens[static_cast<size_t>(b)];
      if (k == "notice_base_url")
        line = "notice_base_url: http://" + svc.listens[static_cast<size_t>(b)];
      if (k == "state_path") line = "state_path: " + dir + "/state";
      if (k == "  spill_path") line = "  spill_path: " + dir + "/spill.jsonl";
      if (leases && k == "  name") line = "  name: bidder-" + std::to_string(b);
      y << line << "\n";
    }
    std::error_code ec;
    fs::create_directories(dir, ec);
    RTB_RETURN_IF_ERROR(WriteFileAtomic(dir + "/bidder.yaml", y.str()));
  }
  return Status::Ok();
}

// The run's Kafka: the embedded cluster with the default topics, or a real cluster, on which
// Run made the run's own topics.
Status StartKafka(const Setup& s, Services* svc) {
  svc->client.properties = s.kafka_properties;
  if (!s.brokers.empty()) {
    svc->client.bootstrap = s.brokers;
    s.Say("Kafka at " + s.brokers + ": this run's own topics (" + s.topics.events + ", ...)");
    return Status::Ok();
  }
  RTB_ASSIGN_OR_RETURN(svc->kafka, kafka::MockCluster::Start(3, kMockThreadNice));
  svc->client.bootstrap = svc->kafka->bootstrap();
  const RunTopics& t = s.topics;
  RTB_RETURN_IF_ERROR(svc->kafka->CreateTopic(t.events, t.events_partitions, 3));
  RTB_RETURN_IF_ERROR(svc->kafka->CreateTopic(t.policy, 1, 3));
  RTB_RETURN_IF_ERROR(svc->kafka->CreateTopic(t.clock, 1, 3));
  if (s.cfg.bidders > 1) {
    RTB_RETURN_IF_ERROR(svc->kafka->CreateTopic(t.lease_requests, 4, 3));
    RTB_RETURN_IF_ERROR(svc->kafka->CreateTopic(t.lease_grants, 1, 3));
    RTB_RETURN_IF_ERROR(svc->kafka->CreateTopic(t.notices, 4, 3));
  }
  s.Say("embedded Kafka (mock cluster) at " + svc->client.bootstrap);
  return Status::Ok();
}

// On a real cluster, the written bidder config names the run's topics and the site's
// properties: the base config had a line for each (WriteBidderConfig sets lines, adds none).
Status CheckRunBidderConfig(const Setup& s) {
  if (s.brokers.empty()) return Status::Ok();
  RTB_ASSIGN_OR_RETURN(const bidder::BidderConfig b,
                       bidder::LoadBidderConfig(s.out + "/bidder/bidder.yaml"));
  const RunTopics& t = s.topics;
  const bool leases = s.cfg.bidders == 1 || (b.leases.requests_topic == t.lease_requests &&
                                             b.leases.grants_topic == t.lease_grants &&
                                             b.leases.notices_topic == t.notices);
  if (b.kafka.events_topic == t.events && b.kafka.policy_topic == t.policy && leases &&
      b.kafka.properties == s.kafka_properties) {
    return Status::Ok();
  }
  return Status::InvalidArgument(
      s.cfg.bidder_config +
      ": on a real cluster the demo sets kafka.events_topic, policy_topic and properties (and "
      "leases.requests_topic, grants_topic and notices_topic) on the base config's own lines; "
      "it lacks one of them");
}

Result<std::unique_ptr<Services>> StartServices(const Setup& s, const std::string& init_ckpt) {
  auto svc = std::make_unique<Services>();
  RTB_RETURN_IF_ERROR(StartKafka(s, svc.get()));
  svc->events_dump.open(s.out + "/events.jsonl", std::ios::trunc | std::ios::binary);
  if (!svc->events_dump) return Status::IoError("cannot write " + s.out + "/events.jsonl");
  RTB_ASSIGN_OR_RETURN(svc->events_tail,
                       kafka::TopicTail::Start(
                           svc->client, s.topics.events, 30000,
                           [out = &svc->events_dump](int32_t, int64_t, std::string_view payload) {
                             *out << payload << '\n';
                           }));
  for (int b = 0; b < s.cfg.bidders; ++b) {
    svc->listens.push_back("127.0.0.1:" + std::to_string(FreePort()));
  }
  RTB_RETURN_IF_ERROR(WriteBidderConfig(s, *svc));
  RTB_RETURN_IF_ERROR(CheckRunBidderConfig(s));

  for (int b = 0; b < s.cfg.bidders; ++b) {
    const std::string dir = b == 0 ? s.out + "/bidder" : s.out + "/bidder-" + std::to_string(b);
    const std::string log =
        b == 0 ? s.out + "/logs/bidder.log" : s.out + "/logs/bidder-" + std::to_string(b) + ".log";
    svc->bidders.push_back(std::make_unique<Child>(
        Child{b == 0 ? "bidder" : "bidder-" + std::to_string(b),
              {(ExeDir() / "rtb").string(), "serve", "--config", dir + "/bidder.yaml"},
              log}));
  }
  if (s.cfg.bidders > 1) {
    svc->budget = std::make_unique<Child>(
        Child{"budget",
              {(ExeDir() / "rtb").string(), "budget", "--market", s.out + "/bidder/bidder.yaml",
               "--brokers", svc->client.bootstrap, "--requests-topic", s.topics.lease_requests,
               "--grants-topic", s.topics.lease_grants, "--coordinators-topic",
               s.topics.coordinators(), "--leases-out", s.out + "/leases.csv",
               "--heartbeat-timeout-ms", std::to_string(kLeaseHeartbeatMs), "--reclaim-every-ms",
               std::to_string(kLeaseReclaimEveryMs)},
              s.out + "/logs/budget.log"});
  }
  // On a real cluster the learner reads and writes the run's topics in a group of its own.
  std::string learner_config = s.cfg.learner_config;
  if (!s.brokers.empty()) {
    learner_config = s.out + "/learner.yaml";
    RTB_RETURN_IF_ERROR(
        WriteRunLearnerConfig(s.cfg.learner_config, s.sim_path, s.topics, learner_config));
  }
  std::vector<std::string> learner_args = {(ExeDir() / "rtb-learner").string(),
                                           "learn",
                                           "--config",
                                           learner_config,
                                           "--brokers",
                                           svc->client.bootstrap,
                                           "--state-dir",
                                           s.out + "/learner",
                                           "--market",
                                           s.out + "/bidder/bidder.yaml"};
  if (!init_ckpt.empty()) {
    learner_args.push_back("--init");
    learner_args.push_back(init_ckpt);
  }

  svc->learner =
      std::make_unique<Child>(Child{"learner", learner_args, s.out + "/logs/learner.log"});
  bool started = svc->learner->Start();
  for (auto& b : svc->bidders) started = b->Start() && started;
  if (svc->budget != nullptr) started = svc->budget->Start() && started;
  if (!started) return Status::Internal("cannot start the bidders and the learner");

  svc->xc = s.cfg.exchange;
  // The exchange assigns users to arms as the bidder does (its written config's ab section).
  RTB_ASSIGN_OR_RETURN(const bidder::BidderConfig bcfg,
                       bidder::LoadBidderConfig(s.out + "/bidder/bidder.yaml"));
  svc->xc.learned_share = bcfg.ab.learned_share;
  svc->xc.ab_salt = bcfg.ab.salt;
  svc->xc.market_keys = bidder::MarketKeysOf(bcfg);  // the learner opens the step markers
  svc->xc.bidder = svc->listens[0];
  if (s.cfg.bidders > 1) {
    svc->xc.bidders = svc->listens;
    svc->xc.spread = s.cfg.bidder_spread;
  }
  svc->xc.brokers = svc->client.bootstrap;
  svc->xc.kafka_properties = s.kafka_properties;
  svc->xc.clock_topic = s.topics.clock;
  RTB_ASSIGN_OR_RETURN(svc->exchange, exchange::Exchange::Create(svc->xc, *s.sc));
  // Ready when the bidder answers and serves the learner's first table.
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  for (;;) {
    auto v = svc->exchange->BidderPolicyVersion();
    if (v.ok() && *v >= 1) break;
    for (const auto& b : svc->bidders) {
      if (!b->Running()) return Status::Internal("a bidder exited; see logs/bidder*.log");
    }
    if (svc->budget != nullptr && !svc->budget->Running()) {
      return Status::Internal("rtb budget exited; see logs/budget.log");
    }
    if (!svc->learner->Running()) {
      return Status::Internal("the learner exited; see logs/learner.log");
    }
    if (Clock::now() >= deadline)
      return Status::Unavailable("bidder/learner not ready after 120 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  s.Say((s.cfg.bidders == 1
             ? "bidder on " + svc->listens[0]
             : std::to_string(s.cfg.bidders) + " bidders sharing budgets through rtb budget") +
        " and learner running; playing " + std::to_string(s.cfg.days) + " simulated days live");
  return svc;
}

// ---- 4. PlayDays ------------------------------------------------------------------------

Result<Played> PlayDays(const Setup& s, Services& svc) {
  const sim::Scenario& sc = *s.sc;
  Played p;
  p.days.reserve(static_cast<size_t>(s.cfg.days));
  for (int d = 0; d < s.cfg.days; ++d) {
    p.days.push_back(
        sim::GenerateDay(s.world, sc.cfg.day, Rng::Mix(sc.cfg.seed, s.cfg.first_day_seed + d)));
    const sim::Day& day = p.days.back();
    // Chaos during this day's steps: the exchange kills the process as it is about to send the
    // step's middle request (Exchange::AtRequest: by request, not by clock, so that the step's
    // second half meets it down however fast or loaded the machine is). The learner, or the
    // only bidder, comes back 1 s later (a timer); a bidder sharing budgets 1 s past the
    // coordinator's heartbeat timeout (its lease is reclaimed), or (+step) a step later, at the
    // next step's middle request (the day's end for its last step), and no sooner than that:
    // across a step's end, while the exchange sends its requests to the others.
    const std::vector<size_t> begins = day.StepBegins();
    auto half_way = [&begins](int step) {
      return (begins[static_cast<size_t>(step)] + begins[static_cast<size_t>(step) + 1]) / 2;
    };
    std::mutex log_mu;  // two kills in one step log at once
    std::vector<std::thread> timers;
    // Bidders sharing budgets killed today, and when they may come back: one not back by the
    // day's end (killed in its last step) is restarted then.
    std::vector<std::pair<Child*, Clock::time_point>> back_after_day;
    Status restart_error;  // a bidder restarted a step later that was not ready
    const auto reclaimed = std::chrono::milliseconds(kLeaseHeartbeatMs + 1000);
    std::vector<Chaos> todays;
    for (const auto& c : s.chaos) {
      if (c.day == d) todays.push_back(c);
    }
    auto on_step_start = [&](int step) {
      for (const auto& c : todays) {
        if (c.step != step) continue;
        Child* const killed = c.what == "kill-learner" ? svc.learner.get() : svc.bidders[0].get();
        const std::string what = c.what;
        // A bidder sharing budgets stays down past the coordinator's heartbeat timeout, so that
        // its lease is reclaimed: 1 s past it, or (+step) a step later.
        const bool shares = c.what == "kill-bidder" && s.cfg.bidders > 1;
        const bool step_later = shares && c.step_later;
        const int64_t down_ms = shares ? kLeaseHeartbeatMs + 1000 : 1000;
        svc.exchange->AtRequest(half_way(step), [&, what, step, step_later, down_ms, killed] {
          killed->Stop(SIGKILL, 0);
          const auto earliest = Clock::now() + reclaimed;
          std::lock_guard<std::mutex> lk(log_mu);
          const std::string at =
              " during day " + std::to_string(d) + " step " + std::to_string(step) + "; ";
          if (!step_later) {
            p.chaos_log.push_back(what + " (SIGKILL)" + at + "restarted after " +
                                  std::to_string(down_ms / 1000.0).substr(0, 3) + " s");
            timers.emplace_back([killed, down_ms] {
              std::this_thread::sleep_for(std::chrono::milliseconds(down_ms));
              killed->Start();
            });
            return;
          }
          back_after_day.emplace_back(killed, earliest);  // if not back by then
          if (step + 1 < s.T) {
            p.chaos_log.push_back(what + " (SIGKILL)" + at + "restarted a step later (step " +
                                  std::to_string(step + 1) + "'s middle request)");
            const size_t entry = p.chaos_log.size() - 1;
            // The day's traffic stands still while the process starts and until it is ready:
            // a start takes a second or two (its state store, the grants topic), seconds of a
            // real day but half of one of the demo's 4-second steps. On a world whose half step
            // is shorter than the coordinator's heartbeat timeout, the hold also waits for that
            // (the report says how long).
            svc.exchange->HoldAtRequest(half_way(step + 1), [&, killed, earliest, entry] {
              const auto held = Clock::now();
              std::this_thread::sleep_until(earliest);
              const auto t0 = Clock::now();
              killed->Start();
              const Status st = svc.exchange->BringBackWhenReady(0, 60000);
              auto secs = [](Clock::time_point a, Clock::time_point b) {
                return std::chrono::duration<double>(b - a).count();
              };
              const double took = secs(t0, Clock::now()), waited = secs(held, t0);
              std::lock_guard<std::mutex> lk2(log_mu);
              if (!st.ok()) {
                restart_error = st;
                return;
              }
              char buf[160];
              if (waited >= 0.01) {
                std::snprintf(buf, sizeof buf,
                              ", ready %.2f s later (traffic held %.2f s, %.2f s of it for the "
                              "coordinator's heartbeat timeout)",
                              took, took + waited, waited);
              } else {
                std::snprintf(buf, sizeof buf, ", ready %.2f s later (traffic held)", took);
              }
              p.chaos_log[entry] += buf;
            });
          } else {
            p.chaos_log.push_back(what + " (SIGKILL)" + at +
                                  "restarted a step later (the day's end)");
          }
        });
      }
    };
    on_step_start(0);
    auto acct = svc.exchange->PlayDay(day, d, [&](const exchange::StepAccount& sa) {
      for (auto& t : timers) t.join();
      timers.clear();
      if (sa.marker.step + 1 < s.T) on_step_start(sa.marker.step + 1);
    });
    // A bidder killed today is back before the next day opens (or the demo stops), serving: one
    // killed in the day's last step is restarted now.
    for (auto& [b, earliest] : back_after_day) {
      if (b->Running()) continue;
      std::this_thread::sleep_until(earliest);
      b->Start();
    }
    if (!back_after_day.empty()) {  // serving the others' table before the next day opens
      const auto deadline = Clock::now() + std::chrono::seconds(60);
      for (;;) {
        const auto all = svc.exchange->BidderPolicyVersion();
        const auto back = svc.exchange->BidderPolicyVersion(0);
        if (all.ok() && back.ok() && *back >= *all) break;
        if (Clock::now() > deadline) return Status::Unavailable("a restarted bidder is not back");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    for (auto& t : timers) t.join();
    if (!acct.ok()) return acct.status();
    if (!restart_error.ok()) return restart_error;
    // Manual bids on the same day, same budgets, in the simulator's engine.
    RunResult manual = sim::EvaluateTable(sc, day, sc.test_budgets, ActionTable(s.N, s.L));
    // The arms, as the exchange accounted them; per unit of each arm's share.
    Outcome arm[kArms];
    for (size_t x = 0; x < acct->by_arm_agent.size(); ++x) {
      arm[x / static_cast<size_t>(s.N)] += acct->by_arm_agent[x];
    }
    const double share = s.cfg.learned_share;
    const double lr = arm[0].revenue.units(), mr = arm[1].revenue.units();
    const double full = manual.total.budget.units();
    char line[320];
    std::snprintf(line, sizeof line,
                  "day %d: learned arm revenue %.0f vs manual arm %.0f (%.2fx per share), spend "
                  "%.1f%% vs %.1f%% of the arms' budgets, %.1f s",
                  d, lr, mr, mr > 0 && share < 1 ? (lr / share) / (mr / (1 - share)) : 0.0,
                  100.0 * arm[0].cost.units() / (full * share),
                  share < 1 ? 100.0 * arm[1].cost.units() / (full * (1 - share)) : 0.0,
                  acct->seconds);
    s.Say(line);
    p.accounts.push_back(*acct);
    p.manuals.push_back(manual);
  }
  return p;
}

// ---- 5. StopServices --------------------------------------------------------------------

void StopServices(Services& svc) {
  svc.learner_exit = svc.learner->Stop(SIGTERM, 30000);
  // Every bidder is told at once: stopped one after another, the first ones fell silent while
  // the last still reported, and the coordinator reclaimed their leases as if they had died.
  for (auto& b : svc.bidders) {
    if (b->pid > 0) ::kill(b->pid, SIGTERM);
  }
  for (auto& b : svc.bidders) {
    svc.bidder_exit = std::max(svc.bidder_exit, b->Stop(/*sig=*/0, 30000));  // 0: wait only
  }
  if (svc.budget != nullptr) svc.budget_exit = svc.budget->Stop(SIGTERM, 30000);
}

// ---- 6. Check ---------------------------------------------------------------------------

Result<LoopRecord> ReadLoopRecord(const Setup& s, const Services& svc) {
  LoopRecord rec;
  // Every table the learner published (policy topic). A failure leaves the tables read so far;
  // the report then shows manual for the rest.
  (void)kafka::ReadWholeTopic(svc.client, s.topics.policy, 10000,
                              [&](int, int64_t, std::string_view v) {
                                auto m = DecodePolicyMessage(v, "policy topic");
                                if (m.ok()) rec.tables[m->table.version] = m->table;
                              });
  // The learner's replay store: one transition per step, and each step's totals.
  json online = json::object();  // the learner's last consumer position
  {
    RTB_ASSIGN_OR_RETURN(auto store, learn::OpenRocksDbReplayStore(s.out + "/learner/replay"));
    if (auto m = store->GetMeta("online"); m.ok()) online = json::parse(*m);
    std::map<std::pair<int64_t, int>, int> seen;
    // The offline pre-training transitions imported first are not the loop's.
    if (auto im = store->GetMeta("imported"); im.ok()) rec.imported = std::stoull(*im);
    for (uint64_t q = std::max(store->FirstSeq(), rec.imported); q < store->NextSeq(); ++q) {
      RTB_ASSIGN_OR_RETURN(const learn::Transition t, store->Get(q));
      ++seen[{static_cast<int64_t>(t.episode), static_cast<int>(t.step)}];
      ++rec.transitions;
    }
    for (int d = 0; d < s.cfg.days; ++d) {
      for (int st = 0; st < s.T; ++st) {
        const auto it = seen.find({d, st});
        const std::string name = std::to_string(d) + ":" + std::to_string(st);
        if (it == seen.end()) rec.missing.push_back(name);
        if (it != seen.end() && it->second > 1) rec.duplicated.push_back(name);
        auto m = store->GetMeta("step:" + name);
        if (!m.ok()) continue;
        const json j = json::parse(*m, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object()) continue;
        LearnerStep& ls = rec.learner_steps[{d, st}];
        ls.record = *m;
        ls.total_cost_micros = j.value("total_cost_micros", int64_t{0});
        ls.total_revenue_micros = j.value("total_revenue_micros", int64_t{0});
        ls.cost_micros = j.value("cost_micros", std::vector<int64_t>());
      }
    }
  }
  // Where the learner stopped reading vs. what the events topic holds, per partition.
  kafka::Producer::Options qo;
  static_cast<kafka::ClientOptions&>(qo) = svc.client;
  auto q = kafka::Producer::Create(std::move(qo));
  for (int p = 0; q.ok() && p < s.topics.events_partitions; ++p) {
    const auto wm = (*q)->Watermarks(s.topics.events, p, 5000);
    const int64_t lo = wm.ok() ? wm->first : 0, hi = wm.ok() ? wm->second : 0;
    rec.topic_messages += hi - lo;
    const std::string k = std::to_string(p);
    PartitionCheck& pc = rec.partitions.emplace_back();
    pc.partition = p;
    pc.high_watermark = hi;
    if (online.contains("offsets") && online["offsets"].contains(k)) {
      pc.learner_next_offset = online["offsets"][k].get<int64_t>();
    }
  }
  rec.installed_ms = PolicyInstalls(s);
  return rec;
}

// ---- 7. Report --------------------------------------------------------------------------

// Each arm's part of every advertiser's budget, summed per agent (as the bidder splits them).
using ArmBudgets = std::array<std::vector<Micros>, kArms>;

ArmBudgets ArmBudgetsOf(const Setup& s) {
  const sim::Scenario& sc = *s.sc;
  ArmBudgets out;
  for (const Arm arm : {Arm::kLearned, Arm::kManual}) {
    auto& b = out[static_cast<size_t>(arm)];
    b.assign(static_cast<size_t>(s.N), Micros(0));
    for (size_t k = 0; k < sc.test_budgets.size() && k < sc.market.agent_of.size(); ++k) {
      b[sc.market.agent_of[k]] += ArmBudget(sc.test_budgets[k], arm, s.cfg.learned_share);
    }
  }
  return out;
}

OutcomeRows RowsOf(const RunResult& run) { return {run.total, run.rows}; }

// The tables the bidder served on day d, one per step (manual where none was read back).
std::vector<ActionTable> ServedTables(const Setup& s, const LoopRecord& rec, int d) {
  std::vector<ActionTable> served;
  for (int st = 0; st < s.T; ++st) {
    auto it = rec.tables.find(1 + static_cast<uint64_t>(d) * s.T + st);
    served.push_back(it == rec.tables.end() ? ActionTable(s.N, s.L) : it->second);
  }
  return served;
}

// One arm of the A/B test on a day, in the simulator: its users, its part of the budgets.
std::unique_ptr<sim::Scenario> ArmScenario(const Setup& s, const Services& svc, const sim::Day& day,
                                           Arm arm) {
  auto a = std::make_unique<sim::Scenario>();
  a->cfg = s.sc->cfg;
  a->market = s.sc->market;
  a->test = day;  // the only day restricted (no training day)
  a->test_budgets = s.sc->test_budgets;
  sim::RestrictToArm(*a, svc.xc.learned_share, svc.xc.ab_salt, arm);
  return a;
}

// Several bidders: both arms in the simulator, their budgets served by one bidder, and by the
// demo's bidders under an ideal coordinator (AuctionEngine::SplitBudgets: equal parts, or
// whole bids first, knowing each bid before it is made). What the live leases can reach on
// these budgets, beside what they did (docs/budget-leases.md, section 8).
SplitInSimulator SplitOf(const Setup& s, const Services& svc, const sim::Scenario* arms[kArms],
                         const std::vector<ActionTable>& served) {
  using Rule = sim::AuctionEngine::SplitRule;
  SplitInSimulator split;
  split.bidders = s.cfg.bidders;
  const std::vector<ActionTable> manual_tables(1, ActionTable(s.N, s.L));
  for (const auto& [name, bidders, rule] :
       {std::tuple{"one_bidder", 1, Rule::kEven}, std::tuple{"even", s.cfg.bidders, Rule::kEven},
        std::tuple{"whole_mean", s.cfg.bidders, Rule::kWholeMean},
        std::tuple{"whole", s.cfg.bidders, Rule::kWhole}}) {
    SplitRun r;
    for (const Arm arm : {Arm::kLearned, Arm::kManual}) {
      const sim::Scenario& a = *arms[static_cast<int>(arm)];
      const RunResult run =
          sim::EvaluateTables(a, a.test, a.test_budgets,
                              arm == Arm::kLearned ? served : manual_tables, 0, bidders, rule);
      SplitRun::ArmRun& out = r.arms[static_cast<int>(arm)];
      for (const auto& o : run.rows) out.cost_over_budget_by_agent.push_back(CostOverBudget(o));
      out.revenue = run.total.revenue.units();
    }
    const double sh = svc.xc.learned_share;
    const double learned = r.arms[0].revenue, manual = r.arms[1].revenue;
    if (manual > 0) r.revenue_ratio = (learned / sh) / (manual / (1 - sh));
    split.runs.emplace_back(name, std::move(r));
  }
  return split;
}

// One step of a live day: the table served, its lag, and the learner's record of the step
// against the exchange's accounting.
DemoStep StepOf(const Setup& s, const LoopRecord& rec, int d, const exchange::StepAccount& sa) {
  DemoStep st;
  st.step = sa.marker.step;
  st.policy_version = 1 + static_cast<uint64_t>(d) * s.T + sa.marker.step;
  const auto it = rec.tables.find(st.policy_version);
  for (int i = 0; i < s.N; ++i) {
    auto& row = st.table.emplace_back();
    for (int j = 0; j < s.L; ++j) {
      row.push_back(it == rec.tables.end() ? 0.0 : it->second.at(i, j));
    }
  }
  if (sa.policy_lag_ms >= 0) st.policy_lag_ms = sa.policy_lag_ms;
  // Several bidders read the policy topic each on its own: when the first and the last of
  // them installed this step's table.
  if (const auto in = rec.installed_ms.find(st.policy_version);
      s.cfg.bidders > 1 && in != rec.installed_ms.end()) {
    const auto [lo, hi] = std::minmax_element(in->second.begin(), in->second.end());
    st.policy_switch = PolicySwitch{in->second.size(), *hi - *lo};
  }
  st.exchange = sa.marker;
  st.lost_requests = sa.lost_requests;
  st.rerouted_requests = sa.rerouted_requests;
  st.failed_notices = sa.failed_notices;
  st.moved_notices = sa.moved_notices;
  const auto lstep = rec.learner_steps.find({d, sa.marker.step});
  if (lstep != rec.learner_steps.end()) {
    st.learner = lstep->second;
    // The learner learns from the learned arm: its totals are that arm's.
    Outcome learned_arm;
    for (int i = 0; i < s.N; ++i) learned_arm += sa.by_arm_agent[static_cast<size_t>(i)];
    st.learner_matches_exchange = lstep->second.total_cost_micros == learned_arm.cost.value() &&
                                  lstep->second.total_revenue_micros == learned_arm.revenue.value();
  }
  return st;
}

// One live day against manual bids: the arms as the exchange accounted them, the simulator's
// counterfactuals on the same day, and the steps.
DemoDay DayOf(const Setup& s, const Services& svc, const Played& p, const LoopRecord& rec, int d,
              const ArmBudgets& arm_budget) {
  const sim::Scenario& sc = *s.sc;
  const size_t di = static_cast<size_t>(d);
  const exchange::DayAccount& acct = p.accounts[di];
  const RunResult& manual = p.manuals[di];
  DemoDay day;
  day.day = d;
  // The two live arms, as the exchange accounted them (each with its part of the budgets).
  for (int a = 0; a < kArms; ++a) {
    for (int i = 0; i < s.N; ++i) {
      Outcome o = acct.by_arm_agent[static_cast<size_t>(a * s.N + i)];
      o.budget = arm_budget[static_cast<size_t>(a)][static_cast<size_t>(i)];
      day.arms[a].total += o;
      day.arms[a].by_agent.push_back(o);
    }
  }
  // The simulator's engine playing the tables the bidder served, on the same day: how far the
  // live loop (HTTP, budgets guarded by reservations, Kafka) is from the offline model.
  const std::vector<ActionTable> served = ServedTables(s, rec, d);
  day.learned_in_simulator = RowsOf(sim::EvaluateTables(sc, p.days[di], sc.test_budgets, served));
  // The same tables on the learned arm alone (its users, its part of the budgets): what the
  // live learned arm would get if HTTP, reservations and Kafka cost it nothing.
  if (svc.xc.learned_share < 1) {
    const auto learned = ArmScenario(s, svc, p.days[di], Arm::kLearned);
    day.learned_arm_in_simulator =
        RowsOf(sim::EvaluateTables(*learned, learned->test, learned->test_budgets, served));
    if (s.cfg.bidders > 1) {
      const auto manual_arm = ArmScenario(s, svc, p.days[di], Arm::kManual);
      const sim::Scenario* arms[kArms] = {learned.get(), manual_arm.get()};
      day.split_in_simulator = SplitOf(s, svc, arms, served);
    }
  }
  // The simulator's counterfactual: every user of the day bid manual with the whole budgets.
  day.manual_in_simulator = RowsOf(manual);
  // Learned against manual per unit of each arm's share of users and budgets.
  const double share = s.cfg.learned_share;
  const double learned_rev = day.arms[0].total.revenue.units();
  const double manual_rev = day.arms[1].total.revenue.units();
  if (share < 1 && manual_rev > 0) {
    day.revenue_ratio = (learned_rev / share) / (manual_rev / (1 - share));
  }
  if (manual.total.revenue.value() > 0) {
    day.revenue_ratio_to_simulated_manual = learned_rev / share / manual.total.revenue.units();
  }
  day.seconds = acct.seconds;
  for (const auto& sa : acct.steps) day.steps.push_back(StepOf(s, rec, d, sa));
  return day;
}

// Which Kafka the run used: the report's kafka section.
KafkaUsed KafkaOf(const Setup& s) {
  KafkaUsed k;
  if (s.brokers.empty()) return k;
  const RunTopics& t = s.topics;
  k.cluster = s.brokers;
  k.run = t.run;
  k.topics = {{"events", t.events}, {"policy", t.policy}, {"clock", t.clock}};
  if (s.cfg.bidders > 1) {
    k.topics.insert(k.topics.end(), {{"lease_requests", t.lease_requests},
                                     {"lease_grants", t.lease_grants},
                                     {"notices", t.notices},
                                     {"coordinators", t.coordinators()}});
  }
  for (const auto& [name, value] : s.kafka_properties) k.properties.push_back(name);
  return k;
}

// How the report was made, one paragraph each.
std::vector<std::string> About(const Setup& s, const Services& svc, const std::string& init_ckpt) {
  const std::string kafka =
      s.brokers.empty()
          ? "Kafka: the embedded mock cluster (librdkafka's, in this process), new for the run."
          : "Kafka: the cluster at " + s.brokers + ", on topics of the run's own (" +
                s.topics.events + " and the others ending in ." + s.topics.run +
                "), made for it and deleted after it, so that no earlier run's events, tables, "
                "markers or leases reach it; its learner ran as group " +
                s.topics.learner_group() + ".";
  std::string rerun = "Rerun: rtb demo --config " + doc::ShownPath(s.args.config) + " --out " +
                      doc::ShownPath(s.cfg.out);
  if (!s.brokers.empty()) rerun += " --brokers " + s.brokers;
  if (!s.args.auction.empty()) rerun += " --auction " + s.args.auction;
  if (s.args.cpa_share >= 0) {
    char share[32];
    std::snprintf(share, sizeof share, "%g", s.args.cpa_share);
    rerun += std::string(" --cpa-share ") + share;
  }
  if (!s.args.kafka_properties.empty()) {
    rerun += " --kafka-properties " + doc::ShownPath(s.args.kafka_properties);
  }
  return {
      "The live loop: " + std::to_string(s.cfg.days) + " simulated days of the world in " +
          doc::ShownPath(s.sim_path) +
          " were played by `rtb exchange` against a real bidder (`rtb serve`, OpenRTB over HTTP) "
          "whose action tables came from the online learner (`rtb learn`) over Kafka; revenue, "
          "cost and clicks are the exchange's accounting (outcomes: " +
          svc.xc.outcomes + "; auction: " + sim::DescribeAuction(s.sc->cfg.auction) + ").",
      "A/B test: the bidder hashes each user to the learned arm (" +
          std::to_string(static_cast<int>(std::lround(100 * s.cfg.learned_share))) +
          "% of users, bid with the learner's tables) or the manual arm (a = 0), and splits every "
          "advertiser's budget between the arms by the same share. The learner learns from the "
          "learned arm's events alone. Revenue ratios are per unit of each arm's share.",
      "manual_in_simulator: the same days' requests, every user, whole budgets, run through the "
      "simulator's auction (`rtb simulate`'s engine) with manual bids: the offline "
      "counterfactual. learned_arm_in_simulator: the tables the bidder served, played by the "
      "same engine on the learned arm's users with its part of the budgets: what the live "
      "learned arm would get if HTTP, reservations and Kafka cost it nothing.",
      std::string("The learner started from ") +
          (init_ckpt.empty() ? "fresh networks"
                             : "DCMAB pre-trained offline (" +
                                   fs::path(init_ckpt).lexically_relative(s.out).string() + ")") +
          " and kept learning online: one transition per step, " +
          "updates after each step, a new table published before the next step.",
      "Budgets: each advertiser's daily budget is 1/3 of its cost under manual bids with no "
      "budget (the paper's setting); COST = spend / budget.",
      kafka,
      rerun};
}

DemoReport BuildReport(const Setup& s, const Services& svc, const Played& p, const LoopRecord& rec,
                       const std::string& init_ckpt) {
  DemoReport r;
  const ArmBudgets arm_budget = ArmBudgetsOf(s);
  r.replay_imported_offline_transitions = rec.imported;
  for (int d = 0; d < s.cfg.days; ++d) r.days.push_back(DayOf(s, svc, p, rec, d, arm_budget));
  r.learned_share = s.cfg.learned_share;
  SummariseDays(&r);  // the A/B test's totals over the days (the exchange's accounting), lags
  if (s.cfg.bidders > 1) {
    // Per table: the spread between the first and the last bidder to install it.
    std::vector<double> spreads;
    for (const auto& [v, ms] : rec.installed_ms) {
      if (v == 0 || ms.size() < 2) continue;
      const auto [lo, hi] = std::minmax_element(ms.begin(), ms.end());
      spreads.push_back(static_cast<double>(*hi - *lo));
    }
    r.policy_switch_spread_ms = QuantilesOf(std::move(spreads));
  }
  LoopCheck& lc = r.loop_check;
  lc.transitions = rec.transitions;
  lc.expected_transitions = static_cast<int64_t>(s.cfg.days) * s.T;
  lc.missing = rec.missing;
  lc.duplicated = rec.duplicated;
  lc.events_topic_messages = rec.topic_messages;
  lc.events_partitions = rec.partitions;
  r.chaos = p.chaos_log;
  r.processes.learner_exit = svc.learner_exit;
  r.processes.bidder_exit = svc.bidder_exit;
  if (svc.budget != nullptr) r.processes.budget_exit = svc.budget_exit;
  r.bidders = s.cfg.bidders;
  r.requests_per_bidder = svc.exchange->RequestsPerBidder();
  r.about = About(s, svc, init_ckpt);
  r.kafka = KafkaOf(s);
  if (!init_ckpt.empty()) r.pretrain_report = "pretrain/report.html";
  return r;
}

// The events topic as a JSON-lines dump: what `rtb replay --format events` reads offline. It
// was read as it was written (the embedded cluster keeps about 5 MB per partition, less than a
// long run); this reads on to the topic's end.
EventsDump DumpEvents(const Setup& s, Services& svc) {
  const Status st = svc.events_tail->Finish(30000);
  svc.events_dump.flush();
  const bool written = static_cast<bool>(svc.events_dump);
  svc.events_dump.close();
  EventsDump e;
  e.messages = svc.events_tail->messages();
  e.read_to_end = st.ok();
  e.messages_no_longer_retained = svc.events_tail->missed();
  e.complete = st.ok() && written && e.messages_no_longer_retained == 0;
  e.replay = "rtb replay --format events --log " + doc::ShownPath(s.cfg.out) +
             "/events.jsonl --strategy logged,manual";
  return e;
}

// The A/B report's comparison of the arms, as that report wrote it (its "comparison").
AbComparison ComparisonOf(const std::string& ab_report_json) {
  const json j = json::parse(ab_report_json)["comparison"];
  auto num = [](const json& v) { return v.is_number() ? v.get<double>() : kNaN; };
  auto ci = [&num](const json& c) {
    RatioCi r;
    r.ratio = num(c["ratio"]);
    r.lo = num(c["ci95"][0]);
    r.hi = num(c["ci95"][1]);
    r.resamples = c["resamples"].get<int>();
    r.buckets = c["buckets"].get<int>();
    return r;
  };
  return {ci(j["revenue_ratio"]), ci(j["roi_ratio"]), j["per_share"].get<std::string>()};
}

// Budgets, from the bidders' events: no (day, arm, advertiser) over its part of the budget,
// each agent's delivery (the lowest COST of any day, arm and agent) and each arm's (the lowest
// COST of any day and arm, over its agents).
EventsBudgetCheck BudgetsFromEvents(const AbTally& tally, double learned_share) {
  double max_over = 0, min_cost = 1e300, min_arm_cost = 1e300;
  for (const int64_t d : tally.Days()) {
    for (const Arm arm : {Arm::kLearned, Arm::kManual}) {
      if (arm == Arm::kManual && learned_share >= 1) continue;
      for (size_t k = 0; k < tally.advertisers().size(); ++k) {
        const ArmTotals t = tally.Of(d, arm, k);
        if (t.budget.value() > 0) {
          max_over =
              std::max(max_over, 100.0 * static_cast<double>(t.spend.value() - t.budget.value()) /
                                     static_cast<double>(t.budget.value()));
        }
      }
      ArmTotals whole;
      for (int i = 0; i < tally.agents(); ++i) {
        const ArmTotals g = tally.OfAgent(d, arm, i);
        if (g.budget.value() > 0) min_cost = std::min(min_cost, 100.0 * g.Cost());
        whole += g;
      }
      if (whole.budget.value() > 0) min_arm_cost = std::min(min_arm_cost, 100.0 * whole.Cost());
    }
  }
  // A running minimum (started at 1e300), or none if nothing was seen.
  auto seen = [](double v) { return v < 1e299 ? v : kNaN; };
  return {max_over, seen(min_cost), seen(min_arm_cost)};
}

// Whether two figures agree within 0.1% (of at least 1: sums near zero compare absolutely).
bool WithinTenthPct(double a, double b) {
  return std::abs(a - b) <= 0.001 * std::max(1.0, std::abs(b));
}

// Each advertiser with a target, per arm: its score as `rtb report` computed it from the events
// against the same score computed from the exchange's own accounting of its days, and its spend,
// conversions and value over the days.
GoalCheck GoalsAgainstExchange(const AbTally& tally,
                               const std::vector<exchange::DayAccount>& accounts) {
  GoalCheck g;
  const auto& advertisers = tally.advertisers();
  for (size_t k = 0; k < advertisers.size(); ++k) {
    const AbAdvertiser& a = advertisers[k];
    if (!a.goal.HasTarget()) continue;
    ++g.targets;
    for (const Arm arm : {Arm::kLearned, Arm::kManual}) {
      const AbTally::GoalTotals ev = tally.GoalOf(arm, k);
      Outcome total;
      double score = 0;
      for (const exchange::DayAccount& day : accounts) {
        const auto it =
            day.by_arm_advertiser.find({static_cast<int>(arm), static_cast<uint32_t>(a.id)});
        if (it == day.by_arm_advertiser.end()) continue;
        const Outcome& o = it->second;
        score += ScoreGoal(a.goal, o.conversions, o.cost.units(), o.revenue.units()).score;
        total += o;
      }
      const GoalScore overall =
          ScoreGoal(a.goal, total.conversions, total.cost.units(), total.revenue.units());
      if (a.goal.kind == GoalKind::kConversions) g.score[static_cast<int>(arm)] += ev.score;
      if (!ev.overall.met) ++g.missed[static_cast<int>(arm)];
      ++g.compared;
      const bool realised_equal = std::isnan(overall.realised)
                                      ? std::isnan(ev.overall.realised)
                                      : WithinTenthPct(ev.overall.realised, overall.realised);
      const bool equal = WithinTenthPct(ev.score, score) &&
                         WithinTenthPct(ev.spend, total.cost.units()) &&
                         WithinTenthPct(ev.conversions, total.conversions) &&
                         WithinTenthPct(ev.value, total.revenue.units()) && realised_equal &&
                         ev.overall.met == overall.met;
      if (!equal && g.matches_exchange_within_0_1_pct) {
        g.matches_exchange_within_0_1_pct = false;
        g.first_difference =
            a.name + " (" + ArmName(arm) + "): events score " + std::to_string(ev.score) +
            ", realised " + std::to_string(ev.overall.realised) + "; exchange score " +
            std::to_string(score) + ", realised " + std::to_string(overall.realised);
      }
    }
  }
  return g;
}

// `rtb report` on the events dump: the A/B report from the bidder's own events, written to
// ab/, and checked against the exchange's accounting of the arms (spend and revenue) and of
// each advertiser with a goal.
Result<AbFromEvents> AbReportFromEvents(const Setup& s, const DemoReport& report,
                                        const Played& played) {
  RTB_ASSIGN_OR_RETURN(const bidder::BidderConfig bcfg,
                       bidder::LoadBidderConfig(s.out + "/bidder/bidder.yaml"));
  // Buckets of a sixth of a step: enough pairs of the arms' totals for the intervals.
  const int64_t bucket_ms = std::max<int64_t>(60'000, s.sc->cfg.day.step_minutes * 60'000 / 6);
  AbTally tally(bidder::AbMarketOf(bcfg), bcfg.ab.learned_share, bucket_ms);
  std::ifstream in(s.out + "/events.jsonl", std::ios::binary);
  int64_t malformed = 0;
  std::string first;
  RTB_RETURN_IF_ERROR(AddEventStream(in, "events.jsonl", true, &tally, &malformed, &first));
  AbReportInfo info;
  info.source = doc::ShownPath(s.cfg.out) + "/events.jsonl";
  info.malformed = malformed;
  if (s.cfg.exchange.outcomes == "expected") {
    info.notes.push_back(
        "The simulated exchange ran with expected outcomes: each impression sends one click "
        "notice counting its expected clicks (pCTR) and one conversion notice counting its "
        "expected conversions (pCTR x pCVR) with their value, so clicks and conversions are "
        "expected numbers, as the exchange's accounting has them.");
  }
  info.rerun = "rtb report --events " + doc::ShownPath(s.cfg.out) +
               "/events.jsonl --bidder-config " + doc::ShownPath(s.cfg.out) +
               "/bidder/bidder.yaml --bucket-minutes " + std::to_string(bucket_ms / 60'000) +
               " --out " + doc::ShownPath(s.cfg.out) + "/ab";
  RTB_RETURN_IF_ERROR(WriteAbReportFiles(tally, info, s.out + "/ab"));
  AbFromEvents out;
  out.rerun = info.rerun;
  out.comparison = ComparisonOf(AbReportJson(tally, info));
  out.events_counted = tally.events();
  out.malformed = malformed;
  bool match = true;
  for (const Arm arm : {Arm::kLearned, Arm::kManual}) {
    const ArmTotals t = tally.OfArm(arm);
    const Outcome& ex = report.arms[static_cast<int>(arm)];
    match = match && WithinTenthPct(t.spend.units(), ex.cost.units()) &&
            WithinTenthPct(t.revenue.units(), ex.revenue.units()) &&
            WithinTenthPct(t.clicks, ex.clicks) && WithinTenthPct(t.conversions, ex.conversions);
    out.arms[static_cast<int>(arm)] = t;
  }
  out.matches_exchange_within_0_1_pct = match;
  out.budget_check = BudgetsFromEvents(tally, bcfg.ab.learned_share);
  out.goals = GoalsAgainstExchange(tally, played.accounts);
  return out;
}

// Leases the coordinator reclaimed from silent bidders (its last log line says how many).
int64_t LeaseReclaims(const Setup& s) {
  std::ifstream in(s.out + "/logs/budget.log");
  std::string line;
  int64_t n = 0;
  const std::string tail = " leases reclaimed";
  while (std::getline(in, line)) {
    const size_t p = line.rfind(tail);
    if (line.find("stopped;") == std::string::npos || p == std::string::npos) continue;
    const size_t q = line.rfind(' ', p - 1);
    n = std::strtoll(line.c_str() + (q == std::string::npos ? 0 : q + 1), nullptr, 10);
  }
  return n;
}

Status Run(const DemoArgs& args) {
  RTB_ASSIGN_OR_RETURN(const auto setup, Prepare(args));
  const Setup& s = *setup;
  // On a real cluster the run's own topics are made first (a wrong address or credentials fail
  // in seconds, not after the pre-training), and deleted last, however the run ends.
  std::unique_ptr<RunTopicsOnCluster> run_topics;
  if (!s.brokers.empty()) {
    RTB_ASSIGN_OR_RETURN(run_topics,
                         CreateRunTopics({.bootstrap = s.brokers, .properties = s.kafka_properties},
                                         s.topics, s.cfg.bidders > 1, kCreateTopicsMs));
  }
  RTB_ASSIGN_OR_RETURN(const std::string init_ckpt, Pretrain(s));
  RTB_ASSIGN_OR_RETURN(const auto svc, StartServices(s, init_ckpt));
  RTB_ASSIGN_OR_RETURN(const Played played, PlayDays(s, *svc));
  StopServices(*svc);
  RTB_ASSIGN_OR_RETURN(const LoopRecord rec, ReadLoopRecord(s, *svc));
  DemoReport report = BuildReport(s, *svc, played, rec, init_ckpt);
  report.events_dump = DumpEvents(s, *svc);
  auto ab = AbReportFromEvents(s, report, played);
  if (ab.ok()) {
    report.ab_from_events = *std::move(ab);
    report.budget_check.bidders = s.cfg.bidders;
    report.budget_check.lease_reclaims = LeaseReclaims(s);
    report.budget_check.in_simulator = SummariseSplits(report.days);
  } else {
    report.ab_from_events.error = ab.status().message();
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - s.start).count();
  std::string md;
  RTB_RETURN_IF_ERROR(WriteDemoReportFiles(report, s.cfg.out, &md));
  std::printf("%s", md.c_str());
  std::printf("\nwrote %s/report.{json,md,html} in %.0f s\n", s.cfg.out.c_str(), report.seconds);
  return Status::Ok();
}

}  // namespace

int RunDemo(const DemoArgs& args) {
  const Status st = Run(args);
  if (st.ok()) return 0;
  std::fprintf(stderr, "rtb demo: error: %s\n", st.message().c_str());
  return 1;
}

}  // namespace rtb::demo
