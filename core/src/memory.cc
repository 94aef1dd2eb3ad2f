#include "rtb/core/memory.h"

#include <malloc.h>

#include <algorithm>
#include <climits>

namespace rtb {

void KeepFreedMemoryForReuse(size_t mmap_threshold, size_t trim_threshold) {
  const auto clamp = [](size_t v) { return static_cast<int>(std::min<size_t>(v, INT_MAX)); };
  ::mallopt(M_MMAP_THRESHOLD, clamp(mmap_threshold));
  ::mallopt(M_TRIM_THRESHOLD, clamp(trim_threshold));
}

}  // namespace rtb
