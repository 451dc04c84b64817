// Document writes of the PostgreSQL store: the operations of a batch, applied inside a transaction.
#include "store/postgres/pg_store_internal.h"

namespace hcprp::store::postgres {
namespace {

Result<std::optional<StoredRow>> LoadRow(Tx& tx, std::string_view container, std::string_view pk,
                                         std::string_view id) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(id);
  auto r = tx.c.Exec(sql::kLoadDocForUpdate, p, "load " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  if (r->rows() == 0) return std::optional<StoredRow>();
  StoredRow row;
  row.body = r->String(0, 0);
  row.etag = r->String(0, 1);
  row.ts = r->Int8(0, 2);
  row.ttl = r->OptInt8(0, 3);
  row.expires_at = r->OptInt8(0, 4);
  return std::optional<StoredRow>(std::move(row));
}

void BindVersion(Params& p, std::string_view container, std::string_view pk, std::string_view id,
                 const Version& v, const std::optional<int64_t>& expires_at) {
  p.Bytea(container).Bytea(pk).Bytea(id).Bytea(v.body).Text(v.etag).Int8(v.ts).OptInt8(v.ttl).OptInt8(
      expires_at);
  p.OptBytea(v.fields.resource_type).OptBytea(v.fields.resource_id).OptBytea(v.fields.status);
  p.Bool(v.fields.non_terminal);
}

// True when inserted, false when a row with that key exists.
Result<bool> InsertDoc(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v) {
  auto expires_at = v.ExpiresAt();
  Params p;
  BindVersion(p, container, pk, id, v, expires_at);
  auto r = tx.c.Exec(sql::kInsertDoc, p, "insert " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  return r->rows() == 1;
}

// True when the live document (with etag `required_etag`, if given) was updated.
Result<bool> UpdateDoc(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v, const std::string* required_etag) {
  auto expires_at = v.ExpiresAt();
  Params p;
  BindVersion(p, container, pk, id, v, expires_at);
  p.OptText(required_etag);
  p.Int8(tx.now);
  auto r = tx.c.Exec(sql::kUpdateDoc, p, "update " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  return r->affected() > 0;
}

// The deleted live row, or nullopt when there was none (with that etag).
Result<std::optional<StoredRow>> DeleteDoc(Tx& tx, std::string_view container, std::string_view pk,
                                           std::string_view id, const std::string* required_etag) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(id);
  p.OptText(required_etag);
  p.Int8(tx.now);
  auto r = tx.c.Exec(sql::kDeleteDoc, p, "delete " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  if (r->rows() == 0) return std::optional<StoredRow>();
  StoredRow row;
  row.body = r->String(0, 0);
  row.etag = r->String(0, 1);
  row.ts = r->Int8(0, 2);
  row.ttl = r->OptInt8(0, 3);
  return std::optional<StoredRow>(std::move(row));
}

}  // namespace

void RecordChange(Tx& tx, std::string_view container, int16_t kind, std::string_view pk, std::string_view id,
                  std::string body, std::string etag, int64_t ts, const std::optional<int64_t>& ttl) {
  tx.changes[std::string(container)].push_back(
      PendingChange{kind, std::string(pk), std::string(id), std::move(body), std::move(etag), ts, ttl});
}

namespace {

void RecordVersion(Tx& tx, std::string_view container, int16_t kind, std::string_view pk, std::string_view id,
                   const Version& v) {
  // Without its body: the feed reads it from the document while this version is current (see
  // sql::kReadChanges).
  RecordChange(tx, container, kind, pk, id, std::string(), v.etag, v.ts, v.ttl);
}

// Removes an expired row that is in the way of a write and records its expiry.
Status ExpireRow(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                 const StoredRow& row) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(id);
  auto r = tx.c.Exec(sql::kDeleteAnyDoc, p, "expire " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  RecordChange(tx, container, sql::kKindExpire, pk, id, row.body, row.etag, row.ts, row.ttl);
  return Status::Ok();
}

// The live row (locked), or kNotFound.
Result<StoredRow> LoadLive(Tx& tx, std::string_view container, std::string_view pk, std::string_view id) {
  auto row = LoadRow(tx, container, pk, id);
  if (!row.ok()) return row.error();
  if (!*row || !(*row)->Live(tx.now)) return Error::NotFound(DocName(container, pk, id) + " does not exist");
  return std::move(**row);
}

// Why a conditional statement matched nothing: absent (kNotFound) or another etag.
Error Diagnose(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
               const std::optional<std::string>& if_match) {
  auto row = LoadRow(tx, container, pk, id);
  if (!row.ok()) return row.error();
  if (!*row || !(*row)->Live(tx.now)) return Error::NotFound(DocName(container, pk, id) + " does not exist");
  return Error::PreconditionFailed("if-match " + if_match.value_or("") + " does not match the etag of " +
                                   DocName(container, pk, id));
}

// The etag a conditional statement must require (nullptr: any live document).
const std::string* RequiredEtag(const std::optional<std::string>& if_match) {
  return (if_match && *if_match != "*") ? &*if_match : nullptr;
}

// Inserts version `v` where no live document exists (an expired one is recorded as expired first)
// and records the create. False when a live document is in the way.
Result<bool> TryCreate(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto inserted = InsertDoc(tx, container, pk, id, v);
    if (!inserted.ok()) return inserted.error();
    if (*inserted) {
      RecordVersion(tx, container, sql::kKindCreate, pk, id, v);
      return true;
    }
    auto row = LoadRow(tx, container, pk, id);
    if (!row.ok()) return row.error();
    if (!*row) continue;  // deleted since the insert looked: insert again
    if ((*row)->Live(tx.now)) return false;
    HCPRP_RETURN_IF_ERROR(ExpireRow(tx, container, pk, id, **row));
  }
  return Error::Unavailable("create of " + DocName(container, pk, id) + " kept racing with other writers");
}

Result<Document> ApplyCreate(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  auto created = TryCreate(tx, container, pk, op.id, v);
  if (!created.ok()) return created.error();
  if (!*created) return Error::AlreadyExists(DocName(container, pk, op.id) + " already exists");
  return MakeDocument(pk, op.id, op.body, v);
}

Status CheckCurrent(const WriteOp& op, const StoredRow& row) {
  HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row.etag));
  if (op.conditions.empty()) return Status::Ok();
  auto current = ParseStoredBody(row.body);
  if (!current.ok()) return current.error();
  return internal::CheckConditions(&*current, op.conditions);
}

Result<Document> ApplyReplace(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  const std::string* required = RequiredEtag(op.if_match);
  std::string checked_etag;
  if (!op.conditions.empty()) {
    auto row = LoadLive(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    HCPRP_RETURN_IF_ERROR(CheckCurrent(op, *row));
    checked_etag = row->etag;
    required = &checked_etag;
  }
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  auto updated = UpdateDoc(tx, container, pk, op.id, v, required);
  if (!updated.ok()) return updated.error();
  if (!*updated) return Diagnose(tx, container, pk, op.id, op.if_match);
  RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v);
  return MakeDocument(pk, op.id, op.body, v);
}

Result<Document> ApplyUpsert(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  // Each round either writes or sees a live document appear or disappear under it; a few rounds
  // settle any race with concurrent creates and deletes.
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (op.conditions.empty() && !op.if_match) {
      auto updated = UpdateDoc(tx, container, pk, op.id, v, nullptr);
      if (!updated.ok()) return updated.error();
      if (*updated) {
        RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v);
        return MakeDocument(pk, op.id, op.body, v);
      }
    } else {
      auto row = LoadRow(tx, container, pk, op.id);
      if (!row.ok()) return row.error();
      if (*row && (*row)->Live(tx.now)) {
        HCPRP_RETURN_IF_ERROR(CheckCurrent(op, **row));
        auto updated = UpdateDoc(tx, container, pk, op.id, v, nullptr);
        if (!updated.ok()) return updated.error();
        if (!*updated) return Error::Internal("upsert of " + DocName(container, pk, op.id) + " lost its row");
        RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v);
        return MakeDocument(pk, op.id, op.body, v);
      }
      if (op.if_match) {
        return Error::PreconditionFailed("if-match " + *op.if_match + ": " + DocName(container, pk, op.id) +
                                         " does not exist");
      }
      HCPRP_RETURN_IF_ERROR(internal::CheckConditions(nullptr, op.conditions));
    }
    auto created = TryCreate(tx, container, pk, op.id, v);
    if (!created.ok()) return created.error();
    if (*created) return MakeDocument(pk, op.id, op.body, v);
  }
  return Error::Unavailable("upsert of " + DocName(container, pk, op.id) + " kept racing with other writers");
}

Result<Document> ApplyDelete(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  const std::string* required = RequiredEtag(op.if_match);
  std::string checked_etag;
  if (!op.conditions.empty()) {
    auto row = LoadLive(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    HCPRP_RETURN_IF_ERROR(CheckCurrent(op, *row));
    checked_etag = row->etag;
    required = &checked_etag;
  }
  auto deleted = DeleteDoc(tx, container, pk, op.id, required);
  if (!deleted.ok()) return deleted.error();
  if (!*deleted) return Diagnose(tx, container, pk, op.id, op.if_match);
  StoredRow& old = **deleted;
  RecordChange(tx, container, sql::kKindDelete, pk, op.id, std::move(old.body), std::move(old.etag), old.ts,
               old.ttl);
  Document d;
  d.id = op.id;
  d.partition_key = std::string(pk);
  return d;
}

Result<Document> ApplyPatch(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
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
  RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v);
  return MakeDocument(pk, op.id, std::move(*body), v);
}

Result<Document> ApplyRead(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
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

Result<Document> ApplyWrite(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  // An operation naming another container writes there, in the same partition and transaction.
  const std::string_view where = op.container.empty() ? container : std::string_view(op.container);
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

// Inserts the transaction's changes, unnumbered (readers number them once committed, see
// pg_store.h). Runs as the last work before COMMIT, after every document lock was taken.
Status FlushChanges(Tx& tx) {
  for (auto& [container, list] : tx.changes) {
    for (const PendingChange& c : list) {
      Params p;
      p.Bytea(container).Int2(c.kind).Bytea(c.pk).Bytea(c.id).Bytea(c.body).Text(c.etag).Int8(c.ts).OptInt8(
          c.ttl);
      auto r = tx.c.Exec(sql::kInsertChange, p, "record changes of " + Printable(container));
      if (!r.ok()) return r.error();
    }
  }
  return Status::Ok();
}

Result<Document> PgStore::WriteOne(std::string_view container, std::string_view pk, WriteOp op) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  HCPRP_RETURN_IF_ERROR(ValidateOp(op));
  return WriteTx<Document>("write", [&](Tx& tx) { return ApplyWrite(tx, container, pk, op); });
}

Result<BatchResult> PgStore::Batch(std::string_view container, std::string_view pk, std::vector<WriteOp> ops,
                                   const Lease* fence) {
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
}  // namespace hcprp::store::postgres
