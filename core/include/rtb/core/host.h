// This machine's identity for the operator and for names that must differ between machines:
// the coordinator's host in its records, a bidder's default lease name.
#pragma once

#include <string>

namespace rtb {

// This machine's host name (gethostname); "" when it is unknown.
std::string HostName();

}  // namespace rtb
