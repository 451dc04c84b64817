#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/clock.h"
#include "core/time.h"
#include "pki/x509.h"
#include "tls/arm_trust.h"
#include "tls/context.h"
#include "tls/local_ca.h"

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

}  // namespace
}  // namespace hcprp::tls
