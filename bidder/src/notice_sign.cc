#include "rtb/bidder/notice_sign.h"

#include <openssl/rand.h>

#include <optional>

#include "rtb/core/mac.h"

namespace rtb::bidder {

namespace {

constexpr size_t kSigBytes = 16;

// The signed bytes: fixed-width integers and length-prefixed strings, version first (2: no
// owner, the encoding of earlier versions, whose URLs still verify; 3: the owner last; 4: the
// owner, possibly empty, then the deal).
void Encode(const SignedBid& b, std::string* out) {
  out->clear();
  out->push_back(!b.deal.empty() ? '\x04' : b.owner.empty() ? '\x02' : '\x03');
  PutU64(out, b.auction.size());
  out->append(b.auction);
  PutU64(out, b.imp.size());
  out->append(b.imp);
  PutU64(out, b.advertiser);
  PutU64(out, static_cast<uint64_t>(b.price_cpm.value()));
  PutU64(out, static_cast<uint64_t>(b.bid_unix_ms));
  out->push_back(b.test ? '\x01' : '\x00');
  PutU64(out, static_cast<uint64_t>(static_cast<int64_t>(b.cluster)));
  out->push_back(static_cast<char>(b.arm));
  if (!b.owner.empty() || !b.deal.empty()) {
    PutU64(out, b.owner.size());
    out->append(b.owner);
  }
  if (!b.deal.empty()) {
    PutU64(out, b.deal.size());
    out->append(b.deal);
  }
}

}  // namespace

// HMAC-SHA-256 with the key's pads hashed once (core/mac.h): a signature costs the message's
// blocks and one outer block, no key schedule.
struct NoticeSigner::Impl {
  Hmac hmac;
  std::string Sign(const SignedBid& b) const {
    thread_local std::string msg;
    Encode(b, &msg);
    return hmac.HexMac(msg, kSigBytes);
  }
};

NoticeSigner::NoticeSigner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NoticeSigner::~NoticeSigner() = default;

Result<std::unique_ptr<NoticeSigner>> NoticeSigner::Create(std::string_view secret) {
  if (secret.size() < 16) {
    return Status::InvalidArgument("notice_secret must be at least 16 characters");
  }
  RTB_ASSIGN_OR_RETURN(Hmac h, Hmac::Create(secret));
  return std::unique_ptr<NoticeSigner>(
      new NoticeSigner(std::make_unique<Impl>(Impl{std::move(h)})));
}

std::string NoticeSigner::Sign(const SignedBid& b) const { return impl_->Sign(b); }

bool NoticeSigner::Verify(const SignedBid& b, std::string_view sig) const {
  return ConstantTimeEqual(sig, Sign(b));
}

Result<std::string> RandomSecret() {
  unsigned char b[32];
  if (RAND_bytes(b, sizeof b) != 1) return Status::Internal("no entropy for a notice secret");
  return HexBytes(b, sizeof b);
}

}  // namespace rtb::bidder
