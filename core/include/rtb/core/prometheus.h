// The Prometheus text exposition format (0.0.4) that every process's /metrics page is written
// in: families, label values, and the process_* metrics of the client libraries' process
// collector (read from /proc), so that one dashboard reads rtb serve, rtb budget and rtb learn
// alike. docs/metrics.md lists every metric.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rtb::prom {

// What a /metrics answer's Content-Type says.
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// A label value with \, " and newlines escaped, as the text format wants.
std::string LabelValue(std::string_view v);

// "# HELP name help\n# TYPE name type\n" (type: counter, gauge, histogram).
void Family(std::string* o, std::string_view name, std::string_view type, std::string_view help);

// "name value\n" and "name{labels} value\n": an integer exactly; a double in the shortest form
// that reads back the same ("NaN", "+Inf" where the format wants them).
void Sample(std::string* o, std::string_view name, int64_t value);
void Sample(std::string* o, std::string_view name, double value);
// `labels`: already written, e.g. agent="1",arm="learned" (LabelValue escapes the values).
void Sample(std::string* o, std::string_view name, std::string_view labels, int64_t value);
void Sample(std::string* o, std::string_view name, std::string_view labels, double value);

// A timestamp gauge's value from Unix ms: seconds, or 0 for "never" (a negative ms).
inline double UnixSeconds(int64_t ms) { return ms < 0 ? 0.0 : static_cast<double>(ms) / 1e3; }

// A one-sample family: Family + Sample.
void Gauge(std::string* o, std::string_view name, std::string_view help, int64_t value);
void Gauge(std::string* o, std::string_view name, std::string_view help, double value);
void Counter(std::string* o, std::string_view name, std::string_view help, int64_t value);

// The process collector's families, as the Go and Python clients name them:
// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_start_time_seconds, process_open_fds, process_max_fds, process_threads. A figure
// /proc does not give (another OS) is left out.
void AppendProcessMetrics(std::string* o);

}  // namespace rtb::prom
