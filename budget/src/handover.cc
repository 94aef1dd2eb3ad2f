#include "rtb/budget/handover.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <utility>

#include "rtb/core/log.h"
#include "rtb/kafka/kafka.h"

namespace rtb::budget {
namespace {

// A claim, or a beat: its coordinator serves or waits to (neither handed over nor gone).
bool Standing(CoordinatorState s) {
  return s == CoordinatorState::kClaim || s == CoordinatorState::kServing;
}

}  // namespace

Status CheckGrantsTopicConfig(const std::map<std::string, std::string>& config, int64_t day_ms) {
  const int64_t two_days_ms = 2 * day_ms;
  const std::string two_days = std::to_string(two_days_ms) +
                               (day_ms == kCalendarDayMs ? " (two days)" : " (two of its days)");
  auto setting = [&](const std::string& name, const std::string& fallback) {
    const auto it = config.find(name);
    return it == config.end() ? fallback : it->second;
  };
  auto number = [&](const std::string& name, const std::string& fallback) -> Result<int64_t> {
    const std::string v = setting(name, fallback);
    int64_t ms = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
    if (ec != std::errc() || end != v.data() + v.size()) {
      return Status::InvalidArgument(name + " is \"" + v + "\", not a whole number");
    }
    return ms;
  };
  const std::string policy = setting("cleanup.policy", "delete");
  const bool compact = policy.find("compact") != std::string::npos;
  const bool del = policy.find("delete") != std::string::npos;
  const bool keep_all = policy.find_first_not_of(" ") == std::string::npos;  // "": nothing runs
  if (!compact && !del && !keep_all) {
    return Status::InvalidArgument("cleanup.policy is \"" + policy +
                                   "\", neither compact nor delete");
  }
  if (compact) {
    RTB_ASSIGN_OR_RETURN(const int64_t lag, number("min.compaction.lag.ms", "0"));
    if (lag < two_days_ms) {
      return Status::InvalidArgument("min.compaction.lag.ms is " + std::to_string(lag) +
                                     ": compaction could keep a fenced-off "
                                     "holding in place of a day's current one; set it to " +
                                     two_days + " or more");
    }
  }
  if (del) {
    RTB_ASSIGN_OR_RETURN(const int64_t retention, number("retention.ms", "604800000"));
    if (retention >= 0 && retention < two_days_ms) {
      return Status::InvalidArgument("retention.ms is " + std::to_string(retention) +
                                     ": a day's holdings could be deleted while the day lasts; "
                                     "set it to " +
                                     two_days + " or more, or -1");
    }
    RTB_ASSIGN_OR_RETURN(const int64_t bytes, number("retention.bytes", "-1"));
    if (bytes >= 0) {
      return Status::InvalidArgument("retention.bytes is " + std::to_string(bytes) +
                                     ": a full partition deletes its oldest holdings whatever "
                                     "their day; set it to -1");
    }
  }
  return Status::Ok();
}

Handover::Handover(HandoverOptions opt, Clock* clock, std::string instance, std::string host,
                   kafka::Producer* grants)
    : opt_(std::move(opt)),
      clock_(clock),
      instance_(std::move(instance)),
      host_(std::move(host)),
      grants_(grants) {}

Handover::~Handover() { Yield(); }

Result<std::unique_ptr<Handover>> Handover::Create(HandoverOptions opt, Clock* clock,
                                                   std::string instance, std::string host,
                                                   kafka::Producer* grants) {
  std::unique_ptr<Handover> h(
      new Handover(std::move(opt), clock, std::move(instance), std::move(host), grants));
  kafka::Producer::Options po;
  po.bootstrap = h->opt_.brokers;
  po.properties = {{"enable.idempotence", "true"}, {"linger.ms", "1"}};
  po.properties.insert(po.properties.end(), h->opt_.kafka_properties.begin(),
                       h->opt_.kafka_properties.end());
  RTB_ASSIGN_OR_RETURN(h->control_out_, kafka::Producer::Create(std::move(po)));
  return h;
}

std::string Handover::ControlTopic() const {
  return opt_.coordinators_topic.empty() ? DefaultCoordinatorsTopic(opt_.grants_topic)
                                         : opt_.coordinators_topic;
}

CoordinatorRecord Handover::Record(CoordinatorState state, const std::string& whose) const {
  CoordinatorRecord r;
  r.state = state;
  r.instance = whose;
  r.host = whose == instance_ ? host_ : std::string();
  r.ts_ms = clock_->UnixMs();
  if (state == CoordinatorState::kGone) r.by = instance_;
  return r;
}

Status Handover::Put(const CoordinatorRecord& r, int flush_ms) {
  RTB_RETURN_IF_ERROR(
      control_out_->Produce(ControlTopic(), 0, r.instance, EncodeCoordinatorRecord(r)));
  if (r.instance == instance_ && r.state == CoordinatorState::kClaim) claimed_ = true;
  return control_out_->Flush(flush_ms);
}

// A grants topic that may drop a day's holdings while the day lasts (CheckGrantsTopicConfig)
// is refused (InvalidArgument: `rtb budget` exits, having claimed nothing). One whose
// configuration the cluster does not describe is served: the embedded cluster describes none
// (logged at info), and a real one that did not answer in time or refused the request (no
// DescribeConfigs permission) is logged as a warning.
Status Handover::CheckGrantsTopic() {
  auto config = opt_.describe_topic ? opt_.describe_topic(opt_.grants_topic)
                                    : control_->TopicConfig(opt_.grants_topic, 5'000);
  if (!config.ok()) {
    const bool never = config.status().code() == Status::Code::kFailedPrecondition;
    log::Get("budget").log(
        never ? spdlog::level::info : spdlog::level::warn,
        "coordinator: {}'s retention not checked ({}); it must keep min.compaction.lag.ms, "
        "retention.ms and retention.bytes as docs/budget-leases.md (section 2) says",
        opt_.grants_topic, config.status().message());
    return Status::Ok();
  }
  if (Status st = CheckGrantsTopicConfig(*config, opt_.day_ms); !st.ok()) {
    const std::string why = opt_.grants_topic + ": " + st.message();
    log::Get("budget").error("coordinator: {}", why);
    return Status::InvalidArgument(why);
  }
  return Status::Ok();
}

Status Handover::AwaitTurn() {
  const std::string topic = ControlTopic();
  kafka::Consumer::Options co;
  co.bootstrap = opt_.brokers;
  co.group_id = opt_.group_id + ".coordinators." + instance_;  // assigned, never joins or commits
  co.properties = {{"auto.offset.reset", "earliest"},  // an offset out of range skips nothing
                   {"fetch.wait.max.ms", "20"}};       // the fence reads its beats back in time
  co.properties.insert(co.properties.end(), opt_.kafka_properties.begin(),
                       opt_.kafka_properties.end());
  RTB_ASSIGN_OR_RETURN(control_, kafka::Consumer::Create(std::move(co)));
  RTB_RETURN_IF_ERROR(control_->Assign({{topic, 0, kafka::kOffsetBeginning}}));
  RTB_RETURN_IF_ERROR(CheckGrantsTopic());  // before the claim, which makes the serving one go
  const int64_t claimed_ms = clock_->SteadyMs();
  if (Status st = Put(Record(CoordinatorState::kClaim, instance_)); !st.ok()) {
    return Status::Unavailable("cannot claim the market on " + topic + ": " + st.message());
  }
  std::map<std::string, CoordinatorRecord> before;  // latest per instance, before this claim
  std::set<std::string> waiting;
  bool mine = false;
  // Reading its own claim back is Kafka's time, not the clock's; the hand-over wait is the
  // clock's (tests move it).
  const int64_t read_back_by = NowSteadyUs() / 1000 + 30'000;
  int64_t deadline = -1;  // clock's steady ms, once its claim is read back
  while (!mine || !waiting.empty()) {
    if (opt_.stop != nullptr && opt_.stop->load()) {
      return Status::Unavailable("stopped before serving the market");
    }
    if (!mine && NowSteadyUs() / 1000 >= read_back_by) {
      return Status::Unavailable(topic + ": this coordinator's claim was not read back in 30 s");
    }
    if (mine && clock_->SteadyMs() >= deadline) {
      for (const std::string& w : waiting) {
        log::Get("budget").warn(
            "coordinator: coordinator {} ({}) did not hand the market over in {} ms: taken for "
            "dead (docs/budget-leases.md, section 2)",
            w, before[w].host, opt_.handover_timeout_ms);
        RTB_RETURN_IF_ERROR(Put(Record(CoordinatorState::kGone, w)));
      }
      taken_for_dead_ = static_cast<int64_t>(waiting.size());
      break;
    }
    auto msg = control_->Poll(100);
    if (!msg) continue;
    if (!msg->ok()) {
      if (!msg->eof()) log::Get("budget").warn("coordinator: reading {}: {}", topic, msg->error());
      continue;
    }
    if (mine && msg->offset() <= claim_offset_) continue;  // read again after a reset
    auto r = DecodeCoordinatorRecord(msg->payload());
    if (!r.ok()) continue;
    if (!mine) {
      if (r->instance == instance_ && r->state == CoordinatorState::kClaim) {
        mine = true;
        claim_offset_ = msg->offset();
        fresh_until_ms_ = claimed_ms + FenceMs();
        for (const auto& [i, rec] : before) {
          if (Standing(rec.state)) waiting.insert(i);
        }
        waited_for_ = static_cast<int64_t>(waiting.size());
        for (const std::string& w : waiting) {
          log::Get("budget").info(
              "coordinator: waiting up to {} ms for coordinator {} ({}) to hand the market over",
              opt_.handover_timeout_ms, w, before[w].host);
        }
        deadline = clock_->SteadyMs() + opt_.handover_timeout_ms;
      } else {
        before[r->instance] = *r;
      }
      continue;
    }
    if (r->state == CoordinatorState::kClaim && r->instance != instance_) {
      return Status::FailedPrecondition("coordinator " + r->instance + " (" + r->host +
                                        ") claimed the market after this one: it serves");
    }
    if (!Standing(r->state)) waiting.erase(r->instance);
  }
  return Status::Ok();
}

Status Handover::FenceGrants(int64_t epoch) {
  epoch_ = epoch > 0 ? epoch : claim_offset_ + 1;
  auto parts = control_->PartitionCount(opt_.grants_topic, 10'000);
  if (!parts.ok()) {
    return Status::Unavailable("cannot fence " + opt_.grants_topic + ": " +
                               parts.status().message());
  }
  EpochMarker marker{.epoch = epoch_, .coordinator = instance_, .ts_ms = clock_->UnixMs()};
  Status st;
  for (int32_t p = 0; p < *parts && st.ok(); ++p) {
    st = grants_->Produce(opt_.grants_topic, p, EpochMarkerKey(p, epoch_),
                          SealFor(opt_.keys.get(), opt_.grants_topic, EncodeEpochMarker(marker)));
  }
  if (st.ok()) st = grants_->Flush(10'000);
  if (!st.ok()) {
    // Only markers are queued (no holding is published before the fence): dropped, so that
    // this one hands over at once instead of waiting as for undelivered holdings.
    grants_->PurgeAll();
    return Status::Unavailable("cannot fence " + opt_.grants_topic + ": " + st.message());
  }
  grants_partitions_ = *parts;
  return Status::Ok();
}

int64_t Handover::BeatEveryMs() const { return std::clamp<int64_t>(FenceMs() / 5, 100, 1'000); }

bool Handover::Fresh() const { return clock_->SteadyMs() < fresh_until_ms_; }

void Handover::Beat() {
  const int64_t t = clock_->SteadyMs();
  if (t >= next_beat_ms_) {
    next_beat_ms_ = t + BeatEveryMs();
    CoordinatorRecord r = Record(CoordinatorState::kServing, instance_);
    r.seq = ++beat_seq_;
    // Not flushed: a beat that cannot be delivered is simply not read back. Keyed apart from
    // the claim, which compaction must keep until a yield or gone replaces it.
    if (control_out_->Produce(ControlTopic(), 0, instance_ + "/beat", EncodeCoordinatorRecord(r))
            .ok()) {
      beats_sent_[r.seq] = t;
      while (beats_sent_.size() > 1'000) beats_sent_.erase(beats_sent_.begin());
    }
  }
  control_out_->Poll(0);
}

void Handover::ReadBack(int64_t seq) {
  const auto it = beats_sent_.find(seq);
  if (it == beats_sent_.end()) return;
  fresh_until_ms_ = std::max(fresh_until_ms_, it->second + FenceMs());
  beats_sent_.erase(beats_sent_.begin(), std::next(it));
}

void Handover::Fence() {
  if (fenced_) return;
  fenced_ = true;
  fenced_since_ms_ = clock_->SteadyMs();
  if (!served_) {  // its claim was read back too long ago (a start's wait): no fence yet
    log::Get("budget").info("coordinator: waits to read its first beat back from {}",
                            ControlTopic());
    return;
  }
  ++fences_;
  log::Get("budget").warn(
      "coordinator: no beat of its own read back from {} within {} ms: it grants nothing until "
      "one is (a newer coordinator may have claimed the market; docs/budget-leases.md, section "
      "2)",
      ControlTopic(), FenceMs());
}

int64_t Handover::Unfence() {
  const bool was_serving = served_;
  served_ = true;
  if (!fenced_) return -1;
  fenced_ = false;
  if (!was_serving) return -1;  // the start's wait, not logged as a fence
  const int64_t spell = clock_->SteadyMs() - fenced_since_ms_;
  log::Get("budget").info("coordinator: reads its own beats back again after {} ms: grants again",
                          spell);
  return spell;
}

std::optional<CoordinatorRecord> Handover::NewerClaim() {
  for (int n = 0; n < 64; ++n) {
    auto msg = control_->Poll(0);
    if (!msg) return std::nullopt;
    if (!msg->ok() || msg->offset() <= claim_offset_) continue;
    auto r = DecodeCoordinatorRecord(msg->payload());
    if (!r.ok()) continue;
    if (r->instance == instance_) {
      if (r->state == CoordinatorState::kServing) ReadBack(r->seq);
      if (r->state == CoordinatorState::kGone) return *r;
      continue;
    }
    if (r->state == CoordinatorState::kClaim) return *r;
  }
  return std::nullopt;
}

void Handover::Yield() {
  if (!claimed_ || yielded_) return;
  yielded_ = true;
  Status delivered = Status::Ok();
  for (int n = 0; n < 2 && grants_->QueueLength() > 0; ++n) delivered = grants_->Flush(1'500);
  if (grants_->QueueLength() > 0) {
    log::Get("budget").warn(
        "coordinator: {} holdings still undelivered ({}): not handing the market over; the next "
        "coordinator waits {} ms for this one",
        grants_->QueueLength(), delivered.message(), opt_.handover_timeout_ms);
    return;
  }
  if (const Status st = Put(Record(CoordinatorState::kYield, instance_), 2'000); !st.ok()) {
    log::Get("budget").warn(
        "coordinator: could not hand the market over on {} ({}); the next coordinator waits {} "
        "ms for this one",
        ControlTopic(), st.message(), opt_.handover_timeout_ms);
  }
}

}  // namespace rtb::budget
