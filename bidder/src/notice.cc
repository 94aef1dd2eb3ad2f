#include "rtb/bidder/notice.h"

#include <charconv>
#include <cmath>

#include "rtb/core/events.h"
#include "rtb/core/text.h"

namespace rtb::bidder {

const char* NoticeTypeName(NoticeType t) {
  switch (t) {
    case NoticeType::kWin:
      return "win";
    case NoticeType::kBilling:
      return "billing";
    case NoticeType::kLoss:
      return "loss";
    case NoticeType::kClick:
      return "click";
    case NoticeType::kConversion:
      return "conversion";
  }
  return "unknown";
}

namespace {
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool UrlDecode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexDigit(in[i + 1]), lo = HexDigit(in[i + 2]);
      if (hi < 0 || lo < 0) return false;  // "%-1", "%g0", "%4" are not escapes
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (in[i] == '+') {
      out->push_back(' ');
    } else {
      out->push_back(in[i]);
    }
  }
  return true;
}

namespace {

// A money value in currency units ("1.25") to micros; exact decimal parsing, no float drift.
bool ParseMoney(const std::string& s, Micros* out, std::string* why) {
  if (s.empty()) {
    *why = "missing";
    return false;
  }
  if (s == "AUDIT" || s.find("${") != std::string::npos) {
    *why = "audit";
    return false;
  }
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    i = 1;
  }
  int64_t whole = 0, frac = 0;
  int frac_digits = 0;
  bool digits = false, point = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !point) {
      point = true;
    } else if (c >= '0' && c <= '9') {
      digits = true;
      if (!point) {
        // 9e12 currency units is 9e18 micros, just under INT64_MAX (9.22e18).
        if (whole > 900'000'000'000LL) {
          *why = "out of range";
          return false;
        }
        whole = whole * 10 + (c - '0');
      } else if (frac_digits < 6) {
        frac = frac * 10 + (c - '0');
        ++frac_digits;
      }
    } else {
      *why = "non-numeric";
      return false;
    }
  }
  if (!digits) {
    *why = "non-numeric";
    return false;
  }
  while (frac_digits < 6) frac *= 10, ++frac_digits;
  const int64_t v = whole * 1'000'000 + frac;
  if (neg && v > 0) {
    *why = "negative";
    return false;
  }
  *out = Micros(v);
  return true;
}

}  // namespace

Result<Notice> ParseNotice(std::string_view target) {
  constexpr std::string_view kPrefix = "/notice/";
  if (target.substr(0, kPrefix.size()) != kPrefix)
    return Status::InvalidArgument("not a notice path");
  target.remove_prefix(kPrefix.size());
  const size_t q = target.find('?');
  const std::string_view type = target.substr(0, q);
  Notice n;
  if (type == "win")
    n.type = NoticeType::kWin;
  else if (type == "billing")
    n.type = NoticeType::kBilling;
  else if (type == "loss")
    n.type = NoticeType::kLoss;
  else if (type == "click")
    n.type = NoticeType::kClick;
  else if (type == "conversion")
    n.type = NoticeType::kConversion;
  else
    return Status::InvalidArgument("unknown notice type");
  std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
  std::string price_raw, value_raw, adv_raw, loss_raw, t_raw, bp_raw, ts_raw, c_raw, n_raw;
  bool has_price = false, has_value = false, has_n = false;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? "" : query.substr(amp + 1);
    const size_t eq = kv.find('=');
    const std::string_view k = kv.substr(0, eq);
    std::string v;
    if (eq != std::string_view::npos && !UrlDecode(kv.substr(eq + 1), &v)) {
      return Status::InvalidArgument("malformed percent-encoding in notice");
    }
    if (v.size() > 512) return Status::InvalidArgument("notice parameter too long");
    if (k == "auction")
      n.auction_id = v;
    else if (k == "imp")
      n.imp_id = v;
    else if (k == "bid")
      n.bid_id = v;
    else if (k == "adv")
      adv_raw = v;
    else if (k == "price")
      price_raw = v, has_price = true;
    else if (k == "value")
      value_raw = v, has_value = true;
    else if (k == "loss")
      loss_raw = v;
    else if (k == "t")
      t_raw = v;
    else if (k == "bp")
      bp_raw = v;
    else if (k == "ts")
      ts_raw = v;
    else if (k == "x")
      n.test = v == "1";
    else if (k == "c")
      c_raw = v;
    else if (k == "n")
      n_raw = v, has_n = true;
    else if (k == "ab" && (v == "l" || v == "m"))
      n.arm = v == "l" ? Arm::kLearned : Arm::kManual;
    else if (k == "o")
      n.owner = v;
    else if (k == "d")
      n.deal = v;
    else if (k == "sig")
      n.sig = v;
  }
  if (n.auction_id.empty() || n.auction_id.find("${") != std::string::npos) {
    return Status::InvalidArgument("notice needs auction");
  }
  if (n.imp_id.empty() || n.imp_id.find("${") != std::string::npos) {
    return Status::InvalidArgument("notice needs imp");
  }
  // Ids go into events as JSON strings: the bidder's own ids are at most kMaxNoticeIdBytes of
  // UTF-8 (the request decoder's limit), anything else is not a notice for a bid of ours.
  for (const std::string* id : {&n.auction_id, &n.imp_id, &n.bid_id}) {
    if (id->size() > kMaxNoticeIdBytes) return Status::InvalidArgument("notice id too long");
    if (!IsValidUtf8(*id)) return Status::InvalidArgument("notice id is not UTF-8");
  }
  uint32_t adv = 0;
  auto [p, ec] = std::from_chars(adv_raw.data(), adv_raw.data() + adv_raw.size(), adv);
  if (adv_raw.empty() || ec != std::errc() || p != adv_raw.data() + adv_raw.size()) {
    return Status::InvalidArgument("notice needs a numeric adv");
  }
  n.advertiser = adv;
  Micros m;
  std::string why;
  if (!has_price) {
    n.invalid_price = "missing";
  } else if (ParseMoney(price_raw, &m, &why)) {
    n.price = m;
  } else {
    n.invalid_price = why;
  }
  if (has_value) {
    if (!ParseMoney(value_raw, &m, &why)) {
      return Status::InvalidArgument("notice value (conversion value, currency units): " + why);
    }
    n.value = m;
  }
  if (has_n) {
    if (n.type != NoticeType::kClick && n.type != NoticeType::kConversion) {
      return Status::InvalidArgument(
          "notice n (how many) is for click and conversion notices only");
    }
    double c = 0;
    const auto [np, nec] = std::from_chars(n_raw.data(), n_raw.data() + n_raw.size(), c);
    if (n_raw.empty() || nec != std::errc() || np != n_raw.data() + n_raw.size() ||
        !(c > 0 && c <= kMaxEventCount)) {
      return Status::InvalidArgument(
          "notice n (how many clicks or conversions) must be a number in (0, 1e6]");
    }
    n.count = c;
  }
  if (!t_raw.empty()) {
    int64_t t = -1;
    auto [tp, tec] = std::from_chars(t_raw.data(), t_raw.data() + t_raw.size(), t);
    if (tec != std::errc() || tp != t_raw.data() + t_raw.size() || t < 0) {
      return Status::InvalidArgument("notice t must be a non-negative integer (simulated ms)");
    }
    n.sim_ms = t;
  }
  // The signed terms: integers as the bidder wrote them (a bad one fails the signature).
  int64_t bp = -1, ts = -1;
  auto parse_int = [](const std::string& s, int64_t* out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  if (parse_int(bp_raw, &bp) && bp >= 0) n.bid_price = Micros(bp);
  if (parse_int(ts_raw, &ts) && ts >= 0) n.bid_ms = ts;
  int64_t c = 0;
  if (parse_int(c_raw, &c) && c >= -1 && c <= INT32_MAX) n.cluster = static_cast<int32_t>(c);
  if (!loss_raw.empty()) {
    int code = 0;
    auto [lp, lec] = std::from_chars(loss_raw.data(), loss_raw.data() + loss_raw.size(), code);
    if (lec == std::errc() && lp == loss_raw.data() + loss_raw.size()) n.loss_code = code;
  }
  return n;
}

void UrlEncodeInto(std::string_view in, std::string* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : in) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out->push_back(c);
    } else {
      out->push_back('%');
      out->push_back(kHex[u >> 4]);
      out->push_back(kHex[u & 15]);
    }
  }
}

std::string SignedNoticeQuery(const SignedBid& bid, std::string_view sig) {
  std::string q;
  q.reserve(116 + 3 * (bid.auction.size() + bid.imp.size() + bid.owner.size() + bid.deal.size()) +
            sig.size());
  q += "auction=";
  UrlEncodeInto(bid.auction, &q);
  q += "&imp=";
  UrlEncodeInto(bid.imp, &q);
  q += "&adv=";
  q += std::to_string(bid.advertiser);
  q += "&bp=";
  q += std::to_string(bid.price_cpm.value());
  q += "&ts=";
  q += std::to_string(bid.bid_unix_ms);
  q += bid.test ? "&x=1&c=" : "&x=0&c=";
  q += std::to_string(bid.cluster);
  q += bid.arm == Arm::kLearned ? "&ab=l" : "&ab=m";
  if (!bid.owner.empty()) {
    q += "&o=";
    UrlEncodeInto(bid.owner, &q);
  }
  if (!bid.deal.empty()) {
    q += "&d=";
    UrlEncodeInto(bid.deal, &q);
  }
  q += "&sig=";
  q += sig;
  return q;
}

std::string NoticeUrl(const std::string& base, NoticeType type, std::string_view signed_query) {
  std::string u;
  u.reserve(base.size() + signed_query.size() + 64);
  u += base;
  u += "/notice/";
  u += NoticeTypeName(type);
  u += '?';
  u += signed_query;
  u += "&price=${AUCTION_PRICE}";
  if (type == NoticeType::kLoss) u += "&loss=${AUCTION_LOSS}";
  return u;
}

}  // namespace rtb::bidder
