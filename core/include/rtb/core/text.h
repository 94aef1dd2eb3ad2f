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

// Writes a JSON text into one allocation: the caller sizes it for the worst case (Escaped() per
// string, kMaxNumber per number, the literals' lengths), then every write is a plain copy with
// no capacity check. Used by the encoders on the bid path (events, bid responses), where
// string appends one field at a time cost more than the rest of the encoding.
class JsonWriter {
 public:
  static constexpr size_t kMaxNumber = 32;  // an int64 or a %.9g double
  // Worst-case size of s written by Str(): every byte escaped as \u00XX, plus the quotes.
  static constexpr size_t Escaped(std::string_view s) { return 6 * s.size() + 2; }

  explicit JsonWriter(size_t max_size) : out_(max_size, '\0'), p_(out_.data()) {}
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
    p_ = std::to_chars(p_, p_ + kMaxNumber, v, std::chars_format::general, 9).ptr;
  }
  void Bool(bool v) { Raw(v ? std::string_view("true") : std::string_view("false")); }
  std::string Take() && {
    out_.resize(static_cast<size_t>(p_ - out_.data()));
    return std::move(out_);
  }

 private:
  std::string out_;
  char* p_;
};

// s with <, >, & and " escaped for HTML text and attribute values.
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
