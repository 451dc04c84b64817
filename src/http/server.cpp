#include "http/server.h"
#include "core/mutex.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "core/task_pool.h"

namespace hcprp::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

Response DefaultTooLarge(const Request&) {
  return MakeResponse(StatusCode::payload_too_large, "request body too large\n", "text/plain");
}

Response DefaultOverloaded() {
  Response res = MakeResponse(StatusCode::service_unavailable, "too many connections\n", "text/plain");
  res.set(Field::retry_after, "1");
  return res;
}

// Runs `fn` on the worker pool and completes on the caller's executor with its response.
template <typename Token>
auto AsyncOnPool(TaskPool& pool, std::function<Response()> fn, Token&& token) {
  return asio::async_initiate<Token, void(Response)>(
      [&pool](auto handler, std::function<Response()> work_fn) {
        using H = decltype(handler);
        struct State {
          H handler;
          asio::executor_work_guard<asio::associated_executor_t<H>> work;
        };
        auto ex = asio::get_associated_executor(handler);
        auto state = std::make_shared<State>(State{std::move(handler), asio::make_work_guard(ex)});
        auto finish = [state](Response r) {
          auto ex2 = state->work.get_executor();
          asio::post(ex2, [state, r = std::move(r)]() mutable {
            auto h = std::move(state->handler);
            state->work.reset();
            std::move(h)(std::move(r));
          });
        };
        bool queued = pool.Submit([finish, work_fn = std::move(work_fn)]() mutable { finish(work_fn()); });
        if (!queued) {
          finish(MakeResponse(StatusCode::service_unavailable, "server is stopping\n", "text/plain"));
        }
      },
      token, std::move(fn));
}

// One accepted connection. Its coroutine runs on the connection's strand; `idle` and
// `close_requested` are only touched there.
struct Connection {
  explicit Connection(tcp::socket s) : stream(std::move(s)) {}
  beast::tcp_stream stream;  // the TCP layer: timeouts and closing act on it
  Peer peer;
  bool idle = true;
  bool close_requested = false;
  // After a TLS handshake: the certificate the client presented (nullopt: none).
  bool tls_done = false;
  std::optional<tls::PeerCertificate> peer_certificate;
  // The last verdict of ServerTls::authenticate on it, and when it was reached.
  bool judged = false;
  std::optional<Refusal> verdict;
  std::chrono::steady_clock::time_point judged_at{};
};

using TlsStream = asio::ssl::stream<beast::tcp_stream&>;

Response DefaultRefused(const Request&, const Refusal& r, const Peer&) {
  return MakeResponse(StatusCode::unauthorized, "client certificate refused: " + r.reason + "\n",
                      "text/plain");
}

class ServerImpl final : public Server {
 public:
  ServerImpl(const ServerOptions& options, PeerHandler handler)
      : options_(options),
        handler_(std::move(handler)),
        on_too_large_(options.on_too_large ? options.on_too_large : TooLargeHandler(DefaultTooLarge)),
        on_overloaded_(options.on_overloaded ? options.on_overloaded : OverloadHandler(DefaultOverloaded)),
        on_refused_(options.tls.on_refused ? options.tls.on_refused : RefusedHandler(DefaultRefused)),
        acceptor_strand_(asio::make_strand(ioc_)),
        acceptor_(acceptor_strand_),
        work_(asio::make_work_guard(ioc_)),
        pool_(options.threads, options.max_threads) {}

  ~ServerImpl() override { Stop(std::chrono::seconds(10)); }

  Status Listen() {
    boost::system::error_code ec;
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(options_.listen.host, std::to_string(options_.listen.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
      return Error::InvalidArgument("cannot resolve listen host '" + options_.listen.host +
                                    "': " + ec.message());
    }
    tcp::endpoint ep = results.begin()->endpoint();
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Error::Unavailable("cannot listen on " + options_.listen.ToString() + ": " + ec.message());
    }
    auto local = acceptor_.local_endpoint(ec);
    bound_ = Endpoint{local.address().to_string(), local.port()};
    asio::co_spawn(acceptor_strand_, AcceptLoop(), asio::detached);
    int n = std::max(1, options_.io_threads);
    for (int i = 0; i < n; ++i) {
      io_threads_.emplace_back([this] { ioc_.run(); });
    }
    return Status::Ok();
  }

  uint16_t port() const override { return bound_.port; }
  Endpoint endpoint() const override { return bound_; }

  size_t connection_count() const override {
    MutexLock lock(mu_);
    return connections_.size();
  }

  void Stop(std::chrono::milliseconds deadline) override {
    MutexLock stop_lock(stop_mu_);
    if (stopped_) return;
    stopping_.store(true);
    asio::post(acceptor_strand_, [this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
    });
    // Close idle connections now; the busy ones close after answering.
    ForEachConnection([](const std::shared_ptr<Connection>& c) {
      if (c->idle) {
        CloseSocket(*c);
      } else {
        c->close_requested = true;
      }
    });
    {
      MutexLock lock(mu_);
      drained_cv_.WaitFor(lock, deadline, [this]() HCPRP_REQUIRES(mu_) { return connections_.empty(); });
    }
    ForEachConnection([](const std::shared_ptr<Connection>& c) { CloseSocket(*c); });
    // Handlers still running finish; their completions find closed sockets.
    pool_.Shutdown();
    work_.reset();
    for (auto& t : io_threads_) t.join();
    io_threads_.clear();
    stopped_ = true;
  }

 private:
  static void CloseSocket(Connection& c) {
    boost::system::error_code ec;
    c.stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    c.stream.socket().close(ec);
  }

  template <typename F>
  void ForEachConnection(F f) {
    std::vector<std::shared_ptr<Connection>> conns;
    {
      MutexLock lock(mu_);
      conns.assign(connections_.begin(), connections_.end());
    }
    for (auto& c : conns) {
      asio::post(c->stream.get_executor(), [c, f] { f(c); });
    }
  }

  awaitable<void> AcceptLoop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(asio::make_strand(ioc_), kNoThrow);
      if (stopping_.load()) co_return;
      if (ec) {
        if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
        // Out of descriptors or similar: back off briefly instead of spinning.
        asio::steady_timer t(acceptor_strand_, std::chrono::milliseconds(50));
        co_await t.async_wait(kNoThrow);
        continue;
      }
      auto conn = std::make_shared<Connection>(std::move(socket));
      bool over_capacity = false;
      {
        MutexLock lock(mu_);
        over_capacity = connections_.size() >= options_.max_connections;
      }
      if (over_capacity) {
        asio::co_spawn(conn->stream.get_executor(), Refuse(conn), asio::detached);
        continue;
      }
      boost::system::error_code pec;
      auto remote = conn->stream.socket().remote_endpoint(pec);
      if (!pec) conn->peer = Peer{remote.address().to_string(), remote.port()};
      conn->stream.socket().set_option(tcp::no_delay(true), pec);
      {
        MutexLock lock(mu_);
        connections_.insert(conn);
      }
      auto ex = conn->stream.get_executor();
      asio::co_spawn(ex, Session(conn), [this, conn](std::exception_ptr) {
        CloseSocket(*conn);
        MutexLock lock(mu_);
        connections_.erase(conn);
        drained_cv_.NotifyAll();
      });
    }
  }

  // Answers a connection over the cap without reading its request, then closes it after a short
  // linger. It is not counted in connections_: the whole exchange is bounded by one second.
  awaitable<void> Refuse(std::shared_ptr<Connection> conn) {
    Connection& c = *conn;
    if (options_.tls.context) {  // a plaintext answer means nothing to a TLS client
      CloseSocket(c);
      co_return;
    }
    Response res = on_overloaded_();
    res.keep_alive(false);
    res.prepare_payload();
    c.stream.expires_after(std::chrono::seconds(1));
    auto [ec, n] = co_await beast_http::async_write(c.stream, res, kNoThrow);
    (void)n;
    if (!ec) {
      boost::system::error_code sec;
      c.stream.socket().shutdown(tcp::socket::shutdown_send, sec);
      beast::flat_buffer buffer;
      while (buffer.size() < 64 * 1024) {
        auto [rec, rn] = co_await c.stream.async_read_some(buffer.prepare(4096), kNoThrow);
        buffer.commit(rn);
        if (rec) break;
      }
    }
    CloseSocket(c);
  }

  // Writes `res`; false when the connection failed. (Arguments of
  // co_await calls are named lvalues: GCC 12 mishandles temporaries inside co_await expressions.)
  template <typename Stream>
  awaitable<bool> Write(Connection& c, Stream& s, Response& res, bool keep_alive) {
    if (!options_.server_header.empty() && res.find(Field::server) == res.end()) {
      res.set(Field::server, options_.server_header);
    }
    res.keep_alive(keep_alive);
    res.prepare_payload();
    c.stream.expires_after(options_.read_timeout);
    auto [ec, n] = co_await beast_http::async_write(s, res, kNoThrow);
    (void)n;
    if (ec) co_return false;
    if (!keep_alive) {
      boost::system::error_code sec;
      c.stream.socket().shutdown(tcp::socket::shutdown_send, sec);
    }
    co_return true;
  }

  // Reads and discards what the client still sends for a short while after an answer that did not
  // read the request body, so that closing does not reset the connection before the client has
  // read the answer.
  template <typename Stream>
  awaitable<void> Linger(Connection& c, Stream& s, beast::flat_buffer& buffer, size_t max_bytes,
                         std::chrono::milliseconds max_time) {
    c.stream.expires_after(std::min<std::chrono::milliseconds>(options_.read_timeout, max_time));
    size_t drained = 0;
    while (drained < max_bytes) {
      buffer.clear();
      auto [ec, n] = co_await s.async_read_some(buffer.prepare(64 * 1024), kNoThrow);
      if (ec) break;
      drained += n;
    }
  }

  // What is read and discarded at most after an answer given without reading the request's body.
  static constexpr size_t kLingerBytes = 64 * 1024 * 1024;
  static constexpr std::chrono::milliseconds kLingerTime{2'000};
  static constexpr size_t kRefusedLingerBytes = 64 * 1024;
  static constexpr std::chrono::milliseconds kRefusedLingerTime{500};

  static bool IsDisconnect(const boost::system::error_code& ec) {
    return ec == beast::error::timeout || ec == beast_http::error::end_of_stream ||
           ec == beast_http::error::partial_message || ec == asio::error::eof ||
           ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
           ec == asio::error::bad_descriptor || ec == asio::error::broken_pipe;
  }

  // RFC 9112: a request whose framing two parties could read differently is refused (section 6.3:
  // Transfer-Encoding with Content-Length, or a final coding other than chunked), and an HTTP/1.1
  // request must carry exactly one Host (section 3.2).
  static std::optional<std::string> FramingProblem(const Request& req) {
    if (req.find(Field::transfer_encoding) != req.end()) {
      if (req.find(Field::content_length) != req.end()) {
        return "Transfer-Encoding and Content-Length together\n";
      }
      std::string codings;
      auto [first, end] = req.equal_range(Field::transfer_encoding);
      for (auto it = first; it != end; ++it) {
        if (!codings.empty()) codings += ',';
        codings += std::string(it->value());
      }
      std::string_view last = codings;
      if (auto comma = last.rfind(','); comma != std::string_view::npos) last.remove_prefix(comma + 1);
      while (!last.empty() && (last.front() == ' ' || last.front() == '\t')) last.remove_prefix(1);
      while (!last.empty() && (last.back() == ' ' || last.back() == '\t')) last.remove_suffix(1);
      if (!beast::iequals(last, "chunked")) return "Transfer-Encoding must end with chunked\n";
    }
    if (req.version() >= 11 && req.count(Field::host) != 1) return "exactly one Host header is required\n";
    return std::nullopt;
  }

  // The answer refusing a request on its headers alone (an untrusted TLS client, or the screen's
  // verdict); nullopt lets it through. A TLS client is judged again at least every recheck_interval, so
  // that a connection opened before a rotation of the trusted set (or before its certificate expired)
  // does not outlive the trust.
  std::optional<Response> Screen(Connection& c, const Request& header) {
    if (c.tls_done && options_.tls.authenticate && !IsOpenPath(header)) {
      const auto now = std::chrono::steady_clock::now();
      if (!c.judged || now - c.judged_at >= options_.tls.recheck_interval) {
        c.verdict = options_.tls.authenticate(c.peer_certificate ? &*c.peer_certificate : nullptr);
        c.judged = true;
        c.judged_at = now;
      }
      if (c.verdict) {
        Response refused = on_refused_(header, *c.verdict, c.peer);
        refused.version(header.version());
        return refused;
      }
    }
    if (options_.screen) return options_.screen(header);
    return std::nullopt;
  }

  // Reads one request into `parser`. Returns the answer to send instead of calling the handler
  // (limits exceeded, malformed input, a caller refused on its headers), or nullopt; `closed` is set
  // when the connection is gone, `refused` when the caller was refused before its body was read.
  template <typename Stream>
  awaitable<std::optional<Response>> ReadRequest(Connection& c, Stream& s, beast::flat_buffer& buffer,
                                                 beast_http::request_parser<beast_http::string_body>& parser,
                                                 bool& closed, bool& refused) {
    boost::system::error_code ec;
    // Wait for the first byte under the idle timeout, then read the rest under the read timeout.
    if (buffer.size() == 0) {
      c.stream.expires_after(options_.idle_timeout);
      auto [rec, n] = co_await s.async_read_some(buffer.prepare(4096), kNoThrow);
      buffer.commit(n);
      ec = rec;
    }
    c.idle = false;
    if (!ec && !parser.is_header_done()) {
      c.stream.expires_after(options_.read_timeout);
      auto [rec, n] = co_await beast_http::async_read_header(s, buffer, parser, kNoThrow);
      (void)n;
      ec = rec;
    }
    // Content-Length over the limit is reported while parsing the header.
    if (ec == beast_http::error::body_limit) co_return on_too_large_(parser.get());
    if (ec == beast_http::error::header_limit) {
      co_return MakeResponse(StatusCode::request_header_fields_too_large, "headers too large\n",
                             "text/plain");
    }
    if (ec) {
      closed = true;
      if (IsDisconnect(ec)) co_return std::nullopt;
      co_return MakeResponse(StatusCode::bad_request, "malformed request\n", "text/plain");
    }
    if (auto problem = FramingProblem(parser.get())) {
      closed = true;  // the rest of the message cannot be delimited safely
      co_return MakeResponse(StatusCode::bad_request, *problem, "text/plain");
    }
    if (auto answer = Screen(c, parser.get())) {
      refused = true;
      co_return answer;
    }
    if (auto cl = parser.content_length(); cl && *cl > options_.max_body_bytes) {
      co_return on_too_large_(parser.get());
    }
    if (parser.is_done()) co_return std::nullopt;
    if (beast::iequals(parser.get()[Field::expect], "100-continue")) {
      beast_http::response<beast_http::empty_body> cont{StatusCode::continue_, 11};
      c.stream.expires_after(options_.read_timeout);
      auto [wec, wn] = co_await beast_http::async_write(s, cont, kNoThrow);
      (void)wn;
      if (wec) {
        closed = true;
        co_return std::nullopt;
      }
    }
    c.stream.expires_after(options_.read_timeout);
    auto [rec, n] = co_await beast_http::async_read(s, buffer, parser, kNoThrow);
    (void)n;
    if (rec == beast_http::error::body_limit) co_return on_too_large_(parser.get());
    if (rec) {
      closed = true;
      if (IsDisconnect(rec)) co_return std::nullopt;
      co_return MakeResponse(StatusCode::bad_request, "malformed request\n", "text/plain");
    }
    co_return std::nullopt;
  }

  static bool IsTlsRecordStart(const beast::flat_buffer& buffer) {
    const auto* bytes = static_cast<const unsigned char*>(buffer.data().data());
    return buffer.size() > 0 && bytes[0] == 0x16;  // TLS handshake record
  }

  awaitable<void> Session(std::shared_ptr<Connection> conn) {
    if (!options_.tls.context) {
      beast::flat_buffer buffer;
      co_await Serve(conn, conn->stream, buffer);
      co_return;
    }
    Connection& c = *conn;
    // The first bytes arrive under the idle timeout, the rest of the handshake under its own.
    beast::flat_buffer buffer;
    c.stream.expires_after(options_.idle_timeout);
    auto [rec, rn] = co_await c.stream.async_read_some(buffer.prepare(4096), kNoThrow);
    buffer.commit(rn);
    if (rec) co_return;
    if (!IsTlsRecordStart(buffer)) {
      // Plain HTTP on the TLS port: say so in plain HTTP, then close.
      Response res =
          MakeResponse(StatusCode::bad_request, "this port speaks HTTPS (TLS 1.2 or 1.3)\n", "text/plain");
      if (co_await Write(c, c.stream, res, false))
        co_await Linger(c, c.stream, buffer, kLingerBytes, kLingerTime);
      co_return;
    }
    std::shared_ptr<asio::ssl::context> context = options_.tls.context->Current();  // outlives the stream
    TlsStream tls_stream(c.stream, *context);
    c.stream.expires_after(options_.tls.handshake_timeout);
    auto [hec, used] =
        co_await tls_stream.async_handshake(asio::ssl::stream_base::server, buffer.data(), kNoThrow);
    if (hec) co_return;
    buffer.consume(used);
    c.tls_done = true;
    if (options_.tls.authenticate) c.peer_certificate = tls::PeerCertificateOf(tls_stream.native_handle());
    beast::flat_buffer plain;
    co_await Serve(conn, tls_stream, plain);
    // The session stays resumable although the connection ends without a close_notify exchange.
    SSL_set_shutdown(tls_stream.native_handle(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  }

  bool IsOpenPath(const Request& req) const {
    std::string_view target = req.target();
    target = target.substr(0, target.find('?'));
    for (const auto& p : options_.tls.open_paths) {
      if (target == p) return true;
    }
    return false;
  }

  template <typename Stream>
  awaitable<void> Serve(std::shared_ptr<Connection> conn, Stream& s, beast::flat_buffer& buffer) {
    Connection& c = *conn;
    for (;;) {
      c.idle = true;
      if (c.close_requested || stopping_.load()) co_return;
      beast_http::request_parser<beast_http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
      parser.body_limit(options_.max_body_bytes);
      bool closed = false;
      bool refused = false;
      std::optional<Response> rejection = co_await ReadRequest(c, s, buffer, parser, closed, refused);
      if (rejection) {
        // The rest of the request was not read: answer, drain a little (a refused caller's body only as
        // much as lets it read the answer), close.
        bool wrote = co_await Write(c, s, *rejection, false);
        if (wrote && !closed) {
          co_await Linger(c, s, buffer, refused ? kRefusedLingerBytes : kLingerBytes,
                          refused ? kRefusedLingerTime : kLingerTime);
        }
        co_return;
      }
      if (closed) co_return;

      auto req = std::make_shared<Request>(parser.release());
      const bool want_keep_alive = req->keep_alive();
      const unsigned version = req->version();
      c.stream.expires_never();
      std::function<Response()> call = [this, req, peer = c.peer]() -> Response {
        try {
          return handler_(std::move(*req), peer);
        } catch (...) {
          return MakeResponse(StatusCode::internal_server_error, "internal error\n", "text/plain");
        }
      };
      Response res = co_await AsyncOnPool(pool_, std::move(call), use_awaitable);
      const bool handler_keep = res.keep_alive();  // false when the handler set "Connection: close"
      res.version(version);
      const bool keep =
          handler_keep && want_keep_alive && version >= 11 && !c.close_requested && !stopping_.load();
      if (!co_await Write(c, s, res, keep) || !keep) co_return;
    }
  }

  const ServerOptions options_;
  const PeerHandler handler_;
  const TooLargeHandler on_too_large_;
  const OverloadHandler on_overloaded_;
  const RefusedHandler on_refused_;

  asio::io_context ioc_;
  asio::strand<asio::io_context::executor_type> acceptor_strand_;
  tcp::acceptor acceptor_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  TaskPool pool_;
  std::vector<std::thread> io_threads_;
  Endpoint bound_;
  std::atomic<bool> stopping_{false};

  Mutex stop_mu_;  // serialises Stop()
  bool stopped_ HCPRP_GUARDED_BY(stop_mu_) = false;

  mutable Mutex mu_;
  CondVar drained_cv_;
  std::set<std::shared_ptr<Connection>> connections_ HCPRP_GUARDED_BY(mu_);
};

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, PeerHandler handler) {
  auto server = std::make_unique<ServerImpl>(options, std::move(handler));
  auto st = server->Listen();
  if (!st.ok()) {
    server->Stop(std::chrono::milliseconds(0));
    return st.error();
  }
  return std::unique_ptr<Server>(std::move(server));
}

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, Handler handler) {
  return Start(options, PeerHandler([h = std::move(handler)](Request&& req, const Peer&) {
                 return h(std::move(req));
               }));
}

}  // namespace hcprp::http
