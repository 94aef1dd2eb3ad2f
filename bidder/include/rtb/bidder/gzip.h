#pragma once
// gzip request and response bodies (HTTP Content-Encoding / Accept-Encoding), through zlib.

#include <cstddef>
#include <string>
#include <string_view>

#include "rtb/core/status.h"

namespace rtb::bidder {

// Inflates a gzip body (one member or several concatenated) into *out, which never grows past
// max_out + 1 bytes: a body that would inflate to more stops there (a decompression bomb costs
// the time and memory of max_out, not of what it claims). Errors (InvalidArgument, naming why):
// not gzip or corrupt; truncated; trailing bytes that are not gzip; inflates to more than
// max_out bytes.
Status GzipInflate(std::string_view in, size_t max_out, std::string* out);

// gzip of `in` at zlib level `level` (1 fastest ... 9 smallest); "" if zlib cannot start.
std::string GzipDeflate(std::string_view in, int level = 1);

// Whether an Accept-Encoding header value admits gzip: a "gzip" entry without q=0, or else a
// "*" without q=0.
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace rtb::bidder
