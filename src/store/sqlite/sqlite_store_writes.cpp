// Document writes of the SQLite store: the operations of a batch, applied inside a write transaction.
#include "store/engine_core.h"
#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {

StoredRow CurrentRow(Stmt& s, bool with_expiry) {
  StoredRow r;
  r.body = std::string(s.Text(0));
  r.etag = std::string(s.Text(1));
  r.ts = s.Int(2);
  r.ttl = s.OptInt(3);
  if (with_expiry) r.expires_at = s.OptInt(4);
  return r;
}

Result<std::optional<StoredRow>> Tx::LoadRow(std::string_view container, std::string_view pk,
                                             std::string_view id) {
  HCPRP_ASSIGN_STMT(s, c, sql::kLoadDoc);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<StoredRow>();
  if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "load " + DocName(container, pk, id));
  return std::optional<StoredRow>(CurrentRow(s, /*with_expiry=*/true));
}

namespace {

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

}  // namespace

Result<bool> Tx::InsertRow(std::string_view container, std::string_view pk, std::string_view id,
                           const Version& v) {
  auto expires_at = v.ExpiresAt();
  HCPRP_ASSIGN_STMT(s, c, sql::kInsertDoc);
  BindVersion(s, container, pk, id, v, expires_at);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return true;
  if ((rc & 0xff) == SQLITE_CONSTRAINT) return false;
  return SqliteError(c.db(), rc, "insert " + DocName(container, pk, id));
}

Result<bool> Tx::UpdateRow(std::string_view container, std::string_view pk, std::string_view id,
                           const Version& v, const std::string* required_etag) {
  auto expires_at = v.ExpiresAt();
  // First the update that keeps the indexes (the common case), then the full one.
  for (const char* statement : {sql::kUpdateDocSameIndex, sql::kUpdateDoc}) {
    HCPRP_ASSIGN_STMT(s, c, statement);
    BindVersion(s, container, pk, id, v, expires_at);
    if (required_etag != nullptr) s.BindText(13, std::string_view(*required_etag));
    s.BindInt(14, now);
    int rc = s.Step();
    if (rc != SQLITE_DONE) return SqliteError(c.db(), rc, "update " + DocName(container, pk, id));
    if (sqlite3_changes(c.db()) > 0) return true;
  }
  return false;
}

Result<std::optional<StoredRow>> Tx::DeleteRow(std::string_view container, std::string_view pk,
                                               std::string_view id, const std::string* required_etag) {
  HCPRP_ASSIGN_STMT(s, c, sql::kDeleteDoc);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  if (required_etag != nullptr) s.BindText(4, std::string_view(*required_etag));
  s.BindInt(5, now);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<StoredRow>();
  if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "delete " + DocName(container, pk, id));
  StoredRow r = CurrentRow(s, /*with_expiry=*/false);
  rc = s.Step();  // finishes the statement
  if (rc != SQLITE_DONE) return SqliteError(c.db(), rc, "delete " + DocName(container, pk, id));
  return std::optional<StoredRow>(std::move(r));
}

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

Status Tx::DeleteAnyRow(std::string_view container, std::string_view pk, std::string_view id) {
  HCPRP_ASSIGN_STMT(s, c, sql::kDeleteAnyDoc);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  return s.Run("expire " + DocName(container, pk, id));
}

Status Tx::AppendChange(std::string_view container, int kind, std::string_view pk, std::string_view id,
                        std::string body, std::string etag, int64_t ts, const std::optional<int64_t>& ttl) {
  return InsertChange(*this, container, kind, pk, id, body, etag, ts, ttl);
}

Status SqliteStore::InWriteTransaction(std::string_view what,
                                       const std::function<Status(internal::EngineTx&)>& body) {
  auto committed = WriteTx<bool>(what, [&](Tx& tx) -> Result<bool> {
    HCPRP_RETURN_IF_ERROR(body(tx));
    return true;
  });
  HCPRP_RETURN_IF_ERROR(std::move(committed));
  return Status::Ok();
}
}  // namespace hcprp::store::sqlite
