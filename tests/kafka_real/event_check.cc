// event_check: reads an events topic back whole and compares it with what the bidder says the
// brokers acknowledged, by the rules of Jepsen's Kafka checker:
//   lost        acknowledged (in the acked file), never read, and not waiting in a spill file;
//   duplicated  read more than once (one event id at two offsets; the producer is idempotent);
//   unexpected  read, yet never acknowledged and not in a spill file (a write the bidder took
//               for failed, or one it never made);
//   reordered   keys whose events were read in another order than they were acknowledged in
//               (one key, one partition: the acknowledgements of a partition come in its order).
//
//   event_check --brokers HOSTS --acked FILE [--topic rtb.events] [--spill FILE]...
//               [--kafka-property NAME=VALUE]... [--drop-one] [--producer-restarts N]
//
// The acked file is the bidder's RTB_EVENTS_ACKED_FILE ("key<TAB>event" per acknowledgement);
// a spill file is the bidder's spill ("topic<TAB>key<TAB>event"), events it still holds.
// --drop-one forgets the first event read, as if the brokers had lost it: the checker must
// then count exactly one lost event (the test that the checker catches a loss).
// --producer-restarts N: the bidder replaced its producer N times after librdkafka's fatal error
// (it logs each): the events it had in flight and did not find on the topic are re-sent by the
// new producer after what was logged meanwhile, so the order per key (O = 0) holds only within
// one producer; with N > 0 reorders are counted but not failures. Duplicates still are.
// Prints one line "event_check: read R (distinct D), acked A, pending P; lost L, duplicated U,
// unexpected X, reordered O" and exits 0 when L, U, X and O are all 0 (O not counted with N > 0),
// 1 when one is not, 2 on an error (the topic could not be read, a file is missing).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rtb/core/events.h"
#include "rtb/kafka/kafka.h"

namespace {

struct Args {
  std::string brokers, topic = "rtb.events", acked;
  std::vector<std::string> spills;
  rtb::kafka::Properties properties;
  bool drop_one = false;
  int producer_restarts = 0;
};

int Usage(const char* why) {
  std::fprintf(stderr,
               "event_check: %s\nusage: event_check --brokers HOSTS --acked FILE [--topic T] "
               "[--spill FILE]... [--kafka-property NAME=VALUE]... [--drop-one] "
               "[--producer-restarts N]\n",
               why);
  return 2;
}

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    const bool has_value = i + 1 < argc;
    if (f == "--drop-one") {
      a->drop_one = true;
    } else if (f == "--producer-restarts" && has_value) {
      a->producer_restarts = std::atoi(argv[++i]);
    } else if (f == "--brokers" && has_value) {
      a->brokers = argv[++i];
    } else if (f == "--topic" && has_value) {
      a->topic = argv[++i];
    } else if (f == "--acked" && has_value) {
      a->acked = argv[++i];
    } else if (f == "--spill" && has_value) {
      a->spills.push_back(argv[++i]);
    } else if (f == "--kafka-property" && has_value) {
      const std::string kv = argv[++i];
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) return false;
      a->properties.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else {
      return false;
    }
  }
  return !a->brokers.empty() && !a->acked.empty();
}

// The event id of an encoded event ("" when it does not decode).
std::string EventId(std::string_view payload) {
  auto e = rtb::DecodeEvent(payload);
  return e.ok() ? e->eid : std::string();
}

// Every event id of a file whose lines end in an encoded event after `tabs` tab-separated
// fields, in file order, with the field before the event (the key). False if it cannot be read.
bool ReadEventLines(const std::string& path, int tabs,
                    std::vector<std::pair<std::string, std::string>>* key_eid) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    size_t at = 0, key_at = 0;
    for (int t = 0; t < tabs && at != std::string::npos; ++t) {
      key_at = at;
      at = line.find('\t', at);
      if (at != std::string::npos) ++at;
    }
    if (at == std::string::npos) continue;  // a torn last line
    const std::string eid = EventId(std::string_view(line).substr(at));
    if (!eid.empty()) key_eid->emplace_back(line.substr(key_at, at - 1 - key_at), eid);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, &a)) return Usage("bad arguments");

  std::vector<std::pair<std::string, std::string>> acked;  // (key, eid) in ack order
  if (!ReadEventLines(a.acked, 1, &acked)) return Usage(("cannot read " + a.acked).c_str());
  std::unordered_set<std::string> pending;
  for (const auto& s : a.spills) {
    std::vector<std::pair<std::string, std::string>> lines;
    if (ReadEventLines(s, 2, &lines)) {
      for (auto& [k, eid] : lines) pending.insert(eid);
    }
  }

  // The topic, read whole: each event's id and key, in offset order per partition.
  std::map<int32_t, std::vector<std::pair<std::string, std::string>>>
      read;  // partition -> (key, eid)
  int64_t undecodable = 0;
  const rtb::Status st =
      rtb::kafka::ReadWholeTopic({.bootstrap = a.brokers, .properties = a.properties}, a.topic,
                                 15000, [&](int32_t p, int64_t, std::string_view payload) {
                                   auto e = rtb::DecodeEvent(payload);
                                   if (!e.ok()) {
                                     ++undecodable;
                                     return;
                                   }
                                   read[p].emplace_back(e->Key(), e->eid);
                                 });
  if (!st.ok()) {
    std::fprintf(stderr, "event_check: %s\n", st.message().c_str());
    return 2;
  }
  if (a.drop_one) {
    for (auto& [p, events] : read) {
      if (events.empty()) continue;
      events.erase(events.begin());
      break;
    }
  }

  std::unordered_set<std::string> acked_ids;
  for (const auto& [k, eid] : acked) acked_ids.insert(eid);
  std::unordered_map<std::string, int> times_read;
  std::map<std::string, std::vector<std::string>> read_by_key;  // first reads, in order
  int64_t total = 0;
  for (const auto& [p, events] : read) {
    for (const auto& [key, eid] : events) {
      ++total;
      if (times_read[eid]++ == 0) read_by_key[key].push_back(eid);
    }
  }
  int64_t lost = 0, duplicated = 0, unexpected = undecodable, reordered = 0;
  for (const auto& [eid, n] : times_read) {
    duplicated += n - 1;
    if (!acked_ids.count(eid) && !pending.count(eid)) ++unexpected;
  }
  std::map<std::string, std::vector<std::string>> acked_by_key;  // acked and read, in ack order
  std::unordered_set<std::string> seen;
  for (const auto& [key, eid] : acked) {
    if (!seen.insert(eid).second) continue;  // acknowledged twice (re-sent from the spill)
    if (!times_read.count(eid)) {
      if (!pending.count(eid)) ++lost;
      continue;
    }
    acked_by_key[key].push_back(eid);
  }
  for (auto& [key, order] : read_by_key) {
    std::vector<std::string> acked_order;
    for (const auto& eid : order) {
      if (acked_ids.count(eid)) acked_order.push_back(eid);
    }
    if (acked_order != acked_by_key[key]) ++reordered;
  }
  std::printf(
      "event_check: read %lld (distinct %zu), acked %zu, pending %zu; lost %lld, duplicated "
      "%lld, unexpected %lld, reordered %lld\n",
      static_cast<long long>(total), times_read.size(), seen.size(), pending.size(),
      static_cast<long long>(lost), static_cast<long long>(duplicated),
      static_cast<long long>(unexpected), static_cast<long long>(reordered));
  if (a.producer_restarts > 0) {
    std::printf(
        "event_check: the producer was replaced %d times after a fatal error: reorders "
        "counted, not failures\n",
        a.producer_restarts);
    return lost == 0 && duplicated == 0 && unexpected == 0 ? 0 : 1;
  }
  return lost == 0 && duplicated == 0 && unexpected == 0 && reordered == 0 ? 0 : 1;
}
