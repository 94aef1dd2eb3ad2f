#include "rtb/core/rocksdb_log.h"

#include <rocksdb/env.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <utility>

#include "rtb/core/log.h"

namespace rtb::log {
namespace {

class ProcessLogger : public rocksdb::Logger {
 public:
  explicit ProcessLogger(std::string component)
      : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL), component_(std::move(component)) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel() || level == rocksdb::InfoLogLevel::HEADER_LEVEL) return;
    uint64_t skipped = 0;
    if (!limit_.Allow(&skipped)) return;
    char line[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    const int n = std::vsnprintf(line, sizeof line, format, ap);
#pragma GCC diagnostic pop
    for (size_t end = std::min<size_t>(std::max(n, 0), sizeof line - 1);
         end > 0 && line[end - 1] == '\n';)
      line[--end] = '\0';
    Get(component_)
        .warn("rocksdb: {}{}", line,
              skipped > 0 ? fmt::format(" ({} lines skipped)", skipped) : "");
  }

 private:
  const std::string component_;
  RateLimit limit_{5, std::chrono::seconds(60)};
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewProcessLogger(std::string component) {
  return std::make_shared<ProcessLogger>(std::move(component));
}

}  // namespace rtb::log
