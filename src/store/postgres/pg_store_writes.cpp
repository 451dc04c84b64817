// Document writes of the PostgreSQL store: the operations of a batch, applied inside a transaction.
#include "store/engine_core.h"
#include "store/postgres/pg_store_internal.h"

#include <deque>

namespace hcprp::store::postgres {
namespace {

// The first row of a result with columns body, etag, ts, ttl (and expires_at), if any.
std::optional<StoredRow> FirstRow(const PgResult& r, bool with_expiry) {
  if (r.rows() == 0) return std::nullopt;
  StoredRow row;
  row.body = r.String(0, 0);
  row.etag = r.String(0, 1);
  row.ts = r.Int8(0, 2);
  row.ttl = r.OptInt8(0, 3);
  if (with_expiry) row.expires_at = r.OptInt8(0, 4);
  return row;
}

void BindVersion(Params& p, std::string_view container, std::string_view pk, std::string_view id,
                 const Version& v, const std::optional<int64_t>& expires_at) {
  p.Bytea(container).Bytea(pk).Bytea(id).Bytea(v.body).Text(v.etag).Int8(v.ts).OptInt8(v.ttl).OptInt8(
      expires_at);
  p.OptBytea(v.fields.resource_type).OptBytea(v.fields.resource_id).OptBytea(v.fields.status);
  p.Bool(v.fields.non_terminal);
}

}  // namespace

Result<std::optional<StoredRow>> Tx::LoadRow(std::string_view container, std::string_view pk,
                                             std::string_view id) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(id);
  HCPRP_ASSIGN_OR_RETURN(auto r, c.Exec(sql::kLoadDocForUpdate, p, "load " + DocName(container, pk, id)));
  return FirstRow(r, /*with_expiry=*/true);
}

Result<bool> Tx::InsertRow(std::string_view container, std::string_view pk, std::string_view id,
                           const Version& v) {
  auto expires_at = v.ExpiresAt();
  Params p;
  BindVersion(p, container, pk, id, v, expires_at);
  HCPRP_ASSIGN_OR_RETURN(auto r, c.Exec(sql::kInsertDoc, p, "insert " + DocName(container, pk, id)));
  return r.rows() == 1;
}

Result<bool> Tx::UpdateRow(std::string_view container, std::string_view pk, std::string_view id,
                           const Version& v, const std::string* required_etag) {
  auto expires_at = v.ExpiresAt();
  Params p;
  BindVersion(p, container, pk, id, v, expires_at);
  p.OptText(required_etag);
  p.Int8(now);
  HCPRP_ASSIGN_OR_RETURN(auto r, c.Exec(sql::kUpdateDoc, p, "update " + DocName(container, pk, id)));
  return r.affected() > 0;
}

Result<std::optional<StoredRow>> Tx::DeleteRow(std::string_view container, std::string_view pk,
                                               std::string_view id, const std::string* required_etag) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(id);
  p.OptText(required_etag);
  p.Int8(now);
  HCPRP_ASSIGN_OR_RETURN(auto r, c.Exec(sql::kDeleteDoc, p, "delete " + DocName(container, pk, id)));
  return FirstRow(r, /*with_expiry=*/false);
}

void RecordChange(Tx& tx, std::string_view container, int16_t kind, std::string_view pk, std::string_view id,
                  std::string body, std::string etag, int64_t ts, const std::optional<int64_t>& ttl) {
  tx.changes[std::string(container)].push_back(
      PendingChange{kind, std::string(pk), std::string(id), std::move(body), std::move(etag), ts, ttl});
}

Status Tx::DeleteAnyRow(std::string_view container, std::string_view pk, std::string_view id) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(id);
  HCPRP_RETURN_IF_ERROR(c.Exec(sql::kDeleteAnyDoc, p, "expire " + DocName(container, pk, id)));
  return Status::Ok();
}

Status Tx::AppendChange(std::string_view container, int kind, std::string_view pk, std::string_view id,
                        std::string body, std::string etag, int64_t ts, const std::optional<int64_t>& ttl) {
  RecordChange(*this, container, static_cast<int16_t>(kind), pk, id, std::move(body), std::move(etag), ts,
               ttl);
  return Status::Ok();
}

// Inserts the transaction's changes, unnumbered (readers number them once committed, see
// pg_store.h), and commits, in one round trip.
Status Commit(Tx& tx, std::string_view what) {
  if (tx.c.begin_pending()) {  // the transaction sent nothing, so it wrote nothing
    tx.c.CancelBegin();
    return Status::Ok();
  }
  std::deque<Params> params;  // each step points at its parameters
  std::vector<PipelineStep> steps;
  for (auto& [container, list] : tx.changes) {
    for (const PendingChange& c : list) {
      Params& p = params.emplace_back();
      p.Bytea(container).Int2(c.kind).Bytea(c.pk).Bytea(c.id).Bytea(c.body).Text(c.etag).Int8(c.ts).OptInt8(
          c.ttl);
      steps.push_back({&sql::kInsertChange, &p});
    }
  }
  const Params none;
  steps.push_back({&sql::kCommit, &none});
  auto done = tx.c.Pipeline(steps, std::string(what) + ": record the changes and commit");
  HCPRP_RETURN_IF_ERROR(std::move(done));
  return Status::Ok();
}

Status PgStore::InWriteTransaction(std::string_view what,
                                   const std::function<Status(internal::EngineTx&)>& body) {
  auto committed = WriteTx<bool>(what, [&](Tx& tx) -> Result<bool> {
    HCPRP_RETURN_IF_ERROR(body(tx));
    return true;
  });
  HCPRP_RETURN_IF_ERROR(std::move(committed));
  return Status::Ok();
}
}  // namespace hcprp::store::postgres
