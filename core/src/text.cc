#include "rtb/core/text.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rtb {

namespace {

// True when one of the 8 bytes of w is a control character (< 0x20), '"' or '\\' (exact for
// "any byte", the classic bit tricks: a byte below n, a zero byte after xor).
inline bool WordNeedsEscape(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  const uint64_t below_space = (w - kOnes * 0x20) & ~w & kHigh;
  const uint64_t q = w ^ (kOnes * '"'), b = w ^ (kOnes * '\\');
  const uint64_t quote = (q - kOnes) & ~q & kHigh, backslash = (b - kOnes) & ~b & kHigh;
  return (below_space | quote | backslash) != 0;
}

inline bool ByteNeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

// The escape of one byte that needs it (see ByteNeedsEscape) into out (up to 6 bytes); returns
// its length.
size_t EscapeByte(unsigned char c, char* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out[0] = '\\';
  switch (c) {
    case '"':
      out[1] = '"';
      return 2;
    case '\\':
      out[1] = '\\';
      return 2;
    case '\n':
      out[1] = 'n';
      return 2;
    case '\r':
      out[1] = 'r';
      return 2;
    case '\t':
      out[1] = 't';
      return 2;
    default:
      out[1] = 'u';
      out[2] = '0';
      out[3] = '0';
      out[4] = kHex[c >> 4];
      out[5] = kHex[c & 15];
      return 6;
  }
}

// Calls emit(data, size) for the escaped form of s (without quotes), in runs of safe bytes.
template <typename Emit>
void EscapeRuns(std::string_view s, Emit&& emit) {
  const char* p = s.data();
  const char* const end = p + s.size();
  const char* run = p;  // start of the bytes not yet emitted
  while (p < end) {
    // Skip 8 safe bytes at a time; most strings (ids, URLs, markup) have nothing to escape.
    if (end - p >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      if (!WordNeedsEscape(w)) {
        p += 8;
        continue;
      }
    }
    const unsigned char c = static_cast<unsigned char>(*p);
    if (!ByteNeedsEscape(c)) {
      ++p;
      continue;
    }
    emit(run, static_cast<size_t>(p - run));
    char esc[6];
    emit(esc, EscapeByte(c, esc));
    run = ++p;
  }
  emit(run, static_cast<size_t>(end - run));
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  EscapeRuns(s, [&out](const char* d, size_t n) { out.append(d, n); });
  out += '"';
}

namespace {
struct Scratch {
  std::string buf;
  bool busy = false;
};
thread_local Scratch tls_scratch;
}  // namespace

JsonWriter::JsonWriter(size_t max_size) {
  Scratch& s = tls_scratch;
  if (!s.busy && max_size <= kMaxScratch) {
    // Grows geometrically to the largest text seen on this thread, then stays: no allocation
    // and no page touched for the first time on later encodes.
    if (s.buf.size() < max_size)
      s.buf.resize(std::max(max_size, std::min(kMaxScratch, 2 * s.buf.size())));
    s.busy = scratch_ = true;
    begin_ = s.buf.data();
  } else {
    own_.resize(max_size);
    begin_ = own_.data();
  }
  p_ = begin_;
}

JsonWriter::~JsonWriter() {
  if (scratch_) tls_scratch.busy = false;
}

void JsonWriter::Str(std::string_view v) {
  *p_++ = '"';
  EscapeRuns(v, [this](const char* d, size_t n) {
    std::memcpy(p_, d, n);
    p_ += n;
  });
  *p_++ = '"';
}

Result<std::string> ReadWholeFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open " + what);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string MicrosDecimal(int64_t micros, MicrosFraction fraction) {
  char buf[kMaxMicrosDecimal];
  return std::string(buf, WriteMicrosDecimal(micros, fraction, buf));
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace rtb
