#include "store/engine_core.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "core/time.h"

namespace hcprp::store::internal {
namespace {

// A live document may appear or disappear between two statements of an engine with concurrent
// writers; each round of a create or upsert either writes or sees that happen, and a few settle it.
constexpr int kRaceRounds = 4;

Error Absent(std::string_view container, std::string_view pk, std::string_view id) {
  return Error::NotFound(DocName(container, pk, id) + " does not exist");
}

// The live row, or kNotFound.
Result<StoredRow> LoadLive(RowTx& tx, std::string_view container, std::string_view pk, std::string_view id) {
  HCPRP_ASSIGN_OR_RETURN(auto row, tx.LoadRow(container, pk, id));
  if (!row || !row->Live(tx.Now())) return Absent(container, pk, id);
  return std::move(*row);
}

// Why a conditional update or delete matched nothing: absent (kNotFound) or another etag.
Error Diagnose(RowTx& tx, std::string_view container, std::string_view pk, std::string_view id,
               const std::optional<std::string>& if_match) {
  HCPRP_ASSIGN_OR_RETURN(auto row, tx.LoadRow(container, pk, id));
  if (!row || !row->Live(tx.Now())) return Absent(container, pk, id);
  return Error::PreconditionFailed("if-match " + if_match.value_or("") + " does not match the etag of " +
                                   DocName(container, pk, id));
}

// The etag a conditional statement must require (nullptr: any live document).
const std::string* RequiredEtag(const std::optional<std::string>& if_match) {
  return (if_match && *if_match != "*") ? &*if_match : nullptr;
}

// The operation's if-match and conditions against the live row `row`.
Status CheckCurrent(const WriteOp& op, const StoredRow& row) {
  HCPRP_RETURN_IF_ERROR(CheckIfMatch(op.if_match, &row.etag));
  if (op.conditions.empty()) return Status::Ok();
  HCPRP_ASSIGN_OR_RETURN(auto current, ParseStoredBody(row.body));
  return CheckConditions(&current, op.conditions);
}

// The etag a conditional replace or delete must require (nullptr: any live document). With
// conditions, the live row is read and checked first and its etag (kept in `checked_etag`) required,
// so that the write applies only to the version the conditions held on.
Result<const std::string*> RequiredFor(RowTx& tx, std::string_view container, std::string_view pk,
                                       const WriteOp& op, std::string& checked_etag) {
  if (op.conditions.empty()) return RequiredEtag(op.if_match);
  HCPRP_ASSIGN_OR_RETURN(auto row, LoadLive(tx, container, pk, op.id));
  HCPRP_RETURN_IF_ERROR(CheckCurrent(op, row));
  checked_etag = std::move(row.etag);
  return &checked_etag;
}

// A create or replace is recorded without its body: the feed reads it from the document while that
// version is current and leaves the change out once it is superseded.
Status RecordVersion(RowTx& tx, std::string_view container, int kind, std::string_view pk,
                     std::string_view id, const Version& v) {
  return tx.AppendChange(container, kind, pk, id, std::string(), v.etag, v.ts, v.ttl);
}

// Inserts version `v` where no live document exists (an expired one is removed and recorded as
// expired first) and records the create. False when a live document is in the way.
Result<bool> TryCreate(RowTx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v) {
  for (int round = 0; round < kRaceRounds; ++round) {
    HCPRP_ASSIGN_OR_RETURN(auto inserted, tx.InsertRow(container, pk, id, v));
    if (inserted) {
      HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, kKindCreate, pk, id, v));
      return true;
    }
    HCPRP_ASSIGN_OR_RETURN(auto row, tx.LoadRow(container, pk, id));
    if (!row) continue;  // deleted since the insert looked: insert again
    if (row->Live(tx.Now())) return false;
    HCPRP_RETURN_IF_ERROR(tx.DeleteAnyRow(container, pk, id));
    StoredRow& old = *row;
    HCPRP_RETURN_IF_ERROR(tx.AppendChange(container, kKindExpire, pk, id, std::move(old.body),
                                          std::move(old.etag), old.ts, old.ttl));
  }
  return Error::Unavailable("create of " + DocName(container, pk, id) + " kept racing with other writers");
}

// The Document a write returns, with the operation's body moved or copied (see ApplyWrite).
Document Written(std::string_view pk, WriteOp& op, bool consume, const Version& v) {
  return MakeDocument(pk, op.id, consume ? std::move(op.body) : op.body, v);
}

// The version an operation with a body writes: its prepared parts (moved out when the engine never
// reruns, copied otherwise; made here when the caller prepared none) stamped with the transaction's
// time.
Version StampVersion(RowTx& tx, const WriteOp& op, std::optional<Version>& prepared, bool consume,
                     const DocumentIndexer& indexer) {
  Version v = !prepared ? MakeVersion(op.body, op.ttl_seconds, 0, indexer)
              : consume ? std::move(*prepared)
                        : *prepared;
  v.ts = tx.Now();
  return v;
}

Result<Document> ApplyCreate(RowTx& tx, std::string_view container, std::string_view pk, WriteOp& op,
                             std::optional<Version>& prepared, bool consume, const DocumentIndexer& indexer) {
  Version v = StampVersion(tx, op, prepared, consume, indexer);
  HCPRP_ASSIGN_OR_RETURN(auto created, TryCreate(tx, container, pk, op.id, v));
  if (!created) return Error::AlreadyExists(DocName(container, pk, op.id) + " already exists");
  return Written(pk, op, consume, v);
}

Result<Document> ApplyReplace(RowTx& tx, std::string_view container, std::string_view pk, WriteOp& op,
                              std::optional<Version>& prepared, bool consume,
                              const DocumentIndexer& indexer) {
  std::string checked_etag;
  HCPRP_ASSIGN_OR_RETURN(auto required, RequiredFor(tx, container, pk, op, checked_etag));
  Version v = StampVersion(tx, op, prepared, consume, indexer);
  HCPRP_ASSIGN_OR_RETURN(auto updated, tx.UpdateRow(container, pk, op.id, v, required));
  if (!updated) return Diagnose(tx, container, pk, op.id, op.if_match);
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, kKindReplace, pk, op.id, v));
  return Written(pk, op, consume, v);
}

Result<Document> ApplyUpsert(RowTx& tx, std::string_view container, std::string_view pk, WriteOp& op,
                             std::optional<Version>& prepared, bool consume, const DocumentIndexer& indexer) {
  Version v = StampVersion(tx, op, prepared, consume, indexer);
  for (int round = 0; round < kRaceRounds; ++round) {
    if (op.conditions.empty() && !op.if_match) {
      HCPRP_ASSIGN_OR_RETURN(auto updated, tx.UpdateRow(container, pk, op.id, v, nullptr));
      if (updated) {
        HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, kKindReplace, pk, op.id, v));
        return Written(pk, op, consume, v);
      }
    } else {
      HCPRP_ASSIGN_OR_RETURN(auto row, tx.LoadRow(container, pk, op.id));
      if (row && row->Live(tx.Now())) {
        HCPRP_RETURN_IF_ERROR(CheckCurrent(op, *row));
        HCPRP_ASSIGN_OR_RETURN(auto updated, tx.UpdateRow(container, pk, op.id, v, nullptr));
        if (!updated) return Error::Internal("upsert of " + DocName(container, pk, op.id) + " lost its row");
        HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, kKindReplace, pk, op.id, v));
        return Written(pk, op, consume, v);
      }
      if (op.if_match) {
        return Error::PreconditionFailed("if-match " + *op.if_match + ": " + DocName(container, pk, op.id) +
                                         " does not exist");
      }
      HCPRP_RETURN_IF_ERROR(CheckConditions(nullptr, op.conditions));
    }
    HCPRP_ASSIGN_OR_RETURN(auto created, TryCreate(tx, container, pk, op.id, v));
    if (created) return Written(pk, op, consume, v);
  }
  return Error::Unavailable("upsert of " + DocName(container, pk, op.id) + " kept racing with other writers");
}

Result<Document> ApplyDelete(RowTx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  std::string checked_etag;
  HCPRP_ASSIGN_OR_RETURN(auto required, RequiredFor(tx, container, pk, op, checked_etag));
  HCPRP_ASSIGN_OR_RETURN(auto deleted, tx.DeleteRow(container, pk, op.id, required));
  if (!deleted) return Diagnose(tx, container, pk, op.id, op.if_match);
  StoredRow& old = *deleted;
  HCPRP_RETURN_IF_ERROR(tx.AppendChange(container, kKindDelete, pk, op.id, std::move(old.body),
                                        std::move(old.etag), old.ts, old.ttl));
  Document d;
  d.id = op.id;
  d.partition_key = std::string(pk);
  return d;
}

Result<Document> ApplyPatch(RowTx& tx, std::string_view container, std::string_view pk, const WriteOp& op,
                            const DocumentIndexer& indexer) {
  HCPRP_ASSIGN_OR_RETURN(auto row, LoadLive(tx, container, pk, op.id));
  HCPRP_RETURN_IF_ERROR(CheckIfMatch(op.if_match, &row.etag));
  HCPRP_ASSIGN_OR_RETURN(auto body, ParseStoredBody(row.body));
  HCPRP_RETURN_IF_ERROR(CheckConditions(&body, op.conditions));
  HCPRP_RETURN_IF_ERROR(internal::ApplyPatch(body, op.patch));
  Version v = MakeVersion(body, row.ttl, tx.Now(), indexer);
  HCPRP_ASSIGN_OR_RETURN(auto updated, tx.UpdateRow(container, pk, op.id, v, &row.etag));
  if (!updated) return Error::Internal("patch of " + DocName(container, pk, op.id) + " lost its row");
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, kKindReplace, pk, op.id, v));
  return MakeDocument(pk, op.id, std::move(body), v);
}

Result<Document> ApplyRead(RowTx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  HCPRP_ASSIGN_OR_RETURN(auto row, LoadLive(tx, container, pk, op.id));
  HCPRP_RETURN_IF_ERROR(CheckIfMatch(op.if_match, &row.etag));
  HCPRP_ASSIGN_OR_RETURN(auto d, DocumentFromRow(pk, op.id, row.body, std::move(row.etag), row.ts, row.ttl));
  HCPRP_RETURN_IF_ERROR(CheckConditions(&d.body, op.conditions));
  return d;
}

}  // namespace

std::optional<Version> PrepareVersion(const WriteOp& op, const DocumentIndexer& indexer) {
  switch (op.kind) {
    case WriteOp::Kind::kCreate:
    case WriteOp::Kind::kReplace:
    case WriteOp::Kind::kUpsert:
      return MakeVersion(op.body, op.ttl_seconds, /*now=*/0, indexer);
    case WriteOp::Kind::kDelete:
    case WriteOp::Kind::kPatch:
    case WriteOp::Kind::kRead:
      break;
  }
  return std::nullopt;
}

Result<Document> ApplyWrite(RowTx& tx, std::string_view container, std::string_view pk, WriteOp& op,
                            std::optional<Version>& prepared, bool consume, const DocumentIndexer& indexer) {
  // An operation naming another container writes there, in the same partition and transaction.
  const std::string_view where = op.container.empty() ? container : std::string_view(op.container);
  switch (op.kind) {
    case WriteOp::Kind::kCreate:
      return ApplyCreate(tx, where, pk, op, prepared, consume, indexer);
    case WriteOp::Kind::kReplace:
      return ApplyReplace(tx, where, pk, op, prepared, consume, indexer);
    case WriteOp::Kind::kUpsert:
      return ApplyUpsert(tx, where, pk, op, prepared, consume, indexer);
    case WriteOp::Kind::kDelete:
      return ApplyDelete(tx, where, pk, op);
    case WriteOp::Kind::kPatch:
      return ApplyPatch(tx, where, pk, op, indexer);
    case WriteOp::Kind::kRead:
      return ApplyRead(tx, where, pk, op);
  }
  return Error::InvalidArgument("unknown write operation kind");
}

namespace {

// A row's document without its body.
Document RowDocument(std::string_view pk, std::string_view id, std::string etag, int64_t ts,
                     std::optional<int64_t> ttl) {
  Document d;
  d.id = std::string(id);
  d.partition_key = std::string(pk);
  d.etag = std::move(etag);
  d.timestamp_ms = ts;
  d.ttl_seconds = ttl;
  return d;
}

}  // namespace

Result<Document> DocumentFromRow(std::string_view pk, std::string_view id, std::string_view body,
                                 std::string etag, int64_t ts, std::optional<int64_t> ttl) {
  HCPRP_ASSIGN_OR_RETURN(auto parsed, ParseStoredBody(body));
  Document d = RowDocument(pk, id, std::move(etag), ts, ttl);
  d.body = std::move(parsed);
  return d;
}

Result<Document> DocumentFromRow(bool body_text, std::string_view pk, std::string_view id,
                                 std::string_view body, std::string etag, int64_t ts,
                                 std::optional<int64_t> ttl) {
  if (!body_text) return DocumentFromRow(pk, id, body, std::move(etag), ts, ttl);
  Document d = RowDocument(pk, id, std::move(etag), ts, ttl);
  d.body_text = std::string(body);
  return d;
}

Result<Document> DocumentFromRow(bool body_text, std::string_view pk, std::string_view id, StoredRow row) {
  if (!body_text) return DocumentFromRow(pk, id, row.body, std::move(row.etag), row.ts, row.ttl);
  Document d = RowDocument(pk, id, std::move(row.etag), row.ts, row.ttl);
  d.body_text = std::move(row.body);
  return d;
}

std::string QuerySql(int shape, char mark, std::string_view active) {
  auto param = [mark](int n) { return std::string(1, mark) + std::to_string(n); };
  std::string q = "SELECT pk, id, body, etag, ts, ttl FROM documents WHERE container=" + param(1);
  if (shape & kQueryPartition) q += " AND pk=" + param(2);
  if (shape & kQueryType) q += " AND resource_type=" + param(3);
  if (shape & kQueryRid) q += " AND resource_id=" + param(4);
  if (shape & kQueryPrefix) q += " AND resource_id>=" + param(5);
  if (shape & kQueryPrefixUpper) q += " AND resource_id<" + param(6);
  if (shape & kQueryActive) q += " AND " + std::string(active);
  q += " AND (expires_at IS NULL OR expires_at>" + param(7) + ")";
  if (shape & kQueryAfter) {
    q += (shape & kQueryPartition) ? " AND id>" + param(9)
                                   : " AND (pk, id)>(" + param(8) + ", " + param(9) + ")";
  }
  q += " ORDER BY pk, id LIMIT " + param(10);
  return q;
}

Result<QueryPlan> PlanQuery(const QueryOptions& o, int64_t now) {
  QueryPlan plan;
  if (o.partition_key) {
    plan.shape |= kQueryPartition;
    plan.partition_key = *o.partition_key;
  }
  if (o.resource_type) {
    plan.shape |= kQueryType;
    plan.resource_type = ToLower(*o.resource_type);
  }
  if (o.resource_id) {
    plan.shape |= kQueryRid;
    plan.resource_id = ToLower(*o.resource_id);
  }
  if (o.resource_id_prefix) {
    plan.shape |= kQueryPrefix;
    plan.prefix = ToLower(*o.resource_id_prefix);
    plan.prefix_upper = PrefixUpperBound(*plan.prefix);
    if (plan.prefix_upper) plan.shape |= kQueryPrefixUpper;
  }
  if (o.non_terminal_only) plan.shape |= kQueryActive;
  if (!o.continuation.empty()) {
    HCPRP_ASSIGN_OR_RETURN(auto after, DecodeQueryContinuation(o.continuation));
    if (o.partition_key && after.first != *o.partition_key) {
      return Error::InvalidArgument("the continuation token belongs to another partition");
    }
    plan.after_pk = std::move(after.first);
    plan.after_id = std::move(after.second);
    plan.shape |= kQueryAfter;
  }
  plan.now = now;
  plan.limit = static_cast<int64_t>(std::min<size_t>(o.max_items, INT32_MAX)) + 1;
  return plan;
}

Result<bool> PageBuilder::AddDocument(bool body_text, std::string_view pk, std::string_view id,
                                      std::string_view body, std::string etag, int64_t ts,
                                      std::optional<int64_t> ttl) {
  if (page_.documents.size() == max_items_) {
    const Document& last = page_.documents.back();
    page_.continuation = EncodeQueryContinuation(last.partition_key, last.id);
    return false;
  }
  HCPRP_ASSIGN_OR_RETURN(auto d, DocumentFromRow(body_text, pk, id, body, std::move(etag), ts, ttl));
  page_.documents.push_back(std::move(d));
  return true;
}

bool PageBuilder::AddPartition(std::string pk) {
  if (page_.documents.size() == max_items_) {
    page_.continuation = EncodePartitionContinuation(page_.documents.back().partition_key);
    return false;
  }
  Document d;
  d.partition_key = std::move(pk);
  page_.documents.push_back(std::move(d));
  return true;
}

Result<Change> ChangeFromRow(uint64_t sequence, int64_t kind, std::string pk, std::string id,
                             std::string_view body, std::string etag, int64_t ts,
                             std::optional<int64_t> ttl) {
  HCPRP_ASSIGN_OR_RETURN(auto parsed, ParseStoredBody(body));
  Change ch;
  ch.sequence = sequence;
  ch.kind = ChangeKindFromInt(kind);
  ch.document.partition_key = std::move(pk);
  ch.document.id = std::move(id);
  ch.document.body = std::move(parsed);
  ch.document.etag = std::move(etag);
  ch.document.timestamp_ms = ts;
  ch.document.ttl_seconds = ttl;
  return ch;
}

Result<std::optional<std::string>> ListPartitionsStart(std::string_view container, size_t max_items,
                                                       std::string_view continuation) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  if (max_items == 0) return Error::InvalidArgument("max_items must be > 0");
  if (continuation.empty()) return std::optional<std::string>();
  HCPRP_ASSIGN_OR_RETURN(auto pk, DecodePartitionContinuation(continuation));
  return std::optional<std::string>(std::move(pk));
}

bool LeaseHeldAt(const std::optional<LeaseState>& state, int64_t now) {
  return state && state->owner && state->expires_at > now;
}

Status CheckFenceState(const Lease& fence, const std::optional<LeaseState>& state, int64_t now) {
  std::string what = LeaseName(fence.container, fence.partition_key, fence.name);
  if (!state || !state->owner) return Error::PreconditionFailed("fence: " + what + " is not held");
  if (*state->owner != fence.owner || state->fencing_token != fence.fencing_token) {
    return Error::PreconditionFailed("fence: " + what + " fencing token " +
                                     std::to_string(fence.fencing_token) + " is stale (now " +
                                     std::to_string(state->fencing_token) + ")");
  }
  if (state->expires_at <= now) return Error::PreconditionFailed("fence: " + what + " has expired");
  return Status::Ok();
}

Status ValidateLeaseArgs(std::string_view container, std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  if (ttl.count() <= 0) return Error::InvalidArgument("a lease ttl must be > 0");
  return Status::Ok();
}

Lease NewLease(std::string_view container, std::string_view pk, std::string_view name, std::string_view owner,
               int64_t now, std::chrono::milliseconds ttl) {
  Lease l;
  l.container = std::string(container);
  l.partition_key = std::string(pk);
  l.name = std::string(name);
  l.owner = std::string(owner);
  l.etag = NewEtag();
  l.expires_at = FromUnixMillis(now + ToMillis(ttl));
  return l;
}

Error LeaseHeld(std::string_view container, std::string_view pk, std::string_view name,
                std::string_view holder) {
  return Error::Conflict(LeaseName(container, pk, name) + " is held by \"" + std::string(holder) + "\"");
}

Error LeaseLost(const Lease& lease, bool renewing) {
  return Error::PreconditionFailed(LeaseName(lease.container, lease.partition_key, lease.name) +
                                   (renewing
                                        ? " was lost (expired, taken over, released or renewed elsewhere)"
                                        : " was lost (taken over, released or renewed elsewhere)"));
}

}  // namespace hcprp::store::internal
