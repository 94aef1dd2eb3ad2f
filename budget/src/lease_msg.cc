#include "rtb/budget/lease_msg.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "rtb/core/ab.h"

namespace rtb::budget {
namespace {

using nlohmann::json;

const char* TypeName(LeaseMsgType t) {
  switch (t) {
    case LeaseMsgType::kRequest:
      return "request";
    case LeaseMsgType::kReturn:
      return "return";
    case LeaseMsgType::kReport:
      return "report";
    case LeaseMsgType::kHeartbeat:
      return "heartbeat";
  }
  return "heartbeat";
}

Result<uint8_t> ArmOfName(const json& j, const char* what) {
  const auto a = j.is_string() ? ParseArm(j.get<std::string>()) : std::nullopt;
  if (!a) return Status::InvalidArgument(std::string(what) + ": arm must be learned or manual");
  return static_cast<uint8_t>(*a);
}

bool NonNegInt(const json& j, const char* k, int64_t* out) {
  if (!j.contains(k)) return true;
  if (!j[k].is_number_integer() || j[k].get<int64_t>() < 0) return false;
  *out = j[k].get<int64_t>();
  return true;
}

}  // namespace

std::string EncodeLeaseMessage(const LeaseMessage& m) {
  json j = {{"format", "rtb.lease"}, {"schema_version", 1}, {"type", TypeName(m.type)},
            {"bidder", m.bidder},    {"day", m.day},        {"ts_ms", m.ts_ms}};
  if (m.seq > 0) j["seq"] = m.seq;
  if (!m.instance.empty()) j["instance"] = m.instance;
  if (!m.lineage.empty()) j["lineage"] = m.lineage;
  if (m.requests >= 0) j["requests"] = m.requests;
  json items = json::array();
  for (const LeaseItem& i : m.items) {
    json it = {{"adv", i.advertiser}, {"arm", ArmName(static_cast<Arm>(i.arm))}};
    if (m.type == LeaseMsgType::kRequest) it["want"] = i.want;
    if (m.type == LeaseMsgType::kRequest && i.need > 0) it["need"] = i.need;
    if (m.type == LeaseMsgType::kReturn) it["amount"] = i.amount;
    if (m.type == LeaseMsgType::kReport || m.type == LeaseMsgType::kReturn) {
      it["spent"] = i.spent;
      it["reserved"] = i.reserved;
      if (i.cap > 0) it["cap"] = i.cap;
    }
    if (m.type == LeaseMsgType::kReport && i.unit > 0) it["unit"] = i.unit;
    items.push_back(it);
  }
  j["items"] = items;
  return j.dump();
}

static Result<LeaseMessage> DecodeLeaseMessageJson(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("lease message: not JSON");
  if (j.value("format", "") != "rtb.lease" || j.value("schema_version", 0) != 1) {
    return Status::InvalidArgument("lease message: format must be rtb.lease, schema_version 1");
  }
  LeaseMessage m;
  const std::string type = j.value("type", "");
  if (type == "request") {
    m.type = LeaseMsgType::kRequest;
  } else if (type == "return") {
    m.type = LeaseMsgType::kReturn;
  } else if (type == "report") {
    m.type = LeaseMsgType::kReport;
  } else if (type == "heartbeat") {
    m.type = LeaseMsgType::kHeartbeat;
  } else {
    return Status::InvalidArgument("lease message: type must be request|return|report|heartbeat");
  }
  if (!j.contains("bidder") || !j["bidder"].is_string() || j["bidder"].get<std::string>().empty() ||
      j["bidder"].get<std::string>().find('~') != std::string::npos) {
    return Status::InvalidArgument("lease message: bidder must be a non-empty string without '~'");
  }
  m.bidder = j["bidder"].get<std::string>();
  if (!j.contains("day") || !j["day"].is_number_integer() || !NonNegInt(j, "ts_ms", &m.ts_ms) ||
      !NonNegInt(j, "seq", &m.seq)) {
    return Status::InvalidArgument("lease message: day, ts_ms and seq must be integers");
  }
  if (!NonNegInt(j, "requests", &m.requests)) {
    return Status::InvalidArgument("lease message: requests must be an integer >= 0");
  }
  m.day = j["day"].get<int64_t>();
  if (j.contains("instance")) {
    if (!j["instance"].is_string() || j["instance"].get<std::string>().empty()) {
      return Status::InvalidArgument("lease message: instance must be a non-empty string");
    }
    m.instance = j["instance"].get<std::string>();
  }
  if (j.contains("lineage")) {
    const json& l = j["lineage"];
    if (!l.is_array() || l.size() > kMaxLineage) {
      return Status::InvalidArgument("lease message: lineage must be a list of at most " +
                                     std::to_string(kMaxLineage) + " instances");
    }
    for (const json& e : l) {
      if (!e.is_string() || e.get<std::string>().empty()) {
        return Status::InvalidArgument("lease message: lineage must be a list of instances");
      }
      m.lineage.push_back(e.get<std::string>());
    }
  }
  if (j.contains("items")) {
    if (!j["items"].is_array())
      return Status::InvalidArgument("lease message: items must be a list");
    for (const json& it : j["items"]) {
      LeaseItem i;
      if (!it.is_object() || !it.contains("adv") || !it["adv"].is_number_unsigned() ||
          it["adv"].get<uint64_t>() > UINT32_MAX) {
        return Status::InvalidArgument("lease message: every item needs adv (advertiser id)");
      }
      i.advertiser = static_cast<uint32_t>(it["adv"].get<uint64_t>());
      RTB_ASSIGN_OR_RETURN(i.arm,
                           ArmOfName(it.contains("arm") ? it["arm"] : json(), "lease message"));
      if (!NonNegInt(it, "want", &i.want) || !NonNegInt(it, "amount", &i.amount) ||
          !NonNegInt(it, "spent", &i.spent) || !NonNegInt(it, "reserved", &i.reserved) ||
          !NonNegInt(it, "need", &i.need) || !NonNegInt(it, "cap", &i.cap) ||
          !NonNegInt(it, "unit", &i.unit)) {
        return Status::InvalidArgument(
            "lease message: want, need, amount, spent, reserved, cap and unit are integer micros "
            ">= 0");
      }
      m.items.push_back(i);
    }
  }
  return m;
}

std::string EncodeLeaseGrant(const LeaseGrant& g) {
  json j = json{{"format", "rtb.lease_grant"},
                {"schema_version", 1},
                {"bidder", g.bidder},
                {"day", g.key.day},
                {"adv", g.key.advertiser},
                {"arm", ArmName(static_cast<Arm>(g.key.arm))},
                {"held", g.held},
                {"granted", g.granted},
                {"pool", g.pool},
                {"left", g.left},
                {"ts_ms", g.ts_ms},
                {"seen", g.seen},
                {"returned", g.returned},
                {"wanted", g.wanted}};
  if (g.target >= 0) j["target"] = g.target;
  if (!g.instance.empty()) j["instance"] = g.instance;
  if (!g.coordinator.empty()) j["coordinator"] = g.coordinator;
  if (g.epoch > 0) j["epoch"] = g.epoch;
  if (g.n > 0) j["n"] = g.n;
  return j.dump();
}

static Result<LeaseGrant> LeaseGrantOf(const json& j) {
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "rtb.lease_grant" ||
      j.value("schema_version", 0) != 1) {
    return Status::InvalidArgument("lease grant: not an rtb.lease_grant v1 message");
  }
  LeaseGrant g;
  if (!j.contains("bidder") || !j["bidder"].is_string() || !j.contains("day") ||
      !j["day"].is_number_integer() || !j.contains("adv") || !j["adv"].is_number_unsigned() ||
      !j.contains("held") || !j["held"].is_number_integer()) {
    return Status::InvalidArgument("lease grant: bidder, day, adv and held are required");
  }
  g.bidder = j["bidder"].get<std::string>();
  g.key.day = j["day"].get<int64_t>();
  g.key.advertiser = static_cast<uint32_t>(j["adv"].get<uint64_t>());
  RTB_ASSIGN_OR_RETURN(g.key.arm, ArmOfName(j.contains("arm") ? j["arm"] : json(), "lease grant"));
  g.held = j["held"].get<int64_t>();
  g.granted = j.value("granted", int64_t{0});
  g.pool = j.value("pool", int64_t{0});
  g.left = j.value("left", int64_t{0});
  g.ts_ms = j.value("ts_ms", int64_t{0});
  g.seen = j.value("seen", int64_t{0});
  g.returned = j.value("returned", int64_t{0});
  g.wanted = j.value("wanted", int64_t{0});
  if (g.wanted < 0) return Status::InvalidArgument("lease grant: wanted must not be negative");
  if (j.contains("target")) {
    if (!j["target"].is_number_integer() || j["target"].get<int64_t>() < 0) {
      return Status::InvalidArgument("lease grant: target must be an integer >= 0");
    }
    g.target = j["target"].get<int64_t>();
  }
  if (j.contains("instance")) {
    if (!j["instance"].is_string()) {
      return Status::InvalidArgument("lease grant: instance must be a string");
    }
    g.instance = j["instance"].get<std::string>();
  }
  if (j.contains("coordinator")) {
    if (!j["coordinator"].is_string()) {
      return Status::InvalidArgument("lease grant: coordinator must be a string");
    }
    g.coordinator = j["coordinator"].get<std::string>();
  }
  if (j.contains("epoch")) {
    if (!j["epoch"].is_number_integer() || j["epoch"].get<int64_t>() < 1) {
      return Status::InvalidArgument("lease grant: epoch must be an integer >= 1");
    }
    g.epoch = j["epoch"].get<int64_t>();
  }
  if (j.contains("n")) {
    if (!j["n"].is_number_integer() || j["n"].get<int64_t>() < 1) {
      return Status::InvalidArgument("lease grant: n must be an integer >= 1");
    }
    g.n = j["n"].get<int64_t>();
  }
  return g;
}

std::string EncodeEpochMarker(const EpochMarker& m) {
  return json{{"format", "rtb.lease_epoch"},
              {"schema_version", 1},
              {"epoch", m.epoch},
              {"coordinator", m.coordinator},
              {"ts_ms", m.ts_ms}}
      .dump();
}

static Result<EpochMarker> EpochMarkerOf(const json& j) {
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "rtb.lease_epoch" ||
      j.value("schema_version", 0) != 1) {
    return Status::InvalidArgument("epoch marker: not an rtb.lease_epoch v1 message");
  }
  if (!j.contains("epoch") || !j["epoch"].is_number_integer() || j["epoch"].get<int64_t>() < 1) {
    return Status::InvalidArgument("epoch marker: epoch (an integer >= 1) is required");
  }
  EpochMarker m;
  m.epoch = j["epoch"].get<int64_t>();
  if (j.contains("coordinator")) {
    if (!j["coordinator"].is_string()) {
      return Status::InvalidArgument("epoch marker: coordinator must be a string");
    }
    m.coordinator = j["coordinator"].get<std::string>();
  }
  if (j.contains("ts_ms") && j["ts_ms"].is_number_integer()) m.ts_ms = j["ts_ms"].get<int64_t>();
  return m;
}

std::string EpochMarkerKey(int32_t partition, int64_t epoch) {
  return "~epoch/" + std::to_string(partition) + "/" + std::to_string(epoch);
}

std::string LeaseGrantKey(const LeaseKey& key, const std::string& bidder) {
  std::string k = std::to_string(key.day);
  k += '/';
  k += std::to_string(key.advertiser);
  k += '/';
  k += ArmName(static_cast<Arm>(key.arm));
  k += '/';
  k += bidder;
  return k;
}

namespace {
const char* StateName(CoordinatorState s) {
  switch (s) {
    case CoordinatorState::kClaim:
      return "claim";
    case CoordinatorState::kYield:
      return "yield";
    case CoordinatorState::kGone:
      return "gone";
    case CoordinatorState::kServing:
      return "serving";
  }
  return "claim";
}
}  // namespace

std::string DefaultCoordinatorsTopic(const std::string& grants_topic) {
  return grants_topic + ".coordinators";
}

std::string EncodeCoordinatorRecord(const CoordinatorRecord& r) {
  json j = {{"format", "rtb.lease_coordinator"},
            {"schema_version", 1},
            {"state", StateName(r.state)},
            {"instance", r.instance},
            {"host", r.host},
            {"ts_ms", r.ts_ms}};
  if (!r.by.empty()) j["by"] = r.by;
  if (r.state == CoordinatorState::kServing) j["seq"] = r.seq;
  return j.dump();
}

static Result<CoordinatorRecord> DecodeCoordinatorRecordJson(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "rtb.lease_coordinator" ||
      j.value("schema_version", 0) != 1) {
    return Status::InvalidArgument("coordinator record: not an rtb.lease_coordinator v1 message");
  }
  if (!j.contains("instance") || !j["instance"].is_string() ||
      j["instance"].get<std::string>().empty() || !j.contains("state") || !j["state"].is_string()) {
    return Status::InvalidArgument("coordinator record: state and instance are required");
  }
  CoordinatorRecord r;
  const std::string state = j["state"].get<std::string>();
  if (state == "claim") {
    r.state = CoordinatorState::kClaim;
  } else if (state == "yield") {
    r.state = CoordinatorState::kYield;
  } else if (state == "gone") {
    r.state = CoordinatorState::kGone;
  } else if (state == "serving") {
    r.state = CoordinatorState::kServing;
    if (!j.contains("seq") || !j["seq"].is_number_integer() || j["seq"].get<int64_t>() <= 0) {
      return Status::InvalidArgument("coordinator record: a serving beat needs its seq (>= 1)");
    }
    r.seq = j["seq"].get<int64_t>();
  } else {
    return Status::InvalidArgument(
        "coordinator record: state must be claim, serving, yield or gone");
  }
  r.instance = j["instance"].get<std::string>();
  if (j.contains("host") && j["host"].is_string()) r.host = j["host"].get<std::string>();
  if (j.contains("by") && j["by"].is_string()) r.by = j["by"].get<std::string>();
  if (j.contains("ts_ms") && j["ts_ms"].is_number_integer()) r.ts_ms = j["ts_ms"].get<int64_t>();
  return r;
}

// A field of the wrong type makes nlohmann::json throw: an error value, like any bad message.
template <typename F>
static auto Guarded(const char* what, F&& decode) -> decltype(decode()) {
  try {
    return decode();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string(what) + ": " + e.what());
  }
}

Result<LeaseMessage> DecodeLeaseMessage(std::string_view text) {
  return Guarded("lease message", [&] { return DecodeLeaseMessageJson(text); });
}
Result<LeaseGrant> DecodeLeaseGrant(std::string_view text) {
  return Guarded("lease grant", [&] { return LeaseGrantOf(json::parse(text, nullptr, false)); });
}
Result<CoordinatorRecord> DecodeCoordinatorRecord(std::string_view text) {
  return Guarded("coordinator record", [&] { return DecodeCoordinatorRecordJson(text); });
}
Result<EpochMarker> DecodeEpochMarker(std::string_view text) {
  return Guarded("epoch marker", [&] { return EpochMarkerOf(json::parse(text, nullptr, false)); });
}

std::string SealFor(const MarketKeys* keys, std::string_view topic, std::string json) {
  return keys == nullptr ? json : keys->Seal(topic, json);
}

SealCheck OpenFrom(const MarketKeys* keys, std::string_view topic, std::string_view payload,
                   std::string* body) {
  if (keys == nullptr) {
    body->assign(payload);
    return SealCheck::kOk;
  }
  return keys->Open(topic, payload, body);
}

Refusals::Refusals(std::string component, std::string who, const Clock* clock)
    : component_(std::move(component)),
      who_(std::move(who)),
      limit_(5, std::chrono::milliseconds(10'000), clock) {}

void Refusals::Refuse(std::string_view reason, std::string_view what) {
  int64_t n = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = counts_.find(reason);
    if (it == counts_.end()) it = counts_.emplace(std::string(reason), 0).first;
    n = ++it->second;
  }
  if (uint64_t skipped = 0; limit_.Allow(&skipped)) {
    log::Get(component_)
        .warn("{}: refused {} ({}): {} so far for this reason{}", who_, what, reason, n,
              skipped > 0 ? fmt::format(", {} lines skipped", skipped) : "");
  }
}

std::map<std::string, int64_t> Refusals::counts() const {
  std::lock_guard<std::mutex> l(mu_);
  return {counts_.begin(), counts_.end()};
}

int64_t Refusals::total() const {
  std::lock_guard<std::mutex> l(mu_);
  int64_t t = 0;
  for (const auto& [reason, n] : counts_) t += n;
  return t;
}

bool DayWindow::Admit(int64_t day, int64_t now_ms) {
  if (day >= kSimDay) {
    if (!sim_days_) return false;
    if (sim_high_ >= 0 && (day > sim_high_ + kMaxSimDayJump || day < sim_high_ - 2)) return false;
    sim_high_ = std::max(sim_high_, day);
    return true;
  }
  const int64_t today = BudgetDayOf(now_ms, -1);
  return day >= today - 1 && day <= today + 1;
}

bool DayWindow::Behind(int64_t day, int64_t now_ms) const {
  if (day >= kSimDay) return sim_high_ >= 0 && day < sim_high_ - 2;
  return day < BudgetDayOf(now_ms, -1) - 1;
}

int64_t GrantsReader::Epoch(int32_t partition) const {
  const auto it = epoch_.find(partition);
  return it == epoch_.end() ? 0 : it->second;
}

Status GrantsReader::Fenced(int partitions, int64_t epoch) const {
  for (int32_t p = 0; p < partitions; ++p) {
    if (Epoch(p) < epoch) {
      return Status::Unavailable("partition " + std::to_string(p) + " shows epoch " +
                                 std::to_string(Epoch(p)) + ", not " + std::to_string(epoch) +
                                 " (its marker was not delivered)");
    }
  }
  return Status::Ok();
}

std::string GrantsReader::OtherAt(int64_t epoch, std::string_view instance) const {
  const auto it = writers_.find(epoch);
  if (it == writers_.end()) return {};
  for (const std::string& w : it->second) {
    if (w != instance) return w;
  }
  return {};
}

bool GrantsReader::Plausible(int64_t epoch, Record* r) {
  if (ceiling_ > 0 && epoch > ceiling_) {
    above_ceiling_ = std::max(above_ceiling_, epoch);
    r->kind = Kind::kRefused;
    r->error = "epoch_above";
    return false;
  }
  if (epoch - max_epoch_ > max_epoch_jump_) {  // both >= 0: never wraps
    r->kind = Kind::kRefused;
    r->error = "epoch_jump";
    return false;
  }
  return true;
}

GrantsReader::Record GrantsReader::Take(int32_t partition, std::string_view payload,
                                        int64_t offset) {
  Record r;
  int64_t& fence = epoch_[partition];
  if (offset >= 0) {
    const auto [last, first] = last_offset_.try_emplace(partition, offset);
    if (!first && offset <= last->second) fence = 0;  // read again from an earlier offset
    last->second = offset;
  }
  std::string body;
  if (const SealCheck c = OpenFrom(keys_, topic_, payload, &body); c != SealCheck::kOk) {
    r.kind = Kind::kRefused;
    r.error = SealCheckName(c);
    return r;
  }
  auto raise = [&](int64_t epoch, const std::string& coordinator) {
    fence = std::max(fence, epoch);
    max_epoch_ = std::max(max_epoch_, epoch);
    if (epoch > 0 && !coordinator.empty()) {
      writers_[epoch].insert(coordinator);
      // Bounded: a starting coordinator asks only of its own epoch, the newest.
      if (writers_.size() > 64) writers_.erase(writers_.begin());
    }
  };
  const json j = json::parse(body, nullptr, false);
  const auto format = j.is_object() ? j.find("format") : j.end();
  if (format != j.end() && format->is_string() && *format == "rtb.lease_epoch") {
    auto m = Guarded("epoch marker", [&] { return EpochMarkerOf(j); });
    if (!m.ok()) {
      r.error = m.status().message();
      return r;
    }
    r.kind = Kind::kMarker;
    r.epoch = m->epoch;
    if (!Plausible(m->epoch, &r)) return r;
    raise(m->epoch, m->coordinator);
    return r;
  }
  auto g = Guarded("lease grant", [&] { return LeaseGrantOf(j); });
  if (!g.ok()) {
    r.error = g.status().message();
    return r;
  }
  r.grant = std::move(*g);
  r.epoch = r.grant.epoch;
  if (!Plausible(r.grant.epoch, &r)) return r;
  if (r.grant.epoch < fence) {
    r.kind = Kind::kStale;
    return r;
  }
  // A holding of epoch e is published after e's markers: anything lower after it is stale too.
  raise(r.grant.epoch, r.grant.coordinator);
  r.kind = Kind::kHolding;
  return r;
}

}  // namespace rtb::budget
