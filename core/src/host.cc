#include "rtb/core/host.h"

#include <unistd.h>

namespace rtb {

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return {};
  return host;
}

}  // namespace rtb
