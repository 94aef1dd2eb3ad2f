// Win, billing, loss, click and conversion notices: the URLs the bidder puts in nurl / burl /
// lurl (signed, with the exchange's ${AUCTION_*} macros for what only the exchange knows) and
// their parsing. Pure functions.
//
//   <base>/notice/<type>?auction=<auction id>&imp=<imp id>&adv=<advertiser>&bp=<bid CPM micros>
//       &ts=<bid unix ms>&x=<test
//       0|1>&c=<cluster>&ab=<l|m>[&o=<owner>][&d=<dealid>]&sig=<signature,
//       notice_sign.h>&price=${AUCTION_PRICE}
//       [&loss=${AUCTION_LOSS}][&value=<order value>][&t=<simulated ms, from rtb exchange>]
//
// Ids are percent-encoded. Click and conversion notices carry the same signed query.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rtb/bidder/notice_sign.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::bidder {

enum class NoticeType { kWin, kBilling, kLoss, kClick, kConversion };

// The longest auction, imp or bid id a notice may carry (the request decoder's limit).
inline constexpr size_t kMaxNoticeIdBytes = 256;
const char* NoticeTypeName(NoticeType t);

struct Notice {
  NoticeType type = NoticeType::kWin;
  std::string auction_id, imp_id, bid_id;
  uint32_t advertiser = 0;
  // The price (CPM, micros) when present and valid; invalid_price says why it is not.
  std::optional<Micros> price;
  std::string invalid_price;  // "", "missing", "audit", "non-numeric", "negative"
  int loss_code = -1;
  std::optional<Micros> value;  // conversion value
  int64_t sim_ms = -1;          // `t`: simulated clock of the auction (rtb exchange); -1 = none
  // The signed terms of the bid (notice_sign.h); a notice without them is not ours.
  std::optional<Micros> bid_price;  // `bp`: the CPM price bid, micros
  int64_t bid_ms = -1;              // `ts`: when the bid was made, Unix ms
  bool test = false;                // `x`: the bid answered a test=1 request
  std::optional<int32_t> cluster;   // `c`: the user's consumer cluster at bid time
  std::optional<Arm> arm;           // `ab`: the user's A/B arm, `l` learned or `m` manual
  std::string owner;                // `o`: the bidder that made the bid ("" = not named)
  std::string deal;                 // `d`: the deal the bid was made through ("" = open auction)
  // `n`, click and conversion only: how many clicks or conversions the notice reports, when an
  // exchange settles expected outcomes (pCTR, pCTR x pCVR); absent = 1. In (0, 1e6].
  std::optional<double> count;
  std::string sig;  // `sig`
};

// Parses "/notice/<type>?query". Errors: unknown type, missing auction/imp/adv, bad adv, a
// value or an `n` that is not a number in range, `n` on a win, billing or loss.
Result<Notice> ParseNotice(std::string_view target);

// The signed query of one bid, without the leading '?': auction, imp, adv, bp, ts, x, c, ab,
// o (when the bid names its owner), d (when it was made through a deal), sig.
std::string SignedNoticeQuery(const SignedBid& bid, std::string_view sig);
// The notice URL of a bid: base + "/notice/<type>?" + its signed query + the macros the
// exchange substitutes (price; loss reason for loss notices).
std::string NoticeUrl(const std::string& base, NoticeType type, std::string_view signed_query);

// Percent-encoding of a query value (unreserved characters kept).
void UrlEncodeInto(std::string_view in, std::string* out);

// Percent-decoding of a query value; false on a malformed escape.
bool UrlDecode(std::string_view in, std::string* out);

}  // namespace rtb::bidder
