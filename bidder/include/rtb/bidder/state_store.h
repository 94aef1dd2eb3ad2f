// Durable bidder state on RocksDB: spend per advertiser and day, and notice de-duplication.
// A notice is applied once per (type, auction id, imp id, advertiser), also across a restart: the dedupe
// key and the spend it books are written in one WriteBatch (all or nothing).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtb/core/status.h"
#include "rtb/core/types.h"

namespace rtb::bidder {

class StateStore {
 public:
  static Result<std::unique_ptr<StateStore>> Open(const std::string& path);
  ~StateStore();
  // Marks (key) seen and adds `spend` to advertiser `adv` on `day` in one batch. Returns false
  // (and changes nothing) if the key was seen before.
  Result<bool> ApplyOnce(const std::string& key, uint32_t adv, const std::string& day,
                         Micros spend);
  Micros Spent(uint32_t adv, const std::string& day) const;

 private:
  struct Impl;
  explicit StateStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtb::bidder
