// Small text helpers shared by every module that writes JSON or reads whole files.
#pragma once

#include <charconv>
#include <string>
#include <string_view>

#include "rtb/core/status.h"

namespace rtb {

// Appends s as a JSON string literal (quotes included), escaping '"', '\\' and control
// characters. Runs of safe bytes are appended in bulk.
void AppendJsonString(std::string& out, std::string_view s);

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
