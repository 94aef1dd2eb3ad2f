// Replay of the engine's own outcome events (schemas/events-v1.md; docs/replay.md section 3).
//
// The events of one bid (bid, then win/billing or loss, clicks, conversions) are joined into a
// LoggedBid. Replaying another bid on it has the iPinYou limitation, and this is the protocol
// ("outcomes", known outcomes only):
//   - a bid the log shows won at clearing price p: the new bid wins iff it is >= p, and then
//     pays p and gets the logged clicks, conversions and order value;
//   - a bid the log shows lost (or with no outcome): the new bid loses; when it is above the
//     logged bid the result is unknown (the market price of a lost auction is not in the log),
//     and it is counted in `unknown` so the report can say how much of the result is a lower
//     bound;
//   - a bid made in a first-price auction (its event's `at` 1) that won paid its own bid, so the
//     log holds no market price: a new bid at or above the logged one wins and pays itself; a
//     lower one is unknown (counted as lost, and in `unknown`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rtb/core/events.h"
#include "rtb/core/metrics.h"
#include "rtb/core/status.h"

namespace rtb::sim {

struct LoggedBid {
  std::string auction_id, imp_id;
  int64_t advertiser = 0;
  int agent = -1, cluster = -1;
  int64_t ts_ms = 0;
  int64_t sim_ms = -1;      // the simulated clock of the auction (-1: none)
  Arm arm = Arm::kLearned;  // the user's A/B arm
  int64_t bid_micros = 0;   // the CPM bid sent
  double pctr = 0, pcvr = 0, alpha = 0;
  bool won = false;
  int64_t price_micros = 0;            // clearing CPM (billing if any, else win)
  double clicks = 0, conversions = 0;  // the events' counts (expected outcomes: fractional)
  int64_t value_micros = 0;            // order value of the conversions
  bool test = false;
  bool first_price = false;  // made in a first-price auction (the bid event's `at` 1)
};

struct OutcomeLog {
  std::vector<LoggedBid> bids;  // in the order their bid events were read
  int64_t events = 0;           // events read
  int64_t duplicates = 0;       // repeated eids dropped
  int64_t orphans = 0;          // outcome events whose bid is not in the log
  // Of those, the impressions won (a win or billing notice) and what they cost (micros; the
  // billing price if any, else the win's): what a bidder killed before its bid events reached
  // Kafka leaves out of every replay (its notices' events survive: bidder/README.md).
  int64_t orphan_impressions = 0;
  int64_t orphan_cost_micros = 0;
  int64_t other = 0;    // nobid events and test traffic
  int64_t skipped = 0;  // malformed lines skipped
  std::string first_skipped;
};

// Joins events into bids. Events may come in any order across partitions.
class OutcomeLogBuilder {
 public:
  // Adds one event, or refuses it (an error saying why; nothing changes) when its money cannot
  // be replayed: a negative price (bid, win, billing) or conversion value, or one that would take
  // the log's total of prices or of values past the int64 range of micros. Every sum a replay
  // makes is part of those totals (checked arithmetic: refused, never wrapped).
  Status Add(const Event& e);
  void AddMalformed(const std::string& where);
  OutcomeLog Finish();

 private:
  OutcomeLog log_;
  std::unordered_map<std::string, bool> seen_eids_;
  std::unordered_map<std::string, size_t> index_;  // auction \x1f imp \x1f adv -> bid
  std::vector<Event> early_;                       // outcome events before their bid
  int64_t cost_total_ = 0, value_total_ = 0;       // micros: every won CPM / 1000, every value
};

// Reads a dump (one events-v1 JSON object per line). Malformed lines and refused events stop
// with file:line, or are skipped and counted. A line longer than kMaxLineBytes
// (core/line_reader.h) is always an error.
Result<OutcomeLog> ParseOutcomeDump(std::string_view text, const std::string& name,
                                    bool skip_malformed);
// The same from a file, line by line (never more than one line of it held); a directory or an
// unreadable file is an error naming it.
Result<OutcomeLog> ReadOutcomeDump(const std::string& path, bool skip_malformed);

struct OutcomeReplayResult {
  std::map<int64_t, Outcome> by_advertiser;
  Outcome total;
  // Outcome unknown, counted as lost: lost in the log with the bid raised, or won at first price
  // with the bid lowered.
  int64_t unknown = 0;
};

// new CPM bid (micros) for a logged bid.
using OutcomeBid = std::function<int64_t(const LoggedBid&)>;
OutcomeReplayResult ReplayOutcomes(const OutcomeLog& log, const OutcomeBid& bid,
                                   int64_t advertiser = -1);

// Strategies: logged (the bids as sent), manual (the learned action undone: bid / (1 + alpha)),
// scale:<f> (the logged bid x f).
Result<OutcomeBid> OutcomeStrategy(const std::string& spec);

}  // namespace rtb::sim
