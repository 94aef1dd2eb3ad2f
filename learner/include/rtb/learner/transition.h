// One learning step's transition (docs/dcmab.md section 5): (s^q, d, a^q_1..a^q_N, r_1..r_N,
// s^q', d', done), normalised, as the learner stores and samples it. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtb/core/status.h"

namespace rtb::learn {

struct Transition {
  std::vector<float> s;   // state s^q = [g, x^q] before the step
  std::vector<float> d;   // d before the step (shares of the previous step)
  std::vector<float> a;   // executed actions, agent-major: a[i*L + j]
  std::vector<float> r;   // reward per agent
  std::vector<float> s2;  // state after the step
  std::vector<float> d2;  // d of the step just played
  uint8_t done = 0;       // 1 at the episode's last step: y = r there
  uint64_t episode = 0;   // provenance (for audits and the crash test)
  uint32_t step = 0;

  bool operator==(const Transition&) const = default;
};

// Binary encoding (little-endian, documented in schemas/replay-rocksdb-v1.md):
// u8 version=1, u8 done, u32 step, u64 episode, then six float arrays each as u32 count +
// count x f32, in the order s, d, a, r, s2, d2, then a u32 FNV-1a checksum of everything before.
std::string EncodeTransition(const Transition& t);
Result<Transition> DecodeTransition(const std::string& bytes);

}  // namespace rtb::learn
