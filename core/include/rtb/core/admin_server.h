// The admin port of a process that serves no HTTP of its own (rtb budget, rtb learn): GET
// /metrics (Prometheus text) and GET /healthz (200 "ok", or 503 and why), on one thread of its
// own, so that a scrape never waits on the process's work and the work never on a scrape. In the
// rtb_admin library (Boost.Beast), apart from rtb_core.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "rtb/core/status.h"

namespace rtb {

struct AdminRoutes {
  // The /metrics page; called on the admin thread (what it reads must be safe to read there).
  std::function<std::string()> metrics;
  // Empty when healthy, else why not (the 503's body). Null: always healthy.
  std::function<std::string()> unhealthy;
};

class AdminServer {
 public:
  // Listens on host:port ("127.0.0.1:9102"; port 0 picks a free one) and serves until
  // destroyed. An error when the address does not parse or cannot be bound.
  static Result<std::unique_ptr<AdminServer>> Start(const std::string& listen, AdminRoutes routes);
  ~AdminServer();  // stops serving: open connections are closed
  unsigned short port() const;

  struct Impl;

 private:
  explicit AdminServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The admin port of a process: its own families (`own_metrics`), then rtb_build_info and the
// process_* families, and /healthz (`unhealthy`, may be null); logs where it listens under
// `component`.
Result<std::unique_ptr<AdminServer>> StartAdminPort(const std::string& listen,
                                                    std::function<std::string()> own_metrics,
                                                    std::function<std::string()> unhealthy,
                                                    const std::string& component);

// /healthz of a process whose work is a loop: empty while it turns, else "the <loop> has not
// turned for N s" once its last turn (Unix ms; -1: none yet, which is not a stall) is more than
// `limit_ms` old.
inline std::string LoopStalled(std::string_view loop, int64_t last_turn_ms, int64_t now_ms,
                               int64_t limit_ms) {
  if (last_turn_ms < 0 || now_ms - last_turn_ms <= limit_ms) return {};
  return "the " + std::string(loop) + " has not turned for " +
         std::to_string((now_ms - last_turn_ms) / 1000) + " s";
}

}  // namespace rtb
