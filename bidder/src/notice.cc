#include "rtb/bidder/notice.h"

#include <charconv>
#include <cmath>

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

bool UrlDecode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%') {
      if (i + 2 >= in.size()) return false;
      int v = 0;
      auto [p, ec] = std::from_chars(in.data() + i + 1, in.data() + i + 3, v, 16);
      if (ec != std::errc() || p != in.data() + i + 3) return false;
      out->push_back(static_cast<char>(v));
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
  std::string price_raw, value_raw, adv_raw, loss_raw, t_raw;
  bool has_price = false, has_value = false;
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
  }
  if (n.auction_id.empty() || n.auction_id.find("${") != std::string::npos) {
    return Status::InvalidArgument("notice needs auction");
  }
  if (n.imp_id.empty() || n.imp_id.find("${") != std::string::npos) {
    return Status::InvalidArgument("notice needs imp");
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
  if (has_value && ParseMoney(value_raw, &m, &why)) n.value = m;
  if (!t_raw.empty()) {
    int64_t t = -1;
    auto [tp, tec] = std::from_chars(t_raw.data(), t_raw.data() + t_raw.size(), t);
    if (tec != std::errc() || tp != t_raw.data() + t_raw.size() || t < 0) {
      return Status::InvalidArgument("notice t must be a non-negative integer (simulated ms)");
    }
    n.sim_ms = t;
  }
  if (!loss_raw.empty()) {
    int code = 0;
    auto [lp, lec] = std::from_chars(loss_raw.data(), loss_raw.data() + loss_raw.size(), code);
    if (lec == std::errc() && lp == loss_raw.data() + loss_raw.size()) n.loss_code = code;
  }
  return n;
}

std::string NoticeUrl(const std::string& base, NoticeType type, uint32_t advertiser) {
  std::string u = base + "/notice/" + NoticeTypeName(type) +
                  "?auction=${AUCTION_ID}&imp=${AUCTION_IMP_ID}&bid=${AUCTION_BID_ID}&adv=" +
                  std::to_string(advertiser) + "&price=${AUCTION_PRICE}";
  if (type == NoticeType::kLoss) u += "&loss=${AUCTION_LOSS}";
  return u;
}

}  // namespace rtb::bidder
