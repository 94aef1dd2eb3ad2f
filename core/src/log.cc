#include "rtb/core/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <unistd.h>

#include <mutex>
#include <unordered_map>

namespace rtb::log {

namespace {

// %* in the JSON pattern: the message as a JSON string body (quotes, backslashes and control
// characters escaped).
class JsonMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr char kHex[] = "0123456789abcdef";
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        dest.push_back('\\');
        dest.push_back(c);
      } else if (u < 0x20) {
        const char esc[] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 15]};
        dest.append(esc, esc + sizeof esc);
      } else {
        dest.push_back(c);
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessage>();
  }
};

struct Registry {
  std::mutex mu;
  Options opt;
  spdlog::level::level_enum level = spdlog::level::info;
  spdlog::sink_ptr sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  std::unordered_map<std::string, std::shared_ptr<spdlog::logger>> loggers;  // GUARDED_BY(mu)

  std::unique_ptr<spdlog::formatter> Formatter() const {
    auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    if (opt.format == Format::kJson) {
      f->add_flag<JsonMessage>('*').set_pattern(
          "{\"ts\":\"%Y-%m-%dT%H:%M:%S.%eZ\",\"level\":\"%l\",\"process\":\"" + opt.process +
          "\",\"pid\":%P,\"component\":\"%n\",\"msg\":\"%*\"}");
    } else {
      f->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l " + opt.process + "[%P] %n: %v");
    }
    return f;
  }
};

Registry& Reg() {
  static Registry* r = [] {
    auto* reg = new Registry();  // never destroyed: loggers outlive static destructors
    reg->sink->set_formatter(reg->Formatter());
    return reg;
  }();
  return *r;
}

}  // namespace

Result<spdlog::level::level_enum> ParseLevel(std::string_view name) {
  if (name == "trace") return spdlog::level::trace;
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warn" || name == "warning") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  if (name == "off") return spdlog::level::off;
  return Status::InvalidArgument("log level '" + std::string(name) +
                                 "': expected trace, debug, info, warn, error or off");
}

Result<Format> ParseFormat(std::string_view name) {
  if (name == "text") return Format::kText;
  if (name == "json") return Format::kJson;
  return Status::InvalidArgument("log format '" + std::string(name) + "': expected text or json");
}

Status Init(const Options& opt) {
  RTB_ASSIGN_OR_RETURN(const auto level, ParseLevel(opt.level));
  Registry& r = Reg();
  std::lock_guard<std::mutex> l(r.mu);
  r.opt = opt;
  r.level = level;
  r.sink->set_formatter(r.Formatter());
  for (auto& [name, lg] : r.loggers) lg->set_level(level);
  return Status::Ok();
}

spdlog::logger& Get(std::string_view component) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> l(r.mu);
  auto it = r.loggers.find(std::string(component));
  if (it == r.loggers.end()) {
    auto lg = std::make_shared<spdlog::logger>(std::string(component), r.sink);
    lg->set_level(r.level);
    lg->flush_on(spdlog::level::warn);
    it = r.loggers.emplace(std::string(component), std::move(lg)).first;
  }
  return *it->second;
}

bool RateLimit::Allow(uint64_t* suppressed) {
  const int64_t now = clock_->SteadyMs();
  int64_t start = window_start_.load(std::memory_order_relaxed);
  if (now - start >= interval_ms_ &&
      window_start_.compare_exchange_strong(start, now, std::memory_order_relaxed)) {
    in_window_.store(0, std::memory_order_relaxed);
  }
  if (in_window_.fetch_add(1, std::memory_order_relaxed) >= per_interval_) {
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  *suppressed = skipped_.exchange(0, std::memory_order_relaxed);
  return true;
}

}  // namespace rtb::log
