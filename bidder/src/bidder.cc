// The bidder's lifecycle: Create (config, state, events, policy feed), routing, the periodic
// sweep, shutdown. The request paths are bid_handler.cc and notice_handler.cc; the metrics
// page is bidder_metrics.cc.
#include "rtb/bidder/bidder.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <optional>

#include "bidder_impl.h"
#include "lease_client.h"
#include "notice_inbox.h"
#include "rtb/budget/lease_msg.h"
#include "rtb/core/host.h"
#include "rtb/core/log.h"
#include "rtb/kafka/kafka.h"

namespace rtb::bidder {

namespace {
// "<length>:<bytes>": a field that cannot run into the next one, whatever bytes it holds.
void AppendField(std::string* out, std::string_view v) {
  char len[24];
  const auto n = static_cast<size_t>(std::to_chars(len, len + sizeof len, v.size()).ptr - len);
  out->append(len, n).append(1, ':').append(v);
}
}  // namespace

std::string BidIdentity(std::string_view auction, std::string_view imp, uint32_t advertiser) {
  std::string s;
  BidIdentityInto(auction, imp, advertiser, &s);
  return s;
}

void BidIdentityInto(std::string_view auction, std::string_view imp, uint32_t advertiser,
                     std::string* out) {
  out->clear();
  AppendField(out, auction);
  AppendField(out, imp);
  char adv[16];
  const auto len = static_cast<size_t>(std::to_chars(adv, adv + sizeof adv, advertiser).ptr - adv);
  out->append(adv, len);
}

Key128 BidKey(std::string_view auction, std::string_view imp, uint32_t advertiser) {
  thread_local std::string buf;  // no allocation per bid
  BidIdentityInto(auction, imp, advertiser, &buf);
  return HashKey(buf);
}

Bidder::Bidder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Bidder::Impl::Impl(const BidderConfig& c) : cfg(c) {}
Bidder::Impl::~Impl() = default;
Bidder::~Bidder() { Shutdown(); }

const BidderConfig& Bidder::config() const { return impl_->cfg; }
EventLog& Bidder::events() { return *impl_->events; }
PolicyHolder& Bidder::policy() { return impl_->policy; }
Micros Bidder::Spent(size_t k, Arm arm) const {
  const BudgetLedger* ledger = impl_->days->Current();  // none before the first simulated day
  return ledger == nullptr ? Micros(0)
                           : ledger->spent(ArmSlot(k, arm, impl_->cfg.advertisers.size()));
}
Micros Bidder::Reserved(size_t k, Arm arm) const {
  const BudgetLedger* ledger = impl_->days->Current();
  return ledger == nullptr ? Micros(0)
                           : ledger->reserved(ArmSlot(k, arm, impl_->cfg.advertisers.size()));
}
Micros Bidder::Spent(size_t k) const { return Spent(k, Arm::kLearned) + Spent(k, Arm::kManual); }
Micros Bidder::Reserved(size_t k) const {
  return Reserved(k, Arm::kLearned) + Reserved(k, Arm::kManual);
}
StateStore& Bidder::state_store() { return *impl_->state; }
DecodeLimits Bidder::decode_limits() const {
  DecodeLimits d;
  d.max_bytes = impl_->cfg.max_body_bytes;
  d.max_depth = impl_->cfg.max_json_depth;
  d.sim_hints = impl_->cfg.simulation_hooks;
  return d;
}

namespace {

// This bidder's name in its market: leases.name, or this machine's host name and the listen
// port.
Result<std::string> BidderName(const BidderConfig& cfg) {
  if (!cfg.leases.name.empty()) return cfg.leases.name;
  const std::string host = HostName();
  if (host.empty()) {
    return Status::FailedPrecondition(
        "leases.name is empty and this machine's host name is unknown: set leases.name");
  }
  const size_t colon = cfg.listen.rfind(':');
  return host + ":" + cfg.listen.substr(colon == std::string::npos ? 0 : colon + 1);
}

// Who this process is to the lease coordinator: its name (leases.name, or this machine's host
// name and the listen port), a new instance id (random: containers all start as pid 1), and
// the earlier processes of the state store, kept in it newest first. Two live processes cannot
// open one state store, so a coordinator that finds the process holding the name in this
// lineage knows this is its restart.
Result<LeaseClient::Identity> LeaseIdentity(const BidderConfig& cfg, StateStore& state,
                                            const std::string& instance) {
  LeaseClient::Identity id;
  RTB_ASSIGN_OR_RETURN(id.name, BidderName(cfg));
  RTB_ASSIGN_OR_RETURN(const std::string nonce, RandomSecret());
  id.instance = instance + "-" + nonce.substr(0, 8);
  // The store's earlier processes (NextLeaseLineage), and this one, not yet answered.
  auto kept = state.GetMeta("lease_lineage");
  if (!kept.ok() && kept.status().code() != Status::Code::kNotFound) return kept.status();
  LeaseLineage lineage =
      NextLeaseLineage(kept.ok() ? *kept : std::string(), id.instance, budget::kMaxLineage);
  RTB_RETURN_IF_ERROR(state.PutMeta("lease_lineage", lineage.kept));
  id.lineage = std::move(lineage.earlier);
  // Once answered with a holding of its own, this process is marked so in the store.
  id.on_answered = [&state, self = id.instance] {
    auto now_kept = state.GetMeta("lease_lineage");
    const std::string marked = now_kept.ok() ? MarkLeaseAnswered(*now_kept, self) : "";
    if (marked.empty()) return;
    if (const Status st = state.PutMeta("lease_lineage", marked); !st.ok()) {
      log::Get("lease").warn("lease lineage not kept: {}", st.message());
    }
  };
  return id;
}

// The reader of the notices other bidders of the market forward to this one (notice_inbox.h):
// each is booked as if the exchange had sent it here.
Status StartInbox(Bidder::Impl& m) {
  NoticeInbox::Options o;
  o.client.bootstrap = m.events->bootstrap();
  o.client.thread_nice = m.cfg.kafka.thread_nice;
  o.client.properties = m.cfg.kafka.properties;
  o.topic = m.cfg.leases.notices_topic;
  o.name = m.name;
  o.keys = m.keys;
  o.state = m.state.get();
  o.thread_nice = m.cfg.kafka.thread_nice;
  Bidder::Impl* raw = &m;
  o.apply = [raw](const ForwardedNotice& n) {
    return ApplyNotice(*raw, n.target, std::max<int64_t>(0, n.received_ms)).status != 503;
  };
  RTB_ASSIGN_OR_RETURN(m.inbox, NoticeInbox::Start(std::move(o)));
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Bidder>> Bidder::Create(const BidderConfig& cfg, Clock* clock) {
  auto m = std::make_unique<Impl>(cfg);
  m->clock = clock;
  m->keys = MarketKeysOf(cfg);
  // Real time, not the clock's: an instance id is unique over the machine's processes.
  m->instance = std::to_string(NowUnixMs()) + "-" + std::to_string(::getpid());
  if (!cfg.predictor_path.empty()) {
    RTB_ASSIGN_OR_RETURN(m->predictor, LoadPredictor(cfg.predictor_path));
  }
  RTB_ASSIGN_OR_RETURN(m->state, StateStore::Open(cfg.state_path));
  m->days = std::make_unique<DayLedgers>(&m->cfg, m->state.get(), m->clock);
  for (size_t k = 0; k < cfg.advertisers.size(); ++k) {
    m->index_of[cfg.advertisers[k].id] = k;
    m->agents = std::max(m->agents, cfg.advertisers[k].agent + 1);
    m->cid_of.push_back(std::to_string(cfg.advertisers[k].id));
    // The seat, in one place for the response and the deals' wseat: "adv-<id>" unless set.
    std::string& seat = m->cfg.advertisers[k].seat;
    if (seat.empty()) seat = "adv-" + m->cid_of.back();
    m->seat_of.push_back(seat);
  }
  for (const Advertiser& a : cfg.advertisers) {
    if (!a.goal.HasTarget()) continue;
    const size_t n = 2 * static_cast<size_t>(m->agents);
    for (auto* v : {&m->goals.spend, &m->goals.conversions, &m->goals.value, &m->goals.allowed}) {
      *v = std::vector<Counter>(n);
    }
    break;
  }
  // The notice secret: the config's, or this bidder's own, made once and kept.
  std::string secret = cfg.notice_secret;
  if (secret.empty()) {
    auto kept = m->state->GetMeta("notice_secret");
    if (kept.ok()) {
      secret = *kept;
    } else if (kept.status().code() == Status::Code::kNotFound) {
      RTB_ASSIGN_OR_RETURN(secret, RandomSecret());
      RTB_RETURN_IF_ERROR(m->state->PutMeta("notice_secret", secret));
    } else {
      return kept.status();
    }
  }
  RTB_ASSIGN_OR_RETURN(m->signer, NoticeSigner::Create(secret));
  if (const auto day = m->days->StartDay()) m->days->Get(*day);
  auto clusters = std::make_shared<ClusterMap>();
  clusters->default_cluster = cfg.default_cluster;
  if (!cfg.clusters_path.empty()) {
    RTB_ASSIGN_OR_RETURN(ClusterMap cm, LoadClusterMap(cfg.clusters_path));
    *clusters = std::move(cm);
  }
  m->default_clusters = clusters;
  if (!cfg.policy_path.empty()) {
    RTB_ASSIGN_OR_RETURN(ActionTable t, LoadActionTable(cfg.policy_path));
    auto snap = std::make_unique<PolicySnapshot>();
    snap->table = std::move(t);
    snap->clusters = m->default_clusters;
    snap->loaded_unix_ms = m->clock->UnixMs();
    m->policy.Install(std::move(snap));
  }
  RTB_ASSIGN_OR_RETURN(m->events, EventLog::Open(cfg.kafka));
  // Notice events wait in the state store's outbox until Kafka or the spill file has them;
  // what an earlier run left there (kill -9) goes out first.
  StateStore* store = m->state.get();
  m->events->SetSettledHook([store](const std::string& eid) { store->ForgetOutbox(eid); });
  for (const OutboxEntry& o : m->state->Outbox()) {
    m->events->LogOutboxed(o.topic, o.key, o.payload, o.eid);
  }
  PolicyFeedOptions fo;
  fo.client.bootstrap = m->events->bootstrap();
  fo.client.thread_nice = cfg.kafka.thread_nice;
  fo.client.properties = cfg.kafka.properties;
  fo.topic = cfg.kafka.policy_topic;
  fo.group_id = "rtb-bidder-" + m->instance;
  fo.thread_nice = cfg.kafka.thread_nice;
  fo.clock = m->clock;
  fo.keys = MarketKeysOf(cfg);
  RTB_ASSIGN_OR_RETURN(m->feed, PolicyFeed::Start(fo, &m->policy, m->default_clusters));
  if (cfg.leases.enabled) {
    if (kafka::MockCluster* mock = m->events->mock_cluster(); mock != nullptr) {
      // The embedded cluster: the lease topics too (a real cluster's are the operator's).
      const int rf = std::min(3, cfg.kafka.mock_brokers);
      RTB_RETURN_IF_ERROR(mock->CreateTopic(cfg.leases.requests_topic, cfg.kafka.partitions, rf));
      RTB_RETURN_IF_ERROR(mock->CreateTopic(cfg.leases.grants_topic, 1, rf));
      // Who serves the market (`rtb budget`'s default --coordinators-topic): one partition.
      RTB_RETURN_IF_ERROR(
          mock->CreateTopic(budget::DefaultCoordinatorsTopic(cfg.leases.grants_topic), 1, rf));
      RTB_RETURN_IF_ERROR(mock->CreateTopic(cfg.leases.notices_topic, cfg.kafka.partitions, rf));
    }
    RTB_ASSIGN_OR_RETURN(LeaseClient::Identity id, LeaseIdentity(cfg, *m->state, m->instance));
    m->name = id.name;
    auto leases = LeaseClient::Start(&m->cfg, m->days.get(), m->events->bootstrap(), std::move(id),
                                     &m->counters.requests_bid, m->clock);
    if (!leases.ok()) {
      // Most often a wrong kafka.brokers: say which address was tried.
      return Status::Unavailable("leases: Kafka at " + m->events->bootstrap() + ": " +
                                 leases.status().message());
    }
    m->leases = std::move(*leases);
    RTB_RETURN_IF_ERROR(StartInbox(*m));
  }
  log::Get("bidder").info("instance {}: {} advertisers over {} agents, events to {} at {}",
                          m->instance, cfg.advertisers.size(), m->agents, cfg.kafka.events_topic,
                          m->events->bootstrap());
  return std::unique_ptr<Bidder>(new Bidder(std::move(m)));
}

void Bidder::Impl::StateFailed(const Status& st) {
  std::lock_guard<std::mutex> l(state_down_mu);
  if (state_down.exchange(true)) return;
  log::Get("bidder").error(
      "the state store cannot persist billings ({}): not ready, no bids until it can",
      st.message());
}

void Bidder::Impl::ProbeState() {
  std::lock_guard<std::mutex> l(state_down_mu);
  if (!state_down.load()) return;
  if (!state->Probe().ok()) return;
  state_down.store(false);
  log::Get("bidder").info("the state store persists again: ready, bidding");
}

// Tick's sweep (every 100 ms) forgets at most this many expired entries per shard: expiry
// mostly happens a few at a time as bids are added, and a sweep never holds a request thread
// for long (it handles traffic stopping; 256 shards x 128 x 10 ticks/s = 327K bids/s).
constexpr int kSweepPerShard = 128;

void Bidder::Tick() {
  Impl& m = *impl_;
  const int64_t now = m.clock->UnixMs();
  m.days->ExpireBefore(now, kSweepPerShard);
  if (m.state_down.load()) m.ProbeState();
  // Hourly (and at the first tick): the dedupe keys of bids older than the retention go, a
  // whole hour at a time; notices of those bids are refused from now on (HandleNotice).
  if (now >= m.next_retention_ms) {
    m.next_retention_ms = now + Impl::kHourMs;
    const Status st = m.state->ForgetNoticesBefore((now - m.RetentionMs()) / Impl::kHourMs);
    if (!st.ok()) log::Get("bidder").warn("notice retention: {}", st.message());
  }
}

HttpResult Bidder::Health() const {
  HttpResult r;
  r.content_type = "text/plain";
  r.body = "ok\n";
  return r;
}

HttpResult Bidder::Readiness() const {
  const Impl& m = *impl_;
  HttpResult r;
  r.content_type = "text/plain";
  r.body = "ready\n";
  if (m.draining.load()) {
    r.status = 503;
    r.body = "draining: the process is stopping\n";
    return r;
  }
  if (m.state_down.load()) {
    r.status = 503;
    r.body = "the state store cannot persist billings (disk full?): not bidding\n";
    return r;
  }
  if (m.leases == nullptr) return r;
  const int64_t day = m.days->CurrentDay();
  const auto [today, next] = m.leases->ReadyDays();
  if (day >= 0 && (today == day || next == day)) return r;
  r.status = 503;
  r.body = day < 0 ? std::string("no budget day open yet\n")
                   : "leases of budget day " + BudgetDayName(day) + " not answered yet\n";
  return r;
}

HttpResult Bidder::Route(std::string_view method, std::string_view target, std::string_view body,
                         int64_t received_us, RequestDecoder& decoder, std::string_view version) {
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == impl_->cfg.bid_path) {
    if (method != "POST") return {405, "use POST\n", "text/plain", {{"allow", "POST"}}};
    return HandleBid(body, received_us, decoder, version);
  }
  if (path.substr(0, 8) == "/notice/") {
    if (method != "GET" && method != "POST") return {405, "use GET\n", "text/plain", {}};
    return HandleNotice(target);
  }
  impl_->counters.requests_other.Inc();
  if (path == "/metrics" && method == "GET") return Metrics();
  if (path == "/healthz" && method == "GET") return Health();
  if (path == "/readyz" && method == "GET") return Readiness();
  if (path == "/bench/nobid" && impl_->cfg.bench_endpoints) return {204, "", "", {}};
  return {404, "not found\n", "text/plain", {}};
}

void Bidder::SetDraining() { impl_->draining.store(true); }

void Bidder::Shutdown() {
  std::lock_guard<std::mutex> l(impl_->shut_mu);
  if (impl_->shut) return;
  impl_->shut = true;
  impl_->feed.reset();    // stops consuming policies
  impl_->leases.reset();  // and asking for leases
  impl_->inbox.reset();   // and booking forwarded notices
  impl_->events->Shutdown();
}

}  // namespace rtb::bidder
