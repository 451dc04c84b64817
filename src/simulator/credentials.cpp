// Break-glass credentials of a cluster: requests (with a certificate signing request, or without
// one: the simulator makes the key too), their states, revocation, the certificates issued and the
// check of a presented certificate. Every certificate is signed by the cluster's own CA, created
// with its first credential and persisted with the cluster.
#include <algorithm>

#include "core/base64.h"
#include "core/time.h"
#include "pki/x509.h"
#include "simulator/service_internal.h"

namespace hcprp::simulator {

using http::StatusCode;

namespace {

// The subject of the certificates the simulator makes for a credential requested without a CSR.
constexpr std::string_view kBreakGlassUserPrefix = "system:customer-break-glass:";
constexpr std::string_view kMastersGroup = "system:masters";
constexpr auto kCaValidity = std::chrono::hours(24 * 365 * 10);

std::string Kubeconfig(const std::string& name, const std::string& api, const std::string& ca_pem,
                       const std::string& cert_pem, const std::string& key_pem) {
  std::string out = "apiVersion: v1\nkind: Config\nclusters:\n- name: " + name +
                    "\n  cluster:\n    server: " + api +
                    "\n    certificate-authority-data: " + Base64Encode(ca_pem) +
                    "\ncontexts:\n- name: admin\n  context:\n    cluster: " + name +
                    "\n    user: admin\ncurrent-context: admin\nusers:\n- name: admin\n  user:\n"
                    "    client-certificate-data: " +
                    Base64Encode(cert_pem) + "\n";
  if (!key_pem.empty()) out += "    client-key-data: " + Base64Encode(key_pem) + "\n";
  return out;
}

bool Revoked(const std::string& status) { return status == "awaiting_revocation" || status == "revoked"; }

}  // namespace

void Service::SetCredentialStatusLocked(Txn& txn, Record& rec, std::string status, TimePoint at) {
  txn.before.try_emplace(rec.href, rec);
  rec.object["status"] = status;
  rec.state_since = at;
  rec.has_next = false;
  rec.next_state.clear();
  if (status == "issuing") {
    rec.has_next = true;
    rec.next_state = "issued";
    rec.next_at = at + options_.provisioner->CredentialIssueTime();
  } else if (status == "issued") {
    rec.object["kubeconfig"] = rec.pending_kubeconfig;
    rec.pending_kubeconfig.clear();
    if (auto exp = ParseRfc3339(GetString(rec.object, "expiration_timestamp").value_or("")); exp.ok()) {
      rec.has_next = true;
      rec.next_state = "expired";
      rec.next_at = std::max(*exp, at);
    }
  } else if (status == "awaiting_revocation") {
    rec.object.erase("kubeconfig");
    rec.pending_kubeconfig.clear();
    Record* cluster = FindLocked(rec.parent, kCluster);
    rec.has_next = true;
    rec.next_state = "revoked";
    rec.next_at = cluster ? cluster->revocation_due : at;
  } else {
    rec.object.erase("kubeconfig");
    rec.pending_kubeconfig.clear();
    if (status == "revoked") rec.object["revocation_timestamp"] = FormatRfc3339(at);
  }
  AddEventLocked(txn, rec.href, rec.kind, status, rec.object);
}

void Service::OnRevocationDue(const std::string& href) {
  MutexLock lock(mu_);
  Record* rec = FindLocked(href, kCluster);
  if (!rec || rec->revocation_state != "revoking") return;
  const TimePoint now = options_.clock->Now();
  if (rec->revocation_due > now) {
    ScheduleLocked(*rec);
    return;
  }
  Txn txn;
  Record& r = TouchLocked(txn, href);
  r.revocation_state = "revoked";
  r.revocation_done = now;
  const std::string prefix = href + "/break_glass_credentials/";
  std::vector<std::string> creds;
  for (auto it = records_.lower_bound(prefix); it != records_.end() && it->first.rfind(prefix, 0) == 0;
       ++it) {
    if (it->second.state() == "awaiting_revocation") creds.push_back(it->first);
  }
  for (const auto& c : creds) SetCredentialStatusLocked(txn, TouchLocked(txn, c), "revoked", now);
  AddEventLocked(txn, href + "/revoke_credentials", "CredentialRevocation", "revoked", RevocationLocked(r));
  Status st = CommitLocked(txn);
  if (!st.ok() && options_.logger) {
    options_.logger->Error("cannot persist a revocation", {{"href", href}, {"error", st.error().ToString()}});
  }
}

json::object Service::RevocationLocked(const Record& rec) const {
  json::object o{{"kind", "CredentialRevocation"},
                 {"href", rec.href + "/revoke_credentials"},
                 {"state", rec.revocation_state.empty() ? "none" : rec.revocation_state}};
  if (!rec.revocation_state.empty()) o["start_timestamp"] = FormatRfc3339(rec.revocation_started);
  if (rec.revocation_state == "revoked") o["completion_timestamp"] = FormatRfc3339(rec.revocation_done);
  return o;
}

http::Response Service::RequestAdminCredential(const http::Request& req, const std::string& cluster_href) {
  Duration ttl = std::chrono::hours(24);
  std::string csr;
  if (!req.body().empty()) {
    auto body = ParseJson(req.body());
    if (!body.ok() || !body->is_object())
      return OcmError(StatusCode::bad_request, "The body must be a JSON object");
    const json::object& b = body->as_object();
    if (auto secs = GetInt(b, "expiration_seconds"); secs && *secs > 0) ttl = std::chrono::seconds(*secs);
    if (const json::value* c = b.if_contains("certificate_signing_request")) {
      if (!c->is_string() || c->as_string().empty())
        return OcmError(StatusCode::bad_request, "certificate_signing_request must be a PEM string");
      csr = std::string(c->as_string());
    }
  }
  const std::string key(req["X-Idempotency-Key"]);
  const std::string collection = cluster_href + "/break_glass_credentials";
  MutexLock lock(mu_);
  if (shutdown_) return OcmError(StatusCode::service_unavailable, "The service is shutting down");
  Record* cluster = FindLocked(cluster_href, kCluster);
  if (!cluster) return OcmError(StatusCode::not_found, "Cluster '" + cluster_href + "' not found");
  if (!key.empty()) {
    auto it = idempotency_.find(collection + "\n" + key);
    if (it != idempotency_.end()) {
      if (Record* existing = FindLocked(it->second, kCredential))
        return Ocm(StatusCode::ok, existing->object);
    }
  }
  if (cluster->state() != "ready") {
    return OcmError(StatusCode::conflict, "Cluster '" + cluster_href + "' is in state '" + cluster->state() +
                                              "'; credentials need a ready cluster");
  }
  if (cluster->revocation_state == "revoking") {
    return OcmError(StatusCode::conflict, "Credentials of cluster '" + cluster_href + "' are being revoked");
  }
  const TimePoint now = options_.clock->Now();
  const std::string id = NewObjectId();
  const std::string username = std::string(kBreakGlassUserPrefix) + id;

  // The certificate: from the caller's request, or from a key made here.
  std::string client_key;
  if (csr.empty()) {
    auto made = pki::NewCsr(username, {std::string(kMastersGroup)});
    if (!made.ok()) return OcmError(StatusCode::internal_server_error, made.error().message());
    client_key = made->key_pem;
    csr = made->csr_pem;
  } else {
    auto parsed = pki::ParseCsr(csr);
    if (!parsed.ok()) {
      return OcmError(StatusCode::bad_request, "certificate_signing_request: " + parsed.error().message());
    }
    if (!parsed->signature_valid) {
      return OcmError(StatusCode::bad_request, "certificate_signing_request: the signature is invalid");
    }
  }
  Txn txn;
  if (cluster->ca_cert_pem.empty()) {
    auto ca = pki::NewCertificateAuthority(
        "customer-break-glass-signer." + std::string(GetString(cluster->object, "id").value_or("")), now,
        kCaValidity);
    if (!ca.ok()) return OcmError(StatusCode::internal_server_error, ca.error().message());
    Record& c = TouchLocked(txn, cluster_href);
    c.ca_key_pem = ca->key_pem;
    c.ca_cert_pem = ca->cert_pem;
  }
  auto cert =
      pki::SignCsr(pki::CertificateAuthority{cluster->ca_key_pem, cluster->ca_cert_pem}, csr, now, ttl);
  if (!cert.ok()) {
    (void)CommitLocked(txn);  // keeps the new CA, if any; nothing else changed
    return OcmError(StatusCode::internal_server_error,
                    "Cannot sign the certificate: " + cert.error().message());
  }
  const std::string href = collection + "/" + id;
  Record rec;
  rec.kind = std::string(kCredential);
  rec.href = href;
  rec.parent = cluster_href;
  rec.created = next_created_++;
  if (!key.empty()) {
    rec.idem_collection = collection;
    rec.idem_key = key;
  }
  const json::object* api = hcprp::GetObject(cluster->object, "api");
  const std::string cluster_name(GetString(cluster->object, "name").value_or("cluster"));
  const std::string api_url(api ? GetString(*api, "url").value_or("") : "");
  rec.object = json::object{{"kind", kCredential},
                            {"id", id},
                            {"href", href},
                            {"username", username},
                            {"cluster_name", cluster_name},
                            {"api_url", api_url},
                            {"creation_timestamp", FormatRfc3339(now)},
                            {"expiration_timestamp", FormatRfc3339(cert->info.not_after)},
                            {"certificate", json::object{{"serial", cert->info.serial},
                                                         {"subject", cert->info.subject},
                                                         {"not_before", FormatRfc3339(cert->info.not_before)},
                                                         {"not_after", FormatRfc3339(cert->info.not_after)},
                                                         {"pem", cert->pem}}}};
  rec.pending_kubeconfig = Kubeconfig(cluster_name, api_url, cluster->ca_cert_pem, cert->pem, client_key);
  InsertLocked(txn, std::move(rec));
  SetCredentialStatusLocked(txn, records_.at(href), "issuing", now);
  Status st = CommitLocked(txn);
  if (!st.ok()) return OcmError(StatusCode::internal_server_error, "Cannot persist the credential");
  return Ocm(StatusCode::created, records_.at(href).object);
}

http::Response Service::RevokeCredentials(const std::string& cluster_href) {
  MutexLock lock(mu_);
  if (shutdown_) return OcmError(StatusCode::service_unavailable, "The service is shutting down");
  Record* rec = FindLocked(cluster_href, kCluster);
  if (!rec) return OcmError(StatusCode::not_found, "Cluster '" + cluster_href + "' not found");
  if (rec->state() == "uninstalling") {
    return OcmError(StatusCode::conflict, "Cluster '" + cluster_href + "' is being deleted");
  }
  if (rec->revocation_state == "revoking") return Ocm(StatusCode::accepted, RevocationLocked(*rec));
  Txn txn;
  Record& r = TouchLocked(txn, cluster_href);
  const TimePoint now = options_.clock->Now();
  r.revocation_state = "revoking";
  r.revocation_started = now;
  r.revocation_due = now + options_.provisioner->RevocationTime();
  r.credential_generation++;
  AddEventLocked(txn, cluster_href + "/revoke_credentials", "CredentialRevocation", "revoking",
                 RevocationLocked(r));
  const std::string prefix = cluster_href + "/break_glass_credentials/";
  std::vector<std::string> creds;
  for (auto it = records_.lower_bound(prefix); it != records_.end() && it->first.rfind(prefix, 0) == 0;
       ++it) {
    const std::string s = it->second.state();
    if (s == "issuing" || s == "issued") creds.push_back(it->first);
  }
  for (const auto& c : creds) SetCredentialStatusLocked(txn, TouchLocked(txn, c), "awaiting_revocation", now);
  Status st = CommitLocked(txn);
  if (!st.ok()) return OcmError(StatusCode::internal_server_error, "Cannot persist the revocation");
  return Ocm(StatusCode::accepted, RevocationLocked(records_.at(cluster_href)));
}

http::Response Service::GetRevocation(const std::string& cluster_href) {
  MutexLock lock(mu_);
  Record* rec = FindLocked(cluster_href, kCluster);
  if (!rec) return OcmError(StatusCode::not_found, "Cluster '" + cluster_href + "' not found");
  return Ocm(StatusCode::ok, RevocationLocked(*rec));
}

http::Response Service::ListCertificates(const std::string& cluster_href) {
  MutexLock lock(mu_);
  Record* cluster = FindLocked(cluster_href, kCluster);
  if (!cluster) return OcmError(StatusCode::not_found, "Cluster '" + cluster_href + "' not found");
  std::vector<std::pair<uint64_t, json::object>> found;
  const std::string prefix = cluster_href + "/break_glass_credentials/";
  for (auto it = records_.lower_bound(prefix); it != records_.end() && it->first.rfind(prefix, 0) == 0;
       ++it) {
    const Record& c = it->second;
    const json::object* cert = hcprp::GetObject(c.object, "certificate");
    if (!cert) continue;
    const std::string status = c.state();
    json::object item{{"kind", "IssuedCertificate"},
                      {"serial", GetString(*cert, "serial").value_or("")},
                      {"subject", GetString(*cert, "subject").value_or("")},
                      {"not_before", GetString(*cert, "not_before").value_or("")},
                      {"not_after", GetString(*cert, "not_after").value_or("")},
                      {"credential", c.href},
                      {"credential_status", status},
                      {"revoked", Revoked(status)}};
    if (auto t = GetString(c.object, "revocation_timestamp")) item["revocation_timestamp"] = *t;
    found.emplace_back(c.created, std::move(item));
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  json::array items;
  for (auto& [_, item] : found) items.push_back(std::move(item));
  const auto n = static_cast<int64_t>(items.size());
  json::object body{{"kind", "IssuedCertificateList"}, {"page", 1}, {"size", n}, {"total", n}};
  if (!cluster->ca_cert_pem.empty()) body["certificate_authority"] = cluster->ca_cert_pem;
  body["items"] = std::move(items);
  return Ocm(StatusCode::ok, body);
}

http::Response Service::CheckCertificate(const http::Request& req, const std::string& cluster_href) {
  // The body is the PEM certificate, or {"certificate": "<PEM>"}.
  std::string pem = req.body();
  if (!pem.empty() && pem.front() == '{') {
    auto body = ParseJson(pem);
    const json::object* o = body.ok() && body->is_object() ? &body->as_object() : nullptr;
    auto c = o ? GetString(*o, "certificate") : std::nullopt;
    if (!c) {
      return OcmError(StatusCode::bad_request,
                      "The body must be a PEM certificate or {\"certificate\": PEM}");
    }
    pem = std::string(*c);
  }
  MutexLock lock(mu_);
  Record* cluster = FindLocked(cluster_href, kCluster);
  if (!cluster) return OcmError(StatusCode::not_found, "Cluster '" + cluster_href + "' not found");
  auto refused = [&](const std::string& why) {
    return OcmError(StatusCode::forbidden, "Certificate refused: " + why);
  };
  if (cluster->ca_cert_pem.empty()) return refused("no certificate has been issued for this cluster");
  auto info = pki::VerifyCertificate(pki::CertificateAuthority{cluster->ca_key_pem, cluster->ca_cert_pem},
                                     pem, options_.clock->Now());
  if (!info.ok()) {
    if (info.error().Is(ErrorCode::kInvalidArgument))
      return OcmError(StatusCode::bad_request, info.error().message());
    if (info.error().Is(ErrorCode::kPreconditionFailed)) return refused(info.error().message());
    return OcmError(StatusCode::internal_server_error, info.error().message());
  }
  const std::string prefix = cluster_href + "/break_glass_credentials/";
  for (auto it = records_.lower_bound(prefix); it != records_.end() && it->first.rfind(prefix, 0) == 0;
       ++it) {
    const json::object* cert = hcprp::GetObject(it->second.object, "certificate");
    if (!cert || GetString(*cert, "serial").value_or("") != info->serial) continue;
    const std::string status = it->second.state();
    if (Revoked(status)) return refused("certificate " + info->serial + " has been revoked");
    if (status == "expired") return refused("certificate " + info->serial + " has expired");
    return Ocm(StatusCode::ok, json::object{{"kind", "CertificateCheck"},
                                            {"valid", true},
                                            {"serial", info->serial},
                                            {"subject", info->subject},
                                            {"not_after", FormatRfc3339(info->not_after)},
                                            {"credential", it->second.href}});
  }
  return refused("certificate " + info->serial + " was not issued by this cluster");
}

}  // namespace hcprp::simulator
