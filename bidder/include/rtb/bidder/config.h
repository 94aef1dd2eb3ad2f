// The bidder's configuration (configs/bidder/default.yaml). Every field is documented here,
// where it is declared; unknown keys are errors naming file, line and key.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rtb/budget/lease.h"
#include "rtb/core/ab_report.h"
#include "rtb/core/goal.h"
#include "rtb/core/mac.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::bidder {

struct Targeting {
  std::vector<std::string> categories;  // IAB site/app categories to bid on; empty = any
  std::vector<int> device_types;        // OpenRTB device.devicetype values; empty = any
  std::vector<std::string> countries;   // device.geo.country (alpha-3); empty = any
  bool site = true;                     // bid on site inventory
  bool app = true;                      // bid on app inventory
};

struct Creative {
  std::string crid;                  // creative id (crid / adid in the bid)
  std::vector<std::string> adomain;  // advertiser domains (checked against badv)
  int w = 0, h = 0;                  // banner size; 0 x 0 = any size (the bid names the slot's)
  std::string markup;  // adm, returned in the bid: required (a config without is refused)
  // The ad's own categories (the bid's cat), in taxonomy `cattax` (1 = IAB Content Category
  // Taxonomy 1.0, the OpenRTB default): a request whose bcat (in the same taxonomy) names one of
  // them, or its tier-1 parent ("IAB3" blocks "IAB3-1"), is not bid with this creative.
  std::vector<std::string> cat;
  int cattax = 1;
  int mtype = 1;       // the markup's type (the bid's mtype): 1 banner (the only one served now)
  std::string bundle;  // the advertised app's store id, for app-install ads (checked against bapp)
};

// A private marketplace deal an advertiser buys through (config: deals[]): bid on an impression
// offering it (imp.pmp.deals[] with this id, the advertiser's seat in its wseat or no wseat)
// when the price reaches the deal's floor.
struct DealTerms {
  std::string id;  // the deal id, as the exchange names it
};

struct Advertiser {
  uint32_t id = 0;      // advertiser id
  std::string name;     // for reports
  Micros bid;           // manual CPC bid (config: bid, currency units)
  Micros daily_budget;  // (config: daily_budget, currency units)
  int agent = 0;        // DCMAB agent (advertiser cluster), 0-based
  // What one conversion is worth to the advertiser (config: conversion_value, currency units;
  // 0 = unknown). A conversion notice without a value= books this value: the revenue of the
  // reports and of the learner's rewards.
  Micros conversion_value;
  // The most one conversion may be worth (config: max_conversion_value, currency units): a
  // conversion notice's value= above it is refused, and the learner and the reports refuse a
  // conversion event above it. Default (0 in the file): ten times conversion_value, or 1,000
  // currency units when that is 0.
  Micros max_conversion_value;
  // What the advertiser asks for (config: goal: revenue | conversions | value, with target_cpa
  // in currency units for conversions, target_roas for value; core/goal.h). Reports score each
  // day against it (AuctionNet's conversions x min(1, (target / realised CPA)^2)). Default:
  // revenue, no target. A target the goal does not use, or a goal without one, is refused.
  Goal goal;
  Targeting targeting;
  std::vector<Creative> creatives;  // at least one
  // The seat its bids are made in (config: seat; default, also when empty: "adv-<id>"): the
  // response's seatbid.seat and what a deal's wseat must name.
  std::string seat;
  std::vector<DealTerms> deals;  // the deals it holds; none = open auctions only
};

// The value of kafka.brokers that starts the embedded cluster.
inline constexpr const char* kEmbeddedBrokers = "embedded";
// What kafka.brokers must be, in the errors that refuse an empty one.
inline constexpr const char* kBrokersChoices =
    "must be set: a Kafka cluster's bootstrap servers (host:port,...), or embedded (an in-memory "
    "cluster inside this process, which loses every event when the process ends)";

struct KafkaConfig {
  // Where the events go; required (an empty or missing key is an error), one of:
  // - "host:port,...": a real cluster's bootstrap.servers;
  // - "embedded" (kEmbeddedBrokers): librdkafka's mock cluster inside this process (the real
  //   protocol over TCP on 127.0.0.1, topics created at start), for trying the bidder and for
  //   tests. It keeps every event in memory: they are all lost when the process ends.
  std::string brokers;
  int mock_brokers = 3;  // brokers of the embedded mock cluster
  // Every bid, no-bid and notice; keyed by advertiser, no-bids by auction (Event::Key).
  std::string events_topic = "rtb.events";
  std::string policy_topic = "rtb.policy";  // action tables published by the learner
  int partitions = 4;                       // partitions created on the mock cluster
  int queue_max_messages = 100000;          // librdkafka local queue; beyond it events spill
  int linger_ms = 5;                        // batching delay
  std::string compression = "lz4";          // batch compression: none | gzip | snappy | lz4 | zstd
  std::string spill_path = "out/bidder/spill.jsonl";  // local spill file, replayed later
  int flush_timeout_ms = 5000;  // on shutdown: wait this long, then spill the rest
  // At start, with a cluster's brokers (not embedded): the longest wait for the brokers to answer,
  // take the credentials and hold both topics; any of these failing stops the start with one line
  // naming it (kafka::CheckTopics). 0 = start without checking (events spill until Kafka answers).
  int start_check_ms = 10000;
  // How often the event producer's librdkafka statistics (its queue; per broker round trips,
  // errors, retries, timeouts, state) are refreshed on /metrics (statistics.interval.ms):
  // each costs one JSON document of a few KB, made by librdkafka and parsed on the delivery
  // thread, never on the bid path. 0 = off (no rtb_kafka_producer_* and rtb_kafka_broker_*).
  int stats_interval_ms = 5000;
  // Nice value (0..19) of librdkafka's threads (producer, policy consumer, embedded brokers)
  // and of the bidder's own Kafka threads (delivery reports, policy feed), which also run with
  // SCHED_BATCH: their batching and compression then never preempt a
  // request thread, which keeps bid p99 latency flat (bench/run_load_bench.sh). 0 = leave them
  // at the request threads' priority and policy.
  int thread_nice = 10;
  // librdkafka properties for every Kafka client of the market's processes (rtb serve, rtb
  // budget, rtb learn, rtb report, rtb exchange --market), the embedded cluster's too: a real
  // cluster's security.protocol, sasl.*, ssl.*, client.id, batch.size, fetch.wait.max.ms...,
  // applied after each client's own tuning. The ones the engine's guarantees or the keys above
  // own are refused (kafka::EngineOwnedProperty).
  std::vector<std::pair<std::string, std::string>> properties;
};

// The live A/B test (core/ab.h): each user is hashed to the learned arm (bids the action
// table) or the manual arm (bids a = 0), and each advertiser's daily budget is split between
// the arms by the same share, so neither arm can spend the other's budget.
struct AbConfig {
  // 0..1: the learned arm's share of users and of every advertiser's budget. 1 = everyone
  // learned (no test), 0 = everyone manual.
  double learned_share = 1.0;
  // Hashed with each user id. Every bidder of one test uses the same salt; a new salt deals the
  // users into the arms again.
  std::string salt = "rtb-ab-1";
};

// The market's step clock and action range, read by the online learner (`rtb learn --market
// <this file>`): with the advertisers below (agents, budgets), the A/B share and the cluster map
// (clusters_path: L and the clusters' history x_j) they are the market it learns in. The
// bidder itself only checks them.
// Several bidders sharing every budget through `rtb budget` (docs/budget-leases.md): each
// budget slot (advertiser, arm, day) may spend only its lease, asked for as it spends.
struct LeaseClientConfig {
  bool enabled = false;  // off: this bidder holds every whole budget (one bidder per market)
  // This bidder's name for the coordinator, the same across its restarts and different for
  // every bidder, without '~'; "" = this machine's host name and the listen port (set it on
  // machines cloned with one host name). The coordinator serves one
  // live process per name (a second one gets no lease and says so on /metrics); a restart that
  // keeps state_path takes its name back at once.
  std::string name;
  std::string requests_topic = "rtb.lease.requests";  // requests, returns, reports (produced)
  std::string grants_topic = "rtb.lease.grants";      // holdings (read, compacted)
  // Notices that reached a bidder other than the one that made the bid (a load balancer's
  // choice or retry), keyed by the owner's name: each bidder reads the notices keyed by its own
  // name and books them, so that a notice is booked once across the market (bidder/README.md).
  std::string notices_topic = "rtb.notices";
  int horizon_ms = 60'000;   // a lease covers this long at the slot's recent spend rate
  double min_lease = 0.10;   // the least asked for at once, currency units (<= budget / 50)
  int check_every_ms = 200;  // how often the slots' leases are checked
  // Spend, reservations and each slot's cap reported (the heartbeat): a slot commits at most
  // about three intervals of spend past its last acknowledged report.
  int report_every_ms = 2000;
  // Every this many reports, a report carries every slot of the day; the others carry only the
  // slots whose spend, reservations or cap changed since the last report Kafka took (a slot
  // left out keeps the cap it last reported, on both sides). 1: every report carries every
  // slot. The full ones let the coordinator top up a slot whose share grew while it was idle.
  int full_report_every = 10;
  // Kafka has not taken a report for this long: stop spending new money (the coordinator
  // reclaims a silent bidder's lease after its heartbeat timeout, which must be longer). The
  // first report Kafka takes after such a silence resyncs the bidder: new bids wait, as after a
  // restart, for holdings that have read it (the coordinator may have reclaimed meanwhile).
  int ttl_ms = 45000;
  // A bid whose largest charge the lease cannot cover: lowered to what the lease has room for
  // (as a bid is at a budget's end), or (false) not made, so that bids stay those one bidder
  // would make. Lowering delivers budgets of only a few bids far better; in the demo's market it
  // also makes the manual arm's bids cheaper, so A/B ratios differ from one bidder's
  // (docs/budget-leases.md, section 8).
  bool lower_bids = true;
  // How leases are sized (read by the bidders and by `rtb budget` from this file): "share", the
  // coordinator keeps every bidder holding its traffic share of what each budget has left, so a
  // sudden rise in spend (a new action table) finds every bidder holding its part; "rate", each
  // bidder asks for `horizon_ms` of its own recent spend (docs/budget-leases.md, section 1).
  budget::LeaseSizing sizing = budget::LeaseSizing::kShare;
};

struct MarketConfig {
  int steps_per_day = 24;    // T: decision steps per day, one action table each
  int step_seconds = 3600;   // length of a step; steps_per_day x step_seconds <= 1 day
  double alpha_range = 0.9;  // the clip of a x bratio the learner's tables are made for
};

struct BidderConfig {
  // The process log's level: trace | debug | info | warn | error | off (override: --log-level).
  // Warnings on the bid path are rate-limited at every level.
  std::string log_level = "info";
  std::string listen = "127.0.0.1:8080";  // host:port (override: --listen)
  int threads = 2;                        // I/O and request threads
  // Pin I/O thread t to CPU t (mod the CPUs the process may use): two busy I/O threads then
  // never queue behind each other on one core while another core runs something else.
  bool pin_threads = true;
  std::string bid_path = "/openrtb2/bid";                 // where bid requests are POSTed
  std::string notice_base_url = "http://127.0.0.1:8080";  // base of nurl/burl/lurl
  std::string currency = "USD";     // the only currency bid in; other floors: no bid
  size_t max_body_bytes = 1 << 20;  // larger bodies: 413/400
  size_t max_header_bytes = 8192;   // larger headers: 431/400
  size_t max_json_depth = 32;       // deeper JSON: 400 (the depth bomb)
  int read_timeout_ms = 5000;       // per read; slow clients are disconnected
  // SIGTERM (or SIGINT) drains before stopping: /readyz answers 503 at once and requests are
  // answered for drain_ms (a load balancer's health checks take the bidder out meanwhile); then
  // new connections are refused and open ones close after the request in flight, for at most
  // shutdown_timeout_ms; then events are flushed and the state persisted, exit 0. A second
  // signal stops at once. 0: no window (in-flight requests still finish); configs/bidder/
  // default.yaml, the deployment's starting point, says 5000.
  int drain_ms = 0;
  int shutdown_timeout_ms = 5000;
  int max_connections = 1024;  // beyond it new connections are closed
  // Connections open at once from one client address; beyond it that client's new connections
  // are closed (one misbehaving client cannot take every slot). Above max_connections it is
  // max_connections.
  int max_connections_per_client = 512;
  int tmax_network_ms = 10;  // taken off tmax for the network; no bid if no time
  // The auction type (OpenRTB `at`) of a request that does not say, per exchange (a bidder
  // serves one exchange at its bid_path): 2 second price, OpenRTB's default; 1 for an exchange
  // that runs first price without sending `at`. Bid events carry the type each bid was made in.
  int default_at = 2;
  int max_bids_per_imp = 3;  // bids per impression (one per seat), by eCPM
  // The billing window: a bid's reservation is held until its billing or loss notice, or this
  // long after the bid; a win or billing notice later than this is refused ("late") and
  // counted. Raise it for exchanges that bill later; each bid/s held costs memory.
  int reservation_timeout_ms = 60000;
  // The key that signs every notice URL (HMAC-SHA-256, notice_sign.h), at least 16 characters.
  // Empty: a random one, made at the first start and kept in the state store. Bidders that
  // take each other's notices set the same one.
  std::string notice_secret;
  // The market key ring (core/mac.h): "id=secret,id=secret", each secret at least 32
  // characters; the first key seals, every key opens. Every process of a market (bidders,
  // `rtb budget`, `rtb learn`, the exchange's step markers) holds the same ring, and seals and
  // checks the messages they send each other on Kafka (leases, markers, action tables).
  // The environment variable RTB_MARKET_KEYS, when set, replaces it (the secret need not sit
  // in a file). Empty: messages go unsealed and are taken unchecked (a warning at start).
  std::string market_keys;
  // How long a notice's de-duplication key is kept, counted from its bid (hours, at least the
  // billing window). Notices of older bids (a click or conversion days later) are refused
  // ("late", 410) and not logged, so dropping the keys can never book one twice; the keys
  // themselves are deleted by the hour (StateStore::ForgetNoticesBefore).
  int notice_retention_hours = 168;
  // Sizes the reservation tables at start for this many bids per second over
  // reservation_timeout_ms (up to ~80 bytes of memory per bid), so a bidder restarted under
  // full traffic does not grow them, and fault their memory in, on its request threads.
  // 0 = start small and grow as traffic comes. Beyond this rate the tables still grow.
  int expected_bids_per_second = 0;
  int policy_max_age_s = 7200;  // an older action table falls back to manual bids
  // /metrics shows budget, spend and reservations per advertiser (and its lease holdings) for
  // the first this many advertisers of the file, 6 series each; every advertiser is always in
  // the per-agent sums. Bounds the page at any market size (docs/metrics.md: 5,000 advertisers).
  int metrics_advertisers = 100;
  std::string policy_path;     // action table file loaded at start (may be empty)
  std::string clusters_path;   // user id -> consumer cluster file (may be empty)
  int default_cluster = 0;     // cluster of a user not in the map (0 = lowest revenue)
  std::string predictor_path;  // predictor model file (empty: built-in defaults)
  std::string state_path = "out/bidder/state";  // RocksDB: spend and notice dedupe
  bool bench_endpoints = false;                 // POST /bench/nobid answers 204 with no bid logic
  bool simulation_hooks = false;  // trust ext.sim (candidates, pCTR/pCVR, simulated clock) and
                                  // notice `t=` from `rtb exchange`; budgets then follow the
                                  // simulated day. Never on facing a real exchange.
  KafkaConfig kafka;
  AbConfig ab;
  MarketConfig market;
  LeaseClientConfig leases;
  std::vector<Advertiser> advertisers;  // the campaigns (see configs/bidder/default.yaml)
  // Not a key: the secrets written in the file, not given by the environment (LoadBidderConfig
  // warns of them): notice_secret, market_keys, kafka.properties.*password*|*secret*.
  std::vector<std::string> literal_secrets;
};

// The bidder config's environment: every key can be set by RTB_<KEY> (ConfigFile::UseEnvironment:
// RTB_KAFKA_BROKERS, RTB_NOTICE_SECRET_FILE, RTB_KAFKA_PROPERTIES_SASL_PASSWORD_FILE...), in
// every process that reads it (rtb serve, rtb learn --market, rtb budget --market).
inline constexpr const char* kEnvironmentPrefix = "RTB_";

// Reads the file, then the environment (kEnvironmentPrefix), which wins. A secret written in the
// file (notice_secret, market_keys, a kafka property named *password* or *secret*) is a warning,
// once per load, naming the variables to use instead.
Result<BidderConfig> LoadBidderConfig(const std::string& path);

// A notice base URL a client can reach: http(s)://host[:port][/path], its host not an unspecified
// address (0.0.0.0, ::), which is where a server listens, never where a client connects.
Status CheckNoticeBaseUrl(const std::string& url);

// The market's key ring (config `market_keys`, after RTB_MARKET_KEYS); nullptr when none is
// set. LoadBidderConfig has already refused a bad ring.
std::shared_ptr<const MarketKeys> MarketKeysOf(const BidderConfig& cfg);

// The market as the A/B report reads it (core/ab_report.h): each advertiser's id, name, agent
// and daily budget.
std::vector<AbAdvertiser> AbMarketOf(const BidderConfig& cfg);

}  // namespace rtb::bidder
