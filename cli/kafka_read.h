// Reading a whole Kafka topic (every partition, from the beginning to the end offsets as of
// the start) with librdkafka: for reports and replay, not for serving.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "rtb/core/status.h"

namespace rtb::cli {

// Calls fn(partition, offset, payload) for every message; stops at each partition's end (EOF)
// or after timeout_ms with an error naming the partitions not finished.
Status ReadWholeTopic(const std::string& bootstrap, const std::string& topic, int timeout_ms,
                      const std::function<void(int, int64_t, std::string_view)>& fn);

}  // namespace rtb::cli
