#include "http/client.h"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace hcprp::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using SteadyTime = std::chrono::steady_clock::time_point;

// One TCP connection with its own io_context, so that a thread can drive it synchronously with
// timeouts (async operations + run()).
struct Connection {
  Connection() : stream(ioc) {}
  asio::io_context ioc;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  SteadyTime idle_since{};
};

bool IsTimeout(const boost::system::error_code& ec) {
  return ec == beast::error::timeout || ec == asio::error::timed_out;
}

Error TransportError(const boost::system::error_code& ec, const std::string& what, const Endpoint& ep) {
  std::string msg = what + " " + ep.ToString() + ": " + ec.message();
  if (IsTimeout(ec)) return Error::Timeout(msg);
  if (ec.category() == beast_http::make_error_code(beast_http::error::end_of_stream).category() ||
      ec == beast_http::error::body_limit) {
    // The peer answered something that is not HTTP/1.1, or too much of it.
    if (ec != beast_http::error::end_of_stream && ec != beast_http::error::partial_message) {
      return Error::IoError(msg);
    }
  }
  return Error::Unavailable(msg);
}

// True when a pooled connection has been closed (or reset) by the server while idle, or holds
// unsolicited data: either way it cannot carry another request.
bool LooksClosed(Connection& c) {
  auto& sock = c.stream.socket();
  if (!sock.is_open()) return true;
  char byte;
  ssize_t n = ::recv(sock.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  return true;
}

}  // namespace

class Client::Impl {
 public:
  explicit Impl(ClientOptions options) : options_(std::move(options)) {}

  Result<Response> Send(const Endpoint& ep, Request req, std::chrono::milliseconds timeout) {
    if (req.find(Field::host) == req.end()) req.set(Field::host, ep.ToString());
    if (req.find(Field::user_agent) == req.end() && !options_.user_agent.empty()) {
      req.set(Field::user_agent, options_.user_agent);
    }
    req.version(11);
    req.prepare_payload();
    const bool replayable = IsIdempotent(req.method()) || req.find("X-Idempotency-Key") != req.end();

    for (int attempt = 0;; ++attempt) {
      std::unique_ptr<Connection> conn = TakeIdle(ep);
      const bool reused = conn != nullptr;
      if (!reused) {
        auto fresh = Connect(ep);
        if (!fresh.ok()) return fresh.error();
        conn = std::move(*fresh);
      }
      bool got_some = false;
      auto res = RoundTrip(*conn, ep, req, timeout, got_some);
      if (res.ok()) {
        if (res->keep_alive() && !res->need_eof()) {
          Release(ep, std::move(conn));
        }
        return res;
      }
      // A reused connection that the server closed before answering: try once on a new one.
      if (reused && !got_some && replayable && attempt == 0 && !res.error().Is(ErrorCode::kTimeout)) continue;
      return res;
    }
  }

  void CloseIdle() {
    std::map<std::string, std::vector<std::unique_ptr<Connection>>> pool;
    {
      std::lock_guard lock(mu_);
      pool.swap(idle_);
    }
  }

  size_t connections_opened() const { return opened_.load(); }

 private:
  std::unique_ptr<Connection> TakeIdle(const Endpoint& ep) {
    auto key = ep.ToString();
    auto now = std::chrono::steady_clock::now();
    for (;;) {
      std::unique_ptr<Connection> c;
      {
        std::lock_guard lock(mu_);
        auto it = idle_.find(key);
        if (it == idle_.end() || it->second.empty()) return nullptr;
        c = std::move(it->second.back());
        it->second.pop_back();
      }
      if (now - c->idle_since < options_.max_idle_time && !LooksClosed(*c)) return c;
    }
  }

  void Release(const Endpoint& ep, std::unique_ptr<Connection> c) {
    c->idle_since = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    auto& v = idle_[ep.ToString()];
    if (v.size() < options_.max_idle_per_host) v.push_back(std::move(c));
  }

  Result<std::unique_ptr<Connection>> Connect(const Endpoint& ep) {
    auto c = std::make_unique<Connection>();
    tcp::resolver resolver(c->ioc);
    boost::system::error_code ec;
    bool done = false;
    tcp::resolver::results_type results;
    resolver.async_resolve(ep.host, std::to_string(ep.port), tcp::resolver::numeric_service,
                           [&](const boost::system::error_code& e, tcp::resolver::results_type r) {
                             ec = e;
                             results = std::move(r);
                             done = true;
                           });
    c->ioc.run_for(options_.connect_timeout);
    if (!done) {
      resolver.cancel();
      c->ioc.restart();
      c->ioc.run();
      return Error::Timeout("resolving " + ep.ToString() + " timed out");
    }
    if (ec) return Error::Unavailable("cannot resolve " + ep.ToString() + ": " + ec.message());
    c->ioc.restart();
    c->stream.expires_after(options_.connect_timeout);
    c->stream.async_connect(results,
                            [&](const boost::system::error_code& e, const tcp::endpoint&) { ec = e; });
    c->ioc.run();
    c->ioc.restart();
    if (ec) return TransportError(ec, "connecting to", ep);
    boost::system::error_code opt_ec;
    c->stream.socket().set_option(tcp::no_delay(true), opt_ec);
    opened_.fetch_add(1);
    return c;
  }

  Result<Response> RoundTrip(Connection& c, const Endpoint& ep, Request& req,
                             std::chrono::milliseconds timeout, bool& got_some) {
    boost::system::error_code ec;
    beast_http::response_parser<beast_http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(options_.max_response_body_bytes);
    if (req.method() == Verb::head) parser.skip(true);
    c.stream.expires_after(timeout);
    beast_http::async_write(c.stream, req, [&](const boost::system::error_code& e, size_t) {
      ec = e;
      if (ec) return;
      beast_http::async_read(c.stream, c.buffer, parser,
                             [&](const boost::system::error_code& e2, size_t) { ec = e2; });
    });
    c.ioc.run();
    c.ioc.restart();
    got_some = parser.got_some();
    if (ec) {
      return TransportError(ec, std::string(got_some ? "reading response from" : "sending request to"), ep);
    }
    c.stream.expires_never();
    return parser.release();
  }

  const ClientOptions options_;
  std::atomic<size_t> opened_{0};
  std::mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle_;  // guarded by mu_
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

Result<Response> Client::Send(const Endpoint& endpoint, Request request, std::chrono::milliseconds timeout) {
  return impl_->Send(endpoint, std::move(request), timeout);
}

Result<Response> Client::Send(Request request, std::chrono::milliseconds timeout) {
  auto url = ParseUrl(request.target());
  if (!url.ok()) return url.error();
  if (url->scheme != "http") return Error::InvalidArgument("only http:// URLs are supported");
  request.target(url->target);
  return impl_->Send(url->endpoint, std::move(request), timeout);
}

void Client::CloseIdle() { impl_->CloseIdle(); }

size_t Client::connections_opened() const { return impl_->connections_opened(); }

}  // namespace hcprp::http
