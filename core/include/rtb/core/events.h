// Outcome events, version 1 (schemas/events-v1.md): one JSON object per Kafka message on the
// events topic, keyed by advertiser id (no-bids by their auction id: Event::Key). Every event
// has a unique `eid` (bidder instance + sequence), so a consumer can drop the rare duplicate a
// spill replay after a crash can cause.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rtb/core/ab.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb {

struct Event {
  std::string type;   // bid | nobid | win | billing | loss | click | conversion
  std::string eid;    // unique per event
  int64_t ts_ms = 0;  // wall clock, Unix ms
  std::string auction_id, imp_id;
  int64_t advertiser = -1;  // -1 for nobid
  int agent = -1, cluster = -1;
  int64_t price_micros = 0;  // bid: CPM price; win/billing: clearing CPM; conversion: value
  int64_t cpc_micros = 0;    // bid: adjusted CPC
  double pctr = 0, pcvr = 0, alpha = 0;
  uint64_t policy_version = 0;
  bool manual_fallback = false;
  // The A/B arm of the user (core/ab.h): learned bids the action table, manual bids a = 0.
  Arm arm = Arm::kLearned;
  bool test = false;
  std::string reason;         // nobid reason, invalid price reason, loss code
  bool charged = false;       // billing: whether spend was booked
  int64_t sim_ms = -1;        // simulated clock of the auction (ext.sim / notice `t`); -1 = none
  std::vector<int> computed;  // bid computations per agent, on one event per request
  // click, conversion: how many this event counts for. 1 for a real click or purchase; the
  // expected number (pCTR, pCTR x pCVR) when the exchange settles expected outcomes (notice
  // `n=`). Written only when it is not 1.
  double count = 1.0;
  // bid, win, billing, loss, click, conversion: the deal the bid was made through (its dealid);
  // "" = the open auction. Written only when set.
  std::string deal;
  // bid: the auction type it was made in (OpenRTB `at`: 1 first price, 2 second price, 3 a
  // deal's fixed price); 0 = not recorded (events of earlier versions). Written only when set.
  int at = 0;

  // The Kafka key: the advertiser id, so that each advertiser's events keep their order
  // within a partition. A no-bid has none: "nobid-<b>", b one of kNoBidKeys buckets hashed from
  // its auction id, so that no-bids spread over the partitions (one key would put every no-bid,
  // most of a bidder's events, on one partition) while the key stays a function of the event.
  std::string Key() const;
};

// The no-bid keys' buckets: spread over up to this many partitions.
inline constexpr int kNoBidKeys = 256;

// The largest `count` an event may carry (DecodeEvent refuses more, and negative counts).
inline constexpr double kMaxEventCount = 1e6;

std::string EncodeEvent(const Event& e);
Result<Event> DecodeEvent(std::string_view json);

// The money one advertiser's events may carry, from the market's declared values (the bidder
// config): what CheckEventMoney holds an event to.
struct AdvertiserMoneyBounds {
  // The highest CPM price any of its bids can carry (its manual CPC bid x (1 + alpha_range) x
  // 1000, at pCTR 1): a bid's price, and the price a win or billing bills (never above the
  // bid). Micros.
  int64_t max_price_micros = 0;
  int64_t max_conversion_value_micros = 0;  // Advertiser::max_conversion_value
};

struct EventMoneyBounds {
  // By advertiser id. An event of an advertiser not here is refused when this is not empty.
  std::unordered_map<int64_t, AdvertiserMoneyBounds> advertisers;
  double max_count = kMaxEventCount;  // click, conversion: `count`
  int64_t max_computed = 1'000'000;   // bid computations of one agent on one event
};

// Why an event's money or counts were refused. `reason` is a static snake_case label (a
// metric label and a log word): negative_price, price_above_bid, negative_cpc, cpc_above_bid,
// conversion_value_out_of_range, count_out_of_range, probability_out_of_range,
// computed_out_of_range, unknown_advertiser.
struct EventRefusal {
  const char* reason;
};

// The range check of an event's money, the one both the learner and the reports run: prices
// 0 <= x <= the advertiser's highest bid, a conversion's value within [0, its
// max_conversion_value], counts within [0, max_count], pCTR and pCVR within [0, 1], alpha
// within [-1, 1] (a NaN or an infinity is out of every range). nullopt: the event may be used.
std::optional<EventRefusal> CheckEventMoney(const Event& e, const EventMoneyBounds& b);

}  // namespace rtb
