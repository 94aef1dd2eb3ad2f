// The A/B test's ledger, rebuilt from the bidders' outcome events: per budget day, arm and
// advertiser the budget (the arm's part), spend, impressions, clicks, conversions, revenue and
// bids, and per time bucket the same for the confidence intervals of the arms' ratios. What
// `rtb report` and the demo's A/B figures are computed from (pure: no I/O).
//
// Definitions (the bidder's):
//   spend        = sum of charged billing events' price / 1000, rounded like the bidder books it
//   impressions  = charged billing events;  clicks, conversions = their events' counts
//   revenue      = sum of conversion values;  bids = bid events (test requests excluded)
//   COST = spend / budget, ROI = revenue / spend, CPA = spend / conversions,
//   CPC = spend / clicks, win rate = impressions / bids.
// Days: the simulated day (sim_ms / kDayMs) when the event has one, else the UTC date.
// The arms serve different shares of users with the same shares of the budgets, so their
// ratios compare each arm per unit of share: (learned / s) / (manual / (1 - s)).
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rtb/core/ab.h"
#include "rtb/core/events.h"
#include "rtb/core/goal.h"
#include "rtb/core/report_doc.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb {

struct AbAdvertiser {
  int64_t id = 0;
  std::string name;
  int agent = 0;
  Micros daily_budget;
  // The most one conversion may be worth (the bidder config's max_conversion_value); 0 = no
  // bound. A conversion event above it (times its count, when that is above 1) is refused.
  Micros max_conversion_value;
  Goal goal;  // what the advertiser asks for; each day of each arm is scored against it
};

struct ArmTotals {
  Micros budget, spend, revenue;
  int64_t impressions = 0, bids = 0;
  // Events' counts (core/events.h `count`): whole for real clicks and purchases, expected numbers
  // when the exchange settles expected outcomes.
  double clicks = 0, conversions = 0;

  ArmTotals& operator+=(const ArmTotals& o);
  double Cost() const;  // spend / budget (NaN without a budget)
  double Roi() const;   // revenue / spend
  double Cpa() const;   // spend / conversions
  double Cpc() const;   // spend / clicks
  double WinRate() const;
};

// A ratio with its bootstrap interval.
struct RatioCi {
  double ratio = 0, lo = 0, hi = 0;
  int resamples = 0, buckets = 0;
};

class AbTally {
 public:
  // bucket_ms: the time bucket of the confidence intervals (and of the spend curves).
  AbTally(std::vector<AbAdvertiser> advertisers, double learned_share, int64_t bucket_ms);

  // Adds one event. Test events and repeats (same eid) are skipped and counted; an event of an
  // advertiser the market does not have is counted as unknown. An event whose money cannot be
  // booked is refused (an error saying why; the tally is unchanged): a negative price (bid, win,
  // billing) or conversion value; a billing that charges more than its advertiser's whole daily
  // budget; a conversion worth more than its advertiser's max_conversion_value; or one that would
  // take the booked spend or revenue past the int64 range of micros (checked arithmetic:
  // refused, never wrapped). Every sum the report shows is part of those two totals, so none of
  // them can overflow.
  Status Add(const Event& e);

  const std::vector<AbAdvertiser>& advertisers() const { return advertisers_; }
  int agents() const { return agents_; }
  double learned_share() const { return share_; }
  std::vector<int64_t> Days() const;
  // Totals of one (day, arm, advertiser index); budget = the arm's part of the daily budget.
  ArmTotals Of(int64_t day, Arm arm, size_t adv) const;
  // An advertiser's arm against its goal over every day: each day scored (ScoreGoal) and the
  // scores summed; the realised CPA or ROAS and `met` over the days' totals.
  struct GoalTotals {
    double conversions = 0, spend = 0, value = 0;  // currency units
    double score = 0;                              // summed over the days
    int days = 0, days_met = 0;
    GoalScore overall;  // of the totals: realised, and whether the target held over them
  };
  GoalTotals GoalOf(Arm arm, size_t adv) const;
  // Whether any advertiser has a target (the reports then show the goals).
  bool AnyTarget() const;
  ArmTotals OfAgent(int64_t day, Arm arm, int agent) const;
  ArmTotals OfDay(int64_t day, Arm arm) const;
  ArmTotals OfArm(Arm arm) const;  // over every day
  // Totals per deal (the events' `deal`: bids made through it and the notices of those bids),
  // over both arms and every day; the open auction is not in it. Budget 0: a deal's spend is its
  // advertisers' budget spend, counted in their rows too.
  const std::map<std::string, ArmTotals>& deals() const { return deals_; }
  // Cumulative spend of an agent's arm at the end of each bucket of the day (bucket_ms wide).
  std::vector<double> SpendCurve(int64_t day, Arm arm, int agent) const;
  int64_t buckets_per_day() const;

  // (learned revenue / s) / (manual revenue / (1 - s)) over every day, and the same for ROI
  // (learned ROI / manual ROI), each with a percentile bootstrap interval (95%) over the time
  // buckets (pairs of the two arms' bucket totals, resampled together). Seeded.
  RatioCi RevenueRatio(int resamples = 2000, uint64_t seed = 1) const;
  RatioCi RoiRatio(int resamples = 2000, uint64_t seed = 1) const;

  int64_t events() const { return events_; }
  int64_t skipped_test() const { return test_; }
  int64_t duplicates() const { return duplicates_; }
  int64_t unknown_advertiser() const { return unknown_; }
  // Those events by advertiser id: the first kMaxUnknownIds ids seen (a log of another market
  // names a few; a hostile one cannot grow this without bound).
  static constexpr size_t kMaxUnknownIds = 100;
  const std::map<int64_t, int64_t>& unknown_advertisers() const { return unknown_ids_; }

 private:
  struct Bucket {
    Micros spend[kArms], revenue[kArms];
  };
  RatioCi Bootstrap(bool roi, int resamples, uint64_t seed) const;
  // The money e would book (*charge: a charged billing's, *value: a conversion's), or why it is
  // refused (Add's rules).
  Status Booking(const Event& e, Micros* charge, Micros* value) const;

  std::vector<AbAdvertiser> advertisers_;
  std::map<int64_t, size_t> index_of_;
  int agents_ = 0;
  double share_;
  int64_t bucket_ms_;
  std::map<std::tuple<int64_t, int, size_t>, ArmTotals> cells_;  // (day, arm, adv)
  // (day, bucket of the day, arm, agent) -> spend: the spend curves.
  std::map<std::tuple<int64_t, int64_t, int, int>, int64_t> spend_by_bucket_;
  std::map<int64_t, Bucket> buckets_;       // absolute bucket -> both arms' spend and revenue
  std::map<std::string, ArmTotals> deals_;  // deal id -> its bids' totals
  std::set<std::string> eids_;
  int64_t events_ = 0, test_ = 0, duplicates_ = 0, unknown_ = 0;
  std::map<int64_t, int64_t> unknown_ids_;
  int64_t spend_total_ = 0, revenue_total_ = 0;  // micros booked over every cell (checked)
};

// Adds the events of a JSON-lines text (one event per line; blank lines skipped). A line that
// is not an event, or an event the tally refuses (AbTally::Add), is an error naming
// `name:line: why`, or, with skip_malformed, counted in *malformed (and its first error kept in
// *first_error). A line longer than kMaxLineBytes (core/line_reader.h) is always an error.
Status AddEventLines(std::string_view text, const std::string& name, bool skip_malformed,
                     AbTally* tally, int64_t* malformed, std::string* first_error);
// The same, read line by line from a stream or a file (of any size, in constant memory besides
// the tally's own: never more than one line of it held). A directory or an unreadable file is
// an error naming it.
Status AddEventStream(std::istream& in, const std::string& name, bool skip_malformed,
                      AbTally* tally, int64_t* malformed, std::string* first_error);
Status AddEventFile(const std::string& path, bool skip_malformed, AbTally* tally,
                    int64_t* malformed, std::string* first_error);

// What the report says besides the tally.
struct AbReportInfo {
  std::string title = "A/B test: learned bids against manual bids";
  std::string source;  // where the events came from ("events.jsonl", "topic rtb.events at ...")
  std::string currency = "USD";
  std::string rerun;      // the command that makes this report again
  int64_t malformed = 0;  // lines skipped (--skip-malformed)
  std::vector<std::string> notes;
};

// report.json: {"kind": "ab", "learned_share", "arms": {"learned": {...}, "manual": {...}},
// "comparison": {"revenue_ratio": {...}, "roi_ratio": {...}}, "days": [...], "events": {...}}.
std::string AbReportJson(const AbTally& t, const AbReportInfo& info);
// The same as a document (Markdown and HTML): totals per arm, the ratios with their intervals,
// per day and agent, per advertiser, and each agent's spend over the day against its budget.
doc::Document AbReportDocument(const AbTally& t, const AbReportInfo& info);
// Writes report.json, report.md and report.html into dir (created if needed), each atomically.
Status WriteAbReportFiles(const AbTally& t, const AbReportInfo& info, const std::string& dir);

}  // namespace rtb
