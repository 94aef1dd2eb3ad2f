// PolicyFeed: the bidder's reader of the policy topic. A thread reads every message of the
// topic's partition 0 from the beginning (no group join: every bidder reads every policy),
// decodes it once with the shared codec (rtb/core/policy.h: bounded size and depth, every
// field validated) and installs it whole into the PolicyHolder, or rejects it whole: a
// rejected message is logged (rate-limited), counted by reason, and skipped, so a poison
// message can never stop a bidder, at start or later. With the market's key ring (bidder config
// market_keys) every message must be sealed by the learner (core/mac.h): one that is not
// (unsealed, unknown_key, bad_mac) is refused the same way, before it is decoded.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "rtb/bidder/policy.h"
#include "rtb/core/clock.h"
#include "rtb/core/mac.h"
#include "rtb/core/status.h"
#include "rtb/kafka/kafka.h"

namespace rtb::bidder {

struct PolicyFeedOptions {
  kafka::ClientOptions client;
  std::string topic;
  std::string group_id;          // librdkafka wants one; no group is joined
  int thread_nice = 0;           // the feed thread's own priority (kafka.thread_nice)
  Clock* clock = SystemClock();  // a table's age and skew are judged by it
  // The market's key ring (MarketKeysOf): tables must be sealed with it. nullptr: taken
  // unsealed (the feed says so once at start).
  std::shared_ptr<const MarketKeys> keys;
};

class PolicyFeed {
 public:
  // Versions above this are refused (the learner numbers steps from 1: 2^48 steps is ~32
  // billion years of hourly steps), and so are tables made more than kMaxClockSkewMs ahead
  // of this bidder's clock.
  static constexpr uint64_t kMaxPolicyVersion = uint64_t{1} << 48;
  static constexpr int64_t kMaxClockSkewMs = 10 * 60 * 1000;
  // A version more than this above the one in use is from the far future: refused (a forged
  // table of day 10^9 would otherwise block every genuine later table). The learner's versions
  // grow by one a step: 2^20 steps is 119 years of hourly steps, two of one-minute steps. Not
  // applied above a learner's cold-start table (version 1): its first step's table is numbered
  // from the day and step (1 + day x steps_per_day + step), far above 1 on a wall clock.
  static constexpr uint64_t kMaxVersionJump = uint64_t{1} << 20;

  // Starts the thread. `holder` and `default_clusters` must outlive the feed.
  static Result<std::unique_ptr<PolicyFeed>> Start(
      PolicyFeedOptions opt, PolicyHolder* holder,
      std::shared_ptr<const ClusterMap> default_clusters);
  ~PolicyFeed();  // stops and joins the thread

  // Decodes and installs one message (the thread's step; tests call it directly). kOk when
  // installed; otherwise the reason it was not (and it was counted).
  Status Apply(std::string_view payload);

  uint64_t installed() const { return installed_.load(); }
  // Messages that did not decode or validate (older versions: PolicyHolder::rejected()).
  uint64_t rejected_invalid() const { return rejected_invalid_.load(); }
  // Messages refused for their seal (unsealed, unknown_key, bad_mac) with a key ring set.
  uint64_t rejected_seal() const { return rejected_seal_.load(); }

 private:
  PolicyFeed(PolicyHolder* holder, std::shared_ptr<const ClusterMap> default_clusters, Clock* clock,
             std::string topic, std::shared_ptr<const MarketKeys> keys)
      : holder_(holder),
        default_clusters_(std::move(default_clusters)),
        clock_(clock),
        topic_(std::move(topic)),
        keys_(std::move(keys)) {}
  void Run(std::unique_ptr<kafka::Consumer> consumer, int thread_nice);

  PolicyHolder* holder_;
  std::shared_ptr<const ClusterMap> default_clusters_;
  Clock* clock_;
  std::string topic_;
  std::shared_ptr<const MarketKeys> keys_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::atomic<uint64_t> installed_{0}, rejected_invalid_{0}, rejected_seal_{0};
};

}  // namespace rtb::bidder
