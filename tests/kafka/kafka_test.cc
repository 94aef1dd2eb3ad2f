// The Kafka seam against librdkafka's mock cluster: the real protocol over TCP.
#include "rtb/kafka/kafka.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/wait.h"

namespace rtb::kafka {
namespace {

TEST(Kafka, ProducesConsumesAndReportsDeliveries) {
  auto mock = MockCluster::Start(1);
  ASSERT_TRUE(mock.ok()) << mock.status().message();
  ASSERT_TRUE((*mock)->CreateTopic("t", 2, 1).ok());
  std::atomic<int> acked{0}, failed{0};
  std::vector<void*> opaques;
  Producer::Options po;
  po.bootstrap = (*mock)->bootstrap();
  po.on_delivery = [&](const Delivery& d) {
    (d.ok ? acked : failed).fetch_add(1);
    opaques.push_back(d.opaque);
  };
  auto p = Producer::Create(std::move(po));
  ASSERT_TRUE(p.ok()) << p.status().message();
  int tag = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string n = std::to_string(i);  // (GCC 12 warns falsely on "k" + ..., -Wrestrict)
    std::string key = "k", value = "v";
    key += n;
    value += n;
    ASSERT_TRUE((*p)->Produce("t", i % 2, key, value, i == 3 ? &tag : nullptr).ok());
  }
  ASSERT_TRUE((*p)->Flush(10000).ok());
  EXPECT_EQ(acked.load(), 10);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(std::count(opaques.begin(), opaques.end(), &tag), 1);
  EXPECT_EQ((*p)->QueueLength(), 0);
  auto wm = (*p)->Watermarks("t", 0, 5000);
  ASSERT_TRUE(wm.ok());
  EXPECT_EQ(wm->second - wm->first, 5);

  std::set<std::string> seen;
  int64_t not_retained = -1;
  const Status st = ReadWholeTopic(
      {.bootstrap = (*mock)->bootstrap()}, "t", 10000,
      [&](int32_t, int64_t, std::string_view v) { seen.emplace(v); }, &not_retained);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(not_retained, 0);

  Consumer::Options co;
  co.bootstrap = (*mock)->bootstrap();
  co.group_id = "g";
  auto c = Consumer::Create(std::move(co));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Assign({{"t", 1, kOffsetBeginning}}).ok());
  std::vector<std::string> keys;
  for (int i = 0; i < 100 && keys.size() < 5; ++i) {
    std::optional<Message> m = (*c)->Poll(100);
    if (m && m->ok()) {
      EXPECT_EQ(m->topic(), "t");
      EXPECT_EQ(m->partition(), 1);
      keys.emplace_back(m->key());
    }
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"k1", "k3", "k5", "k7", "k9"}));  // in order
  auto n = (*c)->PartitionCount("t", 5000);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2);
  // The embedded cluster has no DescribeConfigs: a topic's configuration is unknown, at once
  // (also to a consumer that has asked nothing yet).
  Consumer::Options fo;
  fo.bootstrap = (*mock)->bootstrap();
  fo.group_id = "g2";
  auto fresh = Consumer::Create(std::move(fo));
  ASSERT_TRUE(fresh.ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto config = (*fresh)->TopicConfig("t", 5000);
  EXPECT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_NE(config.status().message().find("the embedded cluster describes no configuration"),
            std::string::npos)
      << config.status().message();
}

// Closes a consumer and returns how long that took. A close still running after `limit_s` fails
// the test and ends the process at once: librdkafka's close cannot be cancelled, and a hung close
// would otherwise hold the suite until ctest's timeout.
double CloseWithin(std::unique_ptr<Consumer>& c, double limit_s, const std::string& what) {
  const auto t0 = std::chrono::steady_clock::now();
  std::promise<void> closed;
  std::future<void> done = closed.get_future();
  std::thread closer([&c, &closed] {
    c.reset();
    closed.set_value();
  });
  if (done.wait_for(std::chrono::duration<double>(limit_s)) != std::future_status::ready) {
    std::fflush(stdout);
    std::fprintf(stderr, "FAILED: the %s consumer was still closing after %.0f s\n", what.c_str(),
                 limit_s);
    std::fflush(stderr);
    std::_Exit(1);
  }
  closer.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A consumer whose brokers are down closes at once, assigned or in a group: it commits only when
// asked. One that auto-commits waits for its session timeout (librdkafka's default 45 s): the
// bidder's lease consumer did, and a bidder told to stop during a Kafka outage took 45 s. The
// auto-committing case is shown assigned only: subscribed to a group, librdkafka's close
// sometimes retried the downed broker for good (once in a clean-clone CI run), which says
// nothing about this seam, whose consumers never auto-commit.
TEST(Kafka, AConsumerWhoseBrokersAreDownClosesAtOnceUnlessItAutoCommits) {
  auto mock = MockCluster::Start(1);
  ASSERT_TRUE(mock.ok()) << mock.status().message();
  ASSERT_TRUE((*mock)->CreateTopic("t", 1, 1).ok());
  {
    Producer::Options po;
    po.bootstrap = (*mock)->bootstrap();
    auto p = Producer::Create(std::move(po));
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE((*p)->Produce("t", 0, "k", "v", nullptr).ok());
    ASSERT_TRUE((*p)->Flush(10000).ok());
  }
  int n = 0;
  for (const bool auto_commit : {false, true}) {
    for (const bool subscribe : {false, true}) {
      if (auto_commit && subscribe) continue;
      const std::string what = std::string(subscribe ? "subscribed" : "assigned") +
                               (auto_commit ? ", auto-committing" : "");
      Consumer::Options co;
      co.bootstrap = (*mock)->bootstrap();
      co.group_id = "close-" + std::to_string(n++);
      co.properties = {{"auto.offset.reset", "earliest"}, {"session.timeout.ms", "3000"}};
      if (auto_commit) {
        co.properties.push_back({"enable.auto.commit", "true"});
        co.properties.push_back({"auto.commit.interval.ms", "100"});
      }
      auto c = Consumer::Create(std::move(co));
      ASSERT_TRUE(c.ok()) << c.status().message();
      ASSERT_TRUE(subscribe ? (*c)->Subscribe({"t"}).ok()
                            : (*c)->Assign({{"t", 0, kOffsetBeginning}}).ok());
      bool read = false;
      for (int i = 0; i < 200 && !read; ++i) {
        std::optional<Message> m = (*c)->Poll(50);
        read = m && m->ok();
      }
      ASSERT_TRUE(read) << what;
      (*mock)->SetBrokerDown(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const double s = CloseWithin(*c, 30.0, what);
      std::printf("%s consumer closed in %.2f s with its broker down\n", what.c_str(), s);
      if (auto_commit) {
        EXPECT_GT(s, 2.0) << what;  // the session timeout, 3 s
      } else {
        EXPECT_LT(s, 1.0) << what;
      }
      (*mock)->SetBrokerUp(1);
    }
  }
}

// Produces n messages "<i>" of `pad` bytes of padding, alternately to partitions 0 and 1.
void ProduceNumbered(const std::string& bootstrap, int from, int n, size_t pad) {
  Producer::Options po;
  po.bootstrap = bootstrap;
  po.properties = {{"compression.type", "none"}};
  auto p = Producer::Create(std::move(po));
  ASSERT_TRUE(p.ok()) << p.status().message();
  for (int i = from; i < from + n; ++i) {
    std::string value = std::to_string(i);
    value += ' ';
    value.append(pad, 'x');
    ASSERT_TRUE((*p)->Produce("t", i % 2, "k", value, nullptr).ok());
  }
  ASSERT_TRUE((*p)->Flush(20000).ok());
}

TEST(TopicTail, ReadsEveryMessageAsItIsWrittenInOrderPerPartition) {
  auto mock = MockCluster::Start(1);
  ASSERT_TRUE(mock.ok()) << mock.status().message();
  ASSERT_TRUE((*mock)->CreateTopic("t", 2, 1).ok());
  std::vector<int> seen[2];
  auto tail = TopicTail::Start({.bootstrap = (*mock)->bootstrap()}, "t", 10000,
                               [&](int32_t part, int64_t, std::string_view v) {
                                 seen[part].push_back(std::stoi(std::string(v)));
                               });
  ASSERT_TRUE(tail.ok()) << tail.status().message();
  ProduceNumbered((*mock)->bootstrap(), 0, 500, 10);
  ProduceNumbered((*mock)->bootstrap(), 500, 500, 10);
  ASSERT_TRUE((*tail)->Finish(10000).ok());
  EXPECT_EQ((*tail)->messages(), 1000);
  EXPECT_EQ((*tail)->missed(), 0);
  for (int part = 0; part < 2; ++part) {
    ASSERT_EQ(seen[part].size(), 500u);
    for (size_t k = 0; k < 500; ++k) EXPECT_EQ(seen[part][k], 2 * static_cast<int>(k) + part);
  }
}

TEST(TopicTail, CountsWhatTheBrokersNoLongerHeldWhenItStarted) {
  // The mock keeps about 5 MB per partition: 8 MB written before the tail starts loses the
  // oldest, and the tail says how many it missed; the rest it reads.
  auto mock = MockCluster::Start(1);
  ASSERT_TRUE(mock.ok()) << mock.status().message();
  ASSERT_TRUE((*mock)->CreateTopic("t", 2, 1).ok());
  constexpr int kBefore = 16'000, kAfter = 100;
  ProduceNumbered((*mock)->bootstrap(), 0, kBefore, 1000);
  int64_t read = 0;
  auto tail = TopicTail::Start({.bootstrap = (*mock)->bootstrap()}, "t", 10000,
                               [&](int32_t, int64_t, std::string_view) { ++read; });
  ASSERT_TRUE(tail.ok()) << tail.status().message();
  ProduceNumbered((*mock)->bootstrap(), kBefore, kAfter, 10);
  ASSERT_TRUE((*tail)->Finish(20000).ok());
  EXPECT_GT((*tail)->missed(), 0);
  EXPECT_EQ((*tail)->messages(), read);
  EXPECT_EQ((*tail)->messages() + (*tail)->missed(), kBefore + kAfter);
}

TEST(Kafka, AWholeTopicReadBoundsSilenceNotTheWholeRead) {
  // A reader slower than the bound as a whole (2,000 messages at 1 ms each against 1,000 ms)
  // reads every message: a big topic on a busy machine is read whole.
  auto mock = MockCluster::Start(1);
  ASSERT_TRUE(mock.ok()) << mock.status().message();
  ASSERT_TRUE((*mock)->CreateTopic("t", 2, 1).ok());
  ProduceNumbered((*mock)->bootstrap(), 0, 2000, 10);
  int read = 0;
  const auto start = std::chrono::steady_clock::now();
  const Status st = ReadWholeTopic({.bootstrap = (*mock)->bootstrap()}, "t", 1000,
                                   [&](int32_t, int64_t, std::string_view) {
                                     ++read;
                                     std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                   });
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(read, 2000);
  EXPECT_GT(took, std::chrono::milliseconds(1500));
}

TEST(Kafka, BadPropertiesAndMissingTopicsAreErrors) {
  Producer::Options po;
  po.properties = {{"no.such.property", "1"}};
  auto p = Producer::Create(std::move(po));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(p.status().message().find("no.such.property"), std::string::npos);
  Consumer::Options co;  // no group id
  EXPECT_FALSE(Consumer::Create(std::move(co)).ok());

  // No broker there: an error within the timeout, not a hang.
  const Status st = ReadWholeTopic({.bootstrap = "127.0.0.1:1", .log_level = 0}, "t", 1000,
                                   [](int32_t, int64_t, std::string_view) {});
  EXPECT_EQ(st.code(), Status::Code::kUnavailable);
}

TEST(Kafka, AFullQueueIsUnavailableNotABlock) {
  auto mock = MockCluster::Start(1);
  ASSERT_TRUE(mock.ok());
  Producer::Options po;
  po.bootstrap = (*mock)->bootstrap();
  po.properties = {{"queue.buffering.max.messages", "3"}, {"linger.ms", "1000"}};
  auto p = Producer::Create(std::move(po));
  ASSERT_TRUE(p.ok());
  int refused = 0;
  for (int i = 0; i < 10; ++i) {
    const Status st = (*p)->Produce("t", kAnyPartition, "", "x");
    if (!st.ok()) {
      ++refused;
      EXPECT_EQ(st.code(), Status::Code::kUnavailable);
    }
  }
  EXPECT_EQ(refused, 7);
  (*p)->PurgeAll();
  (*p)->Poll(100);
}

// Name -> nice value of every thread of this process whose name starts with `prefix`.
std::map<std::string, int> ThreadNices(const std::string& prefix) {
  std::map<std::string, int> out;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm"), stat(t.path() / "stat");
    std::string name, line;
    std::getline(comm, name);
    std::getline(stat, line);
    if (name.rfind(prefix, 0) != 0) continue;
    // Fields after the ")" of the name: state is field 3, nice is field 19.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string f;
    for (int field = 3; field <= 19; ++field) rest >> f;
    out[name] = std::stoi(f);
  }
  return out;
}

// The nice value of the mock cluster's thread, once it has started and set it (-100: no such
// thread within 5 s).
int MockThreadNice(int expected) {
  int nice = -100;
  test::WaitUntil(
      [&] {
        const auto nices = ThreadNices("rdk:mock");
        if (const auto it = nices.find("rdk:mock"); it != nices.end()) nice = it->second;
        return nice == expected;
      },
      std::chrono::seconds(5));
  return nice;
}

TEST(Kafka, TheMockClustersThreadTakesTheNiceValueItIsGiven) {
  {
    auto low = MockCluster::Start(1, 7);
    ASSERT_TRUE(low.ok());
    EXPECT_EQ(MockThreadNice(7), 7);
  }
  // Raising needs CAP_SYS_NICE: as root the thread runs above the others, else it stays at 0.
  auto high = MockCluster::Start(1, -4);
  ASSERT_TRUE(high.ok());
  const int want = ::geteuid() == 0 ? -4 : 0;
  EXPECT_EQ(MockThreadNice(want), want);
}

}  // namespace
}  // namespace rtb::kafka
