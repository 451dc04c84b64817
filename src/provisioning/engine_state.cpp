// Persistence: objects and units as documents of the simulator's database, committed with the simulated
// Azure's changes of the same step; loading (and importing a legacy engine.json once).
#include <algorithm>
#include <filesystem>

#include "core/json_writer.h"
#include "provisioning/crash_point.h"
#include "provisioning/engine_internal.h"
#include "provisioning/snapshot.h"

namespace hcprp::provisioning {

namespace {

constexpr std::string_view kObjectSpace = "engine.object";
constexpr std::string_view kUnitSpace = "engine.unit";

}  // namespace

json::object Engine::ObjDoc(const Obj& o) {
  json::object cs;
  for (const auto& [t, p] : o.cond_since)
    cs[t] = json::array{json::value(p.first), json::value(ToUnixMillis(p.second))};
  return json::object{{"href", o.href},
                      {"kind", o.kind},
                      {"cluster", o.cluster},
                      {"name", o.name},
                      {"op", simulator::OperationName(o.op)},
                      {"cs_state", o.cs_state},
                      {"failure_state", o.failure_state},
                      {"desired", o.desired},
                      {"sub", o.sub},
                      {"mrg_id", o.mrg_id},
                      {"caller", o.caller},
                      {"cp_unit", o.cp_unit},
                      {"creds_valid", o.creds_valid},
                      {"creds_reason", o.creds_reason},
                      {"creds_message", o.creds_message},
                      {"creds_invalid_since_ms", ToUnixMillis(o.creds_invalid_since)},
                      {"machines", json::value_from(o.machines)},
                      {"next_index", o.next_index},
                      {"orphaned", o.orphaned},
                      {"orphaned_machines", json::value_from(o.orphaned_machines)},
                      {"cond_since", std::move(cs)}};
}

// A unit's document leaves out what loading defaults (empty strings, zeros, false) and names the caller
// once when every service shares it: a machine's document is rewritten at each of its services' steps.
std::string Engine::EncodeUnit(const Unit& u) {
  const bool one_caller = !u.svcs.empty() && std::all_of(u.svcs.begin(), u.svcs.end(), [&](const Svc& s) {
    return s.caller == u.svcs.front().caller;
  });
  std::string out;
  out.reserve(384 + 192 * u.svcs.size());
  JsonWriter w(out);
  w.BeginObject()
      .Member("key", u.key)
      .Member("owner", u.owner)
      .Member("cluster", u.cluster)
      .Member("name", u.name)
      .Member("index", u.index);
  if (u.control_plane) w.Member("control_plane", true);
  if (u.deleting) w.Member("deleting", true);
  if (u.orphaned) w.Member("orphaned", true);
  if (one_caller) w.Member("caller", u.svcs.front().caller);
  w.Key("svcs").BeginArray();
  for (const auto& s : u.svcs) {
    w.BeginObject().Member("type", static_cast<int>(s.type)).Member("id", s.id);
    if (!one_caller) w.Member("caller", s.caller);
    w.Member("state", SvcStateName(s.state));
    // An operation awaited within the client timeout is not a stored future: after a restart it is
    // found again by reading the resource (PUT/DELETE adopt the running operation).
    if (s.fut_stored) w.Member("fut_type", s.fut_type).Member("fut_token", s.fut_token);
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
      for (Batch* g : group) {
        for (const auto& o : g->objs) batch.Put(std::string(kObjectSpace), o.href, ToJson(ObjDoc(o)));
        for (const auto& h : g->removed_objs) batch.Delete(std::string(kObjectSpace), h);
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
      o.sub = str(j, "sub");
      o.mrg_id = str(j, "mrg_id");
      o.caller = str(j, "caller");
      o.cp_unit = str(j, "cp_unit");
      o.creds_valid = GetBool(j, "creds_valid").value_or(true);
      o.creds_reason = str(j, "creds_reason");
      o.creds_message = str(j, "creds_message");
      o.creds_invalid_since = FromUnixMillis(GetInt(j, "creds_invalid_since_ms").value_or(0));
      if (const json::array* m = GetArray(j, "machines")) {
        for (const auto& k : *m) {
          if (k.is_string()) o.machines.emplace_back(k.as_string());
        }
      }
      o.next_index = GetInt(j, "next_index").value_or(0);
      o.orphaned = GetInt(j, "orphaned").value_or(0);
      if (const json::array* m = GetArray(j, "orphaned_machines")) {
        for (const auto& k : *m) {
          if (k.is_string()) o.orphaned_machines.emplace_back(k.as_string());
        }
      }
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
      u.key = str(j, "key");
      u.owner = str(j, "owner");
      u.cluster = str(j, "cluster");
      u.name = str(j, "name");
      u.index = GetInt(j, "index").value_or(0);
      u.control_plane = GetBool(j, "control_plane").value_or(false);
      u.deleting = GetBool(j, "deleting").value_or(false);
      u.orphaned = GetBool(j, "orphaned").value_or(false);
      if (const json::array* svcs = GetArray(j, "svcs")) {
        for (const auto& sv : *svcs) {
          if (!sv.is_object()) continue;
          const json::object& s = sv.as_object();
          Svc x;
          x.type = static_cast<ResourceType>(GetInt(s, "type").value_or(0));
          x.id = str(s, "id");
          x.caller = s.contains("caller") ? str(s, "caller") : str(j, "caller");
          x.state = ParseSvcState(str(s, "state"));
          x.fut_type = str(s, "fut_type");
          x.fut_token = str(s, "fut_token");
          x.fut_stored = !x.fut_type.empty();
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
