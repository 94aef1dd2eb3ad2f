// `rtb kafka`: the embedded Kafka cluster (librdkafka's mock, rtb/kafka/kafka.h) as a process of
// its own, for several processes on one machine, with broker faults on signals; or, with
// --create-on / --delete-on, the markets' topics made or removed on a real cluster.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

namespace rtb::cli {

struct KafkaArgs {
  int brokers = 3;                   // mock brokers
  std::vector<std::string> markets;  // bidder configs whose topics are created
  // A real cluster's bootstrap servers: create (or delete) the markets' topics there and exit,
  // instead of running the embedded cluster.
  std::string create_on, delete_on;
  std::string clock_topic = "rtb.clock";  // the exchange's step markers (a real cluster only)
  // After the markets' kafka.properties (--kafka-property).
  std::vector<std::pair<std::string, std::string>> kafka_properties;
};

CLI::App* AddKafkaCommand(CLI::App* app, KafkaArgs* a);
int RunKafka(const KafkaArgs& a);

// `--kafka-property NAME=VALUE` (repeatable) on a command that reads or writes a real cluster:
// librdkafka properties (security.protocol, sasl.*, ssl.*...), after the command's own.
void AddKafkaPropertyOption(CLI::App* sub, std::vector<std::pair<std::string, std::string>>* out);

}  // namespace rtb::cli
