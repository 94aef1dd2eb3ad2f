#include "rtb/learner/transition.h"

#include <cstring>

namespace rtb::learn {
namespace {

uint32_t Fnv1a(const char* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(p[i])) * 16777619u;
  return h;
}

template <typename T>
void Put(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

void PutArray(std::string& out, const std::vector<float>& v) {
  Put<uint32_t>(out, static_cast<uint32_t>(v.size()));
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

struct Reader {
  const std::string& s;
  size_t pos = 0;
  bool ok = true;
  template <typename T>
  T Get() {
    T v{};
    if (pos + sizeof(T) > s.size()) {
      ok = false;
      return v;
    }
    std::memcpy(&v, s.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::vector<float> Array() {
    const uint32_t n = Get<uint32_t>();
    if (!ok || n > (s.size() - pos) / sizeof(float)) {
      ok = false;
      return {};
    }
    std::vector<float> v(n);
    std::memcpy(v.data(), s.data() + pos, n * sizeof(float));
    pos += n * sizeof(float);
    return v;
  }
};

}  // namespace

std::string EncodeTransition(const Transition& t) {
  std::string out;
  out.reserve(32 +
              4 * (t.s.size() + t.d.size() + t.a.size() + t.r.size() + t.s2.size() + t.d2.size()));
  Put<uint8_t>(out, 1);
  Put<uint8_t>(out, t.done);
  Put<uint32_t>(out, t.step);
  Put<uint64_t>(out, t.episode);
  for (const auto* v : {&t.s, &t.d, &t.a, &t.r, &t.s2, &t.d2}) PutArray(out, *v);
  Put<uint32_t>(out, Fnv1a(out.data(), out.size()));
  return out;
}

Result<Transition> DecodeTransition(const std::string& bytes) {
  if (bytes.size() < 4) return Status::Corruption("transition record too short");
  const uint32_t want = Fnv1a(bytes.data(), bytes.size() - 4);
  uint32_t got;
  std::memcpy(&got, bytes.data() + bytes.size() - 4, 4);
  if (want != got) return Status::Corruption("transition record checksum mismatch");
  Reader r{bytes};
  Transition t;
  if (r.Get<uint8_t>() != 1) return Status::Corruption("unknown transition record version");
  t.done = r.Get<uint8_t>();
  t.step = r.Get<uint32_t>();
  t.episode = r.Get<uint64_t>();
  t.s = r.Array();
  t.d = r.Array();
  t.a = r.Array();
  t.r = r.Array();
  t.s2 = r.Array();
  t.d2 = r.Array();
  if (!r.ok || r.pos + 4 != bytes.size()) return Status::Corruption("malformed transition record");
  return t;
}

}  // namespace rtb::learn
