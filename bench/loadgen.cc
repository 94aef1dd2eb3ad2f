// loadgen: an HTTP/1.1 keep-alive load generator for the bidder benchmark.
//
//   loadgen --port P --path /openrtb2/bid --body file.json --connections 8 --seconds 10
//           [--rate R]   (total requests/s, paced per connection; 0 = as fast as possible)
//
// Prints one line: requests, seconds, requests/s, status counts, latency p50/p90/p99/max (ms).
// Latency is measured from the scheduled send time when paced (no coordinated omission).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
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

// Reads one HTTP response; returns its status, or -1 on error.
int ReadResponse(int fd, std::string& buf) {
  for (;;) {
    const size_t hdr_end = buf.find("\r\n\r\n");
    if (hdr_end != std::string::npos) {
      size_t len = 0;
      const size_t cl = buf.find("Content-Length: ");
      const size_t cl2 = buf.find("content-length: ");
      const size_t at = cl != std::string::npos && cl < hdr_end
                            ? cl
                            : (cl2 != std::string::npos && cl2 < hdr_end ? cl2 : std::string::npos);
      if (at != std::string::npos) len = std::strtoul(buf.c_str() + at + 16, nullptr, 10);
      if (buf.size() >= hdr_end + 4 + len) {
        const int status = std::atoi(buf.c_str() + 9);
        buf.erase(0, hdr_end + 4 + len);
        return status;
      }
    }
    char tmp[65536];
    const ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n <= 0) return -1;
    buf.append(tmp, static_cast<size_t>(n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int port = 8080, conns = 8;
  double seconds = 10, rate = 0;
  std::string path = "/openrtb2/bid", body_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--port")
      port = std::stoi(v);
    else if (k == "--path")
      path = v;
    else if (k == "--body")
      body_file = v;
    else if (k == "--connections")
      conns = std::stoi(v);
    else if (k == "--seconds")
      seconds = std::stod(v);
    else if (k == "--rate")
      rate = std::stod(v);
  }
  std::string body;
  if (!body_file.empty()) {
    std::ifstream in(body_file);
    std::stringstream ss;
    ss << in.rdbuf();
    body = ss.str();
  }
  const std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                              "Content-Type: application/json\r\nx-openrtb-version: 2.6\r\n" +
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::mutex mu;
  std::vector<double> lat;
  std::map<int, long> status;
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (int c = 0; c < conns; ++c) {
    threads.emplace_back([&, c] {
      int fd = Connect(port);
      if (fd < 0) return;
      std::string buf;
      std::vector<double> my;
      std::map<int, long> my_status;
      const double interval = rate > 0 ? conns / rate : 0;
      auto next = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(interval * c / conns));
      while (Clock::now() < end) {
        if (rate > 0) {
          std::this_thread::sleep_until(next);
          if (next >= end) break;
        }
        const auto t0 = rate > 0 ? next : Clock::now();
        if (::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size()))
          break;
        const int st = ReadResponse(fd, buf);
        if (st < 0) {
          ::close(fd);
          fd = Connect(port);
          buf.clear();
          my_status[-1]++;
          if (fd < 0) break;
          continue;
        }
        my.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        my_status[st]++;
        if (rate > 0)
          next +=
              std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval));
      }
      if (fd >= 0) ::close(fd);
      std::lock_guard<std::mutex> l(mu);
      lat.insert(lat.end(), my.begin(), my.end());
      for (auto [k, v] : my_status) status[k] += v;
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double p) {
    return lat.empty() ? 0.0 : lat[std::min(lat.size() - 1, static_cast<size_t>(lat.size() * p))];
  };
  std::printf("requests %zu in %.2fs = %.0f req/s; status", lat.size(), secs, lat.size() / secs);
  for (auto [k, v] : status) std::printf(" %d:%ld", k, v);
  std::printf("; latency ms p50 %.3f p90 %.3f p99 %.3f max %.3f\n", pct(0.5), pct(0.9), pct(0.99),
              lat.empty() ? 0.0 : lat.back());
  return 0;
}
