#include "clusterservice/testing/fake_cluster_service.h"

#include "core/time.h"

namespace hcprp::clusterservice::testing {

namespace {

std::string KindOfCollection(std::string_view collection) {
  if (collection.ends_with("/node_pools")) return "NodePool";
  if (collection.ends_with("/external_auth_configs")) return "ExternalAuth";
  if (collection.ends_with("/break_glass_credentials")) return "BreakGlassCredential";
  return "Cluster";
}

bool Under(std::string_view href, std::string_view parent) {
  return href.size() > parent.size() && href.starts_with(parent) && href[parent.size()] == '/';
}

}  // namespace

FakeClusterServiceOptions ImmediateOptions() {
  FakeClusterServiceOptions o;
  o.deletes_at_once = true;
  o.assign_endpoints = true;
  o.href_stem = "obj";
  o.initial_state = "pending";
  o.events = false;
  return o;
}

std::optional<Error> FakeClusterService::CallLocked(std::string call) {
  calls_.push_back(std::move(call));
  return fail_all_;
}

std::string FakeClusterService::NewHrefLocked(std::string_view collection) {
  return std::string(collection) + "/" + options_.href_stem + std::to_string(next_id_++);
}

json::object FakeClusterService::RenderLocked(const Object& o) const {
  json::object out = o.fields;
  if (o.kind == "BreakGlassCredential") {
    out["status"] = o.state;
  } else {
    out["status"] = json::object{{"state", o.state}};
  }
  return out;
}

void FakeClusterService::PublishLocked(const std::string& href, const Object* o) {
  if (!events_enabled_) return;
  // Built in the stream's wire shape and parsed by the client's own parser.
  json::object item{{"sequence", next_sequence_++}, {"href", href}};
  if (o != nullptr) {
    item["kind"] = o->kind;
    item["state"] = o->state;
    // Like the simulator: the whole object, with state and provision error under "status".
    json::object status{{"state", o->state}};
    if (!o->error_code.empty()) status["provision_error_code"] = o->error_code;
    if (!o->error_message.empty()) status["provision_error_message"] = o->error_message;
    if (!o->conditions.empty()) status["conditions"] = o->conditions;
    json::object object = o->fields;
    object["kind"] = o->kind;
    object["href"] = href;
    object["status"] = std::move(status);
    item["object"] = std::move(object);
  } else {
    item["state"] = kDeletedState;
  }
  Event e = ParseEvent(item);
  events_.push_back(std::move(e));
  cv_.NotifyAll();
}

Result<json::object> FakeClusterService::Create(std::string_view collection_href, const json::object& body,
                                                std::string_view idempotency_key) {
  MutexLock lock(mu_);
  if (auto failed = CallLocked("Create " + std::string(collection_href))) return *failed;
  ++creates_;
  if (fail_next_create_) {
    Error e = *fail_next_create_;
    fail_next_create_.reset();
    return e;
  }
  if (auto it = by_key_.find(std::string(idempotency_key)); it != by_key_.end()) {
    auto o = objects_.find(it->second);
    if (o != objects_.end()) return o->second.fields;
  }
  if (!reject_creates_.empty()) return Error::InvalidArgument(reject_creates_);
  std::string href = NewHrefLocked(collection_href);
  Object o;
  o.kind = KindOfCollection(collection_href);
  o.fields = body;
  o.fields["id"] = href.substr(href.rfind('/') + 1);
  o.fields["href"] = href;
  o.fields["kind"] = o.kind;
  o.fields["creation_timestamp"] = FormatRfc3339(clock_->Now());
  if (options_.assign_endpoints && o.fields.contains("region")) {
    // A cluster: the service assigns its endpoints and OIDC issuer, as the real one does.
    std::string id = href.substr(href.rfind('/') + 1);
    std::string domain = id + ".example.test";
    o.fields["api"] = json::object{{"url", "https://api." + domain + ":443"}};
    o.fields["console"] = json::object{{"url", "https://console." + domain}};
    o.fields["dns"] = json::object{{"base_domain", domain}};
    if (!o.fields["azure"].is_object()) o.fields["azure"] = json::object();
    o.fields["azure"].as_object()["issuer_url"] = "https://oidc.example.test/" + id;
  }
  o.state = options_.initial_state;
  Object& stored = objects_[href] = std::move(o);
  created_bodies_.push_back(body);
  if (!idempotency_key.empty()) by_key_[std::string(idempotency_key)] = href;
  PublishLocked(href, &stored);
  return stored.fields;
}

Result<json::object> FakeClusterService::Get(std::string_view href) {
  MutexLock lock(mu_);
  if (auto failed = CallLocked("Get " + std::string(href))) return *failed;
  if (auto slash = href.rfind('/'); versions_ && href.substr(0, slash).ends_with("/versions")) {
    for (const auto& v : *versions_) {
      if (v.is_object() && GetString(v.as_object(), "id") == href.substr(slash + 1)) return v.as_object();
    }
  }
  auto it = objects_.find(std::string(href));
  if (it == objects_.end()) return Error::NotFound("no object " + std::string(href));
  return RenderLocked(it->second);
}

Result<json::object> FakeClusterService::GetStatus(std::string_view href) {
  ++status_reads_;
  MutexLock lock(mu_);
  if (auto failed = CallLocked("Get " + std::string(href))) return *failed;
  auto it = objects_.find(std::string(href));
  if (it == objects_.end()) return Error::NotFound("no object " + std::string(href));
  json::object out{{"state", it->second.state}};
  if (!it->second.error_code.empty()) out["provision_error_code"] = it->second.error_code;
  if (!it->second.error_message.empty()) out["provision_error_message"] = it->second.error_message;
  if (!it->second.conditions.empty()) out["conditions"] = it->second.conditions;  // as the service's status
  return out;
}

Result<json::object> FakeClusterService::Update(std::string_view href, const json::object& patch) {
  MutexLock lock(mu_);
  if (auto failed = CallLocked("Update " + std::string(href))) return *failed;
  if (fail_updates_) return *fail_updates_;
  auto it = objects_.find(std::string(href));
  if (it == objects_.end()) return Error::NotFound("no object " + std::string(href));
  for (const auto& kv : patch) it->second.fields[kv.key()] = kv.value();
  return it->second.fields;
}

Status FakeClusterService::Delete(std::string_view href) {
  MutexLock lock(mu_);
  if (auto failed = CallLocked("Delete " + std::string(href))) return *failed;
  ++deletes_;
  auto it = objects_.find(std::string(href));
  if (it == objects_.end()) return Error::NotFound("no object " + std::string(href));
  if (options_.deletes_at_once) {
    RemoveLocked(href);
    return Status::Ok();
  }
  for (auto& [h, o] : objects_) {
    if ((h == href || Under(h, href)) && o.state != "uninstalling") {
      o.state = "uninstalling";
      PublishLocked(h, &o);
    }
  }
  return Status::Ok();
}

Result<json::object> FakeClusterService::Action(std::string_view href, std::string_view action,
                                                const json::object& body) {
  MutexLock lock(mu_);
  if (auto failed = CallLocked("Action " + std::string(href) + " " + std::string(action))) return *failed;
  if (objects_.count(std::string(href)) == 0) return Error::NotFound("no object " + std::string(href));
  if (action == "request_admin_credential") {
    std::string cred = NewHrefLocked(std::string(href) + "/break_glass_credentials");
    Object o;
    o.kind = "BreakGlassCredential";
    o.fields = json::object{{"id", cred.substr(cred.rfind('/') + 1)},
                            {"href", cred},
                            {"kind", o.kind},
                            {"kubeconfig", "apiVersion: v1\nkind: Config\n"},
                            {"expiration_timestamp", "2025-01-02T00:00:00Z"}};
    if (const auto* csr = body.if_contains("certificate_signing_request")) o.fields["csr"] = *csr;
    o.state = "issuing";
    objects_[cred] = o;
    PublishLocked(cred, &objects_[cred]);
    return o.fields;
  }
  if (action == "revoke_credentials") {
    for (auto& [h, o] : objects_) {
      if (Under(h, href) && o.kind == "BreakGlassCredential" && o.state != "revoked") {
        o.state = "awaiting_revocation";
        PublishLocked(h, &o);
      }
    }
    return json::object{{"href", std::string(href)}};
  }
  return Error::InvalidArgument("unknown action " + std::string(action));
}

namespace {

// The equality subset of the Cluster Service's search language: `path = 'value'` terms joined by
// `and`, compared ignoring ASCII case. Anything else is refused, so a caller relying on more fails.
using SearchTerms = std::vector<std::pair<std::string, std::string>>;

Result<SearchTerms> ParseEqualitySearch(std::string_view text) {
  SearchTerms terms;
  while (!text.empty()) {
    size_t eq = text.find(" = '");
    if (eq == std::string_view::npos)
      return Error::InvalidArgument("unsupported search: " + std::string(text));
    std::string path(text.substr(0, eq));
    std::string value;
    size_t i = eq + 4;
    for (;; ++i) {
      if (i >= text.size()) return Error::InvalidArgument("unterminated literal in search");
      if (text[i] != '\'') {
        value += text[i];
      } else if (i + 1 < text.size() && text[i + 1] == '\'') {
        value += '\'';
        ++i;
      } else {
        break;
      }
    }
    terms.emplace_back(std::move(path), std::move(value));
    text.remove_prefix(i + 1);
    if (text.starts_with(" and ")) {
      text.remove_prefix(5);
    } else if (!text.empty()) {
      return Error::InvalidArgument("unsupported search: " + std::string(text));
    }
  }
  return terms;
}

bool Matches(const json::object& fields, const SearchTerms& terms) {
  for (const auto& [path, want] : terms) {
    const json::object* at = &fields;
    std::string_view rest = path;
    const json::value* v = nullptr;
    while (at != nullptr) {
      size_t dot = rest.find('.');
      v = at->if_contains(rest.substr(0, dot));
      if (v == nullptr || dot == std::string_view::npos) break;
      at = v->if_object();
      rest.remove_prefix(dot + 1);
      v = nullptr;
    }
    if (v == nullptr || !v->is_string() || !EqualsIgnoreCase(v->as_string(), want)) return false;
  }
  return true;
}

}  // namespace

Result<json::array> FakeClusterService::List(std::string_view collection_href, std::string_view search) {
  MutexLock lock(mu_);
  if (auto failed = CallLocked("List " + std::string(collection_href))) return *failed;
  if (collection_href.ends_with("/versions") && versions_) return *versions_;
  HCPRP_ASSIGN_OR_RETURN(auto terms, ParseEqualitySearch(search));
  json::array out;
  std::string prefix = std::string(collection_href) + "/";
  for (const auto& [h, o] : objects_) {
    if (!h.starts_with(prefix) || h.find('/', prefix.size()) != std::string::npos) continue;
    json::object rendered = RenderLocked(o);
    if (Matches(rendered, terms)) out.push_back(std::move(rendered));
  }
  return out;
}

void FakeClusterService::ForgetEventHistory() {
  MutexLock lock(mu_);
  if (!events_.empty()) forgotten_through_ = events_.back().sequence;
  events_.clear();
}

Result<EventPage> FakeClusterService::WatchEvents(uint64_t after, std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  if (!events_enabled_) return Error::Unavailable("no event stream");
  if (after == kLatestEvents) {
    EventPage latest;
    latest.last_sequence = events_.empty() ? forgotten_through_ : events_.back().sequence;
    return latest;
  }
  if (after < forgotten_through_) return Error::PreconditionFailed("events after that sequence are gone");
  auto has_new = [&]() HCPRP_REQUIRES(mu_) { return !events_.empty() && events_.back().sequence > after; };
  if (!has_new())
    cv_.WaitFor(lock, timeout, [&]() HCPRP_REQUIRES(mu_) { return has_new() || !events_enabled_; });
  if (!events_enabled_) return Error::Unavailable("no event stream");
  EventPage page;
  page.last_sequence = after;
  for (const auto& e : events_) {
    if (e.sequence <= after) continue;
    page.events.push_back(e);
    page.last_sequence = e.sequence;
    if (page.events.size() >= 100) break;
  }
  return page;
}

std::string FakeClusterService::AddObject(std::string_view collection, std::string_view state) {
  MutexLock lock(mu_);
  std::string href = NewHrefLocked(collection);
  Object o;
  o.kind = KindOfCollection(collection);
  o.fields = json::object{{"id", href.substr(href.rfind('/') + 1)},
                          {"href", href},
                          {"kind", o.kind},
                          {"creation_timestamp", FormatRfc3339(clock_->Now())}};
  o.state = std::string(state);
  objects_[href] = o;
  PublishLocked(href, &objects_[href]);
  return href;
}

void FakeClusterService::SetState(std::string_view href, std::string_view state, std::string_view error_code,
                                  std::string_view error_message) {
  MutexLock lock(mu_);
  auto it = objects_.find(std::string(href));
  if (it == objects_.end()) return;
  it->second.state = std::string(state);
  it->second.error_code = std::string(error_code);
  it->second.error_message = std::string(error_message);
  PublishLocked(it->first, &it->second);
}

void FakeClusterService::RemoveLocked(std::string_view href) {
  for (auto it = objects_.begin(); it != objects_.end();) {
    if (it->first == href || Under(it->first, href)) {
      std::string h = it->first;
      it = objects_.erase(it);
      PublishLocked(h, nullptr);
    } else {
      ++it;
    }
  }
}

void FakeClusterService::Remove(std::string_view href) {
  MutexLock lock(mu_);
  RemoveLocked(href);
}

size_t FakeClusterService::RemoveUninstalling() {
  MutexLock lock(mu_);
  std::vector<std::string> doomed;
  for (const auto& [h, o] : objects_) {
    if (o.state == "uninstalling") doomed.push_back(h);
  }
  for (const auto& h : doomed) RemoveLocked(h);
  return doomed.size();
}

void FakeClusterService::SetConditions(std::string_view href, json::array conditions) {
  MutexLock lock(mu_);
  auto it = objects_.find(std::string(href));
  if (it == objects_.end()) return;
  it->second.conditions = std::move(conditions);
  PublishLocked(it->first, &it->second);
}

void FakeClusterService::SetField(std::string_view href, std::string_view key, json::value value) {
  MutexLock lock(mu_);
  auto it = objects_.find(std::string(href));
  if (it != objects_.end()) it->second.fields[key] = std::move(value);
}

void FakeClusterService::SetEventsEnabled(bool enabled) {
  MutexLock lock(mu_);
  events_enabled_ = enabled;
  cv_.NotifyAll();
}

void FakeClusterService::SetVersions(json::array versions) {
  MutexLock lock(mu_);
  versions_ = std::move(versions);
}

void FakeClusterService::FailWith(std::optional<Error> error) {
  MutexLock lock(mu_);
  fail_all_ = std::move(error);
}

void FakeClusterService::FailNextCreate(Error error) {
  MutexLock lock(mu_);
  fail_next_create_ = std::move(error);
}

void FakeClusterService::FailUpdatesWith(std::optional<Error> error) {
  MutexLock lock(mu_);
  fail_updates_ = std::move(error);
}

void FakeClusterService::RejectCreates(std::string message) {
  MutexLock lock(mu_);
  reject_creates_ = std::move(message);
}

bool FakeClusterService::Exists(std::string_view href) const {
  MutexLock lock(mu_);
  return objects_.count(std::string(href)) > 0;
}

std::string FakeClusterService::StateOf(std::string_view href) const {
  MutexLock lock(mu_);
  auto it = objects_.find(std::string(href));
  return it == objects_.end() ? std::string() : it->second.state;
}

size_t FakeClusterService::ObjectCount() const {
  MutexLock lock(mu_);
  return objects_.size();
}

std::vector<std::string> FakeClusterService::Calls() const {
  MutexLock lock(mu_);
  return calls_;
}

std::vector<json::object> FakeClusterService::CreatedBodies() const {
  MutexLock lock(mu_);
  return created_bodies_;
}

}  // namespace hcprp::clusterservice::testing
