#include "kafka_cmd.h"

#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <set>
#include <utility>
#include <vector>

#include "rtb/bidder/config.h"
#include "rtb/budget/lease_msg.h"
#include "rtb/core/log.h"
#include "rtb/kafka/kafka.h"

namespace rtb::cli {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "rtb kafka: error: %s\n", message.c_str());
  return 1;
}

}  // namespace

void AddKafkaPropertyOption(CLI::App* sub, std::vector<std::pair<std::string, std::string>>* out) {
  sub->add_option_function<std::vector<std::string>>(
         "--kafka-property",
         [out](const std::vector<std::string>& items) {
           for (const std::string& item : items) {
             const size_t eq = item.find('=');
             out->emplace_back(item.substr(0, eq), item.substr(eq + 1));
           }
         },
         "A librdkafka property NAME=VALUE for a real cluster (security.protocol, sasl.*, "
         "ssl.*...); repeatable")
      ->check(
          [](const std::string& item) -> std::string {
            const size_t eq = item.find('=');
            if (eq == std::string::npos || eq == 0) return "expects NAME=VALUE, got '" + item + "'";
            if (kafka::EngineOwnedProperty(item.substr(0, eq))) {
              return "may not set " + item.substr(0, eq) + " (the engine's own, or an option's)";
            }
            return std::string();
          },
          "NAME=VALUE");
}

CLI::App* AddKafkaCommand(CLI::App* app, KafkaArgs* a) {
  auto* sub = app->add_subcommand(
      "kafka",
      "The embedded Kafka cluster alone, for several processes on one machine: prints its "
      "address; SIGUSR1 takes the brokers down, SIGUSR2 brings them back");
  sub->add_option("--brokers", a->brokers, "Mock brokers")
      ->check(CLI::Range(1, 9))
      ->capture_default_str();
  sub->add_option("--market", a->markets,
                  "A bidder config whose topics to create (events, policy, leases); repeatable");
  auto* create = sub->add_option(
      "--create-on", a->create_on,
      "Instead: create the markets' topics and --clock-topic on the real cluster at these "
      "bootstrap servers (the events topic with kafka.partitions, the lease topics with "
      "leases.enabled, the grants topics compacted), and exit");
  auto* del = sub->add_option("--delete-on", a->delete_on,
                              "Instead: delete those topics on the real cluster there, and exit");
  create->excludes(del);
  sub->add_option("--clock-topic", a->clock_topic, "With --create-on or --delete-on")
      ->capture_default_str();
  AddKafkaPropertyOption(sub, &a->kafka_properties);
  return sub;
}

namespace {

// The markets' topics on a real cluster (kafka/README.md, "Topics on your own cluster"), each
// once, and the client properties of the first market's kafka.properties and --kafka-property.
Status MarketTopicsOnCluster(const KafkaArgs& a) {
  if (a.markets.empty())
    return Status::InvalidArgument("--create-on and --delete-on need --market");
  const bool create = !a.create_on.empty();
  kafka::ClientOptions client{.bootstrap = create ? a.create_on : a.delete_on};
  std::vector<kafka::NewTopic> topics;
  for (const auto& path : a.markets) {
    RTB_ASSIGN_OR_RETURN(const bidder::BidderConfig cfg, bidder::LoadBidderConfig(path));
    const auto& k = cfg.kafka;
    if (client.properties.empty()) client.properties = k.properties;
    kafka::EngineTopicNames n{
        .events = k.events_topic, .policy = k.policy_topic, .clock = a.clock_topic};
    if (cfg.leases.enabled) {
      n.lease_requests = cfg.leases.requests_topic;
      n.lease_grants = cfg.leases.grants_topic;
      n.notices = cfg.leases.notices_topic;
      n.coordinators = budget::DefaultCoordinatorsTopic(cfg.leases.grants_topic);
    }
    const auto made = kafka::EngineTopics(n, k.partitions, k.partitions);
    topics.insert(topics.end(), made.begin(), made.end());
  }
  client.properties.insert(client.properties.end(), a.kafka_properties.begin(),
                           a.kafka_properties.end());
  std::set<std::string> seen;
  std::vector<kafka::NewTopic> once;
  std::vector<std::string> names;
  for (auto& t : topics) {
    if (!seen.insert(t.name).second) continue;
    names.push_back(t.name);
    once.push_back(std::move(t));
  }
  RTB_RETURN_IF_ERROR(create ? kafka::CreateTopics(client, once, 15000)
                             : kafka::DeleteTopics(client, names, 15000));
  for (const auto& n : names) std::printf("%s\n", n.c_str());
  return Status::Ok();
}

}  // namespace

// `rtb kafka`: the embedded Kafka cluster on its own, for several processes on one machine
// (bidders, `rtb budget`, `rtb learn` pointed at its address), so that no bidder's death takes
// the cluster with it. It prints its bootstrap address on stdout and runs until SIGINT or
// SIGTERM. Fault drills: SIGUSR1 takes every broker down (connections refused, data kept),
// SIGUSR2 brings them back.
int RunKafka(const KafkaArgs& a) {
  if (!a.create_on.empty() || !a.delete_on.empty()) {
    const Status st = MarketTopicsOnCluster(a);
    return st.ok() ? 0 : Fail(st.message());
  }
  if (!a.kafka_properties.empty()) {
    return Fail("--kafka-property is for a real cluster (--create-on, --delete-on)");
  }
  // Blocked before librdkafka starts its threads, which inherit the mask: only sigwait sees them.
  sigset_t sigs;
  sigemptyset(&sigs);
  for (int s : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) sigaddset(&sigs, s);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::vector<std::pair<std::string, int>> topics;  // every config is read before anything starts
  for (const auto& path : a.markets) {
    auto cfg = bidder::LoadBidderConfig(path);
    if (!cfg.ok()) return Fail(cfg.status().message());
    const auto& k = cfg->kafka;
    topics.insert(topics.end(), {{k.events_topic, k.partitions},
                                 {k.policy_topic, 1},
                                 {cfg->leases.requests_topic, k.partitions},
                                 {cfg->leases.grants_topic, 1},
                                 {cfg->leases.notices_topic, k.partitions},
                                 {budget::DefaultCoordinatorsTopic(cfg->leases.grants_topic), 1}});
  }
  auto mock = kafka::MockCluster::Start(a.brokers);
  if (!mock.ok()) return Fail(mock.status().message());
  auto& lg = log::Get("kafka");
  std::set<std::string> created;
  for (const auto& [topic, partitions] : topics) {
    if (!created.insert(topic).second) continue;
    if (auto st = (*mock)->CreateTopic(topic, partitions, std::min(3, a.brokers)); !st.ok())
      return Fail(st.message());
  }
  lg.info("embedded Kafka (mock cluster, {} brokers) at {}; {} topics created", a.brokers,
          (*mock)->bootstrap(), created.size());
  std::printf("%s\n", (*mock)->bootstrap().c_str());
  std::fflush(stdout);
  for (;;) {
    int sig = 0;
    if (sigwait(&sigs, &sig) != 0) continue;
    if (sig == SIGUSR1 || sig == SIGUSR2) {
      for (int b = 1; b <= a.brokers; ++b)
        sig == SIGUSR1 ? (*mock)->SetBrokerDown(b) : (*mock)->SetBrokerUp(b);
      lg.warn(sig == SIGUSR1 ? "every broker down (SIGUSR1)" : "every broker up (SIGUSR2)");
      continue;
    }
    lg.info("stopped");
    return 0;
  }
}

}  // namespace rtb::cli
