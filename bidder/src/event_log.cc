#include "rtb/bidder/event_log.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace rtb::bidder {

struct EventLog::Impl {
  KafkaConfig cfg;
  rd_kafka_t* mock_host = nullptr;
  rd_kafka_mock_cluster_t* mock = nullptr;
  rd_kafka_t* producer = nullptr;
  std::string bootstrap;
  std::thread poller;
  std::atomic<bool> stop{false};
  bool shut = false;
  std::mutex shut_mu;

  std::mutex spill_mu;    // guards spill file writes and the resend swap
  FILE* spill = nullptr;  // GUARDED_BY(spill_mu)
  std::atomic<uint64_t> logged{0}, acked{0}, spilled{0}, resent{0}, dropped{0}, spill_pending{0};
  std::function<void(const std::string&)> settled;  // outbox hook (set before traffic)

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
    if (ok) {
      spilled.fetch_add(1);
      spill_pending.fetch_add(1);
    } else {
      dropped.fetch_add(1);
    }
  }

  // Hands one message to librdkafka; false when its queue is full. On success librdkafka owns
  // outbox_id until the delivery report.
  bool Produce(const std::string& topic, const std::string& key, const char* payload, size_t len,
               std::string* outbox_id = nullptr) {
    const rd_kafka_resp_err_t err = rd_kafka_producev(
        producer, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(key.data(), key.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(payload), len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_OPAQUE(outbox_id), RD_KAFKA_V_END);
    return err == RD_KAFKA_RESP_ERR_NO_ERROR;
  }

  // Re-sends the spill file once the producer's queue has drained (the brokers are back).
  void ResendSpill() {
    if (spill_pending.load() == 0) return;
    if (rd_kafka_outq_len(producer) > cfg.queue_max_messages / 4) return;
    const std::string resending = cfg.spill_path + ".resending";
    {
      std::lock_guard<std::mutex> l(spill_mu);
      if (spill != nullptr) {
        std::fclose(spill);
        spill = nullptr;
      }
      std::error_code ec;
      if (!std::filesystem::exists(resending)) {
        std::filesystem::rename(cfg.spill_path, resending, ec);
        if (ec) return;
      }
      spill_pending.store(0);
    }
    std::ifstream in(resending);
    std::string line;
    std::vector<std::string> rest;
    bool full = false;
    while (std::getline(in, line)) {
      const size_t t1 = line.find('\t');
      const size_t t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
      if (t2 == std::string::npos) continue;  // a torn last line from a crash: nothing to send
      const std::string topic = line.substr(0, t1), key = line.substr(t1 + 1, t2 - t1 - 1);
      if (!full && Produce(topic, key, line.data() + t2 + 1, line.size() - t2 - 1)) {
        resent.fetch_add(1);
      } else {
        full = true;
        rest.push_back(line);
      }
    }
    in.close();
    std::error_code ec;
    std::filesystem::remove(resending, ec);
    for (const auto& r : rest) {
      // Back into the spill file: not counted twice as spilled.
      std::lock_guard<std::mutex> l(spill_mu);
      if (spill == nullptr) spill = std::fopen(cfg.spill_path.c_str(), "a");
      if (spill != nullptr && std::fprintf(spill, "%s\n", r.c_str()) > 0) {
        spill_pending.fetch_add(1);
      } else {
        dropped.fetch_add(1);
      }
    }
    std::lock_guard<std::mutex> l(spill_mu);
    if (spill != nullptr) std::fflush(spill);
  }
};

namespace {

void DeliveryReport(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* impl = static_cast<EventLog::Impl*>(opaque);
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    impl->acked.fetch_add(1);
  } else {
    const std::string topic = rd_kafka_topic_name(m->rkt);
    const std::string key(static_cast<const char*>(m->key), m->key_len);
    impl->Spill(topic, key, static_cast<const char*>(m->payload), m->len);
  }
  impl->Settle(static_cast<std::string*>(m->_private));
}

// kafka.thread_nice: every thread librdkafka starts for a client (main, broker, and the mock
// cluster's) lowers its own priority; on Linux a nice value applies per thread.
rd_kafka_resp_err_t OnThreadStart(rd_kafka_t*, rd_kafka_thread_type_t, const char*, void* opaque) {
  LowerThisThread(nullptr, static_cast<int>(reinterpret_cast<intptr_t>(opaque)));
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t OnNew(rd_kafka_t* rk, const rd_kafka_conf_t*, void* opaque, char*, size_t) {
  return rd_kafka_interceptor_add_on_thread_start(rk, "rtb.thread_nice", OnThreadStart, opaque);
}

bool Set(rd_kafka_conf_t* conf, const char* k, const std::string& v, std::string* err) {
  char errstr[512];
  if (rd_kafka_conf_set(conf, k, v.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    *err = std::string(k) + ": " + errstr;
    return false;
  }
  return true;
}

}  // namespace

void LowerThisThread(const char* name, int nice) {
  if (name != nullptr) ::pthread_setname_np(::pthread_self(), name);
  if (nice <= 0) return;
  // SCHED_BATCH: a waking Kafka thread never preempts a running request thread; it runs on an
  // idle core or at the next scheduler tick. Best effort, like the nice value.
  sched_param none{};
  ::sched_setscheduler(0, SCHED_BATCH, &none);
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);
}

void LowerThreadPriority(rd_kafka_conf_t* conf, int nice) {
  if (nice <= 0) return;
  rd_kafka_conf_interceptor_add_on_new(conf, "rtb.thread_nice", OnNew,
                                       reinterpret_cast<void*>(static_cast<intptr_t>(nice)));
}

EventLog::EventLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<EventLog>> EventLog::Open(const KafkaConfig& cfg) {
  auto impl = std::make_unique<Impl>();
  impl->cfg = cfg;
  std::string err;
  char errstr[512];
  impl->bootstrap = cfg.brokers;
  if (cfg.brokers.empty()) {
    // Embedded default: an in-process mock cluster speaking the real protocol over TCP.
    rd_kafka_conf_t* hc = rd_kafka_conf_new();
    Set(hc, "log_level", "3", &err);
    LowerThreadPriority(hc, cfg.thread_nice);
    impl->mock_host = rd_kafka_new(RD_KAFKA_PRODUCER, hc, errstr, sizeof errstr);
    if (impl->mock_host == nullptr)
      return Status::Unavailable(std::string("kafka mock host: ") + errstr);
    impl->mock = rd_kafka_mock_cluster_new(impl->mock_host, cfg.mock_brokers);
    if (impl->mock == nullptr) return Status::Unavailable("cannot start the kafka mock cluster");
    impl->bootstrap = rd_kafka_mock_cluster_bootstraps(impl->mock);
    for (const auto& t : {cfg.events_topic, cfg.policy_topic}) {
      rd_kafka_mock_topic_create(impl->mock, t.c_str(), t == cfg.policy_topic ? 1 : cfg.partitions,
                                 std::min(3, cfg.mock_brokers));
    }
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (!Set(conf, "bootstrap.servers", impl->bootstrap, &err) ||
      !Set(conf, "enable.idempotence", "true", &err) ||
      !Set(conf, "message.timeout.ms", "0", &err) ||  // never give up: spill only on queue full
      !Set(conf, "queue.buffering.max.messages", std::to_string(cfg.queue_max_messages), &err) ||
      !Set(conf, "linger.ms", std::to_string(cfg.linger_ms), &err) ||
      !Set(conf, "compression.type", cfg.compression, &err) || !Set(conf, "log_level", "3", &err)) {
    rd_kafka_conf_destroy(conf);
    return Status::InvalidArgument("kafka config " + err);
  }
  LowerThreadPriority(conf, cfg.thread_nice);
  rd_kafka_conf_set_dr_msg_cb(conf, DeliveryReport);
  rd_kafka_conf_set_opaque(conf, impl.get());
  impl->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (impl->producer == nullptr)
    return Status::Unavailable(std::string("kafka producer: ") + errstr);

  std::error_code ec;
  const auto parent = std::filesystem::path(cfg.spill_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  // A spill left by an earlier run (or a crash mid-resend) is re-sent first.
  for (const auto& f : {cfg.spill_path + ".resending", cfg.spill_path}) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) impl->spill_pending.fetch_add(1);
  }
  Impl* raw = impl.get();
  impl->poller = std::thread([raw] {
    // Delivery reports come in bursts (a batch of events per broker per linger); served at
    // the Kafka threads' priority, a burst never holds a core that a request thread wants.
    LowerThisThread("rtb-kafka-dr", raw->cfg.thread_nice);
    int ticks = 0;
    while (!raw->stop.load()) {
      rd_kafka_poll(raw->producer, 100);  // serves delivery reports
      if (++ticks % 5 == 0) raw->ResendSpill();
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
  if (!impl_->Produce(topic, key, payload.data(), payload.size())) {
    impl_->Spill(topic, key, payload.data(), payload.size());
  }
}

void EventLog::LogOutboxed(const std::string& topic, const std::string& key,
                           const std::string& payload, const std::string& outbox_id) {
  impl_->logged.fetch_add(1);
  auto* id = new std::string(outbox_id);
  if (!impl_->Produce(topic, key, payload.data(), payload.size(), id)) {
    impl_->Spill(topic, key, payload.data(), payload.size());
    impl_->Settle(id);
  }
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
  s.queued = impl_->producer ? static_cast<uint64_t>(rd_kafka_outq_len(impl_->producer)) : 0;
  s.spill_pending = impl_->spill_pending.load();
  return s;
}

const std::string& EventLog::bootstrap() const { return impl_->bootstrap; }
void* EventLog::mock_cluster() const { return impl_->mock; }

void EventLog::Shutdown() {
  std::lock_guard<std::mutex> l(impl_->shut_mu);
  if (impl_->shut) return;
  impl_->shut = true;
  impl_->stop.store(true);
  if (impl_->poller.joinable()) impl_->poller.join();
  if (impl_->producer != nullptr) {
    rd_kafka_flush(impl_->producer, impl_->cfg.flush_timeout_ms);
    // Whatever could not be delivered in time goes to the spill file (delivery reports with
    // a purge error, served by the polls below).
    rd_kafka_purge(impl_->producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    for (int i = 0; i < 10 && rd_kafka_outq_len(impl_->producer) > 0; ++i) {
      rd_kafka_poll(impl_->producer, 50);
    }
    rd_kafka_poll(impl_->producer, 0);
    rd_kafka_destroy(impl_->producer);
    impl_->producer = nullptr;
  }
  {
    std::lock_guard<std::mutex> sl(impl_->spill_mu);
    if (impl_->spill != nullptr) {
      std::fclose(impl_->spill);
      impl_->spill = nullptr;
    }
  }
  if (impl_->mock != nullptr) {
    rd_kafka_mock_cluster_destroy(impl_->mock);
    impl_->mock = nullptr;
  }
  if (impl_->mock_host != nullptr) {
    rd_kafka_destroy(impl_->mock_host);
    impl_->mock_host = nullptr;
  }
}

}  // namespace rtb::bidder
