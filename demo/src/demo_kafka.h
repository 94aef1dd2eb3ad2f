// `rtb demo` on a real Kafka cluster (--brokers): the run's own topics, made for it and deleted
// after it, the learner config that names them, and the client properties of
// --kafka-properties. Without --brokers the demo runs the embedded mock cluster, a new one each
// run, with the default topic names.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/kafka/kafka.h"

namespace rtb::demo {

// The topics one run reads and writes. On the embedded cluster, the defaults. A real cluster
// keeps earlier runs' records, and the processes read some of their topics from the beginning
// (the learner its events and step markers on a fresh state, the bidders the tables and the
// lease holdings, the coordinator its holdings and who serves the market): a run there has its
// own topics, each default name with ".<run id>" appended, created before the run and deleted
// after it, and its own learner group (online.group_id: its claim, its tables' transactions).
struct RunTopics {
  std::string run;  // "" on the embedded cluster; else e.g. "demo-20261124T065619-4242"
  std::string events = "rtb.events";
  std::string policy = "rtb.policy";
  std::string clock = "rtb.clock";
  std::string lease_requests = "rtb.lease.requests";
  std::string lease_grants = "rtb.lease.grants";
  std::string notices = "rtb.notices";
  int events_partitions = 8;  // on a real cluster (the embedded one: the demo's own number)

  // The run's topics on a real cluster: the defaults with ".<run>" appended.
  static RunTopics ForRun(const std::string& run);
  // The coordinators' topic (`rtb budget`'s default for the grants topic).
  std::string coordinators() const { return lease_grants + ".coordinators"; }
  // The learner's group (online.group_id): its own for a run on a real cluster.
  std::string learner_group() const { return run.empty() ? "rtb-learner" : "rtb-learner." + run; }
  // The topics to create on a real cluster (the lease topics, 4 partitions each, only when
  // bidders share budgets), as kafka::EngineTopics makes them.
  std::vector<kafka::NewTopic> ToCreate(bool leases) const;
};

// A run id for the topics' names: "demo-<UTC time>-<process id>".
std::string NewRunId();

// librdkafka properties from a file of NAME=VALUE lines (blank lines and # comments skipped;
// the format of `kcat -F` and of scripts/kafka_cluster.sh's sasl-client.properties). Errors
// name the file and line; a property the engine sets itself (kafka::EngineOwnedProperty) is
// refused, and no value is ever quoted.
Result<kafka::Properties> ReadKafkaPropertiesFile(const std::string& path);

// The properties as a bidder config's kafka.properties value (a YAML flow mapping).
std::string PropertiesYaml(const kafka::Properties& properties);

// The run's topics on a real cluster, created by CreateRunTopics and deleted when this is
// destroyed (best effort: a failure is one line on stderr, naming the topics left behind).
class RunTopicsOnCluster {
 public:
  RunTopicsOnCluster(kafka::ClientOptions client, std::vector<std::string> names)
      : client_(std::move(client)), names_(std::move(names)) {}
  ~RunTopicsOnCluster();
  RunTopicsOnCluster(const RunTopicsOnCluster&) = delete;
  RunTopicsOnCluster& operator=(const RunTopicsOnCluster&) = delete;

 private:
  kafka::ClientOptions client_;
  std::vector<std::string> names_;
};

// Creates the run's topics within timeout_ms (errors: one line, the first topic the brokers
// refused or that no broker answered).
Result<std::unique_ptr<RunTopicsOnCluster>> CreateRunTopics(const kafka::ClientOptions& client,
                                                            const RunTopics& topics, bool leases,
                                                            int timeout_ms);

// The learner config of a run on a real cluster, written to `out`: `learner_config` with the
// run's topics and learner group (section online) and its world, `sim_path`, made absolute
// (the copy lives in another folder).
Status WriteRunLearnerConfig(const std::string& learner_config, const std::string& sim_path,
                             const RunTopics& topics, const std::string& out);

}  // namespace rtb::demo
