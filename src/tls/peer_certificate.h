// What a TLS server learns of a client's certificate after the handshake: the facts an authenticator
// judges (by thumbprint, validity, names), whatever its trust policy.
#pragma once

#include <optional>
#include <string>

#include "core/clock.h"

namespace hcprp::tls {

struct PeerCertificate {
  std::string thumbprint;  // SHA-1 of the DER, upper-case hex
  std::string subject;     // "/CN=..." as pki::CertificateInfo prints it
  std::string issuer;
  TimePoint not_before{};
  TimePoint not_after{};
  std::string common_name;  // the subject's last CN, read from the certificate ("" without one)
};

// The certificate a TLS peer presented; nullopt when it presented none. `ssl` is an OpenSSL SSL*
// after its handshake.
std::optional<PeerCertificate> PeerCertificateOf(void* ssl);

}  // namespace hcprp::tls
