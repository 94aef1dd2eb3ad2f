#include "rtb/simulator/fulllog.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include "rtb/core/line_reader.h"
#include "rtb/core/report.h"
#include "rtb/core/text.h"

namespace rtb::sim {
namespace {

constexpr const char* kMagic = "#rtb-fulllog v1";
constexpr const char* kColumns =
    "request_id\ttime_ms\tconsumer_id\tfloor_cpm_micros\tadvertiser_id\tbid_micros\tpctr\tpcvr\t"
    "ppb_micros";

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, p);
}

// Writes a probability on the 1e-9 grid as 0.ddddddddd (exact round trip).
void AppendProb(std::string& out, double p) {
  const int64_t nano = std::llround(p * 1e9);
  AppendInt(out, nano / 1000000000);
  char buf[16];
  std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(nano % 1000000000));
  out += buf;
}

}  // namespace

std::string SerializeFullLog(const Day& day) {
  std::string out;
  out.reserve(day.candidates() * 64 + 256);
  out += kMagic;
  out += " steps=" + std::to_string(day.steps) + " step_ms=" + std::to_string(day.step_ms) +
         " advertisers=" + std::to_string(day.num_advertisers) +
         " consumers=" + std::to_string(day.num_consumers) + "\n";
  out += kColumns;
  out += "\n";
  for (size_t r = 0; r < day.requests(); ++r) {
    for (uint32_t c = day.begin[r]; c < day.begin[r + 1]; ++c) {
      AppendInt(out, static_cast<int64_t>(r));
      out += '\t';
      AppendInt(out, day.time_ms[r]);
      out += '\t';
      AppendInt(out, day.consumer[r]);
      out += '\t';
      AppendInt(out, day.floor_cpm[r]);
      out += '\t';
      AppendInt(out, day.adv[c]);
      out += '\t';
      AppendInt(out, day.bid[c]);
      out += '\t';
      AppendProb(out, day.pctr[c]);
      out += '\t';
      AppendProb(out, day.pcvr[c]);
      out += '\t';
      AppendInt(out, day.ppb[c]);
      out += '\n';
    }
  }
  return out;
}

Status WriteFullLog(const Day& day, const std::string& path) {
  return WriteFileAtomic(path, SerializeFullLog(day));
}

namespace {

// The log's lines, read from `in` one at a time.
Result<Day> ParseFullLines(LineReader& in) {
  Day day;
  const std::string& name = in.name();
  int64_t line_no = 0;
  auto err = [&](const std::string& what) {
    return Status::InvalidArgument(name + ":" + std::to_string(line_no) + ": " + what);
  };
  auto next_line = [&](std::string_view* line) {
    if (!in.Next(line)) return false;
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    line_no = in.line_no();
    return true;
  };
  std::string_view line;
  if (!next_line(&line) || line.substr(0, std::strlen(kMagic)) != kMagic) {
    RTB_RETURN_IF_ERROR(in.status());  // cannot open, a directory, a line over the limit
    line_no = 1;
    return err("not a full-information log (first line must start with \"" + std::string(kMagic) +
               "\")");
  }
  {
    // key=value pairs of the header line.
    std::istringstream hs{std::string(line.substr(std::strlen(kMagic)))};
    std::string kv;
    int64_t steps = -1, step_ms = -1, advertisers = -1, consumers = -1;
    while (hs >> kv) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) return err("header field '" + kv + "' is not key=value");
      const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      int64_t x = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec != std::errc() || p != v.data() + v.size() || x <= 0) {
        return err("header field '" + k + "' needs a positive integer");
      }
      if (k == "steps")
        steps = x;
      else if (k == "step_ms")
        step_ms = x;
      else if (k == "advertisers")
        advertisers = x;
      else if (k == "consumers")
        consumers = x;
      else
        return err("unknown header field '" + k + "'");
    }
    if (steps < 0 || step_ms < 0 || advertisers < 0 || consumers < 0) {
      return err("header needs steps, step_ms, advertisers and consumers");
    }
    if (steps > 1000 || advertisers > 100000000 || consumers > 1000000000) {
      return err("header values out of range");
    }
    day.steps = static_cast<int>(steps);
    day.step_ms = step_ms;
    day.num_advertisers = static_cast<uint32_t>(advertisers);
    day.num_consumers = static_cast<uint32_t>(consumers);
  }
  if (!next_line(&line) || line != kColumns) {
    RTB_RETURN_IF_ERROR(in.status());
    return err("second line must be the column header: " + std::string(kColumns));
  }
  day.begin.push_back(0);
  int64_t current = -1;
  std::vector<uint32_t> seen_in_request;
  while (next_line(&line)) {
    if (line.empty()) continue;
    constexpr int kFields = 9;
    std::string_view f[kFields];
    int nf = 0;
    size_t start = 0;
    for (size_t i = 0; i <= line.size(); ++i) {
      if (i == line.size() || line[i] == '\t') {
        if (nf == kFields) return err("more than 9 tab-separated fields");
        f[nf++] = line.substr(start, i - start);
        start = i + 1;
      }
    }
    if (nf != kFields) return err("expected 9 tab-separated fields, got " + std::to_string(nf));
    // Fields: 0 request_id, 1 time_ms, 2 consumer_id, 3 floor_cpm_micros, 4 advertiser_id,
    // 5 bid_micros, 6 pctr, 7 pcvr, 8 ppb_micros.
    int64_t iv[kFields] = {};
    double pv[2] = {};
    static const char* names[kFields] = {
        "request_id", "time_ms", "consumer_id", "floor_cpm_micros", "advertiser_id",
        "bid_micros", "pctr",    "pcvr",        "ppb_micros"};
    for (int i = 0; i < kFields; ++i) {
      const char* b = f[i].data();
      const char* e = b + f[i].size();
      if (i == 6 || i == 7) {
        auto [p, ec] = std::from_chars(b, e, pv[i - 6]);
        if (ec != std::errc() || p != e || f[i].empty()) {
          return err("field " + std::string(names[i]) + " is not a number: '" + std::string(f[i]) +
                     "'");
        }
      } else {
        auto [p, ec] = std::from_chars(b, e, iv[i]);
        if (ec != std::errc() || p != e || f[i].empty()) {
          return err("field " + std::string(names[i]) + " is not an integer: '" +
                     std::string(f[i]) + "'");
        }
      }
    }
    const int64_t rid = iv[0];
    if (rid != current) {
      if (rid != current + 1) {
        return err("request_id " + std::to_string(rid) + " out of order (expected " +
                   std::to_string(current + 1) + "; rows must be grouped by request)");
      }
      if (current >= 0) day.begin.push_back(static_cast<uint32_t>(day.adv.size()));
      if (iv[1] < 0 || iv[1] >= day.steps * day.step_ms) {
        return err("time_ms outside the day [0, steps x step_ms)");
      }
      if (!day.time_ms.empty() && iv[1] < day.time_ms.back()) {
        return err("time_ms goes backwards");
      }
      if (iv[2] < 0 || iv[2] >= day.num_consumers) return err("consumer_id out of range");
      if (iv[3] < 0) return err("floor_cpm_micros must be non-negative");
      day.time_ms.push_back(iv[1]);
      day.consumer.push_back(static_cast<uint32_t>(iv[2]));
      day.floor_cpm.push_back(iv[3]);
      current = rid;
      seen_in_request.clear();
    } else if (iv[1] != day.time_ms.back() || iv[2] != day.consumer.back() ||
               iv[3] != day.floor_cpm.back()) {
      return err("time_ms, consumer_id or floor_cpm_micros differs between rows of one request");
    }
    if (iv[4] < 0 || iv[4] >= day.num_advertisers) return err("advertiser_id out of range");
    for (uint32_t s : seen_in_request) {
      if (s == iv[4]) return err("advertiser " + std::to_string(iv[4]) + " twice in a request");
    }
    seen_in_request.push_back(static_cast<uint32_t>(iv[4]));
    if (iv[5] <= 0) return err("bid_micros must be positive");
    if (!(pv[0] > 0 && pv[0] <= 1)) return err("pctr must be in (0, 1]");
    if (!(pv[1] >= 0 && pv[1] <= 1)) return err("pcvr must be in [0, 1]");
    if (iv[8] < 0) return err("ppb_micros must be non-negative");
    day.adv.push_back(static_cast<uint32_t>(iv[4]));
    day.bid.push_back(iv[5]);
    day.pctr.push_back(pv[0]);
    day.pcvr.push_back(pv[1]);
    day.ppb.push_back(iv[8]);
  }
  RTB_RETURN_IF_ERROR(in.status());
  if (current < 0) {
    return Status::InvalidArgument(name + ": the log has no requests");
  }
  day.begin.push_back(static_cast<uint32_t>(day.adv.size()));
  return day;
}

}  // namespace

Result<Day> ParseFullLog(const std::string& text, const std::string& name) {
  LineReader in(std::string_view(text), name);
  return ParseFullLines(in);
}

Result<Day> ReadFullLog(const std::string& path) {
  LineReader in(path, "log file");
  return ParseFullLines(in);
}

}  // namespace rtb::sim
