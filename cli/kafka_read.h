// Reading a whole Kafka topic (every partition, from the beginning to the end offsets as of
// the start) with librdkafka: for reports and replay, not for serving.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "rtb/core/status.h"

namespace rtb::cli {

// Calls fn(partition, offset, payload) for every message; stops at each partition's end (EOF)
// or after timeout_ms with an error naming the partitions not finished. `not_retained` (if
// given) receives the number of messages the brokers no longer hold (sum of the partitions'
// low watermarks): a dump is complete only when it is 0.
Status ReadWholeTopic(const std::string& bootstrap, const std::string& topic, int timeout_ms,
                      const std::function<void(int, int64_t, std::string_view)>& fn,
                      int64_t* not_retained = nullptr);

}  // namespace rtb::cli
