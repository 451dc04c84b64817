// The HTTPS listener: ARM client-certificate authentication, rotation of the trusted set and of the
// server certificate, plaintext and stalled clients, mutual TLS, and the request path fuzzed through a
// TLS client.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/clock.h"
#include "http/client.h"
#include "http/server.h"
#include "pki/x509.h"
#include "tls/arm_trust.h"
#include "tls/context.h"
#include "tls/local_ca.h"

namespace hcprp::http {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string ReadAll(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& p, const std::string& data) {
  std::string tmp = p + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << data;
  }
  fs::rename(tmp, p);
}

struct Files {
  std::string cert, key;
};

// A listener with the local CA's files, a handler that counts its calls and echoes the identity header
// it was given, and client certificates of every kind.
class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("hcprp-https-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    auto f = tls::EnsureLocalFiles(dir_, clock_);
    ASSERT_TRUE(f.ok()) << f.error().message();
    files_ = *f;
    const TimePoint now = clock_.Now();
    pki::CertificateAuthority ca{ReadAll(files_.ca_key), ReadAll(files_.ca)};
    // Expired: signed by the trusted CA and listed in the trusted set, but its validity has ended.
    auto expired = pki::IssueCertificate(ca, "old ARM", pki::Usage::kClient, {}, {}, now - 48h, now - 24h);
    ASSERT_TRUE(expired.ok());
    expired_ = Save("expired", *expired);
    // Another CA's certificate with the same subject as the trusted one.
    auto other_ca = pki::NewCertificateAuthority("hcprp local CA", now - 1h, 24h);
    ASSERT_TRUE(other_ca.ok());
    auto other =
        pki::IssueCertificate(*other_ca, "hcprp local ARM", pki::Usage::kClient, {}, {}, now - 1h, now + 24h);
    ASSERT_TRUE(other.ok());
    other_ = Save("other", *other);
    auto doc = tls::TrustedSetDocument({ReadAll(files_.client_cert), expired->cert_pem});
    ASSERT_TRUE(doc.ok());
    WriteAll(files_.trusted_set, *doc);
  }

  void TearDown() override {
    if (server_) server_->Stop(1s);
    fs::remove_all(dir_);
  }

  Files Save(const std::string& name, const pki::KeyAndCertificate& kc) {
    Files f{dir_ + "/" + name + ".pem", dir_ + "/" + name + "-key.pem"};
    WriteAll(f.cert, kc.cert_pem);
    WriteAll(f.key, kc.key_pem);
    return f;
  }

  // Starts the ARM-style listener (client certificate asked for, then matched against the trusted set).
  void StartArmListener(ServerOptions o = {}) {
    auto ctx = tls::ServerContext::Load({files_.server_cert, files_.server_key, "", true});
    ASSERT_TRUE(ctx.ok()) << ctx.error().message();
    auto auth = tls::ArmAuthenticator::Load(files_.trusted_set, &clock_);
    ASSERT_TRUE(auth.ok()) << auth.error().message();
    auth_ = std::move(*auth);
    o.tls.context = std::move(*ctx);
    o.tls.authenticate = [this](const tls::PeerCertificate* p) -> std::optional<Refusal> {
      if (auto r = auth_->Check(p)) return Refusal{std::string(tls::RefusalName(*r))};
      return std::nullopt;
    };
    o.tls.on_refused = [this](const Request&, const Refusal& r, const Peer&) {
      refusals_.push_back(r.reason);
      return MakeResponse(StatusCode::unauthorized, "refused " + r.reason, "text/plain");
    };
    StartWith(std::move(o));
  }

  void StartWith(ServerOptions o) {
    auto s = Server::Start(o, [this](Request&& req) {
      calls_.fetch_add(1);
      return MakeResponse(StatusCode::ok, "caller " + std::string(req["x-ms-client-object-id"]),
                          "text/plain");
    });
    ASSERT_TRUE(s.ok()) << s.error().message();
    server_ = std::move(*s);
  }

  std::unique_ptr<Client> ClientWith(const std::string& cert, const std::string& key,
                                     const std::string& ca = "") {
    auto ctx = tls::ClientContext::Load({ca.empty() ? files_.ca : ca, cert, key});
    EXPECT_TRUE(ctx.ok()) << ctx.error().message();
    ClientOptions o;
    o.tls = std::move(*ctx);
    return std::make_unique<Client>(o);
  }

  Result<Response> Get(Client& c, const std::string& path = "/subscriptions/x") {
    Request req = MakeRequest(Verb::get, path, "");
    req.set("x-ms-client-object-id", "mallory");
    return c.Send(Endpoint{"127.0.0.1", server_->port()}, std::move(req), 5s);
  }

  SystemClock clock_;
  std::string dir_;
  tls::LocalFiles files_;
  Files expired_, other_;
  std::unique_ptr<tls::ArmAuthenticator> auth_;
  std::unique_ptr<Server> server_;
  std::atomic<int> calls_{0};
  std::vector<std::string> refusals_;  // only touched by the single worker of a refusal at a time
};

TEST_F(TlsServerTest, TrustedArmCertificateReachesTheHandler) {
  StartArmListener();
  auto c = ClientWith(files_.client_cert, files_.client_key);
  auto r = Get(*c);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->result_int(), 200);
  EXPECT_EQ(r->body(), "caller mallory");
  EXPECT_EQ(calls_.load(), 1);
  // Keep-alive over TLS: the second request reuses the connection.
  ASSERT_TRUE(Get(*c).ok());
  EXPECT_EQ(c->connections_opened(), 1u);
}

TEST_F(TlsServerTest, CallersWithoutATrustedCertificateNeverReachTheHandler) {
  StartArmListener();
  struct Case {
    std::string cert, key, reason;
  };
  for (const auto& k : {Case{"", "", "no_certificate"}, Case{other_.cert, other_.key, "unknown_certificate"},
                        Case{expired_.cert, expired_.key, "expired"},
                        Case{files_.server_cert, files_.server_key, "unknown_certificate"}}) {
    SCOPED_TRACE(k.reason);
    auto c = ClientWith(k.cert, k.key);
    auto r = Get(*c);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->result_int(), 401);
    EXPECT_EQ(r->body(), "refused " + k.reason);
    EXPECT_FALSE(r->keep_alive());
  }
  // The identity headers of these callers were never handed to a handler.
  EXPECT_EQ(calls_.load(), 0);
  EXPECT_EQ(refusals_.size(), 4u);
}

TEST_F(TlsServerTest, HealthProbesNeedNoCertificate) {
  StartArmListener();
  auto c = ClientWith("", "");
  auto r = Get(*c, "/healthz");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result_int(), 200);
  r = Get(*c, "/readyz?verbose=1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result_int(), 200);
  EXPECT_EQ(calls_.load(), 2);
  // ... but a probe does not open the rest of the API on the same connection.
  r = Get(*c, "/subscriptions/x");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result_int(), 401);
  EXPECT_EQ(calls_.load(), 2);
}

TEST_F(TlsServerTest, TrustedSetRotatesWithoutRestart) {
  ServerOptions o;
  o.tls.recheck_interval = std::chrono::milliseconds(0);  // keep-alive connections judged on every request
  StartArmListener(o);
  auto old_client = ClientWith(files_.client_cert, files_.client_key);
  auto new_client = ClientWith(other_.cert, other_.key);
  ASSERT_EQ(Get(*old_client)->result_int(), 200);
  ASSERT_EQ(Get(*new_client)->result_int(), 401);
  // ARM rotates: the metadata now lists the new certificate only.
  auto doc = tls::TrustedSetDocument({ReadAll(other_.cert)});
  ASSERT_TRUE(doc.ok());
  WriteAll(files_.trusted_set, *doc);
  // The old certificate's keep-alive connection does not outlive the trust.
  EXPECT_EQ(old_client->connections_opened(), 1u);
  EXPECT_EQ(Get(*old_client)->result_int(), 401);
  EXPECT_EQ(old_client->connections_opened(), 1u);
  EXPECT_EQ(Get(*new_client)->result_int(), 200);
}

TEST_F(TlsServerTest, ServerCertificateRotatesWithoutRestart) {
  StartArmListener();
  auto c = ClientWith(files_.client_cert, files_.client_key);
  ASSERT_EQ(Get(*c)->result_int(), 200);
  // A new server certificate from another CA: clients that trust only the old CA now fail to verify,
  // clients of the new CA succeed.
  auto now = clock_.Now();
  auto ca2 = pki::NewCertificateAuthority("second CA", now - 1h, 24h);
  ASSERT_TRUE(ca2.ok());
  auto cert2 = pki::IssueCertificate(*ca2, "localhost", pki::Usage::kServer, {"localhost"}, {"127.0.0.1"},
                                     now - 1h, now + 24h);
  ASSERT_TRUE(cert2.ok());
  WriteAll(dir_ + "/ca2.pem", ca2->cert_pem);
  WriteAll(files_.server_key, cert2->key_pem);
  WriteAll(files_.server_cert, cert2->cert_pem);
  c->CloseIdle();
  auto stale = Get(*c);
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.error().message().find("certificate verify failed"), std::string::npos)
      << stale.error().message();
  auto fresh = ClientWith(files_.client_cert, files_.client_key, dir_ + "/ca2.pem");
  auto r = Get(*fresh);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->result_int(), 200);
}

TEST_F(TlsServerTest, PlaintextRequestOnTheTlsPortIsAnswered400) {
  StartArmListener();
  Client plain;
  auto r =
      plain.Send(Endpoint{"127.0.0.1", server_->port()}, MakeRequest(Verb::get, "/subscriptions/x", ""), 5s);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->result_int(), 400);
  EXPECT_NE(r->body().find("HTTPS"), std::string::npos);
  EXPECT_EQ(calls_.load(), 0);
}

int ConnectRaw(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

TEST_F(TlsServerTest, StalledHandshakesDoNotBlockOtherClients) {
  ServerOptions o;
  o.io_threads = 1;
  o.tls.handshake_timeout = 500ms;
  StartArmListener(o);
  // Slowloris over TLS: connections that send the first bytes of a ClientHello and then nothing.
  std::vector<int> stalled;
  for (int i = 0; i < 50; ++i) {
    int fd = ConnectRaw(server_->port());
    ASSERT_GE(fd, 0);
    const unsigned char partial[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01};
    ASSERT_EQ(::send(fd, partial, sizeof(partial), 0), static_cast<ssize_t>(sizeof(partial)));
    stalled.push_back(fd);
  }
  auto c = ClientWith(files_.client_cert, files_.client_key);
  auto r = Get(*c);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->result_int(), 200);
  // The stalled handshakes are closed by the handshake timeout.
  char byte;
  for (int fd : stalled) {
    EXPECT_LE(::recv(fd, &byte, 1, 0), 0);
    ::close(fd);
  }
}

TEST_F(TlsServerTest, MutualTlsRefusesAClientWithoutACertificateOfItsCa) {
  ServerOptions o;
  auto ctx = tls::ServerContext::Load({files_.server_cert, files_.server_key, files_.ca, false});
  ASSERT_TRUE(ctx.ok());
  o.tls.context = std::move(*ctx);
  StartWith(o);
  auto none = ClientWith("", "");
  EXPECT_FALSE(Get(*none).ok());
  auto other = ClientWith(other_.cert, other_.key);
  EXPECT_FALSE(Get(*other).ok());
  auto rp = ClientWith(files_.rp_client_cert, files_.rp_client_key);
  auto r = Get(*rp);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->result_int(), 200);
  EXPECT_EQ(calls_.load(), 1);
}

TEST_F(TlsServerTest, ClientChecksTheServerHostName) {
  // A certificate for another name, from the trusted CA.
  pki::CertificateAuthority ca{ReadAll(files_.ca_key), ReadAll(files_.ca)};
  auto now = clock_.Now();
  auto wrong = pki::IssueCertificate(ca, "elsewhere", pki::Usage::kServer, {"elsewhere.invalid"},
                                     {"10.9.9.9"}, now - 1h, now + 24h);
  ASSERT_TRUE(wrong.ok());
  WriteAll(files_.server_key, wrong->key_pem);
  WriteAll(files_.server_cert, wrong->cert_pem);
  StartArmListener();
  auto c = ClientWith(files_.client_cert, files_.client_key);
  auto r = Get(*c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("certificate verify failed"), std::string::npos) << r.error().message();
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(TlsServerTest, NewConnectionsResumeTheTlsSession) {
  StartArmListener();
  auto c = ClientWith(files_.client_cert, files_.client_key);
  ASSERT_EQ(Get(*c)->result_int(), 200);
  c->CloseIdle();
  ASSERT_EQ(Get(*c)->result_int(), 200);
  EXPECT_EQ(c->connections_opened(), 2u);
  EXPECT_EQ(c->sessions_resumed(), 1u);
}

// Sends `bytes` over a TLS connection presenting the trusted client certificate and returns what the
// server answered before closing (or before three seconds of silence).
std::string RawTlsExchange(uint16_t port, const tls::LocalFiles& f, const std::string& bytes) {
  std::signal(SIGPIPE, SIG_IGN);  // the server may close before all of `bytes` is written
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(ctx, f.ca.c_str(), nullptr);
  SSL_CTX_use_certificate_file(ctx, f.client_cert.c_str(), SSL_FILETYPE_PEM);
  SSL_CTX_use_PrivateKey_file(ctx, f.client_key.c_str(), SSL_FILETYPE_PEM);
  int fd = ConnectRaw(port);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  std::string out;
  if (SSL_connect(ssl) == 1) {
    SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size()));
    ::shutdown(fd, SHUT_WR);  // no more requests: the server answers what it has, then closes
    char buf[4096];
    for (;;) {
      int n = SSL_read(ssl, buf, sizeof(buf));
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  } else {
    out = "<handshake failed>";
  }
  ERR_clear_error();
  SSL_free(ssl);
  ::close(fd);
  SSL_CTX_free(ctx);
  return out;
}

TEST_F(TlsServerTest, FuzzCorpusThroughTheTlsListener) {
  ServerOptions o;
  o.read_timeout = 1s;
  o.max_body_bytes = 64 * 1024;
  StartArmListener(o);
  const std::string corpus = std::string(HCPRP_SOURCE_DIR) + "/src/api/fuzz/corpus";
  std::vector<std::string> inputs = {
      "GET / HTTP/1.1\r\n\r\n",
      "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\n\r\n",
      "\x16\x03\x01 garbage inside TLS\r\n\r\n",
      std::string(20000, 'A') + "\r\n\r\n",
  };
  size_t seeds = 0;
  for (const auto& e : fs::directory_iterator(corpus)) {
    const std::string seed = ReadAll(e.path().string());
    ++seeds;
    // As frontend_fuzz reads it: first byte the method, up to '\n' the target, the rest the body.
    const auto nl = seed.find('\n');
    const std::string target = "/" + seed.substr(1, std::min<size_t>(nl == std::string::npos ? 64 : nl, 64));
    const std::string body = nl == std::string::npos ? seed : seed.substr(nl + 1);
    std::string request = "PUT " + target + " HTTP/1.1\r\nHost: h\r\nContent-Length: ";
    request.append(std::to_string(body.size())).append("\r\n\r\n").append(body);
    inputs.push_back(std::move(request));
    inputs.push_back(seed);                             // the seed as raw bytes
    inputs.push_back(seed.substr(0, seed.size() / 2));  // and truncated
    inputs.push_back("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(seed.size() + 10) +
                     "\r\n\r\n" + seed);  // a body shorter than announced
  }
  ASSERT_GT(seeds, 0u);
  for (const auto& in : inputs) {
    std::string answer = RawTlsExchange(server_->port(), files_, in);
    EXPECT_TRUE(answer.empty() || answer.rfind("HTTP/1.1 ", 0) == 0) << answer.substr(0, 200);
  }
  // The listener still serves.
  auto c = ClientWith(files_.client_cert, files_.client_key);
  auto r = Get(*c);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->result_int(), 200);
}

}  // namespace
}  // namespace hcprp::http
