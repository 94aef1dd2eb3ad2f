// `rtb kafka`: the embedded Kafka cluster (librdkafka's mock, rtb/kafka/kafka.h) as a process of
// its own, for several processes on one machine, with broker faults on signals.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

namespace rtb::cli {

struct KafkaArgs {
  int brokers = 3;                   // mock brokers
  std::vector<std::string> markets;  // bidder configs whose topics are created
};

CLI::App* AddKafkaCommand(CLI::App* app, KafkaArgs* a);
int RunKafka(const KafkaArgs& a);

// `--kafka-property NAME=VALUE` (repeatable) on a command that reads or writes a real cluster:
// librdkafka properties (security.protocol, sasl.*, ssl.*...), after the command's own.
void AddKafkaPropertyOption(CLI::App* sub, std::vector<std::pair<std::string, std::string>>* out);

}  // namespace rtb::cli
