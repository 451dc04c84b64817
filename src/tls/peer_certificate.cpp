#include "tls/peer_certificate.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

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

TimePoint FromAsn1(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return TimePoint{};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace

std::optional<PeerCertificate> PeerCertificateOf(void* ssl) {
  X509* cert = SSL_get0_peer_certificate(static_cast<SSL*>(ssl));
  if (cert == nullptr) return std::nullopt;
  unsigned char* der = nullptr;
  int n = i2d_X509(cert, &der);
  if (n <= 0) return std::nullopt;
  PeerCertificate p;
  p.thumbprint = pki::ThumbprintOfDer(std::string_view(reinterpret_cast<char*>(der), static_cast<size_t>(n)));
  OPENSSL_free(der);
  p.subject = NameText(X509_get_subject_name(cert));
  p.common_name = LastCommonName(X509_get_subject_name(cert));
  p.issuer = NameText(X509_get_issuer_name(cert));
  p.not_before = FromAsn1(X509_get0_notBefore(cert));
  p.not_after = FromAsn1(X509_get0_notAfter(cert));
  return p;
}

}  // namespace hcprp::tls
