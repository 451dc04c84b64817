// The partitioned JSON document store: the one header that says what the store offers.
//
// Semantics (both engines, see docs/architecture.md "Store semantics"):
//  - A store holds named containers. Containers exist implicitly: any non-empty name may be used and
//    an unknown container is simply empty. A document lives in one container and one partition and
//    is addressed by (partition_key, id). Ids and partition keys are arbitrary byte strings (embedded
//    NULs, invalid UTF-8 and the empty string included); they are compared and ordered bytewise.
//  - Every successful write gives the document a new etag (an opaque string, unique per write) and a
//    commit timestamp (the store's Clock, milliseconds).
//  - A document with `ttl_seconds` (> 0) expires at commit time + ttl (by the store's Clock); every
//    write restarts the ttl. An expired document is invisible to every read, query and precondition
//    at once (a Create over it succeeds; the old version is then recorded as kExpire first);
//    PurgeExpired() removes it and records the removal in the change feed as kExpire.
//  - Queries run inside one partition, except ListPartitions() and cross-partition type queries.
//  - Batches are all-or-nothing inside one partition; operations apply in order and each sees the
//    effect of the ones before it. An operation may name another container (WriteOp::container): it
//    writes the document with the batch's partition key there, in the same transaction, so that one
//    durable commit covers, for example, an operation's end and its billing record. On SQLite and
//    PostgreSQL this costs nothing (one database, one transaction). A Cosmos-style engine commits a
//    transactional batch inside one logical partition of ONE container, so it would have to keep the
//    containers that share batches in one physical container (a "container" field in each document,
//    queried by it, and one change feed to filter by it), or give up atomicity and order the writes
//    so that a crash between them is repaired (the later write recomputed from the earlier one).
//  - The change feed of a container lists committed creates, replaces (patches included) and
//    deletes (purges included, as kExpire) in commit order; a continuation token resumes it; nothing
//    is skipped when writers commit concurrently, in this process or in another one (but see the
//    latest-version rule below). With
//    OpenOptions::change_retention, PurgeExpired() also removes old changes; a read from a
//    position behind removed changes fails with kOutOfRange (the reader resynchronises and starts
//    again from kChangeFeedNow); an empty continuation reads from the oldest change kept.
//    OpenOptions::change_retention_changes bounds the feed's size the same way.
//  - The feed keeps the latest version of each document, not a copy of every version: a create or
//    replace is listed with its body while that version is current; once a later write supersedes
//    it, it is left out (the later change follows in the feed, so a reader always ends at each
//    document's latest state). Deletes and expiries are tombstones that keep the last body. A
//    reader sees each version that was still current when it read, never out of order.
//  - Leases give mutual exclusion with expiry and a fencing number that only grows. Leases live in
//    their own namespace (container, partition key, name); they are not documents and do not appear
//    in queries or in the change feed.
//
// Preconditions: `if_match` compares the etag exactly; "*" matches any live document. A Condition
// is checked against the current body; a write whose document does not exist fails with kNotFound
// before conditions are looked at, except Upsert, where an absent document has every path absent.
//
// Indexed fields: the store knows no document format. Whoever opens it says which body members it
// indexes (IndexSpec in OpenOptions); the QueryOptions filters match those members.
//
// Thread-safety: a Store is safe to use from many threads at once. Several Store objects, in one
// process or in several, may open the same SQLite file; each sees the others' commits.
//
// SQLite engine (sqlite/): WAL journal, synchronous=FULL (a committed write survives kill -9 and power
// loss), one writer connection (BEGIN IMMEDIATE; busy timeout from OpenOptions) with group commit
// (writes that arrive while a commit is in progress share the next transaction and its sync, each in
// its own savepoint; a caller returns only after that commit) and a pool of reader
// connections, prepared statements cached per connection, every value bound as a parameter. The
// change feed is a table with an AUTOINCREMENT sequence written in the write's transaction, so the
// sequence order is the commit order and a reader never sees a later change without the earlier
// ones. WaitForChanges wakes on commits of this Store at once (condition variable); commits by other
// connections to the same file (another Store, another process) are noticed with inotify on the
// database directory (the -wal file), confirmed by PRAGMA data_version; off Linux, data_version is
// polled every 50 ms while someone waits. A failed write (I/O error, busy, bad input) rolls its
// transaction back; no mmap is used, so an I/O error is a failed call, never a SIGBUS. Retention
// removes the oldest changes and records per container the last sequence removed (feed_trims).
// "sqlite::memory:" is one private connection.
//
// Also here: fault_injecting_store.h (a Store decorator that fails, delays or "crashes" calls, for
// tests) and store_conformance.h (the test suite every engine passes).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/result.h"

namespace hcprp::store {

// Container names used by hcprp.
inline constexpr std::string_view kResources = "resources";
inline constexpr std::string_view kLocks = "locks";
inline constexpr std::string_view kBilling = "billing";

struct Document {
  std::string id;
  std::string partition_key;
  json::value body;          // the user document (an object); never contains system fields
  std::string etag;          // set by the store
  int64_t timestamp_ms = 0;  // commit time (Clock), set by the store
  std::optional<int64_t> ttl_seconds;
  // Only from a query with QueryOptions::body_text (empty otherwise): the body as the store keeps
  // it, serialized JSON, and `body` is left null. ParseBodyText(body_text) gives what `body` would
  // have held.
  std::string body_text;
};

// The body of a Document read with QueryOptions::body_text: kCorruption when the text is not JSON
// (what a query without body_text would have failed with).
Result<json::value> ParseBodyText(std::string_view text);

// A condition on the current document of a conditional write (like Cosmos DB's filter predicate):
// the value at `path` (JSON pointer into the body) must equal `equals`, or, when `equals` is nullopt,
// the path must be absent.
struct Condition {
  std::string path;
  std::optional<json::value> equals;
};

struct PatchOp {
  enum class Kind {
    kSet,        // create or overwrite the member at path (parents must exist)
    kAdd,        // like kSet for objects; for arrays inserts at the index ("-" appends)
    kRemove,     // remove the member at path; error if absent
    kReplace,    // overwrite the member at path; error if absent
    kIncrement,  // add a number to the number at path; error if absent or not a number
  };
  Kind kind;
  std::string path;  // JSON pointer into the body
  json::value value;
};

// One operation of a batch, or the arguments of a point write.
struct WriteOp {
  enum class Kind { kCreate, kReplace, kUpsert, kDelete, kPatch, kRead };
  Kind kind;
  std::string id;
  json::value body;  // kCreate, kReplace, kUpsert
  // kCreate, kReplace, kUpsert: the new document's ttl (nullopt: none). kPatch keeps the current ttl.
  std::optional<int64_t> ttl_seconds;
  std::optional<std::string> if_match;  // kReplace, kUpsert, kDelete, kPatch, kRead
  std::vector<PatchOp> patch;           // kPatch
  // kReplace, kUpsert, kDelete, kPatch, kRead: checked against the current body (kInvalidArgument on
  // kCreate).
  std::vector<Condition> conditions;
  // Empty: the batch's container. Otherwise the container this operation writes or reads, with the
  // batch's partition key, inside the batch's transaction (see "Batches" above).
  std::string container;

  // This operation, in `container` instead of the batch's.
  WriteOp In(std::string_view other) && {
    container = std::string(other);
    return std::move(*this);
  }

  static WriteOp Create(std::string id, json::value body, std::optional<int64_t> ttl = std::nullopt);
  static WriteOp Replace(std::string id, json::value body,
                         std::optional<std::string> if_match = std::nullopt);
  static WriteOp Upsert(std::string id, json::value body, std::optional<std::string> if_match = std::nullopt);
  static WriteOp Delete(std::string id, std::optional<std::string> if_match = std::nullopt);
  static WriteOp Patch(std::string id, std::vector<PatchOp> ops, std::vector<Condition> conditions = {},
                       std::optional<std::string> if_match = std::nullopt);
  // A read inside a batch; with if_match it is an assertion that the document is unchanged.
  static WriteOp Read(std::string id, std::optional<std::string> if_match = std::nullopt);
};

// Errors of store calls (Error::code()):
//   kNotFound            the document does not exist (or expired)
//   kAlreadyExists       create of an existing document
//   kPreconditionFailed  if_match or a Condition did not hold, or a lease fence was stale, or a lease
//                        to renew or release was lost
//   kConflict            AcquireLease while another owner holds the lease
//   kInvalidArgument     malformed input (bad JSON pointer, body not an object, a patch path that
//                        must exist and does not, bad continuation, ttl <= 0, unsupported URL, ...)
//   kUnavailable         the engine cannot be reached (PostgreSQL down, SQLite busy past timeout,
//                        database locked at open)
//   kIoError, kCorruption the engine failed (I/O error, unreadable path, not a database, a stored body
//                        that is not JSON); nothing was committed by the failing call
//
// Patch: kSet/kAdd on an object member create or overwrite it (the parent must exist); on an array,
// kSet overwrites an index (or appends at size / "-"), kAdd inserts (or appends at size / "-").
// kRemove, kReplace and kIncrement need the target to exist. kIncrement adds int to int (overflow is
// kInvalidArgument) and otherwise works in double. The root path "" is not patchable; the result must
// stay an object.

// Applies `ops` to `body` in memory, by the rules above: the body a Patch of `ops` would leave, for a
// caller that replaces a document it read (conditioned on that read's etag) and so keeps the patch
// work out of the engine's write, which may run one at a time. The error a Patch would fail with; `body`
// may then be partly changed (patch a copy).
Status ApplyPatchOps(json::value& body, const std::vector<PatchOp>& ops);

struct BatchResult {
  // One entry per operation when the batch committed: the document after the operation (for kDelete,
  // the id and partition key only; for kRead, the document read).
  std::vector<Document> documents;
};

// The error of a failed batch names the failing operation: its message starts with "operation 3: "
// and keeps the operation's error code; FailedBatchIndex() returns the index (nullopt for errors that
// belong to no operation, such as a stale fence or an I/O error at commit).
std::optional<size_t> FailedBatchIndex(const Error& e);
// Builds that error; engines use it so that FailedBatchIndex() works for all of them.
Error BatchOperationError(size_t index, const Error& cause);

// The body members a store indexes, named by the caller as JSON pointers (RFC 6901) into the body;
// an empty pointer indexes nothing in that place. Only a string value is indexed: a body without the
// member, or with another kind of value there, has no value in that index. The engines keep one column
// per member, so the set of places is fixed; what fills them is the caller's. The values are taken
// when a document is written: a database must be opened with the same IndexSpec every time (a
// changed one applies to documents written after the change only).
struct IndexSpec {
  std::string resource_type;  // kept lower-cased; QueryOptions::resource_type
  std::string resource_id;    // kept lower-cased; QueryOptions::resource_id and resource_id_prefix
  std::string status;         // kept as written; QueryOptions::non_terminal_only
  // The status values that end a document's activity (compared case-insensitively): a document whose
  // status is present and none of these is active.
  std::vector<std::string> terminal_statuses;
};

// All filters given must hold (AND). Only live (unexpired) documents are returned. A filter on a
// member that the store's IndexSpec leaves empty is kInvalidArgument.
struct QueryOptions {
  std::string container;
  std::optional<std::string> partition_key;       // nullopt: across partitions (needs resource_type)
  std::optional<std::string> resource_type;       // case-insensitive equality
  std::optional<std::string> resource_id;         // case-insensitive equality
  std::optional<std::string> resource_id_prefix;  // case-insensitive prefix
  bool non_terminal_only = false;                 // active documents only (IndexSpec::status)
  size_t max_items = 100;                         // > 0; a page may hold fewer even when more follow
  std::string continuation;  // from a previous page of the same query; empty starts at the beginning
  // Return each body as its stored text (Document::body_text, `body` null) instead of parsed: for a
  // reader that often needs only the id and etag (a cache keyed by them) and parses the rest only
  // when it must. Parsing a page of large bodies costs more than reading them. A body that is not
  // JSON then fails ParseBodyText(), not the query.
  bool body_text = false;
};

struct QueryPage {
  std::vector<Document> documents;  // ordered by (partition_key, id)
  std::string continuation;         // empty when there are no more pages
};

struct Change {
  enum class Kind { kCreate, kReplace, kDelete, kExpire };
  Kind kind;
  // Strictly increasing in commit order within the container (not necessarily consecutive: the SQLite
  // engine numbers the changes of all containers with one sequence).
  uint64_t sequence = 0;
  // After the write; for kDelete/kExpire the last committed version (body, etag, timestamp, ttl).
  Document document;
};

struct ChangePage {
  std::vector<Change> changes;
  std::string continuation;  // resumes after the last change returned (or where the caller was)
};

inline const char* ChangeKindName(Change::Kind k) {
  switch (k) {
    case Change::Kind::kCreate:
      return "create";
    case Change::Kind::kReplace:
      return "replace";
    case Change::Kind::kDelete:
      return "delete";
    case Change::Kind::kExpire:
      return "expire";
  }
  return "unknown";
}

struct Lease {
  std::string container;
  std::string partition_key;
  std::string name;
  std::string owner;
  std::string etag;
  uint64_t fencing_token = 0;  // strictly greater than every earlier acquisition of this lease
  TimePoint expires_at;
};

// The store interface. Engines: SQLite (sqlite/) and PostgreSQL (postgres/).
class Store {
 public:
  virtual ~Store() = default;

  // Point operations on one document. Bodies must be JSON objects (else kInvalidArgument). Replace and
  // Upsert set the ttl to `ttl_seconds` (nullopt: no ttl). Upsert with if_match on an absent document
  // is kPreconditionFailed; Replace, Delete and Patch of an absent document are kNotFound.
  virtual Result<Document> Read(std::string_view container, std::string_view pk, std::string_view id) = 0;
  // Read, with the body as the store keeps it (Document::body_text; `body` null), as a query with
  // QueryOptions::body_text returns it: for a reader that answers from a cache keyed by id and etag
  // and parses the body only on a miss. The default reads and serializes; the engines skip the parse.
  // A body that is not JSON fails ParseBodyText(), not the read.
  virtual Result<Document> ReadText(std::string_view container, std::string_view pk, std::string_view id);
  virtual Result<Document> Create(std::string_view container, std::string_view pk, std::string_view id,
                                  json::value body, std::optional<int64_t> ttl_seconds = std::nullopt) = 0;
  virtual Result<Document> Replace(std::string_view container, std::string_view pk, std::string_view id,
                                   json::value body, std::optional<std::string> if_match = std::nullopt,
                                   std::optional<int64_t> ttl_seconds = std::nullopt) = 0;
  virtual Result<Document> Upsert(std::string_view container, std::string_view pk, std::string_view id,
                                  json::value body, std::optional<std::string> if_match = std::nullopt,
                                  std::optional<int64_t> ttl_seconds = std::nullopt) = 0;
  virtual Status Delete(std::string_view container, std::string_view pk, std::string_view id,
                        std::optional<std::string> if_match = std::nullopt) = 0;
  virtual Result<Document> Patch(std::string_view container, std::string_view pk, std::string_view id,
                                 std::vector<PatchOp> ops, std::vector<Condition> conditions = {},
                                 std::optional<std::string> if_match = std::nullopt) = 0;

  // All operations commit together or none does (one transaction, one sync; on SQLite concurrent
  // batches may share that transaction and sync, each keeping its own outcome, and none returns
  // before the commit is durable). Operations with WriteOp::container set write to that container
  // in the same partition. If `fence` is given, the batch also requires that lease to be held with
  // exactly that fencing token and unexpired.
  virtual Result<BatchResult> Batch(std::string_view container, std::string_view pk, std::vector<WriteOp> ops,
                                    const Lease* fence = nullptr) = 0;

  // kInvalidArgument without partition_key and resource_type, or with a continuation that this query
  // did not return.
  virtual Result<QueryPage> Query(const QueryOptions& options) = 0;
  // Partition keys that hold at least one live document in the container, paged like Query: one
  // Document per partition with only partition_key set, in bytewise order.
  virtual Result<QueryPage> ListPartitions(std::string_view container, size_t max_items,
                                           std::string_view continuation) = 0;

  // Change feed. An empty continuation starts at the beginning of the feed; "now" starts after the
  // latest committed change. The continuation returned is never "now": it is a position that resumes
  // exactly after what was returned. Another string is kInvalidArgument.
  virtual Result<ChangePage> ReadChanges(std::string_view container, std::string_view continuation,
                                         size_t max_changes) = 0;
  // Blocks until the feed has a change after `continuation` or `timeout` passes (real time, not the
  // Clock). Returns true when changes are available. Never spins.
  virtual Result<bool> WaitForChanges(std::string_view container, std::string_view continuation,
                                      std::chrono::milliseconds timeout) = 0;

  // Leases (Cloud Distributed Lock). Acquire fails with kConflict while anyone (the same owner
  // included) holds an unexpired lease; an expired or released lease can be taken by anyone, with a
  // fencing_token one above the last one given for that name (the counter survives release).
  // Renew and Release require the etag of the caller's latest Lease (kPreconditionFailed when it is
  // stale: renewed elsewhere, taken over, released). Renew also fails once the lease has expired.
  // ttl must be > 0 (kInvalidArgument).
  virtual Result<Lease> AcquireLease(std::string_view container, std::string_view pk, std::string_view name,
                                     std::string_view owner, std::chrono::milliseconds ttl) = 0;
  virtual Result<Lease> RenewLease(const Lease& lease, std::chrono::milliseconds ttl) = 0;
  virtual Status ReleaseLease(const Lease& lease) = 0;

  // Removes expired documents of every container (each recorded in the change feed as kExpire), in
  // transactions of bounded size, then the changes older than OpenOptions::change_retention.
  // Returns how many documents.
  virtual Result<size_t> PurgeExpired() = 0;
};

// Runs `options` page by page and calls `fn` for every document. Stops at the first failed page and
// returns its error (the documents of earlier pages were seen).
Status ForEachDocument(Store& store, QueryOptions options, const std::function<void(const Document&)>& fn);

struct OpenOptions {
  const Clock* clock = nullptr;  // required; not owned, outlives the store
  // What the store indexes (empty: nothing). kInvalidArgument at open for a malformed pointer.
  IndexSpec indexes;
  // How long a write waits for a lock held by another process before kUnavailable.
  std::chrono::milliseconds busy_timeout{5000};
  // A background sweeper that calls PurgeExpired() at this interval; zero disables it.
  std::chrono::milliseconds purge_interval{0};
  // PurgeExpired() also removes changes written longer ago than this (by the Clock); zero keeps
  // every change.
  std::chrono::seconds change_retention{0};
  // And, when > 0, every change but about the newest `change_retention_changes` (SQLite: of the
  // whole store, whose containers share one sequence; PostgreSQL: of each container), oldest first:
  // retention by size as well as by time. A reader behind removed changes gets kOutOfRange.
  uint64_t change_retention_changes = 0;
};

// Opens the engine named by the URL:
//   sqlite:///abs/path/to/file.db    SQLite file (created if missing); percent-escapes are decoded.
//                                    "?vfs=NAME" selects a registered SQLite VFS (tests, benchmarks).
//   sqlite::memory:                  private in-memory SQLite database (tests); one connection
//   postgresql://user@host:port/db   PostgreSQL
// Errors: kInvalidArgument for a malformed URL, a missing clock or a malformed IndexSpec; kCorruption for a
// file that is not an SQLite database or not an hcprp store; kIoError for a path that cannot be opened (a
// directory, a missing parent directory, no permission); kUnavailable when the file stays locked by
// another connection past busy_timeout.
Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const OpenOptions& options);

// Continuation value meaning "after everything committed so far".
inline constexpr std::string_view kChangeFeedNow = "now";

}  // namespace hcprp::store
