// The full-information log format, version 1 (schemas/fulllog-v1.md): a tab-separated text
// file, one line per (request, candidate advertiser), grouped by request.
#pragma once

#include <string>

#include "rtb/core/status.h"
#include "rtb/simulator/world.h"

namespace rtb::sim {

// Writes day to path atomically.
Status WriteFullLog(const Day& day, const std::string& path);
std::string SerializeFullLog(const Day& day);

// Reads and validates a log; any malformed line is an error naming the file and line.
Result<Day> ReadFullLog(const std::string& path);
Result<Day> ParseFullLog(const std::string& text, const std::string& name);

}  // namespace rtb::sim
