#include "rtb/bidder/bidder.h"

#include <librdkafka/rdkafka.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>

#include "rtb/bidder/bid_logic.h"
#include "rtb/bidder/budget.h"
#include "rtb/bidder/flat_table.h"
#include "rtb/bidder/metrics.h"
#include "rtb/bidder/notice.h"
#include "rtb/bidder/predictor.h"
#include "rtb/bidder/state_store.h"
#include "rtb/core/auction.h"

namespace rtb::bidder {

namespace {

// The key of one bid's state (its budget reservation and its bid record), as the bid path and
// the notices for that bid both name it: "<auction id>|<imp id>|<advertiser id>", hashed. Built
// in a per-thread buffer: no allocation per bid.
Key128 BidKey(std::string_view auction, std::string_view imp, uint32_t advertiser) {
  thread_local std::string buf;
  char adv[16];
  const auto len = static_cast<size_t>(std::to_chars(adv, adv + sizeof adv, advertiser).ptr - adv);
  buf.assign(auction).append(1, '|').append(imp).append(1, '|').append(adv, len);
  return HashKey(buf);
}

// Budget days: the UTC date of the wall clock, or day n of the simulated clock (ext.sim.t /
// notice t=, simulation_hooks on), numbered apart: kSimDay + n.
constexpr int64_t kSimDay = int64_t{1} << 40;

std::string DayName(int64_t day) {
  if (day >= kSimDay) return "sim-" + std::to_string(day - kSimDay);
  const std::time_t t = static_cast<std::time_t>(day * (kDayMs / 1000));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// An advertiser with less budget left than this computes no bid (the simulator's rule).
constexpr int64_t kMinBudgetLeftMicros = 100;
constexpr int kReasons = 7;
constexpr int kNoticeTypes = 5;
const char* kNoticeResults[] = {"applied", "duplicate", "invalid_price", "above_bid", "error"};
constexpr int kNoticeResultCount = 5;

}  // namespace

struct Bidder::Impl {
  BidderConfig cfg;
  Predictor predictor;
  std::unordered_map<uint32_t, size_t> index_of;  // advertiser id -> index
  int agents = 0;
  std::unique_ptr<StateStore> state;
  // One ledger per budget day; the current one is read without a lock. Older days stay until
  // shutdown (late notices still settle on their own day).
  std::atomic<int64_t> cur_day{-1};
  std::atomic<BudgetLedger*> cur_ledger{nullptr};
  mutable std::mutex days_mu;
  std::map<int64_t, std::unique_ptr<BudgetLedger>> ledgers;  // GUARDED_BY(days_mu)
  std::unique_ptr<EventLog> events;
  PolicyHolder policy;
  std::shared_ptr<const ClusterMap> default_clusters;
  std::string instance;
  std::atomic<uint64_t> seq{0};
  // nurl, burl and lurl of every advertiser (index order): fixed by the config, built once.
  std::vector<std::array<std::string, 3>> notice_urls;

  // Bid records (the price we bid per auction/imp/advertiser), for validating notices.
  struct BidRecord {
    int64_t price_cpm;
    int64_t expires_ms;
    int cluster;  // the user's consumer cluster, stamped on the notices' events
  };
  // Many shards, so that one shard's doubling stays short (see BudgetLedger::kShards); their
  // fill limits are staggered (StaggeredMaxLoad), so that they do not double together.
  static constexpr int kShards = 256;
  struct Shard {
    mutable std::mutex mu;
    FlatTable<BidRecord> m;                       // GUARDED_BY(mu); sized by Create
    std::deque<std::pair<int64_t, Key128>> fifo;  // GUARDED_BY(mu), expiry order
  };
  Shard bid_shards[kShards];

  // Metrics.
  Counter requests_bid, requests_notice, requests_other, bad_requests, bids, nobid[kReasons];
  Counter notices[kNoticeTypes][kNoticeResultCount];
  Counter fallback_requests;
  LatencyHistogram latency;

  // The policy feed (Kafka consumer of the policy topic).
  std::thread feed;
  std::atomic<bool> stop{false};
  bool shut = false;
  std::mutex shut_mu;

  static int64_t DayOf(int64_t now_ms, int64_t sim_ms) {
    return sim_ms >= 0 ? kSimDay + sim_ms / kDayMs : now_ms / kDayMs;
  }
  // The ledger of a budget day, created (spend restored from the state store) on first use.
  BudgetLedger* Ledger(int64_t day) {
    if (day == cur_day.load(std::memory_order_acquire)) return cur_ledger.load();
    std::lock_guard<std::mutex> l(days_mu);
    auto it = ledgers.find(day);
    if (it == ledgers.end()) {
      std::vector<Micros> budgets, spent;
      const std::string name = DayName(day);
      for (const Advertiser& a : cfg.advertisers) {
        budgets.push_back(a.daily_budget);
        spent.push_back(state->Spent(a.id, name));
      }
      it = ledgers.emplace(day, std::make_unique<BudgetLedger>(budgets, spent)).first;
    }
    if (day > cur_day.load()) {
      cur_ledger.store(it->second.get());
      cur_day.store(day, std::memory_order_release);
    }
    return it->second.get();
  }
  BudgetLedger* Current() const { return cur_ledger.load(); }

  std::string NextEid() { return instance + "-" + std::to_string(seq.fetch_add(1)); }

  Shard& ShardOf(Key128 key) { return bid_shards[key.a % kShards]; }

  // Forgets up to max bid records of shard s that expired before now. REQUIRES(s.mu)
  static void ExpireBids(Shard& s, int64_t now, int max) {
    for (int n = 0; n < max && !s.fifo.empty() && s.fifo.front().first < now; ++n) {
      const Key128 k = s.fifo.front().second;
      const BidRecord* r = s.m.Find(k);
      if (r != nullptr && r->expires_ms < now) s.m.Erase(k);
      s.fifo.pop_front();
    }
  }

  void RecordBid(Key128 k, Micros price, int cluster, int64_t now_ms) {
    Shard& s = ShardOf(k);
    const int64_t expires = now_ms + cfg.bid_record_ttl_ms;
    std::lock_guard<std::mutex> l(s.mu);
    // Expiry keeps pace with new records a few at a time (as BudgetLedger::TryReserve does).
    ExpireBids(s, now_ms, BudgetLedger::kExpirePerCall);
    const BidRecord rec{price.value(), expires, cluster};
    auto [r, inserted] = s.m.Emplace(k, rec);
    if (!inserted) *r = rec;  // the same key again: the latest bid, remembered from now on
    s.fifo.emplace_back(expires, k);
  }
  bool FindBid(Key128 k, int64_t* price, int* cluster) {
    Shard& s = ShardOf(k);
    std::lock_guard<std::mutex> l(s.mu);
    const BidRecord* r = s.m.Find(k);
    if (r == nullptr) return false;
    *price = r->price_cpm;
    *cluster = r->cluster;
    return true;
  }

  // When the table was computed (or, if it does not say, when it was loaded).
  static int64_t BornMs(const PolicySnapshot& p) {
    return p.table.created_unix_ms > 0 ? p.table.created_unix_ms : p.loaded_unix_ms;
  }
  bool PolicyUsable(const PolicySnapshot* p, int64_t now_ms) const {
    return p != nullptr && now_ms - BornMs(*p) <= static_cast<int64_t>(cfg.policy_max_age_s) * 1000;
  }

  void RunPolicyFeed();
};

Bidder::Bidder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Bidder::~Bidder() { Shutdown(); }

const BidderConfig& Bidder::config() const { return impl_->cfg; }
EventLog& Bidder::events() { return *impl_->events; }
PolicyHolder& Bidder::policy() { return impl_->policy; }
Micros Bidder::Spent(size_t k) const { return impl_->Current()->spent(k); }
Micros Bidder::Reserved(size_t k) const { return impl_->Current()->reserved(k); }
DecodeLimits Bidder::decode_limits() const {
  DecodeLimits d;
  d.max_bytes = impl_->cfg.max_body_bytes;
  d.max_depth = impl_->cfg.max_json_depth;
  d.sim_hints = impl_->cfg.simulation_hooks;
  return d;
}

Result<std::unique_ptr<Bidder>> Bidder::Create(const BidderConfig& cfg) {
  auto m = std::make_unique<Impl>();
  m->cfg = cfg;
  // expected_bids_per_second: each shard sized for its share of a TTL's bids, plus 1/8 for an
  // uneven spread, and its memory written (faulted in) now rather than on the bid path.
  const int64_t expected = static_cast<int64_t>(cfg.expected_bids_per_second) *
                           cfg.bid_record_ttl_ms / 1000 / Impl::kShards * 9 / 8;
  for (int i = 0; i < Impl::kShards; ++i) {
    m->bid_shards[i].m = FlatTable<Impl::BidRecord>(
        static_cast<size_t>(std::max<int64_t>(256, expected)), StaggeredMaxLoad(i, Impl::kShards));
  }
  m->instance = std::to_string(NowUnixMs()) + "-" + std::to_string(::getpid());
  if (!cfg.predictor_path.empty()) {
    RTB_ASSIGN_OR_RETURN(m->predictor, LoadPredictor(cfg.predictor_path));
  }
  RTB_ASSIGN_OR_RETURN(m->state, StateStore::Open(cfg.state_path));
  for (size_t k = 0; k < cfg.advertisers.size(); ++k) {
    m->index_of[cfg.advertisers[k].id] = k;
    const uint32_t id = cfg.advertisers[k].id;
    m->notice_urls.push_back({NoticeUrl(cfg.notice_base_url, NoticeType::kWin, id),
                              NoticeUrl(cfg.notice_base_url, NoticeType::kBilling, id),
                              NoticeUrl(cfg.notice_base_url, NoticeType::kLoss, id)});
    m->agents = std::max(m->agents, cfg.advertisers[k].agent + 1);
  }
  m->Ledger(NowUnixMs() / kDayMs);
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
    snap->loaded_unix_ms = NowUnixMs();
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
  Impl* raw = m.get();
  m->feed = std::thread([raw] { raw->RunPolicyFeed(); });
  return std::unique_ptr<Bidder>(new Bidder(std::move(m)));
}

void Bidder::Impl::RunPolicyFeed() {
  LowerThisThread("rtb-policy", cfg.kafka.thread_nice);
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", events->bootstrap().c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "group.id", ("rtb-bidder-" + instance).c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  LowerThreadPriority(conf, cfg.kafka.thread_nice);
  rd_kafka_t* consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (consumer == nullptr) return;
  rd_kafka_poll_set_consumer(consumer);
  // Every bidder reads every policy: assign partition 0 from the beginning (no group join).
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(parts, cfg.kafka.policy_topic.c_str(), 0)->offset =
      RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(consumer, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  while (!stop.load()) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(consumer, 200);
    if (msg == nullptr) continue;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const std::string payload(static_cast<const char*>(msg->payload), msg->len);
      try {
        const auto j = nlohmann::json::parse(payload);
        auto table = ParseActionTable(j.at("table").dump(), "policy topic");
        if (table.ok()) {
          std::shared_ptr<const ClusterMap> clusters;
          if (j.contains("clusters") && !j["clusters"].is_null()) {
            auto cm = ParseClusterMap(j["clusters"].dump(), "policy topic");
            if (cm.ok()) clusters = std::make_shared<ClusterMap>(std::move(*cm));
          }
          auto snap = std::make_unique<PolicySnapshot>();
          snap->table = std::move(*table);
          const PolicySnapshot* cur = policy.Current();
          snap->clusters = clusters ? clusters : (cur ? cur->clusters : default_clusters);
          snap->loaded_unix_ms = NowUnixMs();
          policy.Install(std::move(snap));
        }
      } catch (const std::exception&) {
        // A corrupt policy message is ignored: the last good table stays.
      }
    }
    rd_kafka_message_destroy(msg);  // release before the consumer is destroyed
  }
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
}

bool Bidder::InstallPolicy(const ActionTable& table, std::shared_ptr<const ClusterMap> clusters) {
  auto snap = std::make_unique<PolicySnapshot>();
  snap->table = table;
  const PolicySnapshot* cur = impl_->policy.Current();
  snap->clusters = clusters ? clusters : (cur ? cur->clusters : impl_->default_clusters);
  snap->loaded_unix_ms = NowUnixMs();
  return impl_->policy.Install(std::move(snap));
}

HttpResult Bidder::HandleBid(std::string_view body, int64_t received_us, RequestDecoder& decoder,
                             std::string_view version) {
  Impl& m = *impl_;
  m.requests_bid.Inc();
  HttpResult res;
  auto req = decoder.Decode(body);
  if (!req.ok()) {
    m.bad_requests.Inc();
    res.status = 400;
    res.content_type = "text/plain";
    m.latency.Observe(NowSteadyUs() - received_us);
    return res;
  }
  const int64_t now_ms = NowUnixMs();
  const int64_t sim_ms = req->sim ? req->sim->t_ms : -1;
  BudgetLedger& ledger = *m.Ledger(Impl::DayOf(now_ms, sim_ms));
  std::vector<int> computed;
  auto no_bid = [&](NoBidReason reason, int cluster, uint64_t policy_version, bool fallback) {
    m.nobid[static_cast<int>(reason)].Inc();
    Event e;
    e.type = "nobid";
    e.eid = m.NextEid();
    e.ts_ms = now_ms;
    e.auction_id = req->id;
    e.cluster = cluster;
    e.policy_version = policy_version;
    e.manual_fallback = fallback;
    e.test = req->test;
    e.reason = NoBidReasonName(reason);
    e.sim_ms = sim_ms;
    e.computed = std::move(computed);
    m.events->Log(e);
    HttpResult r;
    r.status = 204;
    r.content_type.clear();
    r.headers.push_back({"x-rtb-nobid-reason", NoBidReasonName(reason)});
    m.latency.Observe(NowSteadyUs() - received_us);
    return r;
  };
  // tmax includes the network: no bid when the answer cannot arrive in time.
  if (req->tmax_ms > 0 &&
      (NowSteadyUs() - received_us) / 1000 + m.cfg.tmax_network_ms >= req->tmax_ms) {
    return no_bid(NoBidReason::kTmax, -1, 0, false);
  }
  const PolicySnapshot* snap = m.policy.Current();
  DecideOptions opt;
  // A few spares per impression, so that a bidder whose reservation fails gives its place to
  // the next best.
  opt.max_bids_per_imp = std::min(kMaxSlots, m.cfg.max_bids_per_imp + 2);
  opt.currency = m.cfg.currency;
  opt.use_policy = m.PolicyUsable(snap, now_ms);
  opt.agents = m.agents;
  opt.index_of = &m.index_of;
  opt.clusters = m.default_clusters.get();
  opt.has_budget = [&ledger](size_t k) {
    return ledger.budget(k).value() - ledger.spent(k).value() >= kMinBudgetLeftMicros;
  };
  if (!opt.use_policy) m.fallback_requests.Inc();
  Decision d = DecideBids(*req, m.cfg.advertisers, m.predictor, snap, opt);
  computed = std::move(d.computed);

  // Reserve the largest possible charge of every bid before sending it (test requests never
  // touch a budget).
  std::vector<Candidate> sent;
  std::vector<int> per_imp(req->imps.size(), 0);
  bool budget_limited = false;
  for (Candidate c : d.bids) {
    if (per_imp[c.imp_index] >= m.cfg.max_bids_per_imp) continue;
    if (!req->test) {
      const Key128 key = BidKey(req->id, req->imps[c.imp_index].id, c.advertiser);
      Micros charge((c.price.value() + 999) / 1000);  // one impression at the bid price
      // A bid never risks more than the budget left: it is lowered to what is left (the
      // simulator's rule), so a small budget is spent to the end, not stopped one charge short.
      const int64_t left = ledger.budget(c.advertiser_index).value() -
                           ledger.spent(c.advertiser_index).value() -
                           ledger.reserved(c.advertiser_index).value();
      if (charge.value() > left && left >= kMinBudgetLeftMicros && c.pctr > 0) {
        c.price = Micros(left * 1000);
        c.cpc = Micros(static_cast<int64_t>(static_cast<double>(left) / c.pctr));
        charge = Micros(left);
        if (c.price < req->imps[c.imp_index].bidfloor) continue;
      }
      if (!ledger.TryReserve(c.advertiser_index, key, charge, now_ms,
                             now_ms + m.cfg.reservation_timeout_ms)) {
        budget_limited = true;
        continue;
      }
      m.RecordBid(key, c.price, c.cluster, now_ms);
    }
    ++per_imp[c.imp_index];
    sent.push_back(c);
  }
  if (sent.empty()) {
    return no_bid(budget_limited ? NoBidReason::kBudget : d.reason, d.cluster, d.policy_version,
                  d.manual_fallback);
  }
  BidResponse resp;
  resp.id = req->id;
  resp.cur = m.cfg.currency;
  for (const Candidate& c : sent) {
    const Advertiser& a = m.cfg.advertisers[c.advertiser_index];
    const Creative& cr = a.creatives[c.creative_index];
    const std::string seat = "adv-" + std::to_string(a.id);
    SeatBid* sb = nullptr;
    for (auto& s : resp.seatbid) {
      if (s.seat == seat) sb = &s;
    }
    if (sb == nullptr) {
      resp.seatbid.push_back({seat, {}});
      sb = &resp.seatbid.back();
    }
    const Imp& imp = req->imps[c.imp_index];
    Bid b;
    b.id = req->id + "-" + imp.id + "-" + std::to_string(a.id);
    b.impid = imp.id;
    b.price = c.price;
    b.adid = cr.crid;
    b.crid = cr.crid;
    b.cid = std::to_string(a.id);
    b.adomain = cr.adomain;
    b.w = cr.w;
    b.h = cr.h;
    const auto& urls = m.notice_urls[c.advertiser_index];
    b.nurl = urls[0];
    b.burl = urls[1];
    b.lurl = urls[2];
    b.adm = cr.markup;
    sb->bids.push_back(std::move(b));
    m.bids.Inc();
    Event e;
    e.type = "bid";
    e.eid = m.NextEid();
    e.ts_ms = now_ms;
    e.auction_id = req->id;
    e.imp_id = imp.id;
    e.advertiser = a.id;
    e.agent = c.agent;
    e.cluster = c.cluster;
    e.price_micros = c.price.value();
    e.cpc_micros = c.cpc.value();
    e.pctr = c.pctr;
    e.pcvr = c.pcvr;
    e.alpha = c.alpha;
    e.policy_version = d.policy_version;
    e.manual_fallback = d.manual_fallback;
    e.test = req->test;
    e.sim_ms = sim_ms;
    if (!computed.empty()) e.computed = std::move(computed);  // once per request
    computed.clear();
    m.events->Log(e);
  }
  res.body = EncodeBidResponse(resp);
  res.headers.push_back({"x-openrtb-version", version.empty() ? "2.6" : std::string(version)});
  m.latency.Observe(NowSteadyUs() - received_us);
  return res;
}

HttpResult Bidder::HandleNotice(std::string_view target) {
  Impl& m = *impl_;
  m.requests_notice.Inc();
  HttpResult res;
  res.content_type = "text/plain";
  auto n = ParseNotice(target);
  if (!n.ok()) {
    m.bad_requests.Inc();
    res.status = 400;
    res.body = n.status().message() + "\n";
    return res;
  }
  auto it = m.index_of.find(n->advertiser);
  if (it == m.index_of.end()) {
    m.bad_requests.Inc();
    res.status = 400;
    res.body = "unknown advertiser\n";
    return res;
  }
  const size_t k = it->second;
  const int t = static_cast<int>(n->type);
  const Key128 key = BidKey(n->auction_id, n->imp_id, n->advertiser);
  // Once per bid: (type, auction, imp, advertiser). Several seats can win one impression on a
  // multi-slot exchange (the simulated GSP sells 3 slots per request).
  const std::string once = std::string(NoticeTypeName(n->type)) + "/" + n->auction_id + "/" +
                           n->imp_id + "/" + std::to_string(n->advertiser);
  auto count = [&](int result) { m.notices[t][result].Inc(); };

  Event e;
  e.type = NoticeTypeName(n->type);
  e.eid = m.NextEid();
  e.ts_ms = NowUnixMs();
  e.auction_id = n->auction_id;
  e.imp_id = n->imp_id;
  e.advertiser = n->advertiser;
  e.agent = m.cfg.advertisers[k].agent;
  e.sim_ms = m.cfg.simulation_hooks ? n->sim_ms : -1;
  const int64_t day = Impl::DayOf(e.ts_ms, e.sim_ms);
  BudgetLedger& ledger = *m.Ledger(day);
  const std::string day_name = DayName(day);
  Micros charge(0);
  bool rejected = false;  // a billing price we refuse to book
  int64_t bid_cpm = -1;
  const bool known = m.FindBid(key, &bid_cpm, &e.cluster);
  if (n->type == NoticeType::kBilling || n->type == NoticeType::kWin) {
    if (!n->price) {
      e.reason = n->invalid_price;
      rejected = true;
    } else if (known && n->price->value() > bid_cpm) {
      e.reason = "above_bid";
      rejected = true;
    } else {
      // A bid we no longer remember (after a restart, or older than an hour) is booked as
      // billed, since the exchange charges it; the event says it could not be checked.
      if (!known) e.reason = "unverified";
      e.price_micros = n->price->value();
      if (n->type == NoticeType::kBilling) charge = Micros((n->price->value() + 500) / 1000);
    }
  } else if (n->type == NoticeType::kConversion && n->value) {
    e.price_micros = n->value->value();
  } else if (n->type == NoticeType::kLoss) {
    e.reason = std::to_string(n->loss_code);
  }
  OutboxEntry ob;
  ob.eid = e.eid;
  ob.topic = m.events->events_topic();
  ob.key = e.Key();
  if (n->type == NoticeType::kBilling && rejected) {
    // Not charged, counted; still de-duplicated so a retry is not counted twice.
    ob.payload = EncodeEvent(e);
    auto r = m.state->ApplyOnce(once, n->advertiser, day_name, Micros(0), &ob);
    if (!r.ok()) {
      count(4);
      res.status = 503;
      return res;
    }
    if (!*r) {
      count(1);
      return res;
    }
    count(e.reason == "above_bid" ? 3 : 2);
    m.events->LogOutboxed(ob.topic, ob.key, ob.payload, ob.eid);
    return res;
  }
  if (n->type == NoticeType::kBilling) e.charged = true;  // if applied (below)
  ob.payload = EncodeEvent(e);
  auto applied = m.state->ApplyOnce(once, n->advertiser, day_name, charge, &ob);
  if (!applied.ok()) {
    count(4);
    res.status = 503;
    return res;
  }
  if (!*applied) {
    count(1);  // a repeated notice changes nothing
    return res;
  }
  if (n->type == NoticeType::kBilling) {
    ledger.Settle(k, key, charge);
  } else if (n->type == NoticeType::kLoss) {
    ledger.Release(key);
  }
  count(0);
  m.events->LogOutboxed(ob.topic, ob.key, ob.payload, ob.eid);
  return res;
}

// Tick's sweep (every 100 ms) forgets at most this many expired entries per shard: expiry
// mostly happens a few at a time as bids are added, and a sweep never holds a request thread
// for long (it handles traffic stopping; 256 shards x 128 x 10 ticks/s = 327K bids/s).
constexpr int kSweepPerShard = 128;

void Bidder::Tick() {
  Impl& m = *impl_;
  const int64_t now = NowUnixMs();
  {
    std::lock_guard<std::mutex> l(m.days_mu);
    for (auto& [day, ledger] : m.ledgers) ledger->ExpireBefore(now, kSweepPerShard);
  }
  for (auto& s : m.bid_shards) {
    std::lock_guard<std::mutex> l(s.mu);
    Impl::ExpireBids(s, now, kSweepPerShard);
  }
}

HttpResult Bidder::Health() const {
  HttpResult r;
  r.content_type = "text/plain";
  r.body = "ok\n";
  return r;
}

HttpResult Bidder::Metrics() const {
  const Impl& m = *impl_;
  std::string o;
  char buf[256];
  auto line = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof buf, fmt, args...);
    o += buf;
  };
  o += "# HELP rtb_requests_total Requests by endpoint.\n# TYPE rtb_requests_total counter\n";
  line("rtb_requests_total{endpoint=\"bid\"} %llu\n", (unsigned long long)m.requests_bid.Get());
  line("rtb_requests_total{endpoint=\"notice\"} %llu\n",
       (unsigned long long)m.requests_notice.Get());
  o += "# HELP rtb_bad_requests_total Malformed requests and notices (answered 400).\n"
       "# TYPE rtb_bad_requests_total counter\n";
  line("rtb_bad_requests_total %llu\n", (unsigned long long)m.bad_requests.Get());
  o += "# HELP rtb_bids_total Bids sent.\n# TYPE rtb_bids_total counter\n";
  line("rtb_bids_total %llu\n", (unsigned long long)m.bids.Get());
  o += "# HELP rtb_nobids_total No-bids by reason.\n# TYPE rtb_nobids_total counter\n";
  for (int r = 1; r < kReasons; ++r) {
    line("rtb_nobids_total{reason=\"%s\"} %llu\n", NoBidReasonName(static_cast<NoBidReason>(r)),
         (unsigned long long)m.nobid[r].Get());
  }
  o += m.latency.Render("rtb_bid_latency_seconds", "Bid request handling time (decode to encode).");
  o += "# HELP rtb_notices_total Notices by type and result.\n# TYPE rtb_notices_total counter\n";
  for (int t = 0; t < kNoticeTypes; ++t) {
    for (int r = 0; r < kNoticeResultCount; ++r) {
      line("rtb_notices_total{type=\"%s\",result=\"%s\"} %llu\n",
           NoticeTypeName(static_cast<NoticeType>(t)), kNoticeResults[r],
           (unsigned long long)m.notices[t][r].Get());
    }
  }
  o += "# HELP rtb_budget_micros Budget, spend and outstanding reservations per advertiser.\n"
       "# TYPE rtb_budget_micros gauge\n";
  const BudgetLedger& ledger = *m.Current();
  for (size_t k = 0; k < m.cfg.advertisers.size(); ++k) {
    const unsigned id = m.cfg.advertisers[k].id;
    line("rtb_budget_micros{advertiser=\"%u\",kind=\"budget\"} %lld\n", id,
         (long long)ledger.budget(k).value());
    line("rtb_budget_micros{advertiser=\"%u\",kind=\"spent\"} %lld\n", id,
         (long long)ledger.spent(k).value());
    line("rtb_budget_micros{advertiser=\"%u\",kind=\"reserved\"} %lld\n", id,
         (long long)ledger.reserved(k).value());
  }
  size_t records = 0, slots = 0;
  for (const auto& sh : m.bid_shards) {
    std::lock_guard<std::mutex> l(sh.mu);
    records += sh.m.size();
    slots += sh.m.capacity();
  }
  o +=
      "# HELP rtb_bid_state Per-bid state held: open reservations (today's ledger), bid "
      "records kept to check notices, and the slots of their tables.\n# TYPE rtb_bid_state gauge\n";
  line("rtb_bid_state{kind=\"open_reservations\"} %lld\n", (long long)ledger.outstanding());
  line("rtb_bid_state{kind=\"bid_records\"} %zu\n", records);
  line("rtb_bid_state{kind=\"bid_record_slots\"} %zu\n", slots);
  const EventLogStats s = m.events->Stats();
  o += "# HELP rtb_kafka_events Events by delivery state.\n# TYPE rtb_kafka_events counter\n";
  line("rtb_kafka_events{state=\"logged\"} %llu\n", (unsigned long long)s.logged);
  line("rtb_kafka_events{state=\"acked\"} %llu\n", (unsigned long long)s.acked);
  line("rtb_kafka_events{state=\"spilled\"} %llu\n", (unsigned long long)s.spilled);
  line("rtb_kafka_events{state=\"resent\"} %llu\n", (unsigned long long)s.resent);
  line("rtb_kafka_events{state=\"dropped\"} %llu\n", (unsigned long long)s.dropped);
  o += "# HELP rtb_kafka_queue Events waiting in the producer queue and in the spill file.\n"
       "# TYPE rtb_kafka_queue gauge\n";
  line("rtb_kafka_queue{where=\"producer\"} %llu\n", (unsigned long long)s.queued);
  line("rtb_kafka_queue{where=\"spill\"} %llu\n", (unsigned long long)s.spill_pending);
  const PolicySnapshot* p = m.policy.Current();
  const int64_t now = NowUnixMs();
  o += "# HELP rtb_policy_version Version of the action table in use (0 = none).\n"
       "# TYPE rtb_policy_version gauge\n";
  line("rtb_policy_version %llu\n", (unsigned long long)(p ? p->table.version : 0));
  o += "# HELP rtb_policy_age_seconds Age of the action table (-1 = none).\n"
       "# TYPE rtb_policy_age_seconds gauge\n";
  line("rtb_policy_age_seconds %.3f\n", p ? (now - Impl::BornMs(*p)) / 1000.0 : -1.0);
  o += "# HELP rtb_policy_fallback 1 when bidding manual bids (no policy, or too old).\n"
       "# TYPE rtb_policy_fallback gauge\n";
  line("rtb_policy_fallback %d\n", m.PolicyUsable(p, now) ? 0 : 1);
  o += "# HELP rtb_policy_rejected_total Policies refused as older than the one in use.\n"
       "# TYPE rtb_policy_rejected_total counter\n";
  line("rtb_policy_rejected_total %llu\n", (unsigned long long)m.policy.rejected());
  o += "# HELP rtb_fallback_requests_total Requests bid with manual bids for want of a policy.\n"
       "# TYPE rtb_fallback_requests_total counter\n";
  line("rtb_fallback_requests_total %llu\n", (unsigned long long)m.fallback_requests.Get());
  o += "# HELP rtb_kafka_bootstrap_info Where the events go (kcat -b).\n"
       "# TYPE rtb_kafka_bootstrap_info gauge\n";
  o += "rtb_kafka_bootstrap_info{bootstrap=\"" + m.events->bootstrap() + "\"} 1\n";
  HttpResult r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = std::move(o);
  return r;
}

HttpResult Bidder::Route(std::string_view method, std::string_view target, std::string_view body,
                         int64_t received_us, RequestDecoder& decoder, std::string_view version) {
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == impl_->cfg.bid_path) {
    if (method != "POST") return {405, "", "text/plain", {{"allow", "POST"}}};
    return HandleBid(body, received_us, decoder, version);
  }
  if (path.substr(0, 8) == "/notice/") {
    if (method != "GET" && method != "POST") return {405, "", "text/plain", {}};
    return HandleNotice(target);
  }
  impl_->requests_other.Inc();
  if (path == "/metrics" && method == "GET") return Metrics();
  if (path == "/healthz" && method == "GET") return Health();
  if (path == "/bench/nobid" && impl_->cfg.bench_endpoints) return {204, "", "", {}};
  return {404, "", "text/plain", {}};
}

void Bidder::Shutdown() {
  std::lock_guard<std::mutex> l(impl_->shut_mu);
  if (impl_->shut) return;
  impl_->shut = true;
  impl_->stop.store(true);
  if (impl_->feed.joinable()) impl_->feed.join();
  impl_->events->Shutdown();
}

}  // namespace rtb::bidder
