// `rtb kafka`: the embedded Kafka cluster (librdkafka's mock, rtb/kafka/kafka.h) as a process of
// its own, for several processes on one machine, with broker faults on signals.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace rtb::cli {

struct KafkaArgs {
  int brokers = 3;                   // mock brokers
  std::vector<std::string> markets;  // bidder configs whose topics are created
};

void AddKafkaOptions(CLI::App* sub, KafkaArgs* a);
int RunKafka(const KafkaArgs& a);

}  // namespace rtb::cli
