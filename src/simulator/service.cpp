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

// Status fields EnterStateLocked rebuilds (or, for the version history, advances) on every state change.
bool IsSimulatorStatusField(std::string_view name) {
  return name == "state" || name == "provision_error_code" || name == "provision_error_message" ||
         name == "description" || name == "last_transition_timestamp" || name == "version_history";
}

constexpr std::string_view kVersionPrefix = "openshift-v";

json::object HistoryEntry(const std::string& version, std::string_view state, const std::string& started) {
  return json::object{{"version", version}, {"state", state}, {"started_time", started}};
}

bool IsEntry(const json::value& entry, const std::string& version, std::string_view state) {
  return entry.is_object() && GetString(entry.as_object(), "version") == version &&
         GetString(entry.as_object(), "state") == state;
}

}  // namespace

std::string NewObjectId() {
  std::string u = NewUuidV4();
  u.erase(std::remove(u.begin(), u.end(), '-'), u.end());
  return u;
}

const CatalogueVersion* ResolveVersion(const VersionCatalogue& catalogue, std::string_view id,
                                       std::string_view channel_group) {
  std::string_view rest = id;
  if (rest.starts_with(kVersionPrefix)) rest.remove_prefix(kVersionPrefix.size());
  std::string_view group = channel_group;
  if (auto dash = rest.find('-'); dash != std::string_view::npos) {
    if (group.empty()) group = rest.substr(dash + 1);
    rest = rest.substr(0, dash);
  }
  if (group.empty()) group = "stable";
  // For a minor: its enabled z-streams in the group, newest first; the resource provider's version
  // selection takes the newest, except in the stable group the one before it (a release new to stable
  // is not picked at once), and the newest when there is only one.
  std::vector<const CatalogueVersion*> of_minor;
  for (const auto& v : catalogue.versions()) {
    if (v.channel_group != group || !v.enabled) continue;
    if (v.raw_id == rest) return &v;
    if (v.minor == rest) of_minor.push_back(&v);
  }
  if (of_minor.empty()) return nullptr;
  std::sort(of_minor.begin(), of_minor.end(), [](const auto* a, const auto* b) { return a->z > b->z; });
  return of_minor[group == "stable" && of_minor.size() > 1 ? 1 : 0];
}

std::string RunningVersion(const json::object& object) {
  const json::object* status = hcprp::GetObject(object, "status");
  const json::array* history = status ? GetArray(*status, "version_history") : nullptr;
  if (!history) return "";
  for (const auto& e : *history) {
    if (e.is_object() && GetString(e.as_object(), "state") == "Completed")
      return std::string(GetString(e.as_object(), "version").value_or(""));
  }
  return "";
}

void AdvanceVersionHistory(json::array& history, const std::string& version, std::string_view state,
                           const std::string& at) {
  const bool partial_on_top = !history.empty() && IsEntry(history.front(), version, "Partial");
  if (state == "error" || state == "recoverable_error") {
    if (partial_on_top) history.erase(history.begin());
    return;
  }
  if (state == "ready") {
    if (!partial_on_top) history.insert(history.begin(), HistoryEntry(version, "Partial", at));
    json::object& top = history.front().as_object();
    top["state"] = "Completed";
    top["completion_time"] = at;
  } else if (!partial_on_top) {
    history.insert(history.begin(), HistoryEntry(version, "Partial", at));
  }
  if (history.size() > kMaxVersionHistory) history.resize(kMaxVersionHistory);
}

namespace {

std::string_view InitialState(std::string_view kind, Operation op) {
  switch (op) {
    case Operation::kCreate:
      return "validating";
    case Operation::kUpdate:
    case Operation::kUpgrade:
      return kind == kNodePool ? "validating_update" : "updating";
    case Operation::kDelete:
      return "uninstalling";
  }
  return "validating";
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
  HCPRP_ASSIGN_OR_RETURN(auto snap, options_.store->Load());
  HCPRP_ASSIGN_OR_RETURN(
      updates_, UpdateService::Open(options_.versions ? *options_.versions : VersionCatalogue::BuiltIn(),
                                    snap.update_service, options_.logger));
  MutexLock lock(mu_);
  for (const auto& doc : snap.documents) {
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
    r.op_id = static_cast<uint64_t>(GetInt(*sim, "op_id").value_or(0));
    r.target_version = std::string(GetString(*sim, "target_version").value_or(""));
    r.state_since = FromUnixMillis(GetInt(*sim, "state_since_ms").value_or(0));
    r.fail_state = std::string(GetString(*sim, "fail_state").value_or(""));
    r.fail_code = std::string(GetString(*sim, "fail_code").value_or(""));
    r.fail_message = std::string(GetString(*sim, "fail_message").value_or(""));
    r.has_next = GetBool(*sim, "has_next").value_or(false);
    r.next_state = std::string(GetString(*sim, "next_state").value_or(""));
    r.next_at = FromUnixMillis(GetInt(*sim, "next_at_ms").value_or(0));
    r.idem_collection = std::string(GetString(*sim, "idem_collection").value_or(""));
    r.idem_key = std::string(GetString(*sim, "idem_key").value_or(""));
    r.created = static_cast<uint64_t>(GetInt(*sim, "created").value_or(0));
    r.revocation_state = std::string(GetString(*sim, "revocation_state").value_or(""));
    r.revocation_started = FromUnixMillis(GetInt(*sim, "revocation_started_ms").value_or(0));
    r.revocation_due = FromUnixMillis(GetInt(*sim, "revocation_due_ms").value_or(0));
    r.revocation_done = FromUnixMillis(GetInt(*sim, "revocation_done_ms").value_or(0));
    r.credential_generation = GetInt(*sim, "credential_generation").value_or(0);
    r.ca_key_pem = std::string(GetString(*sim, "ca_key_pem").value_or(""));
    r.ca_cert_pem = std::string(GetString(*sim, "ca_cert_pem").value_or(""));
    r.pending_kubeconfig = std::string(GetString(*sim, "pending_kubeconfig").value_or(""));
    if (r.href.empty()) return Error::Corruption("simulator state: object without href");
    next_created_ = std::max(next_created_, r.created + 1);
    if (!r.idem_key.empty()) idempotency_[r.idem_collection + "\n" + r.idem_key] = r.href;
    records_.emplace(r.href, std::move(r));
  }
  last_sequence_ = snap.last_sequence;
  first_retained_ = last_sequence_;  // history starts empty: only "after = last" can resume
  // A provisioner that moves objects itself (the provisioning engine) commits its steps but not what it
  // was told before its next step, and may be a step ahead of this state after a crash: it hears again
  // of every object without a planned step, as if the object had just entered its state. (A timed
  // provisioner answers the same nullopt it answered then.)
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
                     {"op_id", r.op_id},
                     {"target_version", r.target_version},
                     {"state_since_ms", ToUnixMillis(r.state_since)},
                     {"fail_state", r.fail_state},
                     {"fail_code", r.fail_code},
                     {"fail_message", r.fail_message},
                     {"has_next", r.has_next},
                     {"next_state", r.next_state},
                     {"next_at_ms", ToUnixMillis(r.next_at)},
                     {"idem_collection", r.idem_collection},
                     {"idem_key", r.idem_key},
                     {"created", r.created},
                     {"revocation_state", r.revocation_state},
                     {"revocation_started_ms", ToUnixMillis(r.revocation_started)},
                     {"revocation_due_ms", ToUnixMillis(r.revocation_due)},
                     {"revocation_done_ms", ToUnixMillis(r.revocation_done)},
                     {"credential_generation", r.credential_generation}};
    if (!r.ca_cert_pem.empty()) {
      sim["ca_key_pem"] = r.ca_key_pem;
      sim["ca_cert_pem"] = r.ca_cert_pem;
    }
    if (!r.pending_kubeconfig.empty()) sim["pending_kubeconfig"] = r.pending_kubeconfig;
    puts.emplace_back(href, RecordDocument(r.object, sim));
  }
  const uint64_t new_last = last_sequence_ + txn.events.size();
  Status st = options_.store->Commit(puts, deletes, new_last, txn.update_service);
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
    history_.push_back(EventRecord{seq, std::make_shared<const json::object>(std::move(e))});
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
  if (!txn.events.empty()) events_cv_.NotifyAll();
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

void Service::BeginOperationLocked(Txn& txn, Record& rec, Operation op, bool allow_fault) {
  rec.op = op;
  rec.op_id = last_sequence_ + txn.events.size() + 1;  // the sequence of the event EnterStateLocked adds
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
  json::array history;
  if (const json::object* old = hcprp::GetObject(rec.object, "status")) {
    for (const auto& [k, v] : *old) {
      if (!IsSimulatorStatusField(k)) kept[k] = v;
    }
    if (const json::array* h = GetArray(*old, "version_history")) history = *h;
  }
  const bool versioned = rec.kind == kCluster || rec.kind == kNodePool;
  if (versioned && (rec.op == Operation::kCreate || rec.op == Operation::kUpgrade) &&
      !rec.target_version.empty()) {
    AdvanceVersionHistory(history, rec.target_version, state, FormatRfc3339(now));
  }
  json::object& status = rec.object["status"].emplace_object();
  status = std::move(kept);
  if (versioned) status["version_history"] = std::move(history);
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
  // What a create or upgrade installs; what runs during other operations.
  std::string version = rec.target_version;
  if (rec.op == Operation::kUpdate || rec.op == Operation::kDelete) {
    if (std::string running = RunningVersion(rec.object); !running.empty()) version = std::move(running);
  }
  ObjectInfo info{rec.kind, rec.href, state, rec.op, rec.fail_state, &rec.object, version, rec.op_id};
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

std::string Service::PinVersion(json::object& object) const {
  if (GetString(object, "kind") != kCluster && GetString(object, "kind") != kNodePool) return "";
  json::value* v = object.if_contains("version");
  if (!v || !v->is_object()) return "";
  json::object& version = v->as_object();
  const std::string id(GetString(version, "id").value_or(""));
  const std::shared_ptr<const VersionCatalogue> catalogue = versions();
  const CatalogueVersion* resolved =
      ResolveVersion(*catalogue, id, GetString(version, "channel_group").value_or(""));
  if (!resolved) return "";
  if (id.find('.') == id.rfind('.')) version["id"] = resolved->id();  // "openshift-v4.20": a minor only
  if (!version.contains("channel_group")) version["channel_group"] = resolved->channel_group;
  return resolved->raw_id;
}

std::optional<std::string> Service::PinMinorChange(const json::object& current, json::object& patch) const {
  if (GetString(current, "kind") != kCluster) return std::nullopt;
  json::value* asked = patch.if_contains("version");
  if (asked == nullptr || !asked->is_object()) return std::nullopt;
  json::object& version = asked->as_object();
  const std::string id(GetString(version, "id").value_or(""));
  if (id.empty() || id.find('.') != id.rfind('.')) return std::nullopt;  // not a minor only
  const json::object* now = hcprp::GetObject(current, "version");
  const std::string now_id(now != nullptr ? GetString(*now, "id").value_or("") : "");
  const std::string group(
      GetString(version, "channel_group")
          .value_or(now != nullptr ? GetString(*now, "channel_group").value_or("stable") : "stable"));
  const std::shared_ptr<const VersionCatalogue> catalogue = versions();
  const CatalogueVersion* desired = ResolveVersion(*catalogue, now_id, group);
  const CatalogueVersion* target = ResolveVersion(*catalogue, id, group);
  if (target == nullptr) return std::nullopt;  // Validate refuses it
  const std::string running = RunningVersion(current);
  const bool runs_target_minor = running.empty() || running.rfind(target->minor + ".", 0) == 0;
  if (desired != nullptr && desired->minor == target->minor && runs_target_minor) {
    version.erase("id");  // the minor it is on already: its z-stream stays as it is
    return std::nullopt;
  }
  if (!running.empty() && !runs_target_minor) {
    bool reachable = false;
    for (const std::string& to : catalogue->UpgradesFrom(running, group)) {
      reachable = reachable || to.rfind(target->minor + ".", 0) == 0;
    }
    if (!reachable) {
      return "no upgrade path to update channel \"" + group + "-" + target->minor +
             "\" is currently available for this cluster; a channel appears in the cluster's desired version "
             "channels only when an upgrade edge to a release in that channel exists";
    }
  }
  version["id"] = target->id();
  return std::nullopt;
}

std::string Service::UpgradeTarget(std::string_view kind, const json::object& patch,
                                   const json::object& merged) const {
  if (kind != kCluster && kind != kNodePool) return "";
  const json::object* asked = hcprp::GetObject(patch, "version");
  if (!asked || !GetString(*asked, "id")) return "";
  const json::object* version = hcprp::GetObject(merged, "version");
  if (!version) return "";
  const std::shared_ptr<const VersionCatalogue> catalogue = versions();
  const CatalogueVersion* resolved = ResolveVersion(*catalogue, GetString(*version, "id").value_or(""),
                                                    GetString(*version, "channel_group").value_or(""));
  if (!resolved || resolved->raw_id == RunningVersion(merged)) return "";
  return resolved->raw_id;
}

void Service::OnStepDue(const std::string& href) {
  MutexLock lock(mu_);
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
    if (options_.logger) {
      options_.logger->Error("cannot persist a transition",
                             {{"href", href}, {"error", st.error().ToString()}});
    }
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
  MutexLock lock(mu_);
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
  MutexLock lock(mu_);
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
  MutexLock lock(mu_);
  return records_.size();
}

uint64_t Service::last_sequence() const {
  MutexLock lock(mu_);
  return last_sequence_;
}

void Service::Shutdown() {
  shutdown_.store(true);
  {
    // Taking each waiter's mutex orders the flag before their predicate checks.
    MutexLock lock(mu_);
  }
  events_cv_.NotifyAll();
  { MutexLock lock(sleep_mu_); }
  shutdown_cv_.NotifyAll();
}

}  // namespace hcprp::simulator
