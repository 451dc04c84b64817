// Document reads and queries of the SQLite store, on the reader connections.
#include "store/engine_core.h"
#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {
Result<Document> SqliteStore::Read(std::string_view container, std::string_view pk, std::string_view id) {
  return ReadRow(container, pk, id, false);
}

Result<Document> SqliteStore::ReadText(std::string_view container, std::string_view pk, std::string_view id) {
  return ReadRow(container, pk, id, true);
}

Result<Document> SqliteStore::ReadRow(std::string_view container, std::string_view pk, std::string_view id,
                                      bool body_text) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  int64_t now = clock_->NowMillis();
  return WithReader([&](Connection& c) -> Result<Document> {
    HCPRP_ASSIGN_STMT(s, c, sql::kReadDoc);
    s.BindText(1, container);
    s.BindBlob(2, pk);
    s.BindBlob(3, id);
    s.BindInt(4, now);
    int rc = s.Step();
    if (rc == SQLITE_DONE) return Error::NotFound(DocName(container, pk, id) + " does not exist");
    if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "read " + DocName(container, pk, id));
    return internal::DocumentFromRow(body_text, pk, id, s.Text(0), std::string(s.Text(1)), s.Int(2),
                                     s.OptInt(3));
  });
}

Result<QueryPage> SqliteStore::Query(const QueryOptions& o) {
  HCPRP_RETURN_IF_ERROR(internal::ValidateQuery(o));
  int shape = 0;
  if (o.partition_key) shape |= sql::kQueryPartition;
  std::string type, rid, prefix;
  std::optional<std::string> upper;
  if (o.resource_type) {
    shape |= sql::kQueryType;
    type = ToLower(*o.resource_type);
  }
  if (o.resource_id) {
    shape |= sql::kQueryRid;
    rid = ToLower(*o.resource_id);
  }
  if (o.resource_id_prefix) {
    shape |= sql::kQueryPrefix;
    prefix = ToLower(*o.resource_id_prefix);
    upper = internal::PrefixUpperBound(prefix);
    if (upper) shape |= sql::kQueryPrefixUpper;
  }
  if (o.non_terminal_only) shape |= sql::kQueryActive;
  std::pair<std::string, std::string> after;
  if (!o.continuation.empty()) {
    auto decoded = internal::DecodeQueryContinuation(o.continuation);
    if (!decoded.ok()) return decoded.error();
    after = std::move(*decoded);
    if (o.partition_key && after.first != *o.partition_key) {
      return Error::InvalidArgument("the continuation token belongs to another partition");
    }
    shape |= sql::kQueryAfter;
  }
  int64_t now = clock_->NowMillis();
  int64_t limit = static_cast<int64_t>(std::min<size_t>(o.max_items, INT32_MAX)) + 1;
  return WithReader([&](Connection& c) -> Result<QueryPage> {
    auto prepared = c.PrepareKeyed(shape, [&] { return sql::QuerySql(shape); });
    if (!prepared.ok()) return prepared.error();
    Stmt s(c.db(), *prepared);
    s.BindText(1, o.container);
    if (o.partition_key) s.BindBlob(2, *o.partition_key);
    if (shape & sql::kQueryType) s.BindText(3, std::string_view(type));
    if (shape & sql::kQueryRid) s.BindText(4, std::string_view(rid));
    if (shape & sql::kQueryPrefix) s.BindText(5, std::string_view(prefix));
    if (shape & sql::kQueryPrefixUpper) s.BindText(6, std::string_view(*upper));
    s.BindInt(7, now);
    if (shape & sql::kQueryAfter) {
      s.BindBlob(8, after.first);
      s.BindBlob(9, after.second);
    }
    s.BindInt(10, limit);
    QueryPage page;
    while (true) {
      int rc = s.Step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "query " + o.container);
      if (page.documents.size() == o.max_items) {
        const Document& last = page.documents.back();
        page.continuation = internal::EncodeQueryContinuation(last.partition_key, last.id);
        break;
      }
      auto d = internal::QueryDocumentFromRow(o, s.Blob(0), s.Blob(1), s.Text(2), std::string(s.Text(3)),
                                              s.Int(4), s.OptInt(5));
      if (!d.ok()) return d.error();
      page.documents.push_back(std::move(*d));
    }
    return page;
  });
}

Result<QueryPage> SqliteStore::ListPartitions(std::string_view container, size_t max_items,
                                              std::string_view continuation) {
  auto start = internal::ListPartitionsStart(container, max_items, continuation);
  if (!start.ok()) return start.error();
  std::optional<std::string> after = std::move(*start);
  int64_t now = clock_->NowMillis();
  return WithReader([&](Connection& c) -> Result<QueryPage> {
    std::string what = "list partitions of " + std::string(container);
    HCPRP_ASSIGN_STMT(begin, c, sql::kBeginRead);
    HCPRP_RETURN_IF_ERROR(begin.Run(what));
    auto page = [&]() -> Result<QueryPage> {
      QueryPage out;
      std::optional<std::string> cursor = after;
      while (true) {
        std::string pk;
        {
          HCPRP_ASSIGN_STMT(next, c, cursor ? sql::kNextPartition : sql::kFirstPartition);
          next.BindText(1, container);
          if (cursor) next.BindBlob(2, *cursor);
          int rc = next.Step();
          if (rc == SQLITE_DONE) return out;
          if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, what);
          pk = std::string(next.Blob(0));
        }
        HCPRP_ASSIGN_STMT(live, c, sql::kPartitionLive);
        live.BindText(1, container);
        live.BindBlob(2, pk);
        live.BindInt(3, now);
        int rc = live.Step();
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteError(c.db(), rc, what);
        if (rc == SQLITE_ROW) {
          if (out.documents.size() == max_items) {
            out.continuation = internal::EncodePartitionContinuation(out.documents.back().partition_key);
            return out;
          }
          Document d;
          d.partition_key = pk;
          out.documents.push_back(std::move(d));
        }
        cursor = std::move(pk);
      }
    }();
    HCPRP_ASSIGN_STMT(end, c, sql::kEndRead);
    Status ended = end.Run(what);
    if (!page.ok()) return page;
    if (!ended.ok()) return ended.error();
    return page;
  });
}
}  // namespace hcprp::store::sqlite
