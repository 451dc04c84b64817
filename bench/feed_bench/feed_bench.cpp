// feed_bench: bytes on disk per operation of the SQLite store's change feed, compact (the engine as
// built: a create or replace is recorded without its body, which the feed reads from the document
// while that version is current) beside a full copy of every version (what the engine stored before:
// the same rows, each change with its body), for the same writes in the same run.
//
//   feed_bench [--operations N] [--resource-bytes N] [--dir DIR] [--keep]
//
// The workload is what one cluster's PATCHes cost the store: per operation the frontend's batch
// (patch the resource: spec, activeOperationId, provisioningState; create the operation document
// with a ttl) and the backend's terminal batch (patch the operation to Succeeded; patch the
// resource's provisioningState and remove activeOperationId). The "full copy" side writes the
// documents and changes of exactly those versions (the bodies the store returned) into a second
// database with the same schema, one change row with its body per version, as the previous engine
// did. Both files are checkpointed; sizes come from SQLite's dbstat table (pages of each table and
// index) and from the file size.
#include <sqlite3.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "store/sqlite/sql.h"
#include "store/store.h"

namespace {

using namespace hcprp;
using namespace hcprp::store;
namespace fs = std::filesystem;
namespace sql = hcprp::store::sqlite::sql;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "feed_bench: %s\n", what.c_str());
  std::exit(1);
}

struct Options {
  int operations = 4700;
  size_t resource_bytes = 4000;
  std::string dir;
  bool keep = false;
};

// The previous engine's rows, written with plain SQL into a database of the same schema.
class FullCopyFeed {
 public:
  explicit FullCopyFeed(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) Die("open " + path);
    Exec("PRAGMA journal_mode=WAL");
    Exec("PRAGMA synchronous=NORMAL");  // sizes only: syncing does not change them
    Exec(sql::kSchema);
  }
  ~FullCopyFeed() { sqlite3_close_v2(db_); }
  sqlite3* db() { return db_; }

  void Exec(const char* text) {
    char* err = nullptr;
    if (sqlite3_exec(db_, text, nullptr, nullptr, &err) != SQLITE_OK) Die(std::string("sql: ") + err);
  }

  // One committed write as the previous engine recorded it: the document row and a change row with
  // the whole body (kind: sql::kKindCreate or kKindReplace).
  void Write(std::string_view container, const Document& d, int kind) {
    const std::string body = json::serialize(d.body);
    sqlite3_stmt* s = nullptr;
    const char* upsert =
        "INSERT INTO documents(container, pk, id, body, etag, ts, ttl, expires_at) VALUES(?1, ?2, ?3, ?4, "
        "?5, ?6, "
        "?7, ?8) ON CONFLICT(container, pk, id) DO UPDATE SET body=excluded.body, etag=excluded.etag, "
        "ts=excluded.ts, ttl=excluded.ttl, expires_at=excluded.expires_at";
    sqlite3_prepare_v2(db_, upsert, -1, &s, nullptr);
    Bind(s, container, d, body);
    if (d.ttl_seconds) sqlite3_bind_int64(s, 8, d.timestamp_ms + *d.ttl_seconds * 1000);
    if (sqlite3_step(s) != SQLITE_DONE) Die(std::string("upsert: ") + sqlite3_errmsg(db_));
    sqlite3_finalize(s);
    sqlite3_prepare_v2(db_, sql::kInsertChange, -1, &s, nullptr);
    sqlite3_bind_text(s, 1, container.data(), static_cast<int>(container.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 2, kind);
    sqlite3_bind_blob(s, 3, d.partition_key.data(), static_cast<int>(d.partition_key.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_blob(s, 4, d.id.data(), static_cast<int>(d.id.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 5, body.data(), static_cast<int>(body.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 6, d.etag.data(), static_cast<int>(d.etag.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 7, d.timestamp_ms);
    if (d.ttl_seconds) sqlite3_bind_int64(s, 8, *d.ttl_seconds);
    if (sqlite3_step(s) != SQLITE_DONE) Die(std::string("change: ") + sqlite3_errmsg(db_));
    sqlite3_finalize(s);
  }

 private:
  static void Bind(sqlite3_stmt* s, std::string_view container, const Document& d, const std::string& body) {
    sqlite3_bind_text(s, 1, container.data(), static_cast<int>(container.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(s, 2, d.partition_key.data(), static_cast<int>(d.partition_key.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_blob(s, 3, d.id.data(), static_cast<int>(d.id.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, body.data(), static_cast<int>(body.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 5, d.etag.data(), static_cast<int>(d.etag.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 6, d.timestamp_ms);
    if (d.ttl_seconds) sqlite3_bind_int64(s, 7, *d.ttl_seconds);
  }

  sqlite3* db_ = nullptr;
};

struct Sizes {
  int64_t file = 0;       // the database file after a checkpoint
  int64_t feed = 0;       // pages of the changes table and its index
  int64_t documents = 0;  // pages of the documents table and its indexes
};

Sizes Measure(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) Die("open " + path);
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  Sizes out;
  auto sum = [&](const char* where) {
    std::string q = std::string("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE ") + where;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, q.c_str(), -1, &s, nullptr) != SQLITE_OK) Die(sqlite3_errmsg(db));
    int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    return v;
  };
  out.feed = sum("name IN ('changes', 'changes_by_container')");
  out.documents = sum("name LIKE 'documents%'");
  sqlite3_close_v2(db);
  out.file = static_cast<int64_t>(fs::file_size(path));
  return out;
}

json::value ResourceBody(size_t bytes, int generation) {
  json::object props;
  props["resourceId"] =
      "/subscriptions/1d3378d3-5a3f-4712-85a1-2485495dfc4b/resourceGroups/bench/providers/"
      "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1";
  props["provisioningState"] = "Succeeded";
  props["internalId"] = "/api/clusters_mgmt/v1/clusters/2abc";
  json::object spec;
  spec["generation"] = generation;
  spec["padding"] = std::string(bytes, 'x');  // the rest of a cluster: platform, network, api, ...
  props["spec"] = std::move(spec);
  json::object body;
  body["resourceType"] = "microsoft.redhatopenshift/hcpopenshiftclusters";
  body["properties"] = std::move(props);
  return body;
}

json::value OperationBody(int i) {
  json::object props;
  props["resourceId"] = "c1-operation-" + std::to_string(i);
  props["status"] = "Accepted";
  props["request"] = "Update";
  props["externalId"] =
      "/subscriptions/1d3378d3-5a3f-4712-85a1-2485495dfc4b/resourceGroups/bench/providers/"
      "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1";
  props["internalId"] = "/api/clusters_mgmt/v1/clusters/2abc";
  props["startTime"] = "2026-11-23T14:00:00Z";
  props["notificationUri"] = "https://management.azure.com/notify/" + std::string(64, 'n');
  json::object body;
  body["resourceType"] = "microsoft.redhatopenshift/hcpoperationstatuses";
  body["properties"] = std::move(props);
  return body;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--operations") {
      o.operations = std::atoi(next().c_str());
    } else if (a == "--resource-bytes") {
      o.resource_bytes = static_cast<size_t>(std::atol(next().c_str()));
    } else if (a == "--dir") {
      o.dir = next();
    } else if (a == "--keep") {
      o.keep = true;
    } else {
      Die("unknown option " + a + " (--operations N, --resource-bytes N, --dir DIR, --keep)");
    }
  }
  if (o.operations < 1) Die("bad --operations");
  fs::path dir = o.dir;
  if (dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "feed_bench.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp");
    dir = tmpl;
  }
  fs::create_directories(dir);
  const std::string compact_path = (dir / "compact.db").string();
  const std::string full_path = (dir / "full-copy.db").string();
  fs::remove(compact_path);
  fs::remove(full_path);

  SystemClock clock;
  auto opened = OpenStore("sqlite://" + compact_path, {.clock = &clock});
  if (!opened.ok()) Die(opened.error().ToString());
  Store& store = **opened;
  FullCopyFeed full(full_path);
  const std::string pk = "1d3378d3-5a3f-4712-85a1-2485495dfc4b";
  const std::string c(kResources);
  auto path = [](std::string_view p) { return std::string(p); };

  auto created = store.Create(kResources, pk, "c1", ResourceBody(o.resource_bytes, 0));
  if (!created.ok()) Die(created.error().ToString());
  full.Write(c, *created, sql::kKindCreate);
  for (int i = 0; i < o.operations; ++i) {
    const std::string op = "op-" + std::to_string(i);
    // The frontend's PATCH: resource + operation in one batch.
    auto accepted = store.Batch(
        kResources, pk,
        {WriteOp::Patch(
             "c1", {{PatchOp::Kind::kSet, path("/properties/spec/generation"), json::value(i + 1)},
                    {PatchOp::Kind::kSet, path("/properties/provisioningState"), json::value("Accepted")},
                    {PatchOp::Kind::kSet, path("/properties/activeOperationId"), json::value(op)}}),
         WriteOp::Create(op, OperationBody(i), 7 * 24 * 3600)});
    if (!accepted.ok()) Die(accepted.error().ToString());
    full.Exec("BEGIN");
    full.Write(c, accepted->documents[0], sql::kKindReplace);
    full.Write(c, accepted->documents[1], sql::kKindCreate);
    full.Exec("COMMIT");
    // The backend's terminal batch.
    auto ended = store.Batch(
        kResources, pk,
        {WriteOp::Patch(op, {{PatchOp::Kind::kSet, path("/properties/status"), json::value("Succeeded")}}),
         WriteOp::Patch(
             "c1", {{PatchOp::Kind::kSet, path("/properties/provisioningState"), json::value("Succeeded")},
                    {PatchOp::Kind::kRemove, path("/properties/activeOperationId"), json::value(nullptr)}})});
    if (!ended.ok()) Die(ended.error().ToString());
    full.Exec("BEGIN");
    full.Write(c, ended->documents[0], sql::kKindReplace);
    full.Write(c, ended->documents[1], sql::kKindReplace);
    full.Exec("COMMIT");
  }
  opened->reset();

  const Sizes compact = Measure(compact_path);
  const Sizes copy = Measure(full_path);
  const double n = o.operations;
  std::printf(
      "feed_bench: %d operations on one cluster (resource body ~%zu bytes), 4 document versions each\n\n",
      o.operations, o.resource_bytes);
  std::printf("%-28s %14s %14s %14s %16s\n", "change feed", "file bytes", "feed bytes", "docs bytes",
              "feed bytes/op");
  std::printf("%-28s %14lld %14lld %14lld %16.0f\n", "full copy per version (old)",
              static_cast<long long>(copy.file), static_cast<long long>(copy.feed),
              static_cast<long long>(copy.documents), copy.feed / n);
  std::printf("%-28s %14lld %14lld %14lld %16.0f\n", "compact (this build)",
              static_cast<long long>(compact.file), static_cast<long long>(compact.feed),
              static_cast<long long>(compact.documents), compact.feed / n);
  std::printf(
      "\nfeed bytes per operation: %.1f%% of the full copy (target <= 25%%); file bytes per operation: "
      "%.0f -> %.0f\n",
      100.0 * compact.feed / copy.feed, copy.file / n, compact.file / n);
  if (!o.keep && o.dir.empty()) fs::remove_all(dir);
  return 0;
}
