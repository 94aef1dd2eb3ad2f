// The version and commit this build was made from (cmake/version.cmake writes them at every
// build), for `rtb --version` and every process's rtb_build_info metric. In the rtb_build_info
// library, apart from rtb_core: only it recompiles when the commit changes.
#pragma once

#include <string>

namespace rtb {

const char* BuildVersion();  // "0.1.0"
const char* BuildCommit();   // "3138cfbbafdc", "+dirty" when the tree had changes

// rtb_build_info{version="...",commit="..."} 1: a gauge at 1 whose labels say the build, as
// Prometheus's own prometheus_build_info does.
void AppendBuildInfo(std::string* o);

}  // namespace rtb
