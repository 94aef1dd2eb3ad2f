// The engine's one seam to Kafka: RAII wrappers over librdkafka's C API, used by the bidder
// (event log, policy feed), the learner (events in, policies out), the exchange (step
// markers) and the command line (topic dumps, the embedded cluster). Nothing else in the
// engine calls librdkafka directly.
//
// - Every client is created from a bootstrap address plus librdkafka properties (its own names,
//   "linger.ms", "security.protocol", ...). Unknown properties are an error (Status), as an
//   unknown config key is.
// - Expected failures are values: Produce() on a full queue returns kUnavailable, and so on.
// - Clients own their handles: destroying a Producer does NOT flush (call Flush() first when
//   the queue matters); destroying a Consumer closes it. A Message must be released before the
//   Consumer that returned it (librdkafka hangs otherwise); Message is move-only and RAII.
// - Thread safety: Producer::Produce/Poll/Flush and Consumer::Poll follow librdkafka (a producer
//   may be used from any thread; one thread polls a consumer).
// - MockCluster is librdkafka's in-process mock cluster: the real Kafka protocol over TCP on
//   127.0.0.1 at random ports: the embedded cluster (kafka.brokers: embedded; in memory, its
//   events are lost when the process ends) and the tests' broker.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rtb/core/status.h"

struct rd_kafka_s;               // rd_kafka_t
struct rd_kafka_message_s;       // rd_kafka_message_t
struct rd_kafka_mock_cluster_s;  // rd_kafka_mock_cluster_t

namespace rtb::kafka {

// librdkafka properties in order; later entries override earlier ones.
using Properties = std::vector<std::pair<std::string, std::string>>;

// Special offsets (librdkafka's RD_KAFKA_OFFSET_*).
constexpr int64_t kOffsetBeginning = -2;
constexpr int64_t kOffsetEnd = -1;
// Any partition (the partitioner picks by key).
constexpr int32_t kAnyPartition = -1;

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = kOffsetBeginning;
  // Committed with the offset (Consumer::Commit) and read back with it (Consumer::Committed);
  // at most the brokers' offset.metadata.max.bytes (4096 by default).
  std::string metadata;
};

// Whether a librdkafka property is one the engine sets on its clients itself, or one a config
// key owns, so that a user's properties (kafka.properties, --kafka-property) may not set it:
// bootstrap.servers (kafka.brokers, --brokers), group ids, commits and offsets, idempotence, the
// delivery timeout, the producer queue and batching delay, compression, group session and
// heartbeat, partition assignment, transactional ids, the isolation level (the policy's readers
// read committed tables only), the statistics interval, and librdkafka's aliases of these.
bool EngineOwnedProperty(std::string_view name);

// No offset committed yet (librdkafka's RD_KAFKA_OFFSET_INVALID), as Consumer::Committed says.
constexpr int64_t kOffsetNone = -1001;

// Sets the calling thread's priority and names it (at most 15 characters; nullptr keeps the
// name). Best effort. nice > 0: lower (SCHED_BATCH and that nice value); 0: unchanged; < 0:
// higher (that nice value; needs CAP_SYS_NICE, else unchanged).
void NiceThisThread(const char* name, int nice);

// Common options of every client.
struct ClientOptions {
  std::string bootstrap;  // "host:port,..." (bootstrap.servers)
  Properties properties;  // extra librdkafka properties
  // > 0: every thread librdkafka starts for this client runs at this nice value with
  // SCHED_BATCH, so it never preempts the bid path's threads. < 0: at this (higher) nice
  // value, where the process may raise it (NiceThisThread).
  int thread_nice = 0;
  // librdkafka's own log level (syslog levels: 3 = errors only, 7 = debug); its lines go to
  // the process logger (rtb/core/log.h) under the component "kafka".
  int log_level = 3;
};

// One message returned by Consumer::Poll, owning librdkafka's message until destroyed.
class Message {
 public:
  explicit Message(rd_kafka_message_s* m) : m_(m) {}
  Message(Message&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  Message& operator=(Message&& o) noexcept;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  ~Message();

  bool ok() const;            // a message (not an error, not end-of-partition)
  bool eof() const;           // reached the end of a partition (enable.partition.eof)
  std::string error() const;  // why not ok, "" if ok
  std::string topic() const;
  int32_t partition() const;
  int64_t offset() const;
  std::string_view key() const;
  std::string_view payload() const;

 private:
  rd_kafka_message_s* m_;
};

// What a delivery report says about one produced message (on the thread that calls Poll).
struct Delivery {
  bool ok = false;
  std::string_view error;  // why not, when !ok
  // The brokers will never take this message (too large for them): retrying cannot help.
  bool permanent = false;
  std::string_view topic, key, payload;
  void* opaque = nullptr;     // the Produce() call's opaque
  int32_t partition = -1;     // where it went (-1: no partition chosen yet)
  int64_t offset = -1;        // its offset there when ok (-1: unknown)
  int64_t timestamp_ms = -1;  // its create time (set when produced), -1 if unknown
};

// librdkafka's statistics of one client (its STATISTICS.md): the figures the engine exports.
// Counters count since the client started; rtt is over librdkafka's last window.
struct Statistics {
  int64_t queue_messages = 0;  // msg_cnt: messages in the producer queue (not yet acknowledged)
  int64_t queue_bytes = 0;     // msg_size: their bytes
  struct Broker {
    std::string name;  // "host:port/<node id>" ("host:port/bootstrap" for a bootstrap address)
    int32_t node_id = -1;
    // INIT, DOWN, TRY_CONNECT, CONNECT, SSL_HANDSHAKE, AUTH_LEGACY, UP, UPDATE,
    // APIVERSION_QUERY, AUTH_HANDSHAKE, AUTH_REQ (UP: requests flow).
    std::string state;
    int64_t rtt_samples = 0;                 // rtt.cnt: round trips measured in the window
    int64_t rtt_p50_us = 0, rtt_p99_us = 0;  // round-trip time quantiles, microseconds
    int64_t tx_errors = 0;                   // txerrs: requests that failed to be sent
    int64_t tx_retries = 0;                  // txretries: requests sent again
    int64_t request_timeouts = 0;            // req_timeouts: requests that timed out
    int64_t connects = 0;                    // connection attempts that succeeded
    int64_t disconnects = 0;                 // connections lost or closed
  };
  std::vector<Broker> brokers;  // by name; librdkafka's internal and logical brokers left out
};

// Reads librdkafka's statistics JSON (the statistics callback's argument). Errors: not JSON, or
// not an object with librdkafka's fields of the right types (kInvalidArgument).
Result<Statistics> ParseStatistics(std::string_view json);

class Producer {
 public:
  struct Options : ClientOptions {
    // Called for every message's delivery report, from Poll()/Flush(). Optional.
    std::function<void(const Delivery&)> on_delivery;
    // Non-empty: a transactional producer (transactional.id), whose messages go out in the
    // transactions below, and only in them.
    std::string transactional_id;
    // > 0: librdkafka's statistics every this many ms (statistics.interval.ms), parsed
    // (ParseStatistics) and handed to on_statistics from Poll()/Flush(), on the polling thread;
    // statistics that do not parse are logged (kafka) and skipped. 0: none.
    int statistics_interval_ms = 0;
    std::function<void(const Statistics&)> on_statistics;
  };
  static Result<std::unique_ptr<Producer>> Create(Options opt);
  ~Producer();

  // Hands one message to librdkafka's queue (copied; never blocks). kUnavailable when the
  // queue is full or the client cannot take it now; kInvalidArgument when no broker ever will
  // (larger than message.max.bytes); `opaque` comes back in the delivery report.
  Status Produce(const std::string& topic, int32_t partition, std::string_view key,
                 std::string_view payload, void* opaque = nullptr);
  // Serves delivery reports for up to timeout_ms; returns how many were served.
  int Poll(int timeout_ms);
  // Waits until every queued message is delivered or timeout_ms passes.
  Status Flush(int timeout_ms);
  // Drops every queued and in-flight message: each gets a failed delivery report at the next
  // Poll (so an application can spill it).
  void PurgeAll();
  // Messages in librdkafka's queue (not yet acknowledged).
  int64_t QueueLength() const;
  // The low and high watermark offsets of a partition, asked of the brokers.
  Result<std::pair<int64_t, int64_t>> Watermarks(const std::string& topic, int32_t partition,
                                                 int timeout_ms);

  // ---- Transactions (Options::transactional_id) ----
  // Kafka's zombie fencing: InitTransactions gives this producer its transactional.id's next
  // epoch, and from then on the brokers refuse every older producer of that id (its open
  // transaction is aborted, its next commit fails as fenced); a read_committed consumer never
  // sees a message of a transaction that was aborted or fenced. librdkafka 2.0.2's embedded
  // cluster does neither: each producer gets an id of its own, and every reader is served
  // every message, committed or not (tests/kafka: Kafka.TheEmbeddedClusterNeitherFences...).
  //
  // Each call returns OK, or
  //   kUnavailable: not done within timeout_ms (brokers away): call it again;
  //   kFailedPrecondition: this transaction cannot commit, or the call came out of turn:
  //     AbortTransaction, then begin again;
  //   kInternal: this producer can do nothing more; Fenced() says whether that is because a
  //     newer producer with the same transactional.id took over;
  //   kInvalidArgument: the producer is not transactional.
  // A Produce() that fails inside a transaction: Fenced() too, else abort and begin again.
  // REQUIRES: InitTransactions once before the first BeginTransaction.
  Status InitTransactions(int timeout_ms);
  Status BeginTransaction();
  // Delivers the transaction's messages and commits them (blocks up to timeout_ms).
  Status CommitTransaction(int timeout_ms);
  Status AbortTransaction(int timeout_ms);
  // Whether a newer producer with this transactional.id fenced this one off (for good).
  bool Fenced() const;
  // An idempotent or transactional producer's fatal error ("" while none): this instance can
  // deliver nothing more (librdkafka fails what it holds and every Produce); a new one must
  // take over. librdkafka raises it when it cannot keep the idempotence guarantee (an out of
  // order sequence number after a broker lost acknowledged data, a producer id fenced).
  std::string FatalError() const;
  // Tests: raises a fatal error with `reason`, as librdkafka would (rd_kafka_test_fatal_error).
  void RaiseFatalErrorForTest(const std::string& reason);

  struct State;  // kafka.cc: the callbacks librdkafka calls

 private:
  Producer() = default;
  rd_kafka_s* rk_ = nullptr;
  std::unique_ptr<State> state_;
};

class Consumer {
 public:
  struct Options : ClientOptions {
    // Required by librdkafka even when partitions are assigned. Offsets are committed only by
    // Commit, unless a property turns enable.auto.commit on: such a consumer's close commits,
    // and with the brokers down waits for its session.timeout.ms.
    std::string group_id;
    // Group subscriptions only: called when the group assigns partitions, with their offsets
    // (the committed ones, or kOffsetBeginning); the callback may change the offsets before
    // they are assigned. Revocations unassign.
    std::function<void(std::vector<TopicPartition>&)> on_assign;
    // Group subscriptions only: called once the group has taken partitions back (a rebalance,
    // or this consumer's session lapsed), after they are unassigned.
    std::function<void(const std::vector<TopicPartition>&)> on_revoke;
    // Errors of the client as a whole (librdkafka's code and reason: the brokers refused the
    // credentials or the TLS handshake, every broker is down...), from Poll and the metadata
    // calls, instead of librdkafka's error line in the log. Optional.
    std::function<void(int code, const std::string& reason)> on_error;
  };
  static Result<std::unique_ptr<Consumer>> Create(Options opt);
  ~Consumer();  // closes the consumer (leaves the group)

  // Reads exactly these partitions from these offsets (no group join).
  Status Assign(const std::vector<TopicPartition>& parts);
  // Adds these partitions, from these offsets, to what Assign gave, the others reading on
  // where they are (a topic's partitions that appeared since).
  Status AddAssignment(const std::vector<TopicPartition>& parts);
  // Joins the group and reads the topics' partitions it is given (Options::on_assign).
  Status Subscribe(const std::vector<std::string>& topics);
  // The next message or error within timeout_ms, or nothing.
  std::optional<Message> Poll(int timeout_ms);
  // Commits these offsets (the next offset to read), with their metadata, for the group. A
  // consumer that reads by Assign commits as the group's only writer (no generation).
  Status Commit(const std::vector<TopicPartition>& offsets, bool async);
  // The group's committed offsets and metadata of these partitions (offset kOffsetNone: none),
  // asked of the group's coordinator within timeout_ms; kUnavailable if it did not answer.
  Result<std::vector<TopicPartition>> Committed(const std::vector<TopicPartition>& parts,
                                                int timeout_ms);
  // The number of partitions of a topic (kNotFound if it does not exist).
  Result<int> PartitionCount(const std::string& topic, int timeout_ms);
  Result<std::pair<int64_t, int64_t>> Watermarks(const std::string& topic, int32_t partition,
                                                 int timeout_ms);
  // Per partition 0..partitions-1: the offset of its first message written at or after
  // time_ms (create time), or kOffsetEnd when none was, asked within timeout_ms. The embedded
  // cluster keeps no time index: it answers kOffsetEnd.
  Result<std::vector<int64_t>> OffsetsForTime(const std::string& topic, int partitions,
                                              int64_t time_ms, int timeout_ms);
  // A topic's configuration as the brokers describe it (name -> value; a value the brokers
  // keep secret is absent), within timeout_ms in all. kFailedPrecondition on the embedded
  // cluster, which describes none; kUnavailable if the brokers did not answer in time or
  // refused (no DescribeConfigs permission).
  Result<std::map<std::string, std::string>> TopicConfig(const std::string& topic, int timeout_ms);

  struct State;  // kafka.cc: the callbacks librdkafka calls

 private:
  Consumer() = default;
  rd_kafka_s* rk_ = nullptr;
  std::unique_ptr<State> state_;
};

// librdkafka's in-process mock cluster.
class MockCluster {
 public:
  static Result<std::unique_ptr<MockCluster>> Start(int brokers, int thread_nice = 0);
  ~MockCluster();
  const std::string& bootstrap() const { return bootstrap_; }
  Status CreateTopic(const std::string& topic, int partitions, int replication);
  // Fault injection (tests): broker ids are 1..brokers.
  void SetBrokerDown(int broker);
  void SetBrokerUp(int broker);
  // The answers to `broker`'s next `count` produce requests are held back delay_ms; their
  // messages are appended at once: on the log, their acknowledgement still on the way.
  void DelayNextProduceAnswers(int broker, int count, int delay_ms);
  // Makes `broker` the leader of a topic's partition (the topic must exist), so that one
  // broker's fault takes down some partitions and not others.
  Status SetPartitionLeader(const std::string& topic, int32_t partition, int broker);
  // Makes `broker` the coordinator of a consumer group.
  Status SetGroupCoordinator(const std::string& group, int broker);
  // The next `count` produce requests, to any broker, are answered with retriable errors
  // instead of being appended (not leader, not enough replicas, leader not available, request
  // timed out, in turn), as during a broker's failover.
  void FailNextProduceRequests(int count);
  // The next `count` produce requests are refused for good (message too large), as by a broker
  // whose max.message.bytes is below the batch: the batch's messages are not delivered.
  void RefuseNextProduceRequests(int count);
  // The next `count` transaction commits (EndTxn requests, of any producer) are refused as
  // fenced (PRODUCER_FENCED), as a real cluster refuses an older producer's once a newer one
  // with its transactional.id has started (this cluster never fences by itself).
  void FenceNextTransactionCommits(int count);

 private:
  MockCluster() = default;
  rd_kafka_s* host_ = nullptr;
  rd_kafka_mock_cluster_s* mock_ = nullptr;
  std::string bootstrap_;
};

// Whether the brokers at client.bootstrap answer, take the credentials and hold every one of
// `topics`, within timeout_ms. Its failures are its Status alone, one line naming what is wrong:
// refused credentials or TLS at once, no broker answering for 5 s, a missing topic at once.
Status CheckTopics(const ClientOptions& client, const std::vector<std::string>& topics,
                   int timeout_ms);

// A topic for CreateTopics: its partitions and topic-level configuration ("cleanup.policy"...).
struct NewTopic {
  std::string name;
  int partitions = 1;
  Properties config;
};

// Creates topics on a real cluster (Kafka's admin API), each with the brokers' default
// replication factor and min.insync.replicas, within timeout_ms in all. Errors, one line: the
// first topic the brokers refused and why (one that exists already is refused), the brokers
// refusing the credentials or the TLS handshake (at once), no broker answering (after 5 s) or
// no answer within timeout_ms. The embedded cluster creates its topics with
// MockCluster::CreateTopic instead.
Status CreateTopics(const ClientOptions& client, const std::vector<NewTopic>& topics,
                    int timeout_ms);
// Deletes topics on a real cluster, within timeout_ms in all; one that does not exist is no
// error. Errors as CreateTopics's.
Status DeleteTopics(const ClientOptions& client, const std::vector<std::string>& topics,
                    int timeout_ms);

// The names of a market's topics (kafka/README.md, "Topics on your own cluster"); the lease
// topics' are empty when its bidders do not share budgets.
struct EngineTopicNames {
  std::string events, policy, clock;
  std::string lease_requests, lease_grants, notices, coordinators;
};
// Those topics as the table says to make them on a real cluster: the events topic with
// `events_partitions`, the policy and clock topics and the coordinators' with one, the other
// lease topics with `lease_partitions`, the grants topic compacted with a compaction lag of two
// days (a starting `rtb budget` refuses less), the coordinators' compacted.
std::vector<NewTopic> EngineTopics(const EngineTopicNames& names, int events_partitions,
                                   int lease_partitions);

// Reads a whole topic: every partition from the beginning to its end (the end-of-partition event,
// at or past its end as of the start; a partition empty at the start is not read). Its failures
// are its Status alone (librdkafka logs nothing below critical): brokers that refuse the
// credentials or the TLS handshake fail it at once, an address where no broker answers within
// 5 s, a missing topic at once.
// Calls fn(partition, offset, payload) for every message; stops at each partition's end, or
// once no message came for timeout_ms, with an error naming how many partitions were not
// finished (the bound is on silence: a big topic is read whole however long that takes).
// `not_retained` (if given) receives the number of messages the brokers no longer hold (the
// sum of the partitions' low watermarks): a dump is complete only when it is 0.
Status ReadWholeTopic(const ClientOptions& client, const std::string& topic, int timeout_ms,
                      const std::function<void(int32_t, int64_t, std::string_view)>& fn,
                      int64_t* not_retained = nullptr);

// Reads a topic from per-partition offsets to each partition's end as of the call:
// fn(partition, offset, payload) for each message. from(partition, reader) gives the first
// offset to read of each partition (kOffsetBeginning or one the brokers no longer hold: its
// first; kOffsetEnd: none); the bound, errors and quiet start are ReadWholeTopic's.
Status ReadTopicFrom(const ClientOptions& client, const std::string& topic,
                     const std::function<int64_t(int32_t partition, Consumer&)>& from,
                     int timeout_ms,
                     const std::function<void(int32_t, int64_t, std::string_view)>& fn);

// Reads every partition of a topic from the beginning as it is written, on a thread of its
// own, so that a dump holds every message even when the brokers keep less than a whole run
// (the embedded cluster keeps about 5 MB per partition). fn(partition, offset, payload) runs
// on that thread, in offset order per partition.
class TopicTail {
 public:
  using Fn = std::function<void(int32_t, int64_t, std::string_view)>;
  // The topic must exist. Errors: the brokers cannot be reached within timeout_ms.
  static Result<std::unique_ptr<TopicTail>> Start(const ClientOptions& client,
                                                  const std::string& topic, int timeout_ms, Fn fn);
  ~TopicTail();  // stops the thread (without reading to the end)

  // Reads on to every partition's end offset as of this call, then stops. Errors: not every
  // partition was read to its end within timeout_ms (the tail stops all the same).
  Status Finish(int timeout_ms);
  int64_t messages() const;  // messages given to fn
  // Messages the tail never saw because the brokers no longer held them when it got there
  // (the gaps between the offsets it read, and before the first): 0 for a complete dump.
  int64_t missed() const;

 private:
  TopicTail() = default;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace rtb::kafka
