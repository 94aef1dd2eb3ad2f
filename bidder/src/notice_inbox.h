// The notices other bidders of the market took for this bidder's bids (private to the bidder).
//
// With several bidders sharing the budgets (leases.enabled) every bid's signed notice URLs name
// the bidder that made it (`o=`, notice_sign.h). A bidder that receives a notice for another
// one's bid books nothing: it puts the notice on the notices topic (leases.notices_topic) keyed
// by the owner's name, through its state store's outbox (so that it survives a kill -9), and
// answers the exchange at once. Each bidder reads the whole topic on a thread of its own and
// books the notices keyed by its name as if the exchange had sent them to it: its dedupe store
// and its budget ledger, so a notice is booked once across the market however many bidders
// receive it, and always within the owner's reservations and lease.
//
// A message is a JSON object {"notice":"<path and query>","at":<unix ms it was received>},
// sealed with the market key ring
// when one is set (core/mac.h); one that fails the seal is dropped, counted and logged. The
// offsets read are kept in the state store (meta "notice_inbox/<topic>/<partition>", at most
// once a second), so a restart reads on from about where it stopped; a notice read twice is a
// duplicate to the dedupe store.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "rtb/bidder/state_store.h"
#include "rtb/core/mac.h"
#include "rtb/core/status.h"
#include "rtb/kafka/kafka.h"

namespace rtb::bidder {

struct ForwardedNotice {
  std::string target;        // the notice's path and query, as the exchange sent it
  int64_t received_ms = -1;  // when the bidder that forwarded it received it (Unix ms)
};
// The message that forwards one notice on `topic`: sealed when `keys` is set.
std::string EncodeForwardedNotice(const ForwardedNotice& n, std::string_view topic,
                                  const MarketKeys* keys);
// A forwarded message's notice; an error names why it is refused (its seal, or not the
// message's shape).
Result<ForwardedNotice> DecodeForwardedNotice(std::string_view payload, std::string_view topic,
                                              const MarketKeys* keys);

class NoticeInbox {
 public:
  struct Options {
    kafka::ClientOptions client;
    std::string topic;
    std::string name;  // this bidder's: the key of the messages it books
    std::shared_ptr<const MarketKeys> keys;
    StateStore* state = nullptr;  // where the offsets read are kept
    int thread_nice = 0;
    // Books one notice; false: not now (the state store failed), so the same notice is tried
    // again a little later.
    std::function<bool(const ForwardedNotice&)> apply;
  };
  static Result<std::unique_ptr<NoticeInbox>> Start(Options opt);
  ~NoticeInbox();  // stops the thread, keeps the offsets read

  uint64_t booked() const;   // notices of this bidder's bids read and handed to `apply`
  uint64_t refused() const;  // messages dropped (seal, shape)

  struct State;

 private:
  NoticeInbox() = default;
  std::unique_ptr<State> state_;
};

}  // namespace rtb::bidder
