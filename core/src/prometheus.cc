#include "rtb/core/prometheus.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace rtb::prom {

std::string LabelValue(std::string_view v) {
  std::string o;
  o.reserve(v.size());
  for (const char c : v) {
    if (c == '\\' || c == '"') {
      o += '\\';
      o += c;
    } else if (c == '\n') {
      o += "\\n";
    } else {
      o += c;
    }
  }
  return o;
}

void Family(std::string* o, std::string_view name, std::string_view type, std::string_view help) {
  *o += "# HELP ";
  *o += name;
  *o += ' ';
  for (const char c : help) {  // HELP escapes \ and newlines (not quotes)
    if (c == '\\') {
      *o += "\\\\";
    } else if (c == '\n') {
      *o += "\\n";
    } else {
      *o += c;
    }
  }
  *o += "\n# TYPE ";
  *o += name;
  *o += ' ';
  *o += type;
  *o += '\n';
}

namespace {

void Head(std::string* o, std::string_view name, std::string_view labels) {
  *o += name;
  if (!labels.empty()) {
    *o += '{';
    *o += labels;
    *o += '}';
  }
  *o += ' ';
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, r.ptr);
}

}  // namespace

void Sample(std::string* o, std::string_view name, std::string_view labels, int64_t value) {
  Head(o, name, labels);
  *o += std::to_string(value);
  *o += '\n';
}
void Sample(std::string* o, std::string_view name, std::string_view labels, double value) {
  Head(o, name, labels);
  *o += Number(value);
  *o += '\n';
}
void Sample(std::string* o, std::string_view name, int64_t value) { Sample(o, name, {}, value); }
void Sample(std::string* o, std::string_view name, double value) { Sample(o, name, {}, value); }

void Gauge(std::string* o, std::string_view name, std::string_view help, int64_t value) {
  Family(o, name, "gauge", help);
  Sample(o, name, value);
}
void Gauge(std::string* o, std::string_view name, std::string_view help, double value) {
  Family(o, name, "gauge", help);
  Sample(o, name, value);
}
void Counter(std::string* o, std::string_view name, std::string_view help, int64_t value) {
  Family(o, name, "counter", help);
  Sample(o, name, value);
}

namespace {

// /proc/self/stat's fields after the command name (which may hold spaces and parentheses):
// fields[0] is field 3 (state) of proc(5).
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return {};
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> f;
  for (std::string w; rest >> w;) f.push_back(w);
  return f;
}

// The system's boot time (seconds since the epoch): /proc/stat's btime; -1 if unknown.
int64_t BootTime() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      int64_t t = -1;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

// The soft limit on open files from /proc/self/limits; -1 if unknown or unlimited.
int64_t MaxFds() {
  std::ifstream in("/proc/self/limits");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream w(line.substr(14));
    std::string soft;
    w >> soft;
    int64_t n = -1;
    std::from_chars(soft.data(), soft.data() + soft.size(), n);
    return n;
  }
  return -1;
}

int64_t ToInt(const std::string& s) {
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

void AppendProcessMetrics(std::string* o) {
  const std::vector<std::string> f = StatFields();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const int64_t page = sysconf(_SC_PAGESIZE);
  // proc(5): utime 14, stime 15, num_threads 20, starttime 22, vsize 23, rss 24 (fields[n-3]).
  if (f.size() >= 22 && ticks > 0) {
    const double cpu = static_cast<double>(ToInt(f[11]) + ToInt(f[12])) / ticks;
    Family(o, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent.");
    Sample(o, "process_cpu_seconds_total", cpu);
    Gauge(o, "process_resident_memory_bytes", "Resident memory size in bytes.",
          ToInt(f[21]) * page);
    Gauge(o, "process_virtual_memory_bytes", "Virtual memory size in bytes.", ToInt(f[20]));
    Gauge(o, "process_threads", "Number of OS threads in the process.", ToInt(f[17]));
    if (const int64_t boot = BootTime(); boot >= 0) {
      Gauge(o, "process_start_time_seconds", "Start time of the process since the Unix epoch.",
            static_cast<double>(boot) + static_cast<double>(ToInt(f[19])) / ticks);
    }
  }
  std::error_code ec;
  int64_t fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) {
    Gauge(o, "process_open_fds", "Number of open file descriptors.",
          fds - 1);  // less the listing's
  }
  if (const int64_t max = MaxFds(); max >= 0) {
    Gauge(o, "process_max_fds", "Maximum number of open file descriptors.", max);
  }
}

}  // namespace rtb::prom
