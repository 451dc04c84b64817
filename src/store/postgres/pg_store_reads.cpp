// Document reads and queries of the PostgreSQL store.
#include <array>

#include "store/engine_core.h"
#include "store/postgres/pg_store_internal.h"

namespace hcprp::store::postgres {
namespace {

// The prepared query statement of each shape (engine_core's QuerySql with $N parameters; a
// parameter the shape does not use is sent as NULL).
const Statement& QueryStatement(int shape) {
  struct Table {
    std::array<std::string, internal::kQueryShapes> names, sqls;
    std::array<Statement, internal::kQueryShapes> statements;
  };
  static const Table* table = [] {
    auto* t = new Table;
    for (int s = 0; s < internal::kQueryShapes; ++s) {
      t->names[s] = "h_query" + std::to_string(s);
      t->sqls[s] = internal::QuerySql(s, '$', "non_terminal");
      t->statements[s] = Statement{t->names[s].c_str(), t->sqls[s].c_str()};
    }
    return t;
  }();
  return table->statements[static_cast<size_t>(shape)];
}

}  // namespace

Result<std::optional<StoredRow>> PgStore::ReadLive(std::string_view container, std::string_view pk,
                                                   std::string_view id, int64_t now) {
  return WithConn([&](PgConnection& c) -> Result<std::optional<StoredRow>> {
    Params p;
    p.Bytea(container).Bytea(pk).Bytea(id).Int8(now);
    HCPRP_ASSIGN_OR_RETURN(auto r, c.Exec(sql::kReadDoc, p, "read " + DocName(container, pk, id)));
    if (r.rows() == 0) return std::optional<StoredRow>();
    StoredRow row;
    row.body = std::string(r.Bytes(0, 0));
    row.etag = r.String(0, 1);
    row.ts = r.Int8(0, 2);
    row.ttl = r.OptInt8(0, 3);
    return std::optional<StoredRow>(std::move(row));
  });
}

Status PgStore::RunQuery(const QueryOptions& o, const internal::QueryPlan& plan,
                         internal::PageBuilder& page) {
  return WithConn([&](PgConnection& c) -> Status {
    Params p;
    p.Bytea(o.container).OptBytea(plan.partition_key).OptBytea(plan.resource_type).OptBytea(plan.resource_id);
    p.OptBytea(plan.prefix).OptBytea(plan.prefix_upper).Int8(plan.now);
    p.OptBytea(plan.after_pk).OptBytea(plan.after_id).Int8(plan.limit);
    HCPRP_ASSIGN_OR_RETURN(auto r, c.Exec(QueryStatement(plan.shape), p, "query " + Printable(o.container)));
    for (int i = 0; i < r.rows(); ++i) {
      HCPRP_ASSIGN_OR_RETURN(bool added,
                             page.AddDocument(o.body_text, r.Bytes(i, 0), r.Bytes(i, 1), r.Bytes(i, 2),
                                              r.String(i, 3), r.Int8(i, 4), r.OptInt8(i, 5)));
      if (!added) break;
    }
    return Status::Ok();
  });
}

Status PgStore::PartitionsAfter(std::string_view container, const std::optional<std::string>& after,
                                int64_t now, int64_t limit, internal::PageBuilder& page) {
  return WithConn([&](PgConnection& c) -> Status {
    Params p;
    p.Bytea(container);
    if (after) p.Bytea(*after);
    p.Int8(now).Int8(limit);
    HCPRP_ASSIGN_OR_RETURN(auto r, c.Exec(after ? sql::kListPartitionsNext : sql::kListPartitionsFirst, p,
                                          "list partitions of " + Printable(container)));
    for (int i = 0; i < r.rows(); ++i) {
      if (!page.AddPartition(r.String(i, 0))) break;
    }
    return Status::Ok();
  });
}
}  // namespace hcprp::store::postgres
