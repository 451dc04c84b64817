#include "frontend/testing/fake_cluster_service.h"

namespace hcprp::frontend::testing {

Result<json::object> FakeClusterService::Create(std::string_view collection_href, const json::object& body,
                                                std::string_view idempotency_key) {
  std::lock_guard lock(mu_);
  calls_.push_back("Create " + std::string(collection_href));
  if (fail_all_) return *fail_all_;
  if (fail_next_create_) {
    Error e = *fail_next_create_;
    fail_next_create_.reset();
    return e;
  }
  if (auto it = by_key_.find(std::string(idempotency_key)); it != by_key_.end())
    return objects_.at(it->second);
  std::string href = std::string(collection_href) + "/" + "obj" + std::to_string(next_id_++);
  json::object o = body;
  o["id"] = href.substr(href.rfind('/') + 1);
  o["href"] = href;
  o["state"] = "pending";
  if (o.contains("region")) {
    // A cluster: the service assigns its endpoints and OIDC issuer, as the real one does.
    std::string domain = o["id"].as_string().c_str() + std::string(".example.test");
    o["api"] = json::object{{"url", "https://api." + domain + ":443"}};
    o["console"] = json::object{{"url", "https://console." + domain}};
    o["dns"] = json::object{{"base_domain", domain}};
    if (!o["azure"].is_object()) o["azure"] = json::object();
    o["azure"].as_object()["issuer_url"] = "https://oidc.example.test/" + std::string(o["id"].as_string());
  }
  objects_[href] = o;
  created_bodies_.push_back(body);
  by_key_[std::string(idempotency_key)] = href;
  return o;
}

Result<json::object> FakeClusterService::Get(std::string_view href) {
  std::lock_guard lock(mu_);
  calls_.push_back("Get " + std::string(href));
  if (fail_all_) return *fail_all_;
  if (auto slash = href.rfind('/'); versions_ && href.substr(0, slash).ends_with("/versions")) {
    for (const auto& v : *versions_) {
      if (v.is_object() && GetString(v.as_object(), "id") == href.substr(slash + 1)) return v.as_object();
    }
  }
  auto it = objects_.find(std::string(href));
  if (it == objects_.end()) return Error::NotFound(std::string(href));
  return it->second;
}

Result<json::object> FakeClusterService::GetStatus(std::string_view href) {
  auto o = Get(href);
  if (!o.ok()) return o.error();
  return json::object{{"state", o->at("state")}};
}

Result<json::object> FakeClusterService::Update(std::string_view href, const json::object& patch) {
  std::lock_guard lock(mu_);
  calls_.push_back("Update " + std::string(href));
  if (fail_all_) return *fail_all_;
  auto it = objects_.find(std::string(href));
  if (it == objects_.end()) return Error::NotFound(std::string(href));
  for (const auto& [k, v] : patch) it->second[k] = v;
  return it->second;
}

Status FakeClusterService::Delete(std::string_view href) {
  std::lock_guard lock(mu_);
  calls_.push_back("Delete " + std::string(href));
  if (fail_all_) return *fail_all_;
  std::string prefix = std::string(href) + "/";
  bool found = false;
  for (auto it = objects_.begin(); it != objects_.end();) {
    if (it->first == href || it->first.rfind(prefix, 0) == 0) {
      found = true;
      it = objects_.erase(it);
    } else {
      ++it;
    }
  }
  if (!found) return Error::NotFound(std::string(href));
  return Status::Ok();
}

Result<json::object> FakeClusterService::Action(std::string_view href, std::string_view action,
                                                const json::object& body) {
  std::lock_guard lock(mu_);
  calls_.push_back("Action " + std::string(href) + " " + std::string(action));
  if (fail_all_) return *fail_all_;
  if (objects_.find(std::string(href)) == objects_.end()) return Error::NotFound(std::string(href));
  if (action == "request_admin_credential") {
    std::string cred = std::string(href) + "/break_glass_credentials/cred" + std::to_string(next_id_++);
    json::object o;
    o["href"] = cred;
    o["kubeconfig"] = "apiVersion: v1\nkind: Config\n";
    o["expiration_timestamp"] = "2025-01-02T00:00:00Z";
    if (const auto* csr = body.if_contains("certificate_signing_request")) o["csr"] = *csr;
    objects_[cred] = o;
    return o;
  }
  return json::object{{"href", std::string(href)}};
}

Result<json::array> FakeClusterService::List(std::string_view collection_href, std::string_view) {
  std::lock_guard lock(mu_);
  calls_.push_back("List " + std::string(collection_href));
  if (fail_all_) return *fail_all_;
  if (collection_href.ends_with("/versions") && versions_) return *versions_;
  return json::array{};
}

Result<clusterservice::EventPage> FakeClusterService::WatchEvents(uint64_t, std::chrono::milliseconds) {
  return Error::Unavailable("no event stream");
}

void FakeClusterService::FailWith(std::optional<Error> error) {
  std::lock_guard lock(mu_);
  fail_all_ = std::move(error);
}

void FakeClusterService::FailNextCreate(Error error) {
  std::lock_guard lock(mu_);
  fail_next_create_ = std::move(error);
}

std::vector<json::object> FakeClusterService::CreatedBodies() const {
  std::lock_guard lock(mu_);
  return created_bodies_;
}

bool FakeClusterService::Exists(std::string_view href) const {
  std::lock_guard lock(mu_);
  return objects_.count(std::string(href)) > 0;
}

size_t FakeClusterService::ObjectCount() const {
  std::lock_guard lock(mu_);
  return objects_.size();
}

std::vector<std::string> FakeClusterService::Calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

void FakeClusterService::SetVersions(json::array versions) {
  std::lock_guard lock(mu_);
  versions_ = std::move(versions);
}

}  // namespace hcprp::frontend::testing
