#include "rtb/bidder/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace rtb::bidder {

namespace {
constexpr int kGzipWindow = 15 + 16;  // zlib: 2^15 window, gzip wrapper
constexpr size_t kChunk = 16 * 1024;
}  // namespace

Status GzipInflate(std::string_view in, size_t max_out, std::string* out) {
  out->clear();
  z_stream z{};
  if (inflateInit2(&z, kGzipWindow) != Z_OK) return Status::Internal("zlib inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (out->size() >= max_out) {
      inflateEnd(&z);
      return Status::InvalidArgument("gzip body inflates to more than " + std::to_string(max_out) +
                                     " bytes");
    }
    // Grows by at most a chunk past what is there, never past max_out + 1 (one byte over tells
    // a body that inflates to more than max_out from one of exactly max_out).
    const size_t have = out->size();
    const size_t room = std::min(kChunk, max_out + 1 - have);
    out->resize(have + room);
    z.next_out = reinterpret_cast<Bytef*>(out->data() + have);
    z.avail_out = static_cast<uInt>(room);
    rc = inflate(&z, Z_NO_FLUSH);
    out->resize(have + room - z.avail_out);
    if (rc == Z_STREAM_END && z.avail_in > 0) {
      // Another gzip member follows (concatenated members are one body, RFC 1952), or else
      // trailing bytes that are not gzip: refused.
      if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) {
        inflateEnd(&z);
        return Status::InvalidArgument("gzip body has trailing data after its end");
      }
      inflateReset(&z);
      rc = Z_OK;
      continue;
    }
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      inflateEnd(&z);
      return Status::InvalidArgument("gzip body is truncated");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string why = z.msg != nullptr ? z.msg : "corrupt data";
      inflateEnd(&z);
      return Status::InvalidArgument("gzip body cannot be inflated: " + why);
    }
  }
  inflateEnd(&z);
  if (out->size() > max_out) {
    return Status::InvalidArgument("gzip body inflates to more than " + std::to_string(max_out) +
                                   " bytes");
  }
  return Status::Ok();
}

std::string GzipDeflate(std::string_view in, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK) return "";
  std::string out(deflateBound(&z, static_cast<uLong>(in.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);  // the bound leaves room for everything: one call ends the stream
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

bool AcceptsGzip(std::string_view v) {
  // An explicit gzip entry decides; "*" only when gzip is not named (RFC 9110 12.5.3).
  bool star = false;
  size_t pos = 0;
  while (pos <= v.size()) {
    const size_t comma = std::min(v.find(',', pos), v.size());
    std::string_view item = v.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t semi = item.find(';');
    std::string_view coding = item.substr(0, semi);
    std::string_view params = semi == std::string_view::npos ? "" : item.substr(semi + 1);
    auto trim = [](std::string_view s) {
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
      return s;
    };
    coding = trim(coding);
    params = trim(params);
    const bool named =
        coding.size() == 4 && std::equal(coding.begin(), coding.end(), "gzip", [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        });
    if (!named && coding != "*") continue;
    // q=0 (q=0.0, q=0.000) refuses it.
    bool zero = false;
    if (params.size() >= 3 && (params[0] == 'q' || params[0] == 'Q') && params[1] == '=') {
      const std::string_view q = params.substr(2);
      zero = q.find_first_not_of("0.") == std::string_view::npos;
    }
    if (named) return !zero;
    star = !zero;
  }
  return star;
}

}  // namespace rtb::bidder
