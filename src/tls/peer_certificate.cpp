#include "tls/peer_certificate.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <string_view>

#include "pki/x509.h"

namespace hcprp::tls {
namespace {

std::string NameText(const X509_NAME* name) {
  char buf[512];
  X509_NAME_oneline(name, buf, sizeof(buf));
  return buf;
}

std::string LastCommonName(const X509_NAME* name) {
  int at = -1;
  for (int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(name, NID_commonName, i)) {
    at = i;
  }
  if (at < 0) return "";
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) return "";
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

std::vector<std::string> DnsNames(X509* cert) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_DNS) continue;
    const ASN1_IA5STRING* dns = name->d.dNSName;
    out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                     static_cast<size_t>(ASN1_STRING_length(dns)));
  }
  GENERAL_NAMES_free(names);
  return out;
}

bool EqualsAsciiCaseless(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

TimePoint FromAsn1(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return TimePoint{};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::optional<PeerCertificate> Describe(X509* cert) {
  unsigned char* der = nullptr;
  int n = i2d_X509(cert, &der);
  if (n <= 0) return std::nullopt;
  PeerCertificate p;
  p.thumbprint = pki::ThumbprintOfDer(std::string_view(reinterpret_cast<char*>(der), static_cast<size_t>(n)));
  OPENSSL_free(der);
  p.subject = NameText(X509_get_subject_name(cert));
  p.common_name = LastCommonName(X509_get_subject_name(cert));
  p.dns_names = DnsNames(cert);
  p.issuer = NameText(X509_get_issuer_name(cert));
  p.not_before = FromAsn1(X509_get0_notBefore(cert));
  p.not_after = FromAsn1(X509_get0_notAfter(cert));
  return p;
}

}  // namespace

bool CertificateNamed(const PeerCertificate& peer, std::string_view name) {
  if (peer.dns_names.empty()) return !peer.common_name.empty() && peer.common_name == name;
  for (const std::string& dns : peer.dns_names) {
    if (EqualsAsciiCaseless(dns, name)) return true;
  }
  return false;
}

std::optional<PeerCertificate> PeerCertificateOf(void* ssl) {
  X509* cert = SSL_get0_peer_certificate(static_cast<SSL*>(ssl));
  if (cert == nullptr) return std::nullopt;
  return Describe(cert);
}

Result<PeerCertificate> PeerCertificateOfPemForTest(std::string_view cert_pem) {
  BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  if (bio == nullptr) return Error::Internal("BIO_new_mem_buf failed");
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (cert == nullptr) return Error::InvalidArgument("no certificate in the PEM text");
  std::optional<PeerCertificate> described = Describe(cert);
  X509_free(cert);
  if (!described) return Error::InvalidArgument("the certificate does not encode");
  return *std::move(described);
}

}  // namespace hcprp::tls
