#include "kernels.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rtb::learn {

void PinNumericKernels(char** argv) {
#if defined(__x86_64__)
  if (std::getenv("RTB_NATIVE_KERNELS") != nullptr) return;
  const char* blas = std::getenv("OPENBLAS_CORETYPE");
  const char* aten = std::getenv("ATEN_CPU_CAPABILITY");
  if (blas != nullptr && aten != nullptr && std::strcmp(blas, "Haswell") == 0 &&
      std::strcmp(aten, "avx2") == 0) {
    return;  // pinned (by an earlier pass through here, or by the caller)
  }
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  setenv("ATEN_CPU_CAPABILITY", "avx2", 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr,
               "rtb-learner: warning: cannot pin the numeric kernels (%s); using the CPU's\n",
               std::strerror(errno));
#else
  (void)argv;
#endif
}

std::string NumericKernels() {
  using CoreName = char* (*)();
  const auto core = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* cap = std::getenv("ATEN_CPU_CAPABILITY");
  return std::string("OpenBLAS ") + (core != nullptr ? core() : "?") + ", ATen " +
         (cap != nullptr ? cap : "cpu's");
}

}  // namespace rtb::learn
