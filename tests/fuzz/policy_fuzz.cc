// libFuzzer target: any bytes as a message on the policy topic (core/policy.h). Decoding must
// never crash or recurse without bound, and whatever decodes must encode and decode again to
// the same message.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rtb/core/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto m = rtb::DecodePolicyMessage(bytes, "fuzz");
  if (!m.ok()) return 0;
  const std::string again = rtb::EncodePolicyMessage(*m);
  auto m2 = rtb::DecodePolicyMessage(again, "fuzz");
  if (!m2.ok()) __builtin_trap();                                // what we encode we must read back
  if (rtb::EncodePolicyMessage(*m2) != again) __builtin_trap();  // and to the same message
  if (m2->table.version != m->table.version || m2->alpha_range != m->alpha_range) __builtin_trap();
  return 0;
}
