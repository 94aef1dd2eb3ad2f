#include "rtb/bidder/policy_feed.h"

#include "rtb/core/clock.h"
#include "rtb/core/log.h"

namespace rtb::bidder {

Result<std::unique_ptr<PolicyFeed>> PolicyFeed::Start(
    PolicyFeedOptions opt, PolicyHolder* holder,
    std::shared_ptr<const ClusterMap> default_clusters) {
  kafka::Consumer::Options co;
  static_cast<kafka::ClientOptions&>(co) = opt.client;
  co.group_id = opt.group_id;
  // A new table should reach the bid path at once. A broker ends a fetch's wait when data
  // arrives, but the embedded cluster holds a fetch that found nothing for the whole wait
  // (librdkafka's mock: "we should cut the wait short ... too much of a hassle"): at the default
  // 500 ms a table waited 0-500 ms more. The topic is one small partition: a fetch every 50 ms
  // when idle costs nothing.
  co.properties.insert(co.properties.begin(), {"fetch.wait.max.ms", "50"});  // the site's win
  // Only committed tables: the learner publishes each in a transaction, and a table whose
  // learner was fenced off by a newer one is aborted (learner/README.md, "Fencing"). It is
  // librdkafka's default, set here so that no default can change it (the property is the
  // engine's: kafka.properties cannot set it).
  co.properties.emplace_back("isolation.level", "read_committed");
  RTB_ASSIGN_OR_RETURN(auto consumer, kafka::Consumer::Create(std::move(co)));
  RTB_RETURN_IF_ERROR(consumer->Assign({{opt.topic, 0, kafka::kOffsetBeginning}}));
  if (opt.keys == nullptr) {
    log::Get("policy").warn("market_keys not set: messages on {} are not authenticated", opt.topic);
  }
  std::unique_ptr<PolicyFeed> feed(
      new PolicyFeed(holder, std::move(default_clusters), opt.clock, opt.topic, opt.keys));
  PolicyFeed* raw = feed.get();
  feed->thread_ = std::thread([raw, c = std::move(consumer), nice = opt.thread_nice]() mutable {
    raw->Run(std::move(c), nice);
  });
  return feed;
}

PolicyFeed::~PolicyFeed() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

Status PolicyFeed::Apply(std::string_view payload) {
  std::string body;
  if (keys_ != nullptr) {
    const SealCheck c = keys_->Open(topic_, payload, &body);
    if (c != SealCheck::kOk) {
      rejected_seal_.fetch_add(1);
      return Status::Corruption(std::string("policy message: ") + SealCheckName(c));
    }
    payload = body;
  }
  auto msg = DecodePolicyMessage(payload, "policy topic");
  if (!msg.ok()) {
    rejected_invalid_.fetch_add(1);
    return msg.status();
  }
  // Sane bounds: a version near 2^64 would block every later table for good, and a table
  // from the future would never go stale.
  const int64_t now = clock_->UnixMs();
  if (msg->table.version > kMaxPolicyVersion) {
    rejected_invalid_.fetch_add(1);
    return Status::Corruption("policy version " + std::to_string(msg->table.version) +
                              " is above " + std::to_string(kMaxPolicyVersion));
  }
  if (const PolicySnapshot* cur = holder_->Current();
      cur != nullptr && cur->table.version > 1 &&
      msg->table.version > cur->table.version + kMaxVersionJump) {
    rejected_invalid_.fetch_add(1);
    return Status::Corruption("policy version " + std::to_string(msg->table.version) +
                              " is more than " + std::to_string(kMaxVersionJump) +
                              " above the one in use (" + std::to_string(cur->table.version) +
                              "): from the far future");
  }
  if (msg->table.created_unix_ms > now + kMaxClockSkewMs) {
    rejected_invalid_.fetch_add(1);
    return Status::Corruption("policy created_unix_ms " +
                              std::to_string(msg->table.created_unix_ms) + " is in the future");
  }
  auto snap = std::make_unique<PolicySnapshot>();
  const uint64_t version = msg->table.version;
  snap->table = std::move(msg->table);
  snap->alpha_range = msg->alpha_range;
  if (msg->clusters) {
    snap->clusters = std::make_shared<const ClusterMap>(std::move(*msg->clusters));
  } else {
    const PolicySnapshot* cur = holder_->Current();
    snap->clusters = cur != nullptr ? cur->clusters : default_clusters_;
  }
  snap->loaded_unix_ms = clock_->UnixMs();
  if (!holder_->Install(std::move(snap))) {  // counted by the holder
    return Status::FailedPrecondition("policy version " + std::to_string(version) +
                                      " is older than the one in use");
  }
  installed_.fetch_add(1);
  return Status::Ok();
}

void PolicyFeed::Run(std::unique_ptr<kafka::Consumer> consumer, int thread_nice) {
  kafka::NiceThisThread("rtb-policy", thread_nice);
  auto& lg = log::Get("policy");
  log::RateLimit limit(5, std::chrono::seconds(60));
  while (!stop_.load()) {
    std::optional<kafka::Message> m = consumer->Poll(200);
    if (!m || !m->ok()) continue;
    const Status st = Apply(m->payload());
    uint64_t skipped = 0;
    if (st.ok()) {
      lg.info("installed policy version {} (offset {})", holder_->Current()->table.version,
              m->offset());
    } else if (limit.Allow(&skipped)) {
      lg.warn("rejected the policy message at {}/0/{}: {} ({} more not logged)", topic_,
              m->offset(), st.message(), skipped);
    }
  }
  // The last message is released (m goes out of scope) before the consumer is destroyed.
}

}  // namespace rtb::bidder
