// How late a consumer reads what several producers write on the embedded Kafka cluster
// (librdkafka's mock): the path of the bidders' lease messages to `rtb budget`, without the
// rest of the demo. Three producers, each on its own key (one partition, as a bidder's lease
// messages are), write `rate` messages a second of 200 bytes, every `rate / 5`-th one of 150 KB
// (a report of every slot); one consumer in a group, as the coordinator's, reads them and
// prints, every second, how many it read and how late (its clock against the send time in the
// message). Usage: kafka_lag [rate=100] [seconds=10] [linger_ms=1]
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

void Produce(const std::string& bootstrap, int bidder, int rate, const std::string& linger,
             const std::atomic<bool>& stop) {
  rtb::kafka::Producer::Options po;
  po.bootstrap = bootstrap;
  po.properties = {{"linger.ms", linger}};
  auto producer = rtb::kafka::Producer::Create(po);
  if (!producer.ok()) return;
  const std::string key = "bidder-" + std::to_string(bidder);
  const std::string small(200, 's'), big(150'000, 'b');
  const int big_every = std::max(1, rate / 5);
  auto next = Clock::now();
  for (int k = 1; !stop.load(); ++k) {
    const std::string v = std::to_string(rtb::NowUnixMs()) + " " + (k % big_every ? small : big);
    (void)(*producer)->Produce("requests", rtb::kafka::kAnyPartition, key, v);
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
  auto mock = rtb::kafka::MockCluster::Start(3);
  if (!mock.ok() || !(*mock)->CreateTopic("requests", 4, 3).ok()) {
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
    producers.emplace_back(Produce, bootstrap, b, rate, linger, std::cref(stop));
  }
  std::printf("3 producers x %d messages/s (linger.ms %s), one group consumer\n", rate,
              linger.c_str());
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
