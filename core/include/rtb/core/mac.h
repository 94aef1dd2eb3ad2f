// Message authentication between the engine's own processes (docs/reliability.md, "Trust").
//
// Hmac: HMAC-SHA-256 (RFC 2104) with the key's inner and outer pads hashed once, so a MAC costs
// the message's blocks and one outer block (the notice signer's hot path uses it too).
//
// MarketKeys: the market key ring (config `market_keys`): every process of a market (bidders,
// the budget coordinator, the learner, the exchange's step markers) holds the same ring. The
// first key signs, every key verifies, so a key rotates by adding the new one second, then
// first, then removing the old one. Separate from the notice secret: a leaked nurl secret does
// not let anyone write the engine's topics, and a leaked topic write without the ring is
// dropped by every reader.
//
// A sealed message is a JSON object with one more member last, `"mac":"<key id>:<32 hex>"`,
// over the topic and the exact bytes of the object without it (no canonical form needed: the
// receiver checks the bytes it got). Thread-safe: everything here is const after Create.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rtb/core/status.h"

namespace rtb {

class Hmac {
 public:
  static constexpr size_t kDigestBytes = 32;
  using Digest = std::array<unsigned char, kDigestBytes>;
  // Any key length (longer than a block is hashed first, as RFC 2104 says).
  static Result<Hmac> Create(std::string_view key);
  Hmac(Hmac&&) noexcept;
  Hmac& operator=(Hmac&&) noexcept;
  ~Hmac();
  Digest Mac(std::string_view message) const;
  // The first `bytes` bytes of Mac(message) as lowercase hex.
  std::string HexMac(std::string_view message, size_t bytes = 16) const;

 private:
  struct Pads;
  explicit Hmac(std::unique_ptr<Pads> pads);
  std::unique_ptr<Pads> pads_;
};

// Lowercase hex of n bytes; constant-time equality of two strings.
std::string HexBytes(const unsigned char* p, size_t n);
bool ConstantTimeEqual(std::string_view a, std::string_view b);
// Appends v as 8 little-endian bytes: the fixed-width integers of the bytes a MAC covers.
inline void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

struct MarketKey {
  std::string id;      // 1-16 characters of [A-Za-z0-9_.-]: names the key in every MAC
  std::string secret;  // at least 32 characters
};

// Why an opened message was refused.
enum class SealCheck { kOk, kUnsealed, kUnknownKey, kBadMac };
const char* SealCheckName(SealCheck c);  // "ok", "unsealed", "unknown_key", "bad_mac"

class MarketKeys {
 public:
  // Errors: no key, a bad id, a short secret, two keys with one id.
  static Result<MarketKeys> Create(const std::vector<MarketKey>& keys);
  // "id=secret,id=secret" (a command-line flag or an environment variable), first signs.
  static Result<MarketKeys> Parse(std::string_view spec);
  MarketKeys(MarketKeys&&) noexcept;
  MarketKeys& operator=(MarketKeys&&) noexcept;
  ~MarketKeys();

  const std::string& signing_id() const;
  // `json` (an object, "{...}") with `"mac"` added last, under the first key.
  std::string Seal(std::string_view topic, std::string_view json) const;
  // Checks a sealed message for `topic`; on kOk, *body is the object without its mac.
  SealCheck Open(std::string_view topic, std::string_view sealed, std::string* body) const;

 private:
  struct Ring;
  explicit MarketKeys(std::unique_ptr<Ring> ring);
  std::unique_ptr<Ring> ring_;
};

}  // namespace rtb
