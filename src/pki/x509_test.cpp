#include "pki/x509.h"

#include <gtest/gtest.h>

#include <vector>

#include <string>

namespace hcprp::pki {
namespace {

const TimePoint kNow = std::chrono::system_clock::from_time_t(1'800'000'000);

// A request whose signature no longer matches: one byte of the DER's signature flipped.
std::string TamperedCsr(const std::string& pem) {
  std::string body;
  const std::string begin = "-----BEGIN CERTIFICATE REQUEST-----\n";
  size_t start = pem.find(begin) + begin.size();
  size_t end = pem.find("-----END");
  std::string b64 = pem.substr(start, end - start);
  // Change a base64 digit near the end (inside the signature, before the padding).
  size_t pos = b64.find_last_not_of("=\n") - 3;
  b64[pos] = b64[pos] == 'A' ? 'B' : 'A';
  return begin + b64 + pem.substr(end);
}

TEST(Pki, ParsesTheSubjectOfARequest) {
  auto kc = NewCsr("system:customer-break-glass:system-admin", {"system:masters"});
  ASSERT_TRUE(kc.ok()) << kc.error().ToString();
  auto info = ParseCsr(kc->csr_pem);
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  EXPECT_EQ(info->common_name, "system:customer-break-glass:system-admin");
  ASSERT_EQ(info->organizations.size(), 1u);
  EXPECT_EQ(info->organizations[0], "system:masters");
  EXPECT_TRUE(info->signature_valid);
}

TEST(Pki, RefusesWhatIsNotARequest) {
  auto none = ParseCsr("not a pem");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message(), "failed to decode PEM block as CERTIFICATE REQUEST");
  auto ca = NewCertificateAuthority("ca", kNow, std::chrono::hours(24));
  ASSERT_TRUE(ca.ok());
  EXPECT_EQ(ParseCsr(ca->cert_pem).error().message(), "failed to decode PEM block as CERTIFICATE REQUEST");
  auto garbage =
      ParseCsr("-----BEGIN CERTIFICATE REQUEST-----\ndGVzdA==\n-----END CERTIFICATE REQUEST-----\n");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().message().rfind("failed to parse certificate request: ", 0), 0u)
      << garbage.error().message();
}

TEST(Pki, NoticesABadSignature) {
  auto kc = NewCsr("system:customer-break-glass:system-admin", {"system:masters"});
  ASSERT_TRUE(kc.ok());
  auto info = ParseCsr(TamperedCsr(kc->csr_pem));
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  EXPECT_FALSE(info->signature_valid);
  auto ca = NewCertificateAuthority("ca", kNow, std::chrono::hours(24 * 365));
  ASSERT_TRUE(ca.ok());
  auto signed_cert = SignCsr(*ca, TamperedCsr(kc->csr_pem), kNow, std::chrono::hours(24));
  ASSERT_FALSE(signed_cert.ok());
  EXPECT_TRUE(signed_cert.error().Is(ErrorCode::kInvalidArgument));
}

TEST(Pki, SignsAndVerifiesAgainstItsCaOnly) {
  auto ca = NewCertificateAuthority("cluster-ca", kNow, std::chrono::hours(24 * 365));
  ASSERT_TRUE(ca.ok()) << ca.error().ToString();
  auto other = NewCertificateAuthority("other-ca", kNow, std::chrono::hours(24 * 365));
  ASSERT_TRUE(other.ok());
  auto kc = NewCsr("system:customer-break-glass:system-admin", {"system:masters"});
  ASSERT_TRUE(kc.ok());
  auto cert = SignCsr(*ca, kc->csr_pem, kNow, std::chrono::hours(24));
  ASSERT_TRUE(cert.ok()) << cert.error().ToString();
  EXPECT_EQ(cert->info.subject, "/O=system:masters/CN=system:customer-break-glass:system-admin");
  EXPECT_EQ(cert->info.not_after, kNow + std::chrono::hours(24));
  EXPECT_FALSE(cert->info.serial.empty());

  auto ok = VerifyCertificate(*ca, cert->pem, kNow + std::chrono::hours(1));
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(ok->serial, cert->info.serial);

  auto wrong_ca = VerifyCertificate(*other, cert->pem, kNow + std::chrono::hours(1));
  ASSERT_FALSE(wrong_ca.ok());
  EXPECT_TRUE(wrong_ca.error().Is(ErrorCode::kPreconditionFailed));

  auto expired = VerifyCertificate(*ca, cert->pem, kNow + std::chrono::hours(25));
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.error().message(), "certificate has expired");

  auto second = SignCsr(*ca, kc->csr_pem, kNow, std::chrono::hours(24));
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->info.serial, cert->info.serial);
  EXPECT_FALSE(VerifyCertificate(*ca, "junk", kNow).ok());
}

}  // namespace
}  // namespace hcprp::pki
