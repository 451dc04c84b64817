// Document writes of the SQLite store: the operations of a batch, applied inside a write transaction.
#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {
namespace {

Result<std::optional<StoredRow>> LoadRow(Tx& tx, std::string_view container, std::string_view pk,
                                         std::string_view id) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kLoadDoc);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<StoredRow>();
  if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "load " + DocName(container, pk, id));
  StoredRow r;
  r.body = std::string(s.Text(0));
  r.etag = std::string(s.Text(1));
  r.ts = s.Int(2);
  r.ttl = s.OptInt(3);
  r.expires_at = s.OptInt(4);
  return std::optional<StoredRow>(std::move(r));
}

void BindVersion(Stmt& s, std::string_view container, std::string_view pk, std::string_view id,
                 const Version& v, const std::optional<int64_t>& expires_at) {
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  s.BindText(4, std::string_view(v.body));
  s.BindText(5, std::string_view(v.etag));
  s.BindInt(6, v.ts);
  s.BindOptInt(7, v.ttl);
  s.BindOptInt(8, expires_at);
  s.BindOptText(9, v.fields.resource_type);
  s.BindOptText(10, v.fields.resource_id);
  s.BindOptText(11, v.fields.status);
  s.BindInt(12, v.fields.non_terminal ? 1 : 0);
}

// True when inserted, false when a row with that key exists.
Result<bool> InsertDoc(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v) {
  auto expires_at = v.ExpiresAt();
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kInsertDoc);
  BindVersion(s, container, pk, id, v, expires_at);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return true;
  if ((rc & 0xff) == SQLITE_CONSTRAINT) return false;
  return SqliteError(tx.c.db(), rc, "insert " + DocName(container, pk, id));
}

// True when the live document (with etag `required_etag`, if given) was updated.
Result<bool> UpdateDoc(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v, const std::string* required_etag) {
  auto expires_at = v.ExpiresAt();
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kUpdateDoc);
  BindVersion(s, container, pk, id, v, expires_at);
  if (required_etag != nullptr) s.BindText(13, std::string_view(*required_etag));
  s.BindInt(14, tx.now);
  int rc = s.Step();
  if (rc != SQLITE_DONE) return SqliteError(tx.c.db(), rc, "update " + DocName(container, pk, id));
  return sqlite3_changes(tx.c.db()) > 0;
}

// The deleted live row, or nullopt when there was none (with that etag).
Result<std::optional<StoredRow>> DeleteDoc(Tx& tx, std::string_view container, std::string_view pk,
                                           std::string_view id, const std::string* required_etag) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kDeleteDoc);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  if (required_etag != nullptr) s.BindText(4, std::string_view(*required_etag));
  s.BindInt(5, tx.now);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<StoredRow>();
  if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "delete " + DocName(container, pk, id));
  StoredRow r;
  r.body = std::string(s.Text(0));
  r.etag = std::string(s.Text(1));
  r.ts = s.Int(2);
  r.ttl = s.OptInt(3);
  rc = s.Step();  // finishes the statement
  if (rc != SQLITE_DONE) return SqliteError(tx.c.db(), rc, "delete " + DocName(container, pk, id));
  return std::optional<StoredRow>(std::move(r));
}

}  // namespace

Status InsertChange(Tx& tx, std::string_view container, int kind, std::string_view pk, std::string_view id,
                    std::string_view body, std::string_view etag, int64_t ts,
                    const std::optional<int64_t>& ttl) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kInsertChange);
  s.BindText(1, container);
  s.BindInt(2, kind);
  s.BindBlob(3, pk);
  s.BindBlob(4, id);
  s.BindText(5, body);
  s.BindText(6, etag);
  s.BindInt(7, ts);
  s.BindOptInt(8, ttl);
  int rc = s.Step();
  if (rc != SQLITE_DONE) return SqliteError(tx.c.db(), rc, "record change of " + DocName(container, pk, id));
  tx.feed_changed = true;
  return Status::Ok();
}

namespace {

// A create or replace is recorded without its body (sql::kVersionInDocuments): the feed reads it from
// the document while that version is current and leaves the change out once it is superseded.
Status RecordVersion(Tx& tx, std::string_view container, int kind, std::string_view pk, std::string_view id,
                     const Version& v) {
  return InsertChange(tx, container, kind, pk, id, sql::kVersionInDocuments, v.etag, v.ts, v.ttl);
}

// Removes an expired row that is in the way of a write and records its expiry.
Status ExpireRow(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                 const StoredRow& row) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kDeleteAnyDoc);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  HCPRP_RETURN_IF_ERROR(s.Run("expire " + DocName(container, pk, id)));
  return InsertChange(tx, container, sql::kKindExpire, pk, id, row.body, row.etag, row.ts, row.ttl);
}

// The live row, or kNotFound.
Result<StoredRow> LoadLive(Tx& tx, std::string_view container, std::string_view pk, std::string_view id) {
  auto row = LoadRow(tx, container, pk, id);
  if (!row.ok()) return row.error();
  if (!*row || !(*row)->Live(tx.now)) return Error::NotFound(DocName(container, pk, id) + " does not exist");
  return std::move(**row);
}

// Why a fast-path conditional write matched nothing: absent (kNotFound, or kPreconditionFailed for
// an upsert) or another etag.
Error Diagnose(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
               const std::optional<std::string>& if_match, bool absent_is_precondition) {
  auto row = LoadRow(tx, container, pk, id);
  if (!row.ok()) return row.error();
  if (!*row || !(*row)->Live(tx.now)) {
    if (absent_is_precondition) {
      return Error::PreconditionFailed("if-match " + if_match.value_or("") + ": " +
                                       DocName(container, pk, id) + " does not exist");
    }
    return Error::NotFound(DocName(container, pk, id) + " does not exist");
  }
  return Error::PreconditionFailed("if-match " + if_match.value_or("") + " does not match the etag of " +
                                   DocName(container, pk, id));
}

// The etag a fast-path statement must require (nullptr: any live document).
const std::string* RequiredEtag(const std::optional<std::string>& if_match) {
  return (if_match && *if_match != "*") ? &*if_match : nullptr;
}

// Inserts version `v` of op.id (absent or expired) and records the create.
Result<Document> CreateVersion(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op,
                               const Version& v) {
  auto inserted = InsertDoc(tx, container, pk, op.id, v);
  if (!inserted.ok()) return inserted.error();
  if (!*inserted) {
    auto row = LoadRow(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    if (*row && (*row)->Live(tx.now))
      return Error::AlreadyExists(DocName(container, pk, op.id) + " already exists");
    if (*row) HCPRP_RETURN_IF_ERROR(ExpireRow(tx, container, pk, op.id, **row));
    inserted = InsertDoc(tx, container, pk, op.id, v);
    if (!inserted.ok()) return inserted.error();
    if (!*inserted)
      return Error::Internal("insert of " + DocName(container, pk, op.id) + " conflicted twice");
  }
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindCreate, pk, op.id, v));
  return MakeDocument(pk, op.id, std::move(op.body), v);
}

Result<Document> ApplyCreate(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  return CreateVersion(tx, container, pk, op, MakeVersion(op.body, op.ttl_seconds, tx.now));
}

Result<Document> ApplyReplace(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  if (!op.conditions.empty()) {
    auto row = LoadLive(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row->etag));
    auto current = ParseStoredBody(row->body);
    if (!current.ok()) return current.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*current, op.conditions));
  }
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  auto updated = UpdateDoc(tx, container, pk, op.id, v, RequiredEtag(op.if_match));
  if (!updated.ok()) return updated.error();
  if (!*updated) return Diagnose(tx, container, pk, op.id, op.if_match, false);
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v));
  return MakeDocument(pk, op.id, std::move(op.body), v);
}

Result<Document> ApplyUpsert(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  if (op.conditions.empty() && !op.if_match) {
    auto updated = UpdateDoc(tx, container, pk, op.id, v, nullptr);
    if (!updated.ok()) return updated.error();
    if (*updated) {
      HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v));
      return MakeDocument(pk, op.id, std::move(op.body), v);
    }
    return CreateVersion(tx, container, pk, op, v);  // absent or expired
  }
  auto row = LoadRow(tx, container, pk, op.id);
  if (!row.ok()) return row.error();
  bool live = *row && (*row)->Live(tx.now);
  if (!live) {
    HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, nullptr));
    HCPRP_RETURN_IF_ERROR(internal::CheckConditions(nullptr, op.conditions));
    return CreateVersion(tx, container, pk, op, v);
  }
  HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &(*row)->etag));
  if (!op.conditions.empty()) {
    auto current = ParseStoredBody((*row)->body);
    if (!current.ok()) return current.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*current, op.conditions));
  }
  auto updated = UpdateDoc(tx, container, pk, op.id, v, nullptr);
  if (!updated.ok()) return updated.error();
  if (!*updated) return Error::Internal("upsert of " + DocName(container, pk, op.id) + " lost its row");
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v));
  return MakeDocument(pk, op.id, std::move(op.body), v);
}

Result<Document> ApplyDelete(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  const std::string* required = RequiredEtag(op.if_match);
  std::string checked_etag;
  if (!op.conditions.empty()) {
    auto row = LoadLive(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row->etag));
    auto current = ParseStoredBody(row->body);
    if (!current.ok()) return current.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*current, op.conditions));
    checked_etag = row->etag;
    required = &checked_etag;
  }
  auto deleted = DeleteDoc(tx, container, pk, op.id, required);
  if (!deleted.ok()) return deleted.error();
  if (!*deleted) return Diagnose(tx, container, pk, op.id, op.if_match, false);
  const StoredRow& old = **deleted;
  HCPRP_RETURN_IF_ERROR(
      InsertChange(tx, container, sql::kKindDelete, pk, op.id, old.body, old.etag, old.ts, old.ttl));
  Document d;
  d.id = op.id;
  d.partition_key = std::string(pk);
  return d;
}

Result<Document> ApplyPatch(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  auto row = LoadLive(tx, container, pk, op.id);
  if (!row.ok()) return row.error();
  HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row->etag));
  auto body = ParseStoredBody(row->body);
  if (!body.ok()) return body.error();
  HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*body, op.conditions));
  HCPRP_RETURN_IF_ERROR(internal::ApplyPatch(*body, op.patch));
  Version v = MakeVersion(*body, row->ttl, tx.now);
  auto updated = UpdateDoc(tx, container, pk, op.id, v, &row->etag);
  if (!updated.ok()) return updated.error();
  if (!*updated) return Error::Internal("patch of " + DocName(container, pk, op.id) + " lost its row");
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v));
  return MakeDocument(pk, op.id, std::move(*body), v);
}

Result<Document> ApplyRead(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  auto row = LoadLive(tx, container, pk, op.id);
  if (!row.ok()) return row.error();
  HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row->etag));
  auto body = ParseStoredBody(row->body);
  if (!body.ok()) return body.error();
  HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*body, op.conditions));
  Document d;
  d.id = op.id;
  d.partition_key = std::string(pk);
  d.body = std::move(*body);
  d.etag = std::move(row->etag);
  d.timestamp_ms = row->ts;
  d.ttl_seconds = row->ttl;
  return d;
}

Result<Document> ApplyWrite(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  // An operation naming another container writes there, in the same partition and transaction.
  const std::string_view where = op.container.empty() ? container : std::string_view(op.container);
  HCPRP_RETURN_IF_ERROR(ValidateOp(op));
  switch (op.kind) {
    case WriteOp::Kind::kCreate:
      return ApplyCreate(tx, where, pk, op);
    case WriteOp::Kind::kReplace:
      return ApplyReplace(tx, where, pk, op);
    case WriteOp::Kind::kUpsert:
      return ApplyUpsert(tx, where, pk, op);
    case WriteOp::Kind::kDelete:
      return ApplyDelete(tx, where, pk, op);
    case WriteOp::Kind::kPatch:
      return ApplyPatch(tx, where, pk, op);
    case WriteOp::Kind::kRead:
      return ApplyRead(tx, where, pk, op);
  }
  return Error::InvalidArgument("unknown write operation kind");
}

}  // namespace

Result<Document> SqliteStore::WriteOne(std::string_view container, std::string_view pk, WriteOp op) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  HCPRP_RETURN_IF_ERROR(ValidateOp(op));
  return WriteTx<Document>("write", [&](Tx& tx) { return ApplyWrite(tx, container, pk, op); });
}

Result<BatchResult> SqliteStore::Batch(std::string_view container, std::string_view pk,
                                       std::vector<WriteOp> ops, const Lease* fence) {
  HCPRP_RETURN_IF_ERROR(internal::ValidateBatch(container, ops));
  return WriteTx<BatchResult>("batch", [&](Tx& tx) -> Result<BatchResult> {
    if (fence != nullptr) HCPRP_RETURN_IF_ERROR(CheckFence(tx, *fence));
    BatchResult out;
    out.documents.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      auto d = ApplyWrite(tx, container, pk, ops[i]);
      if (!d.ok()) return BatchOperationError(i, d.error());
      out.documents.push_back(std::move(*d));
    }
    return out;
  });
}
}  // namespace hcprp::store::sqlite
