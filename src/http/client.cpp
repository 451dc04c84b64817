#include "http/client.h"
#include "core/mutex.h"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
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

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

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
  // A connection closed without a close_notify would mark its session as bad and unresumable; the
  // pool closes idle connections at will, so it counts as an orderly end.
  ~Connection() {
    if (tls) SSL_set_shutdown(tls->native_handle(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  }
  asio::io_context ioc;
  beast::tcp_stream stream;
  std::shared_ptr<asio::ssl::context> tls_context;  // outlives `tls`
  std::unique_ptr<asio::ssl::stream<beast::tcp_stream&>> tls;
  beast::flat_buffer buffer;
  SteadyTime idle_since{};
  bool session_saved = false;
};

struct SessionDeleter {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SessionPtr = std::shared_ptr<SSL_SESSION>;

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

// While a request is in flight its connection closes with a reset (SO_LINGER {1, 0}) instead of a FIN:
// the kernel then discards what it has not sent yet. A request given up on (timed out, failed midway)
// must not reach the server later, when a partition heals and TCP retransmits it, after the caller was
// told it failed and may have acted on that. The stream's own timeout closes the socket, so the
// option is set before the request is written, and cleared once its response arrived (an idle pooled
// connection closes in order).
void ResetOnClose(Connection& c, bool reset) {
  boost::system::error_code ec;
  c.stream.socket().set_option(asio::socket_base::linger(reset, 0), ec);
}

// Closes `c` with a reset (ResetOnClose), unless its stream's timeout already did.
void Abort(Connection& c) {
  auto& sock = c.stream.socket();
  if (!sock.is_open()) return;
  ResetOnClose(c, true);
  boost::system::error_code ec;
  sock.close(ec);
}

}  // namespace

class Client::Impl {
 public:
  explicit Impl(ClientOptions options) : options_(std::move(options)) {}

  bool secure() const { return options_.tls != nullptr; }

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
        HCPRP_ASSIGN_OR_RETURN(auto fresh, Connect(ep));
        conn = std::move(fresh);
      }
      bool got_some = false;
      auto res = RoundTrip(*conn, ep, req, timeout, got_some);
      if (res.ok()) {
        RememberSession(*conn, ep);
        if (res->keep_alive() && !res->need_eof()) {
          Release(ep, std::move(conn));
        }
        return res;
      }
      // Never reused, and nothing of the request left in the kernel to be delivered later.
      Abort(*conn);
      // A reused connection that the server closed before answering: try once on a new one.
      if (reused && !got_some && replayable && attempt == 0 && !res.error().Is(ErrorCode::kTimeout)) continue;
      return res;
    }
  }

  void CloseIdle() {
    std::map<std::string, std::vector<std::unique_ptr<Connection>>> pool;
    {
      MutexLock lock(mu_);
      pool.swap(idle_);
    }
  }

  size_t connections_opened() const { return opened_.load(); }
  size_t sessions_resumed() const { return resumed_.load(); }

 private:
  std::unique_ptr<Connection> TakeIdle(const Endpoint& ep) {
    auto key = ep.ToString();
    auto now = std::chrono::steady_clock::now();
    for (;;) {
      std::unique_ptr<Connection> c;
      {
        MutexLock lock(mu_);
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
    MutexLock lock(mu_);
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
    if (secure()) HCPRP_RETURN_IF_ERROR(Handshake(*c, ep));
    opened_.fetch_add(1);
    return c;
  }

  // TLS over the connected socket: SNI and host name (or IP address) verification, resuming the
  // endpoint's last session when there is one.
  Status Handshake(Connection& c, const Endpoint& ep) {
    c.tls_context = options_.tls->Current();
    c.tls = std::make_unique<asio::ssl::stream<beast::tcp_stream&>>(c.stream, *c.tls_context);
    SSL* ssl = c.tls->native_handle();
    std::string host = ep.host;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    boost::system::error_code addr_ec;
    asio::ip::make_address(host, addr_ec);
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (addr_ec) {
      SSL_set_tlsext_host_name(ssl, host.c_str());
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
    } else {
      X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
    }
    const std::string key = ep.ToString();
    SessionPtr session;
    {
      MutexLock lock(mu_);
      if (auto it = sessions_.find(key); it != sessions_.end() && it->second.first == c.tls_context) {
        session = it->second.second;
      }
    }
    if (session) SSL_set_session(ssl, session.get());
    boost::system::error_code ec;
    c.stream.expires_after(options_.connect_timeout);
    c.tls->async_handshake(asio::ssl::stream_base::client,
                           [&](const boost::system::error_code& e) { ec = e; });
    c.ioc.run();
    c.ioc.restart();
    if (ec) {
      std::string why = ec.message();
      long verify = SSL_get_verify_result(ssl);
      if (verify != X509_V_OK)
        why = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
      return Error::Unavailable("TLS handshake with " + ep.ToString() + ": " + why);
    }
    c.stream.expires_never();
    if (SSL_session_reused(ssl)) resumed_.fetch_add(1);
    return Status::Ok();
  }

  // Keeps the connection's session for the endpoint's next connection once it can be resumed (with
  // TLS 1.3 that is after the server's tickets arrived, i.e. after the first response).
  void RememberSession(Connection& c, const Endpoint& ep) {
    if (!c.tls || c.session_saved) return;
    SSL_SESSION* s = SSL_get1_session(c.tls->native_handle());
    if (s == nullptr) return;
    if (SSL_SESSION_is_resumable(s) != 1) {
      SSL_SESSION_free(s);
      return;
    }
    c.session_saved = true;
    MutexLock lock(mu_);
    sessions_[ep.ToString()] = {c.tls_context, SessionPtr(s, SessionDeleter{})};
  }

  Result<Response> RoundTrip(Connection& c, const Endpoint& ep, Request& req,
                             std::chrono::milliseconds timeout, bool& got_some) {
    boost::system::error_code ec;
    beast_http::response_parser<beast_http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(options_.max_response_body_bytes);
    if (req.method() == Verb::head) parser.skip(true);
    ResetOnClose(c, true);
    c.stream.expires_after(timeout);
    auto exchange = [&](auto& s) {
      beast_http::async_write(s, req, [&](const boost::system::error_code& e, size_t) {
        ec = e;
        if (ec) return;
        beast_http::async_read(s, c.buffer, parser,
                               [&](const boost::system::error_code& e2, size_t) { ec = e2; });
      });
    };
    if (c.tls) {
      exchange(*c.tls);
    } else {
      exchange(c.stream);
    }
    c.ioc.run();
    c.ioc.restart();
    got_some = parser.got_some();
    if (ec) {
      return TransportError(ec, std::string(got_some ? "reading response from" : "sending request to"), ep);
    }
    c.stream.expires_never();
    ResetOnClose(c, false);
    return parser.release();
  }

  const ClientOptions options_;
  std::atomic<size_t> opened_{0};
  std::atomic<size_t> resumed_{0};
  Mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle_ HCPRP_GUARDED_BY(mu_);
  // The last TLS session of each endpoint, with the context it belongs to.
  std::map<std::string, std::pair<std::shared_ptr<asio::ssl::context>, SessionPtr>> sessions_
      HCPRP_GUARDED_BY(mu_);
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

Result<Response> Client::Send(const Endpoint& endpoint, Request request, std::chrono::milliseconds timeout) {
  return impl_->Send(endpoint, std::move(request), timeout);
}

Result<Response> Client::Send(Request request, std::chrono::milliseconds timeout) {
  HCPRP_ASSIGN_OR_RETURN(auto url, ParseUrl(request.target()));
  const std::string expected = impl_->secure() ? "https" : "http";
  if (url.scheme != expected) {
    return Error::InvalidArgument("this client sends " + expected + ":// URLs only, not " + url.scheme +
                                  "://");
  }
  request.target(url.target);
  return impl_->Send(url.endpoint, std::move(request), timeout);
}

void Client::CloseIdle() { impl_->CloseIdle(); }

size_t Client::connections_opened() const { return impl_->connections_opened(); }
size_t Client::sessions_resumed() const { return impl_->sessions_resumed(); }

}  // namespace hcprp::http
