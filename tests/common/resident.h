// The resident memory of the test's own process, for tests that bound what a flood of input grows.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace rtb::test {

// Resident memory of this process (bytes; 0 when /proc cannot say).
inline int64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

}  // namespace rtb::test
