// The PostgreSQL engine of the store (see store.h for the semantics; docs/postgresql.md for
// operating it).
//
// URL: postgresql://user[:password]@host[:port]/db[?schema=NAME&query_timeout_ms=N&<libpq
// parameters>]. `schema` (default "hcprp"; [a-z0-9_], at most 40 characters) names the PostgreSQL
// schema that holds the store's tables; several stores can share a database in different schemas.
// `query_timeout_ms` (default 10000; 0: none) is how long a call waits for the server's answer: a
// server that accepts connections but stops answering makes calls fail with kUnavailable (and
// their connections dropped) instead of hanging; schema migrations at open have no limit. Other
// parameters go to libpq unchanged.
//
// Connections: a pool (at most kMaxConnections, opened on demand). An idle connection that the
// server wrote to (a termination notice after a restart) is dropped before it is handed out; a
// transaction that fails on a reused connection that broke (before any COMMIT was sent) is retried
// once on a new one. A transaction's BEGIN travels with its first statement, and its change
// inserts with its COMMIT, each pair in one round trip (libpq's pipeline mode). While the
// server is down every call fails with kUnavailable; the pool reconnects when it is back. While
// connection attempts get no answer at all (a network partition, a host gone), a new attempt starts
// every kConnectRetryPeriod (500 ms) and a call that needs a new connection fails with kUnavailable
// after waiting that long, instead of every call waiting out connect_timeout (pg_connect_gate.h):
// calls do not pile up, and connections open again within about that period of the network's return.
// While servers answer attempts but turn the session down (no server takes writes during a
// failover, a server in crash recovery), attempts start 100, 200, 400 ms, at most 500 ms after the
// last one, one at a time, and calls in between wait for the next attempt: a standby being promoted
// is not slowed by a process start per call. Attempts no server answers (refused, silent) cost nothing and
// start no back-off. Each connection prepares the statements of pg_sql.h on first use and binds every value
// as a binary parameter. lock_timeout is OpenOptions::busy_timeout.
//
// High availability (a primary and standbys, e.g. pg_auto_failover): the URL lists every host
// (postgresql://u@h1:p1,h2:p2/db); with several hosts target_session_attrs=read-write is added
// unless the URL names it, so every connection (pooled, LISTEN, NOTIFY) goes to the server that
// takes writes now. A new connection tries the server that gave the last session first
// (pg_host_order.h), so a silent old primary does not cost every connection its connect_timeout. On a
// failover the connections to the old primary break (or, for a primary being demoted, its writes fail with
// SQLSTATE 25006, which drops the connection and reruns the transaction once on a new one); calls fail with
// kUnavailable until the new primary takes connections, then new connections find it. A commit acknowledged
// under synchronous replication is on the standby; a COMMIT whose answer was lost returns kUnavailable
// (outcome unknown). A reader's feed position past the feed's end (the new primary lacks changes the reader
// saw, which only asynchronous replication allows) is kOutOfRange.
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
// Change feed without gaps: numbered by the readers, after commit. A writing transaction inserts its
// changes as its last work before COMMIT with no sequence number (seq NULL) and a `serial` from a
// PostgreSQL sequence; writers take no shared lock, so commits to one container run in parallel and
// share WAL flushes. A serial is not a feed position: a transaction that took a lower serial may
// commit after one with a higher serial. Readers therefore number: ReadChanges first calls
// number_changes(container) (a PL/pgSQL function of migration 2), which, when committed unnumbered
// changes exist, takes the container's advisory lock and, on a snapshot taken after that lock,
// gives them the next consecutive numbers in serial order, in one transaction. Consequences:
//  - a number is given only to a committed change and only once, under the lock, and numbers are
//    consecutive (a rolled-back transaction's rows never become visible, so they leave no gap): a
//    reader at position N has seen every change numbered up to N, and a change that commits late
//    (a slow transaction) simply gets a later number. Nothing is skipped and no reader waits on a gap;
//  - the changes of one document keep their order: its writers are serialised by the document's row
//    lock, and a writer inserts its change after taking that lock, so the later change has the higher
//    serial and becomes visible only after the earlier one;
//  - the cost moves to the readers: one short transaction (a WAL flush) per batch of newly committed
//    changes, under that lock, which only numberers take (one that finds nothing left
//    once it has the lock commits read-only, without a flush). When nothing is pending the call
//    is a read-only probe of a partial index.
// The numbering is durable (a synchronous commit): a reader's continuation never refers to a number
// that a crash could hand to another change. Retention (OpenOptions::change_retention) removes the
// oldest numbered changes; since numbers are consecutive, a read that does not start right after
// its position has lost changes to it (kOutOfRange).
//
// Waiting: after a commit with changes, the store wakes its own waiters at once and has a notifier
// thread send NOTIFY hcprp_feed_<schema> on its own connection, which commits asynchronously (no
// WAL flush, so PostgreSQL's notification-queue lock is held briefly and never by a writer);
// commits made while a NOTIFY is in flight share the next one. The first WaitForChanges starts a
// listener thread with its own connection (LISTEN) that blocks in poll() on the socket and a wake
// pipe; every notification wakes the waiters, which check whether the container has changes beyond
// their position, numbered or not. If the listener's connection breaks it reconnects (backing off)
// and wakes everyone to re-check; waiters also re-check every 5 s as a safety net (this also covers
// a writer process that died between its commit and its NOTIFY).
//
// Citus (sharding by subscription): every table is keyed by container and includes the partition
// key, so documents, changes and leases can be distributed by `pk` (create_distributed_table
// ('documents', 'pk'), colocated), and every transaction of a point write, batch or lease touches
// one partition key; writers no longer touch feed_counters. Numbering is a multi-shard update run
// by readers. See docs/postgresql.md.
#pragma once

#include <chrono>
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
  std::chrono::milliseconds query_timeout{10000};
};
Result<PgTarget> ParsePostgresUrl(std::string_view url);

}  // namespace hcprp::store::postgres
