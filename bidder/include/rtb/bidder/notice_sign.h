// Signed notice URLs: a notice the bidder accepts must name a bid it made. At bid time the bid's
// identity and terms (auction id, imp id, advertiser, bid price, bid time, test flag, the
// user's consumer cluster and A/B arm, and the bidder that owns it) are signed
// with HMAC-SHA-256 under the bidder's secret (config `notice_secret`), and the signature and
// terms ride in the nurl / burl / lurl query. A notice whose signature does not match what it
// claims (an altered imp id, a higher bid price, an auction never bid on) is refused (403) and
// counted. The signed input is a structured, length-prefixed encoding, so no two different
// bids sign the same bytes.
//
// Thread-safe: Sign and Verify only read the precomputed key state.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rtb/core/ab.h"
#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::bidder {

struct SignedBid {
  std::string_view auction, imp;
  uint32_t advertiser = 0;
  Micros price_cpm;  // the CPM price bid: the most any notice of it may charge
  int64_t bid_unix_ms = 0;
  bool test = false;  // a test=1 request's bid: its notices never touch a budget
  // The user's consumer cluster j when the bid was made: the notice's event carries it, so the
  // bidder keeps no per-bid record for its notices.
  int32_t cluster = -1;
  Arm arm = Arm::kLearned;  // the user's A/B arm: whose budget the notice's charge is booked to
  // The bidder that made the bid (its name, leases.name), when several bidders share the
  // market's budgets: a notice that reaches another bidder is forwarded to this one, which
  // alone books it (notice_handler.cc). Empty: not named (one bidder; URLs of earlier
  // versions), signed as before.
  std::string_view owner;
  // The deal the bid was made through (its dealid), "" for the open auction: its notices book
  // the spend to that deal (rtb report). Signed with version 4; open-auction bids sign as before.
  std::string_view deal;
};

class NoticeSigner {
 public:
  // REQUIRES: secret at least 16 bytes.
  static Result<std::unique_ptr<NoticeSigner>> Create(std::string_view secret);
  ~NoticeSigner();
  // The signature of a bid: 32 lowercase hex characters (HMAC-SHA-256, first 128 bits).
  std::string Sign(const SignedBid& b) const;
  // Whether sig is b's signature (constant-time comparison).
  bool Verify(const SignedBid& b, std::string_view sig) const;

  struct Impl;

 private:
  explicit NoticeSigner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A fresh random secret (64 hex characters) from the system's entropy.
Result<std::string> RandomSecret();

}  // namespace rtb::bidder
