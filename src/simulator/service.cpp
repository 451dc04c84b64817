#include "simulator/service.h"

#include <algorithm>
#include <charconv>
#include <thread>

#include "core/time.h"
#include "core/uuid.h"
#include "http/url.h"
#include "simulator/search.h"
#include "simulator/service_internal.h"

namespace hcprp::simulator {

using http::StatusCode;

namespace {

// The collections under a cluster whose objects are deleted before it (and with it).
constexpr const char* kChildCollections[] = {"/node_pools/", "/external_auth_configs/"};

// Status fields EnterStateLocked rebuilds on every state change.
bool IsSimulatorStatusField(std::string_view name) {
  return name == "state" || name == "provision_error_code" || name == "provision_error_message" ||
         name == "description" || name == "last_transition_timestamp";
}

constexpr int64_t kDefaultPageSize = 100;
constexpr int64_t kMaxPageSize = 1000;

int64_t ToMillis(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
TimePoint FromMillis(int64_t ms) {
  return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::milliseconds(ms)));
}

}  // namespace

std::string NewObjectId() {
  std::string u = NewUuidV4();
  u.erase(std::remove(u.begin(), u.end(), '-'), u.end());
  return u;
}

namespace {

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

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
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

std::string_view InitialState(std::string_view kind, Operation op) {
  switch (op) {
    case Operation::kCreate:
      return "validating";
    case Operation::kUpdate:
      return kind == kNodePool ? "validating_update" : "updating";
    case Operation::kDelete:
      return "uninstalling";
  }
  return "validating";
}

bool Updatable(const std::string& state) {
  return state == "ready" || state == "error" || state == "recoverable_error";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction and persistence.

Service::Service(const ServiceOptions& options)
    : options_(options), rng_(options.seed ? options.seed : std::random_device{}()) {}

Service::~Service() { Shutdown(); }

Result<std::unique_ptr<Service>> Service::Open(const ServiceOptions& options) {
  if (!options.clock || !options.provisioner || !options.store || !options.scheduler) {
    return Error::InvalidArgument("simulator service needs a clock, provisioner, store and scheduler");
  }
  std::unique_ptr<Service> s(new Service(options));
  HCPRP_RETURN_IF_ERROR(s->Load());
  return s;
}

Status Service::Load() {
  auto snap = options_.store->Load();
  if (!snap.ok()) return snap.error();
  std::lock_guard lock(mu_);
  for (const auto& doc : snap->documents) {
    auto v = ParseJson(doc);
    if (!v.ok() || !v->is_object()) return Error::Corruption("simulator state: unreadable object document");
    const json::object& d = v->as_object();
    const json::object* obj = hcprp::GetObject(d, "object");
    const json::object* sim = hcprp::GetObject(d, "sim");
    if (!obj || !sim) return Error::Corruption("simulator state: object document without object/sim");
    Record r;
    r.object = *obj;
    r.kind = std::string(GetString(*obj, "kind").value_or(""));
    r.href = std::string(GetString(*obj, "href").value_or(""));
    r.parent = std::string(GetString(*sim, "parent").value_or(""));
    auto op = ParseOperation(GetString(*sim, "operation").value_or("create"));
    r.op = op.ok() ? *op : Operation::kCreate;
    r.state_since = FromMillis(GetInt(*sim, "state_since_ms").value_or(0));
    r.fail_state = std::string(GetString(*sim, "fail_state").value_or(""));
    r.fail_code = std::string(GetString(*sim, "fail_code").value_or(""));
    r.fail_message = std::string(GetString(*sim, "fail_message").value_or(""));
    r.has_next = GetBool(*sim, "has_next").value_or(false);
    r.next_state = std::string(GetString(*sim, "next_state").value_or(""));
    r.next_at = FromMillis(GetInt(*sim, "next_at_ms").value_or(0));
    r.idem_collection = std::string(GetString(*sim, "idem_collection").value_or(""));
    r.idem_key = std::string(GetString(*sim, "idem_key").value_or(""));
    r.created = static_cast<uint64_t>(GetInt(*sim, "created").value_or(0));
    r.revocation_state = std::string(GetString(*sim, "revocation_state").value_or(""));
    r.revocation_started = FromMillis(GetInt(*sim, "revocation_started_ms").value_or(0));
    r.revocation_due = FromMillis(GetInt(*sim, "revocation_due_ms").value_or(0));
    r.revocation_done = FromMillis(GetInt(*sim, "revocation_done_ms").value_or(0));
    r.credential_generation = GetInt(*sim, "credential_generation").value_or(0);
    r.ca_key_pem = std::string(GetString(*sim, "ca_key_pem").value_or(""));
    r.ca_cert_pem = std::string(GetString(*sim, "ca_cert_pem").value_or(""));
    r.pending_kubeconfig = std::string(GetString(*sim, "pending_kubeconfig").value_or(""));
    if (r.href.empty()) return Error::Corruption("simulator state: object without href");
    next_created_ = std::max(next_created_, r.created + 1);
    if (!r.idem_key.empty()) idempotency_[r.idem_collection + "\n" + r.idem_key] = r.href;
    records_.emplace(r.href, std::move(r));
  }
  last_sequence_ = snap->last_sequence;
  first_retained_ = last_sequence_;  // history starts empty: only "after = last" can resume
  // A provisioner that moves objects itself (the provisioning engine) persists its own state on its own
  // schedule and may have lost the latest objects in a crash: it hears again of every object without a
  // planned step, as if the object had just entered its state. (A timed provisioner answers the same
  // nullopt it answered then.)
  for (auto& [href, rec] : records_) {
    if (!rec.has_next && rec.kind != kCredential) PlanLocked(rec);
  }
  for (const auto& [href, rec] : records_) ScheduleLocked(rec);
  return Status::Ok();
}

namespace {

std::string RecordDocument(const json::object& object, const json::object& sim) {
  return ToJson(json::object{{"object", object}, {"sim", sim}});
}

}  // namespace

Status Service::CommitLocked(Txn& txn) {
  std::vector<std::pair<std::string, std::string>> puts;
  std::vector<std::string> deletes;
  for (const auto& [href, before] : txn.before) {
    auto it = records_.find(href);
    if (it == records_.end()) {
      if (before) deletes.push_back(href);
      continue;
    }
    const Record& r = it->second;
    json::object sim{{"parent", r.parent},
                     {"operation", OperationName(r.op)},
                     {"state_since_ms", ToMillis(r.state_since)},
                     {"fail_state", r.fail_state},
                     {"fail_code", r.fail_code},
                     {"fail_message", r.fail_message},
                     {"has_next", r.has_next},
                     {"next_state", r.next_state},
                     {"next_at_ms", ToMillis(r.next_at)},
                     {"idem_collection", r.idem_collection},
                     {"idem_key", r.idem_key},
                     {"created", r.created},
                     {"revocation_state", r.revocation_state},
                     {"revocation_started_ms", ToMillis(r.revocation_started)},
                     {"revocation_due_ms", ToMillis(r.revocation_due)},
                     {"revocation_done_ms", ToMillis(r.revocation_done)},
                     {"credential_generation", r.credential_generation}};
    if (!r.ca_cert_pem.empty()) {
      sim["ca_key_pem"] = r.ca_key_pem;
      sim["ca_cert_pem"] = r.ca_cert_pem;
    }
    if (!r.pending_kubeconfig.empty()) sim["pending_kubeconfig"] = r.pending_kubeconfig;
    puts.emplace_back(href, RecordDocument(r.object, sim));
  }
  const uint64_t new_last = last_sequence_ + txn.events.size();
  Status st = options_.store->Commit(puts, deletes, new_last);
  if (!st.ok()) {
    // Roll the in-memory state back to what is on disk.
    for (auto& [href, before] : txn.before) {
      if (before) {
        records_[href] = std::move(*before);
      } else {
        records_.erase(href);
      }
    }
    return st;
  }
  for (auto& e : txn.events) {
    uint64_t seq = ++last_sequence_;
    e["sequence"] = seq;
    history_.push_back(EventRecord{seq, std::move(e)});
  }
  while (history_.size() > options_.event_history) {
    first_retained_ = history_.front().sequence;
    history_.pop_front();
  }
  for (const auto& [href, before] : txn.before) {
    auto it = records_.find(href);
    if (it == records_.end()) {
      options_.scheduler->Cancel(href);
      options_.scheduler->Cancel(href + "#revoke");
      if (before && !before->idem_key.empty())
        idempotency_.erase(before->idem_collection + "\n" + before->idem_key);
      continue;
    }
    ScheduleLocked(it->second);
    if (!it->second.idem_key.empty()) {
      idempotency_[it->second.idem_collection + "\n" + it->second.idem_key] = href;
    }
  }
  if (!txn.events.empty()) events_cv_.notify_all();
  return Status::Ok();
}

void Service::ScheduleLocked(const Record& rec) {
  if (rec.has_next) {
    std::string href = rec.href;
    options_.scheduler->Schedule(href, rec.next_at, [this, href] { OnStepDue(href); });
  } else {
    options_.scheduler->Cancel(rec.href);
  }
  if (rec.revocation_state == "revoking") {
    std::string href = rec.href;
    options_.scheduler->Schedule(href + "#revoke", rec.revocation_due,
                                 [this, href] { OnRevocationDue(href); });
  }
}

// ---------------------------------------------------------------------------------------------
// The state machine driver.

Service::Record* Service::FindLocked(const std::string& href, std::string_view kind) {
  auto it = records_.find(href);
  if (it == records_.end() || (!kind.empty() && it->second.kind != kind)) return nullptr;
  return &it->second;
}

bool Service::HasChildrenLocked(const std::string& cluster_href) const {
  for (const char* sub : kChildCollections) {
    std::string prefix = cluster_href + sub;
    auto it = records_.lower_bound(prefix);
    if (it != records_.end() && it->first.compare(0, prefix.size(), prefix) == 0) return true;
  }
  return false;
}

// A cluster goes together with its credentials.
void Service::RemoveClusterLocked(Txn& txn, const std::string& cluster_href) {
  std::string prefix = cluster_href + "/break_glass_credentials/";
  std::vector<std::string> creds;
  for (auto it = records_.lower_bound(prefix); it != records_.end() && it->first.rfind(prefix, 0) == 0;
       ++it) {
    creds.push_back(it->first);
  }
  for (const auto& c : creds) RemoveLocked(txn, c);
  RemoveLocked(txn, cluster_href);
}

Service::Record& Service::TouchLocked(Txn& txn, const std::string& href) {
  auto& rec = records_.at(href);
  txn.before.try_emplace(href, rec);
  return rec;
}

void Service::InsertLocked(Txn& txn, Record record) {
  std::string href = record.href;
  txn.before.try_emplace(href, std::nullopt);
  records_[href] = std::move(record);
}

void Service::RemoveLocked(Txn& txn, const std::string& href) {
  auto it = records_.find(href);
  if (it == records_.end()) return;
  txn.before.try_emplace(href, it->second);
  std::string kind = it->second.kind;
  records_.erase(it);
  AddEventLocked(txn, href, kind, std::string(kGone), json::object{});
}

void Service::AddEventLocked(Txn& txn, const std::string& href, std::string_view kind,
                             const std::string& state, json::object object) {
  txn.events.push_back(
      json::object{{"href", href}, {"kind", kind}, {"state", state}, {"object", std::move(object)}});
}

std::optional<Service::ProvisioningFault> Service::DrawProvisioningFaultLocked(std::string_view kind,
                                                                               Operation op) {
  std::lock_guard lock(faults_mu_);
  for (auto it = provisioning_faults_.begin(); it != provisioning_faults_.end(); ++it) {
    auto& f = *it;
    if (!f.kinds.empty() && std::find(f.kinds.begin(), f.kinds.end(), kind) == f.kinds.end()) continue;
    if (std::find(f.operations.begin(), f.operations.end(), OperationName(op)) == f.operations.end())
      continue;
    if (f.remaining == 0) continue;
    if (f.fraction < 1.0 && std::uniform_real_distribution<double>(0, 1)(rng_) >= f.fraction) continue;
    ProvisioningFault hit = f;
    if (f.remaining > 0 && --f.remaining == 0) provisioning_faults_.erase(it);
    return hit;
  }
  return std::nullopt;
}

void Service::BeginOperationLocked(Txn& txn, Record& rec, Operation op, bool allow_fault) {
  rec.op = op;
  rec.fail_state.clear();
  rec.fail_code.clear();
  rec.fail_message.clear();
  if (allow_fault) {
    if (auto f = DrawProvisioningFaultLocked(rec.kind, op)) {
      rec.fail_state = f->state;
      rec.fail_code = f->code;
      rec.fail_message = f->message;
      if (options_.logger) {
        options_.logger->Info("injected provisioning fault",
                              {{"href", rec.href}, {"operation", OperationName(op)}, {"code", f->code}});
      }
    }
  }
  EnterStateLocked(txn, rec, std::string(InitialState(rec.kind, op)), options_.clock->Now());
}

void Service::EnterStateLocked(Txn& txn, Record& rec, std::string state, TimePoint now) {
  txn.before.try_emplace(rec.href, rec);  // no-op when already touched
  // Fields an engine set through SetStatusFields (conditions) outlive the state they were set in.
  json::object kept;
  if (const json::object* old = hcprp::GetObject(rec.object, "status")) {
    for (const auto& [k, v] : *old) {
      if (!IsSimulatorStatusField(k)) kept[k] = v;
    }
  }
  json::object& status = rec.object["status"].emplace_object();
  status = std::move(kept);
  status["state"] = state;
  if (state == "error" || state == "recoverable_error") {
    status["provision_error_code"] = rec.fail_code.empty() ? "OCM3999" : rec.fail_code;
    status["provision_error_message"] = rec.fail_message.empty() ? "Provisioning failed" : rec.fail_message;
  } else {
    status["provision_error_code"] = "";
    status["provision_error_message"] = "";
  }
  status["description"] = "";
  status["last_transition_timestamp"] = FormatRfc3339(now);
  rec.state_since = now;
  PlanLocked(rec);
  if (options_.logger) {
    options_.logger->Debug("state change", {{"href", rec.href}, {"state", state}});
  }
  AddEventLocked(txn, rec.href, rec.kind, state, rec.object);
}

void Service::PlanLocked(Record& rec) {
  std::string state = rec.state();
  ObjectInfo info{rec.kind, rec.href, state, rec.op, rec.fail_state, &rec.object};
  auto step = options_.provisioner->Next(info);
  rec.has_next = step.has_value();
  if (step) {
    rec.next_state = step->state;
    rec.next_at = rec.state_since + step->after;
  } else {
    rec.next_state.clear();
    rec.next_at = TimePoint{};
  }
}

void Service::OnStepDue(const std::string& href) {
  std::lock_guard lock(mu_);
  Record* rec = FindLocked(href, "");
  if (!rec || !rec->has_next) return;
  const TimePoint now = options_.clock->Now();
  if (rec->next_at > now) {
    ScheduleLocked(*rec);
    return;
  }
  Txn txn;
  std::string parent = rec->parent;
  if (rec->kind == kCredential) {
    SetCredentialStatusLocked(txn, *rec, rec->next_state, rec->next_at);
  } else if (rec->next_state == kGone) {
    // A cluster disappears only after its node pools and external auths.
    if (rec->kind == kCluster && HasChildrenLocked(href)) return;
    if (rec->kind == kCluster) {
      RemoveClusterLocked(txn, href);
    } else {
      RemoveLocked(txn, href);
    }
  } else {
    EnterStateLocked(txn, *rec, rec->next_state, rec->next_at);
  }
  Status st = CommitLocked(txn);
  if (!st.ok()) {
    if (options_.logger)
      options_.logger->Error("cannot persist a transition",
                             {{"href", href}, {"error", st.error().ToString()}});
    // CommitLocked restored the object: try again shortly.
    if (FindLocked(href, "")) {
      options_.scheduler->Schedule(href, now + std::chrono::seconds(1), [this, href] { OnStepDue(href); });
    }
    return;
  }
  // The last child gone may release its cluster's pending removal.
  if (!parent.empty() && !records_.count(href)) {
    Record* p = FindLocked(parent, kCluster);
    if (p && p->has_next && p->next_state == kGone && p->next_at <= now && !HasChildrenLocked(parent)) {
      options_.scheduler->Schedule(parent, now, [this, parent] { OnStepDue(parent); });
    }
  }
}

Status Service::Transition(const std::string& href, const std::string& state, const std::string& error_code,
                           const std::string& error_message) {
  std::lock_guard lock(mu_);
  Record* rec = FindLocked(href, "");
  if (!rec) return Error::NotFound(href + " not found");
  Txn txn;
  if (state == kGone) {
    if (rec->kind == kCluster && HasChildrenLocked(href)) {
      return Error::Conflict(href + " still has node pools or external auths");
    }
    if (rec->kind == kCluster) {
      RemoveClusterLocked(txn, href);
    } else {
      RemoveLocked(txn, href);
    }
  } else if (rec->kind == kCredential) {
    SetCredentialStatusLocked(txn, TouchLocked(txn, href), state, options_.clock->Now());
  } else {
    Record& r = TouchLocked(txn, href);
    if (!error_code.empty()) r.fail_code = error_code;
    if (!error_message.empty()) r.fail_message = error_message;
    EnterStateLocked(txn, r, state, options_.clock->Now());
  }
  return CommitLocked(txn);
}

Status Service::SetStatusFields(const std::string& href, const json::object& fields) {
  for (const auto& [k, v] : fields) {
    if (IsSimulatorStatusField(k)) {
      return Error::InvalidArgument("status." + std::string(k) + " belongs to the simulator");
    }
  }
  std::lock_guard lock(mu_);
  Record* rec = FindLocked(href, "");
  if (!rec) return Error::NotFound(href + " not found");
  if (rec->kind == kCredential) return Error::InvalidArgument(href + " has no status object");
  const json::object* old = hcprp::GetObject(rec->object, "status");
  bool changed = !old;
  for (const auto& [k, v] : fields) {
    if (changed) break;
    auto it = old->find(k);
    changed = it == old->end() || it->value() != v;
  }
  if (!changed) return Status::Ok();
  Txn txn;
  Record& r = TouchLocked(txn, href);
  json::value& st = r.object["status"];
  if (!st.is_object()) st.emplace_object();
  for (const auto& [k, v] : fields) st.as_object()[k] = v;
  AddEventLocked(txn, r.href, r.kind, r.state(), r.object);
  return CommitLocked(txn);
}

size_t Service::object_count() const {
  std::lock_guard lock(mu_);
  return records_.size();
}

uint64_t Service::last_sequence() const {
  std::lock_guard lock(mu_);
  return last_sequence_;
}

void Service::Shutdown() {
  shutdown_.store(true);
  {
    // Taking each waiter's mutex orders the flag before their predicate checks.
    std::lock_guard lock(mu_);
  }
  events_cv_.notify_all();
  { std::lock_guard lock(sleep_mu_); }
  shutdown_cv_.notify_all();
}

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

http::Response Service::ControlJson(StatusCode status, const json::value& body) {
  return http::JsonResponse(status, ToJson(body));
}

void Service::InterruptibleSleep(std::chrono::milliseconds d) {
  std::unique_lock lock(sleep_mu_);
  shutdown_cv_.wait_for(lock, d, [this] { return shutdown_.load(); });
}

Service::HttpFault Service::DrawHttpFault(const http::Request& req, std::string_view path, int* status,
                                          std::chrono::milliseconds* delay, bool* hang) {
  std::lock_guard lock(faults_mu_);
  const HttpFaults& f = http_faults_;
  *delay = std::chrono::milliseconds(0);
  *hang = false;
  *status = f.status;
  if (path.compare(0, f.path_prefix.size(), f.path_prefix) != 0) return HttpFault::kNone;
  if (!f.methods.empty() && std::none_of(f.methods.begin(), f.methods.end(), [&](const std::string& m) {
        return EqualsIgnoreCase(m, req.method_string());
      })) {
    return HttpFault::kNone;
  }
  auto roll = [&](double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; };
  if (roll(f.hang_fraction)) {
    *hang = true;
    *delay = std::min(std::chrono::milliseconds(f.hang_ms), options_.max_hang);
    return HttpFault::kNone;
  }
  if (roll(f.delay_fraction)) *delay = std::chrono::milliseconds(f.delay_ms);
  if (http_faults_.error_count > 0) {
    --http_faults_.error_count;
    return HttpFault::kErrorBefore;
  }
  if (roll(f.error_fraction)) return HttpFault::kErrorBefore;
  if (http_faults_.error_after_count > 0) {
    --http_faults_.error_after_count;
    return HttpFault::kErrorAfter;
  }
  if (roll(f.error_after_fraction)) return HttpFault::kErrorAfter;
  return HttpFault::kNone;
}

http::Response Service::Handle(http::Request&& req) {
  auto [path, query] = http::SplitTarget(req.target());
  if (path.rfind("/control", 0) == 0) return HandleControl(req, path);
  if (path.rfind(kApiPrefix, 0) != 0)
    return OcmError(StatusCode::not_found, "Unknown path '" + std::string(path) + "'");

  int fault_status = 503;
  std::chrono::milliseconds delay{0};
  bool hang = false;
  HttpFault fault = DrawHttpFault(req, path, &fault_status, &delay, &hang);
  if (delay.count() > 0) InterruptibleSleep(delay);
  if (hang) return OcmError(StatusCode::gateway_timeout, "Injected fault: the request hung");
  auto status = static_cast<StatusCode>(fault_status);
  if (fault == HttpFault::kErrorBefore) return OcmError(status, "Injected fault: service unavailable");
  http::Response res = HandleApi(req, path, query);
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
  if (segs.size() == 2) {
    if (method == Verb::get) return GetObject(cluster, kCluster);
    if (method == Verb::patch) return UpdateObject(req, cluster, kCluster);
    if (method == Verb::delete_) return DeleteObject(cluster, kCluster);
    return not_allowed();
  }
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
        {
          std::lock_guard lock(mu_);
          if (!FindLocked(cluster, kCluster)) {
            return OcmError(StatusCode::not_found, "Cluster '" + std::string(segs[1]) + "' not found");
          }
        }
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
    {
      std::lock_guard lock(mu_);
      if (!FindLocked(cluster, kCluster))
        return OcmError(StatusCode::not_found, "Cluster '" + std::string(segs[1]) + "' not found");
    }
    if (method == Verb::get) return ListObjects(child_kind, cluster, query);
    if (method == Verb::post) return CreateObject(req, child_kind, collection, cluster);
    return not_allowed();
  }
  const std::string child = collection + "/" + std::string(segs[3]);
  if (segs.size() == 4) {
    if (method == Verb::get) return GetObject(child, child_kind);
    if (method == Verb::patch) return UpdateObject(req, child, child_kind);
    if (method == Verb::delete_) return DeleteObject(child, child_kind);
    return not_allowed();
  }
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
  std::vector<std::pair<uint64_t, json::object>> matches;
  {
    std::lock_guard lock(mu_);
    for (const auto& [href, rec] : records_) {
      if (rec.kind != kind || rec.parent != parent) continue;
      if (Matches(search, rec.object)) matches.emplace_back(rec.created, rec.object);
    }
  }
  std::sort(matches.begin(), matches.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  json::array items;
  const size_t begin = static_cast<size_t>((page - 1) * size);
  for (size_t i = begin; i < matches.size() && items.size() < static_cast<size_t>(size); ++i) {
    items.push_back(std::move(matches[i].second));
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
  auto parsed = ParseJson(req.body());
  if (!parsed.ok())
    return OcmError(StatusCode::bad_request, "Invalid JSON body: " + parsed.error().message());
  if (!parsed->is_object()) return OcmError(StatusCode::bad_request, "The body must be a JSON object");
  json::object body = std::move(parsed->as_object());
  for (auto k : kServerManaged) body.erase(k);
  if (auto problem = Validate(kind, body, versions())) return OcmError(StatusCode::bad_request, *problem);
  const std::string key(req["X-Idempotency-Key"]);

  std::lock_guard lock(mu_);
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
        return OcmError(StatusCode::conflict,
                        std::string(kind) + " '" + name + "' already exists in cluster '" + parent + "'");
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
      const CatalogueVersion& dv = versions().default_version();
      json::object v{{"id", dv.id()}, {"channel_group", dv.channel_group}};
      if (ver) {
        for (auto& [k, x] : *ver) v[k] = x;
      }
      obj["version"] = std::move(v);
    }
  }
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
  std::lock_guard lock(mu_);
  Record* rec = FindLocked(href, kind);
  if (!rec) return OcmError(StatusCode::not_found, std::string(kind) + " '" + href + "' not found");
  return Ocm(StatusCode::ok, rec->object);
}

http::Response Service::GetStatus(const std::string& href, std::string_view kind) {
  std::lock_guard lock(mu_);
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
  auto parsed = ParseJson(req.body());
  if (!parsed.ok())
    return OcmError(StatusCode::bad_request, "Invalid JSON body: " + parsed.error().message());
  if (!parsed->is_object()) return OcmError(StatusCode::bad_request, "The body must be a JSON object");
  json::object patch = std::move(parsed->as_object());
  for (auto k : kServerManaged) patch.erase(k);

  std::lock_guard lock(mu_);
  if (shutdown_) return OcmError(StatusCode::service_unavailable, "The service is shutting down");
  Record* rec = FindLocked(href, kind);
  if (!rec) return OcmError(StatusCode::not_found, std::string(kind) + " '" + href + "' not found");
  const std::string state = rec->state();
  if (!Updatable(state)) {
    return OcmError(StatusCode::conflict,
                    std::string(kind) + " '" + href + "' is in state '" + state + "' and cannot be updated");
  }
  json::value merged = rec->object;
  MergePatch(merged, patch);
  json::object& m = merged.as_object();
  if (GetString(m, "name") != GetString(rec->object, "name")) {
    return OcmError(StatusCode::bad_request, "The name of a " + std::string(kind) + " cannot change");
  }
  if (kind == kCluster && ClusterKey(m) != ClusterKey(rec->object)) {
    return OcmError(StatusCode::bad_request, "The Azure identity of a cluster cannot change");
  }
  if (auto problem = Validate(kind, m, versions())) return OcmError(StatusCode::bad_request, *problem);
  if (m == rec->object) return Ocm(StatusCode::ok, rec->object);

  Txn txn;
  Record& r = TouchLocked(txn, href);
  r.object = std::move(m);
  BeginOperationLocked(txn, r, Operation::kUpdate, true);
  Status st = CommitLocked(txn);
  if (!st.ok()) return OcmError(StatusCode::internal_server_error, "Cannot persist the update");
  return Ocm(StatusCode::ok, records_.at(href).object);
}

http::Response Service::DeleteObject(const std::string& href, std::string_view kind) {
  std::lock_guard lock(mu_);
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
  for (const auto& v : versions().versions()) {
    json::object o = v.ToOcm();
    if (Matches(search, o)) items.push_back(std::move(o));
  }
  int64_t n = static_cast<int64_t>(items.size());
  return Ocm(
      StatusCode::ok,
      json::object{
          {"kind", "VersionList"}, {"page", 1}, {"size", n}, {"total", n}, {"items", std::move(items)}});
}

http::Response Service::GetVersion(std::string_view id) {
  if (const CatalogueVersion* v = versions().Find(id)) return Ocm(StatusCode::ok, v->ToOcm());
  return OcmError(StatusCode::not_found, "Version '" + std::string(id) + "' not found");
}

http::Response Service::WatchEvents(std::string_view query) {
  std::optional<uint64_t> after;
  bool latest = false;
  std::chrono::milliseconds timeout{0};
  size_t limit = 1000;
  for (const auto& p : http::ParseQuery(query)) {
    if (p.name == "after") {
      if (p.value == "latest") {
        latest = true;
      } else if (auto v = ParseInt(p.value); v && *v >= 0) {
        after = static_cast<uint64_t>(*v);
      } else {
        return OcmError(StatusCode::bad_request, "after must be a sequence number or 'latest'");
      }
    } else if (p.name == "timeout") {
      auto v = ParseInt(p.value);
      if (!v || *v < 0)
        return OcmError(StatusCode::bad_request, "timeout must be a non-negative number of milliseconds");
      timeout = std::min(std::chrono::milliseconds(*v), options_.max_watch);
    } else if (p.name == "limit") {
      auto v = ParseInt(p.value);
      if (!v || *v < 1) return OcmError(StatusCode::bad_request, "limit must be a positive integer");
      limit = static_cast<size_t>(*v);
    }
  }
  std::unique_lock lock(mu_);
  if (latest) {
    return Ocm(
        StatusCode::ok,
        json::object{{"kind", "EventList"}, {"items", json::array{}}, {"last_sequence", last_sequence_}});
  }
  const uint64_t from = after.value_or(0);
  auto gone = [&] {
    json::object body{
        {"kind", "Error"},
        {"id", "410"},
        {"href", std::string(kApiPrefix) + "/errors/410"},
        {"code", "CLUSTERS-MGMT-410"},
        {"reason", "Events after sequence " + std::to_string(from) +
                       " are no longer available; list the objects and resume from last_sequence"},
        {"last_sequence", last_sequence_}};
    return Ocm(StatusCode::gone, body);
  };
  if (from > last_sequence_ || from < first_retained_) return gone();
  events_cv_.wait_for(lock, timeout, [&] { return last_sequence_ > from || shutdown_.load(); });
  if (from < first_retained_) return gone();
  json::array items;
  uint64_t last = from;
  // history_ is ordered by sequence: find the first event after `from`.
  auto it = std::lower_bound(history_.begin(), history_.end(), from + 1,
                             [](const EventRecord& e, uint64_t s) { return e.sequence < s; });
  for (; it != history_.end() && items.size() < limit; ++it) {
    items.push_back(it->item);
    last = it->sequence;
  }
  return Ocm(StatusCode::ok,
             json::object{{"kind", "EventList"}, {"items", std::move(items)}, {"last_sequence", last}});
}

// ---------------------------------------------------------------------------------------------
// /control: fault injection and timing. See README.md in this folder.

http::Response Service::HandleControl(const http::Request& req, std::string_view path) {
  using http::Verb;
  const auto method = req.method();
  auto bad = [](const std::string& m) {
    return ControlJson(StatusCode::bad_request, json::object{{"error", m}});
  };
  auto body_object = [&]() -> Result<json::object> {
    if (req.body().empty()) return json::object{};
    auto v = ParseJson(req.body());
    if (!v.ok()) return v.error();
    if (!v->is_object()) return Error::InvalidArgument("body must be a JSON object");
    return std::move(v->as_object());
  };
  auto faults_json = [&]() {
    std::lock_guard lock(faults_mu_);
    json::array prov;
    for (const auto& f : provisioning_faults_) {
      json::array kinds(f.kinds.begin(), f.kinds.end());
      json::array ops(f.operations.begin(), f.operations.end());
      prov.push_back(json::object{{"id", f.id},
                                  {"remaining", f.remaining},
                                  {"fraction", f.fraction},
                                  {"code", f.code},
                                  {"message", f.message},
                                  {"state", f.state},
                                  {"kinds", std::move(kinds)},
                                  {"operations", std::move(ops)}});
    }
    const HttpFaults& h = http_faults_;
    json::array methods(h.methods.begin(), h.methods.end());
    return json::object{{"provisioning", std::move(prov)},
                        {"http", json::object{{"error_count", h.error_count},
                                              {"error_fraction", h.error_fraction},
                                              {"error_after_count", h.error_after_count},
                                              {"error_after_fraction", h.error_after_fraction},
                                              {"status", h.status},
                                              {"delay_fraction", h.delay_fraction},
                                              {"delay_ms", h.delay_ms},
                                              {"hang_fraction", h.hang_fraction},
                                              {"hang_ms", h.hang_ms},
                                              {"path_prefix", h.path_prefix},
                                              {"methods", std::move(methods)}}}};
  };
  auto timing_json = [&]() {
    if (!options_.timing) return json::object{{"profile", "custom"}};
    Timing t = options_.timing->timing();
    return json::object{{"profile", ProfileName(t.profile)}, {"time_scale", t.time_scale}};
  };

  if (path == "/control/health") {
    if (method != Verb::get)
      return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "GET only"}});
    json::object body{{"status", "ok"}};
    for (auto& [k, v] : timing_json()) body[k] = v;
    std::lock_guard lock(mu_);
    body["objects"] = static_cast<int64_t>(records_.size());
    body["last_sequence"] = last_sequence_;
    body["pending_steps"] = static_cast<int64_t>(options_.scheduler->pending());
    return ControlJson(StatusCode::ok, body);
  }
  if (path == "/control/faults") {
    if (method == Verb::get) return ControlJson(StatusCode::ok, faults_json());
    if (method == Verb::delete_) {
      std::lock_guard lock(faults_mu_);
      provisioning_faults_.clear();
      http_faults_ = HttpFaults{};
      return http::MakeResponse(StatusCode::no_content);
    }
    return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "GET or DELETE"}});
  }
  if (path == "/control/faults/provisioning") {
    if (method == Verb::delete_) {
      std::lock_guard lock(faults_mu_);
      provisioning_faults_.clear();
      return http::MakeResponse(StatusCode::no_content);
    }
    if (method != Verb::post)
      return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "POST or DELETE"}});
    auto b = body_object();
    if (!b.ok()) return bad(b.error().message());
    ProvisioningFault f;
    f.remaining = GetInt(*b, "count").value_or(-1);
    if (auto* fr = b->if_contains("fraction"); fr && fr->is_number()) f.fraction = fr->to_number<double>();
    if (f.remaining < 0 && !b->contains("fraction")) f.remaining = 1;
    if (f.fraction < 0 || f.fraction > 1) return bad("fraction must be within [0, 1]");
    f.code = std::string(GetString(*b, "code").value_or("OCM3999"));
    f.message = std::string(GetString(*b, "message").value_or("Injected provisioning failure"));
    f.state = std::string(GetString(*b, "state").value_or("error"));
    if (f.state != "error" && f.state != "recoverable_error")
      return bad("state must be error or recoverable_error");
    if (const json::array* kinds = GetArray(*b, "kinds")) {
      for (const auto& k : *kinds) {
        if (!k.is_string()) return bad("kinds must be strings");
        std::string s(k.as_string());
        if (s != kCluster && s != kNodePool && s != kExternalAuth) return bad("unknown kind " + s);
        f.kinds.push_back(std::move(s));
      }
    }
    if (const json::array* ops = GetArray(*b, "operations")) {
      for (const auto& o : *ops) {
        if (!o.is_string() || !ParseOperation(o.as_string()).ok())
          return bad("operations: create, update, delete");
        f.operations.emplace_back(o.as_string());
      }
    } else {
      f.operations = {"create", "update"};
    }
    std::lock_guard lock(faults_mu_);
    f.id = next_fault_id_++;
    provisioning_faults_.push_back(f);
    return ControlJson(StatusCode::created, json::object{{"id", f.id}});
  }
  if (path == "/control/faults/http") {
    if (method == Verb::delete_) {
      std::lock_guard lock(faults_mu_);
      http_faults_ = HttpFaults{};
      return http::MakeResponse(StatusCode::no_content);
    }
    if (method != Verb::post && method != Verb::put) {
      return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "PUT, POST or DELETE"}});
    }
    auto b = body_object();
    if (!b.ok()) return bad(b.error().message());
    HttpFaults h;
    auto fraction = [&](std::string_view k, double& out) -> bool {
      if (auto* v = b->if_contains(k)) {
        if (!v->is_number()) return false;
        out = v->to_number<double>();
        return out >= 0 && out <= 1;
      }
      return true;
    };
    if (!fraction("error_fraction", h.error_fraction) ||
        !fraction("error_after_fraction", h.error_after_fraction) ||
        !fraction("delay_fraction", h.delay_fraction) || !fraction("hang_fraction", h.hang_fraction)) {
      return bad("fractions must be numbers within [0, 1]");
    }
    h.error_count = GetInt(*b, "error_count").value_or(0);
    h.error_after_count = GetInt(*b, "error_after_count").value_or(0);
    h.status = static_cast<int>(GetInt(*b, "status").value_or(503));
    if (h.status < 500 || h.status > 599) return bad("status must be a 5xx code");
    h.delay_ms = GetInt(*b, "delay_ms").value_or(0);
    h.hang_ms = GetInt(*b, "hang_ms").value_or(120'000);
    if (h.delay_ms < 0 || h.hang_ms < 0) return bad("durations must not be negative");
    if (h.delay_ms > 0 && !b->contains("delay_fraction")) h.delay_fraction = 1.0;
    h.path_prefix = std::string(GetString(*b, "path_prefix").value_or(kApiPrefix));
    if (const json::array* ms = GetArray(*b, "methods")) {
      for (const auto& m : *ms) {
        if (m.is_string()) h.methods.emplace_back(m.as_string());
      }
    }
    std::lock_guard lock(faults_mu_);
    http_faults_ = h;
    return http::MakeResponse(StatusCode::no_content);
  }
  if (path == "/control/timing") {
    if (method == Verb::get) return ControlJson(StatusCode::ok, timing_json());
    if (method != Verb::put && method != Verb::post) {
      return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "GET or PUT"}});
    }
    if (!options_.timing) return bad("this simulator's provisioner has no timing profile");
    auto b = body_object();
    if (!b.ok()) return bad(b.error().message());
    Timing t = options_.timing->timing();
    if (auto p = GetString(*b, "profile")) {
      auto parsed = ParseProfile(*p);
      if (!parsed.ok()) return bad(parsed.error().message());
      t.profile = *parsed;
    }
    if (auto* ts = b->if_contains("time_scale")) {
      if (!ts->is_number() || ts->to_number<double>() < 0)
        return bad("time_scale must be a non-negative number");
      t.time_scale = ts->to_number<double>();
    }
    options_.timing->set_timing(t);
    // Re-plan the steps in progress as if their current state began now.
    std::lock_guard lock(mu_);
    Txn txn;
    const TimePoint now = options_.clock->Now();
    std::vector<std::string> pending;
    for (const auto& [href, rec] : records_) {
      if (rec.has_next) pending.push_back(href);
    }
    for (const auto& href : pending) {
      Record& r = TouchLocked(txn, href);
      r.state_since = now;
      PlanLocked(r);
    }
    Status st = CommitLocked(txn);
    if (!st.ok())
      return ControlJson(StatusCode::internal_server_error, json::object{{"error", st.error().message()}});
    return ControlJson(StatusCode::ok, timing_json());
  }
  return ControlJson(StatusCode::not_found,
                     json::object{{"error", "unknown control path " + std::string(path)}});
}

}  // namespace hcprp::simulator
