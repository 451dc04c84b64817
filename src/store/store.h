// The partitioned JSON document store: the one header that says what the store offers.
//
// Semantics (both engines, see docs/architecture.md "Store"):
//  - A store holds named containers. A document lives in one container and one partition and is
//    addressed by (partition_key, id). Ids and partition keys are arbitrary byte strings.
//  - Every successful write gives the document a new etag and a commit timestamp.
//  - A document with `ttl_seconds` expires at commit time + ttl (by the store's Clock). An expired
//    document is invisible to every read and query at once; PurgeExpired() removes it and records the
//    removal in the change feed.
//  - Queries run inside one partition, except ListPartitions() and cross-partition type queries.
//  - Batches are all-or-nothing inside one partition of one container.
//  - The change feed of a container lists every committed create, replace and delete (purges
//    included) in commit order; a continuation token resumes it; nothing is skipped when writers
//    commit concurrently.
//  - Leases give mutual exclusion with expiry and a fencing number that only grows.
//
// Well-known body fields the store indexes (documents need not have them):
//   /resourceType             compared lower-cased (QueryOptions::resource_type)
//   /properties/resourceId    compared case-insensitively (QueryOptions::resource_id, ..._prefix)
//   /properties/status        operation status (QueryOptions::non_terminal_only)
//
// Thread-safety: a Store is safe to use from many threads at once.
#pragma once

#include <chrono>
#include <cstdint>
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
};

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
  json::value body;                    // kCreate, kReplace, kUpsert
  std::optional<int64_t> ttl_seconds;  // kCreate, kReplace, kUpsert (kPatch keeps the current ttl)
  std::optional<std::string> if_match; // kReplace, kUpsert, kDelete, kPatch, kRead
  std::vector<PatchOp> patch;          // kPatch
  std::vector<Condition> conditions;   // kReplace, kDelete, kPatch: checked against the current body

  static WriteOp Create(std::string id, json::value body, std::optional<int64_t> ttl = std::nullopt);
  static WriteOp Replace(std::string id, json::value body, std::optional<std::string> if_match = std::nullopt);
  static WriteOp Upsert(std::string id, json::value body, std::optional<std::string> if_match = std::nullopt);
  static WriteOp Delete(std::string id, std::optional<std::string> if_match = std::nullopt);
  static WriteOp Patch(std::string id, std::vector<PatchOp> ops, std::vector<Condition> conditions = {});
  // A read inside a batch; with if_match it is an assertion that the document is unchanged.
  static WriteOp Read(std::string id, std::optional<std::string> if_match = std::nullopt);
};

// Errors of store calls (Error::code()):
//   kNotFound            the document does not exist (or expired)
//   kAlreadyExists       create of an existing document
//   kPreconditionFailed  if_match or a Condition did not hold, or a lease fence was stale
//   kInvalidArgument     malformed input (bad JSON pointer, body not an object, ...)
//   kUnavailable         the engine cannot be reached (PostgreSQL down, SQLite busy past timeout)
//   kIoError, kCorruption the engine failed; nothing was committed

struct BatchResult {
  // One entry per operation when the batch committed: the document after the operation (for kDelete,
  // the id and partition key only; for kRead, the document read).
  std::vector<Document> documents;
};

// The error of a failed batch names the failing operation: "operation 3: ..." and
// BatchError::index is reported through Error::message and FailedBatchIndex().
std::optional<size_t> FailedBatchIndex(const Error& e);

struct QueryOptions {
  std::string container;
  std::optional<std::string> partition_key;  // nullopt: across partitions (needs resource_type)
  std::optional<std::string> resource_type;
  std::optional<std::string> resource_id;         // case-insensitive equality
  std::optional<std::string> resource_id_prefix;  // case-insensitive prefix
  bool non_terminal_only = false;  // /properties/status present and not Succeeded, Failed or Canceled
  size_t max_items = 100;
  std::string continuation;  // from a previous page; empty starts at the beginning
};

struct QueryPage {
  std::vector<Document> documents;  // ordered by (partition_key, id)
  std::string continuation;         // empty when there are no more pages
};

struct Change {
  enum class Kind { kCreate, kReplace, kDelete, kExpire };
  Kind kind;
  uint64_t sequence = 0;  // commit order within the container
  Document document;      // after the write; for kDelete/kExpire the last committed body
};

struct ChangePage {
  std::vector<Change> changes;
  std::string continuation;  // resumes after the last change returned (or where the caller was)
};

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

  // Point operations on one document.
  virtual Result<Document> Read(std::string_view container, std::string_view pk, std::string_view id) = 0;
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

  // All operations commit together or none does (one transaction, one sync). If `fence` is given,
  // the batch also requires that lease to be held with exactly that fencing token and unexpired.
  virtual Result<BatchResult> Batch(std::string_view container, std::string_view pk, std::vector<WriteOp> ops,
                                    const Lease* fence = nullptr) = 0;

  virtual Result<QueryPage> Query(const QueryOptions& options) = 0;
  // Partition keys that hold at least one live document in the container, paged like Query.
  virtual Result<QueryPage> ListPartitions(std::string_view container, size_t max_items,
                                           std::string_view continuation) = 0;

  // Change feed. An empty continuation starts at the beginning of the feed; "now" starts after the
  // latest committed change.
  virtual Result<ChangePage> ReadChanges(std::string_view container, std::string_view continuation,
                                         size_t max_changes) = 0;
  // Blocks until the feed has a change after `continuation` or `timeout` passes (real time, not the
  // Clock). Returns true when changes are available. Never spins.
  virtual Result<bool> WaitForChanges(std::string_view container, std::string_view continuation,
                                      std::chrono::milliseconds timeout) = 0;

  // Leases (Cloud Distributed Lock). Acquire fails with kConflict while another owner holds an
  // unexpired lease; Renew and Release require the etag of the caller's Lease (kPreconditionFailed
  // when someone else took it meanwhile).
  virtual Result<Lease> AcquireLease(std::string_view container, std::string_view pk, std::string_view name,
                                     std::string_view owner, std::chrono::milliseconds ttl) = 0;
  virtual Result<Lease> RenewLease(const Lease& lease, std::chrono::milliseconds ttl) = 0;
  virtual Status ReleaseLease(const Lease& lease) = 0;

  // Removes expired documents (each recorded in the change feed as kExpire). Returns how many.
  virtual Result<size_t> PurgeExpired() = 0;
};

struct OpenOptions {
  const Clock* clock = nullptr;  // required; not owned, outlives the store
  // How long a write waits for a lock held by another process before kUnavailable.
  std::chrono::milliseconds busy_timeout{5000};
  // A background sweeper that calls PurgeExpired() at this interval; zero disables it.
  std::chrono::milliseconds purge_interval{0};
};

// Opens the engine named by the URL:
//   sqlite:///abs/path/to/file.db    SQLite file (created if missing)
//   sqlite::memory:                  private in-memory SQLite database (tests)
//   postgresql://user@host:port/db   PostgreSQL
Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const OpenOptions& options);

// Continuation value meaning "after everything committed so far".
inline constexpr std::string_view kChangeFeedNow = "now";

}  // namespace hcprp::store
