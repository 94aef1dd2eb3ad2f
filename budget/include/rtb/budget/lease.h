// Budget leases: several bidders share one daily budget without overspending it
// (docs/budget-leases.md).
//
// A coordinator owns each (advertiser, arm) budget of a day and grants every live bidder a
// lease: a slice it may spend without asking anyone. A bidder reserves and spends only inside
// its lease, asks for more as it spends, and returns what it does not need. The ledger below is
// the coordinator's book; it is pure (no clock, no I/O: the caller passes the time) and
// thread-safe, so the coordinator process, the tests and the in-process scale model share it.
//
// Invariant, by construction: for every budget, the sum over bidders of what they hold
// (granted - returned - reclaimed) never exceeds the budget. A bidder spends only inside what
// it holds, so the total spend never exceeds the budget either.
//
// Faults. Each bidder's reports say, per budget, what it has spent and what it has reserved
// (bids waiting for their billing notice). A bidder silent for longer than the heartbeat
// timeout is dead: what it held beyond spent + reserved returns to the pool at once, and its
// reserved part after the billing window (later billing notices are refused by every bidder as
// late), so even a bid won just before the crash cannot push the spend over. A restarted
// bidder comes back under its id with its persisted spend and asks again; every answer carries
// what it holds in total, which is its lease. A bidder that has not heard the coordinator for
// its lease TTL (shorter than the heartbeat timeout) stops spending new money: so a bidder cut
// off from Kafka cannot spend a lease the coordinator has already reclaimed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rtb/core/types.h"

namespace rtb::budget {

// One budget the coordinator owns: an advertiser's arm on one day.
struct LeaseKey {
  int64_t day = 0;
  uint32_t advertiser = 0;
  uint8_t arm = 0;  // ArmIndex (core/ab.h)
  auto operator<=>(const LeaseKey&) const = default;
};

// How much to ask for: enough for `horizon_ms` at the bidder's recent spend rate, at least
// `min_micros`, minus what it still holds unspent; 0 when it holds enough.
int64_t LeaseWant(double spend_micros_per_s, int64_t horizon_ms, int64_t min_micros,
                  int64_t unspent_micros);

// How a lease is sized (docs/budget-leases.md, section 1).
enum class LeaseSizing {
  // Each bidder asks for a horizon of its own recent spend rate (LeaseWant); a single grant
  // takes at most max_pool_share of the pool.
  kRate,
  // The coordinator keeps each live bidder holding its traffic share (its bid requests per
  // second over all live bidders', LeaseLedger::Traffic) of what the budget has neither spent
  // nor reserved, topping it up when it falls below half of that and asking back what others
  // hold beyond theirs when the pool cannot. A lease then follows the budget, not the spend
  // rate, so a sudden rise in spend (a new action table) finds every bidder already holding its
  // part.
  kShare,
};
// "rate" or "share" (config files and flags); nullopt for anything else.
std::optional<LeaseSizing> LeaseSizingNamed(std::string_view name);
const char* LeaseSizingName(LeaseSizing sizing);

struct LeaseConfig {
  int64_t heartbeat_timeout_ms = 60'000;  // silent this long: the bidder is dead
  int64_t billing_window_ms = 60'000;     // after that, its reservations can no longer bill
  // A single grant takes at most this share of what is left in the pool (so that one busy
  // bidder cannot drain a budget the others are about to need), but always at least
  // `min_grant_micros` while the pool has it. Under share sizing it caps what an ask gets (a
  // bidder that asks before the others have said a word would count as the only one), not the
  // coordinator's own top-ups.
  double max_pool_share = 0.5;
  int64_t min_grant_micros = 1'000;
  LeaseSizing sizing = LeaseSizing::kRate;
  // Share sizing: a bidder asked back its excess is not asked again for this long, unless it
  // gives something back first (each ask is a message on the grants topic).
  int64_t recall_quiet_ms = 2'000;
};

class LeaseLedger {
 public:
  explicit LeaseLedger(LeaseConfig cfg = {});

  // Sets (or raises/lowers) a budget. Lowering below what is already held grants nothing more
  // until spend and returns bring the holdings under it.
  void SetBudget(const LeaseKey& key, Micros budget);

  // A bidder asks for `want` more micros of `key`: it gets min(want, what the pool allows),
  // possibly 0 (share sizing: what tops it up to its target, whatever `want`). `need` is the
  // least that is of use to it (a bid's charge it could not reserve): it gets at least that,
  // past the pool share cap, or the whole pool if the pool has less (its bids shrink to fit
  // what it holds). A bidder marked dead comes back to life with its record, unless its last
  // Heartbeat was a message from before its death (then it gets 0). Returns the grant.
  int64_t Request(const std::string& bidder, const LeaseKey& key, int64_t want, int64_t now_ms,
                  int64_t need = 0);

  // Any message from a bidder keeps it alive. sent_ms: when the bidder sent it (its ts_ms; -1
  // unknown). With send times, Reclaim also measures a bidder's silence against the newest
  // message processed from any bidder, so a coordinator that has fallen behind its topic (what
  // a live bidder sent is still unread) declares no one dead: it would reclaim beyond a cap the
  // bidder has since raised in a report Kafka acknowledged, and the money would be spent twice.
  // A message a dead bidder sent before it was found dead (sent no later than the newest send
  // time processed from any bidder then), read late, does not bring it back: until a message it
  // sent after that is processed, its Request gets nothing, while its Report and Return still
  // count (spend only grows; what it gave back it will not spend). Returns whether the bidder is
  // alive after this message.
  bool Heartbeat(const std::string& bidder, int64_t now_ms, int64_t sent_ms = -1);

  // Share sizing: `requests` is the bidder's running count of bid requests answered (since its
  // process started), counted at `at_ms` of the bidder's own clock (when it sent its report:
  // reports reach the coordinator in batches); its traffic is the smoothed rate of that count.
  // A count that goes down is a restarted process: the rate is kept and the count starts again.
  // Not a heartbeat (the bidder's clock is not the coordinator's).
  void Traffic(const std::string& bidder, int64_t requests, int64_t at_ms);
  // A bidder's traffic share among the live bidders: its rate over theirs (a bidder whose rate
  // is not known yet counts as the mean of the known ones; all equal when none is known).
  double TrafficShare(const std::string& bidder) const;
  // Every live bidder's traffic share, by name.
  std::vector<std::pair<std::string, double>> TrafficShares() const;
  // Whether the bidder is known and not marked dead.
  bool IsAlive(const std::string& bidder) const;

  // Share sizing: the bidders' running mean of one bid's largest charge on `key` (their
  // reports' `unit`, at most the budget); smoothed over the reports, and moved only when the
  // smoothed value is an eighth away from it, so that the parts do not shift with every report.
  // Once it is known, a budget whose equal parts over the live bidders would each be less than
  // one such bid is parted in whole bids (below).
  void NoteUnit(const LeaseKey& key, int64_t unit);
  // Share sizing, a budget parted in whole bids: the part of `key` Rebalance means `bidder` to
  // hold unused (its target below); -1 otherwise (and for a bidder not alive). A bidder told its
  // target keeps no more than that when asked back, and returns no piece below it.
  int64_t TargetOf(const std::string& bidder, const LeaseKey& key) const;

  // Share sizing (no-op under rate sizing): every live bidder's share of what `key` has
  // neither spent nor reserved is its target. Where that would leave each of them less than one
  // bid (the mean unit, NoteUnit), the targets are whole bids instead, to the bidders in line
  // first (Share::rank), the rest of what is left to the next one and nothing to the others: a
  // chance that lands on a bidder then finds a whole bid there or none, not a piece that could
  // only bid low (docs/budget-leases.md, section 8). A bidder whose unused lease is below half its
  // target (or below the largest `need` asked of the budget) is topped up to the target from
  // the pool, once its traffic is measured (until then it gets what it asks: Request); when the
  // pool cannot, every bidder holding more than its target is asked back
  // the excess (`recall`). Parted in whole bids, any shortfall of a measured bidder is topped
  // up and any excess asked back. Otherwise, once what is left could not
  // give every live bidder one such need, nothing moves: the needs of refused bids decide
  // (Request's `need`, the bidders' returns of fragments). Returns what changed.
  struct Move {
    std::string bidder;
    int64_t grant = 0;   // granted now (in the ledger)
    int64_t recall = 0;  // asked back: what the bidder holds beyond its target
  };
  // `reporter`: the bidder whose report this follows; nothing moves unless it is short (so a
  // report costs a look at one holding, not at every bidder's).
  // A holding asked back is not asked again until it returns something or recall_quiet_ms pass.
  std::vector<Move> Rebalance(const LeaseKey& key, int64_t now_ms,
                              const std::string* reporter = nullptr);
  // Whether Rebalance moves `key`'s money now: share sizing, and parted in whole bids or enough
  // left to give every live bidder one `need` (otherwise the refused bids' needs decide).
  bool SharesApply(const LeaseKey& key) const;
  // What `key` has neither spent nor reserved that the coordinator can move: its pool plus what
  // every live bidder holds beyond its spend and reservations (a dead bidder's holding is not
  // counted until it is reclaimed). The base of every share.
  int64_t AvailableOf(const LeaseKey& key) const;

  // A bidder gives back unspent lease (at most what it holds beyond spent + reserved).
  int64_t Return(const std::string& bidder, const LeaseKey& key, int64_t amount, int64_t now_ms);

  // What a bidder reports: its cumulative spend (acknowledged billing) and its open
  // reservations on `key`, and `cap`: the most it will have spent and reserved before its next
  // report is on Kafka (0 = not said). Spend only grows; a report below the last one is ignored,
  // except the first one sent after a restored holding was published (`seq` above its `seen`:
  // Restore), which replaces the restore's "all spent" with what the bidder did spend.
  // A dead bidder keeps max(spent + reserved, cap): what it committed after its last report
  // was never more than that.
  void Report(const std::string& bidder, const LeaseKey& key, int64_t spent, int64_t reserved,
              int64_t now_ms, int64_t cap = 0, int64_t seq = 0);

  // How a bidder's silence is measured, from two clocks: the coordinator's (now_ms against
  // when a message of the bidder was last processed) and the bidders' own (once messages carry
  // send times, see Heartbeat: the newest send time processed from any bidder against the
  // bidder's newest).
  enum class Silence {
    // The shorter of the two: a coordinator behind some bidders' partitions (it reads them
    // unevenly) takes none of them for dead while the others' newer messages come in.
    kWhileReading,
    // The longer of the two, for a caller that has read every bidder's messages up to now: a
    // dead bidder whose last messages it read late is dead from when it last sent.
    kAllRead,
  };
  // Marks silent bidders dead and returns what they no longer need to the pool; the number of
  // (bidder, budget) leases reclaimed by this call. Silent: for more than heartbeat_timeout_ms,
  // measured as `silence` says. `changed`, if given, gets every (budget, bidder) whose holding
  // this call lowered (also a reserved part released after the billing window, which counts no
  // reclaim): what the caller has to publish.
  int Reclaim(int64_t now_ms, std::vector<std::pair<LeaseKey, std::string>>* changed = nullptr,
              Silence silence = Silence::kWhileReading);
  // Whether Reclaim(now_ms, ..., silence) would take a live bidder for dead (one is silent past
  // the timeout).
  bool AnyLiveBidderSilent(int64_t now_ms, Silence silence = Silence::kWhileReading) const;

  // A restarted coordinator: sets what `bidder` holds of `key`, as its grants topic says (the
  // latest total per lease, and its `seen`: the bidder's highest seq it included). The budget
  // must be set first. The lease counts as spent until the bidder reports under a seq above
  // `seen` (the topic does not say what it spent; an earlier report, delivered again, may be
  // older than the holding), so a bidder that never comes back keeps its lease: delivery may
  // suffer, the budget never does.
  void Restore(const std::string& bidder, const LeaseKey& key, int64_t held, int64_t now_ms,
               int64_t seen = 0);

  // A bidder known to be dead without waiting for its silence (a retired `<name>~<instance>`
  // record a restarted coordinator restores): it takes no share and its holdings no longer
  // count as money a live bidder could give back; the next Reclaim treats it as any dead
  // bidder. No-op for an unknown or already dead bidder.
  void MarkDead(const std::string& bidder, int64_t now_ms);

  // A dead bidder's name goes to a new process that does not continue its state (another
  // machine, a lost disk): its holdings move to `as`, still counted against their budgets and
  // still dead (its spend stays spent, its reservations release after the billing window), and
  // `bidder` starts again with no holding. Returns the budgets whose holdings moved (the caller
  // publishes both names' holdings); none if `bidder` is alive or unknown.
  std::vector<LeaseKey> Retire(const std::string& bidder, const std::string& as);

  // Forgets every budget of a day that `behind(day)` says is over (a coordinator runs for months:
  // its state stays a window of days). Returns how many budgets it forgot.
  size_t ForgetDays(const std::function<bool(int64_t day)>& behind);

  // Every lease: what each bidder holds of each budget (for publishing changes).
  struct Lease {
    LeaseKey key;
    std::string bidder;
    int64_t held = 0;
    int64_t spent = 0, reserved = 0;  // as last reported
  };
  std::vector<Lease> Leases() const;

  // Sums saturate at INT64_MAX (never wrap).
  struct Totals {
    int64_t budget = 0;
    int64_t held = 0;   // sum over bidders of granted - returned - reclaimed
    int64_t spent = 0;  // sum of reported spend
    // OfDay: the budgets whose reported spend is past the budget, and by how much in all (0
    // unless a bidder spent past its lease).
    int64_t overspent = 0, overspend = 0;
    int64_t pool() const { return budget - held; }   // grantable (negative after a budget cut)
    int64_t left() const { return budget - spent; }  // not spent yet, as reported
  };
  Totals Of(const LeaseKey& key) const;
  // The sums over every budget of one day, and how many budgets there are.
  Totals OfDay(int64_t day, int* budgets = nullptr) const;
  // The days the ledger holds budgets of, oldest first.
  std::vector<int64_t> Days() const;
  int64_t Held(const std::string& bidder, const LeaseKey& key) const;
  int64_t reclaims() const;  // leases reclaimed so far
  int64_t grants() const;    // grant answers so far (including zero grants)

 private:
  struct Holding {
    int64_t held = 0, spent = 0, reserved = 0, cap = 0;
    bool reclaimed = false;          // the unspent part went back at death
    bool reserved_released = false;  // and the reserved part after the billing window
    int64_t recalled_ms = -1;        // when Rebalance last asked it back (-1: not since it gave)
    int64_t restored_seen = -1;      // restored, not reported since: the holding's seen (else -1)
  };
  struct Budget {
    int64_t budget = 0, held = 0;
    int64_t unit = 0;           // the largest `need` asked of it (a bid's charge)
    int64_t mean_unit = 0;      // the bidders' mean bid charge (NoteUnit); 0 = not known
    int64_t unit_smoothed = 0;  // NoteUnit's running value, which mean_unit follows by eighths
    int64_t unused_live = 0;    // the sum of Unused() over the live bidders' holdings
    std::map<std::string, Holding> by_bidder;
  };
  struct Bidder {
    int64_t seen_ms = 0;
    int64_t sent_ms = -1;        // the newest send time of its messages processed; -1: none known
    int64_t dead_since_ms = -1;  // -1: alive
    int64_t dead_sent_ms = -1;   // the newest send time of any message processed when it died
    bool late = false;           // its last Heartbeat was a message sent before it died
    int64_t requests = -1, requests_ms = 0;  // the last Traffic count, and when
    double rate = -1;                        // requests per second, smoothed; -1: not known
  };
  struct Share {
    const std::string* name;  // a key of bidders_
    double share;
    bool measured;  // its traffic rate is known (else it counts as the mean)
    // Its place in line for whole bids (PartOf): by share over the mean share in steps of a
    // quarter (equal traffic within about 12% of the mean keeps one step, so its ups and downs do
    // not reorder the line), then by name; 0 first.
    int64_t rank = 0;
  };
  // REQUIRES: mu_ held (all below).
  Bidder& BidderNamed(const std::string& bidder);  // added if new
  // How long the bidder has been silent (Reclaim's rule).
  int64_t SilentMs(const Bidder& b, int64_t now_ms, Silence silence) const;
  // Any message of the bidder: it is alive, unless the message is one sent before its death.
  void Touch(const std::string& bidder, int64_t now_ms);
  // Marks a live bidder dead at now_ms (Reclaim's rule, MarkDead).
  void Die(const std::string& name, Bidder& b, int64_t now_ms);
  // Every live bidder's traffic share, by name; recomputed when a rate or a life changed.
  const std::vector<Share>& Shares() const;
  void RankShares() const;                                // sets shares_' ranks
  const Share* ShareOf(const std::string& bidder) const;  // null: dead or unknown
  bool Alive(const std::string& bidder) const;
  // What a holding holds and does not use (held - spent - reserved, at least 0).
  static int64_t Unused(const Holding& h);
  // The money of b neither spent nor reserved: the pool plus every live holding's unused part.
  static int64_t Available(const Budget& b);
  bool SharesApplyTo(const Budget& b, size_t live) const;
  // Whether b's parts go in whole bids (PartOf): its mean bid charge is known and the live
  // bidders' equal parts of WholeBase would each be less than one.
  bool WholeBids(const Budget& b, size_t live) const;  // REQUIRES: mu_ held
  // What whole bids part: the pool and what the live bidders hold beyond their spend.
  int64_t WholeBase(const Budget& b) const;
  // A live bidder's part of b under share sizing: its target (share x `available`), what it
  // holds unused, and the mark below which it is short.
  struct Part {
    const Share* share;
    int64_t target, unused, low;
    // Parted in whole bids: target and unused count the bidder's reservations (held - spent),
    // so that a bid in flight moves nothing, and any shortfall or excess counts.
    bool whole = false;
  };
  Part PartOf(const Budget& b, const Share& x, int64_t available) const;
  void Grant(Budget& b, const std::string& bidder, int64_t amount);
  // Applies f to a holding, keeping b.unused_live right.
  template <typename F>
  void Change(Budget& b, const std::string& bidder, Holding& h, F&& f);

  LeaseConfig cfg_;
  mutable std::mutex mu_;
  std::map<LeaseKey, Budget> budgets_;
  std::map<std::string, Bidder> bidders_;
  mutable std::vector<Share> shares_;  // Shares(), while !shares_dirty_
  mutable bool shares_dirty_ = true;
  int64_t reclaims_ = 0, grants_ = 0;
  int64_t newest_sent_ms_ = -1;  // the newest send time of any message processed; -1: none
};

}  // namespace rtb::budget
