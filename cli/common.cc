#include "common.h"

#include <cstdio>
#include <filesystem>

#include "rtb/core/log.h"
#include "rtb/demo/demo.h"
#include "rtb/simulator/config.h"

namespace rtb::cli {

namespace fs = std::filesystem;

int Fail(const Status& st) {
  std::fprintf(stderr, "rtb: error: %s\n", st.message().c_str());
  return 1;
}

void AddLogOptions(CLI::App* app, LogArgs* a) {
  app->add_option("--log-level", a->level,
                  "Log level: trace, debug, info, warn, error or off (default: the config's or "
                  "info)");
  app->add_option("--log-format", a->format, "Log lines as text or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

Status InitLog(const std::string& sub, const LogArgs& a, const std::string& config_level) {
  rtb::log::Options o;
  o.process = "rtb-" + sub;
  o.level = !a.level.empty() ? a.level : config_level.empty() ? "info" : config_level;
  RTB_ASSIGN_OR_RETURN(o.format, rtb::log::ParseFormat(a.format));
  return rtb::log::Init(o);
}

void AddAuctionOption(CLI::App* sub, std::string* type) {
  sub->add_option("--auction", *type, sim::kAuctionOptionHelp)
      ->check(CLI::IsMember(sim::kAuctionTypes));
}

std::string DefaultConfig(const std::string& rel) {
  if (fs::exists(rel)) return rel;
  // Installed (cmake --install): <prefix>/bin/rtb finds <prefix>/share/rtb/<rel>.
  if (demo::ExeDir().filename() == fs::path(RTB_INSTALLED_BIN).filename()) {
    const fs::path installed = demo::ExeDir().parent_path() / RTB_INSTALLED_DATA / rel;
    if (fs::exists(installed)) return installed.lexically_normal().string();
  }
  const fs::path alt = demo::ExeDir() / ".." / ".." / rel;
  if (fs::exists(alt)) return fs::weakly_canonical(alt).string();
  return rel;
}

}  // namespace rtb::cli
