// What a TLS server learns of a client's certificate after the handshake: the facts an authenticator
// judges (by thumbprint, validity, names), whatever its trust policy.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace hcprp::tls {

struct PeerCertificate {
  std::string thumbprint;  // SHA-1 of the DER, upper-case hex
  std::string subject;     // "/CN=..." as pki::CertificateInfo prints it
  std::string issuer;
  TimePoint not_before{};
  TimePoint not_after{};
  std::string common_name;             // the subject's last CN, read from the certificate ("" without one)
  std::vector<std::string> dns_names;  // the subjectAltName's DNS entries, in order
};

// Whether `peer` is named `name` as RFC 6125 (section 6.4.4) names a service: by its subjectAltName
// DNS entries (compared without regard to ASCII case; no wildcards), and by its subject's common name
// only when it has no DNS entry at all.
bool CertificateNamed(const PeerCertificate& peer, std::string_view name);

// The certificate a TLS peer presented; nullopt when it presented none. `ssl` is an OpenSSL SSL*
// after its handshake.
std::optional<PeerCertificate> PeerCertificateOf(void* ssl);
// The same facts of the first certificate of `cert_pem`; kInvalidArgument when there is none.
Result<PeerCertificate> PeerCertificateOfPemForTest(std::string_view cert_pem);

}  // namespace hcprp::tls
