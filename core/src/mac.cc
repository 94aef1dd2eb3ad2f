#include "rtb/core/mac.h"

// SHA-256's low-level interface: its context is a plain struct, so the key's precomputed
// inner and outer states are copied per MAC with no allocation and no provider lookup (the EVP
// interface took 360 ns a notice signature, this one a third of that: bench_bidder).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <cstring>
#include <set>

namespace rtb {

namespace {

constexpr size_t kBlock = 64;  // SHA-256 block
constexpr size_t kMacBytes = 16;
constexpr std::string_view kMacMember = ",\"mac\":\"";

bool GoodId(std::string_view id) {
  if (id.empty() || id.size() > 16) return false;
  for (const char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string HexBytes(const unsigned char* p, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kHex[p[i] >> 4];
    s[2 * i + 1] = kHex[p[i] & 15];
  }
  return s;
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// ---- Hmac ----

struct Hmac::Pads {
  SHA256_CTX inner{};  // after (key ^ ipad)
  SHA256_CTX outer{};  // after (key ^ opad)
};

Hmac::Hmac(std::unique_ptr<Pads> pads) : pads_(std::move(pads)) {}
Hmac::Hmac(Hmac&&) noexcept = default;
Hmac& Hmac::operator=(Hmac&&) noexcept = default;
Hmac::~Hmac() = default;

Result<Hmac> Hmac::Create(std::string_view key) {
  unsigned char k[kBlock] = {};
  if (key.size() > kBlock) {
    unsigned int n = 0;
    if (EVP_Digest(key.data(), key.size(), k, &n, EVP_sha256(), nullptr) != 1) {
      return Status::Internal("SHA-256 unavailable");
    }
  } else {
    std::memcpy(k, key.data(), key.size());
  }
  unsigned char ipad[kBlock], opad[kBlock];
  for (size_t i = 0; i < kBlock; ++i) {
    ipad[i] = k[i] ^ 0x36;
    opad[i] = k[i] ^ 0x5c;
  }
  auto pads = std::make_unique<Pads>();
  const bool ok = SHA256_Init(&pads->inner) == 1 &&
                  SHA256_Update(&pads->inner, ipad, kBlock) == 1 &&
                  SHA256_Init(&pads->outer) == 1 && SHA256_Update(&pads->outer, opad, kBlock) == 1;
  OPENSSL_cleanse(k, sizeof k);
  OPENSSL_cleanse(ipad, sizeof ipad);
  OPENSSL_cleanse(opad, sizeof opad);
  if (!ok) return Status::Internal("cannot set up HMAC-SHA-256");
  return Hmac(std::move(pads));
}

Hmac::Digest Hmac::Mac(std::string_view message) const {
  unsigned char h[kDigestBytes];
  SHA256_CTX c = pads_->inner;
  SHA256_Update(&c, message.data(), message.size());
  SHA256_Final(h, &c);
  c = pads_->outer;
  SHA256_Update(&c, h, sizeof h);
  Digest out;
  SHA256_Final(out.data(), &c);
  return out;
}

std::string Hmac::HexMac(std::string_view message, size_t bytes) const {
  const Digest d = Mac(message);
  return HexBytes(d.data(), std::min(bytes, d.size()));
}

// ---- MarketKeys ----

const char* SealCheckName(SealCheck c) {
  switch (c) {
    case SealCheck::kOk:
      return "ok";
    case SealCheck::kUnsealed:
      return "unsealed";
    case SealCheck::kUnknownKey:
      return "unknown_key";
    case SealCheck::kBadMac:
      return "bad_mac";
  }
  return "unknown";
}

struct MarketKeys::Ring {
  std::vector<std::pair<std::string, Hmac>> keys;  // the first signs

  // The MAC input: the topic and the object, each length-prefixed.
  static std::string Input(std::string_view topic, std::string_view body) {
    std::string in;
    in.reserve(16 + topic.size() + body.size());
    PutU64(&in, topic.size());
    in.append(topic);
    PutU64(&in, body.size());
    in.append(body);
    return in;
  }
};

MarketKeys::MarketKeys(std::unique_ptr<Ring> ring) : ring_(std::move(ring)) {}
MarketKeys::MarketKeys(MarketKeys&&) noexcept = default;
MarketKeys& MarketKeys::operator=(MarketKeys&&) noexcept = default;
MarketKeys::~MarketKeys() = default;

Result<MarketKeys> MarketKeys::Create(const std::vector<MarketKey>& keys) {
  if (keys.empty()) return Status::InvalidArgument("market_keys: no key");
  auto ring = std::make_unique<Ring>();
  std::set<std::string> ids;
  for (const MarketKey& k : keys) {
    if (!GoodId(k.id)) {
      return Status::InvalidArgument("market_keys: key id '" + k.id +
                                     "' must be 1-16 characters of A-Z a-z 0-9 _ . -");
    }
    if (k.secret.size() < 32) {
      return Status::InvalidArgument("market_keys: the secret of key '" + k.id +
                                     "' must be at least 32 characters");
    }
    if (!ids.insert(k.id).second) {
      return Status::InvalidArgument("market_keys: key id '" + k.id + "' given twice");
    }
    RTB_ASSIGN_OR_RETURN(Hmac h, Hmac::Create(k.secret));
    ring->keys.emplace_back(k.id, std::move(h));
  }
  return MarketKeys(std::move(ring));
}

Result<MarketKeys> MarketKeys::Parse(std::string_view spec) {
  std::vector<MarketKey> keys;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      // (The item is not printed: it may be a secret.)
      return Status::InvalidArgument("market keys: item " + std::to_string(keys.size() + 1) +
                                     " is not id=secret");
    }
    keys.push_back({std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))});
  }
  return Create(keys);
}

const std::string& MarketKeys::signing_id() const { return ring_->keys.front().first; }

std::string MarketKeys::Seal(std::string_view topic, std::string_view json) const {
  const auto& [id, hmac] = ring_->keys.front();
  const std::string mac = hmac.HexMac(Ring::Input(topic, json), kMacBytes);
  std::string out(json);
  if (!out.empty() && out.back() == '}') out.pop_back();
  // `{}` seals as `{"mac":...}`; any other object gets `,"mac":...` after its last member.
  const bool empty_object = out.size() == 1 && out[0] == '{';
  out += empty_object ? kMacMember.substr(1) : kMacMember;
  out += id;
  out += ':';
  out += mac;
  out += "\"}";
  return out;
}

SealCheck MarketKeys::Open(std::string_view topic, std::string_view sealed,
                           std::string* body) const {
  // `...,"mac":"<id>:<hex>"}`: the member is the object's last.
  if (sealed.size() < 2 || sealed.back() != '}' || sealed[sealed.size() - 2] != '"') {
    return SealCheck::kUnsealed;
  }
  size_t at = sealed.rfind(kMacMember);
  size_t value_at = 0;
  std::string unsealed;
  if (at != std::string_view::npos) {
    value_at = at + kMacMember.size();
    unsealed.assign(sealed.substr(0, at));
    unsealed += '}';
  } else if (sealed.rfind("{\"mac\":\"", 0) == 0) {  // the empty object
    value_at = 8;
    unsealed = "{}";
  } else {
    return SealCheck::kUnsealed;
  }
  const std::string_view value = sealed.substr(value_at, sealed.size() - 2 - value_at);
  const size_t colon = value.find(':');
  if (colon == std::string_view::npos || value.size() - colon - 1 != 2 * kMacBytes) {
    return SealCheck::kUnsealed;
  }
  const std::string_view id = value.substr(0, colon), mac = value.substr(colon + 1);
  for (const auto& [kid, hmac] : ring_->keys) {
    if (kid != id) continue;
    if (!ConstantTimeEqual(hmac.HexMac(Ring::Input(topic, unsealed), kMacBytes), mac)) {
      return SealCheck::kBadMac;
    }
    if (body != nullptr) *body = std::move(unsealed);
    return SealCheck::kOk;
  }
  return SealCheck::kUnknownKey;
}

}  // namespace rtb
