#include "rtb/bidder/flat_table.h"

#include <cstring>
#include <functional>

namespace rtb::bidder {
namespace {

// splitmix64's finalizer: every input bit affects every output bit.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Eight bytes at a time, each word mixed into the state; the tail's length is mixed in too.
uint64_t WordHash(std::string_view s) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = Mix(h ^ w);
  }
  uint64_t w = 0;
  std::memcpy(&w, s.data() + i, s.size() - i);
  return Mix(h ^ w ^ (static_cast<uint64_t>(s.size() - i) << 56));
}

}  // namespace

Key128 HashKey(std::string_view key) {
  Key128 k{std::hash<std::string_view>{}(key), WordHash(key)};
  if (k.a == 0 && k.b == 0) k.b = 1;
  return k;
}

}  // namespace rtb::bidder
