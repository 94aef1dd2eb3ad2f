#include "demo_kafka.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "rtb/core/report.h"

namespace rtb::demo {

namespace {

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

}  // namespace

RunTopics RunTopics::ForRun(const std::string& run) {
  RunTopics t;
  t.run = run;
  for (std::string* name :
       {&t.events, &t.policy, &t.clock, &t.lease_requests, &t.lease_grants, &t.notices}) {
    *name += "." + run;
  }
  return t;
}

std::vector<kafka::NewTopic> RunTopics::ToCreate(bool leases) const {
  kafka::EngineTopicNames n{.events = events, .policy = policy, .clock = clock};
  if (leases) {
    n.lease_requests = lease_requests;
    n.lease_grants = lease_grants;
    n.notices = notices;
    n.coordinators = coordinators();
  }
  return kafka::EngineTopics(n, events_partitions, 4);
}

std::string NewRunId() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char at[32];
  std::strftime(at, sizeof at, "%Y%m%dT%H%M%S", &tm);
  return "demo-" + std::string(at) + "-" + std::to_string(::getpid());
}

Result<kafka::Properties> ReadKafkaPropertiesFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open the Kafka properties file");
  kafka::Properties out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    const size_t eq = t.find('=');
    const std::string where = path + ":" + std::to_string(n) + ": ";
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument(where + "expects NAME=VALUE");
    }
    const std::string name = Trim(t.substr(0, eq));
    if (kafka::EngineOwnedProperty(name)) {
      return Status::InvalidArgument(where + "may not set " + name +
                                     " (the engine's own, or an option's)");
    }
    out.emplace_back(name, Trim(t.substr(eq + 1)));
  }
  return out;
}

std::string PropertiesYaml(const kafka::Properties& properties) {
  // JSON strings are YAML's double-quoted scalars.
  std::string y = "{";
  for (const auto& [k, v] : properties) {
    y += (y.size() > 1 ? ", " : "") + nlohmann::json(k).dump() + ": " + nlohmann::json(v).dump();
  }
  return y + "}";
}

RunTopicsOnCluster::~RunTopicsOnCluster() {
  const Status st = kafka::DeleteTopics(client_, names_, 10000);
  if (st.ok()) return;
  std::string names;
  for (const auto& n : names_) names += (names.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "rtb demo: warning: the run's topics (%s) are left on %s: %s\n",
               names.c_str(), client_.bootstrap.c_str(), st.message().c_str());
}

Result<std::unique_ptr<RunTopicsOnCluster>> CreateRunTopics(const kafka::ClientOptions& client,
                                                            const RunTopics& topics, bool leases,
                                                            int timeout_ms) {
  const std::vector<kafka::NewTopic> create = topics.ToCreate(leases);
  std::vector<std::string> names;
  for (const auto& t : create) names.push_back(t.name);
  RTB_RETURN_IF_ERROR(kafka::CreateTopics(client, create, timeout_ms));
  return std::make_unique<RunTopicsOnCluster>(client, std::move(names));
}

Status WriteRunLearnerConfig(const std::string& learner_config, const std::string& sim_path,
                             const RunTopics& topics, const std::string& out) {
  std::string text;
  try {
    YAML::Node root = YAML::LoadFile(learner_config);
    root["simulator_config"] = std::filesystem::absolute(sim_path).lexically_normal().string();
    YAML::Node online = root["online"];
    online["events_topic"] = topics.events;
    online["policy_topic"] = topics.policy;
    online["clock_topic"] = topics.clock;
    online["group_id"] = topics.learner_group();
    YAML::Emitter e;
    e << root;
    text = std::string(e.c_str()) + "\n";
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(learner_config + ": " + e.what());
  }
  return WriteFileAtomic(out, "# " + learner_config + " for this run's topics (rtb demo)\n" + text);
}

}  // namespace rtb::demo
