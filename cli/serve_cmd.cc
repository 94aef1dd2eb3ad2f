#include "serve_cmd.h"

#include "rtb/bidder/bidder.h"
#include "rtb/bidder/config.h"
#include "rtb/bidder/server.h"
#include "rtb/core/log.h"

namespace rtb::cli {

CLI::App* AddServeCommand(CLI::App* app, ServeArgs* a) {
  a->config = DefaultConfig("configs/bidder/default.yaml");
  auto* sv = app->add_subcommand("serve", "Run the OpenRTB bidder (HTTP, Kafka event log)");
  sv->add_option("--config", a->config, "Bidder config (YAML)")->capture_default_str();
  sv->add_option("--listen", a->listen, "host:port, overrides the config");
  sv->add_option("--notice-base-url", a->notice_base_url,
                 "Where exchanges reach the notice URLs (http://public-host:port), overrides "
                 "notice_base_url");
  sv->add_option("--brokers", a->brokers,
                 "Kafka bootstrap servers (host:port,...), or embedded; overrides kafka.brokers");
  return sv;
}

int RunServe(const ServeArgs& a, const LogArgs& la) {
  auto cfg = rtb::bidder::LoadBidderConfig(a.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (auto st = InitLog("serve", la, cfg->log_level); !st.ok()) return Fail(st);
  if (!a.listen.empty()) {
    // Notices follow the listening address unless the config names another base URL.
    if (cfg->notice_base_url == "http://" + cfg->listen)
      cfg->notice_base_url = "http://" + a.listen;
    cfg->listen = a.listen;
  }
  if (!a.notice_base_url.empty()) cfg->notice_base_url = a.notice_base_url;
  if (!a.brokers.empty()) cfg->kafka.brokers = a.brokers;
  if (auto st = rtb::bidder::CheckNoticeBaseUrl(cfg->notice_base_url); !st.ok()) {
    return Fail(rtb::Status::InvalidArgument("notice URLs " + st.message() +
                                             " (--notice-base-url or notice_base_url)"));
  }
  auto bidder = rtb::bidder::Bidder::Create(*cfg);
  if (!bidder.ok()) return Fail(bidder.status());
  rtb::bidder::Server server(**bidder, cfg->listen);
  auto port = server.Start();
  if (!port.ok()) return Fail(port.status());
  auto& lg = rtb::log::Get("serve");
  lg.info("listening on {} (port {}), bids at {}, kafka {}", cfg->listen, *port, cfg->bid_path,
          (*bidder)->events().bootstrap());
  server.Wait(/*handle_signals=*/true);
  (*bidder)->Shutdown();  // flush or spill every event before exit
  const auto s = (*bidder)->events().Stats();
  // Every event logged is acked, or waits in the spill file for the next start: logged = acked +
  // spilled - resent (a re-sent line is acked, or spilled again), and nothing is lost when
  // nothing is left in the spill file and nothing was dropped.
  lg.info(
      "stopped; events logged {}, acked {}, spilled {}, resent {}, left in the spill file {}, "
      "dropped {}",
      s.logged, s.acked, s.spilled, s.resent, s.spill_pending, s.dropped);
  return 0;
}

}  // namespace rtb::cli
