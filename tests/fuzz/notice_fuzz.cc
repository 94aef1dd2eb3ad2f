// libFuzzer target: any bytes as the path and query of a notice URL.
#include <cstddef>
#include <cstdint>
#include <string>

#include "rtb/bidder/notice.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string target = "/notice/";
  target.append(reinterpret_cast<const char*>(data), size);
  auto n = rtb::bidder::ParseNotice(target);
  if (n.ok() && n->price && n->price->value() < 0) __builtin_trap();  // never a negative charge
  std::string out;
  rtb::bidder::UrlDecode(std::string_view(reinterpret_cast<const char*>(data), size), &out);
  return 0;
}
