// The simulated Azure's persistence: the changes a step commits (AzureChanges, TakeChanges, Flush) and
// loading them back, with the import of the legacy azure.json snapshot.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json_writer.h"
#include "core/time.h"
#include "provisioning/azure_internal.h"
#include "provisioning/snapshot.h"

namespace hcprp::provisioning {

namespace {

constexpr std::string_view kResourceSpace = "azure.resource";
constexpr std::string_view kMetaSpace = "azure.meta";

}  // namespace

struct AzureChanges::Data {
  struct Entry {
    std::string key;
    int64_t create_starts = 0;
    std::optional<int64_t> create_ms;
    std::optional<SimulatedAzure::Resource> resource;  // nullopt: gone
    std::optional<SimulatedAzure::Operation> op;       // its operation in progress
  };
  std::vector<Entry> entries;
  std::optional<std::vector<std::string>> deleted_identities;  // set: the metadata changed
  int64_t next_token = 0;
};

AzureChanges::AzureChanges() = default;
AzureChanges::~AzureChanges() = default;
AzureChanges::AzureChanges(AzureChanges&&) noexcept = default;
AzureChanges& AzureChanges::operator=(AzureChanges&&) noexcept = default;

void AzureChanges::EncodeInto(simulator::StateBatch& batch) const {
  if (!data_) return;
  for (const auto& e : data_->entries) {
    if (!e.resource && e.create_starts == 0) {
      batch.Delete(std::string(kResourceSpace), e.key);
      continue;
    }
    // The create count outlives the resource: it is how duplicates are told.
    std::string doc;
    doc.reserve(512);
    JsonWriter w(doc);
    w.BeginObject().Member("create_starts", e.create_starts);
    if (e.create_ms) w.Member("create_ms", *e.create_ms);
    if (e.resource) {
      // Its operation in progress goes with it; an operation already ended and not yet polled is not
      // kept (a poll after a restart finds nothing and the caller reads the resource instead).
      if (e.op) {
        const SimulatedAzure::Operation& o = *e.op;
        w.Key("op")
            .BeginObject()
            .Member("token", o.token)
            .Member("key", o.key)
            .Member("started_ms", ToUnixMillis(o.started))
            .Member("done_ms", ToUnixMillis(o.done_at));
        // What loading defaults (false, empty) is left out: these documents are written at every step.
        if (o.is_delete) w.Member("delete", true);
        if (o.settled) w.Member("settled", true);
        if (o.failed) w.Member("failed", true);
        if (!o.code.empty()) w.Member("code", o.code);
        if (!o.message.empty()) w.Member("message", o.message);
        w.EndObject();
      }
      const SimulatedAzure::Resource& r = *e.resource;
      w.Key("resource")
          .BeginObject()
          .Member("id", r.id)
          .Member("type", static_cast<int>(r.type))
          .Member("state", r.state)
          .Member("created_ms", ToUnixMillis(r.created))
          .Member("active_op", r.active_op);
      if (r.customer) w.Member("customer", true);
      if (!r.permissions) w.Member("permissions", false);
      w.EndObject();
    }
    w.EndObject();
    batch.Put(std::string(kResourceSpace), e.key, std::move(doc));
  }
  if (data_->deleted_identities) {
    json::array tomb;
    for (const auto& k : *data_->deleted_identities) tomb.push_back(json::value(k));
    batch.Put(
        std::string(kMetaSpace), "meta",
        ToJson(json::object{{"next_token", data_->next_token}, {"deleted_identities", std::move(tomb)}}));
  }
}

AzureChanges SimulatedAzure::TakeChanges() {
  AzureChanges out;
  if (!options_.state) return out;
  out.data_ = std::make_unique<AzureChanges::Data>();
  AzureChanges::Data& d = *out.data_;
  MutexLock lock(mu_);
  d.entries.reserve(dirty_resources_.size());
  for (const auto& key : dirty_resources_) {
    AzureChanges::Data::Entry& e = d.entries.emplace_back();
    e.key = key;
    if (auto cs = create_starts_.find(key); cs != create_starts_.end()) e.create_starts = cs->second;
    if (auto c = create_duration_ms_.find(key); c != create_duration_ms_.end()) e.create_ms = c->second;
    if (auto r = resources_.find(key); r != resources_.end()) {
      e.resource = r->second;
      if (auto op = operations_.find(r->second.active_op); op != operations_.end()) e.op = op->second;
    }
  }
  if (dirty_meta_) {
    d.next_token = next_token_;
    d.deleted_identities.emplace();
    for (const auto& [k, v] : deleted_identities_) d.deleted_identities->push_back(k);
  }
  dirty_resources_.clear();
  dirty_meta_ = false;
  return out;
}

Status SimulatedAzure::Flush() {
  if (!options_.state) return Status::Ok();
  simulator::StateBatch batch;
  TakeChanges().EncodeInto(batch);
  return options_.state->Commit(batch);
}

Status SimulatedAzure::Load() {
  if (!options_.state) return Status::Ok();
  HCPRP_ASSIGN_OR_RETURN(auto resources, options_.state->Load(kResourceSpace));
  HCPRP_ASSIGN_OR_RETURN(auto meta, options_.state->Load(kMetaSpace));
  const std::string legacy = options_.state->dir() + "/azure.json";
  if (resources.empty() && meta.empty()) {
    // Written by an older version as a periodic snapshot: imported once, then only the database.
    HCPRP_ASSIGN_OR_RETURN(auto text, ReadFileIfExists(legacy));
    if (!text.has_value()) return Status::Ok();
    auto parsed = ParseJson(*text, 16);
    if (!parsed.ok() || !parsed->is_object()) return Error::Corruption(legacy + " is not a JSON object");
    {
      MutexLock lock(mu_);
      HCPRP_RETURN_IF_ERROR(LoadLegacyJson(parsed->as_object()));
      for (const auto& [k, r] : resources_) dirty_resources_.insert(k);
      for (const auto& [k, v] : create_starts_) dirty_resources_.insert(k);
      dirty_meta_ = true;
    }
    HCPRP_RETURN_IF_ERROR(Flush());
    std::error_code ec;
    std::filesystem::remove(legacy, ec);
    return Status::Ok();
  }
  MutexLock lock(mu_);
  json::array res, ops;
  json::object starts;
  for (const auto& [key, text] : resources) {
    auto v = ParseJson(text, 16);
    if (!v.ok() || !v->is_object())
      return Error::Corruption("azure resource " + key + " is not a JSON object");
    const json::object& d = v->as_object();
    if (auto n = GetInt(d, "create_starts"); n && *n > 0) starts[key] = *n;
    if (auto ms = GetInt(d, "create_ms")) create_duration_ms_[key] = *ms;
    if (const json::object* r = GetObject(d, "resource")) res.push_back(*r);
    if (const json::object* o = GetObject(d, "op")) ops.push_back(*o);
  }
  json::object root{{"resources", std::move(res)}, {"operations", std::move(ops)}, {"create_starts", starts}};
  for (const auto& [key, text] : meta) {
    auto v = ParseJson(text, 16);
    if (!v.ok() || !v->is_object()) return Error::Corruption("azure meta is not a JSON object");
    for (const auto& [k, x] : v->as_object()) root[k] = x;
  }
  return LoadLegacyJson(root);
}

Status SimulatedAzure::LoadLegacyJson(const json::object& root) {
  if (const json::array* res = GetArray(root, "resources")) {
    for (const auto& v : *res) {
      if (!v.is_object()) continue;
      const json::object& o = v.as_object();
      Resource r;
      r.id = std::string(GetString(o, "id").value_or(""));
      r.type = static_cast<ResourceType>(GetInt(o, "type").value_or(0));
      r.state = std::string(GetString(o, "state").value_or(""));
      r.created = FromUnixMillis(GetInt(o, "created_ms").value_or(0));
      r.active_op = std::string(GetString(o, "active_op").value_or(""));
      r.customer = GetBool(o, "customer").value_or(false);
      r.permissions = GetBool(o, "permissions").value_or(true);
      resources_.emplace(ToLower(r.id), std::move(r));
    }
  }
  if (const json::array* ops = GetArray(root, "operations")) {
    for (const auto& v : *ops) {
      if (!v.is_object()) continue;
      const json::object& o = v.as_object();
      Operation op;
      op.token = std::string(GetString(o, "token").value_or(""));
      op.key = std::string(GetString(o, "key").value_or(""));
      if (auto r = resources_.find(op.key); r != resources_.end()) op.type = r->second.type;
      op.is_delete = GetBool(o, "delete").value_or(false);
      op.started = FromUnixMillis(GetInt(o, "started_ms").value_or(0));
      op.done_at = FromUnixMillis(GetInt(o, "done_ms").value_or(0));
      op.settled = GetBool(o, "settled").value_or(false);
      op.failed = GetBool(o, "failed").value_or(false);
      op.code = std::string(GetString(o, "code").value_or(""));
      op.message = std::string(GetString(o, "message").value_or(""));
      if (!op.settled) due_.emplace(op.done_at, op.token);
      operations_.emplace(op.token, std::move(op));
    }
  }
  if (const json::object* starts = GetObject(root, "create_starts")) {
    for (const auto& [k, v] : *starts) {
      if (v.is_int64()) create_starts_[std::string(k)] = v.as_int64();
    }
  }
  if (const json::array* tomb = GetArray(root, "deleted_identities")) {
    for (const auto& v : *tomb) {
      if (v.is_string()) deleted_identities_[std::string(v.as_string())] = true;
    }
  }
  next_token_ = static_cast<uint64_t>(GetInt(root, "next_token").value_or(1));
  return Status::Ok();
}

}  // namespace hcprp::provisioning
