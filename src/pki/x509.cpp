#include "pki/x509.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <optional>

namespace hcprp::pki {
namespace {

template <auto Fn>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Fn(p);
  }
};
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509_free>>;
using ReqPtr = std::unique_ptr<X509_REQ, Deleter<X509_REQ_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BN_free>>;

// The oldest queued OpenSSL error as text (and clears the queue).
std::string OpenSslReason() {
  unsigned long code = ERR_get_error();
  std::string out;
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    const char* reason = ERR_reason_error_string(code);
    out = reason ? reason : buf;
  }
  ERR_clear_error();
  return out.empty() ? "malformed data" : out;
}

BioPtr MemoryBio(std::string_view data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

// The first PEM block: its type and DER bytes. nullopt when there is none.
struct PemBlock {
  std::string type;
  std::string der;
};
std::optional<PemBlock> FirstPemBlock(std::string_view pem) {
  BioPtr bio = MemoryBio(pem);
  char* name = nullptr;
  char* header = nullptr;
  unsigned char* data = nullptr;
  long len = 0;
  if (!bio || PEM_read_bio(bio.get(), &name, &header, &data, &len) != 1) {
    ERR_clear_error();
    return std::nullopt;
  }
  PemBlock b{name, std::string(reinterpret_cast<const char*>(data), static_cast<size_t>(len))};
  OPENSSL_free(name);
  OPENSSL_free(header);
  OPENSSL_free(data);
  return b;
}

// The first PEM block, which must be of `type`.
Result<PemBlock> PemBlockOf(std::string_view pem, std::string_view type) {
  auto block = FirstPemBlock(pem);
  if (!block || block->type != type) {
    return Error::InvalidArgument("failed to decode PEM block as " + std::string(type));
  }
  return *std::move(block);
}

// Adds a UTF-8 entry to a subject name.
void AddNameEntry(X509_NAME* name, int nid, std::string_view value) {
  X509_NAME_add_entry_by_NID(name, nid, MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(value.data()),
                             static_cast<int>(value.size()), -1, 0);
}

Result<ReqPtr> ReadCsr(std::string_view pem) {
  HCPRP_ASSIGN_OR_RETURN(auto block, PemBlockOf(pem, "CERTIFICATE REQUEST"));
  const auto* p = reinterpret_cast<const unsigned char*>(block.der.data());
  ReqPtr req(d2i_X509_REQ(nullptr, &p, static_cast<long>(block.der.size())));
  if (!req || p != reinterpret_cast<const unsigned char*>(block.der.data()) + block.der.size()) {
    return Error::InvalidArgument("failed to parse certificate request: " + OpenSslReason());
  }
  return req;
}

std::string EntryText(const X509_NAME_ENTRY* e) {
  const ASN1_STRING* s = X509_NAME_ENTRY_get_data(e);
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, s);
  if (n < 0) return "";
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

std::string SubjectText(const X509_NAME* name) {
  std::string out;
  for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
    const X509_NAME_ENTRY* e = X509_NAME_get_entry(name, i);
    int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(e));
    const char* sn = OBJ_nid2sn(nid);
    out += "/" + std::string(sn ? sn : "?") + "=" + EntryText(e);
  }
  return out;
}

TimePoint FromAsn1(const ASN1_TIME* t) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return TimePoint{};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

time_t ToTimeT(TimePoint t) { return std::chrono::system_clock::to_time_t(t); }

Result<KeyPtr> NewKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return Error::Internal("cannot generate a key: " + OpenSslReason());
  return key;
}

Status SetRandomSerial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return Error::Internal("no randomness: " + OpenSslReason());
  bytes[0] &= 0x7f;  // positive
  bytes[0] |= 0x01;  // and of full length
  BnPtr bn(BN_bin2bn(bytes, sizeof(bytes), nullptr));
  if (!bn || !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)))
    return Error::Internal("cannot set a serial: " + OpenSslReason());
  return Status::Ok();
}

Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1)
    return Error::Internal(std::string("cannot add extension ") + OBJ_nid2sn(nid) + ": " + OpenSslReason());
  return Status::Ok();
}

Status SetValidity(X509* cert, TimePoint from, Duration length) {
  if (!ASN1_TIME_set(X509_getm_notBefore(cert), ToTimeT(from)) ||
      !ASN1_TIME_set(X509_getm_notAfter(cert),
                     ToTimeT(from + std::chrono::duration_cast<std::chrono::seconds>(length)))) {
    return Error::Internal("cannot set validity: " + OpenSslReason());
  }
  return Status::Ok();
}

std::string CertPem(X509* cert) {
  BioPtr out(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(out.get(), cert);
  return BioText(out.get());
}

CertificateInfo InfoOf(X509* cert) {
  CertificateInfo info;
  BnPtr bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  if (bn) {
    char* hex = BN_bn2hex(bn.get());
    info.serial = hex;
    OPENSSL_free(hex);
  }
  info.subject = SubjectText(X509_get_subject_name(cert));
  info.not_before = FromAsn1(X509_get0_notBefore(cert));
  info.not_after = FromAsn1(X509_get0_notAfter(cert));
  return info;
}

Result<CertPtr> ReadCert(std::string_view pem) {
  HCPRP_ASSIGN_OR_RETURN(auto block, PemBlockOf(pem, "CERTIFICATE"));
  const auto* p = reinterpret_cast<const unsigned char*>(block.der.data());
  CertPtr cert(d2i_X509(nullptr, &p, static_cast<long>(block.der.size())));
  if (!cert) return Error::InvalidArgument("failed to parse certificate: " + OpenSslReason());
  return cert;
}

Result<KeyPtr> ReadKey(std::string_view pem) {
  BioPtr bio = MemoryBio(pem);
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return Error::Corruption("unreadable CA key: " + OpenSslReason());
  return key;
}

Result<CertPtr> ReadCaCert(const CertificateAuthority& ca) {
  auto cert = ReadCert(ca.cert_pem);
  if (!cert.ok()) return Error::Corruption("unreadable CA certificate: " + cert.error().message());
  return cert;
}

// A version 3 certificate with a random serial and nothing else yet.
Result<CertPtr> NewCertificate() {
  CertPtr cert(X509_new());
  X509_set_version(cert.get(), 2);
  HCPRP_RETURN_IF_ERROR(SetRandomSerial(cert.get()));
  return cert;
}

// The extensions of a certificate `issuer` issues for a client or server (`ext_key_usage`).
Status AddLeafExtensions(X509* cert, X509* issuer, const char* ext_key_usage) {
  HCPRP_RETURN_IF_ERROR(AddExtension(cert, issuer, NID_basic_constraints, "critical,CA:FALSE"));
  HCPRP_RETURN_IF_ERROR(
      AddExtension(cert, issuer, NID_key_usage, "critical,digitalSignature,keyEncipherment"));
  HCPRP_RETURN_IF_ERROR(AddExtension(cert, issuer, NID_ext_key_usage, ext_key_usage));
  return AddExtension(cert, issuer, NID_authority_key_identifier, "keyid");
}

Status Sign(X509* cert, EVP_PKEY* key, std::string_view what) {
  if (X509_sign(cert, key, EVP_sha256()) == 0) {
    return Error::Internal("cannot sign the " + std::string(what) + ": " + OpenSslReason());
  }
  return Status::Ok();
}

// The private key as PEM (`what` names it in the error).
Result<std::string> KeyPem(EVP_PKEY* key, std::string_view what) {
  BioPtr out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(out.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return Error::Internal("cannot write the " + std::string(what) + ": " + OpenSslReason());
  return BioText(out.get());
}

}  // namespace

Result<CsrInfo> ParseCsr(std::string_view pem) {
  HCPRP_ASSIGN_OR_RETURN(auto req, ReadCsr(pem));
  CsrInfo info;
  const X509_NAME* subject = X509_REQ_get_subject_name(req.get());
  for (int i = 0; i < X509_NAME_entry_count(subject); ++i) {
    const X509_NAME_ENTRY* e = X509_NAME_get_entry(subject, i);
    int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(e));
    if (nid == NID_commonName) info.common_name = EntryText(e);
    if (nid == NID_organizationName) info.organizations.push_back(EntryText(e));
  }
  EVP_PKEY* key = X509_REQ_get0_pubkey(req.get());
  info.signature_valid = key != nullptr && X509_REQ_verify(req.get(), key) == 1;
  ERR_clear_error();
  return info;
}

Result<KeyAndCsr> NewCsr(std::string_view common_name, const std::vector<std::string>& organizations) {
  HCPRP_ASSIGN_OR_RETURN(auto key, NewKey());
  ReqPtr req(X509_REQ_new());
  X509_NAME* name = X509_REQ_get_subject_name(req.get());
  for (const auto& o : organizations) AddNameEntry(name, NID_organizationName, o);
  if (!common_name.empty()) AddNameEntry(name, NID_commonName, common_name);
  X509_REQ_set_pubkey(req.get(), key.get());
  if (X509_REQ_sign(req.get(), key.get(), EVP_sha256()) == 0)
    return Error::Internal("cannot sign the request: " + OpenSslReason());
  BioPtr k(BIO_new(BIO_s_mem()));
  BioPtr r(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(k.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  PEM_write_bio_X509_REQ(r.get(), req.get());
  return KeyAndCsr{BioText(k.get()), BioText(r.get())};
}

Result<CertificateAuthority> NewCertificateAuthority(std::string_view common_name, TimePoint now,
                                                     Duration validity) {
  HCPRP_ASSIGN_OR_RETURN(auto key, NewKey());
  HCPRP_ASSIGN_OR_RETURN(auto cert, NewCertificate());
  X509_NAME* name = X509_get_subject_name(cert.get());
  AddNameEntry(name, NID_commonName, common_name);
  X509_set_issuer_name(cert.get(), name);
  HCPRP_RETURN_IF_ERROR(SetValidity(cert.get(), now, validity));
  X509_set_pubkey(cert.get(), key.get());
  HCPRP_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE"));
  HCPRP_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  HCPRP_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  HCPRP_RETURN_IF_ERROR(Sign(cert.get(), key.get(), "CA certificate"));
  HCPRP_ASSIGN_OR_RETURN(auto key_pem, KeyPem(key.get(), "CA key"));
  return CertificateAuthority{std::move(key_pem), CertPem(cert.get())};
}

Result<IssuedCertificate> SignCsr(const CertificateAuthority& ca, std::string_view csr_pem, TimePoint now,
                                  Duration ttl) {
  HCPRP_ASSIGN_OR_RETURN(auto req, ReadCsr(csr_pem));
  EVP_PKEY* pub = X509_REQ_get0_pubkey(req.get());
  if (!pub || X509_REQ_verify(req.get(), pub) != 1) {
    ERR_clear_error();
    return Error::InvalidArgument("certificate request signature is invalid");
  }
  HCPRP_ASSIGN_OR_RETURN(auto ca_cert, ReadCaCert(ca));
  HCPRP_ASSIGN_OR_RETURN(auto ca_key, ReadKey(ca.key_pem));

  HCPRP_ASSIGN_OR_RETURN(auto cert, NewCertificate());
  X509_set_subject_name(cert.get(), X509_REQ_get_subject_name(req.get()));
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  HCPRP_RETURN_IF_ERROR(SetValidity(cert.get(), now, ttl));
  X509_set_pubkey(cert.get(), pub);
  HCPRP_RETURN_IF_ERROR(AddLeafExtensions(cert.get(), ca_cert.get(), "clientAuth"));
  HCPRP_RETURN_IF_ERROR(Sign(cert.get(), ca_key.get(), "certificate"));
  return IssuedCertificate{CertPem(cert.get()), InfoOf(cert.get())};
}

Result<CertificateInfo> VerifyCertificate(const CertificateAuthority& ca, std::string_view cert_pem,
                                          TimePoint now) {
  HCPRP_ASSIGN_OR_RETURN(auto cert, ReadCert(cert_pem));
  HCPRP_ASSIGN_OR_RETURN(auto ca_cert, ReadCaCert(ca));
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca_cert.get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr) != 1) {
    return Error::Internal("cannot set up verification: " + OpenSslReason());
  }
  X509_STORE_CTX_set_time(ctx.get(), 0, ToTimeT(now));
  if (X509_verify_cert(ctx.get()) != 1) {
    ERR_clear_error();
    return Error::PreconditionFailed(X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())));
  }
  return InfoOf(cert.get());
}

Result<KeyAndCertificate> IssueCertificate(const CertificateAuthority& ca, std::string_view common_name,
                                           Usage usage, const std::vector<std::string>& dns_names,
                                           const std::vector<std::string>& ip_addresses, TimePoint not_before,
                                           TimePoint not_after) {
  HCPRP_ASSIGN_OR_RETURN(auto key, NewKey());
  HCPRP_ASSIGN_OR_RETURN(auto ca_cert, ReadCaCert(ca));
  HCPRP_ASSIGN_OR_RETURN(auto ca_key, ReadKey(ca.key_pem));
  HCPRP_ASSIGN_OR_RETURN(auto cert, NewCertificate());
  AddNameEntry(X509_get_subject_name(cert.get()), NID_commonName, common_name);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  HCPRP_RETURN_IF_ERROR(SetValidity(cert.get(), not_before, not_after - not_before));
  X509_set_pubkey(cert.get(), key.get());
  HCPRP_RETURN_IF_ERROR(
      AddLeafExtensions(cert.get(), ca_cert.get(), usage == Usage::kServer ? "serverAuth" : "clientAuth"));
  std::string san;
  for (const auto& d : dns_names) san += (san.empty() ? "DNS:" : ",DNS:") + d;
  for (const auto& ip : ip_addresses) san += (san.empty() ? "IP:" : ",IP:") + ip;
  if (!san.empty()) {
    HCPRP_RETURN_IF_ERROR(AddExtension(cert.get(), ca_cert.get(), NID_subject_alt_name, san.c_str()));
  }
  HCPRP_RETURN_IF_ERROR(Sign(cert.get(), ca_key.get(), "certificate"));
  HCPRP_ASSIGN_OR_RETURN(auto key_pem, KeyPem(key.get(), "key"));
  return KeyAndCertificate{std::move(key_pem), CertPem(cert.get())};
}

Result<CertificateInfo> ParseCertificate(std::string_view cert_pem) {
  HCPRP_ASSIGN_OR_RETURN(auto cert, ReadCert(cert_pem));
  return InfoOf(cert.get());
}

std::string ThumbprintOfDer(std::string_view der) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(der.data()), der.size(), digest);
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Result<std::string> CertificateDer(std::string_view cert_pem) {
  HCPRP_ASSIGN_OR_RETURN(auto block, PemBlockOf(cert_pem, "CERTIFICATE"));
  return std::move(block.der);
}

Result<std::string> Thumbprint(std::string_view cert_pem) {
  HCPRP_ASSIGN_OR_RETURN(auto der, CertificateDer(cert_pem));
  return ThumbprintOfDer(der);
}

}  // namespace hcprp::pki
