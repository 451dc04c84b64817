#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/time.h"
#include "pki/x509.h"
#include "tls/arm_metadata.h"
#include "tls/arm_trust.h"
#include "tls/atomic_file.h"
#include "tls/context.h"
#include "tls/local_ca.h"
#include "tls/peer_certificate.h"

namespace hcprp::tls {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("hcprp-tls-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d.string();
}

std::string ReadAll(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& p, const std::string& data) {
  std::ofstream out(p, std::ios::trunc);
  out << data;
}

TEST(LocalFiles, FirstStartCreatesEveryFileAndKeepsThemAfterwards) {
  SystemClock clock;
  std::string dir = TempDir("local");
  auto files = EnsureLocalFiles(dir, clock);
  ASSERT_TRUE(files.ok()) << files.error().message();
  for (const auto& p : {files->ca, files->ca_key, files->server_cert, files->server_key, files->client_cert,
                        files->client_key, files->trusted_set, files->rp_client_cert, files->rp_client_key,
                        files->control_token}) {
    EXPECT_TRUE(fs::exists(p)) << p;
  }
  EXPECT_EQ(fs::status(files->ca_key).permissions() & fs::perms::group_read, fs::perms::none);
  pki::CertificateAuthority ca{ReadAll(files->ca_key), ReadAll(files->ca)};
  EXPECT_TRUE(pki::VerifyCertificate(ca, ReadAll(files->server_cert), clock.Now()).ok());
  EXPECT_TRUE(pki::VerifyCertificate(ca, ReadAll(files->client_cert), clock.Now()).ok());
  const std::string server_before = ReadAll(files->server_cert);
  ASSERT_TRUE(EnsureLocalFiles(dir, clock).ok());
  EXPECT_EQ(ReadAll(files->server_cert), server_before);
  // The generated trusted set trusts the generated ARM client certificate and nothing else.
  auto auth = ArmAuthenticator::Load(files->trusted_set, &clock);
  ASSERT_TRUE(auth.ok()) << auth.error().message();
  EXPECT_EQ((*auth)->trusted_count(), 1u);
  PeerCertificate peer;
  peer.thumbprint = *pki::Thumbprint(ReadAll(files->client_cert));
  peer.not_before = clock.Now() - std::chrono::hours(1);
  peer.not_after = clock.Now() + std::chrono::hours(1);
  EXPECT_EQ((*auth)->Check(&peer), std::nullopt);
  peer.thumbprint = *pki::Thumbprint(ReadAll(files->server_cert));
  EXPECT_EQ((*auth)->Check(&peer), Refusal::kUnknownCertificate);
  EXPECT_EQ((*auth)->Check(nullptr), Refusal::kNoCertificate);
  fs::remove_all(dir);
}

TEST(LocalFiles, LeafCertificatesAreValidAtMost398Days) {
  SystemClock clock;
  auto files = EnsureLocalFiles(TempDir("validity"), clock);
  ASSERT_TRUE(files.ok()) << files.error().message();
  for (const auto& p : {files->server_cert, files->client_cert, files->rp_client_cert}) {
    auto info = pki::ParseCertificate(ReadAll(p));
    ASSERT_TRUE(info.ok()) << p;
    EXPECT_LE(info->not_after - info->not_before, std::chrono::hours(24 * 398)) << p;
    EXPECT_LE(info->not_before, clock.Now()) << p;
  }
}

PeerCertificate Named(std::string common_name, std::vector<std::string> dns_names) {
  PeerCertificate p;
  p.common_name = std::move(common_name);
  p.dns_names = std::move(dns_names);
  return p;
}

TEST(CertificateNamed, TheDnsNamesDecideWhenThereAreAny) {
  EXPECT_TRUE(CertificateNamed(Named("other", {"rp.example", "rp.internal"}), "rp.internal"));
  EXPECT_TRUE(CertificateNamed(Named("", {"RP.Example"}), "rp.example"));  // DNS names ignore ASCII case
  // A DNS name present: the common name no longer counts (RFC 6125, 6.4.4).
  EXPECT_FALSE(CertificateNamed(Named("rp.example", {"intruder.example"}), "rp.example"));
  EXPECT_FALSE(CertificateNamed(Named("rp.example", {"rp.example.evil"}), "rp.example"));
  EXPECT_FALSE(CertificateNamed(Named("x", {"*.example"}), "rp.example"));  // no wildcards
}

TEST(CertificateNamed, TheCommonNameCountsOnlyWithoutDnsNames) {
  EXPECT_TRUE(CertificateNamed(Named("hcprp resource provider", {}), "hcprp resource provider"));
  EXPECT_FALSE(CertificateNamed(Named("hcprp resource provider", {}), "HCPRP resource provider"));
  EXPECT_FALSE(CertificateNamed(Named("ARM", {}), "hcprp resource provider"));
  EXPECT_FALSE(CertificateNamed(Named("", {}), ""));
}

TEST(PeerCertificate, ReadsTheSubjectAltNamesDnsEntries) {
  SystemClock clock;
  const TimePoint now = clock.Now();
  auto ca = pki::NewCertificateAuthority("test CA", now, std::chrono::hours(24));
  ASSERT_TRUE(ca.ok()) << ca.error().message();
  auto server = pki::IssueCertificate(*ca, "rp.example", pki::Usage::kServer, {"rp.internal", "rp.example"},
                                      {"127.0.0.1"}, now, now + std::chrono::hours(1));
  ASSERT_TRUE(server.ok()) << server.error().message();
  auto peer = PeerCertificateOfPemForTest(server->cert_pem);
  ASSERT_TRUE(peer.ok()) << peer.error().message();
  EXPECT_EQ(peer->common_name, "rp.example");
  EXPECT_EQ(peer->dns_names, (std::vector<std::string>{"rp.internal", "rp.example"}));
  EXPECT_TRUE(CertificateNamed(*peer, "rp.internal"));
  // A client certificate of the local CA carries no DNS name: its common name names it.
  auto client = pki::IssueCertificate(*ca, "hcprp resource provider", pki::Usage::kClient, {}, {}, now,
                                      now + std::chrono::hours(1));
  ASSERT_TRUE(client.ok()) << client.error().message();
  auto rp = PeerCertificateOfPemForTest(client->cert_pem);
  ASSERT_TRUE(rp.ok()) << rp.error().message();
  EXPECT_TRUE(rp->dns_names.empty());
  EXPECT_TRUE(CertificateNamed(*rp, "hcprp resource provider"));
}

mode_t ModeOf(const std::string& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 0777;
}

TEST(AtomicFile, ASecretIsNeverWrittenIntoAFileSomeoneElseHasOpen) {
  std::string dir = TempDir("atomic");
  fs::create_directories(dir);
  std::string path = dir + "/admin-token";
  WriteAll(path, "");
  fs::permissions(path, fs::perms(0644));
  int reader = ::open(path.c_str(), O_RDONLY);  // opened while the file was readable by others
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(WriteFileAtomically(path, "s3cret\n", FileSecrecy::kSecret).ok());
  char buf[16] = {};
  EXPECT_EQ(::read(reader, buf, sizeof buf), 0) << "the old file received the secret";
  ::close(reader);
  EXPECT_EQ(ReadAll(path), "s3cret\n");
  EXPECT_EQ(ModeOf(path), 0600u);
  ASSERT_TRUE(WriteFileAtomically(dir + "/public", "x", FileSecrecy::kPublic).ok());
  EXPECT_EQ(ModeOf(dir + "/public") & 0600, 0600u);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2u) << "no temporary file is left behind";
}

TEST(TrustedSet, ParsesArmMetadataAndRefusesOtherShapes) {
  auto set =
      ParseTrustedSet(R"({"clientCertificates":[{"thumbprint":"ab:cd","notBefore":"2026-01-01T00:00:00Z",)"
                      R"("notAfter":"2027-01-01T00:00:00Z"}]})");
  ASSERT_TRUE(set.ok()) << set.error().message();
  ASSERT_EQ(set->size(), 1u);
  EXPECT_EQ((*set)[0].thumbprint, "ABCD");
  EXPECT_EQ(FormatRfc3339((*set)[0].not_after), "2027-01-01T00:00:00Z");
  EXPECT_FALSE(ParseTrustedSet("[]").ok());
  EXPECT_FALSE(ParseTrustedSet(R"({"clientCertificates":[{"notBefore":"2026-01-01T00:00:00Z"}]})").ok());
  EXPECT_FALSE(ParseTrustedSet(R"({"clientCertificates":[{"thumbprint":"AB","notBefore":"soon",)"
                               R"("notAfter":"2027-01-01T00:00:00Z"}]})")
                   .ok());
  // A thumbprint that is not its certificate's is refused.
  auto ca = pki::NewCertificateAuthority("ca", std::chrono::system_clock::now(), std::chrono::hours(1));
  ASSERT_TRUE(ca.ok());
  auto doc = TrustedSetDocument({ca->cert_pem});
  ASSERT_TRUE(doc.ok());
  EXPECT_TRUE(ParseTrustedSet(*doc).ok());
  std::string wrong = *doc;
  auto at = wrong.find("\"thumbprint\":\"") + 14;
  wrong[at] = wrong[at] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(ParseTrustedSet(wrong).ok());
}

TEST(ArmAuthenticator, ExpiryByMetadataOrCertificateAndReloadOnChange) {
  FakeClock clock(*ParseRfc3339("2026-06-01T00:00:00Z"));
  std::string dir = TempDir("auth");
  fs::create_directories(dir);
  std::string file = dir + "/trusted.json";
  WriteAll(file, R"({"clientCertificates":[{"thumbprint":"AA","notBefore":"2026-01-01T00:00:00Z",)"
                 R"("notAfter":"2026-07-01T00:00:00Z"}]})");
  auto auth = ArmAuthenticator::Load(file, &clock);
  ASSERT_TRUE(auth.ok());
  PeerCertificate peer{"AA", "/CN=arm", "/CN=ca", *ParseRfc3339("2026-01-01T00:00:00Z"),
                       *ParseRfc3339("2027-01-01T00:00:00Z")};
  EXPECT_EQ((*auth)->Check(&peer), std::nullopt);
  clock.Advance(std::chrono::hours(24 * 31));
  EXPECT_EQ((*auth)->Check(&peer), Refusal::kExpired);
  // Rotation: the file now lists BB only.
  WriteAll(file, R"({"clientCertificates":[{"thumbprint":"BB","notBefore":"2026-01-01T00:00:00Z",)"
                 R"("notAfter":"2028-01-01T00:00:00Z"}]})");
  EXPECT_EQ((*auth)->Check(&peer), Refusal::kUnknownCertificate);
  peer.thumbprint = "BB";
  EXPECT_EQ((*auth)->Check(&peer), std::nullopt);
  // A broken file keeps the previous set.
  WriteAll(file, "{not json");
  EXPECT_EQ((*auth)->Check(&peer), std::nullopt);
  fs::remove_all(dir);
}

TEST(ServerContext, RefusesAMismatchedKeyAndReloadsAChangedCertificate) {
  SystemClock clock;
  std::string dir = TempDir("ctx");
  auto files = EnsureLocalFiles(dir, clock);
  ASSERT_TRUE(files.ok());
  EXPECT_FALSE(ServerContext::Load({files->server_cert, files->client_key, "", false}).ok());
  auto ctx = ServerContext::Load({files->server_cert, files->server_key, "", false});
  ASSERT_TRUE(ctx.ok()) << ctx.error().message();
  auto first = (*ctx)->Current();
  EXPECT_EQ((*ctx)->Current(), first);
  // A new certificate and key (a rotation) give a new context.
  fs::remove(files->server_cert);
  ASSERT_TRUE(EnsureLocalFiles(dir, clock).ok());
  EXPECT_NE((*ctx)->Current(), first);
  EXPECT_EQ((*ctx)->reloads(), 1u);
  fs::remove_all(dir);
}

// The follower keeps the last good copy of ARM's metadata: a new document replaces it, a failed fetch
// or a document of another shape leaves it, and a start while the endpoint is down uses it.
TEST(ArmMetadataFollower, KeepsTheLastGoodCopyAndFollowsRotation) {
  SystemClock clock;
  auto files = EnsureLocalFiles(TempDir("metadata"), clock);
  ASSERT_TRUE(files.ok());
  const std::string cache = files->dir + "/cache.json";
  auto first = TrustedSetDocument({ReadAll(files->client_cert)});
  auto second = TrustedSetDocument({ReadAll(files->rp_client_cert)});
  ASSERT_TRUE(first.ok() && second.ok());
  Mutex mu;
  Result<std::string> served = Error::Unavailable("down");
  auto fetch = [&]() -> Result<std::string> {
    MutexLock lock(mu);
    return served;
  };
  auto serve = [&](Result<std::string> r) {
    MutexLock lock(mu);
    served = std::move(r);
  };
  Logger logger(std::make_shared<StreamLogSink>(stderr), &clock, LogLevel::kError);
  // Down, and no copy yet: the start fails.
  EXPECT_FALSE(ArmMetadataFollower::Start(fetch, cache, std::chrono::hours(1), logger).ok());
  serve(*first);
  auto follower = ArmMetadataFollower::Start(fetch, cache, std::chrono::hours(1), logger);
  ASSERT_TRUE(follower.ok()) << follower.error().message();
  EXPECT_EQ(ReadAll(cache), *first);
  auto auth = ArmAuthenticator::Load(cache, &clock);
  ASSERT_TRUE(auth.ok());
  auto peer_of = [](const std::string& pem) {
    PeerCertificate p;
    p.thumbprint = pki::ThumbprintOfDer(*pki::CertificateDer(pem));
    auto info = pki::ParseCertificate(pem);
    p.not_before = info->not_before;
    p.not_after = info->not_after;
    return p;
  };
  PeerCertificate old_cert = peer_of(ReadAll(files->client_cert));
  PeerCertificate new_cert = peer_of(ReadAll(files->rp_client_cert));
  EXPECT_EQ((*auth)->Check(&old_cert), std::nullopt);
  // ARM rotates.
  serve(*second);
  ASSERT_TRUE((*follower)->RefreshOnce().ok());
  EXPECT_EQ((*auth)->Check(&new_cert), std::nullopt);
  EXPECT_EQ((*auth)->Check(&old_cert), Refusal::kUnknownCertificate);
  // The endpoint fails, or serves something else: the copy stays.
  serve(Error::Unavailable("down"));
  EXPECT_FALSE((*follower)->RefreshOnce().ok());
  serve(std::string("<html>maintenance</html>"));
  EXPECT_FALSE((*follower)->RefreshOnce().ok());
  EXPECT_EQ(ReadAll(cache), *second);
  follower->reset();
  // A restart while the endpoint is down starts from the copy.
  serve(Error::Unavailable("down"));
  auto restarted = ArmMetadataFollower::Start(fetch, cache, std::chrono::hours(1), logger);
  ASSERT_TRUE(restarted.ok());
  EXPECT_EQ(ReadAll(cache), *second);
}

}  // namespace
}  // namespace hcprp::tls
