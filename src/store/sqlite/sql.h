// The SQL of the SQLite engine: schema and every statement it prepares. The benchmark runs the same
// text directly on sqlite3 as its baseline, so this header is shared with bench/store_bench.
//
// Conventions: container names and the extracted index columns are TEXT; partition keys, ids, lease
// names and owners are always bound as BLOB (so any byte string round-trips and compares bytewise);
// bodies are JSON text. Times are milliseconds since the epoch by the store's Clock.
#pragma once

#include <string>

#include "store/document_logic.h"
#include "store/engine_core.h"

namespace hcprp::store::sqlite::sql {

// 'hcpr': marks a database file as an hcprp store (PRAGMA application_id).
inline constexpr int kApplicationId = 0x68637072;
// PRAGMA user_version of the schema below.
inline constexpr int kSchemaVersion = 2;  // 2: feed_trims

inline constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS documents (
  container TEXT NOT NULL,
  pk BLOB NOT NULL,
  id BLOB NOT NULL,
  body TEXT NOT NULL,
  etag TEXT NOT NULL,
  ts INTEGER NOT NULL,
  ttl INTEGER,
  expires_at INTEGER,
  resource_type TEXT,
  resource_id TEXT,
  status TEXT,
  non_terminal INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS documents_key ON documents(container, pk, id);
CREATE INDEX IF NOT EXISTS documents_type ON documents(container, resource_type, pk, id)
  WHERE resource_type IS NOT NULL;
CREATE INDEX IF NOT EXISTS documents_rid ON documents(container, pk, resource_id, id)
  WHERE resource_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS documents_active ON documents(container, pk, id) WHERE non_terminal = 1;
CREATE INDEX IF NOT EXISTS documents_active_type ON documents(container, resource_type, pk, id)
  WHERE non_terminal = 1 AND resource_type IS NOT NULL;
CREATE INDEX IF NOT EXISTS documents_expiry ON documents(expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  container TEXT NOT NULL,
  kind INTEGER NOT NULL,
  pk BLOB NOT NULL,
  id BLOB NOT NULL,
  body TEXT NOT NULL,
  etag TEXT NOT NULL,
  ts INTEGER NOT NULL,
  ttl INTEGER
);
CREATE INDEX IF NOT EXISTS changes_by_container ON changes(container, seq);
CREATE TABLE IF NOT EXISTS feed_trims (
  container TEXT PRIMARY KEY,
  trimmed_through INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
  container TEXT NOT NULL,
  pk BLOB NOT NULL,
  name BLOB NOT NULL,
  owner BLOB,
  etag TEXT,
  fencing_token INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (container, pk, name)
) WITHOUT ROWID;
)sql";

// Change kinds as stored in changes.kind (the values of Change::Kind).
using internal::kKindCreate;
using internal::kKindDelete;
using internal::kKindExpire;
using internal::kKindReplace;

inline constexpr const char* kBegin = "BEGIN IMMEDIATE";
inline constexpr const char* kCommit = "COMMIT";
inline constexpr const char* kRollback = "ROLLBACK";
// Each write of a group commit runs inside its own savepoint of the shared transaction.
inline constexpr const char* kSavepoint = "SAVEPOINT w";
inline constexpr const char* kRelease = "RELEASE w";
inline constexpr const char* kRollbackToSavepoint = "ROLLBACK TO w";

// ?1 container ?2 pk ?3 id ?4 now. A live document.
inline constexpr const char* kReadDoc =
    "SELECT body, etag, ts, ttl FROM documents WHERE container=?1 AND pk=?2 AND id=?3 "
    "AND (expires_at IS NULL OR expires_at>?4)";
// ?1 container ?2 pk ?3 id. Live or expired.
inline constexpr const char* kLoadDoc =
    "SELECT body, etag, ts, ttl, expires_at FROM documents WHERE container=?1 AND pk=?2 AND id=?3";
// ?1 container ?2 pk ?3 id ?4 body ?5 etag ?6 ts ?7 ttl ?8 expires_at ?9 resource_type ?10 resource_id
// ?11 status ?12 non_terminal
inline constexpr const char* kInsertDoc =
    "INSERT INTO documents(container, pk, id, body, etag, ts, ttl, expires_at, resource_type, resource_id, "
    "status, non_terminal) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
// As kInsertDoc, plus ?13 required etag (NULL: any) ?14 now. Only a live document is updated.
inline constexpr const char* kUpdateDoc =
    "UPDATE documents SET body=?4, etag=?5, ts=?6, ttl=?7, expires_at=?8, resource_type=?9, resource_id=?10, "
    "status=?11, non_terminal=?12 WHERE container=?1 AND pk=?2 AND id=?3 AND (?13 IS NULL OR etag=?13) "
    "AND (expires_at IS NULL OR expires_at>?14)";
// kUpdateDoc's parameters, for an update that leaves every indexed column as it is (a patch of a
// document's body, most replaces): it sets no indexed column, so SQLite leaves the indexes alone, and
// it changes no row when an indexed value differs, for kUpdateDoc to do instead.
inline constexpr const char* kUpdateDocSameIndex =
    "UPDATE documents SET body=?4, etag=?5, ts=?6, ttl=?7, status=?11 WHERE container=?1 AND pk=?2 AND id=?3 "
    "AND (?13 IS NULL OR etag=?13) AND (expires_at IS NULL OR expires_at>?14) AND expires_at IS ?8 AND "
    "resource_type IS ?9 AND resource_id IS ?10 AND non_terminal=?12";
// ?1 container ?2 pk ?3 id ?4 required etag (NULL: any) ?5 now. Only a live document is deleted.
inline constexpr const char* kDeleteDoc =
    "DELETE FROM documents WHERE container=?1 AND pk=?2 AND id=?3 AND (?4 IS NULL OR etag=?4) "
    "AND (expires_at IS NULL OR expires_at>?5) RETURNING body, etag, ts, ttl";
// ?1 container ?2 pk ?3 id.
inline constexpr const char* kDeleteAnyDoc = "DELETE FROM documents WHERE container=?1 AND pk=?2 AND id=?3";
// ?1 container ?2 kind ?3 pk ?4 id ?5 body ?6 etag ?7 ts ?8 ttl. The sequence is the rowid.
inline constexpr const char* kInsertChange =
    "INSERT INTO changes(container, kind, pk, id, body, etag, ts, ttl) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, "
    "?8)";
// changes.body of a create or replace: the body is the document's while this version (etag) is
// current; a superseded version is left out of the feed (a later change of the document follows).
// Deletes and expiries keep the last body (the document is gone).
inline constexpr const char* kVersionInDocuments = "";
// ?1 container ?2 after sequence. Columns 8 and 9: the document's current etag and body (NULL when it
// is gone). Read row by row until the page is full.
inline constexpr const char* kReadChanges =
    "SELECT c.seq, c.kind, c.pk, c.id, c.body, c.etag, c.ts, c.ttl, d.etag, d.body FROM changes c "
    "LEFT JOIN documents d ON c.body='' AND d.container=c.container AND d.pk=c.pk AND d.id=c.id "
    "WHERE c.container=?1 AND c.seq>?2 ORDER BY c.seq";
// The feed's end: its last change, or the last one trimmed when none is left.
inline constexpr const char* kMaxSeq =
    "SELECT max(coalesce((SELECT max(seq) FROM changes WHERE container=?1), 0), "
    "coalesce((SELECT trimmed_through FROM feed_trims WHERE container=?1), 0))";
// ?1 container. The last sequence removed by retention (0: none).
inline constexpr const char* kTrimmedThrough =
    "SELECT coalesce((SELECT trimmed_through FROM feed_trims WHERE container=?1), 0)";
// ?1 cutoff ts ?2 limit ?3 changes to keep. Retention: removes those of the oldest ?2 changes that
// were written before the cutoff or are not among the newest ?3 of the store.
inline constexpr const char* kTrimChanges =
    "DELETE FROM changes WHERE seq IN (SELECT seq FROM changes ORDER BY seq LIMIT ?2) AND "
    "(ts<?1 OR seq<=(SELECT max(seq) FROM changes)-?3) RETURNING container, seq";
// ?1 container ?2 sequence
inline constexpr const char* kRecordTrim =
    "INSERT INTO feed_trims(container, trimmed_through) VALUES(?1, ?2) ON CONFLICT(container) DO UPDATE SET "
    "trimmed_through=max(trimmed_through, excluded.trimmed_through)";
inline constexpr const char* kHasChanges = "SELECT 1 FROM changes WHERE container=?1 AND seq>?2 LIMIT 1";
// ListPartitions is a skip-scan over documents_key: the next partition key after ?2 (the first one
// with kFirstPartition), then whether it holds a live document; inside one read transaction.
inline constexpr const char* kBeginRead = "BEGIN";
inline constexpr const char* kEndRead = "COMMIT";
inline constexpr const char* kFirstPartition =
    "SELECT pk FROM documents WHERE container=?1 ORDER BY pk LIMIT 1";
inline constexpr const char* kNextPartition =
    "SELECT pk FROM documents WHERE container=?1 AND pk>?2 ORDER BY pk LIMIT 1";
// ?1 container ?2 pk ?3 now
inline constexpr const char* kPartitionLive =
    "SELECT 1 FROM documents WHERE container=?1 AND pk=?2 AND (expires_at IS NULL OR expires_at>?3) LIMIT 1";
// ?1 now ?2 limit
inline constexpr const char* kSelectExpired =
    "SELECT rowid, container, pk, id, body, etag, ts, ttl FROM documents "
    "WHERE expires_at IS NOT NULL AND expires_at<=?1 LIMIT ?2";
inline constexpr const char* kDeleteByRowid = "DELETE FROM documents WHERE rowid=?1";
// ?1 container ?2 pk ?3 name
inline constexpr const char* kLeaseGet =
    "SELECT owner, etag, fencing_token, expires_at FROM leases WHERE container=?1 AND pk=?2 AND name=?3";
// ?4 owner ?5 etag ?6 fencing_token ?7 expires_at
inline constexpr const char* kLeasePut =
    "INSERT INTO leases(container, pk, name, owner, etag, fencing_token, expires_at) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(container, pk, name) DO UPDATE SET owner=excluded.owner, "
    "etag=excluded.etag, fencing_token=excluded.fencing_token, expires_at=excluded.expires_at";
// ?4 current etag ?5 new etag ?6 new expires_at ?7 now
inline constexpr const char* kLeaseRenew =
    "UPDATE leases SET etag=?5, expires_at=?6 WHERE container=?1 AND pk=?2 AND name=?3 AND etag=?4 "
    "AND owner IS NOT NULL AND expires_at>?7 RETURNING owner, fencing_token";
// ?4 current etag
inline constexpr const char* kLeaseRelease =
    "UPDATE leases SET owner=NULL, etag=NULL, expires_at=0 WHERE container=?1 AND pk=?2 AND name=?3 AND "
    "etag=?4";
inline constexpr const char* kDataVersion = "PRAGMA data_version";

// Query shapes (bits of a cache key), assembled by engine_core's PlanQuery; all share the parameter
// numbering ?1 container ?2 pk ?3 resource_type ?4 resource_id ?5 prefix ?6 prefix upper bound ?7 now
// ?8 after pk ?9 after id ?10 limit.
using internal::kQueryActive;
using internal::kQueryAfter;
using internal::kQueryPartition;
using internal::kQueryPrefix;
using internal::kQueryPrefixUpper;
using internal::kQueryRid;
using internal::kQueryShapes;
using internal::kQueryType;

// The text of query shape `shape` (a valid shape has kQueryPartition or kQueryType, and
// kQueryPrefixUpper only with kQueryPrefix).
inline std::string QuerySql(int shape) { return internal::QuerySql(shape, '?', "non_terminal=1"); }

}  // namespace hcprp::store::sqlite::sql
