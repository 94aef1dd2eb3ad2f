#include "rtb/core/admin_server.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <charconv>
#include <chrono>
#include <thread>

#include "rtb/core/build_info.h"
#include "rtb/core/log.h"
#include "rtb/core/prometheus.h"

namespace rtb {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

struct AdminServer::Impl {
  AdminRoutes routes;
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  net::steady_timer retry{ioc};  // after a failed accept (out of descriptors)
  unsigned short port = 0;       // bound, set before the thread starts
  std::thread thread;

  // One connection: requests answered in turn until the client closes, goes quiet for 10 s,
  // or sends something that is not HTTP.
  struct Session : std::enable_shared_from_this<Session> {
    Session(tcp::socket s, Impl& server) : stream(std::move(s)), srv(server) {}
    beast::tcp_stream stream;
    Impl& srv;
    beast::flat_buffer buf;
    http::request<http::empty_body> req;
    http::response<http::string_body> res;

    void Read() {
      req = {};
      stream.expires_after(std::chrono::seconds(10));
      http::async_read(stream, buf, req, [self = shared_from_this()](beast::error_code ec, size_t) {
        if (ec) return self->Close();
        self->Answer();
      });
    }
    void Answer() {
      res = {};
      res.version(req.version());
      res.keep_alive(req.keep_alive());
      res.set(http::field::server, "rtb-admin");
      const std::string_view target(req.target().data(), req.target().size());
      const std::string_view path = target.substr(0, target.find('?'));
      if (req.method() != http::verb::get && req.method() != http::verb::head) {
        res.result(http::status::method_not_allowed);
        res.set(http::field::allow, "GET, HEAD");
      } else if (path == "/metrics" && srv.routes.metrics) {
        res.result(http::status::ok);
        res.set(http::field::content_type, prom::kContentType);
        res.body() = srv.routes.metrics();
      } else if (path == "/healthz") {
        const std::string why = srv.routes.unhealthy ? srv.routes.unhealthy() : std::string();
        res.result(why.empty() ? http::status::ok : http::status::service_unavailable);
        res.set(http::field::content_type, "text/plain");
        res.body() = why.empty() ? "ok\n" : why + "\n";
      } else {
        res.result(http::status::not_found);
        res.set(http::field::content_type, "text/plain");
        res.body() = "not found: /metrics and /healthz are served here\n";
      }
      res.prepare_payload();
      if (req.method() == http::verb::head) res.body().clear();
      http::async_write(stream, res, [self = shared_from_this()](beast::error_code ec, size_t) {
        if (ec || !self->res.keep_alive()) return self->Close();
        self->Read();
      });
    }
    void Close() {
      beast::error_code ec;
      stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    }
  };

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket s) {
      if (ec == net::error::operation_aborted) return;
      if (!ec) {
        std::make_shared<Session>(std::move(s), *this)->Read();
        return Accept();
      }
      // Out of descriptors, say: accepting again at once would spin a core.
      retry.expires_after(std::chrono::milliseconds(100));
      retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) Accept();
      });
    });
  }
};

AdminServer::AdminServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<AdminServer>> AdminServer::Start(const std::string& listen,
                                                        AdminRoutes routes) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("admin address " + listen + " is not host:port");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  beast::error_code ec;
  const auto addr = net::ip::make_address(host, ec);
  if (ec) return Status::InvalidArgument("admin address " + listen + ": bad host " + host);
  unsigned port = 0;
  const std::string_view p = std::string_view(listen).substr(colon + 1);
  const auto r = std::from_chars(p.data(), p.data() + p.size(), port);
  if (p.empty() || r.ec != std::errc() || r.ptr != p.data() + p.size() || port > 65535) {
    return Status::InvalidArgument("admin address " + listen + ": bad port");
  }
  auto impl = std::make_unique<Impl>();
  impl->routes = std::move(routes);
  const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Status::Unavailable("cannot listen on " + listen + ": " + ec.message());
  impl->port = impl->acceptor.local_endpoint().port();
  impl->Accept();
  Impl* m = impl.get();
  impl->thread = std::thread([m] { m->ioc.run(); });
  return std::unique_ptr<AdminServer>(new AdminServer(std::move(impl)));
}

AdminServer::~AdminServer() {
  impl_->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

unsigned short AdminServer::port() const { return impl_->port; }

Result<std::unique_ptr<AdminServer>> StartAdminPort(const std::string& listen,
                                                    std::function<std::string()> own_metrics,
                                                    std::function<std::string()> unhealthy,
                                                    const std::string& component) {
  AdminRoutes routes;
  routes.metrics = [own = std::move(own_metrics)] {
    std::string o = own();
    AppendBuildInfo(&o);
    prom::AppendProcessMetrics(&o);
    return o;
  };
  routes.unhealthy = std::move(unhealthy);
  auto server = AdminServer::Start(listen, std::move(routes));
  if (server.ok()) {
    log::Get(component).info("admin port: http://{}/metrics and /healthz", listen);
  }
  return server;
}

}  // namespace rtb
