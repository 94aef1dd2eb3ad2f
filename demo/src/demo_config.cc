#include "demo_config.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "rtb/core/config.h"
#include "rtb/simulator/config.h"

namespace rtb::demo {

namespace fs = std::filesystem;

Result<DemoConfig> LoadDemoConfig(const std::string& path) {
  RTB_ASSIGN_OR_RETURN(auto file, ConfigFile::Load(path));
  DemoConfig c;
  ConfigMap root = file->Root();
  root.Get("learner_config", &c.learner_config);
  root.Get("bidder_config", &c.bidder_config);
  root.Get("out", &c.out);
  root.Get("days", &c.days);
  root.Check(c.days >= 1 && c.days <= 365, "days", "must be between 1 and 365");
  root.Get("pretrain", &c.pretrain);
  root.Get("first_day_seed", &c.first_day_seed);
  root.Get("bidder_threads", &c.bidder_threads);
  root.Check(c.bidder_threads >= 1, "bidder_threads", "must be >= 1");
  root.Get("learned_share", &c.learned_share);
  root.Check(c.learned_share > 0 && c.learned_share <= 1, "learned_share",
             "must be in (0, 1]: the learner needs a learned arm");
  root.Get("chaos", &c.chaos);
  root.Get("bidders", &c.bidders);
  root.Check(c.bidders >= 1 && c.bidders <= 16, "bidders", "must be between 1 and 16");
  root.Get("bidder_spread", &c.bidder_spread);
  root.Check(c.bidder_spread.empty() || (static_cast<int>(c.bidder_spread.size()) == c.bidders &&
                                         std::all_of(c.bidder_spread.begin(), c.bidder_spread.end(),
                                                     [](double w) { return w > 0; })),
             "bidder_spread", "needs one positive weight per bidder (or none: equal)");
  root.Get("auction", &c.auction);
  root.Check(c.auction.empty() || sim::CheckAuctionType(c.auction).ok(), "auction",
             "must be gsp, gfp or first_price (or \"\": the world's)");
  root.Get("cpa_share", &c.cpa_share);
  root.Check(c.cpa_share == -1 || (c.cpa_share >= 0 && c.cpa_share <= 1), "cpa_share",
             "must be in [0, 1] (or -1: the world's)");
  ConfigMap e = root.Section("exchange");
  e.Get("concurrency", &c.exchange.concurrency);
  e.Check(c.exchange.concurrency >= 1, "concurrency", "must be >= 1");
  e.Get("tmax_ms", &c.exchange.tmax_ms);
  e.Get("io_timeout_ms", &c.exchange.io_timeout_ms);
  e.Get("outcomes", &c.exchange.outcomes);
  e.Check(c.exchange.outcomes == "expected" || c.exchange.outcomes == "sampled", "outcomes",
          "must be expected or sampled");
  e.Get("send_loss_notices", &c.exchange.send_loss_notices);
  e.Get("policy_wait_ms", &c.exchange.policy_wait_ms);
  e.Get("slow_start_ms", &c.exchange.slow_start_ms);
  e.Check(c.exchange.slow_start_ms >= 0, "slow_start_ms", "must be >= 0");
  e.Get("seed", &c.exchange.seed);
  RTB_RETURN_IF_ERROR(file->Finish());
  const fs::path dir = fs::path(path).parent_path();
  for (std::string* p : {&c.learner_config, &c.bidder_config}) {
    if (fs::path(*p).is_relative()) *p = (dir / *p).lexically_normal().string();
  }
  return c;
}

Result<std::vector<Chaos>> ParseChaos(const std::vector<std::string>& specs) {
  std::vector<Chaos> out;
  for (const auto& spec : specs) {
    Chaos c;
    std::string s = spec;
    constexpr std::string_view kLater = "+step";
    if (s.size() > kLater.size() &&
        s.compare(s.size() - kLater.size(), kLater.size(), kLater) == 0) {
      c.step_later = true;
      s.resize(s.size() - kLater.size());
    }
    const size_t at = s.find('@'), colon = s.find(':');
    c.what = s.substr(0, at);
    if (at == std::string::npos || colon == std::string::npos || colon < at ||
        (c.what != "kill-learner" && c.what != "kill-bidder") ||
        (c.step_later && c.what != "kill-bidder")) {
      return Status::InvalidArgument("chaos '" + spec +
                                     "': want kill-learner@D:S, kill-bidder@D:S or "
                                     "kill-bidder@D:S+step");
    }
    // Whole numbers, in range: std::from_chars throws nothing.
    auto number = [](std::string_view x, auto* v) {
      const auto [end, ec] = std::from_chars(x.data(), x.data() + x.size(), *v);
      return !x.empty() && x.front() != '-' && ec == std::errc() && end == x.data() + x.size();
    };
    if (!number(std::string_view(s).substr(at + 1, colon - at - 1), &c.day) ||
        !number(std::string_view(s).substr(colon + 1), &c.step)) {
      return Status::InvalidArgument("chaos '" + spec + "': day and step must be integers");
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace rtb::demo
