#include "tls/arm_trust.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "core/base64.h"
#include "core/json.h"
#include "core/time.h"
#include "pki/x509.h"

namespace hcprp::tls {
namespace {

std::string Upper(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ':' || c == ' ') continue;
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::InvalidArgument("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string_view RefusalName(Refusal r) {
  switch (r) {
    case Refusal::kNoCertificate:
      return "no_certificate";
    case Refusal::kUnknownCertificate:
      return "unknown_certificate";
    case Refusal::kExpired:
      return "expired";
    case Refusal::kNotYetValid:
      return "not_yet_valid";
  }
  return "unknown";
}

Result<std::vector<TrustedCertificate>> ParseTrustedSet(std::string_view json_text) {
  auto doc = ParseJson(json_text);
  if (!doc.ok() || !doc->is_object()) return Error::InvalidArgument("the trusted set is not a JSON object");
  const json::array* certs = GetArray(doc->as_object(), "clientCertificates");
  if (certs == nullptr) return Error::InvalidArgument("the trusted set has no clientCertificates array");
  std::vector<TrustedCertificate> out;
  for (const auto& item : *certs) {
    const json::object* o = item.if_object();
    if (o == nullptr) return Error::InvalidArgument("a clientCertificates entry is not an object");
    TrustedCertificate t;
    if (auto der64 = GetString(*o, "certificate"); der64 && !der64->empty()) {
      auto der = Base64Decode(*der64);
      if (!der.ok()) return Error::InvalidArgument("a certificate is not base64: " + der.error().message());
      t.thumbprint = pki::ThumbprintOfDer(*der);
      if (auto tp = GetString(*o, "thumbprint"); tp && Upper(*tp) != t.thumbprint) {
        return Error::InvalidArgument("thumbprint " + std::string(*tp) + " is not that of its certificate");
      }
    } else if (auto tp = GetString(*o, "thumbprint"); tp && !tp->empty()) {
      t.thumbprint = Upper(*tp);
    } else {
      return Error::InvalidArgument("a clientCertificates entry has neither thumbprint nor certificate");
    }
    for (auto [key, field] : {std::pair{"notBefore", &t.not_before}, std::pair{"notAfter", &t.not_after}}) {
      auto text = GetString(*o, key);
      if (!text) return Error::InvalidArgument(std::string("a clientCertificates entry has no ") + key);
      auto when = ParseRfc3339(*text);
      if (!when.ok()) return Error::InvalidArgument(std::string(key) + ": " + when.error().message());
      *field = *when;
    }
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::string> TrustedSetDocument(const std::vector<std::string>& cert_pems) {
  json::array certs;
  for (const auto& pem : cert_pems) {
    HCPRP_ASSIGN_OR_RETURN(auto der, pki::CertificateDer(pem));
    HCPRP_ASSIGN_OR_RETURN(auto info, pki::ParseCertificate(pem));
    certs.push_back(json::object{{"thumbprint", pki::ThumbprintOfDer(der)},
                                 {"notBefore", FormatRfc3339(info.not_before)},
                                 {"notAfter", FormatRfc3339(info.not_after)},
                                 {"certificate", Base64Encode(der)}});
  }
  return json::serialize(json::object{{"clientCertificates", std::move(certs)}}) + "\n";
}

ArmAuthenticator::ArmAuthenticator(std::string file, const Clock* clock)
    : file_(std::move(file)), clock_(clock), stamp_({file_}) {}

Result<std::unique_ptr<ArmAuthenticator>> ArmAuthenticator::Load(std::string trusted_set_file,
                                                                 const Clock* clock) {
  std::unique_ptr<ArmAuthenticator> a(new ArmAuthenticator(trusted_set_file, clock));
  HCPRP_ASSIGN_OR_RETURN(auto text, ReadFile(trusted_set_file));
  auto set = ParseTrustedSet(text);
  if (!set.ok()) return Error::InvalidArgument(trusted_set_file + ": " + set.error().message());
  {
    MutexLock lock(a->mu_);  // not shared yet; the lock only satisfies the annotations
    a->trusted_ = std::move(*set);
  }
  return a;
}

std::optional<Refusal> ArmAuthenticator::Check(const PeerCertificate* peer) {
  MutexLock lock(mu_);
  if (stamp_.Changed()) {
    auto text = ReadFile(file_);
    auto set = text.ok() ? ParseTrustedSet(*text) : Result<std::vector<TrustedCertificate>>(text.error());
    if (set.ok()) {
      trusted_ = std::move(*set);
      stamp_.Refresh();
    }
  }
  if (peer == nullptr) return Refusal::kNoCertificate;
  const TimePoint now = clock_->Now();
  for (const auto& t : trusted_) {
    if (t.thumbprint != peer->thumbprint) continue;
    if (now >= t.not_after || now >= peer->not_after) return Refusal::kExpired;
    if (now < t.not_before || now < peer->not_before) return Refusal::kNotYetValid;
    return std::nullopt;
  }
  return Refusal::kUnknownCertificate;
}

size_t ArmAuthenticator::trusted_count() const {
  MutexLock lock(mu_);
  return trusted_.size();
}

}  // namespace hcprp::tls
