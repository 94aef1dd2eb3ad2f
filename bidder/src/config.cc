#include "rtb/bidder/config.h"

#include <cstdlib>

#include "rtb/core/config.h"
#include "rtb/core/log.h"
#include "rtb/kafka/kafka.h"

namespace rtb::bidder {

namespace {

// The server's own keys (the top level).
void ReadServer(ConfigMap& root, BidderConfig* cp) {
  BidderConfig& c = *cp;
  root.Get("log_level", &c.log_level);
  root.Check(log::ParseLevel(c.log_level).ok(), "log_level",
             "must be trace, debug, info, warn, error or off");
  root.Get("listen", &c.listen);
  root.Check(c.listen.find(':') != std::string::npos, "listen", "must be host:port");
  root.Get("threads", &c.threads);
  root.Check(c.threads >= 1 && c.threads <= 256, "threads", "must be between 1 and 256");
  root.Get("pin_threads", &c.pin_threads);
  root.Get("bid_path", &c.bid_path);
  root.Check(!c.bid_path.empty() && c.bid_path[0] == '/', "bid_path", "must start with /");
  root.Get("notice_base_url", &c.notice_base_url);
  const Status base_ok = CheckNoticeBaseUrl(c.notice_base_url);
  root.Check(base_ok.ok(), "notice_base_url", base_ok.message());
  root.Get("currency", &c.currency);
  root.Get("max_body_bytes", &c.max_body_bytes);
  root.Check(c.max_body_bytes >= 1024 && c.max_body_bytes <= (256 << 20), "max_body_bytes",
             "must be in [1 KiB, 256 MiB]");
  root.Get("max_header_bytes", &c.max_header_bytes);
  root.Check(c.max_header_bytes >= 512 && c.max_header_bytes <= (1 << 20), "max_header_bytes",
             "must be in [512, 1 MiB]");
  root.Get("max_json_depth", &c.max_json_depth);
  root.Check(c.max_json_depth >= 4 && c.max_json_depth <= 1024, "max_json_depth",
             "must be in [4, 1024]");
  root.Get("read_timeout_ms", &c.read_timeout_ms);
  root.Check(c.read_timeout_ms >= 1, "read_timeout_ms", "must be positive");
  root.Get("drain_ms", &c.drain_ms);
  root.Check(c.drain_ms >= 0 && c.drain_ms <= 600'000, "drain_ms", "must be in [0, 600000]");
  root.Get("shutdown_timeout_ms", &c.shutdown_timeout_ms);
  root.Check(c.shutdown_timeout_ms >= 0 && c.shutdown_timeout_ms <= 600'000, "shutdown_timeout_ms",
             "must be in [0, 600000]");
  root.Get("max_connections", &c.max_connections);
  root.Check(c.max_connections >= 1, "max_connections", "must be positive");
  root.Get("max_connections_per_client", &c.max_connections_per_client);
  root.Check(c.max_connections_per_client >= 1, "max_connections_per_client", "must be positive");
  root.Get("tmax_network_ms", &c.tmax_network_ms);
  root.Get("default_at", &c.default_at);
  root.Check(c.default_at == 1 || c.default_at == 2, "default_at",
             "must be 1 (first price) or 2 (second price)");
  root.Get("max_bids_per_imp", &c.max_bids_per_imp);
  root.Check(c.max_bids_per_imp >= 1 && c.max_bids_per_imp <= 100, "max_bids_per_imp",
             "must be between 1 and 100");
  root.Get("reservation_timeout_ms", &c.reservation_timeout_ms);
  root.Check(c.reservation_timeout_ms >= 1, "reservation_timeout_ms", "must be positive");
  root.Get("notice_secret", &c.notice_secret);
  root.Check(c.notice_secret.empty() || c.notice_secret.size() >= 16, "notice_secret",
             "must be empty (generated) or at least 16 characters");
  root.Get("market_keys", &c.market_keys);  // RTB_MARKET_KEYS, as every key (UseEnvironment)
  for (const auto& [key, value] :
       {std::pair<const char*, const std::string*>{"notice_secret", &c.notice_secret},
        {"market_keys", &c.market_keys}}) {
    if (!value->empty() && !root.FromEnvironment(key)) c.literal_secrets.push_back(key);
  }
  if (!c.market_keys.empty()) {
    auto keys = MarketKeys::Parse(c.market_keys);
    root.Check(keys.ok(), "market_keys", keys.ok() ? "" : keys.status().message());
  }
  root.Get("notice_retention_hours", &c.notice_retention_hours);
  root.Check(
      c.notice_retention_hours >= 1 && c.notice_retention_hours <= 24 * 366 &&
          int64_t{c.notice_retention_hours} * 3'600'000 >= c.reservation_timeout_ms,
      "notice_retention_hours",
      "must be between 1 and 8784, and at least the billing window (reservation_timeout_ms)");
  root.Get("expected_bids_per_second", &c.expected_bids_per_second);
  // At most 2^32 open reservations (~256 GiB): a larger product is a typo, not a plan.
  root.Check(c.expected_bids_per_second >= 0 && static_cast<int64_t>(c.expected_bids_per_second) *
                                                        c.reservation_timeout_ms / 1000 <=
                                                    (int64_t{1} << 32),
             "expected_bids_per_second",
             "must be >= 0, and times reservation_timeout_ms at most 2^32 bids");
  root.Get("policy_max_age_s", &c.policy_max_age_s);
  root.Get("metrics_advertisers", &c.metrics_advertisers);
  root.Check(c.metrics_advertisers >= 0 && c.metrics_advertisers <= 100'000, "metrics_advertisers",
             "must be between 0 and 100000");
  root.Get("policy_path", &c.policy_path);
  root.Get("clusters_path", &c.clusters_path);
  root.Get("default_cluster", &c.default_cluster);
  root.Get("predictor_path", &c.predictor_path);
  root.Get("state_path", &c.state_path);
  root.Get("bench_endpoints", &c.bench_endpoints);
  root.Get("simulation_hooks", &c.simulation_hooks);
}

// literal_secrets: the secret properties written in the file (BidderConfig::literal_secrets).
void ReadKafka(ConfigMap k, KafkaConfig* kc, std::vector<std::string>* literal_secrets) {
  k.Get("brokers", &kc->brokers);
  k.Check(!kc->brokers.empty(), "brokers", kBrokersChoices);
  k.Get("mock_brokers", &kc->mock_brokers);
  k.Check(kc->mock_brokers >= 1 && kc->mock_brokers <= 16, "mock_brokers",
          "must be between 1 and 16");
  k.Get("events_topic", &kc->events_topic);
  k.Get("policy_topic", &kc->policy_topic);
  k.Get("partitions", &kc->partitions);
  k.Check(kc->partitions >= 1, "partitions", "must be positive");
  k.Get("queue_max_messages", &kc->queue_max_messages);
  k.Check(kc->queue_max_messages >= 1, "queue_max_messages", "must be positive");
  k.Get("linger_ms", &kc->linger_ms);
  k.Get("compression", &kc->compression);
  k.Check(kc->compression == "none" || kc->compression == "gzip" || kc->compression == "snappy" ||
              kc->compression == "lz4" || kc->compression == "zstd",
          "compression", "must be none, gzip, snappy, lz4 or zstd");
  k.Get("spill_path", &kc->spill_path);
  k.Get("flush_timeout_ms", &kc->flush_timeout_ms);
  k.Get("start_check_ms", &kc->start_check_ms);
  k.Check(kc->start_check_ms >= 0, "start_check_ms", "must be 0 or more");
  k.Get("stats_interval_ms", &kc->stats_interval_ms);
  k.Check(kc->stats_interval_ms >= 0 && kc->stats_interval_ms <= 86'400'000, "stats_interval_ms",
          "must be 0 (off) to 86400000");
  k.Get("thread_nice", &kc->thread_nice);
  k.Check(kc->thread_nice >= 0 && kc->thread_nice <= 19, "thread_nice", "must be 0..19");
  k.Get("properties", &kc->properties);
  for (const auto& [name, value] : kc->properties) {
    k.Check(!kafka::EngineOwnedProperty(name), "properties",
            "may not set " + name + " (the engine's own, or a kafka key's)");
    if ((name.find("password") != std::string::npos || name.find("secret") != std::string::npos) &&
        !value.empty() && !k.FromEnvironment("properties." + name)) {
      literal_secrets->push_back("kafka.properties." + name);
    }
  }
}

void ReadMarket(ConfigMap mk, MarketConfig* m) {
  mk.Get("steps_per_day", &m->steps_per_day);
  mk.Get("step_seconds", &m->step_seconds);
  mk.Check(m->steps_per_day >= 1 && m->step_seconds >= 1 &&
               int64_t{m->steps_per_day} * m->step_seconds <= 86'400,
           "steps_per_day", "and step_seconds must be >= 1, with at most one day of steps");
  mk.Get("alpha_range", &m->alpha_range);
  mk.Check(m->alpha_range > 0 && m->alpha_range < 1, "alpha_range", "must be in (0, 1)");
}

void ReadAb(ConfigMap ab, AbConfig* a) {
  ab.Get("learned_share", &a->learned_share);
  ab.Check(a->learned_share >= 0 && a->learned_share <= 1, "learned_share",
           "must be between 0 and 1");
  ab.Get("salt", &a->salt);
  ab.Check(!a->salt.empty(), "salt", "must not be empty");
}

void ReadLeases(ConfigMap le, LeaseClientConfig* l) {
  le.Get("enabled", &l->enabled);
  le.Get("name", &l->name);
  le.Check(l->name.find('~') == std::string::npos, "name",
           "must not contain '~' (the coordinator's mark of a dead process's holdings)");
  le.Get("requests_topic", &l->requests_topic);
  le.Get("grants_topic", &l->grants_topic);
  le.Get("notices_topic", &l->notices_topic);
  le.Check(!l->requests_topic.empty() && !l->grants_topic.empty() && !l->notices_topic.empty(),
           "grants_topic", "requests_topic and notices_topic must be set");
  le.Get("horizon_ms", &l->horizon_ms);
  le.Check(l->horizon_ms >= 10 && l->horizon_ms <= 86'400'000, "horizon_ms",
           "must be 10 to 86400000");
  le.Get("min_lease", &l->min_lease);
  le.Check(l->min_lease > 0 && l->min_lease < 1e9, "min_lease", "must be positive");
  le.Get("check_every_ms", &l->check_every_ms);
  le.Check(l->check_every_ms >= 10, "check_every_ms", "must be >= 10");
  le.Get("report_every_ms", &l->report_every_ms);
  le.Check(l->report_every_ms >= 10, "report_every_ms", "must be >= 10");
  le.Get("full_report_every", &l->full_report_every);
  le.Check(l->full_report_every >= 1, "full_report_every", "must be >= 1");
  le.Get("ttl_ms", &l->ttl_ms);
  le.Check(l->ttl_ms > l->report_every_ms, "ttl_ms", "must be longer than report_every_ms");
  le.Get("lower_bids", &l->lower_bids);
  std::string sizing = budget::LeaseSizingName(l->sizing);
  le.Get("sizing", &sizing);
  const std::optional<budget::LeaseSizing> named = budget::LeaseSizingNamed(sizing);
  le.Check(named.has_value(), "sizing", "must be share or rate");
  if (named) l->sizing = *named;
}

// One advertiser of the list; ids must be unique among them.
Advertiser ReadAdvertiser(ConfigMap a, std::set<uint32_t>* ids) {
  Advertiser adv;
  int64_t id = -1;
  a.Get("id", &id);
  a.Check(id >= 0 && id <= 0xffffffffLL, "id", "must be a non-negative 32-bit integer");
  a.Check(ids->insert(static_cast<uint32_t>(id)).second, "id", "is used twice");
  adv.id = static_cast<uint32_t>(id);
  a.Get("name", &adv.name);
  double bid = 0, budget = 0;
  a.Get("bid", &bid);
  a.Check(bid > 0 && bid < 1e6, "bid", "(manual CPC bid, currency units) must be positive");
  a.Get("daily_budget", &budget);
  a.Check(budget >= 0 && budget < 1e12, "daily_budget", "must be >= 0");
  adv.bid = Micros::FromUnits(bid);
  adv.daily_budget = Micros::FromUnits(budget);
  a.Get("agent", &adv.agent);
  a.Check(adv.agent >= 0 && adv.agent < 10000, "agent", "must be in [0, 10000)");
  double value = 0;
  a.Get("conversion_value", &value);
  a.Check(value >= 0 && value < 1e9, "conversion_value", "(currency units) must be >= 0");
  adv.conversion_value = Micros::FromUnits(value);
  double max_value = 0;
  a.Get("max_conversion_value", &max_value);
  a.Check(max_value >= 0 && max_value < 1e9 && (max_value == 0 || max_value >= value),
          "max_conversion_value",
          "(currency units) must be 0 (default) or in [conversion_value, 1e9)");
  if (max_value == 0) max_value = value > 0 ? 10 * value : 1000;
  adv.max_conversion_value = Micros::FromUnits(max_value);
  std::string goal = "revenue";
  double target_cpa = 0, target_roas = 0;
  a.Get("goal", &goal);
  a.Get("target_cpa", &target_cpa);
  a.Get("target_roas", &target_roas);
  if (auto g = MakeGoal(goal, target_cpa, target_roas); g.ok()) {
    adv.goal = *g;
  } else {
    a.Check(false, "goal", g.status().message());
  }
  ConfigMap t = a.Section("targeting");
  t.Get("categories", &adv.targeting.categories);
  t.Get("device_types", &adv.targeting.device_types);
  t.Get("countries", &adv.targeting.countries);
  t.Get("site", &adv.targeting.site);
  t.Get("app", &adv.targeting.app);
  for (ConfigMap cr : a.List("creatives")) {
    Creative c2;
    cr.Get("crid", &c2.crid);
    cr.Check(!c2.crid.empty(), "crid", "must be set");
    cr.Get("adomain", &c2.adomain);
    cr.Get("w", &c2.w);
    cr.Get("h", &c2.h);
    cr.Get("markup", &c2.markup);
    cr.Check(!c2.markup.empty(), "markup",
             "is empty: a bid carries its creative's markup (adm); give the ad's HTML");
    cr.Get("cat", &c2.cat);
    cr.Get("cattax", &c2.cattax);
    cr.Check(c2.cattax >= 1 && c2.cattax < 1000, "cattax",
             "must be an OpenRTB taxonomy (1 = IAB 1.0)");
    cr.Get("mtype", &c2.mtype);
    cr.Check(c2.mtype == 1, "mtype", "must be 1 (banner): this bidder serves banners");
    cr.Get("bundle", &c2.bundle);
    adv.creatives.push_back(c2);
  }
  a.Check(!adv.creatives.empty(), "creatives", "needs at least one creative");
  adv.seat = "adv-" + std::to_string(adv.id);
  a.Get("seat", &adv.seat);
  a.Check(!adv.seat.empty(), "seat", "must not be empty");
  for (ConfigMap dm : a.List("deals")) {
    DealTerms dt;
    dm.Get("id", &dt.id);
    dm.Check(!dt.id.empty(), "id", "(the deal id) must be set");
    adv.deals.push_back(dt);
  }
  return adv;
}

}  // namespace

Status CheckNoticeBaseUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos ||
      (url.compare(0, scheme, "http") != 0 && url.compare(0, scheme, "https") != 0)) {
    return Status::InvalidArgument("must be an http:// or https:// URL, not \"" + url + "\"");
  }
  const std::string rest = url.substr(scheme + 3);
  std::string host = rest.substr(0, rest.find('/'));
  if (!host.empty() && host.front() == '[') {
    host = host.substr(0, host.find(']') + 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  if (host.empty()) return Status::InvalidArgument("names no host: \"" + url + "\"");
  if (host == "0.0.0.0" || host == "[::]" || host == "[0:0:0:0:0:0:0:0]") {
    return Status::InvalidArgument(
        "is " + url +
        ", an address servers listen on and clients cannot reach: give it the "
        "bidder's public address (the one exchanges call its notices at)");
  }
  return Status::Ok();
}

Result<BidderConfig> LoadBidderConfig(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(auto file, ConfigFile::Load(path));
  file->UseEnvironment(kEnvironmentPrefix);
  BidderConfig c;
  ConfigMap root = file->Root();
  ReadServer(root, &c);
  ReadKafka(root.Section("kafka"), &c.kafka, &c.literal_secrets);
  ReadMarket(root.Section("market"), &c.market);
  ReadAb(root.Section("ab"), &c.ab);
  ReadLeases(root.Section("leases"), &c.leases);
  std::set<uint32_t> ids;
  for (ConfigMap a : root.List("advertisers")) c.advertisers.push_back(ReadAdvertiser(a, &ids));
  RTB_RETURN_IF_ERROR(file->Finish());
  if (!c.literal_secrets.empty()) {
    std::string keys, vars;
    for (const std::string& k : c.literal_secrets) {
      keys += (keys.empty() ? "" : ", ") + k;
      vars += (vars.empty() ? "" : ", ") + file->EnvironmentName(k) + "_FILE";
    }
    log::Get("config").warn("{} holds secrets in plain text ({}): give them in {} instead", path,
                            keys, vars);
  }
  return c;
}

std::shared_ptr<const MarketKeys> MarketKeysOf(const BidderConfig& cfg) {
  if (cfg.market_keys.empty()) return nullptr;
  auto keys = MarketKeys::Parse(cfg.market_keys);
  if (!keys.ok()) return nullptr;  // refused when the config was read
  return std::make_shared<const MarketKeys>(std::move(*keys));
}

std::vector<AbAdvertiser> AbMarketOf(const BidderConfig& cfg) {
  std::vector<AbAdvertiser> market;
  for (const Advertiser& a : cfg.advertisers) {
    market.push_back({a.id, a.name, a.agent, a.daily_budget, a.max_conversion_value, a.goal});
  }
  return market;
}

}  // namespace rtb::bidder
