// The PostgreSQL engine of the store (see store.h for the semantics; docs/postgresql.md for
// operating it).
//
// URL: postgresql://user[:password]@host[:port]/db[?schema=NAME&<libpq parameters>]. `schema`
// (default "hcprp"; [a-z0-9_], at most 40 characters) names the PostgreSQL schema that holds the
// store's tables; several stores can share a database in different schemas. Other parameters go
// to libpq unchanged.
//
// Connections: a pool (at most kMaxConnections, opened on demand). An idle connection that the
// server wrote to (a termination notice after a restart) is dropped before it is handed out; a
// transaction whose BEGIN fails on a reused connection is retried once on a new one. While the
// server is down every call fails with kUnavailable; the pool reconnects when it is back. Each
// connection prepares the statements of pg_sql.h on first use and binds every value as a binary
// parameter. lock_timeout is OpenOptions::busy_timeout.
//
// Schema migrations: at open, in one transaction under pg_advisory_xact_lock(hash of the schema
// name), the schema and the schema_migrations table are created if missing and every migration of
// pg_sql.h not yet recorded there is applied and recorded. Concurrent openers wait for each other;
// reopening applies nothing. A database whose schema is newer than this binary is refused
// (kInvalidArgument).
//
// Transactions: READ COMMITTED. Point writes and batches run in one transaction on one partition
// key of one container: documents are locked with SELECT ... FOR UPDATE (or written by single
// conditional UPDATE/DELETE statements whose WHERE clause carries the If-Match etag and liveness),
// patches and conditions are evaluated in C++ on the locked row. Creates use INSERT ... ON CONFLICT
// DO NOTHING so that no statement error aborts a transaction on the normal path. A transaction that
// the server rolls back for a deadlock or a serialisation failure is rerun (at most 3 times).
// Reads and queries are single statements outside a transaction.
//
// Change feed without gaps (method (a): serialised appends). Each container has a counter row in
// feed_counters. A writing transaction buffers its changes in memory and, as its last statement
// before COMMIT, increments the counter of its container by the number of changes (an UPSERT that
// takes the row lock) and inserts the changes numbered from the old value + 1. The row lock is held
// until the transaction ends, so the next writer of that container gets its numbers only after this
// one has committed (or rolled back, which also rolls back the counter: numbers stay consecutive).
// Hence sequence order is commit order, and a reader whose snapshot sees change N also sees every
// change below N: PostgreSQL removes a transaction from the running set before it releases its
// locks. A reader never skips a change and never has to wait for a gap. The cost: commits of one
// container are serialised (the lock is held for the last statement and the commit's WAL flush);
// commits to different containers, and all reads, run in parallel. PurgeExpired locks the counters
// of several containers in sorted order, after its document locks, as every writer does, so no
// deadlock cycle exists.
//
// Waiting: the counter statement also runs pg_notify('hcprp_feed_<schema>', ''), which PostgreSQL
// delivers on commit (never for a rolled-back transaction). The first WaitForChanges starts a
// listener thread with its own connection (LISTEN) that blocks in poll() on the socket and a wake
// pipe; every notification, and every commit through this Store, wakes the waiters, which re-check
// the counter. If the listener's connection breaks it reconnects (backing off) and wakes everyone
// to re-check; waiters also re-check every 5 s as a safety net.
//
// Citus (sharding by subscription): every table's primary key starts with the container and
// includes the partition key, so documents, changes and leases can be distributed by `pk`
// (create_distributed_table('documents', 'pk'), colocated), and every transaction of a point
// write, batch or lease touches one partition key. feed_counters is per container, not per
// partition: on Citus it is a reference table, which makes every write a two-shard-group
// transaction and keeps the per-container serialisation of commits. See docs/postgresql.md.
#pragma once

#include <memory>
#include <string_view>

#include "core/result.h"
#include "store/store.h"

namespace hcprp::store::postgres {

inline constexpr size_t kMaxConnections = 32;

// `url` is "postgresql://..." or "postgres://...". Use OpenStore() in callers; this is the
// engine's entry point behind it. Errors: kInvalidArgument for a malformed URL or a schema newer
// than this binary; kUnavailable when the server cannot be reached or the migration lock is not
// granted within busy_timeout.
Result<std::unique_ptr<Store>> OpenPostgresStore(std::string_view url, const OpenOptions& options);

// The libpq URI and the schema name of a store URL (the `schema` parameter removed). Exposed for
// the benchmark and tests.
struct PgTarget {
  std::string libpq_url;
  std::string schema;
};
Result<PgTarget> ParsePostgresUrl(std::string_view url);

}  // namespace hcprp::store::postgres
