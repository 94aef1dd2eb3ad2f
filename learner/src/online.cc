// The online learner: Kafka in, transitions and updates, action tables out.
//
// Durable state (all in the replay store's RocksDB, one atomic write per closed step):
//   transition t          the step's (s, d, a, r, s', d', done)            (Algorithm 1, l. 9)
//   u:online              consumer position (next offset per events partition, next clock
//                         offset), the open steps' totals (StepMerger), the day's cumulative
//                         g, the last d, and the state s / actions a of the step now playing
//   u:step:<day>:<step>   the closed step's totals (audits; `rtb demo` checks them against
//                         the exchange's accounting)
// The checkpoint (networks, optimizers, noise, RNG) is written after the updates; a crash
// between the two costs at most that step's updates, never a transition or an event.
//
// One learner publishes a group's tables (learner/README.md, "Fencing"): it reads its input by
// assignment (every events partition and the clock's, from the stored position: no group to
// split them), publishes each table in a Kafka transaction of the group's transactional.id
// (a newer learner's start fences it: its next commit fails), never publishes a version the
// policy topic holds already, and stops once the group's claim names another learner.
#include "rtb/learner/online.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "rtb/core/action_table.h"
#include "rtb/core/clock.h"
#include "rtb/core/events.h"
#include "rtb/core/log.h"
#include "rtb/core/policy.h"
#include "rtb/core/step_marker.h"
#include "rtb/kafka/kafka.h"
#include "rtb/learner/agents.h"
#include "rtb/learner/market.h"
#include "rtb/learner/replay_store.h"
#include "rtb/learner/state.h"
#include "rtb/learner/step_merge.h"
#include "rtb/simulator/env.h"

namespace rtb::learn {
namespace {

namespace fs = std::filesystem;

// What the learner knows between steps (persisted as u:online).
struct LoopState {
  std::map<int32_t, int64_t> offsets;        // events topic: partition -> next offset to read
  int64_t clock_offset = 0;                  // clock topic (partition 0): next marker to read
  std::optional<StepKey> playing;            // the step the published table is for
  std::vector<double> g_cost, g_revenue, d;  // the current day so far (currency units)
  std::vector<float> s, a;                   // state before `playing`, its actions
  uint64_t version = 0;                      // of the published table
  int64_t steps_closed = 0;
  int steps_per_day = 0;  // of the markers accepted so far (0: none yet)
  // x_j's history from the events ([T*L], currency units, whole-market scale): the current
  // day's so far, and the one in use (empty: the market's prior).
  std::vector<double> day_rev, day_cost, hist_rev, hist_cost;
  // The current day so far per advertiser with a target (goal rewards).
  std::map<int64_t, AdvertiserTotals> goal_day;
};

nlohmann::json ToJson(const LoopState& st, const StepMerger& merger) {
  nlohmann::json j;
  nlohmann::json offs = nlohmann::json::object();
  for (const auto& [p, o] : st.offsets) offs[std::to_string(p)] = o;
  j["offsets"] = offs;
  j["clock_offset"] = st.clock_offset;
  if (st.playing) j["playing"] = {st.playing->day, st.playing->step};
  j["g_cost"] = st.g_cost;
  j["g_revenue"] = st.g_revenue;
  j["d"] = st.d;
  j["s"] = st.s;
  j["a"] = st.a;
  j["version"] = st.version;
  j["steps_closed"] = st.steps_closed;
  j["steps_per_day"] = st.steps_per_day;
  j["day_rev"] = st.day_rev;
  j["day_cost"] = st.day_cost;
  j["hist_rev"] = st.hist_rev;
  j["hist_cost"] = st.hist_cost;
  j["merger"] = merger.ToJson();
  auto& goal_day = j["goal_day"] = nlohmann::json::array();
  for (const auto& [id, a] : st.goal_day) {
    goal_day.push_back({id, a.cost_micros, a.conversions, a.value_micros});
  }
  return j;
}

Status FromJson(const std::string& text, LoopState* st, std::optional<StepMerger>* merger) {
  try {
    const auto j = nlohmann::json::parse(text);
    for (const auto& [p, o] : j.at("offsets").items()) st->offsets[std::stoi(p)] = o;
    st->clock_offset = j.at("clock_offset").get<int64_t>();
    if (j.contains("playing")) st->playing = StepKey{j["playing"][0], j["playing"][1]};
    st->g_cost = j.at("g_cost").get<std::vector<double>>();
    st->g_revenue = j.at("g_revenue").get<std::vector<double>>();
    st->d = j.at("d").get<std::vector<double>>();
    st->s = j.at("s").get<std::vector<float>>();
    st->a = j.at("a").get<std::vector<float>>();
    st->version = j.at("version").get<uint64_t>();
    st->steps_closed = j.at("steps_closed").get<int64_t>();
    st->steps_per_day = j.value("steps_per_day", 0);
    for (const auto& [k, v] :
         {std::pair{"day_rev", &st->day_rev}, std::pair{"day_cost", &st->day_cost},
          std::pair{"hist_rev", &st->hist_rev}, std::pair{"hist_cost", &st->hist_cost}}) {
      if (j.contains(k)) *v = j[k].get<std::vector<double>>();
    }
    for (const auto& a : j.value("goal_day", nlohmann::json::array())) {
      st->goal_day[a.at(0).get<int64_t>()] = {a.at(1).get<int64_t>(), a.at(2).get<double>(),
                                              a.at(3).get<int64_t>()};
    }
    RTB_ASSIGN_OR_RETURN(StepMerger m, StepMerger::FromJson(j.at("merger").get<std::string>()));
    merger->emplace(std::move(m));
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("learner state u:online: ") + e.what());
  }
}

// This start's name in the group's claim: host, process and a random part (two starts of one
// process, or of one pid on two hosts, differ).
std::string InstanceName() {
  char host[256] = "";
  (void)::gethostname(host, sizeof host - 1);
  std::random_device rd;
  char name[320];
  std::snprintf(name, sizeof name, "%s/%d/%08x", host, static_cast<int>(::getpid()), rd());
  return name;
}

// Whether every number of the transition is finite.
bool Finite(const Transition& t) {
  for (const std::vector<float>* v : {&t.s, &t.d, &t.a, &t.r, &t.s2, &t.d2}) {
    for (float x : *v) {
      if (!std::isfinite(x)) return false;
    }
  }
  return true;
}

class OnlineLearner {
 public:
  OnlineLearner(const LearnerConfig& cfg, const OnlineOptions& opt, LiveMarket market,
                const AlgoSpec& spec, DeliveryTerm delivery)
      : cfg_(cfg),
        on_(cfg.online),
        opt_(opt),
        market_(std::move(market)),
        spec_(spec),
        N_(market_.shape.agents),
        L_(market_.shape.clusters),
        T_(market_.shape.steps),
        step_ms_(market_.step_ms),
        norm_(MakeNormalizer(market_.shape, cfg.roi_scale)),
        budgets_(market_.budgets),
        delivery_(std::move(delivery)),
        learner_(spec, cfg.hp, norm_, opt.seed),
        sample_rng_(Rng::Mix(opt.seed, 0x0411e)),
        clock_(opt.clock != nullptr ? opt.clock : SystemClock()),
        last_progress_ms_(clock_->SteadyMs()) {}

  ~OnlineLearner() {
    consumer_.reset();
    // A transaction left open would hold the policy's read_committed readers at it until the
    // brokers time it out.
    if (producer_ != nullptr && in_txn_) (void)producer_->AbortTransaction(2000);
    if (producer_ != nullptr) (void)producer_->Flush(5000);
  }

  Status Start();
  Status Run();

 private:
  // Reads every partition of the events topic and the clock's partition 0 by assignment, from
  // the stored position; a later call adds the events partitions that appeared since.
  // kUnavailable: not yet (no brokers, no topic).
  Status AssignInput();
  // Takes the group's tables over: Kafka fences every older producer of the group's
  // transactional.id, the policy topic's highest version is noted (never published again), and
  // the group's claim names this learner. kUnavailable: not yet; a fenced error: stop.
  Status TakeOver();
  // A fenced error (another learner publishes the group's tables now) if the group's claim
  // names another learner; OK when it names this one or the brokers do not say (a claim the
  // brokers dropped is made again).
  Status CheckClaim();
  Status Fenced(const std::string& how) const;
  // The Kafka side of a turn of Run: the input assigned and the tables taken over once the
  // brokers answer (a try a second), then the claim read back every 2 s and the events
  // topic's partitions counted every 10 s. An error: stop (fenced, or what no retry cures).
  Status KeepUp();
  // The events topic's unread messages over its assigned partitions (high watermark less the
  // next offset to read), asked of the brokers; -1 when they do not answer.
  int64_t EventsLag();
  // One try at publishing `payload` in a transaction: OK once committed; kUnavailable when the
  // commit may still go through (try again); otherwise the transaction is aborted (next try).
  Status PublishOnce(const std::string& payload);
  bool Stopping() const { return opt_.stop != nullptr && opt_.stop->load(); }
  std::vector<float> StateAt(int step, bool fresh_day) const;
  // The table to play from state s: the actor's (with exploration noise), kept within
  // a = 0 +- cold_start_range after a cold start.
  std::vector<float> Play(const std::vector<float>& s);
  // Puts st_.hist_rev / hist_cost (when set) into the market's x_j history.
  void ApplyHistory();
  // Adds a closed step's learned-arm totals to the day's history; at the day's end the day
  // becomes the history in use (online.history: events).
  void RecordHistory(const StepKey& key, const StepTotals& tot, bool new_day, bool done);
  Status Publish();
  // `seen_ms`: when the marker was read (clock_->SteadyMs()), for the closing line's timings.
  Status CloseStep(const StepMarker& marker, int64_t marker_offset, int64_t seen_ms,
                   bool timed_out);
  Status Checkpoint();
  void Consume(const kafka::Message& m);
  void ConsumeMarker(const kafka::Message& m);
  // Why a marker is not plausible (more than max_steps_ahead steps after the last accepted
  // one, or of another day length), or nullptr.
  const char* Implausible(const StepMarker& mk) const;
  // Counts a refused message by `kind` and `reason` and logs it (rate-limited per reason).
  void Refuse(const char* kind, const std::string& reason, const kafka::Message& m,
              const std::string& detail);
  // Clips the table to play (st_.a) to within max_table_move of the last published one, and
  // says so when it did.
  void LimitMove(const std::vector<float>& last);
  Status CommitOffsets();
  void Log(const char* fmt, ...) const;
  log::RateLimit consumer_errors_{3, std::chrono::seconds(60)};

  const LearnerConfig& cfg_;
  const OnlineConfig& on_;
  const OnlineOptions& opt_;
  LiveMarket market_;  // its x_j history is replaced by each day's own (CloseStep)
  AlgoSpec spec_;
  const int N_, L_, T_;
  const int64_t step_ms_;
  Normalizer norm_;
  std::vector<double> budgets_;
  DeliveryTerm delivery_;
  MultiAgentLearner learner_;
  Rng sample_rng_;
  std::unique_ptr<ReplayStore> replay_;
  std::optional<StepMerger> merger_;
  LoopState st_;
  struct Pending {
    StepMarker marker;
    int64_t seen_ms;  // clock_'s steady ms
    int64_t offset;   // in the clock topic
  };
  std::deque<Pending> markers_;  // read, not yet closed
  std::unique_ptr<kafka::Consumer> consumer_;
  std::unique_ptr<kafka::Producer> producer_;  // transactional: the group's transactional.id
  std::string bootstrap_;
  // Fencing: this start's name in the group's claim; Kafka's transactions ready; the takeover
  // done; the highest version on the policy topic at the takeover and published since (no
  // table at or below it goes out); a transaction begun and not ended; one to abort first.
  std::string instance_;
  bool txn_ready_ = false, taken_over_ = false, in_txn_ = false, must_abort_ = false;
  uint64_t published_through_ = 0;
  int64_t claim_offset_ = 0;   // the claim's offset: the policy topic's end at the takeover
  int events_partitions_ = 0;  // assigned so far
  std::chrono::steady_clock::time_point next_try_, next_claim_check_, next_partition_check_,
      next_lag_check_;
  log::RateLimit kafka_waits_{3, std::chrono::seconds(60)};
  int64_t decode_errors_ = 0;
  // Refused messages since start by "<kind>:<reason>" (in every step's summary), and one rate
  // limit of their log lines per key.
  std::map<std::string, int64_t> refused_;
  std::map<std::string, std::unique_ptr<log::RateLimit>> refusal_logs_;
  bool assigned_ = false;     // the input partitions are assigned
  bool published_ = false;    // the table of st_.playing went out since (re)start
  bool cold_ = false;         // started with no checkpoint: actions within cold_start_range
  int64_t wall_next_ = -1;    // clock: wall: the index of the next wall-clock step to close
  Clock* clock_;              // OnlineOptions::clock, never null
  int64_t last_progress_ms_;  // clock_'s steady ms
};

void OnlineLearner::ApplyHistory() {
  const size_t TL = static_cast<size_t>(T_) * L_;
  if (st_.hist_rev.size() != TL || st_.hist_cost.size() != TL) return;
  for (int t = 0; t < T_; ++t) {
    for (int j = 0; j < L_; ++j) {
      const size_t q = static_cast<size_t>(t * L_ + j);
      market_.shape.revenue_hist[static_cast<size_t>(t)][static_cast<size_t>(j)] = st_.hist_rev[q];
      market_.shape.cost_hist[static_cast<size_t>(t)][static_cast<size_t>(j)] = st_.hist_cost[q];
    }
  }
}

void OnlineLearner::RecordHistory(const StepKey& key, const StepTotals& tot, bool new_day,
                                  bool done) {
  if (on_.history != "events") return;
  const size_t TL = static_cast<size_t>(T_) * L_;
  if (new_day || st_.day_rev.size() != TL) {
    st_.day_rev.assign(TL, 0.0);
    st_.day_cost.assign(TL, 0.0);
  }
  if (key.step >= 0 && key.step < T_) {
    // The learned arm sees learned_share of the market: scaled to the whole market's, as the
    // prior is.
    const double scale = 1.0 / (1e6 * market_.learned_share);
    for (int i = 0; i < N_; ++i) {
      for (int j = 0; j < L_; ++j) {
        const size_t p = static_cast<size_t>(i * L_ + j),
                     q = static_cast<size_t>(key.step * L_ + j);
        st_.day_rev[q] += static_cast<double>(tot.revenue_micros[p]) * scale;
        st_.day_cost[q] += static_cast<double>(tot.cost_micros[p]) * scale;
      }
    }
  }
  if (!done) return;
  const bool any =
      std::any_of(st_.day_rev.begin(), st_.day_rev.end(), [](double v) { return v > 0; }) ||
      std::any_of(st_.day_cost.begin(), st_.day_cost.end(), [](double v) { return v > 0; });
  if (any) {  // a day without events keeps the history it had
    st_.hist_rev = st_.day_rev;
    st_.hist_cost = st_.day_cost;
    ApplyHistory();
    Log("x_j history: day %lld's own events from now on", static_cast<long long>(key.day));
  }
  st_.day_rev.assign(TL, 0.0);
  st_.day_cost.assign(TL, 0.0);
}

std::vector<float> OnlineLearner::Play(const std::vector<float>& s) {
  std::vector<float> a = learner_.Act(s, on_.explore);
  if (cold_) {
    const auto r = static_cast<float>(on_.cold_start_range);
    for (float& x : a) x = std::clamp(x, -r, r);
  }
  return a;
}

void OnlineLearner::Log(const char* fmt, ...) const {
  if (!opt_.progress) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  log::Get("learner").info("{}", buf);
}

// The normalised state at the start of `step`: the day so far (or a fresh day).
std::vector<float> OnlineLearner::StateAt(int step, bool fresh_day) const {
  const size_t pairs = static_cast<size_t>(N_) * L_;
  const sim::Observation o = sim::MakeObservation(
      market_.shape, step, fresh_day ? std::vector<double>(pairs, 0.0) : st_.g_cost,
      fresh_day ? std::vector<double>(pairs, 0.0) : st_.g_revenue,
      fresh_day ? std::vector<double>(pairs, 0.0) : st_.d);
  return norm_.EncodeState(o, budgets_);
}

Status OnlineLearner::Start() {
  if (on_.clock == "wall" && static_cast<int64_t>(T_) * step_ms_ != kDayMs) {
    return Status::InvalidArgument(
        market_.source +
        ": online.clock wall needs market.steps_per_day x step_seconds = one "
        "day (86400 s); it is " +
        std::to_string(static_cast<int64_t>(T_) * step_ms_ / 1000) + " s");
  }
  std::error_code ec;
  fs::create_directories(on_.state_dir, ec);
  ReplayOptions ro{cfg_.replay.capacity, cfg_.replay.sync};
  RTB_ASSIGN_OR_RETURN(replay_, OpenRocksDbReplayStore(on_.state_dir + "/replay", ro));
  const std::string ckpt = on_.state_dir + "/checkpoint";
  bool resumed = false;
  if (const Status own = learner_.LoadCheckpoint(ckpt); own.ok()) {
    resumed = true;
    Log("resumed the agents from %s", ckpt.c_str());
  } else if (own.code() != Status::Code::kNotFound) {
    return own;  // this state dir's agents do not fit the market (or are damaged): never guess
  } else if (!opt_.init_checkpoint.empty()) {
    RTB_RETURN_IF_ERROR(learner_.LoadCheckpoint(opt_.init_checkpoint));
    Log("starting from the offline-trained agents in %s", opt_.init_checkpoint.c_str());
  }
  std::string budgets;
  for (double b : budgets_) {
    char one[32];
    std::snprintf(one, sizeof one, "%s%.2f", budgets.empty() ? "" : ", ", b);
    budgets += one;
  }
  Log("market from %s: %d advertisers, %d agents, %d consumer clusters, %d steps of %lld s a "
      "day, learned arm %.0f%% of users and budgets; budgets per agent (learned arm): %s",
      market_.source.c_str(), market_.advertisers, N_, L_, T_,
      static_cast<long long>(step_ms_ / 1000), 100 * market_.learned_share, budgets.c_str());
  // A cold start (fresh networks) is remembered with the state, so a restart keeps its range.
  if (auto c = replay_->GetMeta("cold_start"); c.ok()) {
    cold_ = *c == "1";
  } else {
    cold_ = !resumed && opt_.init_checkpoint.empty();
    RTB_RETURN_IF_ERROR(replay_->PutMeta({{"cold_start", cold_ ? "1" : "0"}}));
  }
  if (cold_) {
    Log("cold start (no checkpoint): the first table is manual bids (a = 0), later ones stay "
        "within a = 0 +- %.2f (online.cold_start_range) while the agents learn",
        on_.cold_start_range);
  }
  // Offline and online transitions share one replay memory: a first start from an offline
  // checkpoint imports the training run's replay (its sibling directory `replay`), so the
  // online updates sample both. u:imported = how many came from there (they come first).
  if (replay_->NextSeq() == 0 && !opt_.init_checkpoint.empty()) {
    const fs::path offline = fs::path(opt_.init_checkpoint).parent_path() / "replay";
    int64_t imported = 0;
    if (fs::exists(offline)) {
      RTB_ASSIGN_OR_RETURN(auto src, OpenRocksDbReplayStore(offline.string(), ro));
      for (uint64_t q = src->FirstSeq(); q < src->NextSeq(); ++q) {
        RTB_ASSIGN_OR_RETURN(Transition t, src->Get(q));
        RTB_RETURN_IF_ERROR(replay_->Append(t).status());
        ++imported;
      }
    }
    RTB_RETURN_IF_ERROR(replay_->PutMeta({{"imported", std::to_string(imported)}}));
    Log("imported %lld offline transitions from %s", static_cast<long long>(imported),
        offline.string().c_str());
  }
  auto saved = replay_->GetMeta("online");
  if (saved.ok()) {
    RTB_RETURN_IF_ERROR(FromJson(*saved, &st_, &merger_));
    if (st_.g_cost.size() != static_cast<size_t>(N_) * L_ ||
        st_.a.size() != static_cast<size_t>(N_) * L_) {
      return Status::InvalidArgument(on_.state_dir +
                                     ": the saved learner state is of another "
                                     "market shape than " +
                                     market_.source);
    }
    ApplyHistory();
    Log("resumed at table version %llu after %lld closed steps (%llu transitions)",
        static_cast<unsigned long long>(st_.version), static_cast<long long>(st_.steps_closed),
        static_cast<unsigned long long>(replay_->NextSeq()));
  } else if (saved.status().code() != Status::Code::kNotFound) {
    return saved.status();
  } else {
    merger_.emplace(N_, L_, step_ms_);
    const size_t pairs = static_cast<size_t>(N_) * L_;
    st_.g_cost.assign(pairs, 0.0);
    st_.g_revenue.assign(pairs, 0.0);
    st_.d.assign(pairs, 0.0);
    st_.playing = StepKey{0, 0};
    if (on_.clock == "wall") {  // the wall-clock step in progress
      const int64_t k = clock_->UnixMs() / step_ms_;
      const int64_t wall_steps = std::max<int64_t>(1, kDayMs / step_ms_);
      st_.playing = StepKey{k / wall_steps, static_cast<int>(k % wall_steps)};
    }
    st_.s = StateAt(st_.playing->step, true);
    st_.a = cold_ ? std::vector<float>(pairs, 0.0F) : Play(st_.s);
    st_.version = 1;
    RTB_RETURN_IF_ERROR(replay_->PutMeta({{"online", ToJson(st_, *merger_).dump()}}));
  }

  bootstrap_ = on_.brokers;
  instance_ = InstanceName();
  kafka::Producer::Options po;
  po.bootstrap = bootstrap_;
  po.properties = {{"enable.idempotence", "true"}, {"linger.ms", "0"}};
  const auto& site = market_.kafka_properties;
  po.properties.insert(po.properties.end(), site.begin(), site.end());
  po.transactional_id = on_.group_id + ".policy";
  RTB_ASSIGN_OR_RETURN(producer_, kafka::Producer::Create(std::move(po)));
  // No group subscription: a second member would take some of the partitions. The group names
  // the learner's commits (best effort) and its claim (TakeOver).
  kafka::Consumer::Options co;
  co.bootstrap = bootstrap_;
  co.group_id = on_.group_id;
  co.properties = {{"auto.offset.reset", "earliest"}, {"fetch.wait.max.ms", "10"}};
  co.properties.insert(co.properties.end(), site.begin(), site.end());
  RTB_ASSIGN_OR_RETURN(consumer_, kafka::Consumer::Create(std::move(co)));
  if (market_.keys == nullptr) {
    log::Get("learner").warn("market_keys not set: messages on {} and {} are not authenticated",
                             on_.clock_topic, on_.policy_topic);
  }
  // The input is assigned and the tables taken over in Run, once the brokers answer; the
  // first table goes out after both, so that traffic starts when this learner reads it.
  return Status::Ok();
}

Status OnlineLearner::AssignInput() {
  RTB_ASSIGN_OR_RETURN(const int n, consumer_->PartitionCount(on_.events_topic, 1000));
  if (n <= events_partitions_) return Status::Ok();
  std::vector<kafka::TopicPartition> parts;
  for (int32_t p = events_partitions_; p < n; ++p) {
    const auto it = st_.offsets.find(p);
    parts.push_back(
        {on_.events_topic, p, it == st_.offsets.end() ? kafka::kOffsetBeginning : it->second});
  }
  if (events_partitions_ == 0) {
    parts.push_back({on_.clock_topic, 0, st_.clock_offset});
    RTB_RETURN_IF_ERROR(consumer_->Assign(parts));
  } else {
    RTB_RETURN_IF_ERROR(consumer_->AddAssignment(parts));
    log::Get("learner").info("{} has {} partitions now (was {}): reading the new ones too",
                             on_.events_topic, n, events_partitions_);
  }
  events_partitions_ = n;
  assigned_ = true;
  return Status::Ok();
}

Status OnlineLearner::Fenced(const std::string& how) const {
  return Status::FailedPrecondition(
      "another learner took over the group's tables (fenced): " + how + "; this learner (" +
      instance_ + ", group " + on_.group_id + ") publishes nothing more and stops");
}

Status OnlineLearner::TakeOver() {
  if (!txn_ready_) {
    const Status init = producer_->InitTransactions(5000);
    if (producer_->Fenced()) return Fenced(init.message());
    RTB_RETURN_IF_ERROR(init);
    txn_ready_ = true;
  }
  // After Kafka's fencing: whatever an older learner left open is aborted, and what it
  // committed is there to read.
  RTB_ASSIGN_OR_RETURN(const auto ends, producer_->Watermarks(on_.policy_topic, 0, 5000));
  kafka::ClientOptions reader{.bootstrap = bootstrap_, .properties = market_.kafka_properties};
  reader.properties.emplace_back("isolation.level", "read_committed");
  uint64_t highest = 0;
  const Status read = kafka::ReadWholeTopic(
      reader, on_.policy_topic, 10000, [&](int32_t, int64_t, std::string_view v) {
        std::string body;
        if (market_.keys != nullptr) {
          if (market_.keys->Open(on_.policy_topic, v, &body) != SealCheck::kOk) return;
          v = body;
        }
        if (auto m = DecodePolicyMessage(v, "policy topic"); m.ok()) {
          highest = std::max(highest, m->table.version);
        }
      });
  if (!read.ok()) return Status::Unavailable(read.message());
  claim_offset_ = ends.second;
  RTB_RETURN_IF_ERROR(
      consumer_->Commit({{on_.policy_topic, 0, claim_offset_, instance_}}, /*async=*/false));
  published_through_ = highest;
  taken_over_ = true;
  log::Get("learner").info(
      "took over group {}'s tables as {} (transactional id {}.policy): {} holds up to table "
      "v{}, which are not published again",
      on_.group_id, instance_, on_.group_id, on_.policy_topic, highest);
  return Status::Ok();
}

Status OnlineLearner::KeepUp() {
  using std::chrono::seconds;
  const auto now = std::chrono::steady_clock::now();
  if (!assigned_ || !taken_over_) {
    if (now < next_try_) return Status::Ok();
    next_try_ = now + seconds(1);
    for (const bool assign : {true, false}) {
      if (assign ? assigned_ : taken_over_) continue;
      const Status st = assign ? AssignInput() : TakeOver();
      if (!st.ok() && st.code() != Status::Code::kUnavailable) return st;
      uint64_t skipped = 0;
      if (!st.ok() && kafka_waits_.Allow(&skipped)) {
        log::Get("learner").warn("waiting for Kafka to {}: {} ({} more since)",
                                 assign ? "assign the input" : "take the tables over", st.message(),
                                 skipped);
      }
    }
    next_claim_check_ = now + seconds(2);
    next_partition_check_ = now + seconds(10);
    return Status::Ok();
  }
  if (now >= next_claim_check_) {
    next_claim_check_ = now + seconds(2);
    RTB_RETURN_IF_ERROR(CheckClaim());
  }
  if (now >= next_partition_check_) {
    next_partition_check_ = now + seconds(10);
    (void)AssignInput();  // brokers away: asked again next time
  }
  if (opt_.status != nullptr && now >= next_lag_check_) {
    next_lag_check_ = now + seconds(5);
    opt_.status->lag_events = EventsLag();
  }
  return Status::Ok();
}

int64_t OnlineLearner::EventsLag() {
  int64_t lag = 0;
  for (int32_t p = 0; p < events_partitions_; ++p) {
    // A short timeout: this runs on the learner's loop, which must not wait on slow brokers.
    const auto w = consumer_->Watermarks(on_.events_topic, p, 250);
    if (!w.ok()) return -1;  // not known now: the brokers did not answer
    const auto at = st_.offsets.find(p);
    const int64_t next = at == st_.offsets.end() ? w->first : std::max(at->second, w->first);
    lag += std::max<int64_t>(0, w->second - next);
  }
  return lag;
}

Status OnlineLearner::CheckClaim() {
  const auto claim = consumer_->Committed({{on_.policy_topic, 0}}, 2000);
  uint64_t skipped = 0;
  if (!claim.ok() && kafka_waits_.Allow(&skipped)) {
    log::Get("learner").warn("could not read group {}'s claim back ({}); going on ({} more since)",
                             on_.group_id, claim.status().message(), skipped);
  }
  if (!claim.ok() || claim->empty() || (*claim)[0].metadata == instance_) return Status::Ok();
  if ((*claim)[0].offset == kafka::kOffsetNone) {
    // The brokers dropped it: a group without members keeps its offsets for
    // offsets.retention.minutes (7 days by default) after they were committed.
    log::Get("learner").info("group {}'s claim expired: claimed again as {}", on_.group_id,
                             instance_);
    return consumer_->Commit({{on_.policy_topic, 0, claim_offset_, instance_}}, /*async=*/false);
  }
  return Fenced("the group's claim names " + (*claim)[0].metadata);
}

// Publishes the table for st_.playing with the cluster map (schemas/events-v1.md, policy), in a
// transaction of its own; a version the policy topic holds already is not published again.
Status OnlineLearner::Publish() {
  if (st_.version <= published_through_) {
    Log("table v%llu is on %s already: not published again",
        static_cast<unsigned long long>(st_.version), on_.policy_topic.c_str());
    return Status::Ok();
  }
  RTB_RETURN_IF_ERROR(CheckClaim());
  ActionTable t(N_, L_);
  for (int i = 0; i < N_; ++i) {
    for (int j = 0; j < L_; ++j) t.set(i, j, st_.a[static_cast<size_t>(i * L_ + j)]);
  }
  t.version = st_.version;
  t.algo = spec_.name + "-online";
  t.created_unix_ms = clock_->UnixMs();
  PolicyMessage msg;
  msg.table = std::move(t);
  msg.clusters = market_.clusters;  // the market's map, never another
  msg.alpha_range = market_.alpha_range;
  msg.for_day = st_.playing ? st_.playing->day : 0;
  msg.for_step = st_.playing ? st_.playing->step : 0;
  const std::string text = EncodePolicyMessage(msg);
  const std::string payload =
      market_.keys != nullptr ? market_.keys->Seal(on_.policy_topic, text) : text;
  // Until it is committed, the learner is fenced, or it is told to stop (the next start
  // publishes it then: its version is not on the topic).
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    const Status st = PublishOnce(payload);
    if (st.ok()) {
      published_through_ = st_.version;
      if (opt_.status != nullptr) {
        ++opt_.status->tables_published;
        opt_.status->policy_version = static_cast<int64_t>(st_.version);
        opt_.status->last_publish_ms = clock_->UnixMs();
      }
      return Status::Ok();
    }
    if (producer_->Fenced()) return Fenced("Kafka refused its transaction: " + st.message());
    if (st.code() == Status::Code::kInternal || st.code() == Status::Code::kInvalidArgument) {
      return st;
    }
    if (Stopping()) {
      log::Get("learner").warn("table v{} not published ({}): stopping", st_.version, st.message());
      return Status::Ok();
    }
    uint64_t skipped = 0;
    if (kafka_waits_.Allow(&skipped)) {
      log::Get("learner").warn("table v{} not published yet ({}): trying again ({} more since)",
                               st_.version, st.message(), skipped);
    }
    // A try that failed at once (not a commit that waited out its timeout) is not repeated
    // at once.
    if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(200)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

Status OnlineLearner::PublishOnce(const std::string& payload) {
  if (must_abort_) {
    RTB_RETURN_IF_ERROR(producer_->AbortTransaction(5000));
    must_abort_ = in_txn_ = false;
  }
  if (!in_txn_) {
    if (const Status begin = producer_->BeginTransaction(); !begin.ok()) {
      must_abort_ = true;  // out of turn: a transaction is open
      return begin;
    }
    in_txn_ = true;
    if (const Status produce = producer_->Produce(on_.policy_topic, 0, "", payload);
        !produce.ok()) {
      must_abort_ = true;
      return produce;
    }
  }
  // A commit that ran out of time may still go through: it is asked again as it is.
  const Status commit = producer_->CommitTransaction(5000);
  if (commit.ok()) {
    in_txn_ = false;
  } else if (commit.code() != Status::Code::kUnavailable) {
    must_abort_ = true;
  }
  return commit;
}

void OnlineLearner::Refuse(const char* kind, const std::string& reason, const kafka::Message& m,
                           const std::string& detail) {
  const std::string key = std::string(kind) + ":" + reason;
  const int64_t n = ++refused_[key];
  if (opt_.status != nullptr) ++opt_.status->refused;
  auto& limit = refusal_logs_[key];
  if (limit == nullptr) limit = std::make_unique<log::RateLimit>(5, std::chrono::seconds(60));
  uint64_t skipped = 0;
  if (limit->Allow(&skipped)) {
    log::Get("learner").warn(
        "refused {} at {}/{}/{}: {}{}{} ({} refused so far; {} more not logged)", kind, m.topic(),
        m.partition(), m.offset(), reason, detail.empty() ? "" : ": ", detail, n, skipped);
  }
}

const char* OnlineLearner::Implausible(const StepMarker& mk) const {
  // The last accepted step: the furthest of the last marker waiting and the last closed step;
  // on a fresh start, the step before the one playing.
  int64_t spd = st_.steps_per_day > 0 ? st_.steps_per_day : mk.steps_per_day;
  if (!markers_.empty()) spd = markers_.back().marker.steps_per_day;
  if (mk.steps_per_day != spd) return "steps_per_day_changed";
  std::optional<int64_t> last;
  const auto further = [&last](std::optional<int64_t> x) {
    if (x && (!last || *x > *last)) last = x;
  };
  if (!markers_.empty())
    further(StepIndex(markers_.back().marker.day, markers_.back().marker.step, spd));
  const auto closed = merger_->closed_through();
  if (closed) further(StepIndex(closed->day, closed->step, spd));
  if (!closed && markers_.empty() && st_.playing) {
    further(StepIndex(st_.playing->day, st_.playing->step - 1, spd));
  }
  const std::optional<int64_t> at = StepIndex(mk.day, mk.step, spd);
  if (!at) return "step_out_of_range";
  if (last && *at - *last > on_.max_steps_ahead) return "step_too_far_ahead";
  return nullptr;
}

void OnlineLearner::ConsumeMarker(const kafka::Message& m) {
  std::string body;
  std::string_view text = m.payload();
  if (market_.keys != nullptr) {
    const SealCheck c = market_.keys->Open(on_.clock_topic, text, &body);
    if (c != SealCheck::kOk) return Refuse("step marker", SealCheckName(c), m, "");
    text = body;
  }
  auto mk = DecodeStepMarker(text);
  if (!mk.ok()) {
    st_.clock_offset = m.offset() + 1;
    ++decode_errors_;
    return Refuse("step marker", "undecodable", m, mk.status().message());
  }
  const auto closed = merger_->closed_through();
  if (closed && StepKey{mk->day, mk->step} <= *closed) {
    return Refuse(
        "step marker", "behind", m,
        "day " + std::to_string(mk->day) + " step " + std::to_string(mk->step) + " is closed");
  }
  if (const char* why = Implausible(*mk)) {
    return Refuse("step marker", why, m,
                  "day " + std::to_string(mk->day) + " step " + std::to_string(mk->step));
  }
  markers_.push_back({*mk, clock_->SteadyMs(), m.offset()});
  if (opt_.status != nullptr) ++opt_.status->markers;
}

void OnlineLearner::Consume(const kafka::Message& m) {
  if (m.topic() == on_.clock_topic) return ConsumeMarker(m);
  st_.offsets[m.partition()] = m.offset() + 1;
  if (opt_.status != nullptr) ++opt_.status->events;
  auto e = DecodeEvent(m.payload());
  if (!e.ok()) {
    ++decode_errors_;  // the event cannot be attributed to a step
    return Refuse("event", "undecodable", m, e.status().message());
  }
  if (const auto r = CheckEventMoney(*e, market_.money)) {
    return Refuse("event", r->reason, m,
                  e->type + " " + e->eid + " of advertiser " + std::to_string(e->advertiser) +
                      ", price_micros " + std::to_string(e->price_micros));
  }
  switch (merger_->Add(*e)) {
    case MergeResult::kDuplicate:
      return Refuse("event", "duplicate", m, e->eid);
    case MergeResult::kLate:
      return Refuse("event", "late", m, e->eid + " of a closed step");
    default:
      return;
  }
}

Status OnlineLearner::CommitOffsets() {
  std::vector<kafka::TopicPartition> parts;
  for (const auto& [p, o] : st_.offsets) parts.push_back({on_.events_topic, p, o});
  parts.push_back({on_.clock_topic, 0, st_.clock_offset});
  // Best effort: the durable position is the replay store's (AssignInput), not the group's.
  (void)consumer_->Commit(parts, /*async=*/true);
  return Status::Ok();
}

// Algorithm 1 for one step of the live loop: observe r and s', store, update, act.
Status OnlineLearner::CloseStep(const StepMarker& marker, int64_t marker_offset, int64_t seen_ms,
                                bool timed_out) {
  const int64_t close_ms = clock_->SteadyMs();
  const int steps_per_day = marker.steps_per_day;
  const StepKey key{marker.day, marker.step};
  const StepTotals tot = merger_->Close(key);
  st_.steps_per_day = steps_per_day;
  const size_t pairs = static_cast<size_t>(N_) * L_;
  // The transition starts from the state the published table was computed from; a day the
  // learner joined late starts fresh.
  const bool same_day = st_.playing && st_.playing->day == key.day;
  std::vector<float> s = st_.s, a = st_.a;
  if (!(st_.playing && *st_.playing == key)) s = StateAt(key.step, !same_day);
  if (!same_day) {
    st_.g_cost.assign(pairs, 0.0);
    st_.g_revenue.assign(pairs, 0.0);
    st_.d.assign(pairs, 0.0);
  }
  const sim::Observation before =
      sim::MakeObservation(market_.shape, key.step, st_.g_cost, st_.g_revenue, st_.d);
  const std::vector<double> g_cost0 = st_.g_cost, g_revenue0 = st_.g_revenue, d0 = st_.d;
  // g accumulates the step's cost and revenue; d is the step's share of bid computations.
  std::vector<double> rewards(static_cast<size_t>(N_), 0.0);
  int64_t computations = 0;
  for (int64_t c : tot.computed) computations += c;
  for (size_t p = 0; p < pairs; ++p) {
    st_.g_cost[p] += tot.cost_micros[p] / 1e6;
    st_.g_revenue[p] += tot.revenue_micros[p] / 1e6;
    st_.d[p] = computations > 0 ? static_cast<double>(tot.computed[p]) / computations : 0.0;
    rewards[p / static_cast<size_t>(L_)] += tot.revenue_micros[p] / 1e6;
  }
  const bool done = key.step + 1 >= steps_per_day;
  // Advertisers with a target: their goals' worth in place of their revenue (docs/dcmab.md 4).
  const std::map<int64_t, AdvertiserTotals> goal_day0 = st_.goal_day;
  if (!same_day) st_.goal_day.clear();
  if (cfg_.goal_reward && !market_.goals.empty()) {
    ApplyGoalRewards(market_.goals, tot.by_advertiser, done, &st_.goal_day, &rewards);
  }
  if (spec_.coordinated) {
    double total = 0;
    for (double r : rewards) total += r;
    rewards.assign(rewards.size(), total);
  }
  const sim::Observation after = sim::MakeObservation(market_.shape, done ? T_ : key.step + 1,
                                                      st_.g_cost, st_.g_revenue, st_.d);
  const Transition tr = BuildTransition(norm_,
                                        {.s = s,
                                         .before = &before,
                                         .a = a,
                                         .rewards = rewards,
                                         .after = &after,
                                         .done = done,
                                         .episode = static_cast<uint64_t>(key.day),
                                         .step = static_cast<uint32_t>(key.step)},
                                        budgets_, spec_.coordinated, delivery_);

  // A transition of totals that overflowed, or of values that are not finite, is not learned.
  // The day goes on as if the step had brought nothing.
  const bool flagged = tot.overflow || !Finite(tr);
  if (flagged) {
    ++refused_["transition:flagged"];
    log::Get("learner").warn(
        "day {} step {}: refused its transition ({}): not stored, not learned from", key.day,
        key.step, tot.overflow ? "a total above int64" : "a value that is not finite");
    st_.g_cost = g_cost0;
    st_.g_revenue = g_revenue0;
    st_.d = d0;
    st_.goal_day = goal_day0;
  }

  // x_j's history for the days after this one (what the next state reads).
  StepTotals none = tot;
  none.cost_micros.assign(pairs, 0);
  none.revenue_micros.assign(pairs, 0);
  RecordHistory(key, flagged ? none : tot, !same_day, done);

  // 1. The transition, the consumer position after it, and the step's totals: one write.
  st_.clock_offset = marker_offset + 1;
  ++st_.steps_closed;
  nlohmann::json summary = nlohmann::json::parse(tot.SummaryJson());
  summary["exchange"] = nlohmann::json::parse(EncodeStepMarker(marker));
  summary["timed_out"] = timed_out;
  summary["policy_version"] = st_.version;
  summary["late_events"] = merger_->late();
  summary["duplicate_events"] = merger_->duplicates();
  summary["undecodable_messages"] = decode_errors_;
  summary["refused"] = refused_;
  summary["transition_refused"] = flagged;
  const std::string step_key = "step:" + std::to_string(key.day) + ":" + std::to_string(key.step);
  const std::vector<std::pair<std::string, std::string>> meta = {
      {"online", ToJson(st_, *merger_).dump()}, {step_key, summary.dump()}};
  uint64_t seq = replay_->NextSeq();
  if (flagged) {
    RTB_RETURN_IF_ERROR(replay_->PutMeta(meta));
  } else {
    RTB_ASSIGN_OR_RETURN(seq, replay_->Append(tr, meta));
  }
  CommitOffsets();  // only now: the events up to here are in a durable transition
  const int64_t stored_ms = clock_->SteadyMs();

  // 2. Algorithm 1, lines 10-15: K updates of every agent on minibatches from the replay.
  UpdateStats us;
  if (!flagged) {
    RTB_ASSIGN_OR_RETURN(
        us, UpdateFromReplay(learner_, *replay_, cfg_.hp, on_.updates_per_step, sample_rng_));
  }
  if (done) learner_.EndEpisode();

  // 3. The next step's table a[i][j] = mu_i([g, x_j]) from the state now (plus noise); a new
  // day starts from g = 0 and d = 0, as the environment's Reset.
  const StepKey next = done ? StepKey{key.day + 1, 0} : StepKey{key.day, key.step + 1};
  st_.playing = next;
  if (done) {
    st_.g_cost.assign(pairs, 0.0);
    st_.g_revenue.assign(pairs, 0.0);
    st_.d.assign(pairs, 0.0);
  }
  st_.s = done ? StateAt(0, true) : flagged ? StateAt(next.step, false) : tr.s2;
  const std::vector<float> last = std::move(st_.a);
  st_.a = Play(st_.s);
  st_.version = 1 + static_cast<uint64_t>(next.day) * static_cast<uint64_t>(steps_per_day) +
                static_cast<uint64_t>(next.step);
  LimitMove(last);
  RTB_RETURN_IF_ERROR(replay_->PutMeta({{"online", ToJson(st_, *merger_).dump()}}));
  const int64_t learned_ms = clock_->SteadyMs();
  RTB_RETURN_IF_ERROR(Publish());
  const int64_t published_ms = clock_->SteadyMs();
  if (st_.steps_closed % on_.checkpoint_every == 0) RTB_RETURN_IF_ERROR(Checkpoint());
  Log("closed day %lld step %d: %lld events%s, cost %.2f (exchange %.2f), revenue %.2f "
      "(exchange %.2f), transition %llu, critic loss %.4f; published v%llu (marker read, then "
      "events waited for %lld ms, stored in %lld, learned in %lld, published in %lld)",
      static_cast<long long>(key.day), key.step, static_cast<long long>(tot.events),
      timed_out ? " (timed out waiting for more)" : "", tot.TotalCost() / 1e6,
      marker.cost_micros / 1e6, tot.TotalRevenue() / 1e6, marker.revenue_micros / 1e6,
      static_cast<unsigned long long>(seq), us.critic_loss,
      static_cast<unsigned long long>(st_.version), static_cast<long long>(close_ms - seen_ms),
      static_cast<long long>(stored_ms - close_ms), static_cast<long long>(learned_ms - stored_ms),
      static_cast<long long>(published_ms - learned_ms));
  return Status::Ok();
}

void OnlineLearner::LimitMove(const std::vector<float>& last) {
  if (last.size() != st_.a.size()) return;
  const auto limit = static_cast<float>(on_.max_table_move);
  int clipped = 0;
  float largest = 0;
  for (size_t q = 0; q < st_.a.size(); ++q) {
    const float move = std::abs(st_.a[q] - last[q]);
    if (!(move <= limit)) {  // a NaN too: it stays where it was
      ++clipped;
      if (move > largest) largest = move;
      st_.a[q] = std::isfinite(st_.a[q]) ? std::clamp(st_.a[q], last[q] - limit, last[q] + limit)
                                         : last[q];
    }
  }
  if (clipped == 0) return;
  ++refused_["table:clipped"];
  log::Get("learner").warn(
      "table v{}: {} of {} actions would move more than online.max_table_move {:.2f} from the "
      "last table (largest move {:.3f}): clipped to within it",
      st_.version, clipped, st_.a.size(), on_.max_table_move, largest);
}

Status OnlineLearner::Checkpoint() {
  // Written aside, then swapped in: a crash mid-write leaves the previous checkpoint.
  const std::string dir = on_.state_dir + "/checkpoint", tmp = dir + ".new", old = dir + ".old";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  RTB_RETURN_IF_ERROR(learner_.SaveCheckpoint(tmp));
  fs::remove_all(old, ec);
  if (fs::exists(dir)) fs::rename(dir, old, ec);
  fs::rename(tmp, dir, ec);
  if (ec) return Status::IoError(dir + ": " + ec.message());
  fs::remove_all(old, ec);
  return Status::Ok();
}

Status OnlineLearner::Run() {
  int64_t closed_here = 0;
  while (!Stopping() && (opt_.max_steps < 0 || closed_here < opt_.max_steps)) {
    RTB_RETURN_IF_ERROR(KeepUp());
    // Up to 5001 messages per turn: the first waits up to 20 ms, the rest are what is there.
    std::optional<kafka::Message> m = consumer_->Poll(20);
    uint64_t skipped = 0;
    for (int n = 0; m && n <= 5000; ++n) {
      if (m->ok()) {
        Consume(*m);
      } else if (!m->eof() && consumer_errors_.Allow(&skipped)) {
        // librdkafka reports what keeps it from reading (a group that refuses to join, a
        // topic that is gone): say so, or the learner only seems to wait.
        log::Get("learner").warn("Kafka: {} ({} more since)", m->error(), skipped);
      }
      if (n < 5000) m = consumer_->Poll(0);
    }
    producer_->Poll(0);
    if (assigned_ && taken_over_ && !published_) {
      // (Again, after a restart: the bidders keep the highest version.)
      RTB_RETURN_IF_ERROR(Publish());
      published_ = true;
    }
    if (on_.clock == "wall") {
      // No exchange markers: a wall-clock step closes step_grace_ms after it ends.
      const int64_t now = clock_->UnixMs() - on_.step_grace_ms;
      const int64_t wall_steps = std::max<int64_t>(1, kDayMs / step_ms_);
      const int64_t cur = now / step_ms_;  // index of the step the grace-shifted clock is in
      // The next step to close: after the last closed one, else the one in progress at start.
      if (wall_next_ < 0) {
        const auto closed = merger_->closed_through();
        wall_next_ = closed        ? closed->day * wall_steps + closed->step + 1
                     : st_.playing ? st_.playing->day * wall_steps + st_.playing->step
                                   : cur;
      }
      for (int64_t k = wall_next_; k < cur; ++k) {
        StepMarker mk;
        mk.day = k / wall_steps;
        mk.step = static_cast<int>(k % wall_steps);
        mk.steps_per_day = static_cast<int>(wall_steps);
        mk.step_ms = step_ms_;
        // Seen now: it waits step_grace_ms more, so that after a restart the events of the
        // steps missed meanwhile are read before those steps close.
        markers_.push_back({mk, clock_->SteadyMs(), st_.clock_offset - 1});
      }
      wall_next_ = std::max(wall_next_, cur);
    }
    // Say what it waits for: the step's events, or its end (marker or wall clock).
    if (on_.progress_every_ms > 0 && st_.playing &&
        clock_->SteadyMs() - last_progress_ms_ >= on_.progress_every_ms) {
      last_progress_ms_ = clock_->SteadyMs();
      Log("waiting for day %lld step %d to close: %lld events in, %s",
          static_cast<long long>(st_.playing->day), st_.playing->step,
          static_cast<long long>(merger_->EventsIn(*st_.playing)),
          !assigned_               ? "the events topic is not assigned yet"
          : !taken_over_           ? "the policy topic is not taken over yet"
          : !markers_.empty()      ? "its end is seen, waiting for the rest of its events"
          : on_.clock == "markers" ? "no step-end marker yet (clock: markers, from the exchange)"
                                   : "its wall-clock end not reached yet");
    }
    // A step closes only once the events topic is ours (before that its events are unread)
    // and the tables are.
    while (assigned_ && taken_over_ && !markers_.empty()) {
      const Pending& p = markers_.front();
      const StepKey key{p.marker.day, p.marker.step};
      const auto closed = merger_->closed_through();
      if (closed && key <= *closed) {  // a marker read again after a restart
        markers_.pop_front();
        continue;
      }
      const bool complete = merger_->EventsIn(key) >= p.marker.expected_events;
      const bool waited = clock_->SteadyMs() - p.seen_ms >= on_.step_grace_ms;
      if (!complete && !waited) break;
      RTB_RETURN_IF_ERROR(CloseStep(p.marker, p.offset, p.seen_ms, !complete));
      markers_.pop_front();
      ++closed_here;
      if (opt_.status != nullptr) {
        ++opt_.status->steps_closed;
        if (!complete) ++opt_.status->steps_timed_out;
        opt_.status->last_close_ms = clock_->UnixMs();
      }
    }
    if (opt_.status != nullptr) {
      opt_.status->pending_steps = static_cast<int64_t>(markers_.size());
      opt_.status->kafka_ready = assigned_ && taken_over_;
      opt_.status->last_turn_ms = clock_->UnixMs();
    }
  }
  return Checkpoint();
}

}  // namespace

Status RunOnline(const LearnerConfig& cfg, const OnlineOptions& opt) {
  if (cfg.online.brokers.empty()) {
    return Status::InvalidArgument("online.brokers is empty: give --brokers host:port");
  }
  if (cfg.online.market.empty()) {
    return Status::InvalidArgument(
        "rtb learn needs the market: --market <the bidders' config> (online.market)");
  }
  RTB_ASSIGN_OR_RETURN(LiveMarket market, LoadLiveMarket(cfg.online.market));
  const std::vector<int> learning;
  RTB_ASSIGN_OR_RETURN(
      AlgoSpec spec, MakeAlgoSpec(cfg.sim.market.reward == "coordinated" ? "dcmab-coord" : "dcmab",
                                  market.shape.agents, learning, cfg.hp));
  RTB_ASSIGN_OR_RETURN(DeliveryTerm delivery,
                       MakeDeliveryTerm(cfg.delivery_target, cfg.delivery_penalty,
                                        cfg.delivery_penalty_by_agent, market.shape.agents));
  OnlineLearner l(cfg, opt, std::move(market), spec, std::move(delivery));
  RTB_RETURN_IF_ERROR(l.Start());
  return l.Run();
}

}  // namespace rtb::learn
