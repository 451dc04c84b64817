#include "store/fault_injecting_store.h"

#include <thread>

namespace hcprp::store {

namespace {
constexpr std::string_view kNames[FaultInjectingStore::kMethodCount] = {
    "Read",           "Create",       "Replace",    "Upsert",         "Delete",
    "Patch",          "Batch",        "Query",      "ListPartitions", "ReadChanges",
    "WaitForChanges", "AcquireLease", "RenewLease", "ReleaseLease",   "PurgeExpired",
};
}  // namespace

std::string_view FaultInjectingStore::MethodName(Method m) { return kNames[static_cast<size_t>(m)]; }

std::optional<FaultInjectingStore::Method> FaultInjectingStore::ParseMethod(std::string_view name) {
  for (size_t i = 0; i < kMethodCount; ++i) {
    if (kNames[i] == name) return static_cast<Method>(i);
  }
  return std::nullopt;
}

bool FaultInjectingStore::IsWrite(Method m) {
  switch (m) {
    case Method::kCreate:
    case Method::kReplace:
    case Method::kUpsert:
    case Method::kDelete:
    case Method::kPatch:
    case Method::kBatch:
    case Method::kAcquireLease:
    case Method::kRenewLease:
    case Method::kReleaseLease:
    case Method::kPurgeExpired:
      return true;
    default:
      return false;
  }
}

void FaultInjectingStore::FailNthCall(uint64_t nth, Error error, std::optional<Method> method) {
  std::lock_guard lk(mu_);
  Rule r{.action = Rule::Action::kFail, .method = method};
  r.remaining = nth == 0 ? 1 : nth;
  r.error = std::move(error);
  rules_.push_back(std::move(r));
}

void FaultInjectingStore::FailAllCalls(Error error, std::optional<Method> method) {
  std::lock_guard lk(mu_);
  Rule r{.action = Rule::Action::kFailAll, .method = method};
  r.error = std::move(error);
  rules_.push_back(std::move(r));
}

void FaultInjectingStore::DelayNthCall(uint64_t nth, std::chrono::milliseconds delay,
                                       std::optional<Method> method) {
  std::lock_guard lk(mu_);
  Rule r{.action = Rule::Action::kDelay, .method = method};
  r.remaining = nth == 0 ? 1 : nth;
  r.delay = delay;
  rules_.push_back(std::move(r));
}

void FaultInjectingStore::SetCrashPoint(CrashPoint point, CrashHook hook, uint64_t nth,
                                        std::optional<Method> method) {
  std::lock_guard lk(mu_);
  Rule r{.action = Rule::Action::kCrash, .method = method};
  r.writes_only = !method.has_value();
  r.remaining = nth == 0 ? 1 : nth;
  r.point = point;
  r.hook = std::move(hook);
  rules_.push_back(std::move(r));
}

void FaultInjectingStore::ClearFaults() {
  std::lock_guard lk(mu_);
  rules_.clear();
}

uint64_t FaultInjectingStore::CallCount(std::optional<Method> method) const {
  std::lock_guard lk(mu_);
  if (method) return calls_[static_cast<size_t>(*method)];
  uint64_t total = 0;
  for (uint64_t c : calls_) total += c;
  return total;
}

FaultInjectingStore::Plan FaultInjectingStore::Decide(Method m) {
  std::lock_guard lk(mu_);
  ++calls_[static_cast<size_t>(m)];
  Plan plan;
  for (auto it = rules_.begin(); it != rules_.end();) {
    bool matches = it->method ? *it->method == m : (!it->writes_only || IsWrite(m));
    if (!matches) {
      ++it;
      continue;
    }
    if (it->action == Rule::Action::kFailAll) {
      if (!plan.error) plan.error = it->error;
      ++it;
      continue;
    }
    if (--it->remaining > 0) {
      ++it;
      continue;
    }
    switch (it->action) {
      case Rule::Action::kFail:
        if (!plan.error) plan.error = std::move(it->error);
        break;
      case Rule::Action::kDelay:
        plan.delay += it->delay;
        break;
      case Rule::Action::kCrash:
        plan.crashes.emplace_back(it->point, std::move(it->hook));
        break;
      case Rule::Action::kFailAll:
        break;
    }
    it = rules_.erase(it);
  }
  return plan;
}

template <typename R, typename Forward>
R FaultInjectingStore::Call(Method m, Forward&& forward) {
  Plan plan = Decide(m);
  if (plan.delay.count() > 0) std::this_thread::sleep_for(plan.delay);
  if (plan.error) return *plan.error;
  auto crash_error = [&](CrashPoint p) {
    return Error::Unavailable(std::string("injected crash ") +
                              (p == CrashPoint::kBeforeCommit ? "before" : "after") + " commit of " +
                              std::string(MethodName(m)));
  };
  for (auto& [point, hook] : plan.crashes) {
    if (point == CrashPoint::kBeforeCommit) {
      if (hook) hook(m, point);
      return crash_error(point);
    }
  }
  R result = forward();
  if (!result.ok()) return result;
  for (auto& [point, hook] : plan.crashes) {
    if (point == CrashPoint::kAfterCommit) {
      if (hook) hook(m, point);
      return crash_error(point);
    }
  }
  return result;
}

Result<Document> FaultInjectingStore::Read(std::string_view container, std::string_view pk,
                                           std::string_view id) {
  return Call<Result<Document>>(Method::kRead, [&] { return inner_->Read(container, pk, id); });
}

Result<Document> FaultInjectingStore::Create(std::string_view container, std::string_view pk,
                                             std::string_view id, json::value body,
                                             std::optional<int64_t> ttl_seconds) {
  return Call<Result<Document>>(
      Method::kCreate, [&] { return inner_->Create(container, pk, id, std::move(body), ttl_seconds); });
}

Result<Document> FaultInjectingStore::Replace(std::string_view container, std::string_view pk,
                                              std::string_view id, json::value body,
                                              std::optional<std::string> if_match,
                                              std::optional<int64_t> ttl_seconds) {
  return Call<Result<Document>>(Method::kReplace, [&] {
    return inner_->Replace(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  });
}

Result<Document> FaultInjectingStore::Upsert(std::string_view container, std::string_view pk,
                                             std::string_view id, json::value body,
                                             std::optional<std::string> if_match,
                                             std::optional<int64_t> ttl_seconds) {
  return Call<Result<Document>>(Method::kUpsert, [&] {
    return inner_->Upsert(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  });
}

Status FaultInjectingStore::Delete(std::string_view container, std::string_view pk, std::string_view id,
                                   std::optional<std::string> if_match) {
  return Call<Status>(Method::kDelete,
                      [&] { return inner_->Delete(container, pk, id, std::move(if_match)); });
}

Result<Document> FaultInjectingStore::Patch(std::string_view container, std::string_view pk,
                                            std::string_view id, std::vector<PatchOp> ops,
                                            std::vector<Condition> conditions,
                                            std::optional<std::string> if_match) {
  return Call<Result<Document>>(Method::kPatch, [&] {
    return inner_->Patch(container, pk, id, std::move(ops), std::move(conditions), std::move(if_match));
  });
}

Result<BatchResult> FaultInjectingStore::Batch(std::string_view container, std::string_view pk,
                                               std::vector<WriteOp> ops, const Lease* fence) {
  return Call<Result<BatchResult>>(Method::kBatch,
                                   [&] { return inner_->Batch(container, pk, std::move(ops), fence); });
}

Result<QueryPage> FaultInjectingStore::Query(const QueryOptions& options) {
  return Call<Result<QueryPage>>(Method::kQuery, [&] { return inner_->Query(options); });
}

Result<QueryPage> FaultInjectingStore::ListPartitions(std::string_view container, size_t max_items,
                                                      std::string_view continuation) {
  return Call<Result<QueryPage>>(Method::kListPartitions,
                                 [&] { return inner_->ListPartitions(container, max_items, continuation); });
}

Result<ChangePage> FaultInjectingStore::ReadChanges(std::string_view container, std::string_view continuation,
                                                    size_t max_changes) {
  return Call<Result<ChangePage>>(Method::kReadChanges,
                                  [&] { return inner_->ReadChanges(container, continuation, max_changes); });
}

Result<bool> FaultInjectingStore::WaitForChanges(std::string_view container, std::string_view continuation,
                                                 std::chrono::milliseconds timeout) {
  return Call<Result<bool>>(Method::kWaitForChanges,
                            [&] { return inner_->WaitForChanges(container, continuation, timeout); });
}

Result<Lease> FaultInjectingStore::AcquireLease(std::string_view container, std::string_view pk,
                                                std::string_view name, std::string_view owner,
                                                std::chrono::milliseconds ttl) {
  return Call<Result<Lease>>(Method::kAcquireLease,
                             [&] { return inner_->AcquireLease(container, pk, name, owner, ttl); });
}

Result<Lease> FaultInjectingStore::RenewLease(const Lease& lease, std::chrono::milliseconds ttl) {
  return Call<Result<Lease>>(Method::kRenewLease, [&] { return inner_->RenewLease(lease, ttl); });
}

Status FaultInjectingStore::ReleaseLease(const Lease& lease) {
  return Call<Status>(Method::kReleaseLease, [&] { return inner_->ReleaseLease(lease); });
}

Result<size_t> FaultInjectingStore::PurgeExpired() {
  return Call<Result<size_t>>(Method::kPurgeExpired, [&] { return inner_->PurgeExpired(); });
}

}  // namespace hcprp::store
