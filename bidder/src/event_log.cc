#include "rtb/bidder/event_log.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "rtb/core/clock.h"
#include "rtb/core/log.h"

namespace rtb::bidder {
namespace {
// Reconcile's bound: no message for this long while reading a topic's tail gives up.
constexpr int kReconcileTimeoutMs = 10000;
}  // namespace

struct EventLog::Impl {
  KafkaConfig cfg;
  std::unique_ptr<kafka::MockCluster> mock;  // the embedded cluster (kafka.brokers: embedded)
  // The producer: owned and replaced by the poller thread alone (after a fatal error); every
  // other thread reaches it through `current`. A replaced one is kept (`retired`) until
  // Shutdown, since a request thread may still be handing it an event.
  std::unique_ptr<kafka::Producer> producer;
  std::atomic<kafka::Producer*> current{nullptr};
  std::vector<std::unique_ptr<kafka::Producer>> retired;
  kafka::Producer::Options producer_options;  // to make the next one
  std::atomic<uint64_t> producer_restarts{0};
  // Events a producer that failed for good held when it was purged (the delivery thread's
  // alone): the brokers may have written some without saying so. Before the rest is re-sent,
  // they are looked for on their topic (Reconcile).
  struct Unsure {
    std::string topic, key, payload;
    int64_t timestamp_ms;
    std::string* outbox_id;
  };
  std::vector<Unsure> unsure;
  bool purging = false;  // in ReplaceIfFatal's purge: failed deliveries are unsure
  // Per topic, per partition: the highest offset the brokers acknowledged (the delivery
  // thread's alone), where Reconcile starts reading.
  std::map<std::string, std::vector<int64_t>, std::less<>> acked_offsets;
  std::atomic<uint64_t> found_after_restart{0};
  int64_t next_replace_ms = 0;  // a failed replacement is tried again a second later
  std::string bootstrap;
  std::thread poller;
  std::atomic<bool> stop{false};
  bool shut = false;
  std::mutex shut_mu;

  std::mutex spill_mu;    // guards spill file writes and the resend swap
  FILE* spill = nullptr;  // GUARDED_BY(spill_mu)
  std::atomic<uint64_t> logged{0}, acked{0}, spilled{0}, resent{0}, dropped{0}, spill_pending{0},
      dead_lettered{0};
  std::function<void(const std::string&)> settled;  // outbox hook (set before traffic)
  mutable std::mutex stats_mu;
  std::optional<kafka::Statistics> stats;  // GUARDED_BY(stats_mu): the latest of the producer
  // Tests only (RTB_EVENTS_ACKED_FILE): every event the brokers acknowledged, "key<TAB>event"
  // per line in the order of the acknowledgements, for a checker that reads the topic back.
  FILE* acked_file = nullptr;
  // Spilling happens per event on the bid path: a few lines a minute, the rest counted.
  log::RateLimit spill_warnings{3, std::chrono::seconds(60)};
  log::RateLimit drop_errors{3, std::chrono::seconds(60)};
  log::RateLimit dead_warnings{3, std::chrono::seconds(60)};

  void Settle(std::string* outbox_id) {
    if (outbox_id == nullptr) return;
    if (settled) settled(*outbox_id);
    delete outbox_id;
  }

  void Spill(const std::string& topic, const std::string& key, const char* payload, size_t len) {
    std::lock_guard<std::mutex> l(spill_mu);
    if (spill == nullptr) spill = std::fopen(cfg.spill_path.c_str(), "a");
    bool ok = spill != nullptr;
    if (ok) {
      ok = std::fprintf(spill, "%s\t%s\t", topic.c_str(), key.c_str()) > 0 &&
           std::fwrite(payload, 1, len, spill) == len && std::fputc('\n', spill) != EOF &&
           std::fflush(spill) == 0;
    }
    uint64_t skipped = 0;
    if (ok) {
      spilled.fetch_add(1);
      spill_pending.fetch_add(1);
      if (spill_warnings.Allow(&skipped)) {
        log::Get("events").warn("Kafka cannot take events now: spilled to {} ({} more since)",
                                cfg.spill_path, skipped);
      }
    } else {
      dropped.fetch_add(1);
      if (drop_errors.Allow(&skipped)) {
        log::Get("events").error("cannot write the spill file {}: event dropped ({} more since)",
                                 cfg.spill_path, skipped);
      }
    }
  }

  // An event no broker will ever take (too large): to the dead-letter file (spill path +
  // ".dead", one "reason<TAB>topic<TAB>key<TAB>payload" line each), counted, never re-sent, so
  // that it cannot hold up the events behind it.
  void DeadLetter(const std::string& reason, const std::string& topic, const std::string& key,
                  const char* payload, size_t len) {
    std::lock_guard<std::mutex> l(spill_mu);
    FILE* f = std::fopen((cfg.spill_path + ".dead").c_str(), "a");
    const bool ok =
        f != nullptr &&
        std::fprintf(f, "%s\t%s\t%s\t", reason.c_str(), topic.c_str(), key.c_str()) > 0 &&
        std::fwrite(payload, 1, len, f) == len && std::fputc('\n', f) != EOF;
    if (f != nullptr) std::fclose(f);
    (ok ? dead_lettered : dropped).fetch_add(1);
    uint64_t skipped = 0;
    if (dead_warnings.Allow(&skipped)) {
      // A broker refusing small events as too large refuses the batch: its max.message.bytes
      // (or the topic's) is below the producer's batch.
      log::Get("events").error(
          "an event Kafka will never take ({}) went to {}.dead ({} more since); if events are "
          "small and a broker says too large, its max.message.bytes is below the producer's "
          "batch: lower batch.size in kafka.properties",
          reason, cfg.spill_path, skipped);
    }
  }

  // Hands one message to librdkafka: kOk (librdkafka owns outbox_id until the delivery report),
  // kUnavailable (queue full: spill it) or kInvalidArgument (never: dead-letter it).
  Status Produce(const std::string& topic, const std::string& key, const char* payload, size_t len,
                 std::string* outbox_id = nullptr) {
    return current.load(std::memory_order_acquire)
        ->Produce(topic, kafka::kAnyPartition, key, std::string_view(payload, len), outbox_id);
  }

  // A fatal error (kafka::Producer::FatalError): the producer can deliver nothing more. What
  // it holds is purged (its delivery reports) and a new producer, with a new producer id, takes
  // over. The brokers may have written some purged events without acknowledging them (librdkafka
  // 2.0.2 raises this error after a leader's failure with batches in flight): each is looked for
  // on its topic first (Reconcile), and only those not there are spilled and re-sent.
  // Returns whether the producer had a fatal error.
  bool ReplaceIfFatal() {
    const std::string why = producer->FatalError();
    if (why.empty()) return false;
    const int64_t now = NowSteadyUs() / 1000;
    if (now < next_replace_ms) return true;
    next_replace_ms = now + 1000;
    purging = true;
    producer->PurgeAll();
    for (int i = 0; i < 20 && producer->QueueLength() > 0; ++i) producer->Poll(50);
    producer->Poll(0);
    purging = false;
    auto fresh = kafka::Producer::Create(producer_options);
    if (!fresh.ok()) {
      SpillUnsure();
      log::Get("kafka").error(
          "the events producer failed for good ({}) and a new one cannot start ({}): events "
          "spill until it can",
          why, fresh.status().message());
      return true;
    }
    current.store(fresh->get(), std::memory_order_release);
    retired.push_back(std::exchange(producer, std::move(*fresh)));
    producer_restarts.fetch_add(1);
    log::Get("kafka").error(
        "the events producer failed for good ({}); a new producer took over (restart {})", why,
        producer_restarts.load());
    Reconcile();
    return true;
  }

  void SpillUnsure() {
    for (Unsure& u : unsure) {
      Spill(u.topic, u.key, u.payload.data(), u.payload.size());
      Settle(u.outbox_id);
    }
    unsure.clear();
  }

  // Looks for the unsure events on their topics, from just after the last offset the brokers
  // acknowledged in each partition (or, where none was, from the first written since the
  // oldest unsure event's create time, less 5 s of clock skew): one found there was delivered
  // (counted acked), one not there is spilled and re-sent. If a topic cannot be read, its
  // unsure events are re-sent all (a consumer may read some twice; event ids tell).
  void Reconcile() {
    if (unsure.empty()) return;
    std::map<std::string, std::vector<Unsure*>> by_topic;
    for (Unsure& u : unsure) by_topic[u.topic].push_back(&u);
    uint64_t found = 0, missing = 0, unread = 0;
    for (auto& [topic, events] : by_topic) {
      int64_t oldest_ms = std::numeric_limits<int64_t>::max();
      std::unordered_map<std::string_view, Unsure*> wanted;
      for (Unsure* u : events) {
        wanted.emplace(u->payload, u);
        if (u->timestamp_ms >= 0) oldest_ms = std::min(oldest_ms, u->timestamp_ms);
      }
      const auto acked_it = acked_offsets.find(topic);
      std::optional<std::vector<int64_t>> by_time;  // asked once, when first needed
      auto from = [&](int32_t p, kafka::Consumer& c) -> int64_t {
        if (acked_it != acked_offsets.end() && static_cast<size_t>(p) < acked_it->second.size() &&
            acked_it->second[static_cast<size_t>(p)] >= 0) {
          return acked_it->second[static_cast<size_t>(p)] + 1;
        }
        if (oldest_ms == std::numeric_limits<int64_t>::max()) return kafka::kOffsetBeginning;
        if (!by_time) {
          auto n = c.PartitionCount(topic, kReconcileTimeoutMs);
          auto offsets = n.ok() ? c.OffsetsForTime(topic, *n, oldest_ms - 5000, kReconcileTimeoutMs)
                                : Result<std::vector<int64_t>>(n.status());
          by_time = offsets.ok() ? *offsets : std::vector<int64_t>{};
        }
        // Unanswered (or the embedded cluster, which keeps no time index): from the first.
        if (static_cast<size_t>(p) >= by_time->size()) return kafka::kOffsetBeginning;
        const int64_t o = (*by_time)[static_cast<size_t>(p)];
        return o == kafka::kOffsetEnd && acked_it == acked_offsets.end() ? kafka::kOffsetBeginning
                                                                         : o;
      };
      const Status st = kafka::ReadTopicFrom(
          {.bootstrap = bootstrap, .properties = cfg.properties, .thread_nice = cfg.thread_nice},
          topic, from, kReconcileTimeoutMs, [&](int32_t, int64_t, std::string_view payload) {
            auto it = wanted.find(payload);
            if (it != wanted.end()) {
              it->second->outbox_id = Found(it->second->outbox_id);
              wanted.erase(it);
            }
          });
      if (!st.ok()) {
        unread += wanted.size();
        log::Get("kafka").warn(
            "cannot look for the failed producer's {} unacknowledged events on {} ({}): all "
            "re-sent, a consumer may read some twice",
            wanted.size(), topic, st.message());
      }
      found += events.size() - wanted.size();
      for (auto& [payload, u] : wanted) {
        Spill(u->topic, u->key, u->payload.data(), u->payload.size());
        Settle(u->outbox_id);
        if (st.ok()) ++missing;
      }
    }
    unsure.clear();
    log::Get("kafka").warn(
        "the failed producer's unacknowledged events: {} found on their topics (delivered), {} "
        "not there and {} not looked for re-sent",
        found, missing, unread);
  }

  // An unsure event found on its topic: delivered.
  std::string* Found(std::string* outbox_id) {
    acked.fetch_add(1);
    found_after_restart.fetch_add(1);
    Settle(outbox_id);
    return nullptr;
  }
  // Produce, or else the spill file (or the dead-letter file when no broker will take it).
  void ProduceOrSpill(const std::string& topic, const std::string& key, const char* payload,
                      size_t len, std::string* outbox_id) {
    const Status st = Produce(topic, key, payload, len, outbox_id);
    if (st.ok()) return;
    if (st.code() == Status::Code::kInvalidArgument) {
      DeadLetter(st.message(), topic, key, payload, len);
    } else {
      Spill(topic, key, payload, len);
    }
    Settle(outbox_id);
  }

  // A delivery report (on the poller thread): acked, or spilled when it failed for good (or
  // dead-lettered when it can never be delivered).
  void Delivered(const kafka::Delivery& d) {
    if (d.ok) {
      acked.fetch_add(1);
      if (d.partition >= 0 && d.offset >= 0) {
        auto it = acked_offsets.find(d.topic);
        if (it == acked_offsets.end()) it = acked_offsets.emplace(d.topic, 0).first;
        auto& offsets = it->second;
        if (offsets.size() <= static_cast<size_t>(d.partition)) {
          offsets.resize(static_cast<size_t>(d.partition) + 1, -1);
        }
        offsets[static_cast<size_t>(d.partition)] =
            std::max(offsets[static_cast<size_t>(d.partition)], d.offset);
      }
      if (acked_file != nullptr && d.topic == cfg.events_topic) {
        std::fprintf(acked_file, "%.*s\t%.*s\n", static_cast<int>(d.key.size()), d.key.data(),
                     static_cast<int>(d.payload.size()), d.payload.data());
      }
    } else if (d.permanent) {
      DeadLetter(std::string(d.error), std::string(d.topic), std::string(d.key), d.payload.data(),
                 d.payload.size());
    } else if (purging) {
      unsure.push_back({std::string(d.topic), std::string(d.key), std::string(d.payload),
                        d.timestamp_ms, static_cast<std::string*>(d.opaque)});
      return;  // settled once reconciled
    } else {
      Spill(std::string(d.topic), std::string(d.key), d.payload.data(), d.payload.size());
    }
    Settle(static_cast<std::string*>(d.opaque));
  }

  // The re-send in progress (the delivery thread's alone): the spill file moved aside and read
  // on from where the last pass stopped, so that a long spill is read once, never rewritten.
  std::ifstream resend_in;
  std::string resend_line;   // read, not yet taken by the producer (its queue had no room)
  bool resend_held = false;  // resend_line waits for the next pass

  // Re-sends the spill file while the brokers take events. A pass fills the producer's queue up
  // to half, leaving the other half to new events, so that the backlog drains at the brokers'
  // pace while the bid path goes on logging. The file moved aside ("<spill>.resending", also
  // what a crash mid-resend leaves; sent whole again then, so a consumer may see an event
  // twice) goes before what spilled since. Returns whether a re-send is in progress.
  bool ResendSpill() {
    const int64_t room_to = std::max<int64_t>(1, cfg.queue_max_messages / 2);
    if (!resend_in.is_open() && spill_pending.load() == 0) return false;
    if (producer->QueueLength() >= room_to) return true;
    const std::string resending = cfg.spill_path + ".resending";
    if (!resend_in.is_open()) {
      std::lock_guard<std::mutex> l(spill_mu);
      std::error_code ec;
      if (!std::filesystem::exists(resending)) {
        if (spill != nullptr) {
          std::fclose(spill);
          spill = nullptr;
        }
        std::filesystem::rename(cfg.spill_path, resending, ec);
        if (ec) return false;
      }
      resend_in.open(resending);
      if (!resend_in) return false;
    }
    while (producer->QueueLength() < room_to) {
      if (!resend_held && !std::getline(resend_in, resend_line)) {
        resend_in.close();
        resend_in.clear();
        std::error_code ec;
        std::filesystem::remove(resending, ec);
        return spill_pending.load() > 0;
      }
      resend_held = false;
      const std::string& line = resend_line;
      const size_t t1 = line.find('\t');
      const size_t t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
      if (t2 == std::string::npos) {  // a torn last line from a crash: nothing to send
        spill_pending.fetch_sub(1);
        continue;
      }
      const std::string topic = line.substr(0, t1), key = line.substr(t1 + 1, t2 - t1 - 1);
      const Status st = Produce(topic, key, line.data() + t2 + 1, line.size() - t2 - 1);
      if (st.ok()) {
        resent.fetch_add(1);
      } else if (st.code() == Status::Code::kInvalidArgument) {
        // Never sendable: out of the way, so the lines behind it still go.
        DeadLetter(st.message(), topic, key, line.data() + t2 + 1, line.size() - t2 - 1);
      } else {
        resend_held = true;  // no room after all: the same line on the next pass
        return true;
      }
      spill_pending.fetch_sub(1);
    }
    return true;
  }
};

EventLog::EventLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<EventLog>> EventLog::Open(const KafkaConfig& cfg) {
  auto impl = std::make_unique<Impl>();
  impl->cfg = cfg;
  impl->bootstrap = cfg.brokers;
  if (cfg.brokers.empty()) {
    return Status::InvalidArgument(std::string("kafka.brokers ") + kBrokersChoices);
  }
  if (cfg.brokers == kEmbeddedBrokers) {
    // An in-process mock cluster speaking the real protocol over TCP.
    RTB_ASSIGN_OR_RETURN(impl->mock, kafka::MockCluster::Start(cfg.mock_brokers, cfg.thread_nice));
    impl->bootstrap = impl->mock->bootstrap();
    for (const auto& t : {cfg.events_topic, cfg.policy_topic}) {
      RTB_RETURN_IF_ERROR(impl->mock->CreateTopic(t, t == cfg.policy_topic ? 1 : cfg.partitions,
                                                  std::min(3, cfg.mock_brokers)));
    }
    log::Get("kafka").info(
        "embedded Kafka (mock cluster, {} brokers) at {} (kafka.brokers: embedded: in memory, "
        "every event is lost when this process ends)",
        cfg.mock_brokers, impl->bootstrap);
  } else if (cfg.start_check_ms > 0) {
    // A wrong address, refused credentials or a missing topic is a configuration error: said
    // at start, in one line. Once serving, an outage is ridden out (the spill file).
    RTB_RETURN_IF_ERROR(kafka::CheckTopics(
        {.bootstrap = cfg.brokers, .properties = cfg.properties, .thread_nice = cfg.thread_nice},
        {cfg.events_topic, cfg.policy_topic}, cfg.start_check_ms));
  }
  kafka::Producer::Options po;
  po.bootstrap = impl->bootstrap;
  po.thread_nice = cfg.thread_nice;
  po.properties = {{"enable.idempotence", "true"},
                   {"message.timeout.ms", "0"},  // never give up: spill only on queue full
                   {"queue.buffering.max.messages", std::to_string(cfg.queue_max_messages)},
                   {"linger.ms", std::to_string(cfg.linger_ms)},
                   {"compression.type", cfg.compression}};
  po.properties.insert(po.properties.end(), cfg.properties.begin(), cfg.properties.end());
  Impl* raw_impl = impl.get();
  po.on_delivery = [raw_impl](const kafka::Delivery& d) { raw_impl->Delivered(d); };
  po.statistics_interval_ms = cfg.stats_interval_ms;
  po.on_statistics = [raw_impl](const kafka::Statistics& s) {
    std::lock_guard<std::mutex> l(raw_impl->stats_mu);
    raw_impl->stats = s;
  };
  impl->producer_options = po;
  RTB_ASSIGN_OR_RETURN(impl->producer, kafka::Producer::Create(std::move(po)));
  impl->current.store(impl->producer.get(), std::memory_order_release);

  std::error_code ec;
  const auto parent = std::filesystem::path(cfg.spill_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  // A spill left by an earlier run (or a crash mid-resend) is re-sent first.
  for (const auto& f : {cfg.spill_path + ".resending", cfg.spill_path}) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) impl->spill_pending.fetch_add(1);
  }
  // Dead letters are never re-sent on their own (one too large for any broker would come back
  // at every start): the operator re-sends them once the cause is fixed.
  {
    std::ifstream dead(cfg.spill_path + ".dead");
    std::string line;
    uint64_t waiting = 0;
    while (std::getline(dead, line)) ++waiting;
    if (waiting > 0) {
      log::Get("events").warn(
          "{} events Kafka refused for good wait in {}.dead (reason, topic, key, event per "
          "line); to send them again once the cause is fixed, stop the bidder, append `cut "
          "-f2-` of that file to {} and remove it",
          waiting, cfg.spill_path, cfg.spill_path);
    }
  }
  if (const char* acks = std::getenv("RTB_EVENTS_ACKED_FILE"); acks != nullptr && *acks) {
    impl->acked_file = std::fopen(acks, "a");
  }
  Impl* raw = impl.get();
  impl->poller = std::thread([raw] {
    // Delivery reports come in bursts (a batch of events per broker per linger); served at
    // the Kafka threads' priority, a burst never holds a core that a request thread wants.
    kafka::NiceThisThread("rtb-kafka-dr", raw->cfg.thread_nice);
    bool resending = false;
    while (!raw->stop.load()) {
      raw->producer->Poll(resending ? 5 : 100);  // serves delivery reports
      if (raw->ReplaceIfFatal()) continue;
      resending = raw->ResendSpill();
    }
  });
  return std::unique_ptr<EventLog>(new EventLog(std::move(impl)));
}

EventLog::~EventLog() { Shutdown(); }

void EventLog::Log(const Event& e) {
  impl_->logged.fetch_add(1);
  const std::string payload = EncodeEvent(e);
  LogRaw(impl_->cfg.events_topic, e.Key(), payload);
}

void EventLog::LogRaw(const std::string& topic, const std::string& key,
                      const std::string& payload) {
  impl_->ProduceOrSpill(topic, key, payload.data(), payload.size(), nullptr);
}

void EventLog::LogOutboxed(const std::string& topic, const std::string& key,
                           const std::string& payload, const std::string& outbox_id) {
  impl_->logged.fetch_add(1);
  impl_->ProduceOrSpill(topic, key, payload.data(), payload.size(), new std::string(outbox_id));
}

void EventLog::RaiseFatalErrorForTest(const std::string& reason) {
  impl_->current.load(std::memory_order_acquire)->RaiseFatalErrorForTest(reason);
}

void EventLog::SetSettledHook(std::function<void(const std::string&)> settled) {
  impl_->settled = std::move(settled);
}

const std::string& EventLog::events_topic() const { return impl_->cfg.events_topic; }

EventLogStats EventLog::Stats() const {
  EventLogStats s;
  s.logged = impl_->logged.load();
  s.acked = impl_->acked.load();
  s.spilled = impl_->spilled.load();
  s.resent = impl_->resent.load();
  s.dropped = impl_->dropped.load();
  const kafka::Producer* p = impl_->current.load(std::memory_order_acquire);
  s.queued = p != nullptr ? static_cast<uint64_t>(p->QueueLength()) : 0;
  s.producer_restarts = impl_->producer_restarts.load();
  s.found_after_restart = impl_->found_after_restart.load();
  s.spill_pending = impl_->spill_pending.load();
  s.dead_lettered = impl_->dead_lettered.load();
  return s;
}

const std::string& EventLog::bootstrap() const { return impl_->bootstrap; }
kafka::MockCluster* EventLog::mock_cluster() const { return impl_->mock.get(); }

std::optional<kafka::Statistics> EventLog::ProducerStatistics() const {
  std::lock_guard<std::mutex> l(impl_->stats_mu);
  return impl_->stats;
}

void EventLog::Shutdown() {
  std::lock_guard<std::mutex> l(impl_->shut_mu);
  if (impl_->shut) return;
  impl_->shut = true;
  impl_->stop.store(true);
  if (impl_->poller.joinable()) impl_->poller.join();
  if (impl_->producer != nullptr) {
    (void)impl_->producer->Flush(impl_->cfg.flush_timeout_ms);
    // Whatever could not be delivered in time goes to the spill file (delivery reports with
    // a purge error, served by the polls below).
    impl_->producer->PurgeAll();
    for (int i = 0; i < 10 && impl_->producer->QueueLength() > 0; ++i) impl_->producer->Poll(50);
    impl_->producer->Poll(0);
    const uint64_t left = static_cast<uint64_t>(impl_->producer->QueueLength());
    impl_->current.store(nullptr);
    impl_->producer.reset();
    impl_->retired.clear();
    if (left > 0) {
      log::Get("kafka").error("{} events still queued at shutdown were lost", left);
      impl_->dropped.fetch_add(left);
    }
  }
  {
    std::lock_guard<std::mutex> sl(impl_->spill_mu);
    if (impl_->spill != nullptr) {
      std::fclose(impl_->spill);
      impl_->spill = nullptr;
    }
  }
  if (impl_->acked_file != nullptr) std::fclose(std::exchange(impl_->acked_file, nullptr));
  impl_->mock.reset();
}

}  // namespace rtb::bidder
