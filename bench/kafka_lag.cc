// How late a consumer reads what several producers write on the embedded Kafka cluster
// (librdkafka's mock): the path of the bidders' lease messages to `rtb budget`, without the
// rest of the demo. Three producers, each on its own key (one partition, as a bidder's lease
// messages are), write `rate` messages a second of 200 bytes, every `rate / 5`-th one of 150 KB
// (a report of every slot); one consumer in a group, as the coordinator's, reads them and
// prints, every second, how many it read and how late (its clock against the send time in the
// message). `background`: that many more messages a second (500 bytes) on another topic, written
// by one producer and read by another group consumer (the bidders' events and the learner).
// Usage: kafka_lag [rate=100] [seconds=10] [linger_ms=1] [background=0]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "rtb/core/clock.h"
#include "rtb/kafka/kafka.h"

namespace {

using Clock = std::chrono::steady_clock;

void Produce(const std::string& bootstrap, const std::string& topic, int bidder, int rate,
             const std::string& linger, size_t small_bytes, const std::atomic<bool>& stop) {
  rtb::kafka::Producer::Options po;
  po.bootstrap = bootstrap;
  po.properties = {{"linger.ms", linger}};
  auto producer = rtb::kafka::Producer::Create(po);
  if (!producer.ok()) return;
  const std::string key = "bidder-" + std::to_string(bidder);
  const std::string small(small_bytes, 's'), big(150'000, 'b');
  const int big_every = topic == "requests" ? std::max(1, rate / 5) : rate + 1;
  auto next = Clock::now();
  for (int k = 1; !stop.load(); ++k) {
    const std::string v = std::to_string(rtb::NowUnixMs()) + " " + (k % big_every ? small : big);
    (void)(*producer)->Produce(topic, rtb::kafka::kAnyPartition, key, v);
    (*producer)->Poll(0);
    next += std::chrono::microseconds(1'000'000 / rate);
    std::this_thread::sleep_until(next);
  }
  (void)(*producer)->Flush(2'000);
}

}  // namespace

int main(int argc, char** argv) {
  const int rate = argc > 1 ? std::max(1, std::atoi(argv[1])) : 100;
  const int seconds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 10;
  const std::string linger = argc > 3 ? argv[3] : "1";
  const int background = argc > 4 ? std::max(0, std::atoi(argv[4])) : 0;
  auto mock = rtb::kafka::MockCluster::Start(3);
  if (!mock.ok() || !(*mock)->CreateTopic("requests", 4, 3).ok() ||
      !(*mock)->CreateTopic("events", 8, 3).ok()) {
    std::fprintf(stderr, "kafka_lag: the embedded cluster did not start\n");
    return 1;
  }
  const std::string bootstrap = (*mock)->bootstrap();
  rtb::kafka::Consumer::Options co;
  co.bootstrap = bootstrap;
  co.group_id = "kafka-lag";
  co.properties = {{"auto.offset.reset", "latest"}, {"fetch.wait.max.ms", "10"}};
  auto consumer = rtb::kafka::Consumer::Create(co);
  if (!consumer.ok() || !(*consumer)->Subscribe({"requests"}).ok()) {
    std::fprintf(stderr, "kafka_lag: no consumer\n");
    return 1;
  }
  // The group join takes a few seconds on the mock: produce only once it is assigned.
  while ((*consumer)->Poll(100)) {
  }
  std::this_thread::sleep_for(std::chrono::seconds(4));
  std::atomic<bool> stop{false};
  std::vector<std::thread> producers;
  for (int b = 0; b < 3; ++b) {
    producers.emplace_back(Produce, bootstrap, "requests", b, rate, linger, 200, std::cref(stop));
  }
  if (background > 0) {
    producers.emplace_back(Produce, bootstrap, "events", 9, background, "5", 500, std::cref(stop));
    producers.emplace_back([&] {  // the learner: reads every event
      rtb::kafka::Consumer::Options eo;
      eo.bootstrap = bootstrap;
      eo.group_id = "kafka-lag-events";
      eo.properties = {{"auto.offset.reset", "latest"}};
      auto events = rtb::kafka::Consumer::Create(eo);
      if (!events.ok() || !(*events)->Subscribe({"events"}).ok()) return;
      while (!stop.load()) (void)(*events)->Poll(50);
    });
  }
  std::printf("3 producers x %d messages/s (linger.ms %s), one group consumer; %d/s beside\n", rate,
              linger.c_str(), background);
  int64_t n = 0, sum = 0, most = 0;
  auto tick = Clock::now() + std::chrono::seconds(1);
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < end) {
    auto m = (*consumer)->Poll(50);
    if (m && m->ok()) {
      const int64_t lag =
          rtb::NowUnixMs() - std::atoll(std::string(m->payload().substr(0, 13)).c_str());
      ++n;
      sum += lag;
      most = std::max(most, lag);
    }
    if (Clock::now() >= tick) {
      std::printf("read %lld messages, %lld ms after they were sent on average (at most %lld ms)\n",
                  static_cast<long long>(n), static_cast<long long>(n ? sum / n : 0),
                  static_cast<long long>(most));
      n = sum = most = 0;
      tick += std::chrono::seconds(1);
    }
  }
  stop = true;
  for (auto& t : producers) t.join();
  return 0;
}
