// Small text helpers shared by every module that writes JSON or reads whole files.
#pragma once

#include <string>
#include <string_view>

#include "rtb/core/status.h"

namespace rtb {

// Appends s as a JSON string literal (quotes included), escaping '"', '\\' and control
// characters. Runs of safe bytes are appended in bulk.
void AppendJsonString(std::string& out, std::string_view s);

// s with <, >, & and " escaped for HTML text and attribute values.
std::string HtmlEscape(std::string_view s);

// The whole content of path; NotFound names the file and what it was expected to hold.
Result<std::string> ReadWholeFile(const std::string& path, const std::string& what);

}  // namespace rtb
