// Small text helpers shared by every module that writes JSON or reads whole files.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "rtb/core/status.h"

namespace rtb {

// Appends s as a JSON string literal (quotes included), escaping '"', '\\' and control
// characters. Runs of safe bytes are appended in bulk.
void AppendJsonString(std::string& out, std::string_view s);

// Writes a JSON text with no capacity check per write: the caller sizes it for the worst case
// (Escaped() per string, kMaxNumber per number, the literals' lengths). The text is written into
// a per-thread scratch buffer that is reused from one encode to the next, and Take() copies out
// exactly the bytes written: one allocation of the real size per encode, no zero-filled
// worst-case buffer (an allocation that size, freed at once, made glibc grow and trim its heap
// and fault pages in on the bid path). Used by the encoders on the bid path (events, bid
// responses), where string appends one field at a time cost more than the rest of the
// encoding. A second writer alive on the same thread, or one larger than kMaxScratch, writes
// into a buffer of its own instead.
class JsonWriter {
 public:
  static constexpr size_t kMaxNumber = 32;                // an int64 or a %.9g double
  static constexpr size_t kMaxScratch = size_t{4} << 20;  // larger texts are not kept per thread
  // Worst-case size of s written by Str(): every byte escaped as \u00XX, plus the quotes.
  static constexpr size_t Escaped(std::string_view s) { return 6 * s.size() + 2; }

  explicit JsonWriter(size_t max_size);
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  // Literal JSON (keys, punctuation).
  void Raw(std::string_view v) {
    std::memcpy(p_, v.data(), v.size());
    p_ += v.size();
  }
  void Raw(char c) { *p_++ = c; }
  // A JSON string literal, quotes included, escaped.
  void Str(std::string_view v);
  void Int(int64_t v) { p_ = std::to_chars(p_, p_ + kMaxNumber, v).ptr; }
  // As printf's %.9g: std::to_chars with a precision is specified that way.
  void Dbl9(double v) {
    if (v == 0) v = 0;  // -0.0 as 0: JSON readers take "-0" as the integer 0
    p_ = std::to_chars(p_, p_ + kMaxNumber, v, std::chars_format::general, 9).ptr;
  }
  void Bool(bool v) { Raw(v ? std::string_view("true") : std::string_view("false")); }
  // The text written so far.
  std::string Take() && { return std::string(begin_, p_); }

 private:
  bool scratch_ = false;  // writing into this thread's scratch buffer (released by ~JsonWriter)
  std::string own_;       // the buffer otherwise
  char* begin_;
  char* p_;
};

// How a money amount's fraction of a currency unit is written.
enum class MicrosFraction {
  kSixDigits,  // always six digits: 1500000 -> "1.500000" (the exchange's prices and floors)
  kTrimmed,    // trailing zeros dropped, one digit kept: 1500000 -> "1.5" (bid responses)
};

// The longest text WriteMicrosDecimal writes: "-9223372036854.775808".
inline constexpr size_t kMaxMicrosDecimal = 21;

// Writes micros as an exact decimal number of currency units at out (a '-' first when
// negative: -500000 -> "-0.5" or "-0.500000"; 0 -> "0.0" or "0.000000") and returns the end of
// the text. Writes at most kMaxMicrosDecimal bytes and allocates nothing: bid responses write
// their prices with it. Every int64 value, INT64_MIN included.
inline char* WriteMicrosDecimal(int64_t micros, MicrosFraction fraction, char* out) {
  uint64_t v = static_cast<uint64_t>(micros);
  if (micros < 0) {
    *out++ = '-';
    v = 0 - v;  // in unsigned arithmetic: exact for INT64_MIN too
  }
  out = std::to_chars(out, out + 20, v / 1000000).ptr;
  *out++ = '.';
  uint64_t frac = v % 1000000;
  char digits[6];
  for (int i = 5; i >= 0; --i, frac /= 10) digits[i] = static_cast<char>('0' + frac % 10);
  size_t keep = 6;
  if (fraction == MicrosFraction::kTrimmed) {
    while (keep > 1 && digits[keep - 1] == '0') --keep;
  }
  std::memcpy(out, digits, keep);
  return out + keep;
}

// WriteMicrosDecimal's text as a string.
std::string MicrosDecimal(int64_t micros, MicrosFraction fraction);

// s with <, >, & and " escaped for HTML text and attribute values.
// Whether s is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view s);

std::string HtmlEscape(std::string_view s);

// Parses all of s as a number (integer or floating point); false on any leftover or error.
template <typename T>
bool ParseWhole(std::string_view s, T* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// Line-by-line reading of a text: sets *line to the next line (without '\n') and advances
// *pos past it; false at the end. A last line without '\n' is returned too.
inline bool NextLine(std::string_view text, size_t* pos, std::string_view* line) {
  if (*pos >= text.size()) return false;
  size_t end = text.find('\n', *pos);
  if (end == std::string_view::npos) end = text.size();
  *line = text.substr(*pos, end - *pos);
  *pos = end + 1;
  return true;
}

// The whole content of path; NotFound names the file and what it was expected to hold.
Result<std::string> ReadWholeFile(const std::string& path, const std::string& what);

}  // namespace rtb
