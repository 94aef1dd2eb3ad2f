#include "rtb/bidder/openrtb.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include "rtb/core/text.h"

namespace rtb::bidder {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Optional typed getters: a present field of the wrong type is an error only where the caller
// says so; everywhere else it is ignored (tolerant reading).
bool GetString(const object& o, std::string_view key, std::string* out) {
  std::string_view v;
  if (o[key].get_string().get(v) == simdjson::SUCCESS) {
    *out = std::string(v);
    return true;
  }
  return false;
}

bool GetInt(const object& o, std::string_view key, int64_t* out) {
  element e;
  if (o[key].get(e) != simdjson::SUCCESS) return false;
  int64_t i;
  if (e.get_int64().get(i) == simdjson::SUCCESS) {
    *out = i;
    return true;
  }
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d) && d == std::floor(d) &&
      std::abs(d) < 9e15) {
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

bool GetDouble(const object& o, std::string_view key, double* out) {
  double d;
  if (o[key].get_double().get(d) == simdjson::SUCCESS && std::isfinite(d)) {
    *out = d;
    return true;
  }
  int64_t i;
  if (o[key].get_int64().get(i) == simdjson::SUCCESS) {
    *out = static_cast<double>(i);
    return true;
  }
  return false;
}

bool GetObject(const object& o, std::string_view key, object* out) {
  return o[key].get_object().get(*out) == simdjson::SUCCESS;
}

void GetStrings(const object& o, std::string_view key, std::vector<std::string>* out) {
  array a;
  if (o[key].get_array().get(a) != simdjson::SUCCESS) return;
  for (element e : a) {
    std::string_view v;
    if (e.get_string().get(v) == simdjson::SUCCESS) out->emplace_back(v);
  }
}

// Decode's phases, inline: the bid path decodes every request.

// A w x h within the sizes a banner can have.
inline bool GetFormat(const object& o, Format* f) {
  int64_t w = 0, h = 0;
  if (GetInt(o, "w", &w) && GetInt(o, "h", &h) && w > 0 && h > 0 && w < 100000 && h < 100000) {
    *f = {static_cast<int>(w), static_cast<int>(h)};
    return true;
  }
  return false;
}

// banner.w/h, then banner.format[]: the sizes in that order; malformed sizes are skipped.
inline void DecodeBanner(const object& banner, Imp* imp) {
  imp->banner = true;
  Format f;
  if (GetFormat(banner, &f)) imp->formats.push_back(f);
  array fmts;
  if (banner["format"].get_array().get(fmts) == simdjson::SUCCESS) {
    for (element fe : fmts) {
      object fo;
      if (fe.get_object().get(fo)) continue;
      if (GetFormat(fo, &f)) imp->formats.push_back(f);
    }
  }
}

inline Status DecodePmp(const object& pmp, const DecodeLimits& limits, Imp* imp) {
  imp->has_pmp = true;
  int64_t v = 0;
  if (GetInt(pmp, "private_auction", &v)) imp->private_auction = static_cast<int>(v);
  array deals;
  if (pmp["deals"].get_array().get(deals) == simdjson::SUCCESS) {
    for (element de : deals) {
      object d;
      Deal deal;
      if (de.get_object().get(d) || !GetString(d, "id", &deal.id) || deal.id.empty()) continue;
      if (deal.id.size() > limits.max_id_bytes) {
        return Status::InvalidArgument("imp.pmp.deals[].id longer than " +
                                       std::to_string(limits.max_id_bytes) + " bytes");
      }
      double floor = 0;
      if (GetDouble(d, "bidfloor", &floor)) {
        if (floor < 0 || floor > 1e6) {
          return Status::InvalidArgument("imp.pmp.deals[].bidfloor out of range");
        }
        deal.bidfloor = Micros::FromUnits(floor);
      }
      GetString(d, "bidfloorcur", &deal.bidfloorcur);
      GetStrings(d, "wseat", &deal.wseat);
      if (GetInt(d, "at", &v) && v >= 1 && v <= 3) deal.at = static_cast<int>(v);
      imp->deals.push_back(std::move(deal));
    }
  }
  return Status::Ok();
}

inline Status DecodeImp(const object& io, const DecodeLimits& limits, Imp* imp) {
  std::string_view iid;
  if (io["id"].get_string().get(iid) || iid.empty()) {
    return Status::InvalidArgument("imp.id must be a non-empty string");
  }
  if (iid.size() > limits.max_id_bytes) {
    return Status::InvalidArgument("imp.id longer than " + std::to_string(limits.max_id_bytes) +
                                   " bytes");
  }
  imp->id = std::string(iid);
  object banner, tmp;
  if (GetObject(io, "banner", &banner)) DecodeBanner(banner, imp);
  imp->video = GetObject(io, "video", &tmp);
  imp->native = GetObject(io, "native", &tmp);
  imp->audio = GetObject(io, "audio", &tmp);
  double floor = 0;
  if (GetDouble(io, "bidfloor", &floor)) {
    if (floor < 0 || floor > 1e6) return Status::InvalidArgument("imp.bidfloor out of range");
    imp->bidfloor = Micros::FromUnits(floor);
  }
  GetString(io, "bidfloorcur", &imp->bidfloorcur);
  GetString(io, "tagid", &imp->tagid);
  int64_t v = 0;
  if (GetInt(io, "instl", &v)) imp->instl = static_cast<int>(v);
  if (GetInt(io, "secure", &v)) imp->secure = static_cast<int>(v);
  object pmp;
  if (GetObject(io, "pmp", &pmp)) return DecodePmp(pmp, limits, imp);
  return Status::Ok();
}

// request.id and request.imp[] (required: at least one impression).
inline Status DecodeIdAndImps(const object& root, const DecodeLimits& limits, BidRequest* r) {
  std::string_view id;
  if (root["id"].get_string().get(id) || id.empty()) {
    return Status::InvalidArgument("request.id must be a non-empty string");
  }
  if (id.size() > limits.max_id_bytes) {
    return Status::InvalidArgument("request.id longer than " + std::to_string(limits.max_id_bytes) +
                                   " bytes");
  }
  r->id = std::string(id);
  array imps;
  if (root["imp"].get_array().get(imps))
    return Status::InvalidArgument("request.imp must be an array");
  for (element ie : imps) {
    object io;
    if (ie.get_object().get(io)) return Status::InvalidArgument("request.imp[] must hold objects");
    if (r->imps.size() >= limits.max_imps) return Status::InvalidArgument("too many imp objects");
    Imp imp;
    if (Status st = DecodeImp(io, limits, &imp); !st.ok()) return st;
    r->imps.push_back(std::move(imp));
  }
  if (r->imps.empty()) return Status::InvalidArgument("request.imp is empty");
  return Status::Ok();
}

// site or app: its ids, categories and publisher.
inline void DecodePlacement(const object& o, std::string* id, std::string* name,
                            std::string_view name_key, BidRequest* r) {
  GetString(o, "id", id);
  GetString(o, name_key, name);
  GetStrings(o, "cat", &r->cat);
  object pub;
  if (GetObject(o, "publisher", &pub)) GetString(pub, "id", &r->publisher_id);
}

// site, app, device and user.
inline Status DecodeWhereAndWho(const object& root, const DecodeLimits& limits, BidRequest* r) {
  object site, app, device, geo, user, ext;
  if (GetObject(root, "site", &site)) {
    r->has_site = true;
    DecodePlacement(site, &r->site_id, &r->site_domain, "domain", r);
  }
  if (GetObject(root, "app", &app)) {
    r->has_app = true;
    DecodePlacement(app, &r->app_id, &r->app_bundle, "bundle", r);
  }
  if (GetObject(root, "device", &device)) {
    int64_t dt = 0;
    if (GetInt(device, "devicetype", &dt)) r->device_type = static_cast<int>(dt);
    GetString(device, "ua", &r->ua);
    GetString(device, "ip", &r->ip);
    GetString(device, "ifa", &r->device_id);
    if (r->device_id.size() > limits.max_id_bytes) {
      return Status::InvalidArgument("device.ifa longer than " +
                                     std::to_string(limits.max_id_bytes) + " bytes");
    }
    if (GetObject(device, "geo", &geo)) GetString(geo, "country", &r->country);
  }
  if (GetObject(root, "user", &user)) {
    GetString(user, "id", &r->user_id);
    GetString(user, "buyeruid", &r->buyeruid);
    if (r->user_id.size() > limits.max_id_bytes || r->buyeruid.size() > limits.max_id_bytes) {
      return Status::InvalidArgument("user.id / buyeruid longer than " +
                                     std::to_string(limits.max_id_bytes) + " bytes");
    }
    if (!GetString(user, "consent", &r->consent) && GetObject(user, "ext", &ext)) {
      GetString(ext, "consent", &r->consent);
    }
  }
  return Status::Ok();
}

constexpr int64_t kMaxTmaxMs = 86'400'000;

// tmax, at, test, cur, the block lists, regs (gdpr) and source (schain).
inline void DecodeTerms(const object& root, BidRequest* r) {
  int64_t v = 0;
  // A tmax beyond a day (1e20 is a valid JSON number) is no time limit to speak of: a day.
  double tmax = 0;
  if (GetInt(root, "tmax", &v) && v > 0) {
    r->tmax_ms = std::min(v, kMaxTmaxMs);
  } else if (root["tmax"].get_double().get(tmax) == simdjson::SUCCESS && tmax >= 1) {
    r->tmax_ms = kMaxTmaxMs;
  }
  if (GetInt(root, "at", &v)) r->at = static_cast<int>(v);
  if (GetInt(root, "test", &v)) r->test = v == 1;
  GetStrings(root, "cur", &r->cur);
  GetStrings(root, "bcat", &r->bcat);
  GetStrings(root, "badv", &r->badv);
  GetStrings(root, "bapp", &r->bapp);
  if (GetInt(root, "cattax", &v) && v > 0 && v < 1000) r->cattax = static_cast<int>(v);
  object regs, ext, source;
  if (GetObject(root, "regs", &regs)) {
    if (GetInt(regs, "gdpr", &v)) {
      r->gdpr = static_cast<int>(v);
    } else if (GetObject(regs, "ext", &ext) && GetInt(ext, "gdpr", &v)) {
      r->gdpr = static_cast<int>(v);
    }
  }
  if (GetObject(root, "source", &source)) {
    object sc;
    r->has_schain = GetObject(source, "schain", &sc) ||
                    (GetObject(source, "ext", &ext) && GetObject(ext, "schain", &sc));
  }
}

// ext.sim: the simulated clock and, when given, the candidates (schemas/exchange-sim-ext-v1.md).
inline Result<SimHints> DecodeSimHints(const object& sim, const DecodeLimits& limits) {
  SimHints h;
  if (!GetInt(sim, "t", &h.t_ms) || h.t_ms < 0) {
    return Status::InvalidArgument("ext.sim.t must be a non-negative integer (ms)");
  }
  array cands;
  element cand_el;
  h.has_candidates = sim["cand"].get(cand_el) == simdjson::SUCCESS;
  if (!h.has_candidates) return h;
  if (cand_el.get_array().get(cands) != simdjson::SUCCESS) {
    return Status::InvalidArgument("ext.sim.cand must be an array");
  }
  for (element ce : cands) {
    array c;
    int64_t adv = 0;
    double ctr = 0, cvr = 0;
    if (ce.get_array().get(c) != simdjson::SUCCESS || c.size() != 3 ||
        c.at(0).get_int64().get(adv) != simdjson::SUCCESS || adv < 0 || adv > UINT32_MAX ||
        c.at(1).get_double().get(ctr) != simdjson::SUCCESS ||
        c.at(2).get_double().get(cvr) != simdjson::SUCCESS || !(ctr >= 0 && ctr <= 1) ||
        !(cvr >= 0 && cvr <= 1)) {
      return Status::InvalidArgument(
          "ext.sim.cand entries are [advertiser id, pctr in [0,1], pcvr in [0,1]]");
    }
    if (h.candidates.size() >= limits.max_sim_candidates) {
      return Status::InvalidArgument("too many ext.sim.cand entries");
    }
    h.candidates.push_back({static_cast<uint32_t>(adv), ctr, cvr});
  }
  return h;
}

}  // namespace

struct RequestDecoder::Impl {
  DecodeLimits limits;
  simdjson::dom::parser parser;
  bool ready = false;
};

RequestDecoder::RequestDecoder(DecodeLimits limits) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->ready =
      impl_->parser.allocate(limits.max_bytes + 64, limits.max_depth) == simdjson::SUCCESS;
}

RequestDecoder::~RequestDecoder() = default;

Result<BidRequest> RequestDecoder::Decode(std::string_view body) {
  Impl& m = *impl_;
  if (!m.ready) return Status::Internal("JSON parser could not allocate its buffers");
  if (body.size() > m.limits.max_bytes) {
    return Status::InvalidArgument("body of " + std::to_string(body.size()) + " bytes exceeds " +
                                   std::to_string(m.limits.max_bytes));
  }
  element doc;
  // The body is copied into padded storage by the parser (realloc_if_needed), so any input,
  // even one that ends at a page boundary, is safe to read.
  const auto err = m.parser.parse(body.data(), body.size(), /*realloc_if_needed=*/true).get(doc);
  if (err == simdjson::NUMBER_ERROR) {
    // Valid JSON, but a number no 64-bit integer or double holds (1e400, 10^20 written out).
    return Status::InvalidArgument("a number out of range (beyond a 64-bit integer or a double): " +
                                   std::string(simdjson::error_message(err)));
  }
  if (err)
    return Status::InvalidArgument(std::string("not valid JSON: ") + simdjson::error_message(err));
  object root;
  if (doc.get_object().get(root))
    return Status::InvalidArgument("a bid request must be a JSON object");

  BidRequest r;
  if (Status st = DecodeIdAndImps(root, m.limits, &r); !st.ok()) return st;
  if (Status st = DecodeWhereAndWho(root, m.limits, &r); !st.ok()) return st;
  DecodeTerms(root, &r);
  object ext, sim;
  if (m.limits.sim_hints && GetObject(root, "ext", &ext) && GetObject(ext, "sim", &sim)) {
    RTB_ASSIGN_OR_RETURN(r.sim, DecodeSimHints(sim, m.limits));
  }
  return r;
}

namespace {

// Micros as a decimal currency amount with trailing zeros trimmed (one digit kept after the
// point): 26979315 -> "26.979315", 1500000 -> "1.5". At most kMaxMicrosDecimal bytes.
void Price(JsonWriter& w, Micros m) {
  char buf[kMaxMicrosDecimal];
  const char* end = WriteMicrosDecimal(m.value(), MicrosFraction::kTrimmed, buf);
  w.Raw(std::string_view(buf, static_cast<size_t>(end - buf)));
}

void AppendInt(std::string& out, int64_t v) {
  char buf[JsonWriter::kMaxNumber];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// As printf's %.9g.
void AppendDbl9(std::string& out, double v) {
  char buf[JsonWriter::kMaxNumber];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 9).ptr);
}

// ,"key": (no comma before an object's first key).
void Key(std::string& out, bool* first, std::string_view key) {
  out += *first ? "\"" : ",\"";
  *first = false;
  out += key;
  out += "\":";
}

void AppendStringArray(std::string& out, const std::vector<std::string>& v) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(out, v[i]);
  }
  out += ']';
}

void AppendImp(std::string& out, const Imp& imp) {
  out += "{\"id\":";
  AppendJsonString(out, imp.id);
  if (imp.banner) {
    out += ",\"banner\":{";
    bool first = true;
    if (!imp.formats.empty()) {
      Key(out, &first, "w");
      AppendInt(out, imp.formats[0].w);
      Key(out, &first, "h");
      AppendInt(out, imp.formats[0].h);
    }
    if (imp.formats.size() > 1) {
      Key(out, &first, "format");
      out += '[';
      for (size_t f = 1; f < imp.formats.size(); ++f) {
        out += f > 1 ? ",{\"w\":" : "{\"w\":";
        AppendInt(out, imp.formats[f].w);
        out += ",\"h\":";
        AppendInt(out, imp.formats[f].h);
        out += '}';
      }
      out += ']';
    }
    out += '}';
  }
  if (imp.video) out += ",\"video\":{}";
  if (imp.native) out += ",\"native\":{}";
  if (imp.audio) out += ",\"audio\":{}";
  if (imp.bidfloor.value() > 0) {
    char buf[kMaxMicrosDecimal];
    out += ",\"bidfloor\":";
    out.append(buf, WriteMicrosDecimal(imp.bidfloor.value(), MicrosFraction::kSixDigits, buf));
    out += ",\"bidfloorcur\":";
    AppendJsonString(out, imp.bidfloorcur);
  }
  out += '}';
}

// site or app: id, then domain or bundle and cat when set.
void AppendPlacement(std::string& out, std::string_view name, const std::string& id,
                     std::string_view name_key, const std::string& name_value,
                     const std::vector<std::string>& cat) {
  out += ",\"";
  out += name;
  out += "\":{\"id\":";
  AppendJsonString(out, id);
  if (!name_value.empty()) {
    out += ",\"";
    out += name_key;
    out += "\":";
    AppendJsonString(out, name_value);
  }
  if (!cat.empty()) {
    out += ",\"cat\":";
    AppendStringArray(out, cat);
  }
  out += '}';
}

void AppendDeviceAndUser(std::string& out, const BidRequest& r) {
  if (r.device_type > 0 || !r.country.empty()) {
    out += ",\"device\":{";
    bool first = true;
    if (r.device_type > 0) {
      Key(out, &first, "devicetype");
      AppendInt(out, r.device_type);
    }
    if (!r.country.empty()) {
      Key(out, &first, "geo");
      out += "{\"country\":";
      AppendJsonString(out, r.country);
      out += '}';
    }
    out += '}';
  }
  if (!r.user_id.empty() || !r.buyeruid.empty()) {
    out += ",\"user\":{";
    bool first = true;
    if (!r.user_id.empty()) {
      Key(out, &first, "id");
      AppendJsonString(out, r.user_id);
    }
    if (!r.buyeruid.empty()) {
      Key(out, &first, "buyeruid");
      AppendJsonString(out, r.buyeruid);
    }
    out += '}';
  }
}

void AppendSimHints(std::string& out, const SimHints& h) {
  out += ",\"ext\":{\"sim\":{\"t\":";
  AppendInt(out, h.t_ms);
  if (h.has_candidates) {
    out += ",\"cand\":[";
    for (size_t c = 0; c < h.candidates.size(); ++c) {
      out += c > 0 ? ",[" : "[";
      AppendInt(out, h.candidates[c].advertiser);
      out += ',';
      AppendDbl9(out, h.candidates[c].pctr);
      out += ',';
      AppendDbl9(out, h.candidates[c].pcvr);
      out += ']';
    }
    out += ']';
  }
  out += "}}";
}

// The optional string fields of a bid, in output order.
std::array<std::pair<std::string_view, const std::string*>, 9> StringFields(const Bid& bid) {
  return {{{",\"adid\":", &bid.adid},
           {",\"crid\":", &bid.crid},
           {",\"cid\":", &bid.cid},
           {",\"dealid\":", &bid.dealid},
           {",\"bundle\":", &bid.bundle},
           {",\"adm\":", &bid.adm},
           {",\"nurl\":", &bid.nurl},
           {",\"burl\":", &bid.burl},
           {",\"lurl\":", &bid.lurl}}};
}

// Worst-case size of EncodeBidResponse(r).
size_t MaxResponseSize(const BidResponse& r) {
  constexpr size_t kTop = 64, kPerSeat = 32, kPerBid = 200;  // literals, numbers
  size_t n = kTop + JsonWriter::Escaped(r.id) + JsonWriter::Escaped(r.bidid) +
             JsonWriter::Escaped(r.cur) + JsonWriter::kMaxNumber;
  for (const SeatBid& sb : r.seatbid) {
    n += kPerSeat + JsonWriter::Escaped(sb.seat);
    for (const Bid& bid : sb.bids) {
      n += kPerBid + 5 * JsonWriter::kMaxNumber + JsonWriter::Escaped(bid.id) +
           JsonWriter::Escaped(bid.impid);
      for (const auto& f : StringFields(bid)) n += f.first.size() + JsonWriter::Escaped(*f.second);
      for (const std::string& d : bid.adomain) n += 1 + JsonWriter::Escaped(d);
      for (const std::string& c : bid.cat) n += 1 + JsonWriter::Escaped(c);
    }
  }
  return n;
}

}  // namespace

std::string EncodeBidRequest(const BidRequest& r) {
  std::string out;
  out.reserve(256 + 40 * (r.sim ? r.sim->candidates.size() : 0));
  out += "{\"id\":";
  AppendJsonString(out, r.id);
  out += ",\"imp\":[";
  for (size_t i = 0; i < r.imps.size(); ++i) {
    if (i > 0) out += ',';
    AppendImp(out, r.imps[i]);
  }
  out += ']';
  if (r.has_site) AppendPlacement(out, "site", r.site_id, "domain", r.site_domain, r.cat);
  if (r.has_app) AppendPlacement(out, "app", r.app_id, "bundle", r.app_bundle, r.cat);
  AppendDeviceAndUser(out, r);
  if (r.tmax_ms > 0) {
    out += ",\"tmax\":";
    AppendInt(out, r.tmax_ms);
  }
  if (r.at != 0) {
    out += ",\"at\":";
    AppendInt(out, r.at);
  }
  if (r.test) out += ",\"test\":1";
  if (!r.cur.empty()) {
    out += ",\"cur\":";
    AppendStringArray(out, r.cur);
  }
  if (r.sim) AppendSimHints(out, *r.sim);
  out += '}';
  return out;
}

std::string EncodeBidResponse(const BidResponse& r) {
  JsonWriter w(MaxResponseSize(r));
  w.Raw("{\"id\":");
  w.Str(r.id);
  if (!r.bidid.empty()) {
    w.Raw(",\"bidid\":");
    w.Str(r.bidid);
  }
  w.Raw(",\"cur\":");
  w.Str(r.cur);
  if (r.nbr >= 0) {
    w.Raw(",\"nbr\":");
    w.Int(r.nbr);
  }
  w.Raw(",\"seatbid\":[");
  for (size_t s = 0; s < r.seatbid.size(); ++s) {
    if (s) w.Raw(',');
    w.Raw("{\"seat\":");
    w.Str(r.seatbid[s].seat);
    w.Raw(",\"bid\":[");
    for (size_t b = 0; b < r.seatbid[s].bids.size(); ++b) {
      const Bid& bid = r.seatbid[s].bids[b];
      if (b) w.Raw(',');
      w.Raw("{\"id\":");
      w.Str(bid.id);
      w.Raw(",\"impid\":");
      w.Str(bid.impid);
      w.Raw(",\"price\":");
      Price(w, bid.price);
      for (const auto& [key, value] : StringFields(bid)) {
        if (value->empty()) continue;
        w.Raw(key);
        w.Str(*value);
      }
      if (!bid.adomain.empty()) {
        w.Raw(",\"adomain\":[");
        for (size_t a = 0; a < bid.adomain.size(); ++a) {
          if (a) w.Raw(',');
          w.Str(bid.adomain[a]);
        }
        w.Raw(']');
      }
      if (!bid.cat.empty()) {
        w.Raw(",\"cat\":[");
        for (size_t c = 0; c < bid.cat.size(); ++c) {
          if (c) w.Raw(',');
          w.Str(bid.cat[c]);
        }
        w.Raw(']');
      }
      if (bid.cattax > 0) {
        w.Raw(",\"cattax\":");
        w.Int(bid.cattax);
      }
      if (bid.mtype > 0) {
        w.Raw(",\"mtype\":");
        w.Int(bid.mtype);
      }
      if (bid.w > 0 && bid.h > 0) {
        w.Raw(",\"w\":");
        w.Int(bid.w);
        w.Raw(",\"h\":");
        w.Int(bid.h);
      }
      w.Raw('}');
    }
    w.Raw("]}");
  }
  w.Raw("]}");
  return std::move(w).Take();
}

Result<BidResponse> DecodeBidResponse(std::string_view json) {
  simdjson::dom::parser parser;
  element doc;
  if (parser.parse(json.data(), json.size(), true).get(doc)) {
    return Status::InvalidArgument("bid response is not valid JSON");
  }
  object root;
  if (doc.get_object().get(root)) return Status::InvalidArgument("bid response must be an object");
  BidResponse r;
  if (!GetString(root, "id", &r.id)) return Status::InvalidArgument("bid response needs an id");
  GetString(root, "bidid", &r.bidid);
  GetString(root, "cur", &r.cur);
  int64_t nbr = 0;
  if (GetInt(root, "nbr", &nbr)) r.nbr = static_cast<int>(nbr);
  array seats;
  if (root["seatbid"].get_array().get(seats) == simdjson::SUCCESS) {
    for (element se : seats) {
      object so;
      if (se.get_object().get(so)) return Status::InvalidArgument("seatbid[] must hold objects");
      SeatBid sb;
      GetString(so, "seat", &sb.seat);
      array bids;
      if (so["bid"].get_array().get(bids))
        return Status::InvalidArgument("seatbid.bid must be an array");
      for (element be : bids) {
        object bo;
        if (be.get_object().get(bo)) return Status::InvalidArgument("bid[] must hold objects");
        Bid b;
        double price = 0;
        if (!GetString(bo, "id", &b.id) || !GetString(bo, "impid", &b.impid) ||
            !GetDouble(bo, "price", &price)) {
          return Status::InvalidArgument("a bid needs id, impid and price");
        }
        b.price = Micros::FromUnits(price);
        GetString(bo, "adid", &b.adid);
        GetString(bo, "crid", &b.crid);
        GetString(bo, "cid", &b.cid);
        GetString(bo, "dealid", &b.dealid);
        GetString(bo, "bundle", &b.bundle);
        GetStrings(bo, "cat", &b.cat);
        GetString(bo, "adm", &b.adm);
        GetString(bo, "nurl", &b.nurl);
        GetString(bo, "burl", &b.burl);
        GetString(bo, "lurl", &b.lurl);
        GetStrings(bo, "adomain", &b.adomain);
        int64_t w = 0, h = 0;
        if (GetInt(bo, "w", &w)) b.w = static_cast<int>(w);
        if (GetInt(bo, "h", &h)) b.h = static_cast<int>(h);
        if (GetInt(bo, "cattax", &w)) b.cattax = static_cast<int>(w);
        if (GetInt(bo, "mtype", &w)) b.mtype = static_cast<int>(w);
        sb.bids.push_back(std::move(b));
      }
      r.seatbid.push_back(std::move(sb));
    }
  }
  return r;
}

}  // namespace rtb::bidder
