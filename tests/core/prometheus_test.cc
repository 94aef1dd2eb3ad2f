#include "rtb/core/prometheus.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <string>

#include "rtb/core/admin_server.h"

namespace rtb {
namespace {

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// The value of the sample line `name value` in a page; NaN when absent.
double Value(const std::string& page, const std::string& name) {
  const size_t at = page.find("\n" + name + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(page.substr(at + name.size() + 2));
}

TEST(Prometheus, LabelValuesAndHelpAreEscapedAsTheTextFormatSays) {
  EXPECT_EQ(prom::LabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  std::string o;
  prom::Family(&o, "x_total", "counter", "a \"quoted\" back\\slash\nnext");
  EXPECT_EQ(o, "# HELP x_total a \"quoted\" back\\\\slash\\nnext\n# TYPE x_total counter\n");
}

TEST(Prometheus, SamplesWriteIntegersExactlyAndDoublesInTheirShortestForm) {
  std::string o;
  prom::Sample(&o, "a", int64_t{9'007'199'254'740'993});  // above 2^53: exact as an integer
  prom::Sample(&o, "b", "k=\"v\"", 0.1);
  prom::Sample(&o, "c", std::nan(""));
  prom::Sample(&o, "d", -std::numeric_limits<double>::infinity());
  EXPECT_EQ(o, "a 9007199254740993\nb{k=\"v\"} 0.1\nc NaN\nd -Inf\n");
}

TEST(Prometheus, ProcessMetricsDescribeThisProcess) {
  std::string before = "\n";
  prom::AppendProcessMetrics(&before);
  const int fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  std::string after = "\n";
  prom::AppendProcessMetrics(&after);
  ::close(fd);
  EXPECT_EQ(Value(after, "process_open_fds"), Value(before, "process_open_fds") + 1) << after;
  EXPECT_GT(Value(after, "process_resident_memory_bytes"), 1e6);
  EXPECT_GE(Value(after, "process_virtual_memory_bytes"),
            Value(after, "process_resident_memory_bytes"));
  EXPECT_GE(Value(after, "process_threads"), 1);
  EXPECT_GE(Value(after, "process_max_fds"), Value(after, "process_open_fds"));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const double start = Value(after, "process_start_time_seconds");
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 24 * 3600);  // a test binary started less than a day ago
  EXPECT_GE(Value(after, "process_cpu_seconds_total"), 0);
  EXPECT_NE(after.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos);
}

// One request to 127.0.0.1:port; returns (status, content type, body).
struct Answer {
  int status = 0;
  std::string type, body;
};
Answer Get(unsigned short port, http::verb verb, const std::string& target) {
  boost::asio::io_context ioc;
  tcp::socket s(ioc);
  s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1");
  http::write(s, req);
  boost::beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(s, buf, res);
  return {static_cast<int>(res.result_int()), std::string(res[http::field::content_type]),
          res.body()};
}

TEST(AdminServer, ServesMetricsAndHealthAndNothingElse) {
  std::atomic<int> scrapes{0};
  std::atomic<bool> sick{false};
  auto a = AdminServer::Start(
      "127.0.0.1:0",
      {.metrics =
           [&] {
             ++scrapes;
             return std::string("x_total 1\n");
           },
       .unhealthy = [&] { return sick ? std::string("the loop is stuck") : std::string(); }});
  ASSERT_TRUE(a.ok()) << a.status().message();
  const unsigned short port = (*a)->port();
  ASSERT_GT(port, 0);
  const Answer m = Get(port, http::verb::get, "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.type, prom::kContentType);
  EXPECT_EQ(m.body, "x_total 1\n");
  EXPECT_EQ(scrapes, 1);
  EXPECT_EQ(Get(port, http::verb::get, "/healthz").body, "ok\n");
  sick = true;
  const Answer h = Get(port, http::verb::get, "/healthz");
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(h.body, "the loop is stuck\n");
  EXPECT_EQ(Get(port, http::verb::get, "/openrtb2/bid").status, 404);
  EXPECT_EQ(Get(port, http::verb::post, "/metrics").status, 405);
  EXPECT_EQ(scrapes, 1);  // neither the 404 nor the 405 rendered the page

  // The port is taken: a clear error, not a crash.
  auto twice = AdminServer::Start("127.0.0.1:" + std::to_string(port), {});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(twice.status().message().find("cannot listen on 127.0.0.1:"), std::string::npos);
}

TEST(AdminServer, ABadAddressIsRefusedNamingIt) {
  for (const char* bad :
       {"9102", "localhost:9102", "127.0.0.1:http", "127.0.0.1:70000", "1.2.3:1"}) {
    auto a = AdminServer::Start(bad, {});
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.status().code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(a.status().message().find(bad), std::string::npos) << a.status().message();
  }
}

}  // namespace
}  // namespace rtb
