#include "rtb/core/progress.h"

#include <unistd.h>

#include <cstdio>

namespace rtb {

Progress::Progress(std::string what, int64_t total, bool enabled)
    : what_(std::move(what)),
      total_(total),
      enabled_(enabled),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (tty_ && enabled_ && !finished_) std::fputc('\n', stderr);
}

void Progress::Update(int64_t done, const std::string& detail) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const auto gap = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  if (now - last_ < gap) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "%s[%s] %lld/%lld (%.0f%%) %.1fs %s%s", tty_ ? "\r" : "", what_.c_str(),
               static_cast<long long>(done), static_cast<long long>(total_),
               total_ > 0 ? 100.0 * done / total_ : 0.0, secs, detail.c_str(),
               tty_ ? "\033[K" : "\n");
  std::fflush(stderr);
}

void Progress::Done(const std::string& detail) {
  if (!enabled_ || finished_) return;
  finished_ = true;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "%s[%s] done in %.2fs %s%s\n", tty_ ? "\r" : "", what_.c_str(), secs,
               detail.c_str(), tty_ ? "\033[K" : "");
}

}  // namespace rtb
