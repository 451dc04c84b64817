#include "tls/local_ca.h"

#include <openssl/rand.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pki/x509.h"
#include "tls/arm_trust.h"
#include "tls/atomic_file.h"

namespace hcprp::tls {
namespace {

namespace fs = std::filesystem;

bool Exists(const std::string& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

Result<std::string> Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::IoError("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Status Write(const std::string& path, const std::string& data, bool secret) {
  return WriteFileAtomically(path, data, secret ? FileSecrecy::kSecret : FileSecrecy::kPublic);
}

std::string NewToken() {
  unsigned char bytes[24];
  RAND_bytes(bytes, sizeof(bytes));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace

LocalFiles LocalFilesIn(const std::string& dir) {
  auto at = [&](const char* name) { return (fs::path(dir) / name).string(); };
  LocalFiles f;
  f.dir = dir;
  f.ca = at("ca.pem");
  f.ca_key = at("ca-key.pem");
  f.server_cert = at("server.pem");
  f.server_key = at("server-key.pem");
  f.client_cert = at("client.pem");
  f.client_key = at("client-key.pem");
  f.trusted_set = at("arm-client-certificates.json");
  f.rp_client_cert = at("rp-client.pem");
  f.rp_client_key = at("rp-client-key.pem");
  f.control_token = at("control-token");
  return f;
}

Result<LocalFiles> EnsureLocalFiles(const std::string& dir, const Clock& clock) {
  LocalFiles f = LocalFilesIn(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::IoError("cannot create " + dir + ": " + ec.message());
  fs::permissions(dir, fs::perms::owner_all, ec);
  const TimePoint now = clock.Now();
  const TimePoint from = now - std::chrono::hours(1);  // tolerate a little clock skew
  pki::CertificateAuthority ca;
  if (!Exists(f.ca)) {
    HCPRP_ASSIGN_OR_RETURN(
        auto made, pki::NewCertificateAuthority("hcprp local CA", from, std::chrono::hours(24 * 3650)));
    ca = std::move(made);
    HCPRP_RETURN_IF_ERROR(Write(f.ca_key, ca.key_pem, true));
    HCPRP_RETURN_IF_ERROR(Write(f.ca, ca.cert_pem, false));
  } else {
    HCPRP_ASSIGN_OR_RETURN(auto cert, Read(f.ca));
    ca.cert_pem = std::move(cert);
    if (Exists(f.ca_key)) {
      HCPRP_ASSIGN_OR_RETURN(auto key, Read(f.ca_key));
      ca.key_pem = std::move(key);
    }
  }
  struct Want {
    const std::string& cert;
    const std::string& key;
    const char* name;
    pki::Usage usage;
  };
  const Want wants[] = {{f.server_cert, f.server_key, "localhost", pki::Usage::kServer},
                        {f.client_cert, f.client_key, "hcprp local ARM", pki::Usage::kClient},
                        {f.rp_client_cert, f.rp_client_key, "hcprp resource provider", pki::Usage::kClient}};
  for (const auto& w : wants) {
    if (Exists(w.cert)) continue;
    if (ca.key_pem.empty()) {
      return Error::InvalidArgument(w.cert + " is missing and " + f.ca_key + " is not there to sign it");
    }
    const bool server = w.usage == pki::Usage::kServer;
    HCPRP_ASSIGN_OR_RETURN(
        auto issued,
        pki::IssueCertificate(
            ca, w.name, w.usage, server ? std::vector<std::string>{"localhost"} : std::vector<std::string>{},
            server ? std::vector<std::string>{"127.0.0.1", "::1"} : std::vector<std::string>{}, from,
            from + kLeafValidity));
    HCPRP_RETURN_IF_ERROR(Write(w.key, issued.key_pem, true));
    HCPRP_RETURN_IF_ERROR(Write(w.cert, issued.cert_pem, false));
  }
  if (!Exists(f.trusted_set)) {
    HCPRP_ASSIGN_OR_RETURN(auto client, Read(f.client_cert));
    HCPRP_ASSIGN_OR_RETURN(auto doc, TrustedSetDocument({client}));
    HCPRP_RETURN_IF_ERROR(Write(f.trusted_set, doc, false));
  }
  if (!Exists(f.control_token)) HCPRP_RETURN_IF_ERROR(Write(f.control_token, NewToken() + "\n", true));
  return f;
}

}  // namespace hcprp::tls
