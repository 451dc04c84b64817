// The SQL of the PostgreSQL engine: the schema migrations and every statement it prepares. The
// benchmark runs the same statements directly on libpq as its baseline, so this header is shared
// with bench/store_bench_pg.
//
// Conventions: container names, partition keys, ids, lease names and owners, bodies and the
// extracted index fields are bytea (any byte string round-trips and compares bytewise, whatever
// the database encoding and collation); etags are text. Times are milliseconds since the epoch by
// the store's Clock. Statements are unqualified: each connection's search_path is the store schema.
#pragma once

#include <vector>

#include "store/document_logic.h"
#include "store/postgres/pg_connection.h"

namespace hcprp::store::postgres::sql {

struct Migration {
  int version;
  const char* sql;
};

// Applied in order, each once, under an advisory lock (see pg_store.h). Never edit a released
// migration; append a new one.
inline const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, R"sql(
CREATE TABLE documents (
  container bytea NOT NULL,
  pk bytea NOT NULL,
  id bytea NOT NULL,
  body bytea NOT NULL,
  etag text NOT NULL,
  ts bigint NOT NULL,
  ttl bigint,
  expires_at bigint,
  resource_type bytea,
  resource_id bytea,
  status bytea,
  non_terminal boolean NOT NULL DEFAULT false,
  PRIMARY KEY (container, pk, id)
);
CREATE INDEX documents_type ON documents (container, resource_type, pk, id) WHERE resource_type IS NOT NULL;
CREATE INDEX documents_rid ON documents (container, pk, resource_id) WHERE resource_id IS NOT NULL;
CREATE INDEX documents_active ON documents (container, pk, id) WHERE non_terminal;
CREATE INDEX documents_expiry ON documents (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE changes (
  container bytea NOT NULL,
  seq bigint NOT NULL,
  kind smallint NOT NULL,
  pk bytea NOT NULL,
  id bytea NOT NULL,
  body bytea NOT NULL,
  etag text NOT NULL,
  ts bigint NOT NULL,
  ttl bigint,
  PRIMARY KEY (container, seq, pk)
);
CREATE TABLE feed_counters (
  container bytea PRIMARY KEY,
  last_seq bigint NOT NULL
);
CREATE TABLE leases (
  container bytea NOT NULL,
  pk bytea NOT NULL,
  name bytea NOT NULL,
  owner bytea,
  etag text,
  fencing_token bigint NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (container, pk, name)
);
)sql"},
      // The change feed numbered by its readers (see pg_store.h): writers insert their changes with
      // no sequence number (seq NULL, serial from a sequence) and never wait on each other;
      // number_changes() gives the committed, unnumbered changes of a container the next numbers in
      // serial order, under a per-container advisory lock, and records the last one in feed_counters.
      {2, R"sql(
ALTER TABLE changes DROP CONSTRAINT changes_pkey;
ALTER TABLE changes ALTER COLUMN seq DROP NOT NULL;
CREATE SEQUENCE change_serials;
ALTER TABLE changes ADD COLUMN serial bigint;
ALTER TABLE changes ALTER COLUMN serial SET DEFAULT nextval('change_serials');
CREATE UNIQUE INDEX changes_numbered ON changes (container, seq) WHERE seq IS NOT NULL;
CREATE INDEX changes_unnumbered ON changes (container, serial) WHERE seq IS NULL;
CREATE FUNCTION number_changes(target bytea, max_rows bigint) RETURNS bigint LANGUAGE plpgsql
-- The join below pairs the pending rows with their numbers through the same index order: a merge
-- join. Without statistics (a young table) the planner would pick a nested loop that rescans the
-- pending rows for each of them, quadratic in the backlog (seconds for 5,000 rows).
SET enable_nestloop = off AS $fn$
DECLARE
  base_seq bigint;
  numbered bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM changes WHERE container = target AND seq IS NULL) THEN
    RETURN coalesce((SELECT last_seq FROM feed_counters WHERE container = target), 0);
  END IF;
  -- One numberer per container at a time. An advisory lock takes no transaction ID, so a numberer
  -- that finds everything numbered once it has the lock commits without a WAL flush. The statements
  -- below run on snapshots taken after the lock: they see the previous numberer's work.
  PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || ':' || encode(target, 'hex'), 1879));
  base_seq := coalesce((SELECT last_seq FROM feed_counters WHERE container = target), 0);
  WITH p AS (SELECT serial, base_seq + row_number() OVER (ORDER BY serial) AS next_seq FROM changes
             WHERE container = target AND seq IS NULL ORDER BY serial LIMIT max_rows)
  UPDATE changes ch SET seq = p.next_seq FROM p
    WHERE ch.container = target AND ch.seq IS NULL AND ch.serial = p.serial;
  GET DIAGNOSTICS numbered = ROW_COUNT;
  IF numbered > 0 THEN
    INSERT INTO feed_counters AS f (container, last_seq) VALUES (target, base_seq + numbered)
      ON CONFLICT (container) DO UPDATE SET last_seq = excluded.last_seq;
  END IF;
  RETURN base_seq + numbered;
END
$fn$;
)sql"},
      // Bodies of a few kilobytes are compressed when stored. lz4 costs a fraction of the CPU of the
      // default (pglz) for about the same size; a server built without lz4 keeps pglz.
      {3, R"sql(
DO $do$
BEGIN
  ALTER TABLE documents ALTER COLUMN body SET COMPRESSION lz4;
  ALTER TABLE changes ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  NULL;
END
$do$;
)sql"},
  };
  return kMigrations;
}

// Change kinds as stored in changes.kind (the values of Change::Kind).
inline constexpr int16_t kKindCreate = internal::kKindCreate, kKindReplace = internal::kKindReplace,
                         kKindDelete = internal::kKindDelete, kKindExpire = internal::kKindExpire;

inline constexpr Statement kBegin{"hb", "BEGIN"};
inline constexpr Statement kCommit{"hc", "COMMIT"};
inline constexpr Statement kRollback{"hr", "ROLLBACK"};

// $1 container $2 pk $3 id $4 now. A live document.
inline constexpr Statement kReadDoc{
    "h_read",
    "SELECT body, etag, ts, ttl FROM documents WHERE container=$1 AND pk=$2 AND id=$3 "
    "AND (expires_at IS NULL OR expires_at>$4)"};
// $1 container $2 pk $3 id. Live or expired, locked for the rest of the transaction.
inline constexpr Statement kLoadDocForUpdate{"h_load",
                                             "SELECT body, etag, ts, ttl, expires_at FROM documents WHERE "
                                             "container=$1 AND pk=$2 AND id=$3 FOR UPDATE"};
// $1 container $2 pk $3 id $4 body $5 etag $6 ts $7 ttl $8 expires_at $9 resource_type $10 resource_id
// $11 status $12 non_terminal. Returns a row when inserted, none when the key exists.
inline constexpr Statement kInsertDoc{
    "h_insert",
    "INSERT INTO documents(container, pk, id, body, etag, ts, ttl, expires_at, resource_type, resource_id, "
    "status, non_terminal) VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
    "ON CONFLICT (container, pk, id) DO NOTHING RETURNING 1"};
// As kInsertDoc, plus $13 required etag (NULL: any) $14 now. Only a live document is updated.
inline constexpr Statement kUpdateDoc{
    "h_update",
    "UPDATE documents SET body=$4, etag=$5, ts=$6, ttl=$7, expires_at=$8, resource_type=$9, resource_id=$10, "
    "status=$11, non_terminal=$12 WHERE container=$1 AND pk=$2 AND id=$3 AND ($13::text IS NULL OR etag=$13) "
    "AND (expires_at IS NULL OR expires_at>$14)"};
// $1 container $2 pk $3 id $4 required etag (NULL: any) $5 now. Only a live document is deleted.
inline constexpr Statement kDeleteDoc{
    "h_delete",
    "DELETE FROM documents WHERE container=$1 AND pk=$2 AND id=$3 AND ($4::text IS NULL OR etag=$4) "
    "AND (expires_at IS NULL OR expires_at>$5) RETURNING body, etag, ts, ttl"};
// $1 container $2 pk $3 id.
inline constexpr Statement kDeleteAnyDoc{"h_delete_any",
                                         "DELETE FROM documents WHERE container=$1 AND pk=$2 AND id=$3"};

// The change feed (see pg_store.h). A writer inserts its changes unnumbered as the last work before
// COMMIT: $1 container $2 kind $3 pk $4 id $5 body $6 etag $7 ts $8 ttl.
inline constexpr Statement kInsertChange{"h_change",
                                         "INSERT INTO changes(container, kind, pk, id, body, etag, ts, ttl) "
                                         "VALUES($1, $2, $3, $4, $5, $6, $7, $8)"};
// A reader numbers what has been committed since: $1 container $2 at most that many. Returns the
// container's last sequence number (0 when none).
inline constexpr int kNumberChunk = 5000;
inline constexpr Statement kNumberChanges{"h_number", "SELECT number_changes($1, $2)"};
// $1 container $2 after sequence $3 limit. The numbers of a container are consecutive, so the next
// $3 changes are exactly those in ($2, $2 + $3]: the bounded range keeps the scan at $3 rows however
// long the feed is.
// A create or replace is stored with an empty body: while its version (etag) is current the body is
// the document's, and once superseded the body column reads NULL (the reader leaves it out; a
// later change of the document follows). Deletes and expiries keep the last body.
inline constexpr Statement kReadChanges{
    "h_changes",
    "SELECT c.seq, c.kind, c.pk, c.id, CASE WHEN length(c.body)>0 THEN c.body ELSE d.body END, c.etag, c.ts, "
    "c.ttl FROM changes c LEFT JOIN documents d ON length(c.body)=0 AND d.container=c.container AND "
    "d.pk=c.pk AND d.id=c.id AND d.etag=c.etag "
    "WHERE c.container=$1 AND c.seq>$2 AND c.seq<=$2+$3 ORDER BY c.seq LIMIT $3"};
// $1 container. The last numbered sequence (0 when none) and whether committed changes wait for
// their numbers.
inline constexpr Statement kFeedState{
    "h_feed_state",
    "SELECT coalesce((SELECT last_seq FROM feed_counters WHERE container=$1), 0), "
    "EXISTS (SELECT 1 FROM changes WHERE container=$1 AND seq IS NULL)"};

// Retention. Containers whose feed has unnumbered changes (numbered before a trim, so that none is
// removed unseen):
inline constexpr Statement kPendingContainers{"h_pending",
                                              "SELECT DISTINCT container FROM changes WHERE seq IS NULL"};
inline constexpr Statement kFeedContainers{"h_feeds", "SELECT container FROM feed_counters"};
// $1 container $2 cutoff ts $3 limit $4 changes to keep: removes those of the container's oldest $3
// numbered changes written before the cutoff or not among its newest $4. The numbers stay
// consecutive, so a reader sees a removed range as a gap.
inline constexpr Statement kTrimChanges{"h_trim",
                                        "DELETE FROM changes WHERE container=$1 AND seq IS NOT NULL AND "
                                        "(ts<$2 OR seq<=coalesce((SELECT last_seq FROM feed_counters WHERE "
                                        "container=$1), 0)-$4) AND seq IN (SELECT seq FROM changes "
                                        "WHERE container=$1 AND seq IS NOT NULL ORDER BY seq LIMIT $3)"};

// $1 container $2 after pk (only in Next) $3 now $4 limit
inline constexpr Statement kListPartitionsFirst{
    "h_parts1",
    "SELECT DISTINCT pk FROM documents WHERE container=$1 AND (expires_at IS NULL OR expires_at>$2) "
    "ORDER BY pk LIMIT $3"};
inline constexpr Statement kListPartitionsNext{"h_parts2",
                                               "SELECT DISTINCT pk FROM documents WHERE container=$1 AND "
                                               "pk>$2 AND (expires_at IS NULL OR expires_at>$3) "
                                               "ORDER BY pk LIMIT $4"};
// $1 now $2 limit. Removes a chunk of expired documents (rows locked by writers are left for later).
inline constexpr Statement kPurgeChunk{
    "h_purge",
    "DELETE FROM documents d USING (SELECT container, pk, id FROM documents WHERE expires_at IS NOT NULL "
    "AND expires_at<=$1 LIMIT $2 FOR UPDATE SKIP LOCKED) x WHERE d.container=x.container AND d.pk=x.pk "
    "AND d.id=x.id RETURNING d.container, d.pk, d.id, d.body, d.etag, d.ts, d.ttl"};

// $1 container $2 pk $3 name $4 owner $5 etag $6 expires_at $7 now. Takes the lease when it is free
// (absent, released or expired) with the next fencing token; returns nothing when it is held.
inline constexpr Statement kLeaseAcquire{
    "h_lease_acquire",
    "INSERT INTO leases AS l (container, pk, name, owner, etag, fencing_token, expires_at) "
    "VALUES ($1, $2, $3, $4, $5, 1, $6) ON CONFLICT (container, pk, name) DO UPDATE SET "
    "owner=excluded.owner, "
    "etag=excluded.etag, fencing_token=l.fencing_token+1, expires_at=excluded.expires_at "
    "WHERE l.owner IS NULL OR l.expires_at<=$7 RETURNING l.fencing_token"};
// $1 container $2 pk $3 name
inline constexpr Statement kLeaseHolder{"h_lease_holder",
                                        "SELECT owner FROM leases WHERE container=$1 AND pk=$2 AND name=$3"};
// $1 container $2 pk $3 name. For a fenced batch: the share lock keeps a takeover from committing
// before the batch does.
inline constexpr Statement kLeaseFence{
    "h_lease_fence",
    "SELECT owner, fencing_token, expires_at FROM leases WHERE container=$1 AND pk=$2 AND name=$3 FOR SHARE"};
// $4 current etag $5 new etag $6 new expires_at $7 now
inline constexpr Statement kLeaseRenew{
    "h_lease_renew",
    "UPDATE leases SET etag=$5, expires_at=$6 WHERE container=$1 AND pk=$2 AND name=$3 AND etag=$4 "
    "AND owner IS NOT NULL AND expires_at>$7 RETURNING owner, fencing_token"};
// $4 current etag
inline constexpr Statement kLeaseRelease{"h_lease_release",
                                         "UPDATE leases SET owner=NULL, etag=NULL, expires_at=0 WHERE "
                                         "container=$1 AND pk=$2 AND name=$3 AND etag=$4"};

}  // namespace hcprp::store::postgres::sql
