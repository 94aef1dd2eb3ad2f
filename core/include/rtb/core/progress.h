// A progress line on stderr for long runs: rewritten in place on a terminal, one line every
// few seconds otherwise (CI logs). Never written into report files.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rtb {

class Progress {
 public:
  Progress(std::string what, int64_t total, bool enabled = true);
  ~Progress();
  void Update(int64_t done, const std::string& detail = "");
  void Done(const std::string& detail = "");

 private:
  std::string what_;
  int64_t total_;
  bool enabled_;
  bool tty_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace rtb
