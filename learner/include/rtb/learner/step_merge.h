// The state server of docs/dcmab.md section 8, as a pure data structure: merges the bidders'
// outcome events (schemas/events-v1.md) into per-step totals per (agent i, consumer cluster j)
// from which the learner builds g, d and the rewards. Torch-free and I/O-free; the online
// learner feeds it from Kafka and persists it (ToJson) with every transition it writes.
//
// A step is identified by (day, step) of the event's simulated clock (`sim_ms`, from
// `rtb exchange`) or, without one, of its wall clock: day = ms / 86,400,000, step = (ms within
// the day) / step_ms. Events repeat only through spill replays; they are dropped by `eid`.
// Events of a step already closed are late: counted, not merged.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rtb/core/events.h"
#include "rtb/core/status.h"

namespace rtb::learn {

struct StepKey {
  int64_t day = 0;
  int step = 0;
  auto operator<=>(const StepKey&) const = default;
};

// One advertiser's outcomes in a step (the learned arm's): what goal rewards are built from.
struct AdvertiserTotals {
  int64_t cost_micros = 0;   // billed spend
  double conversions = 0;    // the conversion events' counts
  int64_t value_micros = 0;  // their values
};

struct StepTotals {
  StepKey key;
  std::vector<int64_t> cost_micros;                   // [i*L + j], billed (charged) spend
  std::vector<int64_t> revenue_micros;                // [i*L + j], conversion values
  std::vector<int64_t> computed;                      // [i*L + j], bid computations (d_ij's counts)
  std::vector<double> clicks;                         // [i*L + j], the click events' counts
  std::map<int64_t, AdvertiserTotals> by_advertiser;  // by advertiser id (those with outcomes)
  std::map<std::string, int64_t> count_by_type;       // events merged, by type
  int64_t events = 0;                                 // events merged (after dedupe)
  int64_t unattributed = 0;  // outcomes whose cluster was unknown (booked to cluster 0)
  // Events of the A/B test's manual arm: counted (the step's marker counts them) but not in
  // the totals above, which are the learned arm's alone.
  int64_t manual_arm = 0;
  // A sum above int64 (it saturates there): the step's totals are not to be learned from.
  bool overflow = false;
  std::set<std::string> eids;  // for dedupe while the step is open

  int64_t TotalCost() const;
  int64_t TotalRevenue() const;
  // Totals as JSON (no eids): what the learner stores per closed step for audits.
  std::string SummaryJson() const;
};

enum class MergeResult { kMerged, kDuplicate, kLate, kIgnored };

class StepMerger {
 public:
  StepMerger(int agents, int clusters, int64_t step_ms);

  StepKey KeyOf(const Event& e) const;
  // Test events are ignored; events without an agent and the manual arm's events count
  // towards the step's events but not its totals.
  MergeResult Add(const Event& e);
  // Events merged so far into an open step.
  int64_t EventsIn(const StepKey& k) const;
  // Closes the step: returns its totals (empty ones if no event arrived) and marks every
  // step up to it closed.
  StepTotals Close(const StepKey& k);
  // Latest closed step, if any.
  std::optional<StepKey> closed_through() const { return closed_; }
  int64_t late() const { return late_; }
  int64_t duplicates() const { return duplicates_; }

  std::string ToJson() const;
  static Result<StepMerger> FromJson(const std::string& json);

 private:
  StepTotals& Open(const StepKey& k);
  int agents_, clusters_;
  int64_t step_ms_;
  std::map<StepKey, StepTotals> open_;
  std::optional<StepKey> closed_;
  int64_t late_ = 0, duplicates_ = 0;
};

}  // namespace rtb::learn
