// X.509 for break-glass credentials: parsing and checking a PEM certificate signing request, a
// certificate authority per cluster, signing a request with it, and verifying that a certificate
// chains to it. Keys are ECDSA P-256; signatures SHA-256. Thread-safe (no shared state).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace hcprp::pki {

// What a certificate signing request asks for.
struct CsrInfo {
  std::string common_name;                 // the last CN of the subject ("" when none)
  std::vector<std::string> organizations;  // every O of the subject, in order
  bool signature_valid = false;            // signed by the key it carries
};

// Reads the first PEM block of `pem`. InvalidArgument "failed to decode PEM block as CERTIFICATE
// REQUEST" when there is none or it is another type; InvalidArgument "failed to parse certificate
// request: ..." when its DER is not a PKCS#10 request.
Result<CsrInfo> ParseCsr(std::string_view pem);

// A new key and a request signed by it for subject CN=`common_name`, O=each of `organizations`
// (clients and tests use it; the service only reads requests).
struct KeyAndCsr {
  std::string key_pem;
  std::string csr_pem;
};
Result<KeyAndCsr> NewCsr(std::string_view common_name, const std::vector<std::string>& organizations);

// A certificate authority: its private key and self-signed certificate, both PEM.
struct CertificateAuthority {
  std::string key_pem;
  std::string cert_pem;
};

// A new CA with subject CN=`common_name`, valid from `now` for `validity`.
Result<CertificateAuthority> NewCertificateAuthority(std::string_view common_name, TimePoint now,
                                                     Duration validity);

// A certificate as the signer recorded it.
struct CertificateInfo {
  std::string serial;   // upper-case hex
  std::string subject;  // "/CN=.../O=..." in the certificate's order
  TimePoint not_before{};
  TimePoint not_after{};
};

struct IssuedCertificate {
  std::string pem;
  CertificateInfo info;
};

// Signs `csr_pem` with `ca`: the request's subject and public key, a random serial, valid from
// `now` for `ttl`, a TLS client certificate. InvalidArgument for a request ParseCsr refuses or one
// whose signature does not verify.
Result<IssuedCertificate> SignCsr(const CertificateAuthority& ca, std::string_view csr_pem, TimePoint now,
                                  Duration ttl);

// Verifies that `cert_pem` was signed by `ca` and is valid at `now`. PreconditionFailed with the
// verifier's reason otherwise; InvalidArgument when `cert_pem` is not a PEM certificate.
Result<CertificateInfo> VerifyCertificate(const CertificateAuthority& ca, std::string_view cert_pem,
                                          TimePoint now);

// What a certificate issued for TLS is for.
enum class Usage { kServer, kClient };

// A new key and a certificate signed by `ca` for subject CN=`common_name`, valid from `not_before`
// to `not_after`: for kServer with the subject alternative names `dns_names` and `ip_addresses`
// (extended key usage serverAuth), for kClient with clientAuth.
struct KeyAndCertificate {
  std::string key_pem;
  std::string cert_pem;
};
Result<KeyAndCertificate> IssueCertificate(const CertificateAuthority& ca, std::string_view common_name,
                                           Usage usage, const std::vector<std::string>& dns_names,
                                           const std::vector<std::string>& ip_addresses, TimePoint not_before,
                                           TimePoint not_after);

// The first certificate of `cert_pem` as recorded; InvalidArgument when there is none.
Result<CertificateInfo> ParseCertificate(std::string_view cert_pem);

// A certificate's SHA-1 thumbprint over its DER form, upper-case hex (the form ARM publishes).
Result<std::string> Thumbprint(std::string_view cert_pem);
std::string ThumbprintOfDer(std::string_view der);
// The DER bytes of the first certificate of `cert_pem`.
Result<std::string> CertificateDer(std::string_view cert_pem);

}  // namespace hcprp::pki
