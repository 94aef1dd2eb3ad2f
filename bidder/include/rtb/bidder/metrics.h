// Prometheus metrics of the bidder: lock-free counters and a latency histogram, rendered in
// the text exposition format by GET /metrics.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace rtb::bidder {

class LatencyHistogram {
 public:
  // Upper bounds in microseconds (the last bucket is +Inf).
  static constexpr std::array<int64_t, 12> kBoundsUs = {25,   50,   100,   250,   500,   1000,
                                                        2500, 5000, 10000, 25000, 50000, 100000};
  void Observe(int64_t us);
  std::string Render(const std::string& name, const std::string& help) const;
  uint64_t count() const { return count_.load(); }

 private:
  std::array<std::atomic<uint64_t>, kBoundsUs.size() + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_us_{0};
};

struct Counter {
  std::atomic<uint64_t> v{0};
  void Inc(uint64_t n = 1) { v.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Get() const { return v.load(std::memory_order_relaxed); }
};

}  // namespace rtb::bidder
