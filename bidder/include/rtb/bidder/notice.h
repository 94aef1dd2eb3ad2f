// Win, billing, loss, click and conversion notices: the URLs the bidder puts in nurl / burl /
// lurl (with the exchange's ${AUCTION_*} macros) and their parsing. Pure functions.
//
//   <base>/notice/<type>?auction=${AUCTION_ID}&imp=${AUCTION_IMP_ID}&bid=${AUCTION_BID_ID}
//       &adv=<advertiser>&price=${AUCTION_PRICE}[&loss=${AUCTION_LOSS}][&value=<order value>]
//       [&t=<simulated ms, appended by rtb exchange>]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::bidder {

enum class NoticeType { kWin, kBilling, kLoss, kClick, kConversion };
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
};

// Parses "/notice/<type>?query". Errors: unknown type, missing auction/imp/adv, bad adv.
Result<Notice> ParseNotice(std::string_view target);

// The notice URL template for a bid; macros are left for the exchange to substitute.
std::string NoticeUrl(const std::string& base, NoticeType type, uint32_t advertiser);

// Percent-decoding of a query value; false on a malformed escape.
bool UrlDecode(std::string_view in, std::string* out);

}  // namespace rtb::bidder
