#include "rtb/core/build_info.h"

#include "rtb/core/prometheus.h"
#include "rtb_version.h"

namespace rtb {

const char* BuildVersion() { return RTB_VERSION; }
const char* BuildCommit() { return RTB_COMMIT; }

void AppendBuildInfo(std::string* o) {
  prom::Family(o, "rtb_build_info", "gauge",
               "1, labelled with the version and the commit this binary was built from.");
  prom::Sample(o, "rtb_build_info",
               "version=\"" + prom::LabelValue(RTB_VERSION) + "\",commit=\"" +
                   prom::LabelValue(RTB_COMMIT) + "\"",
               int64_t{1});
}

}  // namespace rtb
