// The OCM REST API (/api/aro_hcp/v1alpha1): routing, validation, and the object operations.
#include <algorithm>
#include <charconv>

#include "core/time.h"
#include "core/uuid.h"
#include "http/url.h"
#include "simulator/search.h"
#include "simulator/service_internal.h"

namespace hcprp::simulator {

using http::StatusCode;

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

namespace {

constexpr int64_t kDefaultPageSize = 100;
constexpr int64_t kMaxPageSize = 1000;

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    auto slash = path.find('/');
    auto seg = path.substr(0, slash);
    if (!seg.empty()) out.push_back(seg);
    if (slash == std::string_view::npos) break;
    path = path.substr(slash + 1);
  }
  return out;
}

void MergePatch(json::value& target, const json::value& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object{};
  auto& t = target.as_object();
  for (const auto& [k, v] : patch.as_object()) {
    if (v.is_null()) {
      t.erase(k);
    } else {
      MergePatch(t[k], v);
    }
  }
}

std::string StatusKind(std::string_view kind) { return std::string(kind) + "Status"; }

std::string ListKind(std::string_view kind) { return std::string(kind) + "List"; }

std::optional<std::string> ValidateCommon(const json::object& body, std::string_view kind,
                                          const VersionCatalogue& versions) {
  auto name = GetString(body, "name");
  if (!name || name->empty()) return std::string(kind) + " name is required";
  if (name->size() > 63) return "name '" + std::string(*name) + "' is longer than 63 characters";
  if (const json::object* v = hcprp::GetObject(body, "version")) {
    if (auto id = GetString(*v, "id"))
      return versions.Refusal(*id, GetString(*v, "channel_group").value_or(""));
  }
  return std::nullopt;
}

std::optional<std::string> ValidateCluster(const json::object& body, const VersionCatalogue& versions) {
  if (auto e = ValidateCommon(body, "cluster", versions)) return e;
  const json::object* az = hcprp::GetObject(body, "azure");
  if (!az || !GetString(*az, "subscription_id") || !GetString(*az, "resource_group_name")) {
    return "azure.subscription_id and azure.resource_group_name are required";
  }
  if (const json::object* n = hcprp::GetObject(body, "network")) {
    if (auto hp = GetInt(*n, "host_prefix"); hp && (*hp < 23 || *hp > 26)) {
      return "network.host_prefix must be between 23 and 26";
    }
  }
  return std::nullopt;
}

std::optional<std::string> ValidateNodePool(const json::object& body, const VersionCatalogue& versions) {
  if (auto e = ValidateCommon(body, "node pool", versions)) return e;
  if (auto r = GetInt(body, "replicas"); r && *r < 0) return "replicas must not be negative";
  if (const json::object* a = hcprp::GetObject(body, "autoscaling")) {
    auto mn = GetInt(*a, "min_replica");
    auto mx = GetInt(*a, "max_replica");
    if (mn && mx && *mn > *mx) return "autoscaling.min_replica must not exceed autoscaling.max_replica";
  }
  return std::nullopt;
}

std::optional<std::string> ValidateExternalAuth(const json::object& body, const VersionCatalogue& versions) {
  if (auto e = ValidateCommon(body, "external auth", versions)) return e;
  const json::object* issuer = hcprp::GetObject(body, "issuer");
  if (issuer && !GetString(*issuer, "url")) return "issuer.url is required";
  return std::nullopt;
}

std::optional<std::string> Validate(std::string_view kind, const json::object& body,
                                    const VersionCatalogue& versions) {
  if (kind == kCluster) return ValidateCluster(body, versions);
  if (kind == kNodePool) return ValidateNodePool(body, versions);
  return ValidateExternalAuth(body, versions);
}

std::string ClusterKey(const json::object& o) {
  const json::object* az = hcprp::GetObject(o, "azure");
  if (!az) return "";
  return ToLower(GetString(*az, "subscription_id").value_or("")) + "/" +
         ToLower(GetString(*az, "resource_group_name").value_or("")) + "/" +
         ToLower(GetString(o, "name").value_or(""));
}

// Members a client may not set or change.
constexpr std::string_view kServerManaged[] = {"kind", "id", "href", "status", "creation_timestamp"};

// The body of a create or update without the members the server manages; the reason (answered 400) when
// it is not a JSON object.
Result<json::object> ClientBody(const http::Request& req) {
  auto parsed = ParseJson(req.body());
  if (!parsed.ok()) return Error::InvalidArgument("Invalid JSON body: " + parsed.error().message());
  if (!parsed->is_object()) return Error::InvalidArgument("The body must be a JSON object");
  json::object body = std::move(parsed->as_object());
  for (auto k : kServerManaged) body.erase(k);
  return body;
}

bool Updatable(const std::string& state) {
  return state == "ready" || state == "error" || state == "recoverable_error";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// HTTP.

http::Response Service::Ocm(StatusCode status, const json::value& body) const {
  return http::JsonResponse(status, ToJson(body));
}

http::Response Service::OcmError(StatusCode status, const std::string& reason) const {
  std::string code = std::to_string(static_cast<unsigned>(status));
  json::object body{{"kind", "Error"},
                    {"id", code},
                    {"href", std::string(kApiPrefix) + "/errors/" + code},
                    {"code", "CLUSTERS-MGMT-" + code},
                    {"reason", reason},
                    {"operation_id", NewUuidV4()}};
  return Ocm(status, body);
}

http::Response Service::TooLarge(const http::Request&) {
  json::object body{{"kind", "Error"},
                    {"id", "413"},
                    {"href", std::string(kApiPrefix) + "/errors/413"},
                    {"code", "CLUSTERS-MGMT-413"},
                    {"reason", "Request body is too large"},
                    {"operation_id", NewUuidV4()}};
  return http::JsonResponse(StatusCode::payload_too_large, ToJson(body));
}

http::Response Service::Handle(http::Request&& req) {
  auto [path, query] = http::SplitTarget(req.target());
  if (path.rfind("/control", 0) == 0) return HandleControl(req, path);
  const bool graph = path == kGraphPath || path == kGraphPathV1;
  if (path.rfind(kApiPrefix, 0) != 0 && !graph)
    return OcmError(StatusCode::not_found, "Unknown path '" + std::string(path) + "'");

  int fault_status = 503;
  std::chrono::milliseconds delay{0};
  bool hang = false;
  HttpFault fault = DrawHttpFault(req, path, &fault_status, &delay, &hang);
  if (delay.count() > 0) InterruptibleSleep(delay);
  if (hang) return OcmError(StatusCode::gateway_timeout, "Injected fault: the request hung");
  auto status = static_cast<StatusCode>(fault_status);
  if (fault == HttpFault::kErrorBefore) return OcmError(status, "Injected fault: service unavailable");
  http::Response res = graph ? UpgradeGraph(req, query) : HandleApi(req, path, query);
  if (fault == HttpFault::kErrorAfter) return OcmError(status, "Injected fault: the answer was lost");
  return res;
}

http::Response Service::HandleApi(const http::Request& req, std::string_view path, std::string_view query) {
  path.remove_prefix(kApiPrefix.size());
  auto segs = SplitPath(path);
  const auto method = req.method();
  using http::Verb;
  auto not_allowed = [&] {
    return OcmError(StatusCode::method_not_allowed, "Method " + std::string(req.method_string()) +
                                                        " is not allowed on '" + std::string(path) + "'");
  };
  auto not_found = [&] {
    return OcmError(StatusCode::not_found,
                    "Unknown path '" + std::string(kApiPrefix) + std::string(path) + "'");
  };
  if (segs.empty()) return not_found();
  const std::string base(kApiPrefix);
  // An object of `kind` at `href`: read, update, delete.
  auto object = [&](const std::string& href, std::string_view kind) -> http::Response {
    if (method == Verb::get) return GetObject(href, kind);
    if (method == Verb::patch) return UpdateObject(req, href, kind);
    if (method == Verb::delete_) return DeleteObject(href, kind);
    return not_allowed();
  };
  // The answer when the cluster at `href` (named segs[1]) does not exist.
  auto missing_cluster = [&](const std::string& href) -> std::optional<http::Response> {
    MutexLock lock(mu_);
    if (FindLocked(href, kCluster)) return std::nullopt;
    return OcmError(StatusCode::not_found, "Cluster '" + std::string(segs[1]) + "' not found");
  };

  if (segs[0] == "events" && segs.size() == 1) {
    if (method != Verb::get) return not_allowed();
    return WatchEvents(query);
  }
  if (segs[0] == "versions") {
    if (method != Verb::get) return not_allowed();
    if (segs.size() == 1) return ListVersions(query);
    if (segs.size() == 2) return GetVersion(segs[1]);
    return not_found();
  }
  if (segs[0] != "clusters") return not_found();

  const std::string clusters = base + "/clusters";
  if (segs.size() == 1) {
    if (method == Verb::get) return ListObjects(kCluster, "", query);
    if (method == Verb::post) return CreateObject(req, kCluster, clusters, "");
    return not_allowed();
  }
  const std::string cluster = clusters + "/" + std::string(segs[1]);
  if (segs.size() == 2) return object(cluster, kCluster);
  const std::string_view sub = segs[2];
  if (segs.size() == 3) {
    if (sub == "status") return method == Verb::get ? GetStatus(cluster, kCluster) : not_allowed();
    if (sub == "request_admin_credential") {
      return method == Verb::post ? RequestAdminCredential(req, cluster) : not_allowed();
    }
    if (sub == "credentials") return not_found();
    if (sub == "revoke_credentials") {
      if (method == Verb::post) return RevokeCredentials(cluster);
      if (method == Verb::get) return GetRevocation(cluster);
      return not_allowed();
    }
    if (sub == "break_glass_credentials") {
      if (method == Verb::get) {
        if (auto missing = missing_cluster(cluster)) return *missing;
        return ListObjects(kCredential, cluster, query);
      }
      if (method == Verb::post) return RequestAdminCredential(req, cluster);
      if (method == Verb::delete_) {
        http::Response r = RevokeCredentials(cluster);
        return r.result() == StatusCode::accepted ? http::MakeResponse(StatusCode::no_content) : r;
      }
      return not_allowed();
    }
  }
  if (sub == "credentials" && segs.size() == 4) {
    if (segs[3] == "certificates") return method == Verb::get ? ListCertificates(cluster) : not_allowed();
    if (segs[3] == "check") return method == Verb::post ? CheckCertificate(req, cluster) : not_allowed();
    return not_found();
  }
  if (sub == "break_glass_credentials" && segs.size() == 4) {
    return method == Verb::get
               ? GetObject(cluster + "/break_glass_credentials/" + std::string(segs[3]), kCredential)
               : not_allowed();
  }
  std::string_view child_kind;
  if (sub == "node_pools") {
    child_kind = kNodePool;
  } else if (sub == "external_auth_configs") {
    child_kind = kExternalAuth;
  } else {
    return not_found();
  }
  const std::string collection = cluster + "/" + std::string(sub);
  if (segs.size() == 3) {
    if (auto missing = missing_cluster(cluster)) return *missing;
    if (method == Verb::get) return ListObjects(child_kind, cluster, query);
    if (method == Verb::post) return CreateObject(req, child_kind, collection, cluster);
    return not_allowed();
  }
  const std::string child = collection + "/" + std::string(segs[3]);
  if (segs.size() == 4) return object(child, child_kind);
  if (segs.size() == 5 && segs[4] == "status") {
    return method == Verb::get ? GetStatus(child, child_kind) : not_allowed();
  }
  return not_found();
}

http::Response Service::ListObjects(std::string_view kind, const std::string& parent,
                                    std::string_view query) {
  int64_t page = 1, size = kDefaultPageSize;
  SearchExpr search;
  for (const auto& p : http::ParseQuery(query)) {
    if (p.name == "page") {
      auto v = ParseInt(p.value);
      if (!v || *v < 1) return OcmError(StatusCode::bad_request, "page must be a positive integer");
      page = *v;
    } else if (p.name == "size") {
      auto v = ParseInt(p.value);
      if (!v || *v < 0) return OcmError(StatusCode::bad_request, "size must be a non-negative integer");
      size = std::min(*v, kMaxPageSize);
    } else if (p.name == "search") {
      auto s = ParseSearch(p.value);
      if (!s.ok())
        return OcmError(StatusCode::bad_request, "Invalid search expression: " + s.error().message());
      search = std::move(*s);
    }
  }
  // The matches are ordered and cut to the page before any object is copied: a page of a large
  // collection costs its own objects, not the whole collection's.
  json::array items;
  std::vector<std::pair<uint64_t, const Record*>> matches;
  {
    MutexLock lock(mu_);
    // A child's href extends its parent's ("<cluster>/node_pools/<id>"): the children of a parent are
    // one range of the map, so listing a cluster's node pools does not scan every object.
    const std::string prefix = parent.empty() ? std::string() : parent + "/";
    for (auto it = records_.lower_bound(prefix); it != records_.end() && it->first.starts_with(prefix);
         ++it) {
      const Record& rec = it->second;
      if (rec.kind != kind || rec.parent != parent) continue;
      if (Matches(search, rec.object)) matches.emplace_back(rec.created, &rec);
    }
    std::sort(matches.begin(), matches.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const size_t begin = static_cast<size_t>((page - 1) * size);
    for (size_t i = begin; i < matches.size() && items.size() < static_cast<size_t>(size); ++i) {
      items.push_back(matches[i].second->object);
    }
  }
  json::object body{{"kind", ListKind(kind)},
                    {"page", page},
                    {"size", static_cast<int64_t>(items.size())},
                    {"total", static_cast<int64_t>(matches.size())},
                    {"items", std::move(items)}};
  return Ocm(StatusCode::ok, body);
}

http::Response Service::CreateObject(const http::Request& req, std::string_view kind,
                                     const std::string& collection, const std::string& parent) {
  auto client_body = ClientBody(req);
  if (!client_body.ok()) return OcmError(StatusCode::bad_request, client_body.error().message());
  json::object body = std::move(*client_body);
  if (auto problem = Validate(kind, body, *versions())) return OcmError(StatusCode::bad_request, *problem);
  const std::string key(req["X-Idempotency-Key"]);

  MutexLock lock(mu_);
  if (shutdown_) return OcmError(StatusCode::service_unavailable, "The service is shutting down");
  if (!key.empty()) {
    auto it = idempotency_.find(collection + "\n" + key);
    if (it != idempotency_.end()) {
      if (Record* existing = FindLocked(it->second, kind)) return Ocm(StatusCode::ok, existing->object);
    }
  }
  const std::string name(GetString(body, "name").value_or(""));
  if (!parent.empty()) {
    Record* p = FindLocked(parent, kCluster);
    if (!p) return OcmError(StatusCode::not_found, "Cluster '" + parent + "' not found");
    if (p->state() == "uninstalling") {
      return OcmError(StatusCode::conflict, "Cluster '" + parent + "' is being deleted");
    }
    std::string prefix = collection + "/";
    for (auto it = records_.lower_bound(prefix); it != records_.end() && it->first.rfind(prefix, 0) == 0;
         ++it) {
      if (EqualsIgnoreCase(GetString(it->second.object, "name").value_or(""), name)) {
        return OcmError(StatusCode::conflict, std::string(kind)
                                                  .append(" '")
                                                  .append(name)
                                                  .append("' already exists in cluster '")
                                                  .append(parent)
                                                  .append("'"));
      }
    }
  } else {
    const std::string ck = ClusterKey(body);
    for (const auto& [href, rec] : records_) {
      if (rec.kind == kCluster && ClusterKey(rec.object) == ck) {
        return OcmError(
            StatusCode::conflict,
            "Cluster '" + name + "' already exists in subscription '" +
                std::string(GetString(*hcprp::GetObject(body, "azure"), "subscription_id").value_or("")) +
                "' and resource group");
      }
    }
  }

  const std::string id = NewObjectId();
  const std::string href = collection + "/" + id;
  const TimePoint now = options_.clock->Now();
  json::object obj{{"kind", kind}, {"id", id}, {"href", href}};
  for (auto& [k, v] : body) obj[k] = std::move(v);
  obj["creation_timestamp"] = FormatRfc3339(now);
  if (kind == kCluster || kind == kNodePool) {
    json::object* ver = hcprp::GetObject(obj, "version") ? &obj["version"].as_object() : nullptr;
    if (!ver || !GetString(*ver, "id")) {
      const std::shared_ptr<const VersionCatalogue> catalogue = versions();
      const CatalogueVersion& dv = catalogue->default_version();
      json::object v{{"id", dv.id()}, {"channel_group", dv.channel_group}};
      if (ver) {
        for (auto& [k, x] : *ver) v[k] = x;
      }
      obj["version"] = std::move(v);
    }
  }
  std::string installs = PinVersion(obj);
  if (kind == kCluster) {
    std::string region = "eastus";
    if (const json::object* r = hcprp::GetObject(obj, "region"))
      region = std::string(GetString(*r, "id").value_or(region));
    const std::string domain = id.substr(0, 8) + "." + region + ".aroapp-hcp.example.com";
    json::value& api = obj["api"];
    if (!api.is_object()) api = json::object{};
    api.as_object()["url"] = "https://api." + domain + ":443";
    obj["console"] = json::object{{"url", "https://console-openshift-console.apps." + domain}};
    json::value& dns = obj["dns"];
    if (!dns.is_object()) dns = json::object{};
    dns.as_object()["base_domain"] = domain;
    json::value& az = obj["azure"];
    az.as_object()["issuer_url"] = "https://oidc." + region + ".aroapp-hcp.example.com/" + id;
    obj["node_pools"] = json::object{{"kind", "NodePoolListLink"}, {"href", href + "/node_pools"}};
  }

  Record rec;
  rec.kind = std::string(kind);
  rec.href = href;
  rec.parent = parent;
  rec.object = std::move(obj);
  rec.created = next_created_++;
  rec.target_version = std::move(installs);
  if (!key.empty()) {
    rec.idem_collection = collection;
    rec.idem_key = key;
  }
  Txn txn;
  InsertLocked(txn, std::move(rec));
  BeginOperationLocked(txn, records_.at(href), Operation::kCreate, true);
  Status st = CommitLocked(txn);
  if (!st.ok()) return OcmError(StatusCode::internal_server_error, "Cannot persist the " + std::string(kind));
  return Ocm(StatusCode::created, records_.at(href).object);
}

http::Response Service::GetObject(const std::string& href, std::string_view kind) {
  MutexLock lock(mu_);
  Record* rec = FindLocked(href, kind);
  if (!rec) return OcmError(StatusCode::not_found, std::string(kind) + " '" + href + "' not found");
  return Ocm(StatusCode::ok, rec->object);
}

http::Response Service::GetStatus(const std::string& href, std::string_view kind) {
  MutexLock lock(mu_);
  Record* rec = FindLocked(href, kind);
  if (!rec) return OcmError(StatusCode::not_found, std::string(kind) + " '" + href + "' not found");
  json::object body{{"kind", StatusKind(kind)},
                    {"id", GetString(rec->object, "id").value_or("")},
                    {"href", href + "/status"}};
  if (const json::object* st = hcprp::GetObject(rec->object, "status")) {
    for (const auto& [k, v] : *st) body[k] = v;
  }
  return Ocm(StatusCode::ok, body);
}

http::Response Service::UpdateObject(const http::Request& req, const std::string& href,
                                     std::string_view kind) {
  auto client_body = ClientBody(req);
  if (!client_body.ok()) return OcmError(StatusCode::bad_request, client_body.error().message());
  json::object patch = std::move(*client_body);

  MutexLock lock(mu_);
  if (shutdown_) return OcmError(StatusCode::service_unavailable, "The service is shutting down");
  Record* rec = FindLocked(href, kind);
  if (!rec) return OcmError(StatusCode::not_found, std::string(kind) + " '" + href + "' not found");
  const std::string state = rec->state();
  // A cluster whose control plane upgrades still takes other changes; they apply at once and the
  // upgrade goes on. Node pools, whose machines an upgrade replaces, wait for it to end.
  const bool upgrading_cluster = kind == kCluster && rec->op == Operation::kUpgrade && state == "updating";
  if (!Updatable(state) && !upgrading_cluster) {
    return OcmError(StatusCode::conflict,
                    std::string(kind) + " '" + href + "' is in state '" + state + "' and cannot be updated");
  }
  if (auto refused = PinMinorChange(rec->object, patch)) return OcmError(StatusCode::bad_request, *refused);
  json::value merged = rec->object;
  MergePatch(merged, patch);
  json::object& m = merged.as_object();
  if (const json::value* properties = patch.if_contains("properties");
      properties && properties->is_object()) {
    // The Cluster Service replaces a cluster's properties on a PATCH; an empty map leaves none.
    if (properties->get_object().empty()) {
      m.erase("properties");
    } else {
      m["properties"] = *properties;
    }
  }
  if (GetString(m, "name") != GetString(rec->object, "name")) {
    return OcmError(StatusCode::bad_request, "The name of a " + std::string(kind) + " cannot change");
  }
  if (kind == kCluster && ClusterKey(m) != ClusterKey(rec->object)) {
    return OcmError(StatusCode::bad_request, "The Azure identity of a cluster cannot change");
  }
  if (auto problem = Validate(kind, m, *versions())) return OcmError(StatusCode::bad_request, *problem);
  std::string upgrade_to = UpgradeTarget(kind, patch, m);
  if (upgrading_cluster) return UpdateUpgradingLocked(href, std::move(m), upgrade_to);
  if (upgrade_to.empty() && m == rec->object) return Ocm(StatusCode::ok, rec->object);

  Txn txn;
  Record& r = TouchLocked(txn, href);
  r.object = std::move(m);
  const Operation op = upgrade_to.empty() ? Operation::kUpdate : Operation::kUpgrade;
  if (op == Operation::kUpgrade) r.target_version = std::move(upgrade_to);
  BeginOperationLocked(txn, r, op, true);
  Status st = CommitLocked(txn);
  if (!st.ok()) return OcmError(StatusCode::internal_server_error, "Cannot persist the update");
  return Ocm(StatusCode::ok, records_.at(href).object);
}

http::Response Service::UpdateUpgradingLocked(const std::string& href, json::object merged,
                                              const std::string& upgrade_to) {
  Record& rec = records_.at(href);
  if (!upgrade_to.empty() && upgrade_to != rec.target_version) {
    return OcmError(StatusCode::conflict, "Cluster '" + href + "' is upgrading to " + rec.target_version +
                                              " and cannot start another upgrade");
  }
  if (merged == rec.object) return Ocm(StatusCode::ok, rec.object);
  Txn txn;
  Record& r = TouchLocked(txn, href);
  r.object = std::move(merged);
  // The object changed without a new operation: one event with the state it stays in.
  AddEventLocked(txn, href, r.kind, r.state(), r.object);
  Status st = CommitLocked(txn);
  if (!st.ok()) return OcmError(StatusCode::internal_server_error, "Cannot persist the update");
  return Ocm(StatusCode::ok, records_.at(href).object);
}

http::Response Service::DeleteObject(const std::string& href, std::string_view kind) {
  MutexLock lock(mu_);
  if (shutdown_) return OcmError(StatusCode::service_unavailable, "The service is shutting down");
  Record* rec = FindLocked(href, kind);
  if (!rec) return OcmError(StatusCode::not_found, std::string(kind) + " '" + href + "' not found");
  if (rec->state() == "uninstalling") return http::MakeResponse(StatusCode::no_content);
  Txn txn;
  BeginOperationLocked(txn, TouchLocked(txn, href), Operation::kDelete, true);
  if (kind == kCluster) {
    // Node pools and external auths are deleted with their cluster; its break-glass credentials go
    // when it is gone (RemoveClusterLocked), they have no deletion of their own.
    std::vector<std::string> children;
    for (const char* sub : kChildCollections) {
      const std::string prefix = href + sub;
      for (auto it = records_.lower_bound(prefix); it != records_.end() && it->first.rfind(prefix, 0) == 0;
           ++it) {
        if (it->second.state() != "uninstalling") children.push_back(it->first);
      }
    }
    for (const auto& c : children) BeginOperationLocked(txn, TouchLocked(txn, c), Operation::kDelete, false);
  }
  Status st = CommitLocked(txn);
  if (!st.ok()) return OcmError(StatusCode::internal_server_error, "Cannot persist the deletion");
  return http::MakeResponse(StatusCode::no_content);
}

http::Response Service::ListVersions(std::string_view query) {
  SearchExpr search;
  if (auto s = http::FindQueryParam(query, "search")) {
    auto e = ParseSearch(*s);
    if (!e.ok())
      return OcmError(StatusCode::bad_request, "Invalid search expression: " + e.error().message());
    search = std::move(*e);
  }
  json::array items;
  const std::shared_ptr<const VersionCatalogue> catalogue = versions();
  for (const auto& v : catalogue->versions()) {
    json::object o = catalogue->ToOcm(v);
    if (Matches(search, o)) items.push_back(std::move(o));
  }
  int64_t n = static_cast<int64_t>(items.size());
  return Ocm(
      StatusCode::ok,
      json::object{
          {"kind", "VersionList"}, {"page", 1}, {"size", n}, {"total", n}, {"items", std::move(items)}});
}

http::Response Service::GetVersion(std::string_view id) {
  const std::shared_ptr<const VersionCatalogue> catalogue = versions();
  if (const CatalogueVersion* v = catalogue->Find(id)) return Ocm(StatusCode::ok, catalogue->ToOcm(*v));
  return OcmError(StatusCode::not_found, "Version '" + std::string(id) + "' not found");
}

}  // namespace hcprp::simulator
