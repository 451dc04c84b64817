#include "tls/context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace hcprp::tls {
namespace {

namespace ssl = boost::asio::ssl;

constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

std::string Reason() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown error";
  const char* r = ERR_reason_error_string(code);
  return r ? r : "unknown error";
}

Status Restrict(SSL_CTX* ctx) {
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) {
    return Error::Internal("cannot restrict TLS versions and ciphers: " + Reason());
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  return Status::Ok();
}

// Accepts whatever certificate the client presents: the server authenticates it after the handshake.
int AcceptAnyCertificate(int /*preverify_ok*/, X509_STORE_CTX* /*ctx*/) { return 1; }

}  // namespace

FileStamp::FileStamp(std::vector<std::string> paths) : paths_(std::move(paths)), stamps_(Read()) {}

std::vector<FileStamp::Stamp> FileStamp::Read() const {
  std::vector<Stamp> out;
  for (const auto& p : paths_) {
    Stamp s;
    std::error_code ec;
    s.mtime = std::filesystem::last_write_time(p, ec);
    if (!ec) {
      s.size = std::filesystem::file_size(p, ec);
      s.exists = !ec;
    }
    out.push_back(s);
  }
  return out;
}

bool FileStamp::Changed() const { return Read() != stamps_; }
void FileStamp::Refresh() { stamps_ = Read(); }

ReloadingContext::ReloadingContext(std::vector<std::string> files, Builder build,
                                   std::shared_ptr<ssl::context> first)
    : build_(std::move(build)), stamp_(std::move(files)), current_(std::move(first)) {}

std::shared_ptr<ssl::context> ReloadingContext::Current() {
  MutexLock lock(mu_);
  if (stamp_.Changed()) {
    auto built = build_();
    if (built.ok()) {
      current_ = std::move(*built);
      stamp_.Refresh();
      ++reloads_;
    }
  }
  return current_;
}

size_t ReloadingContext::reloads() const {
  MutexLock lock(mu_);
  return reloads_;
}

ServerContext::ServerContext(ServerContextOptions options, std::shared_ptr<ssl::context> first)
    : options_(std::move(options)),
      reloading_(
          {options_.cert_file, options_.key_file, options_.client_ca_file},
          [this] { return Build(options_); }, std::move(first)) {}

Result<std::shared_ptr<ssl::context>> ServerContext::Build(const ServerContextOptions& o) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  HCPRP_RETURN_IF_ERROR(Restrict(native));
  if (SSL_CTX_use_certificate_chain_file(native, o.cert_file.c_str()) != 1) {
    return Error::InvalidArgument("cannot read the certificate " + o.cert_file + ": " + Reason());
  }
  if (SSL_CTX_use_PrivateKey_file(native, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Error::InvalidArgument("cannot read the key " + o.key_file + ": " + Reason());
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    return Error::InvalidArgument("the key " + o.key_file + " does not match " + o.cert_file);
  }
  // One ticket per connection is enough to resume it (the default is two).
  SSL_CTX_set_num_tickets(native, 1);
  static constexpr unsigned char kSessionContext[] = "hcprp";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof(kSessionContext) - 1);
  if (!o.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(native, o.client_ca_file.c_str(), nullptr) != 1) {
      return Error::InvalidArgument("cannot read the client CA " + o.client_ca_file + ": " + Reason());
    }
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  } else if (o.request_client_certificate) {
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER, AcceptAnyCertificate);
  }
  return ctx;
}

Result<std::shared_ptr<ServerContext>> ServerContext::Load(ServerContextOptions options) {
  HCPRP_ASSIGN_OR_RETURN(auto built, Build(options));
  return std::shared_ptr<ServerContext>(new ServerContext(std::move(options), std::move(built)));
}

ClientContext::ClientContext(ClientContextOptions options, std::shared_ptr<ssl::context> first)
    : options_(std::move(options)),
      reloading_(
          {options_.ca_file, options_.cert_file, options_.key_file}, [this] { return Build(options_); },
          std::move(first)) {}

Result<std::shared_ptr<ssl::context>> ClientContext::Build(const ClientContextOptions& o) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* native = ctx->native_handle();
  HCPRP_RETURN_IF_ERROR(Restrict(native));
  if (o.ca_file.empty()) {
    SSL_CTX_set_default_verify_paths(native);
  } else if (SSL_CTX_load_verify_locations(native, o.ca_file.c_str(), nullptr) != 1) {
    return Error::InvalidArgument("cannot read the CA " + o.ca_file + ": " + Reason());
  }
  SSL_CTX_set_verify(native, SSL_VERIFY_PEER, nullptr);
  if (!o.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(native, o.cert_file.c_str()) != 1) {
      return Error::InvalidArgument("cannot read the client certificate " + o.cert_file + ": " + Reason());
    }
    if (SSL_CTX_use_PrivateKey_file(native, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(native) != 1) {
      return Error::InvalidArgument("cannot use the client key " + o.key_file + ": " + Reason());
    }
  }
  // Sessions are resumed per connection by the client (it keeps the last session of each endpoint).
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_CLIENT);
  return ctx;
}

Result<std::shared_ptr<ClientContext>> ClientContext::Load(ClientContextOptions options) {
  HCPRP_ASSIGN_OR_RETURN(auto built, Build(options));
  return std::shared_ptr<ClientContext>(new ClientContext(std::move(options), std::move(built)));
}

}  // namespace hcprp::tls
