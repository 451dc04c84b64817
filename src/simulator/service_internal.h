// What the simulator service's source files share: the record of one object and a transaction.
// Private to the simulator.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simulator/service.h"

namespace hcprp::simulator {

// A new object ID: a UUID without dashes.
std::string NewObjectId();

// A decimal integer, or nullopt when `s` is not one.
std::optional<int64_t> ParseInt(std::string_view s);

// The collections under a cluster whose objects are deleted before it (and with it).
inline constexpr const char* kChildCollections[] = {"/node_pools/", "/external_auth_configs/"};

// status.version_history keeps at most this many entries, newest first.
inline constexpr size_t kMaxVersionHistory = 10;

// The catalogue version a cluster or node pool asking for `id` in `channel_group` gets (the forms
// VersionCatalogue::Refusal accepts): for a minor ("openshift-v4.20", "4.20") the newest enabled z-stream
// of that minor in the group, else the version named. nullptr when there is none.
const CatalogueVersion* ResolveVersion(const VersionCatalogue& catalogue, std::string_view id,
                                       std::string_view channel_group);

// The raw version of the newest Completed entry of `object`'s status.version_history; "" when none.
std::string RunningVersion(const json::object& object);

// status.version_history after an object that installs `version` (a create or an upgrade) entered
// `state` at `at` (RFC 3339): "ready" completes the version's Partial entry on top (or puts a Completed
// one there); "error" and "recoverable_error" remove the Partial entry (what ran before keeps running);
// any other state puts a Partial entry on top unless there is one already. Newest first, at most
// kMaxVersionHistory entries.
void AdvanceVersionHistory(json::array& history, const std::string& version, std::string_view state,
                           const std::string& at);

// One object with what the simulator needs to drive it. Persisted as {"object": ..., "sim": ...}.
struct Service::Record {
  std::string kind;
  std::string href;
  std::string parent;   // the cluster's href, for node pools and external auths
  json::object object;  // what GET returns
  Operation op = Operation::kCreate;
  // The current operation's ID (ObjectInfo::operation_id): the sequence its first event got.
  uint64_t op_id = 0;
  // Clusters and node pools: the raw version the last create or upgrade installs ("4.21.3").
  std::string target_version;
  TimePoint state_since{};
  // The fault injected into the current operation, if any.
  std::string fail_state, fail_code, fail_message;
  // The next step, if one is planned.
  bool has_next = false;
  std::string next_state;
  TimePoint next_at{};
  std::string idem_collection, idem_key;
  uint64_t created = 0;
  // Clusters: credential revocation ("" = never, "revoking", "revoked").
  std::string revocation_state;
  TimePoint revocation_started{}, revocation_due{}, revocation_done{};
  int64_t credential_generation = 0;
  // Clusters: the CA that signs their break-glass certificates (PEM; empty until the first one).
  std::string ca_key_pem, ca_cert_pem;
  // Credentials: the kubeconfig GET shows once the credential is issued.
  std::string pending_kubeconfig;

  // status.state, or the status string of a credential.
  std::string state() const {
    auto it = object.find("status");
    if (it == object.end()) return "";
    if (it->value().is_string()) return std::string(it->value().as_string());
    if (it->value().is_object()) return std::string(GetString(it->value().as_object(), "state").value_or(""));
    return "";
  }
};

// A set of changes made under mu_, persisted and announced together by CommitLocked().
struct Service::Txn {
  std::map<std::string, std::optional<Record>> before;  // first-touch copies, for rollback
  std::vector<json::object> events;                     // without sequence numbers yet
  UpdateDocuments update_service;                       // the update service's documents to write
};

}  // namespace hcprp::simulator
