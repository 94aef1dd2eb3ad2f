// loadgen: an HTTP/1.1 keep-alive load generator for the bidder benchmark.
//
//   loadgen --port P --path /openrtb2/bid --body file.json --connections 8 --seconds 10
//           [--rate R]   (total requests/s, paced per connection; 0 = as fast as possible)
//           [--unique-ids 1]  (every request gets its own auction id, as exchanges send them)
//           [--gzip 1]  (bodies sent gzipped, Content-Encoding: gzip, compressed per request at
//                        zlib level 1 after the id is written, as an exchange compresses each)
//
// Prints one line: requests, seconds, requests/s, status counts, latency p50/p90/p99/max (ms).
// Latency is measured from the scheduled send time when paced (no coordinated omission).
// One thread drives every connection from an epoll loop (as wrk2 does): a thread per
// connection would add its own wake-ups to the latency it measures on a 2-core machine.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Takes one complete HTTP response off the front of buf; returns its status, 0 if buf does not
// hold a whole response yet.
int TakeResponse(std::string& buf) {
  const size_t hdr_end = buf.find("\r\n\r\n");
  if (hdr_end == std::string::npos) return 0;
  size_t len = 0;
  const size_t cl = buf.find("Content-Length: ");
  const size_t cl2 = buf.find("content-length: ");
  const size_t at = cl != std::string::npos && cl < hdr_end
                        ? cl
                        : (cl2 != std::string::npos && cl2 < hdr_end ? cl2 : std::string::npos);
  if (at != std::string::npos) len = std::strtoul(buf.c_str() + at + 16, nullptr, 10);
  if (buf.size() < hdr_end + 4 + len) return 0;
  const int status = std::atoi(buf.c_str() + 9);
  buf.erase(0, hdr_end + 4 + len);
  return status;
}

struct Conn {
  int fd = -1;
  std::string in;
  bool busy = false;       // a request is out, its response not read yet
  Clock::time_point t0;    // when the outstanding request was due (paced) or sent
  Clock::time_point next;  // when the next request is due (paced)
};

struct Options {
  int port = 8080, conns = 8;
  double seconds = 10, rate = 0;  // rate: total requests/s, 0 = as fast as possible
  bool unique_ids = false;
  bool gzip = false;
  std::string path = "/openrtb2/bid", body_file;
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--port")
      o.port = std::stoi(v);
    else if (k == "--path")
      o.path = v;
    else if (k == "--body")
      o.body_file = v;
    else if (k == "--connections")
      o.conns = std::stoi(v);
    else if (k == "--seconds")
      o.seconds = std::stod(v);
    else if (k == "--rate")
      o.rate = std::stod(v);
    else if (k == "--unique-ids")
      o.unique_ids = v == "1";
    else if (k == "--gzip")
      o.gzip = v == "1";
  }
  return o;
}

std::string ReadBody(const std::string& file) {
  if (file.empty()) return "";
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// --unique-ids: the last 16 characters of the body's first "id" value (the request's id) are
// rewritten per request as 8 hex digits of the start time in seconds and 8 of a counter, so
// no two requests of this run or of earlier runs share an auction id (bench/run_load_bench.sh's
// wrk script writes ids the same way). Their offset in the body; npos when the body has no
// such id.
size_t UniqueIdOffset(const std::string& body) {
  const size_t key = body.find("\"id\"");
  const size_t open = key == std::string::npos ? key : body.find('"', body.find(':', key));
  const size_t close = open == std::string::npos ? open : body.find('"', open + 1);
  if (close == std::string::npos || close - open - 1 < 16) return std::string::npos;
  return close - 16;
}

// gzip of `in` at zlib level 1.
std::string Gzip(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The connections, their schedule and what came back.
class Load {
 public:
  // id_at: UniqueIdOffset's, or npos to send the body unchanged.
  Load(const Options& o, const std::string& body, size_t id_at)
      : o_(o),
        body_(body),
        head_("POST " + o.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
              "Content-Type: application/json\r\nx-openrtb-version: 2.6\r\n" +
              "Content-Encoding: gzip\r\nContent-Length: "),
        id_in_body_(id_at),
        request_("POST " + o.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                 "Content-Type: application/json\r\nx-openrtb-version: 2.6\r\n" +
                 "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body),
        id_in_request_(id_at == std::string::npos ? id_at : request_.size() - body.size() + id_at),
        interval_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(o.rate > 0 ? o.conns / o.rate : 0))),
        ep_(::epoll_create1(0)),
        cs_(static_cast<size_t>(o.conns)),
        evs_(cs_.size()) {}

  // Connects every connection, their paced schedules staggered evenly over one interval from
  // start. False when one cannot connect.
  bool Open(Clock::time_point start) {
    for (size_t i = 0; i < cs_.size(); ++i) {
      if (!OpenConn(i)) return false;
      cs_[i].next = start + interval_ * static_cast<int64_t>(i) / o_.conns;
    }
    return true;
  }

  // Sends and reads until `end`.
  void Run(Clock::time_point end) {
    for (;;) {
      const auto now = Clock::now();
      if (now >= end) break;
      const Clock::time_point wake = SendDue(now, end);
      const auto wait = std::max<Clock::duration>(wake - Clock::now(), Clock::duration::zero());
      timespec ts{};
      ts.tv_sec =
          static_cast<time_t>(std::chrono::duration_cast<std::chrono::seconds>(wait).count());
      ts.tv_nsec = static_cast<long>((wait - std::chrono::seconds(ts.tv_sec)).count());
      const int n = ::epoll_pwait2(ep_, evs_.data(), static_cast<int>(evs_.size()), &ts, nullptr);
      ReadReady(n, Clock::now());
    }
  }

  void Close() {
    for (Conn& c : cs_) {
      if (c.fd >= 0) ::close(c.fd);
    }
    ::close(ep_);
  }

  // The one line of results, over the run since start.
  void Print(Clock::time_point start) {
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    std::sort(lat_.begin(), lat_.end());
    auto pct = [&](double p) {
      return lat_.empty() ? 0.0
                          : lat_[std::min(lat_.size() - 1, static_cast<size_t>(lat_.size() * p))];
    };
    std::printf("requests %zu in %.2fs = %.0f req/s; status", lat_.size(), secs,
                lat_.size() / secs);
    for (auto [k, v] : status_) std::printf(" %d:%ld", k, v);
    std::printf("; latency ms p50 %.3f p90 %.3f p99 %.3f max %.3f\n", pct(0.5), pct(0.9), pct(0.99),
                lat_.empty() ? 0.0 : lat_.back());
  }

 private:
  bool OpenConn(size_t i) {
    cs_[i].fd = Connect(o_.port);
    cs_[i].in.clear();
    cs_[i].busy = false;
    if (cs_[i].fd < 0) return false;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, cs_[i].fd, &ev);
    return true;
  }

  void Send(Conn& c, Clock::time_point due) {
    char id[17];
    if (id_in_request_ != std::string::npos) {
      std::snprintf(id, sizeof id, "%08x%08x", run_id_, sent_++);
      if (!o_.gzip) std::memcpy(request_.data() + id_in_request_, id, 16);
    }
    if (o_.gzip) {
      if (id_in_body_ != std::string::npos) std::memcpy(body_.data() + id_in_body_, id, 16);
      const std::string gz = Gzip(body_);
      request_ = head_ + std::to_string(gz.size()) + "\r\n\r\n" + gz;
    }
    if (::write(c.fd, request_.data(), request_.size()) != static_cast<ssize_t>(request_.size())) {
      status_[-1]++;
      return;
    }
    c.busy = true;
    c.t0 = due;
    if (o_.rate > 0) c.next += interval_;
  }

  // Sends every idle connection whose time has come; returns the earliest future due time
  // (at most end).
  Clock::time_point SendDue(Clock::time_point now, Clock::time_point end) {
    Clock::time_point wake = end;
    for (Conn& c : cs_) {
      if (c.fd < 0 || c.busy) continue;
      if (o_.rate <= 0) {
        Send(c, now);
      } else if (c.next <= now) {
        Send(c, c.next);
      } else {
        wake = std::min(wake, c.next);
      }
    }
    return wake;
  }

  // Reads the n connections epoll found ready: their responses' latencies and statuses.
  void ReadReady(int n, Clock::time_point now) {
    for (int k = 0; k < n; ++k) {
      const size_t i = evs_[static_cast<size_t>(k)].data.u64;
      Conn& c = cs_[i];
      char tmp[65536];
      const ssize_t got = ::read(c.fd, tmp, sizeof tmp);
      if (got <= 0) {  // closed by the server: count it and reconnect
        status_[-1]++;
        ::epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
        ::close(c.fd);
        const auto next = c.next;
        if (!OpenConn(i)) continue;
        c.next = std::max(next, now);
        continue;
      }
      c.in.append(tmp, static_cast<size_t>(got));
      while (int st = TakeResponse(c.in)) {
        lat_.push_back(std::chrono::duration<double, std::milli>(now - c.t0).count());
        status_[st]++;
        c.busy = false;
      }
    }
  }

  const Options o_;
  std::string body_;        // --gzip: the body, its id rewritten per request, then compressed
  const std::string head_;  // --gzip: the request line and headers up to Content-Length's value
  const size_t id_in_body_;
  std::string request_;
  const size_t id_in_request_;  // where the unique id goes, or npos
  const Clock::duration interval_;
  const unsigned run_id_ = static_cast<unsigned>(std::time(nullptr));
  uint32_t sent_ = 0;
  const int ep_;
  std::vector<Conn> cs_;
  std::vector<epoll_event> evs_;
  std::vector<double> lat_;
  std::map<int, long> status_;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(argc, argv);
  const std::string body = ReadBody(o.body_file);
  const size_t id_at = o.unique_ids ? UniqueIdOffset(body) : std::string::npos;
  if (o.unique_ids && id_at == std::string::npos) {
    std::fprintf(stderr, "loadgen: --unique-ids needs an \"id\" of 16+ characters in the body\n");
    return 2;
  }
  Load load(o, body, id_at);
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  if (!load.Open(start)) {
    std::fprintf(stderr, "loadgen: cannot connect to 127.0.0.1:%d\n", o.port);
    return 1;
  }
  load.Run(end);
  load.Close();
  load.Print(start);
  return 0;
}
