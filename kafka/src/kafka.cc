#include "rtb/kafka/kafka.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "rtb/core/log.h"

namespace rtb::kafka {

static_assert(kOffsetNone == RD_KAFKA_OFFSET_INVALID);

namespace {

// kafka thread_nice: every thread librdkafka starts for a client (main, brokers, the mock
// cluster's) sets its own priority; on Linux a nice value applies per thread.
rd_kafka_resp_err_t OnThreadStart(rd_kafka_t*, rd_kafka_thread_type_t, const char*, void* opaque) {
  NiceThisThread(nullptr, static_cast<int>(reinterpret_cast<intptr_t>(opaque)));
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t OnNew(rd_kafka_t* rk, const rd_kafka_conf_t*, void* opaque, char*, size_t) {
  return rd_kafka_interceptor_add_on_thread_start(rk, "rtb.thread_nice", OnThreadStart, opaque);
}

// librdkafka's log lines go to the process logger (syslog levels: 0-3 error, 4 warn, 5-6 info).
void LogLine(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  auto& lg = log::Get("kafka");
  if (level <= 3) {
    lg.error("{}: {}", fac, buf);
  } else if (level == 4) {
    lg.warn("{}: {}", fac, buf);
  } else if (level <= 6) {
    lg.info("{}: {}", fac, buf);
  } else {
    lg.debug("{}: {}", fac, buf);
  }
}

// A conf with the client options applied; nullptr and *err on a refused property.
// Errors that retrying the same message cannot cure.
bool Permanent(rd_kafka_resp_err_t e) {
  return e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE || e == RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE ||
         e == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE || e == RD_KAFKA_RESP_ERR_INVALID_MSG;
}

rd_kafka_conf_t* MakeConf(const ClientOptions& o, Status* err) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char errstr[512];
  Properties all;
  if (!o.bootstrap.empty()) all.emplace_back("bootstrap.servers", o.bootstrap);
  all.emplace_back("log_level", std::to_string(o.log_level));
  // Back within a second of the brokers' return (librdkafka's backoff grows to 10 s): a bidder
  // whose lease reports cannot reach the coordinator spends nothing new until they do.
  all.emplace_back("reconnect.backoff.max.ms", "1000");
  all.insert(all.end(), o.properties.begin(), o.properties.end());
  for (const auto& [k, v] : all) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      // The name and librdkafka's reason, never the value: it may be a password under a
      // misspelled name (librdkafka names a bad value of a known property itself).
      *err = Status::InvalidArgument("kafka property " + k + ": " + errstr);
      return nullptr;
    }
  }
  rd_kafka_conf_set_log_cb(conf, LogLine);
  if (o.thread_nice != 0) {
    rd_kafka_conf_interceptor_add_on_new(
        conf, "rtb.thread_nice", OnNew,
        reinterpret_cast<void*>(static_cast<intptr_t>(o.thread_nice)));
  }
  return conf;
}

rd_kafka_topic_partition_list_t* ToList(const std::vector<TopicPartition>& parts) {
  rd_kafka_topic_partition_list_t* l =
      rd_kafka_topic_partition_list_new(static_cast<int>(parts.size()));
  for (const TopicPartition& p : parts) {
    rd_kafka_topic_partition_t* e =
        rd_kafka_topic_partition_list_add(l, p.topic.c_str(), p.partition);
    e->offset = p.offset;
    if (!p.metadata.empty()) {  // freed by rd_kafka_topic_partition_list_destroy
      e->metadata = std::malloc(p.metadata.size());
      std::memcpy(e->metadata, p.metadata.data(), p.metadata.size());
      e->metadata_size = p.metadata.size();
    }
  }
  return l;
}

std::vector<TopicPartition> FromList(const rd_kafka_topic_partition_list_t* l) {
  std::vector<TopicPartition> v;
  for (int i = 0; i < l->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = l->elems[i];
    v.push_back({p.topic, p.partition, p.offset,
                 p.metadata != nullptr
                     ? std::string(static_cast<const char*>(p.metadata), p.metadata_size)
                     : std::string()});
  }
  return v;
}

// A transactional call's error as the Status the header promises (and the error released).
Status TxnStatus(rd_kafka_error_t* e, const char* what) {
  if (e == nullptr) return Status::Ok();
  const std::string why = std::string("kafka ") + what + ": " + rd_kafka_error_string(e);
  const Status s = rd_kafka_error_is_fatal(e)       ? Status::Internal(why)
                   : rd_kafka_error_is_retriable(e) ? Status::Unavailable(why)
                   : rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR__NOT_CONFIGURED
                       ? Status::InvalidArgument(why)
                       : Status::FailedPrecondition(why);  // requires abort, or out of turn
  rd_kafka_error_destroy(e);
  return s;
}

Result<std::pair<int64_t, int64_t>> QueryWatermarks(rd_kafka_t* rk, const std::string& topic,
                                                    int32_t partition, int timeout_ms) {
  int64_t lo = 0, hi = 0;
  const rd_kafka_resp_err_t e =
      rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &lo, &hi, timeout_ms);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable("watermarks of " + topic + "/" + std::to_string(partition) + ": " +
                               rd_kafka_err2str(e));
  }
  return std::make_pair(lo, hi);
}

}  // namespace

bool EngineOwnedProperty(std::string_view name) {
  static constexpr std::string_view kOwned[] = {"bootstrap.servers",
                                                "metadata.broker.list",
                                                "group.id",
                                                "enable.auto.commit",
                                                "enable.auto.offset.store",
                                                "auto.offset.reset",
                                                "enable.partition.eof",
                                                "enable.idempotence",
                                                "message.timeout.ms",
                                                "delivery.timeout.ms",
                                                "queue.buffering.max.messages",
                                                "linger.ms",
                                                "queue.buffering.max.ms",
                                                "compression.type",
                                                "compression.codec",
                                                "session.timeout.ms",
                                                "heartbeat.interval.ms",
                                                "partition.assignment.strategy",
                                                "transactional.id",
                                                "isolation.level",
                                                "statistics.interval.ms"};
  return std::find(std::begin(kOwned), std::end(kOwned), name) != std::end(kOwned);
}

void NiceThisThread(const char* name, int nice) {
  if (name != nullptr) ::pthread_setname_np(::pthread_self(), name);
  if (nice < 0) {
    // Above the others: needs CAP_SYS_NICE (root); without it the thread stays as it is.
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);
    return;
  }
  if (nice == 0) return;
  // SCHED_BATCH: a waking Kafka thread never preempts a running request thread; it runs on an
  // idle core or at the next scheduler tick. Best effort, like the nice value.
  sched_param none{};
  ::sched_setscheduler(0, SCHED_BATCH, &none);
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);
}

// ---- Message ----

Message& Message::operator=(Message&& o) noexcept {
  if (this != &o) {
    if (m_ != nullptr) rd_kafka_message_destroy(m_);
    m_ = std::exchange(o.m_, nullptr);
  }
  return *this;
}
Message::~Message() {
  if (m_ != nullptr) rd_kafka_message_destroy(m_);
}
bool Message::ok() const { return m_->err == RD_KAFKA_RESP_ERR_NO_ERROR; }
bool Message::eof() const { return m_->err == RD_KAFKA_RESP_ERR__PARTITION_EOF; }
std::string Message::error() const { return ok() ? "" : rd_kafka_message_errstr(m_); }
std::string Message::topic() const { return m_->rkt ? rd_kafka_topic_name(m_->rkt) : ""; }
int32_t Message::partition() const { return m_->partition; }
int64_t Message::offset() const { return m_->offset; }
std::string_view Message::key() const {
  return {static_cast<const char*>(m_->key), m_->key != nullptr ? m_->key_len : 0};
}
std::string_view Message::payload() const {
  return {static_cast<const char*>(m_->payload), m_->payload != nullptr ? m_->len : 0};
}

// ---- Producer ----

struct Producer::State {
  std::function<void(const Delivery&)> on_delivery;
  std::function<void(const Statistics&)> on_statistics;
  log::RateLimit bad_statistics{1, std::chrono::minutes(10)};
};

namespace {
void DeliveryReport(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  const auto& fn = static_cast<Producer::State*>(opaque)->on_delivery;
  if (!fn) return;
  Delivery d;
  d.ok = m->err == RD_KAFKA_RESP_ERR_NO_ERROR;
  if (!d.ok) d.error = rd_kafka_err2str(m->err);
  d.permanent = !d.ok && Permanent(m->err);
  d.topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "";
  d.key = {static_cast<const char*>(m->key), m->key != nullptr ? m->key_len : 0};
  d.payload = {static_cast<const char*>(m->payload), m->payload != nullptr ? m->len : 0};
  d.opaque = m->_private;
  d.partition = m->partition;
  d.offset = d.ok ? m->offset : -1;
  rd_kafka_timestamp_type_t type;
  d.timestamp_ms = rd_kafka_message_timestamp(m, &type);
  fn(d);
}

// librdkafka's statistics (statistics.interval.ms), from rd_kafka_poll on the polling thread.
int StatisticsReport(rd_kafka_t*, char* json, size_t len, void* opaque) {
  auto* st = static_cast<Producer::State*>(opaque);
  Result<Statistics> stats = ParseStatistics(std::string_view(json, len));
  uint64_t skipped = 0;
  if (stats.ok()) {
    st->on_statistics(*stats);
  } else if (st->bad_statistics.Allow(&skipped)) {
    log::Get("kafka").warn("librdkafka statistics skipped: {} ({} more since)",
                           stats.status().message(), skipped);
  }
  return 0;  // librdkafka frees json
}
}  // namespace

Result<std::unique_ptr<Producer>> Producer::Create(Options opt) {
  if (!opt.transactional_id.empty()) {
    opt.properties.emplace_back("transactional.id", opt.transactional_id);
  }
  Status err;
  rd_kafka_conf_t* conf = MakeConf(opt, &err);
  if (conf == nullptr) return err;
  std::unique_ptr<Producer> p(new Producer());
  p->state_ = std::make_unique<State>();
  p->state_->on_delivery = std::move(opt.on_delivery);
  p->state_->on_statistics = std::move(opt.on_statistics);
  rd_kafka_conf_set_dr_msg_cb(conf, DeliveryReport);
  if (opt.statistics_interval_ms > 0 && p->state_->on_statistics) {
    char errstr[512];
    if (rd_kafka_conf_set(conf, "statistics.interval.ms",
                          std::to_string(opt.statistics_interval_ms).c_str(), errstr,
                          sizeof errstr) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::InvalidArgument(std::string("kafka statistics interval: ") + errstr);
    }
    rd_kafka_conf_set_stats_cb(conf, StatisticsReport);
  }
  rd_kafka_conf_set_opaque(conf, p->state_.get());
  char errstr[512];
  p->rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (p->rk_ == nullptr) return Status::Unavailable(std::string("kafka producer: ") + errstr);
  return p;
}

Producer::~Producer() {
  if (rk_ != nullptr) rd_kafka_destroy(rk_);
}

Status Producer::Produce(const std::string& topic, int32_t partition, std::string_view key,
                         std::string_view payload, void* opaque) {
  const rd_kafka_resp_err_t e = rd_kafka_producev(
      rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_KEY(key.data(), key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(payload.data()), payload.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    const std::string why = "produce to " + topic + ": " + rd_kafka_err2str(e);
    return Permanent(e) ? Status::InvalidArgument(why) : Status::Unavailable(why);
  }
  return Status::Ok();
}

int Producer::Poll(int timeout_ms) { return rd_kafka_poll(rk_, timeout_ms); }

Status Producer::Flush(int timeout_ms) {
  const rd_kafka_resp_err_t e = rd_kafka_flush(rk_, timeout_ms);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable(std::string("kafka flush: ") + rd_kafka_err2str(e));
  }
  return Status::Ok();
}

void Producer::PurgeAll() {
  rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
}

int64_t Producer::QueueLength() const { return rd_kafka_outq_len(rk_); }

Result<std::pair<int64_t, int64_t>> Producer::Watermarks(const std::string& topic,
                                                         int32_t partition, int timeout_ms) {
  return QueryWatermarks(rk_, topic, partition, timeout_ms);
}

Status Producer::InitTransactions(int timeout_ms) {
  return TxnStatus(rd_kafka_init_transactions(rk_, timeout_ms), "init transactions");
}
Status Producer::BeginTransaction() {
  return TxnStatus(rd_kafka_begin_transaction(rk_), "begin transaction");
}
Status Producer::CommitTransaction(int timeout_ms) {
  return TxnStatus(rd_kafka_commit_transaction(rk_, timeout_ms), "commit transaction");
}
Status Producer::AbortTransaction(int timeout_ms) {
  return TxnStatus(rd_kafka_abort_transaction(rk_, timeout_ms), "abort transaction");
}

bool Producer::Fenced() const {
  char why[256];
  const rd_kafka_resp_err_t e = rd_kafka_fatal_error(rk_, why, sizeof why);
  return e == RD_KAFKA_RESP_ERR__FENCED || e == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
         e == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
}

std::string Producer::FatalError() const {
  char why[512];
  const rd_kafka_resp_err_t e = rd_kafka_fatal_error(rk_, why, sizeof why);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return std::string(rd_kafka_err2name(e)) + ": " + why;
}

void Producer::RaiseFatalErrorForTest(const std::string& reason) {
  rd_kafka_test_fatal_error(rk_, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, reason.c_str());
}

// ---- Consumer ----

struct Consumer::State {
  std::function<void(std::vector<TopicPartition>&)> on_assign;
  std::function<void(const std::vector<TopicPartition>&)> on_revoke;
  std::function<void(int, const std::string&)> on_error;
};

namespace {
void Rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
               void* opaque) {
  auto* st = static_cast<Consumer::State*>(opaque);
  std::vector<TopicPartition> v = FromList(parts);
  if (err != RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    rd_kafka_assign(rk, nullptr);
    if (st->on_revoke) st->on_revoke(v);
    return;
  }
  if (st->on_assign) st->on_assign(v);
  rd_kafka_topic_partition_list_t* l = ToList(v);
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
}
void OnError(rd_kafka_t*, int err, const char* reason, void* opaque) {
  static_cast<Consumer::State*>(opaque)->on_error(err, reason);
}
}  // namespace

Result<std::unique_ptr<Consumer>> Consumer::Create(Options opt) {
  if (opt.group_id.empty()) return Status::InvalidArgument("kafka consumer: group_id is empty");
  // Commits are the caller's to ask for. librdkafka's default auto-commit also commits on close,
  // and with the brokers down that close waits for the session timeout (45 s by default): a
  // bidder told to stop during a Kafka outage took that long.
  Properties props = {{"group.id", opt.group_id}, {"enable.auto.commit", "false"}};
  props.insert(props.end(), opt.properties.begin(), opt.properties.end());
  opt.properties = std::move(props);
  Status err;
  rd_kafka_conf_t* conf = MakeConf(opt, &err);
  if (conf == nullptr) return err;
  std::unique_ptr<Consumer> c(new Consumer());
  c->state_ = std::make_unique<State>();
  c->state_->on_assign = std::move(opt.on_assign);
  c->state_->on_revoke = std::move(opt.on_revoke);
  c->state_->on_error = std::move(opt.on_error);
  if (c->state_->on_error) rd_kafka_conf_set_error_cb(conf, OnError);
  rd_kafka_conf_set_rebalance_cb(conf, Rebalance);
  rd_kafka_conf_set_opaque(conf, c->state_.get());
  char errstr[512];
  c->rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (c->rk_ == nullptr) return Status::Unavailable(std::string("kafka consumer: ") + errstr);
  rd_kafka_poll_set_consumer(c->rk_);
  return c;
}

Consumer::~Consumer() {
  if (rk_ == nullptr) return;
  rd_kafka_consumer_close(rk_);
  rd_kafka_destroy(rk_);
}

Status Consumer::Assign(const std::vector<TopicPartition>& parts) {
  rd_kafka_topic_partition_list_t* l = ToList(parts);
  const rd_kafka_resp_err_t e = rd_kafka_assign(rk_, l);
  rd_kafka_topic_partition_list_destroy(l);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable(std::string("kafka assign: ") + rd_kafka_err2str(e));
  }
  return Status::Ok();
}

Status Consumer::AddAssignment(const std::vector<TopicPartition>& parts) {
  rd_kafka_topic_partition_list_t* l = ToList(parts);
  rd_kafka_error_t* e = rd_kafka_incremental_assign(rk_, l);
  rd_kafka_topic_partition_list_destroy(l);
  if (e != nullptr) {
    const std::string why = rd_kafka_error_string(e);
    rd_kafka_error_destroy(e);
    return Status::Unavailable("kafka assign: " + why);
  }
  return Status::Ok();
}

Status Consumer::Subscribe(const std::vector<std::string>& topics) {
  rd_kafka_topic_partition_list_t* l =
      rd_kafka_topic_partition_list_new(static_cast<int>(topics.size()));
  for (const auto& t : topics)
    rd_kafka_topic_partition_list_add(l, t.c_str(), RD_KAFKA_PARTITION_UA);
  const rd_kafka_resp_err_t e = rd_kafka_subscribe(rk_, l);
  rd_kafka_topic_partition_list_destroy(l);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable(std::string("kafka subscribe: ") + rd_kafka_err2str(e));
  }
  return Status::Ok();
}

std::optional<Message> Consumer::Poll(int timeout_ms) {
  rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, timeout_ms);
  if (m == nullptr) return std::nullopt;
  return Message(m);
}

Status Consumer::Commit(const std::vector<TopicPartition>& offsets, bool async) {
  rd_kafka_topic_partition_list_t* l = ToList(offsets);
  const rd_kafka_resp_err_t e = rd_kafka_commit(rk_, l, async ? 1 : 0);
  rd_kafka_topic_partition_list_destroy(l);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable(std::string("kafka commit: ") + rd_kafka_err2str(e));
  }
  return Status::Ok();
}

Result<std::vector<TopicPartition>> Consumer::Committed(const std::vector<TopicPartition>& parts,
                                                        int timeout_ms) {
  rd_kafka_topic_partition_list_t* l = ToList(parts);
  const rd_kafka_resp_err_t e = rd_kafka_committed(rk_, l, timeout_ms);
  std::vector<TopicPartition> out = FromList(l);
  rd_kafka_resp_err_t part_err = RD_KAFKA_RESP_ERR_NO_ERROR;
  for (int i = 0; i < l->cnt && part_err == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
    part_err = l->elems[i].err;
  }
  rd_kafka_topic_partition_list_destroy(l);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR || part_err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable(std::string("kafka committed offsets: ") +
                               rd_kafka_err2str(e != RD_KAFKA_RESP_ERR_NO_ERROR ? e : part_err));
  }
  return out;
}

Result<int> Consumer::PartitionCount(const std::string& topic, int timeout_ms) {
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t me = rd_kafka_metadata(rk_, 0, t, &md, timeout_ms);
  rd_kafka_topic_destroy(t);
  if (me != RD_KAFKA_RESP_ERR_NO_ERROR || md == nullptr || md->topic_cnt != 1 ||
      md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    const std::string why = me != RD_KAFKA_RESP_ERR_NO_ERROR ? rd_kafka_err2str(me)
                            : md != nullptr && md->topic_cnt == 1
                                ? rd_kafka_err2str(md->topics[0].err)
                                : "no metadata";
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    return Status::Unavailable("topic " + topic + ": " + why);
  }
  const int n = md->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(md);
  return n;
}

Result<std::pair<int64_t, int64_t>> Consumer::Watermarks(const std::string& topic,
                                                         int32_t partition, int timeout_ms) {
  return QueryWatermarks(rk_, topic, partition, timeout_ms);
}

Result<std::vector<int64_t>> Consumer::OffsetsForTime(const std::string& topic, int partitions,
                                                      int64_t time_ms, int timeout_ms) {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int32_t p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = time_ms;
  }
  const rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk_, list, timeout_ms);
  std::vector<int64_t> offsets(static_cast<size_t>(partitions), kOffsetEnd);
  for (int i = 0; e == RD_KAFKA_RESP_ERR_NO_ERROR && i < list->cnt; ++i) {
    const auto& tp = list->elems[i];
    if (tp.err == RD_KAFKA_RESP_ERR_NO_ERROR && tp.partition >= 0 && tp.partition < partitions) {
      offsets[static_cast<size_t>(tp.partition)] = tp.offset;
    }
  }
  rd_kafka_topic_partition_list_destroy(list);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable("offsets of " + topic + " by time: " + rd_kafka_err2str(e));
  }
  return offsets;
}

Result<std::map<std::string, std::string>> Consumer::TopicConfig(const std::string& topic,
                                                                 int timeout_ms) {
  // One deadline for the metadata and the request. The embedded cluster (its cluster id is
  // "mockCluster...") has no DescribeConfigs: the request would only wait out its timeout.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto left_ms = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(1, left.count()));
  };
  char* id = rd_kafka_clusterid(rk_, timeout_ms);
  if (id == nullptr) return Status::Unavailable("topic " + topic + ": no cluster id in time");
  const bool embedded = std::string_view(id).starts_with("mockCluster");
  rd_kafka_mem_free(rk_, id);
  if (embedded) {
    return Status::FailedPrecondition("topic " + topic +
                                      ": the embedded cluster describes no configuration");
  }
  rd_kafka_ConfigResource_t* resource =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  rd_kafka_AdminOptions_t* options =
      rd_kafka_AdminOptions_new(rk_, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  char errstr[256];
  rd_kafka_AdminOptions_set_request_timeout(options, left_ms(), errstr, sizeof errstr);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk_);
  rd_kafka_DescribeConfigs(rk_, &resource, 1, options, queue);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, left_ms());
  Result<std::map<std::string, std::string>> out =
      Status::Unavailable("topic " + topic + ": no configuration described in time");
  if (ev != nullptr && rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    out = Status::Unavailable("topic " + topic + ": " + rd_kafka_event_error_string(ev));
  } else if (ev != nullptr) {
    const rd_kafka_DescribeConfigs_result_t* result = rd_kafka_event_DescribeConfigs_result(ev);
    size_t n = 0;
    const rd_kafka_ConfigResource_t** described =
        result == nullptr ? nullptr : rd_kafka_DescribeConfigs_result_resources(result, &n);
    if (n != 1) {
      out = Status::Unavailable("topic " + topic + ": no configuration described");
    } else if (rd_kafka_ConfigResource_error(described[0]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      out = Status::Unavailable("topic " + topic + ": " +
                                rd_kafka_ConfigResource_error_string(described[0]));
    } else {
      std::map<std::string, std::string> config;
      size_t entries = 0;
      const rd_kafka_ConfigEntry_t** e = rd_kafka_ConfigResource_configs(described[0], &entries);
      for (size_t i = 0; i < entries; ++i) {
        if (const char* v = rd_kafka_ConfigEntry_value(e[i]); v != nullptr) {
          config[rd_kafka_ConfigEntry_name(e[i])] = v;
        }
      }
      out = std::move(config);
    }
  }
  if (ev != nullptr) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(queue);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ConfigResource_destroy(resource);
  return out;
}

// ---- MockCluster ----

Result<std::unique_ptr<MockCluster>> MockCluster::Start(int brokers, int thread_nice) {
  ClientOptions o;
  o.thread_nice = thread_nice;
  Status err;
  rd_kafka_conf_t* conf = MakeConf(o, &err);
  if (conf == nullptr) return err;
  std::unique_ptr<MockCluster> m(new MockCluster());
  char errstr[512];
  m->host_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (m->host_ == nullptr) return Status::Unavailable(std::string("kafka mock host: ") + errstr);
  m->mock_ = rd_kafka_mock_cluster_new(m->host_, brokers);
  if (m->mock_ == nullptr) return Status::Unavailable("cannot start the kafka mock cluster");
  m->bootstrap_ = rd_kafka_mock_cluster_bootstraps(m->mock_);
  return m;
}

MockCluster::~MockCluster() {
  if (mock_ != nullptr) rd_kafka_mock_cluster_destroy(mock_);
  if (host_ != nullptr) rd_kafka_destroy(host_);
}

Status MockCluster::CreateTopic(const std::string& topic, int partitions, int replication) {
  const rd_kafka_resp_err_t e =
      rd_kafka_mock_topic_create(mock_, topic.c_str(), partitions, replication);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable("mock topic " + topic + ": " + rd_kafka_err2str(e));
  }
  return Status::Ok();
}

void MockCluster::SetBrokerDown(int broker) { rd_kafka_mock_broker_set_down(mock_, broker); }
void MockCluster::SetBrokerUp(int broker) { rd_kafka_mock_broker_set_up(mock_, broker); }
void MockCluster::DelayNextProduceAnswers(int broker, int count, int delay_ms) {
  constexpr int16_t kProduceApiKey = 0;  // the Kafka protocol's ProduceRequest
  for (int i = 0; i < count; ++i) {
    (void)rd_kafka_mock_broker_push_request_error_rtts(mock_, broker, kProduceApiKey, 1,
                                                       RD_KAFKA_RESP_ERR_NO_ERROR, delay_ms);
  }
}
Status MockCluster::SetGroupCoordinator(const std::string& group, int broker) {
  const rd_kafka_resp_err_t e =
      rd_kafka_mock_coordinator_set(mock_, "group", group.c_str(), broker);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::InvalidArgument("mock cluster: coordinator of group " + group + ": " +
                                   rd_kafka_err2str(e));
  }
  return Status::Ok();
}
Status MockCluster::SetPartitionLeader(const std::string& topic, int32_t partition, int broker) {
  const rd_kafka_resp_err_t e =
      rd_kafka_mock_partition_set_leader(mock_, topic.c_str(), partition, broker);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::InvalidArgument("mock cluster: leader of " + topic + " [" +
                                   std::to_string(partition) + "]: " + rd_kafka_err2str(e));
  }
  return Status::Ok();
}

void MockCluster::FailNextProduceRequests(int count) {
  constexpr rd_kafka_resp_err_t kFailover[] = {
      RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
      RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT};
  std::vector<rd_kafka_resp_err_t> errors;
  for (int i = 0; i < count; ++i) errors.push_back(kFailover[i % 4]);
  constexpr int16_t kProduceApiKey = 0;  // the Kafka protocol's ProduceRequest
  rd_kafka_mock_push_request_errors_array(mock_, kProduceApiKey, errors.size(), errors.data());
}

void MockCluster::FenceNextTransactionCommits(int count) {
  const std::vector<rd_kafka_resp_err_t> errors(static_cast<size_t>(count),
                                                RD_KAFKA_RESP_ERR_PRODUCER_FENCED);
  constexpr int16_t kEndTxnApiKey = 26;  // the Kafka protocol's EndTxnRequest
  rd_kafka_mock_push_request_errors_array(mock_, kEndTxnApiKey, errors.size(), errors.data());
}

void MockCluster::RefuseNextProduceRequests(int count) {
  const std::vector<rd_kafka_resp_err_t> errors(static_cast<size_t>(count),
                                                RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
  constexpr int16_t kProduceApiKey = 0;
  rd_kafka_mock_push_request_errors_array(mock_, kProduceApiKey, errors.size(), errors.data());
}

// ---- ReadWholeTopic, TopicTail ----

namespace {

// What librdkafka said of a reader's brokers while it opened (OnError, on the opening thread).
struct OpenErrors {
  std::mutex mu;
  std::string refused;  // the brokers refused the credentials or the TLS handshake
  std::string down;     // every broker is down (a wrong address, no broker listening)
};
// How long a reader waits for a broker while every one it knows of is down.
constexpr auto kNoBrokerBound = std::chrono::seconds(5);

// A consumer that reads `topic` by assignment (group `group`, no commits, these properties),
// and the topic's partition count. quiet: its failures are the Status alone (no librdkafka log
// line below critical); refused credentials or TLS fail at once, every broker down for 5 s fails.
Result<std::pair<std::unique_ptr<Consumer>, int>> OpenTopicReader(
    const ClientOptions& client, const std::string& topic, const std::string& group,
    std::vector<std::pair<std::string, std::string>> properties, int timeout_ms,
    bool quiet = false) {
  Consumer::Options o;
  static_cast<ClientOptions&>(o) = client;
  o.group_id = group;
  for (auto& p : properties) o.properties.push_back(std::move(p));
  auto errors = std::make_shared<OpenErrors>();
  if (quiet) {
    o.log_level = std::min(o.log_level, 2);
    o.on_error = [errors](int code, const std::string& reason) {
      std::lock_guard<std::mutex> l(errors->mu);
      if (code == RD_KAFKA_RESP_ERR__AUTHENTICATION || code == RD_KAFKA_RESP_ERR__SSL) {
        errors->refused = reason;
      } else if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        errors->down = reason;
      }
    };
  }
  RTB_ASSIGN_OR_RETURN(auto c, Consumer::Create(std::move(o)));
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    // Asked in slices, so that what the brokers said in between can end the wait.
    auto n = c->PartitionCount(
        topic, quiet ? static_cast<int>(std::clamp<int64_t>(left.count(), 1, 500)) : timeout_ms);
    if (n.ok()) return std::make_pair(std::move(c), *n);
    const bool local = n.status().message().find("Local: ") != std::string::npos;
    if (!quiet || !local || std::chrono::steady_clock::now() >= deadline) {
      return Status::Unavailable(n.status().message() + " at " + client.bootstrap);
    }
    (void)c->Poll(0);  // serves OnError
    std::lock_guard<std::mutex> l(errors->mu);
    if (!errors->refused.empty()) {
      return Status::Unavailable("the brokers at " + client.bootstrap +
                                 " refused the connection: " + errors->refused);
    }
    if (!errors->down.empty() && std::chrono::steady_clock::now() - start >= kNoBrokerBound) {
      return Status::Unavailable("no broker answers at " + client.bootstrap + ": " + errors->down);
    }
  }
}

}  // namespace

Status CheckTopics(const ClientOptions& client, const std::vector<std::string>& topics,
                   int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (const std::string& topic : topics) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto reader = OpenTopicReader(client, topic, "rtb-check-" + topic, {},
                                  static_cast<int>(std::max<int64_t>(1, left.count())), true);
    if (!reader.ok()) return reader.status();
  }
  return Status::Ok();
}

namespace {
// Reads the assigned partitions (`open`) to their ends; the bound is on silence.
Status ReadToEnds(Consumer& c, const std::string& topic, std::set<int32_t> open, int timeout_ms,
                  const std::function<void(int32_t, int64_t, std::string_view)>& fn) {
  // The bound is on silence, not on the whole read: a big topic on a busy machine takes as
  // long as it takes, a cluster that stops answering fails after timeout_ms.
  const auto bound = std::chrono::milliseconds(timeout_ms);
  auto deadline = std::chrono::steady_clock::now() + bound;
  while (!open.empty() && std::chrono::steady_clock::now() < deadline) {
    std::optional<Message> m = c.Poll(200);
    if (!m) continue;
    deadline = std::chrono::steady_clock::now() + bound;
    if (m->eof()) {
      open.erase(m->partition());
    } else if (m->ok()) {
      fn(m->partition(), m->offset(), m->payload());
    }
  }
  if (!open.empty()) {
    return Status::Unavailable("topic " + topic + ": " + std::to_string(open.size()) +
                               " partitions not read to the end: no message for " +
                               std::to_string(timeout_ms) + " ms");
  }
  return Status::Ok();
}

using Watermarks = Result<std::pair<int64_t, int64_t>>;
// Where to start reading a partition, given its watermarks (nullopt: not read), or an error.
using StartOf =
    std::function<Result<std::optional<int64_t>>(int32_t, Consumer&, const Watermarks&)>;

// Opens a quiet reader of `topic`, assigns each partition from start_of's offset and reads
// them to their ends.
Status ReadPartitions(const ClientOptions& client, const std::string& topic, int timeout_ms,
                      const StartOf& start_of,
                      const std::function<void(int32_t, int64_t, std::string_view)>& fn) {
  RTB_ASSIGN_OR_RETURN(auto reader,
                       OpenTopicReader(client, topic, "rtb-read-" + topic,
                                       {{"enable.partition.eof", "true"}}, timeout_ms, true));
  auto& [c, n] = reader;
  std::vector<TopicPartition> parts;
  std::set<int32_t> open;
  for (int32_t p = 0; p < n; ++p) {
    // Partitions with nothing to read give no EOF event before a message would: skipped.
    RTB_ASSIGN_OR_RETURN(const std::optional<int64_t> first,
                         start_of(p, *c, c->Watermarks(topic, p, timeout_ms)));
    if (!first) continue;
    parts.push_back({topic, p, *first});
    open.insert(p);
  }
  RTB_RETURN_IF_ERROR(c->Assign(parts));
  return ReadToEnds(*c, topic, std::move(open), timeout_ms, fn);
}
}  // namespace

Status ReadTopicFrom(const ClientOptions& client, const std::string& topic,
                     const std::function<int64_t(int32_t partition, Consumer&)>& from,
                     int timeout_ms,
                     const std::function<void(int32_t, int64_t, std::string_view)>& fn) {
  return ReadPartitions(
      client, topic, timeout_ms,
      [&](int32_t p, Consumer& c, const Watermarks& wm) -> Result<std::optional<int64_t>> {
        if (!wm.ok()) return wm.status();
        int64_t first = from(p, c);
        if (first == kOffsetBeginning || first < wm->first) first = wm->first;
        if (first == kOffsetEnd || first >= wm->second) return std::optional<int64_t>();
        return std::optional<int64_t>(first);
      },
      fn);
}

Status ReadWholeTopic(const ClientOptions& client, const std::string& topic, int timeout_ms,
                      const std::function<void(int32_t, int64_t, std::string_view)>& fn,
                      int64_t* not_retained) {
  if (not_retained != nullptr) *not_retained = 0;
  return ReadPartitions(
      client, topic, timeout_ms,
      [&](int32_t, Consumer&, const Watermarks& wm) -> Result<std::optional<int64_t>> {
        if (wm.ok() && not_retained != nullptr) *not_retained += wm->first;
        if (wm.ok() && wm->second <= wm->first) return std::optional<int64_t>();
        return std::optional<int64_t>(kOffsetBeginning);
      },
      fn);
}

struct TopicTail::State {
  std::unique_ptr<Consumer> consumer;
  std::string topic;
  Fn fn;
  std::vector<int64_t> next;  // per partition: the next offset expected
  std::atomic<int64_t> messages{0}, missed{0};
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;       // guarded by mu
  int finish_timeout = 0;  // > 0: read to the ends as of now (guarded by mu)
  bool done = false;       // guarded by mu
  Status result;           // guarded by mu
  std::thread thread;

  void Take(const Message& m) {
    const auto p = static_cast<size_t>(m.partition());
    if (p >= next.size()) return;
    if (m.offset() > next[p]) missed += m.offset() - next[p];
    if (m.offset() < next[p]) return;  // a repeat after a reconnect
    next[p] = m.offset() + 1;
    fn(m.partition(), m.offset(), m.payload());
    ++messages;
  }

  void Run() {
    std::vector<int64_t> ends;  // per partition, once finishing: the end offsets to reach
    std::chrono::steady_clock::time_point deadline;
    for (;;) {
      int finish = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop) return;
        finish = finish_timeout;
      }
      if (finish > 0 && ends.empty()) {
        deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(finish);
        for (size_t p = 0; p < next.size(); ++p) {
          auto wm = consumer->Watermarks(topic, static_cast<int32_t>(p), finish);
          if (!wm.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            result = wm.status();
            done = true;
            cv.notify_all();
            return;
          }
          ends.push_back(wm->second);
        }
      }
      if (!ends.empty()) {
        bool all = true;
        for (size_t p = 0; p < next.size(); ++p) all = all && next[p] >= ends[p];
        const bool late = std::chrono::steady_clock::now() >= deadline;
        if (all || late) {
          int behind = 0;
          for (size_t p = 0; p < next.size(); ++p) behind += next[p] < ends[p] ? 1 : 0;
          std::lock_guard<std::mutex> lock(mu);
          if (behind > 0) {
            result = Status::Unavailable("topic " + topic + ": " + std::to_string(behind) +
                                         " partitions not read to the end in time");
          }
          done = true;
          cv.notify_all();
          return;
        }
      }
      std::optional<Message> m = consumer->Poll(100);
      if (m && m->ok() && !m->eof()) Take(*m);
    }
  }
};

Result<std::unique_ptr<TopicTail>> TopicTail::Start(const ClientOptions& client,
                                                    const std::string& topic, int timeout_ms,
                                                    Fn fn) {
  // Fallen behind what the brokers keep: go on from the oldest they have (counted as missed).
  RTB_ASSIGN_OR_RETURN(auto reader,
                       OpenTopicReader(client, topic, "rtb-tail-" + topic,
                                       {{"auto.offset.reset", "earliest"}}, timeout_ms));
  auto& [c, n] = reader;
  std::vector<TopicPartition> parts;
  for (int32_t p = 0; p < n; ++p) parts.push_back({topic, p, kOffsetBeginning});
  RTB_RETURN_IF_ERROR(c->Assign(parts));
  std::unique_ptr<TopicTail> t(new TopicTail());
  t->state_ = std::make_unique<State>();
  State& s = *t->state_;
  s.consumer = std::move(c);
  s.topic = topic;
  s.fn = std::move(fn);
  s.next.assign(static_cast<size_t>(n), 0);
  s.thread = std::thread([&s] { s.Run(); });
  return t;
}

TopicTail::~TopicTail() {
  if (!state_) return;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  if (state_->thread.joinable()) state_->thread.join();
}

Status TopicTail::Finish(int timeout_ms) {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  s.finish_timeout = std::max(1, timeout_ms);
  // The thread gives up at its own deadline; wait a little longer than that for it.
  s.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms + 5000), [&] { return s.done; });
  const Status r = s.done ? s.result : Status::Unavailable("topic " + s.topic + ": tail stuck");
  s.stop = true;
  lock.unlock();
  if (s.thread.joinable()) s.thread.join();
  return r;
}

int64_t TopicTail::messages() const { return state_->messages.load(); }
int64_t TopicTail::missed() const { return state_->missed.load(); }

// ---- CreateTopics, DeleteTopics ----

namespace {

// What an admin client heard of its brokers (its error callback, served by rd_kafka_poll).
struct AdminErrors {
  std::string refused;  // the brokers refused the credentials or the TLS handshake
  std::string down;     // every broker is down (a wrong address, no broker listening)
};
void OnAdminError(rd_kafka_t*, int err, const char* reason, void* opaque) {
  auto* e = static_cast<AdminErrors*>(opaque);
  if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL) {
    e->refused = reason;
  } else if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
    e->down = reason;
  }
}

using AdminIssue = std::function<void(rd_kafka_t*, rd_kafka_AdminOptions_t*, rd_kafka_queue_t*)>;
// Reads the request's result event (its own error already checked); may use the client until
// the deadline.
using AdminResult =
    std::function<Status(rd_kafka_t*, rd_kafka_event_t*, std::chrono::steady_clock::time_point)>;

// One admin request on a client of its own, quiet (its failures are the Status alone): `issue`
// sends it with its result to the queue, `result` reads the answer. The wait ends at the answer,
// refused credentials or TLS (at once), every broker down for 5 s, or timeout_ms.
Status AdminRequest(const ClientOptions& client, rd_kafka_admin_op_t op, int timeout_ms,
                    const AdminIssue& issue, const AdminResult& result) {
  ClientOptions o = client;
  o.log_level = std::min(o.log_level, 2);
  Status err;
  rd_kafka_conf_t* conf = MakeConf(o, &err);
  if (conf == nullptr) return err;
  AdminErrors errors;
  rd_kafka_conf_set_error_cb(conf, OnAdminError);
  rd_kafka_conf_set_opaque(conf, &errors);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == nullptr) return Status::Unavailable(std::string("kafka admin client: ") + errstr);
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk, op);
  rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms, errstr, sizeof errstr);
  // The controller answers once the change is made, not once it is accepted.
  rd_kafka_AdminOptions_set_operation_timeout(options, timeout_ms, errstr, sizeof errstr);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  issue(rk, options, queue);
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeout_ms);
  Status out = Status::Unavailable("no answer from the brokers at " + client.bootstrap +
                                   " within " + std::to_string(timeout_ms) + " ms");
  for (;;) {
    if (rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, 200); ev != nullptr) {
      out = rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR
                ? Status::Unavailable("the brokers at " + client.bootstrap + ": " +
                                      rd_kafka_event_error_string(ev))
                : result(rk, ev, deadline);
      rd_kafka_event_destroy(ev);
      break;
    }
    rd_kafka_poll(rk, 0);  // serves OnAdminError
    const auto now = std::chrono::steady_clock::now();
    if (!errors.refused.empty()) {
      out = Status::Unavailable("the brokers at " + client.bootstrap +
                                " refused the connection: " + errors.refused);
      break;
    }
    if (!errors.down.empty() && now - start >= kNoBrokerBound) {
      out = Status::Unavailable("no broker answers at " + client.bootstrap + ": " + errors.down);
      break;
    }
    if (now >= deadline) break;
  }
  rd_kafka_queue_destroy(queue);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_destroy(rk);
  return out;
}

// The first topic of a CreateTopics or DeleteTopics result with an error (other than `ignore`).
Status TopicResults(const rd_kafka_topic_result_t** results, size_t n, const char* what,
                    const std::string& bootstrap, rd_kafka_resp_err_t ignore) {
  for (size_t i = 0; i < n; ++i) {
    const rd_kafka_resp_err_t e = rd_kafka_topic_result_error(results[i]);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR || e == ignore) continue;
    const char* why = rd_kafka_topic_result_error_string(results[i]);
    return Status::Unavailable(std::string("cannot ") + what + " topic " +
                               rd_kafka_topic_result_name(results[i]) + " at " + bootstrap + ": " +
                               (why != nullptr ? why : rd_kafka_err2str(e)));
  }
  return Status::Ok();
}

// Waits until the brokers' metadata lists `topic` with its partitions (a topic just created may
// not be in every broker's metadata yet).
Status AwaitTopicMetadata(rd_kafka_t* rk, const std::string& topic,
                          std::chrono::steady_clock::time_point deadline) {
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  Status out =
      Status::Unavailable("topic " + topic + ": created, but not in the brokers' metadata in time");
  while (std::chrono::steady_clock::now() < deadline) {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 1000);
    const bool listed = e == RD_KAFKA_RESP_ERR_NO_ERROR && md != nullptr && md->topic_cnt == 1 &&
                        md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                        md->topics[0].partition_cnt > 0;
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    if (listed) {
      out = Status::Ok();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  rd_kafka_topic_destroy(t);
  return out;
}

}  // namespace

Status CreateTopics(const ClientOptions& client, const std::vector<NewTopic>& topics,
                    int timeout_ms) {
  std::vector<rd_kafka_NewTopic_t*> specs;
  Status bad;
  char errstr[512];
  for (const NewTopic& t : topics) {
    rd_kafka_NewTopic_t* nt =
        rd_kafka_NewTopic_new(t.name.c_str(), t.partitions, -1, errstr, sizeof errstr);
    if (nt == nullptr) {
      bad = Status::InvalidArgument("topic " + t.name + ": " + errstr);
      break;
    }
    specs.push_back(nt);
    for (const auto& [k, v] : t.config) {
      if (rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        bad = Status::InvalidArgument("topic " + t.name + ": configuration " + k);
      }
    }
  }
  if (bad.ok()) {
    bad = AdminRequest(
        client, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout_ms,
        [&](rd_kafka_t* rk, rd_kafka_AdminOptions_t* options, rd_kafka_queue_t* queue) {
          rd_kafka_CreateTopics(rk, specs.data(), specs.size(), options, queue);
        },
        [&](rd_kafka_t* rk, rd_kafka_event_t* ev, std::chrono::steady_clock::time_point deadline) {
          const rd_kafka_CreateTopics_result_t* r = rd_kafka_event_CreateTopics_result(ev);
          size_t n = 0;
          const rd_kafka_topic_result_t** res =
              r == nullptr ? nullptr : rd_kafka_CreateTopics_result_topics(r, &n);
          RTB_RETURN_IF_ERROR(
              TopicResults(res, n, "create", client.bootstrap, RD_KAFKA_RESP_ERR_NO_ERROR));
          for (const NewTopic& t : topics) {
            RTB_RETURN_IF_ERROR(AwaitTopicMetadata(rk, t.name, deadline));
          }
          return Status::Ok();
        });
  }
  rd_kafka_NewTopic_destroy_array(specs.data(), specs.size());
  return bad;
}

Status DeleteTopics(const ClientOptions& client, const std::vector<std::string>& topics,
                    int timeout_ms) {
  std::vector<rd_kafka_DeleteTopic_t*> specs;
  for (const std::string& t : topics) specs.push_back(rd_kafka_DeleteTopic_new(t.c_str()));
  const Status out = AdminRequest(
      client, RD_KAFKA_ADMIN_OP_DELETETOPICS, timeout_ms,
      [&](rd_kafka_t* rk, rd_kafka_AdminOptions_t* options, rd_kafka_queue_t* queue) {
        rd_kafka_DeleteTopics(rk, specs.data(), specs.size(), options, queue);
      },
      [&](rd_kafka_t*, rd_kafka_event_t* ev, std::chrono::steady_clock::time_point) {
        const rd_kafka_DeleteTopics_result_t* r = rd_kafka_event_DeleteTopics_result(ev);
        size_t n = 0;
        const rd_kafka_topic_result_t** res =
            r == nullptr ? nullptr : rd_kafka_DeleteTopics_result_topics(r, &n);
        return TopicResults(res, n, "delete", client.bootstrap,
                            RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
      });
  rd_kafka_DeleteTopic_destroy_array(specs.data(), specs.size());
  return out;
}

std::vector<NewTopic> EngineTopics(const EngineTopicNames& n, int events_partitions,
                                   int lease_partitions) {
  std::vector<NewTopic> out = {
      {n.events, events_partitions, {}}, {n.policy, 1, {}}, {n.clock, 1, {}}};
  if (!n.lease_requests.empty()) out.push_back({n.lease_requests, lease_partitions, {}});
  if (!n.lease_grants.empty()) {
    out.push_back({n.lease_grants,
                   lease_partitions,
                   {{"cleanup.policy", "compact"}, {"min.compaction.lag.ms", "172800000"}}});
  }
  if (!n.notices.empty()) out.push_back({n.notices, lease_partitions, {}});
  if (!n.coordinators.empty()) out.push_back({n.coordinators, 1, {{"cleanup.policy", "compact"}}});
  return out;
}

}  // namespace rtb::kafka
