#include "rtb/bidder/metrics.h"

#include <cstdio>

namespace rtb::bidder {

void LatencyHistogram::Observe(int64_t us) {
  size_t b = 0;
  while (b < kBoundsUs.size() && us > kBoundsUs[b]) ++b;
  buckets_[b].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(us, std::memory_order_relaxed);
}

std::string LatencyHistogram::Render(const std::string& name, const std::string& help) const {
  std::string o = "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cum = 0;
  char buf[160];
  for (size_t b = 0; b < kBoundsUs.size(); ++b) {
    cum += buckets_[b].load();
    std::snprintf(buf, sizeof buf, "%s_bucket{le=\"%g\"} %llu\n", name.c_str(),
                  static_cast<double>(kBoundsUs[b]) / 1e6, static_cast<unsigned long long>(cum));
    o += buf;
  }
  cum += buckets_[kBoundsUs.size()].load();
  std::snprintf(buf, sizeof buf, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n",
                name.c_str(), static_cast<unsigned long long>(cum), name.c_str(),
                static_cast<double>(sum_us_.load()) / 1e6, name.c_str(),
                static_cast<unsigned long long>(count_.load()));
  o += buf;
  return o;
}

}  // namespace rtb::bidder
