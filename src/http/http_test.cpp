#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "http/bearer.h"
#include "http/client.h"
#include "http/retry.h"
#include "http/server.h"
#include "http/url.h"

namespace hcprp::http {
namespace {

using namespace std::chrono_literals;

Response Echo(Request&& req) {
  Response res = MakeResponse(
      StatusCode::ok, std::string(req.method_string()) + " " + std::string(req.target()) + " " + req.body(),
      "text/plain");
  return res;
}

std::unique_ptr<Server> StartOrDie(ServerOptions o, Handler h) {
  auto s = Server::Start(o, std::move(h));
  EXPECT_TRUE(s.ok()) << s.error().ToString();
  return std::move(*s);
}

Endpoint Local(const Server& s) { return {"127.0.0.1", s.port()}; }

TEST(Url, ParsesAbsoluteUrls) {
  auto u = ParseUrl("http://localhost:8080/api/x?y=1#frag");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->endpoint.host, "localhost");
  EXPECT_EQ(u->endpoint.port, 8080);
  EXPECT_EQ(u->target, "/api/x?y=1");
  auto v = ParseUrl("HTTP://[::1]");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->endpoint.host, "::1");
  EXPECT_EQ(v->endpoint.port, 80);
  EXPECT_EQ(v->target, "/");
  EXPECT_EQ(v->endpoint.ToString(), "[::1]:80");
  EXPECT_FALSE(ParseUrl("/relative").ok());
  EXPECT_FALSE(ParseUrl("ftp://x/").ok());
  EXPECT_FALSE(ParseUrl("http://x:99999/").ok());
}

TEST(Url, ParsesListenAddresses) {
  auto a = ParseListenAddress("127.0.0.1:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 0);
  auto b = ParseListenAddress(":8443");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "0.0.0.0");
  EXPECT_EQ(b->port, 8443);
  auto c = ParseListenAddress("[::1]:9000");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  auto d = ParseListenAddress("8080");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, 8080);
  EXPECT_FALSE(ParseListenAddress("host:").ok());
  EXPECT_FALSE(ParseListenAddress("host:70000").ok());
  EXPECT_FALSE(ParseListenAddress("::1:80").ok());
}

TEST(Url, Query) {
  auto t = SplitTarget("/a/b?x=1&search=name%3D%27a+b%27");
  EXPECT_EQ(t.path, "/a/b");
  auto params = ParseQuery(t.query);
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[1].value, "name='a b'");
  EXPECT_EQ(FindQueryParam(t.query, "x"), "1");
  EXPECT_EQ(FindQueryParam(t.query, "nope"), std::nullopt);
  EXPECT_EQ(DecodeQueryComponent(EncodeQueryComponent("a b/'=%")), "a b/'=%");
}

TEST(Server, RoundTripAndKeepAlive) {
  auto server = StartOrDie({}, Echo);
  Client client;
  for (int i = 0; i < 10; ++i) {
    auto res = client.Send(Local(*server), MakeRequest(Verb::post, "/x?i=" + std::to_string(i), "hello"), 2s);
    ASSERT_TRUE(res.ok()) << res.error().ToString();
    EXPECT_EQ(res->result(), StatusCode::ok);
    EXPECT_EQ(res->body(), "POST /x?i=" + std::to_string(i) + " hello");
    EXPECT_EQ((*res)[Field::server], "hcprp");
  }
  EXPECT_EQ(client.connections_opened(), 1u);
  EXPECT_EQ(server->connection_count(), 1u);
  // Absolute-URL form.
  auto res =
      client.Send(MakeRequest(Verb::get, "http://127.0.0.1:" + std::to_string(server->port()) + "/abs"), 2s);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->body(), "GET /abs ");
  EXPECT_EQ(client.connections_opened(), 1u);
}

TEST(Server, HandlerMayCloseTheConnection) {
  auto server = StartOrDie({}, [](Request&&) {
    Response res = MakeResponse(StatusCode::ok, "bye");
    res.keep_alive(false);
    return res;
  });
  Client client;
  for (int i = 0; i < 3; ++i) {
    auto res = client.Send(Local(*server), MakeRequest(Verb::get, "/"), 2s);
    ASSERT_TRUE(res.ok()) << res.error().ToString();
    EXPECT_FALSE(res->keep_alive());
  }
  EXPECT_EQ(client.connections_opened(), 3u);
}

TEST(Server, PeerHandlerSeesAddress) {
  auto s = Server::Start(ServerOptions{}, [](Request&&, const Peer& peer) {
    return MakeResponse(StatusCode::ok, peer.address);
  });
  ASSERT_TRUE(s.ok());
  Client client;
  auto res = client.Send(Local(**s), MakeRequest(Verb::get, "/"), 2s);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->body(), "127.0.0.1");
}

TEST(Server, HandlerExceptionIs500) {
  auto server = StartOrDie({}, [](Request&&) -> Response { throw std::runtime_error("boom"); });
  Client client;
  auto res = client.Send(Local(*server), MakeRequest(Verb::get, "/"), 2s);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->result(), StatusCode::internal_server_error);
}

TEST(Server, BodyLimitAnsweredThroughOnTooLarge) {
  ServerOptions o;
  o.max_body_bytes = 1024;
  o.on_too_large = [](const Request& hdr) {
    return JsonResponse(StatusCode::payload_too_large,
                        R"({"error":"too large","target":")" + std::string(hdr.target()) + "\"}");
  };
  auto server = StartOrDie(o, Echo);
  Client client;
  auto ok = client.Send(Local(*server), MakeRequest(Verb::post, "/small", std::string(1024, 'a')), 2s);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->result(), StatusCode::ok);
  auto big =
      client.Send(Local(*server), MakeRequest(Verb::post, "/big", std::string(5 * 1024 * 1024, 'a')), 5s);
  ASSERT_TRUE(big.ok()) << big.error().ToString();
  EXPECT_EQ(big->result(), StatusCode::payload_too_large);
  EXPECT_EQ(big->body(), R"({"error":"too large","target":"/big"})");
  EXPECT_FALSE(big->keep_alive());
  // The client recovers with a new connection.
  auto again = client.Send(Local(*server), MakeRequest(Verb::get, "/after"), 2s);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->result(), StatusCode::ok);
}

TEST(Server, DefaultTooLargeIs413) {
  ServerOptions o;
  o.max_body_bytes = 10;
  auto server = StartOrDie(o, Echo);
  Client client;
  auto big = client.Send(Local(*server), MakeRequest(Verb::put, "/big", std::string(100, 'a')), 2s);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->result(), StatusCode::payload_too_large);
}

TEST(Server, HeaderLimitIs431) {
  auto server = StartOrDie({}, Echo);
  Client client;
  auto req = MakeRequest(Verb::get, "/");
  req.set("X-Big", std::string(20 * 1024, 'h'));
  auto res = client.Send(Local(*server), req, 2s);
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->result(), StatusCode::request_header_fields_too_large);
}

TEST(Client, ConnectionRefusedIsUnavailable) {
  uint16_t port;
  {
    auto server = StartOrDie({}, Echo);
    port = server->port();
    server->Stop();
  }
  Client client;
  auto res = client.Send({"127.0.0.1", port}, MakeRequest(Verb::get, "/"), 1s);
  ASSERT_FALSE(res.ok());
  EXPECT_TRUE(res.error().Is(ErrorCode::kUnavailable)) << res.error().ToString();
}

TEST(Client, ReadTimeoutIsTimeout) {
  auto server = StartOrDie({}, [](Request&&) {
    std::this_thread::sleep_for(400ms);
    return MakeResponse(StatusCode::ok, "late");
  });
  Client client;
  auto start = std::chrono::steady_clock::now();
  auto res = client.Send(Local(*server), MakeRequest(Verb::get, "/"), 100ms);
  ASSERT_FALSE(res.ok());
  EXPECT_TRUE(res.error().Is(ErrorCode::kTimeout)) << res.error().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 350ms);
}

// A request given up on is reset, not closed with a FIN: what the kernel had not sent is dropped
// instead of reaching the server later. The server's small receive window keeps most of the request
// in the client until the client gives up.
TEST(Client, RequestGivenUpOnIsResetNotDeliveredLater) {
  namespace asio = boost::asio;
  asio::io_context ioc;
  asio::ip::tcp::acceptor acceptor(ioc);
  acceptor.open(asio::ip::tcp::v4());
  acceptor.set_option(asio::socket_base::receive_buffer_size(4096));
  acceptor.bind({asio::ip::make_address("127.0.0.1"), 0});
  acceptor.listen();
  const uint16_t port = acceptor.local_endpoint().port();
  const std::string body(1 << 20, 'x');
  std::thread sender([&] {
    Client client;
    auto res = client.Send({"127.0.0.1", port}, MakeRequest(Verb::post, "/", body), 200ms);
    ASSERT_FALSE(res.ok());
    EXPECT_TRUE(res.error().Is(ErrorCode::kTimeout)) << res.error().ToString();
  });
  asio::ip::tcp::socket peer(ioc);
  acceptor.accept(peer);
  sender.join();  // the client gave up before the server read anything
  std::vector<char> buf(64 * 1024);
  size_t received = 0;
  boost::system::error_code ec;
  while (!ec) received += peer.read_some(asio::buffer(buf), ec);
  EXPECT_EQ(ec, asio::error::connection_reset) << ec.message();
  EXPECT_LT(received, body.size());
}

TEST(Client, StalePooledConnectionIsReplaced) {
  ServerOptions o;
  o.idle_timeout = 100ms;
  auto server = StartOrDie(o, Echo);
  Client client;
  ASSERT_TRUE(client.Send(Local(*server), MakeRequest(Verb::post, "/1", "a"), 2s).ok());
  std::this_thread::sleep_for(300ms);  // the server closes the idle connection
  auto res = client.Send(Local(*server), MakeRequest(Verb::post, "/2", "b"), 2s);
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->body(), "POST /2 b");
  EXPECT_EQ(client.connections_opened(), 2u);
}

// A raw socket that sends only part of a request is closed after the read timeout.
TEST(Server, ReadTimeoutClosesSlowClient) {
  ServerOptions o;
  o.read_timeout = 150ms;
  auto server = StartOrDie(o, Echo);
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket sock(ioc);
  sock.connect({boost::asio::ip::make_address("127.0.0.1"), server->port()});
  boost::asio::write(sock, boost::asio::buffer(std::string("GET / HTTP/1.1\r\nHost: x\r\n")));
  auto start = std::chrono::steady_clock::now();
  char buf[256];
  boost::system::error_code ec;
  sock.read_some(boost::asio::buffer(buf), ec);  // blocks until the server closes
  EXPECT_TRUE(ec);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 2s);
}

// Sends `raw` on a new connection and returns everything the server answers until it closes.
std::string RawExchange(const Server& server, const std::string& raw) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket sock(ioc);
  sock.connect({boost::asio::ip::make_address("127.0.0.1"), server.port()});
  boost::asio::write(sock, boost::asio::buffer(raw));
  std::string out;
  char buf[4096];
  boost::system::error_code ec;
  while (!ec) {
    size_t n = sock.read_some(boost::asio::buffer(buf), ec);
    out.append(buf, n);
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// A caller refused on its headers gets its answer at once: no "100 Continue", its body (announced but
// never sent here) is not waited for, the handler does not run and the connection is closed.
TEST(Server, ScreenRefusesOnTheHeadersWithoutReadingTheBody) {
  ServerOptions o;
  o.read_timeout = 10s;
  o.screen = [](const Request& header) -> std::optional<Response> {
    if (BearerToken(header) == "good-token") return std::nullopt;
    return MakeResponse(StatusCode::unauthorized, "no\n", "text/plain");
  };
  std::atomic<int> handled{0};
  auto server = Server::Start(o, [&](Request&& r) {
    ++handled;
    return MakeResponse(StatusCode::ok, std::to_string(r.body().size()), "text/plain");
  });
  ASSERT_TRUE(server.ok());
  const auto start = std::chrono::steady_clock::now();
  std::string answer = RawExchange(
      **server,
      "POST /admin/x HTTP/1.1\r\nHost: x\r\nContent-Length: 4000000\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 401")) << answer;
  EXPECT_EQ(answer.find("100 Continue"), std::string::npos) << answer;
  EXPECT_EQ(handled.load(), 0);
  answer = RawExchange(**server,
                       "POST /admin/x HTTP/1.1\r\nHost: x\r\nAuthorization: bEaReR good-token\r\n"
                       "Content-Length: 3\r\nConnection: close\r\n\r\nabc");
  EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 200")) << answer;
  EXPECT_EQ(handled.load(), 1);
  (*server)->Stop();
}

TEST(Message, BearerTokenSchemeIsCaseInsensitive) {
  Request r = MakeRequest(Verb::get, "/");
  EXPECT_EQ(BearerToken(r), "");
  for (const char* v : {"Bearer abc", "bearer abc", "BEARER  abc "}) {
    r.set(Field::authorization, v);
    EXPECT_EQ(BearerToken(r), "abc") << v;
  }
  for (const char* v : {"Basic abc", "Bearerabc", "Bearer", "Bearer "}) {
    r.set(Field::authorization, v);
    EXPECT_EQ(BearerToken(r), "") << v;
  }
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
}

// RFC 9112 section 6.3: framing that a proxy and this server could read differently is refused and
// the connection closed, so nothing after it is taken for a second request (request smuggling).
TEST(Server, AmbiguousFramingIs400AndCloses) {
  std::atomic<int> handled{0};
  auto server = StartOrDie({}, [&](Request&& r) {
    ++handled;
    return Echo(std::move(r));
  });
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string cases[] = {
      // A final coding that is not chunked, with a Content-Length that would frame it.
      "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\nContent-Length: 3\r\n\r\nabc" + smuggled,
      // Both headers, chunked last.
      "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n0\r\n\r\n" +
          smuggled,
      // chunked not last.
      "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n" +
          smuggled,
      // HTTP/1.1 without Host, and with two.
      "GET /a HTTP/1.1\r\n\r\n" + smuggled,
      "GET /a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n" + smuggled,
  };
  for (const auto& raw : cases) {
    std::string answer = RawExchange(*server, raw);
    EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 400")) << raw << "\n-> " << answer;
    EXPECT_EQ(answer.find("HTTP/1.1 200"), std::string::npos) << raw << "\n-> " << answer;
  }
  EXPECT_EQ(handled.load(), 0);

  // What the rules allow still works: chunked alone, Content-Length alone, HTTP/1.0 without Host.
  std::string chunked =
      RawExchange(*server,
                  "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                  "3\r\nabc\r\n0\r\n\r\n");
  EXPECT_TRUE(StartsWith(chunked, "HTTP/1.1 200")) << chunked;
  EXPECT_NE(chunked.find("POST /c abc"), std::string::npos) << chunked;
  std::string old = RawExchange(*server, "GET /old HTTP/1.0\r\n\r\n");
  EXPECT_TRUE(StartsWith(old, "HTTP/1.0 200")) << old;
  EXPECT_EQ(handled.load(), 2);
}

// A connection beyond max_connections gets on_overloaded's answer; the ones within keep working.
TEST(Server, ConnectionsOverTheCapAreAnswered503) {
  ServerOptions o;
  o.max_connections = 2;
  o.on_overloaded = [] {
    Response r = MakeResponse(StatusCode::service_unavailable, "busy", "text/plain");
    r.set(Field::retry_after, "7");
    return r;
  };
  auto server = StartOrDie(o, Echo);
  boost::asio::io_context ioc;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::socket>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<boost::asio::ip::tcp::socket>(ioc));
    held.back()->connect({boost::asio::ip::make_address("127.0.0.1"), server->port()});
  }
  for (int i = 0; i < 100 && server->connection_count() < 2; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(server->connection_count(), 2u);
  std::string refused = RawExchange(*server, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(StartsWith(refused, "HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("Retry-After: 7"), std::string::npos) << refused;
  EXPECT_EQ(server->connection_count(), 2u);
  // A held connection is served.
  boost::asio::write(*held[0], boost::asio::buffer(std::string("GET /held HTTP/1.1\r\nHost: x\r\n\r\n")));
  char buf[512];
  size_t n = held[0]->read_some(boost::asio::buffer(buf));
  EXPECT_TRUE(StartsWith(std::string_view(buf, n), "HTTP/1.1 200")) << std::string(buf, n);
  // Once one closes, a new connection is accepted again.
  held[1]->close();
  for (int i = 0; i < 100 && server->connection_count() > 1; ++i) std::this_thread::sleep_for(10ms);
  Client client;
  auto again = client.Send(Local(*server), MakeRequest(Verb::get, "/again"), 2s);
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(again->result(), StatusCode::ok);
}

TEST(Server, IdleTimeoutClosesKeepAliveConnections) {
  ServerOptions o;
  o.idle_timeout = 100ms;
  auto server = StartOrDie(o, Echo);
  Client client;
  ASSERT_TRUE(client.Send(Local(*server), MakeRequest(Verb::get, "/"), 2s).ok());
  EXPECT_EQ(server->connection_count(), 1u);
  for (int i = 0; i < 100 && server->connection_count() != 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(server->connection_count(), 0u);
}

TEST(Server, ConcurrentClients) {
  std::atomic<int> served{0};
  ServerOptions o;
  o.io_threads = 2;
  o.threads = 4;
  auto server = StartOrDie(o, [&](Request&& r) {
    served.fetch_add(1);
    return Echo(std::move(r));
  });
  Client client;  // shared by every thread
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string body = std::to_string(t) + "-" + std::to_string(i);
        auto res = client.Send(Local(*server), MakeRequest(Verb::post, "/c", body), 5s);
        if (!res.ok() || res->body() != "POST /c " + body) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(served.load(), 400);
  EXPECT_LE(client.connections_opened(), 8u);
}

// With one warm worker, a handler blocked on a long-poll must not stall other connections.
TEST(Server, BlockedHandlerDoesNotStallOthers) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  ServerOptions o;
  o.threads = 1;
  auto server = StartOrDie(o, [&](Request&& r) {
    if (r.target() == "/block") {
      std::unique_lock lock(mu);
      cv.wait_for(lock, 5s, [&] { return release; });
    }
    return MakeResponse(StatusCode::ok, std::string(r.target()));
  });
  Client client;
  std::vector<std::future<Result<Response>>> blocked;
  for (int i = 0; i < 3; ++i) {
    blocked.push_back(std::async(std::launch::async, [&] {
      return client.Send(Local(*server), MakeRequest(Verb::get, "/block"), 10s);
    }));
  }
  std::this_thread::sleep_for(100ms);
  auto start = std::chrono::steady_clock::now();
  auto res = client.Send(Local(*server), MakeRequest(Verb::get, "/fast"), 2s);
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->body(), "/fast");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& f : blocked) {
    auto r = f.get();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->body(), "/block");
  }
}

TEST(Server, GracefulStopFinishesInFlightRequest) {
  std::promise<void> entered;
  auto server = StartOrDie({}, [&](Request&& r) {
    if (r.target() == "/slow") {
      entered.set_value();
      std::this_thread::sleep_for(300ms);
    }
    return MakeResponse(StatusCode::ok, "done");
  });
  Client idle_client;
  ASSERT_TRUE(idle_client.Send(Local(*server), MakeRequest(Verb::get, "/warm"), 2s).ok());
  Client client;
  auto inflight = std::async(
      std::launch::async, [&] { return client.Send(Local(*server), MakeRequest(Verb::get, "/slow"), 5s); });
  entered.get_future().wait();
  auto port = server->port();
  auto start = std::chrono::steady_clock::now();
  server->Stop(5s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  auto res = inflight.get();
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->body(), "done");
  EXPECT_FALSE(res->keep_alive());
  EXPECT_EQ(server->connection_count(), 0u);
  Client after;
  auto refused = after.Send({"127.0.0.1", port}, MakeRequest(Verb::get, "/"), 1s);
  EXPECT_FALSE(refused.ok());
}

TEST(Server, StopDeadlineClosesSlowRequests) {
  auto server = StartOrDie({}, [&](Request&&) {
    std::this_thread::sleep_for(500ms);
    return MakeResponse(StatusCode::ok, "done");
  });
  Client client;
  auto inflight = std::async(
      std::launch::async, [&] { return client.Send(Local(*server), MakeRequest(Verb::get, "/slow"), 5s); });
  std::this_thread::sleep_for(100ms);
  server->Stop(50ms);
  auto res = inflight.get();
  EXPECT_FALSE(res.ok());
}

TEST(Retry, RetriesFiveHundredsWithBackoff) {
  std::atomic<int> calls{0};
  auto server = StartOrDie({}, [&](Request&&) {
    int n = calls.fetch_add(1);
    if (n < 2) return MakeResponse(StatusCode::service_unavailable, "busy");
    return MakeResponse(StatusCode::ok, "ok");
  });
  Client client;
  std::vector<std::chrono::milliseconds> sleeps;
  RetryPolicy p;
  p.sleep = [&](std::chrono::milliseconds d) { sleeps.push_back(d); };
  p.random = [] { return 0.999; };
  auto res = SendWithRetry(client, Local(*server), MakeRequest(Verb::get, "/"), 2s, p);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->result(), StatusCode::ok);
  EXPECT_EQ(calls.load(), 3);
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_EQ(sleeps[0], 99ms);
  EXPECT_EQ(sleeps[1], 199ms);

  // POST is not retried unless the caller says it is safe.
  calls = 0;
  auto post = SendWithRetry(client, Local(*server), MakeRequest(Verb::post, "/", "x"), 2s, p);
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->result(), StatusCode::service_unavailable);
  EXPECT_EQ(calls.load(), 1);
  calls = 0;
  p.retry_non_idempotent = true;
  post = SendWithRetry(client, Local(*server), MakeRequest(Verb::post, "/", "x"), 2s, p);
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->result(), StatusCode::ok);
}

TEST(Retry, GivesUpAfterMaxAttempts) {
  Client client;
  uint16_t port;
  {
    auto server = StartOrDie({}, Echo);
    port = server->port();
  }
  int sleeps = 0;
  RetryPolicy p;
  p.max_attempts = 3;
  p.sleep = [&](std::chrono::milliseconds) { ++sleeps; };
  auto res = SendWithRetry(client, {"127.0.0.1", port}, MakeRequest(Verb::get, "/"), 1s, p);
  ASSERT_FALSE(res.ok());
  EXPECT_TRUE(res.error().Is(ErrorCode::kUnavailable));
  EXPECT_EQ(sleeps, 2);
}

TEST(Retry, BackoffIsCapped) {
  RetryPolicy p;
  p.random = [] { return 0.5; };
  EXPECT_EQ(BackoffDelay(p, 1), 50ms);
  EXPECT_EQ(BackoffDelay(p, 10), 1000ms);
}

}  // namespace
}  // namespace hcprp::http
