// libFuzzer target: any bytes as an event on the events topic (core/events.h), as the learner
// and `rtb replay` decode them. Whatever decodes must encode and decode again to the same event.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rtb/core/events.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto e = rtb::DecodeEvent(bytes);
  if (!e.ok()) return 0;
  const std::string again = rtb::EncodeEvent(*e);
  auto e2 = rtb::DecodeEvent(again);
  if (!e2.ok()) __builtin_trap();  // what we encode we must read back
  if (rtb::EncodeEvent(*e2) != again) __builtin_trap();
  return 0;
}
