// ParseStatistics: librdkafka's statistics JSON (STATISTICS.md) read into the exported figures.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "rtb/kafka/kafka.h"

namespace rtb::kafka {
namespace {

// A producer's statistics as librdkafka 2.0.2 wrote them (against its mock cluster, 3 brokers,
// 4 events queued), topics and partitions included.
std::string Fixture() {
  std::ifstream in(RTB_SOURCE_DIR "/tests/fixtures/kafka/statistics-2.0.2.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(KafkaStatistics, ReadsLibrdkafkasDocument) {
  const std::string json = Fixture();
  ASSERT_FALSE(json.empty());
  auto s = ParseStatistics(json);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->queue_messages, 4);
  EXPECT_EQ(s->queue_bytes, 4);
  ASSERT_EQ(s->brokers.size(), 3u);
  // By name; each connected once, none failed.
  EXPECT_EQ(s->brokers[0].name, "127.0.0.1:33519/2");
  EXPECT_EQ(s->brokers[1].name, "127.0.0.1:44457/1");
  EXPECT_EQ(s->brokers[2].name, "127.0.0.1:46503/3");
  for (const auto& b : s->brokers) {
    EXPECT_EQ(b.state, "UP") << b.name;
    EXPECT_EQ(b.connects, 1) << b.name;
    EXPECT_EQ(b.disconnects, 0) << b.name;
    EXPECT_EQ(b.tx_errors + b.tx_retries + b.request_timeouts, 0) << b.name;
  }
  EXPECT_EQ(s->brokers[0].node_id, 2);
  EXPECT_EQ(s->brokers[0].rtt_samples, 0);  // no round trip in that window
  EXPECT_EQ(s->brokers[1].rtt_samples, 1);
  EXPECT_EQ(s->brokers[1].rtt_p50_us, 72);
  EXPECT_EQ(s->brokers[1].rtt_p99_us, 72);
  EXPECT_EQ(s->brokers[2].rtt_p99_us, 144);
}

// Every figure from its own field; librdkafka's internal and logical brokers left out.
TEST(KafkaStatistics, EveryFigureComesFromItsField) {
  auto broker = [](const char* name, const char* source, const char* state, int n) {
    const std::string v = std::to_string(n);
    return std::string("\"") + name + "\": {\"name\": \"" + name + "\", \"nodeid\": " + v +
           ", \"source\": \"" + source + "\", \"state\": \"" + state + "\", \"txerrs\": " + v +
           "1, \"txretries\": " + v + "2, \"req_timeouts\": " + v + "3, \"connects\": " + v +
           "4, \"disconnects\": " + v + "5, \"rtt\": {\"cnt\": " + v + "6, \"p50\": " + v +
           "7, \"p99\": " + v + "8, \"p75\": 1}, \"toppars\": {}}";
  };
  const std::string json =
      "{\"type\": \"producer\", \"msg_cnt\": 17, \"msg_size\": 1900, \"brokers\": {" +
      broker("b:2/2", "learned", "UP", 2) + ", " +
      broker("a:1/bootstrap", "configured", "INIT", 1) + ", " +
      broker(":0/internal", "internal", "UP", 3) + ", " +
      broker("GroupCoordinator", "logical", "UP", 4) + "}, \"topics\": {\"t\": {}}}";
  auto s = ParseStatistics(json);
  ASSERT_TRUE(s.ok()) << s.status().message() << "\n" << json;
  EXPECT_EQ(s->queue_messages, 17);
  EXPECT_EQ(s->queue_bytes, 1900);
  ASSERT_EQ(s->brokers.size(), 2u);
  const Statistics::Broker& a = s->brokers[0];
  EXPECT_EQ(a.name, "a:1/bootstrap");
  EXPECT_EQ(a.node_id, 1);
  EXPECT_EQ(a.state, "INIT");
  EXPECT_EQ(a.tx_errors, 11);
  EXPECT_EQ(a.tx_retries, 12);
  EXPECT_EQ(a.request_timeouts, 13);
  EXPECT_EQ(a.connects, 14);
  EXPECT_EQ(a.disconnects, 15);
  EXPECT_EQ(a.rtt_samples, 16);
  EXPECT_EQ(a.rtt_p50_us, 17);
  EXPECT_EQ(a.rtt_p99_us, 18);
  EXPECT_EQ(s->brokers[1].name, "b:2/2");
  EXPECT_EQ(s->brokers[1].tx_errors, 21);
}

TEST(KafkaStatistics, MalformedDocumentsAreRefused) {
  const std::string ok_broker =
      "\"b\": {\"nodeid\": 1, \"source\": \"learned\", \"state\": \"UP\", \"txerrs\": 0, "
      "\"txretries\": 0, \"req_timeouts\": 0, \"connects\": 0, \"disconnects\": 0, \"rtt\": "
      "{\"cnt\": 0, \"p50\": 0, \"p99\": 0}}";
  ASSERT_TRUE(
      ParseStatistics("{\"msg_cnt\": 0, \"msg_size\": 0, \"brokers\": {" + ok_broker + "}}").ok());
  std::string no_rtt = ok_broker;
  no_rtt.replace(no_rtt.find(", \"rtt\""), std::string::npos, "}");
  for (const std::string& bad : {
           std::string(""),
           std::string("{"),
           std::string("[1, 2]"),
           std::string("{\"msg_size\": 0, \"brokers\": {}}"),                         // no msg_cnt
           std::string("{\"msg_cnt\": \"many\", \"msg_size\": 0, \"brokers\": {}}"),  // a string
           std::string("{\"msg_cnt\": 0, \"msg_size\": 0}"),                          // no brokers
           "{\"msg_cnt\": 0, \"msg_size\": 0, \"brokers\": {" + no_rtt + "}}",
       }) {
    auto s = ParseStatistics(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(s.status().message().find("librdkafka statistics"), std::string::npos)
        << s.status().message();
  }
}

}  // namespace
}  // namespace rtb::kafka
