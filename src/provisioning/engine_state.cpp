// Persistence: objects and units as documents of the simulator's database, committed with the simulated
// Azure's changes of the same step; loading (and importing a legacy engine.json once).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <unordered_map>

#include "core/json_writer.h"
#include "provisioning/crash_point.h"
#include "provisioning/engine_internal.h"
#include "provisioning/snapshot.h"

namespace hcprp::provisioning {

namespace {

constexpr std::string_view kObjectSpace = "engine.object";
constexpr std::string_view kUnitSpace = "engine.unit";

}  // namespace

namespace {

// What a unit key names before its '#': the node pool or cluster that owns the unit.
std::string_view OwnerOfKey(std::string_view key) { return key.substr(0, key.find('#')); }

// The cluster an owner belongs to: a node pool's href without its "/node_pools/..." part.
std::string_view ClusterOfOwner(std::string_view owner) {
  return owner.substr(0, owner.find("/node_pools/"));
}

// The part of `id` after "/providers/" when it starts with `base` (which ends there), else "".
std::string_view BaseOf(std::string_view id) {
  constexpr std::string_view kProviders = "/providers/";
  const size_t at = id.find(kProviders);
  return at == std::string_view::npos ? std::string_view() : id.substr(0, at + kProviders.size());
}

}  // namespace

// The documents leave out what loading defaults (empty strings, zeros, false) and what their keys
// already say: a unit's key, owner, cluster and name, the resource group its services' IDs share, a
// node pool's href before its machines' keys. A machine's document is rewritten at each of its
// services' steps, a node pool's at each roll-up; older, longer documents still load.
std::string Engine::EncodeObj(const Obj& o) {
  std::string out;
  out.reserve(256 + 24 * o.machines.size());
  JsonWriter w(out);
  w.BeginObject().Member("href", o.href).Member("kind", o.kind);
  auto str = [&](std::string_view k, const std::string& v) {
    if (!v.empty()) w.Member(k, v);
  };
  str("cluster", o.cluster);
  str("name", o.name);
  w.Member("op", simulator::OperationName(o.op));
  str("cs_state", o.cs_state);
  str("failure_state", o.failure_state);
  if (o.desired != 0) w.Member("desired", o.desired);
  str("version", o.version);
  if (o.upgrade_op != 0) w.Member("upgrade_op", static_cast<int64_t>(o.upgrade_op));
  if (o.upgrade_due != TimePoint{}) w.Member("upgrade_due_ms", ToUnixMillis(o.upgrade_due));
  str("sub", o.sub);
  str("mrg_id", o.mrg_id);
  str("caller", o.caller);
  str("cp_unit", o.cp_unit);
  if (!o.creds_valid) w.Member("creds_valid", false);
  str("creds_reason", o.creds_reason);
  str("creds_message", o.creds_message);
  if (o.creds_invalid_since != TimePoint{})
    w.Member("creds_invalid_since_ms", ToUnixMillis(o.creds_invalid_since));
  auto keys = [&](std::string_view k, const std::vector<std::string>& list) {
    if (list.empty()) return;
    w.Key(k).BeginArray();
    // A machine's key starts with its node pool's href: written from its '#'.
    for (const auto& m : list)
      w.String(OwnerOfKey(m) == o.href ? std::string_view(m).substr(o.href.size()) : m);
    w.EndArray();
  };
  keys("machines", o.machines);
  if (o.next_index != 0) w.Member("next_index", o.next_index);
  if (o.orphaned != 0) w.Member("orphaned", o.orphaned);
  keys("orphaned_machines", o.orphaned_machines);
  if (!o.cond_since.empty()) {
    w.Key("cond_since").BeginObject();
    for (const auto& [t, p] : o.cond_since) {
      w.Key(t).BeginArray().String(p.first).Int(ToUnixMillis(p.second)).EndArray();
    }
    w.EndObject();
  }
  w.EndObject();
  return out;
}

std::string Engine::EncodeUnit(const Unit& u) {
  const bool one_caller =
      !u.svcs.empty() && std::all_of(u.svcs.begin(), u.svcs.end(),
                                     [&](const UnitService& s) { return s.caller == u.svcs.front().caller; });
  // The resource group every service's ID is in, when they share one.
  std::string_view base = u.svcs.empty() ? std::string_view() : BaseOf(u.svcs.front().id);
  for (const auto& s : u.svcs) {
    if (base.empty() || BaseOf(s.id) != base) {
      base = {};
      break;
    }
  }
  std::string out;
  out.reserve(256 + 128 * u.svcs.size());
  JsonWriter w(out);
  w.BeginObject();
  if (OwnerOfKey(u.key) != u.owner) w.Member("owner", u.owner);
  if (ClusterOfOwner(u.owner) != u.cluster) w.Member("cluster", u.cluster);
  const size_t hash = u.key.find('#');
  if (hash == std::string::npos || std::string_view(u.key).substr(hash + 1) != u.name)
    w.Member("name", u.name);
  if (u.index != 0) w.Member("index", u.index);
  if (u.control_plane) w.Member("control_plane", true);
  if (u.deleting) w.Member("deleting", true);
  if (u.orphaned) w.Member("orphaned", true);
  if (!u.version.empty()) w.Member("version", u.version);
  if (one_caller) w.Member("caller", u.svcs.front().caller);
  if (!base.empty()) w.Member("base", base);
  w.Key("svcs").BeginArray();
  for (const auto& s : u.svcs) {
    w.BeginObject().Member("type", static_cast<int>(s.type));
    if (base.empty()) {
      w.Member("id", s.id);
    } else {
      w.Member("rid", std::string_view(s.id).substr(base.size()));
    }
    if (!one_caller) w.Member("caller", s.caller);
    w.Member("state", SvcStateName(s.state));
    // An operation awaited within the client timeout is not a stored future: after a restart it is
    // found again by reading the resource (PUT/DELETE adopt the running operation).
    if (s.pending && s.pending->stored)
      w.Member("fut_type", AzureOpKindName(s.pending->kind)).Member("fut_token", s.pending->token);
    if (s.attempts != 0) w.Member("attempts", s.attempts);
    if (s.err_status != 0) w.Member("err_status", s.err_status);
    if (!s.err_code.empty()) w.Member("err_code", s.err_code);
    if (!s.err_message.empty()) w.Member("err_message", s.err_message);
    if (s.orphaned) w.Member("orphaned", true);
    w.Member("since_ms", ToUnixMillis(s.since)).EndObject();
  }
  w.EndArray().EndObject();
  return out;
}

void Engine::TouchUnitLocked(const std::string& key) {
  dirty_units_[key].clear();
  unencoded_units_.push_back(key);
}

void Engine::EncodeTouchedUnitsLocked() {
  for (const auto& key : unencoded_units_) {
    auto d = dirty_units_.find(key);
    auto u = units_.find(key);
    if (d != dirty_units_.end() && d->second.empty() && u != units_.end()) d->second = EncodeUnit(u->second);
  }
  unencoded_units_.clear();
}

void Engine::TouchObjectLocked(const std::string& href) {
  dirty_objs_.insert(href);
  auto it = objs_.find(href);
  if (it == objs_.end()) return;
  const Obj& o = it->second;
  if (!o.cluster.empty()) dirty_objs_.insert(o.cluster);
}

Engine::Batch Engine::TakeBatchLocked() {
  Batch b;
  for (auto& p : committed_points_) b.points.push_back(std::move(p));
  committed_points_.clear();
  group_started_ = {};
  if (!options_.state) {
    dirty_objs_.clear();
    dirty_units_.clear();
    unencoded_units_.clear();
    return b;
  }
  b.ticket = next_ticket_++;
  for (const auto& href : dirty_objs_) {
    auto it = objs_.find(href);
    if (it == objs_.end()) {
      b.removed_objs.push_back(href);
    } else {
      b.objs.push_back(it->second);
    }
  }
  for (auto& [key, doc] : dirty_units_) {
    auto it = units_.find(key);
    if (it == units_.end()) {
      b.removed_units.push_back(key);
    } else {
      b.units.emplace_back(key, doc.empty() ? EncodeUnit(it->second) : std::move(doc));
    }
  }
  unencoded_units_.clear();
  dirty_objs_.clear();
  dirty_units_.clear();
  return b;
}

Status Engine::WriteBatch(Batch& b) {
  if (b.ticket == 0) {
    for (const auto& p : b.points) CrashPoint(p);
    return Status::Ok();
  }
  Status st;
  {
    MutexLock lock(commit_mu_);
    queued_batches_.emplace(b.ticket, &b);
    commit_cv_.NotifyAll();
    // Group commit: whoever finds the next batches in line writes them all, in ticket order, in one
    // transaction (a later batch may hold newer versions of the same documents); the others wait.
    while (written_ticket_ < b.ticket) {
      if (writing_ || queued_batches_.empty() || queued_batches_.begin()->first != written_ticket_ + 1) {
        commit_cv_.Wait(lock);
        continue;
      }
      writing_ = true;
      std::vector<Batch*> group;
      uint64_t last = written_ticket_;
      for (auto it = queued_batches_.begin(); it != queued_batches_.end() && it->first == last + 1;) {
        group.push_back(it->second);
        ++last;
        it = queued_batches_.erase(it);
      }
      lock.unlock();
      simulator::StateBatch batch;
      // An object whose document is what the database holds already is not written again (a node
      // pool's roll-up that changed nothing, its cluster touched with it). href -> document, or
      // nullopt when removed, as this group leaves them.
      std::unordered_map<std::string, std::optional<std::string>> latest;
      for (Batch* g : group) {
        for (const auto& o : g->objs) {
          std::string doc = EncodeObj(o);
          const std::string* held = nullptr;
          if (auto l = latest.find(o.href); l != latest.end()) {
            held = l->second ? &*l->second : nullptr;
          } else if (auto w = written_objs_.find(o.href); w != written_objs_.end()) {
            held = &w->second;
          }
          if (held && *held == doc) continue;
          batch.Put(std::string(kObjectSpace), o.href, doc);
          latest[o.href] = std::move(doc);
        }
        for (const auto& h : g->removed_objs) {
          batch.Delete(std::string(kObjectSpace), h);
          latest[h] = std::nullopt;
        }
        for (auto& [key, doc] : g->units) batch.Put(std::string(kUnitSpace), key, std::move(doc));
        for (const auto& k : g->removed_units) batch.Delete(std::string(kUnitSpace), k);
        g->azure.EncodeInto(batch);
      }
      Status committed = options_.state->Commit(batch);
      if (!committed.ok() && options_.logger) {
        // What the batches held stays in memory; the next change of each document writes it again.
        options_.logger->Warn("cannot commit the provisioning state",
                              {{"error", committed.error().ToString()}});
      }
      if (committed.ok()) {
        for (auto& [href, doc] : latest) {
          if (doc) {
            written_objs_[href] = std::move(*doc);
          } else {
            written_objs_.erase(href);
          }
        }
      }
      lock.lock();
      for (Batch* g : group) g->written = committed;
      written_ticket_ = last;
      writing_ = false;
      commit_cv_.NotifyAll();
    }
    st = b.written;
  }
  if (st.ok()) {
    for (const auto& p : b.points) CrashPoint(p);
  }
  return st;
}

Status Engine::CommitNow() {
  mu_.unlock();
  Batch b;
  {
    // The simulated Azure's changes are taken after the engine's, outside mu_: a batch may hold Azure
    // ahead of the engine (a call the engine has not recorded yet, which it repeats and Azure answers
    // idempotently), never behind. take_mu_ keeps the tickets and the Azure takes in one order.
    MutexLock take(take_mu_);
    {
      MutexLock engine(mu_);
      b = TakeBatchLocked();
    }
    if (b.ticket != 0) b.azure = options_.azure->TakeChanges();
  }
  Status st = WriteBatch(b);
  mu_.lock();
  return st;
}

Status Engine::Flush() {
  MutexLock lock(mu_);
  return CommitNow();
}

size_t Engine::DeleteUnannounced() {
  MutexLock lock(mu_);
  size_t n = 0;
  const TimePoint now = options_.clock->Now();
  for (auto& [href, o] : objs_) {
    if (announced_.count(href)) continue;
    o.unknown = true;
    o.op = Operation::kDelete;
    dirty_objs_.insert(href);
    EnqueueLocked("o:" + href, now);
    ++n;
    if (options_.logger) {
      options_.logger->Warn("deleting what is left in Azure of an object the Cluster Service no longer has",
                            {{"href", href}});
    }
  }
  return n;
}

Status Engine::Load() {
  if (!options_.state) return Status::Ok();
  HCPRP_ASSIGN_OR_RETURN(auto objs, options_.state->Load(kObjectSpace));
  HCPRP_ASSIGN_OR_RETURN(auto units, options_.state->Load(kUnitSpace));
  MutexLock lock(mu_);
  if (objs.empty() && units.empty()) {
    // Written by an older version as a periodic snapshot: imported once, then only the database.
    const std::string legacy = options_.state->dir() + "/engine.json";
    HCPRP_ASSIGN_OR_RETURN(auto text, ReadFileIfExists(legacy));
    if (!text.has_value()) return Status::Ok();
    auto parsed = ParseJson(*text, 16);
    if (!parsed.ok() || !parsed->is_object()) return Error::Corruption(legacy + " is not a JSON object");
    HCPRP_RETURN_IF_ERROR(LoadDocs(parsed->as_object()));
    for (const auto& [h, o] : objs_) dirty_objs_.insert(h);
    for (const auto& [k, u] : units_) TouchUnitLocked(k);
    HCPRP_RETURN_IF_ERROR(CommitNow());
    std::error_code ec;
    std::filesystem::remove(legacy, ec);
    return Status::Ok();
  }
  json::array o_docs, u_docs;
  for (const auto& [list, out] : {std::pair{&objs, &o_docs}, std::pair{&units, &u_docs}}) {
    for (const auto& [key, text] : *list) {
      auto v = ParseJson(text, 16);
      if (!v.ok() || !v->is_object())
        return Error::Corruption("engine document " + key + " is not a JSON object");
      // A unit's document leaves its key to the row.
      if (out == &u_docs && !v->as_object().contains("key")) v->as_object()["key"] = key;
      out->push_back(std::move(*v));
    }
  }
  return LoadDocs(json::object{{"objects", std::move(o_docs)}, {"units", std::move(u_docs)}});
}

Status Engine::LoadDocs(const json::object& root) {
  const TimePoint now = options_.clock->Now();
  auto str = [](const json::object& o, std::string_view k) {
    return std::string(GetString(o, k).value_or(""));
  };
  if (const json::array* objs = GetArray(root, "objects")) {
    for (const auto& v : *objs) {
      if (!v.is_object()) continue;
      const json::object& j = v.as_object();
      Obj o;
      o.href = str(j, "href");
      o.kind = str(j, "kind");
      o.cluster = str(j, "cluster");
      o.name = str(j, "name");
      o.op = simulator::ParseOperation(str(j, "op")).value_or(Operation::kCreate);
      o.cs_state = str(j, "cs_state");
      o.failure_state = str(j, "failure_state");
      o.desired = GetInt(j, "desired").value_or(0);
      o.version = str(j, "version");
      o.upgrade_op = static_cast<uint64_t>(GetInt(j, "upgrade_op").value_or(0));
      if (auto due = GetInt(j, "upgrade_due_ms")) o.upgrade_due = FromUnixMillis(*due);
      o.sub = str(j, "sub");
      o.mrg_id = str(j, "mrg_id");
      o.caller = str(j, "caller");
      o.cp_unit = str(j, "cp_unit");
      o.creds_valid = GetBool(j, "creds_valid").value_or(true);
      o.creds_reason = str(j, "creds_reason");
      o.creds_message = str(j, "creds_message");
      o.creds_invalid_since = FromUnixMillis(GetInt(j, "creds_invalid_since_ms").value_or(0));
      // A key written from its '#' follows the node pool's href.
      auto keys = [&](std::string_view k, std::vector<std::string>& out) {
        if (const json::array* m = GetArray(j, k)) {
          for (const auto& e : *m) {
            if (!e.is_string()) continue;
            const std::string_view key = e.as_string();
            out.push_back(key.starts_with('#') ? o.href + std::string(key) : std::string(key));
          }
        }
      };
      keys("machines", o.machines);
      o.next_index = GetInt(j, "next_index").value_or(0);
      o.orphaned = GetInt(j, "orphaned").value_or(0);
      keys("orphaned_machines", o.orphaned_machines);
      if (const json::object* cs = GetObject(j, "cond_since")) {
        for (const auto& [t, p] : *cs) {
          if (p.is_array() && p.as_array().size() == 2 && p.as_array()[0].is_string() &&
              p.as_array()[1].is_int64()) {
            o.cond_since[std::string(t)] = {std::string(p.as_array()[0].as_string()),
                                            FromUnixMillis(p.as_array()[1].as_int64())};
          }
        }
      }
      EnqueueLocked("o:" + o.href, now);
      objs_[o.href] = std::move(o);
    }
  }
  if (const json::array* units = GetArray(root, "units")) {
    for (const auto& v : *units) {
      if (!v.is_object()) continue;
      const json::object& j = v.as_object();
      Unit u;
      // What a document leaves out follows from its key (see EncodeUnit).
      u.key = str(j, "key");
      u.owner = j.contains("owner") ? str(j, "owner") : std::string(OwnerOfKey(u.key));
      u.cluster = j.contains("cluster") ? str(j, "cluster") : std::string(ClusterOfOwner(u.owner));
      const size_t hash = u.key.find('#');
      u.name = j.contains("name") || hash == std::string::npos ? str(j, "name") : u.key.substr(hash + 1);
      const std::string base = str(j, "base");
      u.index = GetInt(j, "index").value_or(0);
      u.control_plane = GetBool(j, "control_plane").value_or(false);
      u.deleting = GetBool(j, "deleting").value_or(false);
      u.orphaned = GetBool(j, "orphaned").value_or(false);
      u.version = str(j, "version");
      if (const json::array* svcs = GetArray(j, "svcs")) {
        for (const auto& sv : *svcs) {
          if (!sv.is_object()) continue;
          const json::object& s = sv.as_object();
          UnitService x;
          x.type = static_cast<ResourceType>(GetInt(s, "type").value_or(0));
          x.id = s.contains("rid") ? base + str(s, "rid") : str(s, "id");
          x.caller = s.contains("caller") ? str(s, "caller") : str(j, "caller");
          x.state = ParseSvcState(str(s, "state"));
          if (auto kind = ParseAzureOpKind(str(s, "fut_type")))
            x.pending = PendingAzureOp{*kind, str(s, "fut_token"), /*stored=*/true};
          x.attempts = static_cast<int>(GetInt(s, "attempts").value_or(0));
          x.err_status = static_cast<int>(GetInt(s, "err_status").value_or(0));
          x.err_code = str(s, "err_code");
          x.err_message = str(s, "err_message");
          x.orphaned = GetBool(s, "orphaned").value_or(false);
          x.since = FromUnixMillis(GetInt(s, "since_ms").value_or(0));
          u.svcs.push_back(std::move(x));
        }
      }
      EnqueueLocked("u:" + u.key, now);
      units_[u.key] = std::move(u);
    }
  }
  // A reference to a unit that is not there would fail in a worker; it fails the start instead.
  for (const auto& [href, o] : objs_) {
    if (!o.cp_unit.empty() && !units_.count(o.cp_unit)) {
      return Error::Corruption("provisioning state: " + href + " names control plane " + o.cp_unit +
                               ", which does not exist");
    }
    for (const auto& k : o.machines) {
      if (!units_.count(k)) {
        std::string message = "provisioning state: " + href;
        message.append(" names machine ").append(k).append(", which does not exist");
        return Error::Corruption(message);
      }
    }
  }
  return Status::Ok();
}

}  // namespace hcprp::provisioning
