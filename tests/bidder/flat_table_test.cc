#include "rtb/bidder/flat_table.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace rtb::bidder {
namespace {

struct Val {
  int64_t x = 0;
  int y = 0;
};

// Key128 with a chosen home slot: collisions and wrap-around on demand.
Key128 K(uint64_t a, uint64_t home) { return Key128{a, home}; }

TEST(FlatTable, MatchesAReferenceMapUnderRandomInsertsFindsAndErases) {
  for (uint64_t seed : {1, 2, 3}) {
    std::mt19937_64 rng(seed);
    FlatTable<Val> t;
    std::unordered_map<uint64_t, Val> ref;  // by key.a (unique per key below)
    // Few distinct homes: long probe runs that wrap around the end of the array, where the
    // backward shift on erase is easiest to get wrong.
    const uint64_t homes = seed == 1 ? 7 : 1u << 20;
    for (int op = 0; op < 200000; ++op) {
      const uint64_t a = 1 + rng() % 5000;
      const Key128 k = K(a, (a * 0x9e3779b97f4a7c15ULL % homes) + (seed == 1 ? 13 : 0));
      switch (rng() % 3) {
        case 0: {
          const Val v{static_cast<int64_t>(rng()), op};
          auto [p, inserted] = t.Emplace(k, v);
          ASSERT_EQ(inserted, ref.count(a) == 0) << op;
          if (inserted) ref[a] = v;
          ASSERT_EQ(p->x, ref[a].x);
          break;
        }
        case 1: {
          const Val* p = t.Find(k);
          ASSERT_EQ(p != nullptr, ref.count(a) == 1) << op;
          if (p != nullptr) {
            ASSERT_EQ(p->y, ref[a].y);
          }
          break;
        }
        default:
          ASSERT_EQ(t.Erase(k), ref.erase(a) == 1) << op;
      }
      ASSERT_EQ(t.size(), ref.size());
    }
    // Every surviving key is still found after all the shifting.
    for (const auto& [a, v] : ref) {
      const Val* p = t.Find(K(a, (a * 0x9e3779b97f4a7c15ULL % homes) + (seed == 1 ? 13 : 0)));
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(p->y, v.y);
    }
  }
}

TEST(FlatTable, DoublesAtItsOwnFillLimit) {
  // Shards get limits from 1/2 to 3/4 (StaggeredMaxLoad), so they do not double together.
  EXPECT_DOUBLE_EQ(StaggeredMaxLoad(0, 256), 0.5);
  EXPECT_DOUBLE_EQ(StaggeredMaxLoad(255, 256), 0.75);
  EXPECT_LT(StaggeredMaxLoad(100, 256), StaggeredMaxLoad(101, 256));
  for (const double load : {0.5, 0.6, 0.75}) {
    FlatTable<Val> t(0, load);
    const size_t c = t.capacity();
    const auto limit = static_cast<int>(static_cast<double>(c) * load);
    for (int i = 0; i < limit; ++i)
      ASSERT_TRUE(t.Emplace(HashKey(std::to_string(i)), {i, i}).second);
    EXPECT_EQ(t.capacity(), c) << load;  // full up to the limit: no doubling yet
    ASSERT_TRUE(t.Emplace(HashKey("one more"), {0, 0}).second);
    EXPECT_EQ(t.capacity(), 2 * c + 1) << load;  // twice the groups of 15 slots (one spare)
  }
  // Limits outside 1/2..3/4 are clamped to it.
  FlatTable<Val> dense(0, 0.99);
  const size_t c = dense.capacity();
  for (int i = 0; i <= static_cast<int>(static_cast<double>(c) * 0.75); ++i)
    ASSERT_TRUE(dense.Emplace(HashKey(std::to_string(i)), {i, i}).second);
  EXPECT_EQ(dense.capacity(), 2 * c + 1);
}

TEST(FlatTable, GrowsPastItsInitialSizeAndKeepsEveryEntry) {
  FlatTable<Val> t(100);
  const size_t first = t.capacity();
  for (int i = 0; i < 100000; ++i)
    ASSERT_TRUE(t.Emplace(HashKey(std::to_string(i)), {i, i}).second);
  EXPECT_GT(t.capacity(), first);
  EXPECT_LE(t.size() * 8, t.capacity() * 5);  // at most 62.5% full
  for (int i = 0; i < 100000; ++i) {
    const Val* p = t.Find(HashKey(std::to_string(i)));
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(p->x, i);
  }
  EXPECT_EQ(t.Find(HashKey("100000")), nullptr);
  for (int i = 0; i < 100000; i += 2) ASSERT_TRUE(t.Erase(HashKey(std::to_string(i))));
  EXPECT_FALSE(t.Erase(HashKey("0")));
  EXPECT_EQ(t.size(), 50000u);
  EXPECT_NE(t.Find(HashKey("99999")), nullptr);
  // The peak's memory comes back as its entries go, down to the initial size and no further.
  const size_t peak = t.capacity();
  for (int i = 1; i < 99000; i += 2) ASSERT_TRUE(t.Erase(HashKey(std::to_string(i))));
  EXPECT_EQ(t.size(), 500u);
  EXPECT_LE(t.capacity() * 16, peak);
  EXPECT_LE(t.size() * 8, t.capacity() * 5);
  for (int i = 99001; i < 100000; i += 2) {
    const Val* p = t.Find(HashKey(std::to_string(i)));
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(p->x, i);
  }
  for (int i = 99001; i < 100000; i += 2) ASSERT_TRUE(t.Erase(HashKey(std::to_string(i))));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.capacity(), first);
}

TEST(FlatTable, KeyHashesDifferForDifferentKeys) {
  // Bidder keys (auction/imp/advertiser) that differ in one character, in length only, or
  // not at all: two keys share a Key128 only if they are equal.
  std::unordered_set<uint64_t> as, bs;
  int n = 0;
  for (int auction = 0; auction < 20000; ++auction) {
    for (const char* imp : {"1", "2", "10"}) {
      const std::string key = "80ce30c53c16e6ede735f123ef6e3236" + std::to_string(auction) + "/" +
                              imp + "/" + std::to_string(auction % 7);
      const Key128 k = HashKey(key);
      EXPECT_FALSE(k.a == 0 && k.b == 0);
      as.insert(k.a);
      bs.insert(k.b);
      ++n;
      EXPECT_EQ(HashKey(key), k);
    }
  }
  EXPECT_EQ(as.size(), static_cast<size_t>(n));
  EXPECT_EQ(bs.size(), static_cast<size_t>(n));
  EXPECT_NE(HashKey(""), HashKey(std::string(1, '\0')));
  EXPECT_NE(HashKey(std::string_view("abcdefgh\0", 9)), HashKey("abcdefgh"));
}

}  // namespace
}  // namespace rtb::bidder
