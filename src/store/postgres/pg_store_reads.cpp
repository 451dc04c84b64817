// Document reads and queries of the PostgreSQL store.
#include <array>

#include "store/engine_core.h"
#include "store/postgres/pg_store_internal.h"

namespace hcprp::store::postgres {
namespace {

// The prepared query statement of each shape.
const Statement& QueryStatement(int shape) {
  struct Table {
    std::array<std::string, sql::kQueryShapes> names, sqls;
    std::array<Statement, sql::kQueryShapes> statements;
  };
  static const Table* table = [] {
    auto* t = new Table;
    for (int s = 0; s < sql::kQueryShapes; ++s) {
      std::string q = "SELECT pk, id, body, etag, ts, ttl FROM documents WHERE container=$1";
      if (s & sql::kQueryPartition) q += " AND pk=$2";
      if (s & sql::kQueryType) q += " AND resource_type=$3";
      if (s & sql::kQueryRid) q += " AND resource_id=$4";
      if (s & sql::kQueryPrefix) q += " AND resource_id>=$5";
      if (s & sql::kQueryPrefixUpper) q += " AND resource_id<$6";
      if (s & sql::kQueryActive) q += " AND non_terminal";
      q += " AND (expires_at IS NULL OR expires_at>$7)";
      if (s & sql::kQueryAfter) q += (s & sql::kQueryPartition) ? " AND id>$9" : " AND (pk, id)>($8, $9)";
      q += " ORDER BY pk, id LIMIT $10";
      t->names[s] = "h_query" + std::to_string(s);
      t->sqls[s] = std::move(q);
      t->statements[s] = Statement{t->names[s].c_str(), t->sqls[s].c_str()};
    }
    return t;
  }();
  return table->statements[static_cast<size_t>(shape)];
}

}  // namespace

Result<Document> PgStore::Read(std::string_view container, std::string_view pk, std::string_view id) {
  return ReadRow(container, pk, id, false);
}

Result<Document> PgStore::ReadText(std::string_view container, std::string_view pk, std::string_view id) {
  return ReadRow(container, pk, id, true);
}

Result<Document> PgStore::ReadRow(std::string_view container, std::string_view pk, std::string_view id,
                                  bool body_text) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  int64_t now = clock_->NowMillis();
  return WithConn([&](PgConnection& c) -> Result<Document> {
    Params p;
    p.Bytea(container).Bytea(pk).Bytea(id).Int8(now);
    auto r = c.Exec(sql::kReadDoc, p, "read " + DocName(container, pk, id));
    if (!r.ok()) return r.error();
    if (r->rows() == 0) return Error::NotFound(DocName(container, pk, id) + " does not exist");
    return internal::DocumentFromRow(body_text, pk, id, r->Bytes(0, 0), r->String(0, 1), r->Int8(0, 2),
                                     r->OptInt8(0, 3));
  });
}

Result<QueryPage> PgStore::Query(const QueryOptions& o) {
  HCPRP_RETURN_IF_ERROR(internal::ValidateQuery(o));
  int shape = 0;
  if (o.partition_key) shape |= sql::kQueryPartition;
  std::optional<std::string> type, rid, prefix, upper;
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
    upper = internal::PrefixUpperBound(*prefix);
    if (upper) shape |= sql::kQueryPrefixUpper;
  }
  if (o.non_terminal_only) shape |= sql::kQueryActive;
  std::optional<std::string> after_pk, after_id;
  if (!o.continuation.empty()) {
    auto decoded = internal::DecodeQueryContinuation(o.continuation);
    if (!decoded.ok()) return decoded.error();
    if (o.partition_key && decoded->first != *o.partition_key) {
      return Error::InvalidArgument("the continuation token belongs to another partition");
    }
    after_pk = std::move(decoded->first);
    after_id = std::move(decoded->second);
    shape |= sql::kQueryAfter;
  }
  int64_t now = clock_->NowMillis();
  int64_t limit = static_cast<int64_t>(std::min<size_t>(o.max_items, INT32_MAX)) + 1;
  std::optional<std::string> pk;
  if (o.partition_key) pk = *o.partition_key;
  return WithConn([&](PgConnection& c) -> Result<QueryPage> {
    Params p;
    p.Bytea(o.container).OptBytea(pk).OptBytea(type).OptBytea(rid).OptBytea(prefix).OptBytea(upper).Int8(now);
    p.OptBytea(after_pk).OptBytea(after_id).Int8(limit);
    auto r = c.Exec(QueryStatement(shape), p, "query " + Printable(o.container));
    if (!r.ok()) return r.error();
    QueryPage page;
    for (int i = 0; i < r->rows(); ++i) {
      if (page.documents.size() == o.max_items) {
        const Document& last = page.documents.back();
        page.continuation = internal::EncodeQueryContinuation(last.partition_key, last.id);
        break;
      }
      auto d = internal::QueryDocumentFromRow(o, r->Bytes(i, 0), r->Bytes(i, 1), r->Bytes(i, 2),
                                              r->String(i, 3), r->Int8(i, 4), r->OptInt8(i, 5));
      if (!d.ok()) return d.error();
      page.documents.push_back(std::move(*d));
    }
    return page;
  });
}

Result<QueryPage> PgStore::ListPartitions(std::string_view container, size_t max_items,
                                          std::string_view continuation) {
  auto start = internal::ListPartitionsStart(container, max_items, continuation);
  if (!start.ok()) return start.error();
  std::optional<std::string> after = std::move(*start);
  int64_t now = clock_->NowMillis();
  int64_t limit = static_cast<int64_t>(std::min<size_t>(max_items, INT32_MAX)) + 1;
  return WithConn([&](PgConnection& c) -> Result<QueryPage> {
    Params p;
    p.Bytea(container);
    if (after) p.Bytea(*after);
    p.Int8(now).Int8(limit);
    auto r = c.Exec(after ? sql::kListPartitionsNext : sql::kListPartitionsFirst, p,
                    "list partitions of " + Printable(container));
    if (!r.ok()) return r.error();
    QueryPage page;
    for (int i = 0; i < r->rows(); ++i) {
      if (page.documents.size() == max_items) {
        page.continuation = internal::EncodePartitionContinuation(page.documents.back().partition_key);
        break;
      }
      Document d;
      d.partition_key = r->String(i, 0);
      page.documents.push_back(std::move(d));
    }
    return page;
  });
}
}  // namespace hcprp::store::postgres
