#include "check/check.h"

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>

#include "arm/documents.h"
#include "backend/divergence.h"
#include "backend/documents.h"
#include "clusterservice/event.h"
#include "clusterservice/update_graph.h"
#include "core/time.h"

namespace hcprp::check {
namespace {

// Reads every document of one partition of the resources container.
Result<std::vector<store::Document>> ReadPartition(store::Store& store, const std::string& pk) {
  std::vector<store::Document> out;
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = pk;
  q.max_items = 500;
  while (true) {
    HCPRP_ASSIGN_OR_RETURN(auto page, store.Query(q));
    for (auto& d : page.documents) out.push_back(std::move(d));
    if (page.continuation.empty()) break;
    q.continuation = page.continuation;
  }
  return out;
}

std::string TypeOf(const json::value& body) {
  if (const auto* o = body.if_object()) return ToLower(GetString(*o, "resourceType").value_or(""));
  return "";
}

bool IsResourceType(std::string_view t) {
  return t == arm::kClusterDocType || t == arm::kNodePoolDocType || t == arm::kExternalAuthDocType;
}

// The latest lastTransitionTime among the Cluster Service conditions the backend copied into a
// resource document, or nullopt.
std::optional<TimePoint> LatestConditionChange(const arm::ResourceDocument& r) {
  std::optional<TimePoint> latest;
  const json::array* conditions = GetArray(r.service_status, "conditions");
  if (conditions == nullptr) return latest;
  for (const auto& c : *conditions) {
    const auto* o = c.if_object();
    if (o == nullptr) continue;
    auto t = ParseRfc3339(GetString(*o, "lastTransitionTime").value_or(""));
    if (t.ok() && (!latest || *t > *latest)) latest = *t;
  }
  return latest;
}

// "/subscriptions/s/resourceGroups/g" of an Azure resource ID, lower-cased; "" when it has none.
std::string ResourceGroupOf(std::string_view id) {
  const std::string lower = ToLower(id);
  constexpr std::string_view kSubs = "/subscriptions/";
  constexpr std::string_view kGroups = "/resourcegroups/";
  if (lower.rfind(kSubs, 0) != 0) return "";
  size_t groups = lower.find('/', kSubs.size());
  if (groups == std::string::npos || lower.compare(groups, kGroups.size(), kGroups) != 0) return "";
  size_t end = lower.find('/', groups + kGroups.size());
  return lower.substr(0, end);
}

// The machine a resource of the provisioning engine belongs to ("<pool>-<index>"), from its ID:
// virtualMachines/M, virtualMachines/M/extensions/..., networkInterfaces/M-nic, disks/M-osdisk,
// publicIPAddresses/M-pip; "" for anything else (the control plane's, role assignments).
std::string MachineOf(std::string_view id) {
  const std::string lower = ToLower(id);
  auto after = [&](std::string_view marker) -> std::string {
    size_t p = lower.find(marker);
    if (p == std::string::npos) return "";
    std::string rest = lower.substr(p + marker.size());
    return rest.substr(0, rest.find('/'));
  };
  auto strip = [](std::string name, std::string_view suffix) -> std::string {
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      return "";
    return name.substr(0, name.size() - suffix.size());
  };
  if (auto m = after("/virtualmachines/"); !m.empty()) return m;
  if (auto m = after("/networkinterfaces/"); !m.empty()) return strip(m, "-nic");
  if (auto m = after("/disks/"); !m.empty()) return strip(m, "-osdisk");
  if (auto m = after("/publicipaddresses/"); !m.empty() && m != "kube-apiserver-pip") return strip(m, "-pip");
  return "";
}

// Invariant 9 against the simulator's Azure: managed resource groups (and whatever is in them) of
// clusters the Cluster Service no longer has, and in the groups of the clusters it has, machines of
// node pools it no longer has that were not orphaned (left to the group's deletion because the
// cluster's identity could not delete them). A Cluster Service without a simulated Azure (404 on
// its control API) is not checked.
Status CheckSimulatedAzure(clusterservice::Client& cs, const json::array& clusters,
                           const std::function<void(std::string, std::string)>& add) {
  auto listed = cs.Get("/control/azure/resources");
  if (!listed.ok()) return listed.error().IsNotFound() ? Status::Ok() : Status(listed.error());
  std::set<std::string> live_groups;
  for (const auto& c : clusters) {
    const auto* obj = c.if_object();
    if (obj == nullptr) continue;
    auto view = cs.Get(std::string(GetString(*obj, "href").value_or("")) + "/azure_resources");
    if (!view.ok()) {
      if (view.error().IsNotFound()) continue;  // not (yet) known to the provisioning engine
      return view.error();
    }
    live_groups.insert(ToLower(GetString(*view, "managed_resource_group").value_or("")));
    // Node pools the Cluster Service has (by name, and by the last segment of their href).
    std::set<std::string> pools;
    const std::string href(GetString(*obj, "href").value_or(""));
    auto listed_pools = cs.List(href + "/node_pools");
    if (!listed_pools.ok()) {
      if (listed_pools.error().IsNotFound()) continue;  // deleted in the meantime
      return listed_pools.error();
    }
    for (const auto& p : *listed_pools) {
      const auto* po = p.if_object();
      if (po == nullptr) continue;
      pools.insert(ToLower(GetString(*po, "name").value_or("")));
      const std::string ph(GetString(*po, "href").value_or(""));
      pools.insert(ToLower(ph.substr(ph.rfind('/') + 1)));
    }
    std::set<std::string> orphaned;
    if (const json::array* o = GetArray(*view, "orphaned_machines")) {
      for (const auto& m : *o) {
        if (m.is_string()) orphaned.insert(ToLower(m.as_string()));
      }
    }
    std::map<std::string, size_t> left;  // node pool -> resources of its machines
    const json::array* in_group = GetArray(*view, "azure_resources");
    for (const auto& r : in_group ? *in_group : json::array{}) {
      const auto* ro = r.if_object();
      if (ro == nullptr) continue;
      const std::string machine = MachineOf(GetString(*ro, "id").value_or(""));
      size_t dash = machine.rfind('-');
      if (machine.empty() || dash == std::string::npos || orphaned.count(machine)) continue;
      const std::string pool = machine.substr(0, dash);
      if (!pools.count(pool)) ++left[pool];
    }
    for (const auto& [pool, n] : left) {
      add(std::string(href).append("/node_pools/").append(pool),
          std::to_string(n) +
              " Azure resource(s) of machines of a node pool the Cluster Service no "
              "longer has, neither deleted nor orphaned");
    }
  }
  std::map<std::string, size_t> leaked;  // group -> resources in it
  const json::array* items = GetArray(*listed, "items");
  for (const auto& item : items ? *items : json::array{}) {
    const auto* o = item.if_object();
    if (o == nullptr || GetBool(*o, "customerOwned").value_or(true)) continue;
    const std::string group = ResourceGroupOf(GetString(*o, "id").value_or(""));
    if (!group.empty() && !live_groups.count(group)) ++leaked[group];
  }
  for (const auto& [group, n] : leaked) {
    add(group, "managed resource group of no Cluster Service cluster, with " + std::to_string(n) +
                   " Azure resource(s) the service created");
  }
  return Status::Ok();
}

// The documents of one partition, read.
struct Partition {
  std::map<std::string, arm::ResourceDocument> resources;    // lower resource ID -> doc
  std::map<std::string, arm::OperationDocument> operations;  // op id -> doc
  std::map<std::string, std::vector<const arm::OperationDocument*>> ops_by_resource;  // lower resource ID
};

// One run of the check: the report as it grows, and the internal IDs of every resource document.
class Checker {
 public:
  Checker(store::Store& store, clusterservice::Client* cs, const Clock& clock, const CheckOptions& options)
      : store_(store), cs_(options.check_cluster_service ? cs : nullptr), clock_(clock), options_(options) {}

  Result<Report> Run() {
    std::string cont;
    while (true) {
      HCPRP_ASSIGN_OR_RETURN(auto parts, store_.ListPartitions(store::kResources, 500, cont));
      for (const auto& pdoc : parts.documents) {
        HCPRP_RETURN_IF_ERROR(CheckPartition(pdoc.partition_key.empty() ? pdoc.id : pdoc.partition_key));
      }
      if (parts.continuation.empty()) break;
      cont = parts.continuation;
    }
    if (cs_ != nullptr) {
      HCPRP_ASSIGN_OR_RETURN(auto held, backend::ReadHeldObjects(store_));
      for (backend::HeldObject& h : held) held_.emplace(ToLower(h.href), std::move(h));
      HCPRP_ASSIGN_OR_RETURN(auto clusters, cs_->List(std::string(clusterservice::kApiPrefix) + "/clusters"));
      CheckServiceObjects(clusters);
      HCPRP_RETURN_IF_ERROR(
          CheckSimulatedAzure(*cs_, clusters, [&](std::string subject, std::string message) {
            Add(Invariant::kNothingLeftInAzure, std::move(subject), std::move(message));
          }));
    }
    return std::move(report_);
  }

 private:
  void Add(Invariant invariant, std::string subject, std::string message) {
    report_.violations.push_back({invariant, std::move(subject), std::move(message)});
  }

  Status CheckPartition(const std::string& pk) {
    ++report_.partitions;
    HCPRP_ASSIGN_OR_RETURN(auto docs, ReadPartition(store_, pk));
    const Partition p = Classify(docs);
    const TimePoint now = clock_.Now();
    for (const auto& [id, op] : p.operations) CheckOperation(p, id, op, now);
    for (const auto& [key, r] : p.resources) HCPRP_RETURN_IF_ERROR(CheckResource(p, key, r));
    return Status::Ok();
  }

  // Reads the resource and operation documents of a partition (an unreadable one is a violation).
  Partition Classify(const std::vector<store::Document>& docs) {
    Partition p;
    for (const auto& d : docs) {
      const std::string type = TypeOf(d.body);
      if (IsResourceType(type)) {
        auto r = arm::ResourceDocument::FromBody(d.body);
        if (!r.ok()) {
          Add(Invariant::kOneActiveOperation, d.id, "unreadable resource document: " + r.error().message());
          continue;
        }
        ++report_.resources;
        if (!r->internal_id.empty()) known_internal_ids_.insert(ToLower(r->internal_id));
        std::string key = ToLower(r->resource_id);
        p.resources.emplace(std::move(key), std::move(r).value());
      } else if (type == arm::kOperationDocType) {
        auto o = arm::OperationDocument::FromBody(d.id, d.body);
        if (!o.ok()) {
          Add(Invariant::kOperationErrorsComplete, d.id,
              "unreadable operation document: " + o.error().message());
          continue;
        }
        ++report_.operations;
        p.operations.emplace(d.id, std::move(o).value());
      } else if (auto spc = backend::ServiceProviderCluster::FromBody(d.body)) {
        stored_desired_[ToLower(spc->href)] = spc->desired_version;
      }
    }
    for (const auto& [id, op] : p.operations) p.ops_by_resource[ToLower(op.external_id)].push_back(&op);
    return p;
  }

  void CheckOperation(const Partition& p, const std::string& id, const arm::OperationDocument& op,
                      TimePoint now) {
    if ((op.status == arm::kStateFailed || op.status == arm::kStateCanceled) &&
        (!op.error || op.error->code.empty() || op.error->message.empty())) {
      Add(Invariant::kOperationErrorsComplete, id,
          "operation " + op.status + " without error code and message");
    }
    if (!arm::IsTerminalState(op.status)) CheckOperationProgress(p, id, op, now);
    auto r = p.resources.find(ToLower(op.external_id));
    if (op.request == arm::OperationRequest::kDelete && op.status == arm::kStateSucceeded &&
        r != p.resources.end() &&
        (r->second.active_operation_id.value_or("") == id ||
         r->second.provisioning_state == arm::kStateDeleting)) {
      Add(Invariant::kDeletedResourcesGo, op.external_id,
          "delete operation " + id + " succeeded but the resource document remains");
    }
  }

  // A non-terminal operation: within its deadline, and not stuck (no change of its status or of its
  // resource's conditions for stuck_after).
  void CheckOperationProgress(const Partition& p, const std::string& id, const arm::OperationDocument& op,
                              TimePoint now) {
    const Duration limit = op.request == arm::OperationRequest::kDelete ? Duration(options_.delete_deadline)
                           : op.request == arm::OperationRequest::kUpdate
                               ? Duration(options_.update_deadline)
                               : Duration(options_.create_deadline);
    if (now - op.start_time > limit + std::chrono::minutes(1)) {
      Add(Invariant::kOperationsEnd, id,
          "operation " + op.status + " since " + FormatRfc3339(op.start_time) + ", past its deadline");
      return;
    }
    if (options_.stuck_after.count() <= 0) return;
    TimePoint progress = std::max(op.start_time, op.last_transition_time);
    auto r = p.resources.find(ToLower(op.external_id));
    if (r != p.resources.end()) {
      if (auto changed = LatestConditionChange(r->second)) progress = std::max(progress, *changed);
    }
    if (now - progress > options_.stuck_after) {
      Add(Invariant::kOperationsEnd, id,
          "operation " + std::string(arm::OperationRequestName(op.request)) + " " + op.status +
              " is stuck: no change of its status or of its resource's conditions since " +
              FormatRfc3339(progress));
    }
  }

  Status CheckResource(const Partition& p, const std::string& key, const arm::ResourceDocument& r) {
    std::vector<const arm::OperationDocument*> active;
    const arm::OperationDocument* latest = nullptr;  // the latest PUT, PATCH or DELETE
    if (auto ops = p.ops_by_resource.find(key); ops != p.ops_by_resource.end()) {
      for (const auto* op : ops->second) {
        if (!arm::IsTerminalState(op->status)) active.push_back(op);
        if (op->request == arm::OperationRequest::kCreate || op->request == arm::OperationRequest::kUpdate ||
            op->request == arm::OperationRequest::kDelete) {
          if (!latest || op->start_time > latest->start_time) latest = op;
        }
      }
    }
    CheckActiveOperation(p, r, active);
    if (latest && latest->status != r.provisioning_state) {
      Add(Invariant::kProvisioningStateFollowsOperation, r.resource_id,
          "provisioningState " + r.provisioning_state + " but latest operation " + latest->id + " is " +
              latest->status);
    }
    // A resource document points at an existing Cluster Service object, unless it is being deleted.
    if (cs_ != nullptr && !r.internal_id.empty() && r.provisioning_state != arm::kStateDeleting) {
      auto got = cs_->Get(r.internal_id);
      if (!got.ok() && got.error().IsNotFound()) {
        Add(Invariant::kServiceObjectsMatchDocuments, r.resource_id,
            "points at missing Cluster Service object " + r.internal_id);
      } else if (!got.ok()) {
        return got.error();
      }
    }
    return Status::Ok();
  }

  // At most one non-terminal operation (`active`), named by activeOperationId.
  void CheckActiveOperation(const Partition& p, const arm::ResourceDocument& r,
                            const std::vector<const arm::OperationDocument*>& active) {
    if (active.size() > 1) {
      Add(Invariant::kOneActiveOperation, r.resource_id,
          std::to_string(active.size()) + " non-terminal operations");
    }
    if (active.size() == 1 && r.active_operation_id.value_or("") != active[0]->id) {
      Add(Invariant::kOneActiveOperation, r.resource_id,
          "activeOperationId '" + r.active_operation_id.value_or("") +
              "' does not name the non-terminal operation " + active[0]->id);
    }
    if (active.empty() && r.active_operation_id && p.operations.count(*r.active_operation_id)) {
      Add(Invariant::kOneActiveOperation, r.resource_id,
          "activeOperationId names terminal operation " + *r.active_operation_id);
    }
  }

  // No Cluster Service cluster or node pool without a resource document, past the GC window.
  void CheckServiceObjects(const json::array& clusters) {
    for (const auto& c : clusters) {
      const auto* obj = c.if_object();
      if (!obj) continue;
      std::vector<json::object> objects{*obj};
      const std::string href(GetString(*obj, "href").value_or(""));
      auto pools = cs_->List(href + "/node_pools");
      if (pools.ok()) {
        for (const auto& pool : *pools) {
          if (pool.is_object()) objects.push_back(pool.as_object());
        }
      }
      CheckVersions(objects);
      for (const auto& o : objects) {
        ++report_.service_objects;
        const std::string h(GetString(o, "href").value_or(""));
        if (known_internal_ids_.count(ToLower(h))) continue;
        // Reported at once: the backend never deletes a held object, the operator decides
        // (docs/backup.md). A node pool goes with its held cluster.
        const backend::HeldObject* held = HeldOf(h);
        if (held == nullptr) held = HeldOf(href);
        if (held != nullptr) {
          Add(Invariant::kServiceObjectsMatchDocuments, h, HeldMessage(*held, held->href != h));
          continue;
        }
        auto created = ParseRfc3339(GetString(o, "creation_timestamp").value_or(""));
        if (created.ok() && clock_.Now() - *created < options_.gc_window) continue;
        Add(Invariant::kServiceObjectsMatchDocuments, h, "Cluster Service object has no resource document");
      }
    }
  }

  const backend::HeldObject* HeldOf(const std::string& href) const {
    auto it = held_.find(ToLower(href));
    return it == held_.end() ? nullptr : &it->second;
  }

  static std::string HeldMessage(const backend::HeldObject& held, bool of_cluster) {
    std::string m = of_cluster ? "node pool of a held Cluster Service cluster, " : "Cluster Service object ";
    m += "of " + (held.resource_id.empty() ? std::string("an unnamed resource") : held.resource_id);
    m += " made at " + FormatRfc3339(held.created) + " while the store heard from no backend (since ";
    m += FormatRfc3339(held.gap_since) + "): the store was restored from an older copy that lacks its ";
    m += "document; held, not deleted, until the operator resolves it";
    return m;
  }

  // Invariant 10 over a cluster (objects[0]) and its node pools.
  void CheckVersions(const std::vector<json::object>& objects) {
    auto running = [](const json::object& o) {
      const json::object* status = GetObject(o, "status");
      const json::array* history = status != nullptr ? GetArray(*status, "version_history") : nullptr;
      std::vector<std::string> out;
      if (history == nullptr) return out;
      for (const json::value& v : clusterservice::ActiveVersions(*history))
        out.emplace_back(GetString(v.as_object(), "version").value_or(""));
      return out;
    };
    std::string newest_cp_minor;
    for (const std::string& v : running(objects[0])) {
      if (newest_cp_minor.empty() || clusterservice::NewerThan(clusterservice::MinorOf(v), newest_cp_minor))
        newest_cp_minor = clusterservice::MinorOf(v);
    }
    for (size_t i = 0; i < objects.size(); ++i) {
      const json::object& o = objects[i];
      const std::string href(GetString(o, "href").value_or(""));
      const json::object* version = GetObject(o, "version");
      const std::string desired =
          clusterservice::RawVersionOf(version != nullptr ? GetString(*version, "id").value_or("") : "");
      auto stored = i == 0 ? stored_desired_.find(ToLower(href)) : stored_desired_.end();
      for (const std::string& v : running(o)) {
        if (clusterservice::NewerThan(v, desired)) {
          std::string message = "desired version " + desired;
          message += " is below running version " + v;
          Add(Invariant::kVersionsConsistent, href, std::move(message));
        }
        if (stored != stored_desired_.end() && clusterservice::NewerThan(v, stored->second)) {
          std::string message = "stored desired version " + stored->second;
          message += " is below running version " + v;
          Add(Invariant::kVersionsConsistent, href, std::move(message));
        }
        if (i > 0 && !newest_cp_minor.empty() &&
            clusterservice::NewerThan(clusterservice::MinorOf(v), newest_cp_minor)) {
          std::string message = "node pool runs " + v;
          message += ", a newer minor than its control plane (" + newest_cp_minor + ")";
          Add(Invariant::kVersionsConsistent, href, std::move(message));
        }
      }
    }
  }

  store::Store& store_;
  clusterservice::Client* const cs_;  // null: the Cluster Service's invariants are not checked
  const Clock& clock_;
  const CheckOptions& options_;
  Report report_;
  std::set<std::string> known_internal_ids_;  // lower hrefs that some resource document points at
  // By lower href: the control plane's desired version in the store (backend::ServiceProviderCluster).
  std::map<std::string, std::string> stored_desired_;
  std::map<std::string, backend::HeldObject> held_;  // by lower href: objects the backend holds
};

constexpr InvariantInfo kInvariants[] = {
    {Invariant::kOneActiveOperation, "one-active-operation",
     "A resource has at most one non-terminal operation, and activeOperationId names it."},
    {Invariant::kProvisioningStateFollowsOperation, "provisioning-state-follows-operation",
     "A resource's provisioningState equals the status of its latest PUT/PATCH/DELETE operation."},
    {Invariant::kOperationErrorsComplete, "operation-errors-complete",
     "A terminal operation never changes; Failed and Canceled carry error{code,message}."},
    {Invariant::kOperationsEnd, "operations-end",
     "Every non-terminal operation reaches a terminal state before its deadline, making visible progress."},
    {Invariant::kDeletedResourcesGo, "deleted-resources-go",
     "A resource document disappears once its delete operation succeeded."},
    {Invariant::kServiceObjectsMatchDocuments, "service-objects-match-documents",
     "After the GC window no Cluster Service object lacks a resource document, and no resource document "
     "points at a missing Cluster Service object unless it is being deleted."},
    {Invariant::kNothingLeftInAzure, "nothing-left-in-azure",
     "Every Azure resource the service created lies in the managed resource group of a live cluster and "
     "belongs to a node pool the Cluster Service has, or was orphaned."},
    {Invariant::kVersionsConsistent, "versions-consistent",
     "No node pool runs a newer minor than its control plane, and no object's desired version (nor a "
     "cluster's desired version in the store) is below a version it runs."},
};

const InvariantInfo& Info(Invariant invariant) {
  for (const auto& i : kInvariants) {
    if (i.invariant == invariant) return i;
  }
  return kInvariants[0];
}

}  // namespace

std::span<const InvariantInfo> Invariants() { return kInvariants; }
int InvariantNumber(Invariant invariant) { return static_cast<int>(invariant); }
std::string_view InvariantName(Invariant invariant) { return Info(invariant).name; }
std::string_view InvariantDescription(Invariant invariant) { return Info(invariant).description; }
std::ostream& operator<<(std::ostream& out, Invariant invariant) { return out << InvariantNumber(invariant); }

Result<Report> RunCheck(store::Store& store, clusterservice::Client* cs, const Clock& clock,
                        const CheckOptions& options) {
  return Checker(store, cs, clock, options).Run();
}

json::object ReportToJson(const Report& report) {
  json::array v;
  for (const auto& x : report.violations) {
    v.push_back(
        {{"invariant", InvariantNumber(x.invariant)}, {"subject", x.subject}, {"message", x.message}});
  }
  return {{"ok", report.ok()},
          {"partitions", report.partitions},
          {"resources", report.resources},
          {"operations", report.operations},
          {"serviceObjects", report.service_objects},
          {"violations", v}};
}

}  // namespace hcprp::check
