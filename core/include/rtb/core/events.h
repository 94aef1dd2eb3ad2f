// Outcome events, version 1 (schemas/events-v1.md): one JSON object per Kafka message on the
// events topic, keyed by advertiser id ("nobid" for no-bids). Every event has a unique `eid`
// (bidder instance + sequence), so a consumer can drop the rare duplicate a spill replay
// after a crash can cause.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
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

  std::string Key() const {
    return advertiser < 0 ? std::string("nobid") : std::to_string(advertiser);
  }
};

// The largest `count` an event may carry (DecodeEvent refuses more, and negative counts).
inline constexpr double kMaxEventCount = 1e6;

std::string EncodeEvent(const Event& e);
Result<Event> DecodeEvent(std::string_view json);

}  // namespace rtb
