// ARM client-certificate authentication. ARM calls a resource provider over TLS with a client
// certificate and publishes the certificates it uses in its metadata; the provider accepts a caller
// only when the certificate it presented is one of them and is valid now. The trusted set is a JSON
// file in the shape of that metadata:
//
//   {"clientCertificates": [{"thumbprint": "9F2A...", "notBefore": "2026-01-01T00:00:00Z",
//                            "notAfter": "2027-01-01T00:00:00Z", "certificate": "<base64 DER>"}]}
//
// An entry matches by thumbprint (SHA-1 of the DER certificate, upper-case hex; computed from
// "certificate" when that is given). The file is re-read when it changes, so ARM's rotation (a new
// certificate added, the old one removed later) needs no restart.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/result.h"
#include "tls/context.h"
#include "tls/peer_certificate.h"

namespace hcprp::tls {

// Why a caller was refused. The names are the `reason` label of hcprp_auth_refusals_total.
enum class Refusal { kNoCertificate, kUnknownCertificate, kExpired, kNotYetValid };
std::string_view RefusalName(Refusal r);

struct TrustedCertificate {
  std::string thumbprint;
  TimePoint not_before{};
  TimePoint not_after{};
};

// Parses the metadata document. InvalidArgument for anything not in its shape.
Result<std::vector<TrustedCertificate>> ParseTrustedSet(std::string_view json_text);
// The document listing `cert_pems` (each valid as its certificate says).
Result<std::string> TrustedSetDocument(const std::vector<std::string>& cert_pems);

// Thread-safe.
class ArmAuthenticator {
 public:
  // Reads `trusted_set_file`; InvalidArgument when it is not in the metadata's shape.
  static Result<std::unique_ptr<ArmAuthenticator>> Load(std::string trusted_set_file, const Clock* clock);

  // nullopt: `peer` (null when the client sent no certificate) is trusted now. Re-reads the file first
  // when it changed; a file that does not parse leaves the previous set in use.
  std::optional<Refusal> Check(const PeerCertificate* peer);

  size_t trusted_count() const;

 private:
  ArmAuthenticator(std::string file, const Clock* clock);
  const std::string file_;
  const Clock* const clock_;
  mutable Mutex mu_;
  FileStamp stamp_ HCPRP_GUARDED_BY(mu_);
  std::vector<TrustedCertificate> trusted_ HCPRP_GUARDED_BY(mu_);
};

}  // namespace hcprp::tls
