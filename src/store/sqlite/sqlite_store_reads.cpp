// Document reads and queries of the SQLite store, on the reader connections.
#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {
Result<std::optional<StoredRow>> SqliteStore::ReadLive(std::string_view container, std::string_view pk,
                                                       std::string_view id, int64_t now) {
  return WithReader([&](Connection& c) -> Result<std::optional<StoredRow>> {
    HCPRP_ASSIGN_STMT(s, c, sql::kReadDoc);
    s.BindText(1, container);
    s.BindBlob(2, pk);
    s.BindBlob(3, id);
    s.BindInt(4, now);
    int rc = s.Step();
    if (rc == SQLITE_DONE) return std::optional<StoredRow>();
    if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "read " + DocName(container, pk, id));
    return std::optional<StoredRow>(CurrentRow(s, /*with_expiry=*/false));
  });
}

Status SqliteStore::RunQuery(const QueryOptions& o, const internal::QueryPlan& plan,
                             internal::PageBuilder& page) {
  return WithReader([&](Connection& c) -> Status {
    HCPRP_ASSIGN_OR_RETURN(auto prepared,
                           c.PrepareKeyed(plan.shape, [&] { return sql::QuerySql(plan.shape); }));
    Stmt s(c.db(), prepared);
    s.BindText(1, o.container);
    if (plan.partition_key) s.BindBlob(2, *plan.partition_key);
    if (plan.resource_type) s.BindText(3, std::string_view(*plan.resource_type));
    if (plan.resource_id) s.BindText(4, std::string_view(*plan.resource_id));
    if (plan.prefix) s.BindText(5, std::string_view(*plan.prefix));
    if (plan.prefix_upper) s.BindText(6, std::string_view(*plan.prefix_upper));
    s.BindInt(7, plan.now);
    if (plan.after_pk) s.BindBlob(8, *plan.after_pk);
    if (plan.after_id) s.BindBlob(9, *plan.after_id);
    s.BindInt(10, plan.limit);
    while (true) {
      int rc = s.Step();
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "query " + o.container);
      HCPRP_ASSIGN_OR_RETURN(bool added, page.AddDocument(o.body_text, s.Blob(0), s.Blob(1), s.Text(2),
                                                          std::string(s.Text(3)), s.Int(4), s.OptInt(5)));
      if (!added) return Status::Ok();
    }
  });
}

// A skip-scan over documents_key inside one read transaction: the next partition key, then whether
// it holds a live document (`limit` is not needed: the scan stops when the page is full).
Status SqliteStore::PartitionsAfter(std::string_view container, const std::optional<std::string>& after,
                                    int64_t now, int64_t /*limit*/, internal::PageBuilder& page) {
  return WithReader([&](Connection& c) -> Status {
    std::string what = "list partitions of " + std::string(container);
    HCPRP_ASSIGN_STMT(begin, c, sql::kBeginRead);
    HCPRP_RETURN_IF_ERROR(begin.Run(what));
    Status scanned = [&]() -> Status {
      std::optional<std::string> cursor = after;
      while (true) {
        std::string pk;
        {
          HCPRP_ASSIGN_STMT(next, c, cursor ? sql::kNextPartition : sql::kFirstPartition);
          next.BindText(1, container);
          if (cursor) next.BindBlob(2, *cursor);
          int rc = next.Step();
          if (rc == SQLITE_DONE) return Status::Ok();
          if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, what);
          pk = std::string(next.Blob(0));
        }
        HCPRP_ASSIGN_STMT(live, c, sql::kPartitionLive);
        live.BindText(1, container);
        live.BindBlob(2, pk);
        live.BindInt(3, now);
        int rc = live.Step();
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteError(c.db(), rc, what);
        if (rc == SQLITE_ROW && !page.AddPartition(pk)) return Status::Ok();
        cursor = std::move(pk);
      }
    }();
    HCPRP_ASSIGN_STMT(end, c, sql::kEndRead);
    Status ended = end.Run(what);
    HCPRP_RETURN_IF_ERROR(std::move(scanned));
    return ended;
  });
}
}  // namespace hcprp::store::sqlite
