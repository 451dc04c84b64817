// The write semantics every store engine shares, written once over a small set of row primitives
// that each engine implements in its own SQL (not part of the store's public interface; callers use
// store.h). An engine opens a transaction, wraps it in its RowTx, checks a batch's fence, and hands
// the operations to ApplyWrite; what a create, replace, upsert, delete, patch or read means (which
// errors, which change feed records, what the returned Document holds) is decided here alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "store/document_logic.h"
#include "store/store.h"

namespace hcprp::store::internal {

// One write transaction of an engine, seen as rows. Every call runs inside that transaction; an
// error from any of them ends the write (the engine rolls back). Not thread-safe: one transaction,
// one thread.
class RowTx {
 public:
  virtual ~RowTx() = default;

  // The transaction's time (the store clock's milliseconds, read once when it began).
  virtual int64_t Now() const = 0;

  // The stored row of a document, live or expired; nullopt when there is none. An engine with
  // concurrent writers locks the row for the rest of the transaction.
  virtual Result<std::optional<StoredRow>> LoadRow(std::string_view container, std::string_view pk,
                                                   std::string_view id) = 0;
  // Inserts version `v`; false (and nothing written) when a row with that key exists, live or not.
  virtual Result<bool> InsertRow(std::string_view container, std::string_view pk, std::string_view id,
                                 const Version& v) = 0;
  // Replaces the live row with version `v` if its etag is `required_etag` (nullptr: any etag); false
  // when no such live row exists.
  virtual Result<bool> UpdateRow(std::string_view container, std::string_view pk, std::string_view id,
                                 const Version& v, const std::string* required_etag) = 0;
  // Deletes the live row if its etag is `required_etag` (nullptr: any etag) and returns it (without
  // expires_at); nullopt when no such live row exists.
  virtual Result<std::optional<StoredRow>> DeleteRow(std::string_view container, std::string_view pk,
                                                     std::string_view id,
                                                     const std::string* required_etag) = 0;
  // Deletes the row whatever its state (used for an expired row in the way of a create).
  virtual Status DeleteAnyRow(std::string_view container, std::string_view pk, std::string_view id) = 0;
  // Appends a change of kind kKind* to the container's change feed, committed with the transaction.
  // `body` empty for a create or replace: the feed reads the body from the document while that
  // version is current.
  virtual Status AppendChange(std::string_view container, int kind, std::string_view pk, std::string_view id,
                              std::string body, std::string etag, int64_t ts,
                              const std::optional<int64_t>& ttl) = 0;
};

// The parts of the version a create, replace or upsert writes that do not depend on what is stored
// (the serialised body, a fresh etag, the fields `indexer` extracts); nullopt for the other kinds. Made
// before the transaction: a group commit applies its members one after another on one connection, and this
// work need not wait in that line.
std::optional<Version> PrepareVersion(const WriteOp& op, const DocumentIndexer& indexer);

// Applies one operation of a batch addressed to `container` and partition `pk` (an operation that
// names another container writes there). REQUIRES: `op` passed ValidateOp. `prepared` is
// PrepareVersion(op, indexer), or nullopt to make the version inside the transaction. With `consume`, the
// operation's body is moved into the returned Document and the prepared version into the row (an engine that
// never reruns a transaction); without, both are copied so that the engine may apply `op` again after a
// retryable failure.
Result<Document> ApplyWrite(RowTx& tx, std::string_view container, std::string_view pk, WriteOp& op,
                            std::optional<Version>& prepared, bool consume, const DocumentIndexer& indexer);

// The document of a stored row as a read returns it (kCorruption when the body is not JSON).
Result<Document> DocumentFromRow(std::string_view pk, std::string_view id, std::string_view body,
                                 std::string etag, int64_t ts, std::optional<int64_t> ttl);
// The document of a stored row: with `body_text` its body as stored text (never fails), otherwise as
// DocumentFromRow.
Result<Document> DocumentFromRow(bool body_text, std::string_view pk, std::string_view id,
                                 std::string_view body, std::string etag, int64_t ts,
                                 std::optional<int64_t> ttl);
// The same for a row read whole (its body moved into body_text).
Result<Document> DocumentFromRow(bool body_text, std::string_view pk, std::string_view id, StoredRow row);

// Query shapes: which optional filters a query has (bits of a statement cache key). Every shape shares
// one parameter numbering: 1 container, 2 pk, 3 resource_type, 4 resource_id, 5 prefix, 6 prefix
// upper bound, 7 now, 8 after pk, 9 after id, 10 limit.
inline constexpr int kQueryPartition = 1, kQueryType = 2, kQueryRid = 4, kQueryPrefix = 8,
                     kQueryPrefixUpper = 16, kQueryActive = 32, kQueryAfter = 64, kQueryShapes = 128;

// The SQL of query shape `shape` (a valid shape has kQueryPartition or kQueryType, and
// kQueryPrefixUpper only with kQueryPrefix): parameters are written `mark` and their number ('?' for
// SQLite, '$' for PostgreSQL) and `active` is the condition of kQueryActive.
std::string QuerySql(int shape, char mark, std::string_view active);

// A Query's optional filters and continuation, decided once for every engine: the shape and the
// value of each parameter the shape uses (nullopt for the others).
struct QueryPlan {
  int shape = 0;
  std::optional<std::string> partition_key;
  std::optional<std::string> resource_type;  // lower-cased
  std::optional<std::string> resource_id;    // lower-cased
  std::optional<std::string> prefix;         // lower-cased
  std::optional<std::string> prefix_upper;   // exclusive upper bound of the prefix
  std::optional<std::string> after_pk, after_id;
  int64_t now = 0;    // the store clock's milliseconds: documents expiring later are live
  int64_t limit = 0;  // rows to read: one more than the page holds, to know whether more follow
};
// REQUIRES: ValidateQuery(options) passed. kInvalidArgument for a bad continuation or one from
// another partition.
Result<QueryPlan> PlanQuery(const QueryOptions& options, int64_t now);

// Collects the rows of one page of a query or of ListPartitions: up to `max_items` entries; the row
// after them is not taken, it ends the page with a continuation after the last entry taken.
class PageBuilder {
 public:
  explicit PageBuilder(size_t max_items) : max_items_(max_items) {}

  // Adds the document of a query row (`body_text`: its body as stored text, else parsed); false
  // once the page is full. kCorruption for a body that is not JSON.
  Result<bool> AddDocument(bool body_text, std::string_view pk, std::string_view id, std::string_view body,
                           std::string etag, int64_t ts, std::optional<int64_t> ttl);
  // Adds a partition key of ListPartitions; false once the page is full.
  bool AddPartition(std::string pk);

  QueryPage Take() && { return std::move(page_); }

 private:
  const size_t max_items_;
  QueryPage page_;
};

// The change of a feed row as a read returns it (kCorruption when the body is not JSON).
Result<Change> ChangeFromRow(uint64_t sequence, int64_t kind, std::string pk, std::string id,
                             std::string_view body, std::string etag, int64_t ts, std::optional<int64_t> ttl);

// The arguments of ListPartitions: kInvalidArgument for an empty container, max_items 0 or a bad
// token; otherwise the partition key to continue after (nullopt: from the start).
Result<std::optional<std::string>> ListPartitionsStart(std::string_view container, size_t max_items,
                                                       std::string_view continuation);

// Leases. The stored state of a lease as both engines keep it, and the decisions made on it.
struct LeaseState {
  std::optional<std::string> owner;  // nullopt: released
  uint64_t fencing_token = 0;
  int64_t expires_at = 0;  // milliseconds
};
// True while a lease in `state` is held by its owner at `now`.
bool LeaseHeldAt(const std::optional<LeaseState>& state, int64_t now);
// kPreconditionFailed unless `fence` is still held at `now`: same owner and fencing token, not
// expired. `state` nullopt: the lease was never taken.
Status CheckFenceState(const Lease& fence, const std::optional<LeaseState>& state, int64_t now);
// kInvalidArgument for an empty container or a ttl that is not positive.
Status ValidateLeaseArgs(std::string_view container, std::chrono::milliseconds ttl);
// A lease granted at `now` for `ttl` (fresh etag; fencing token left 0 for the engine to set).
Lease NewLease(std::string_view container, std::string_view pk, std::string_view name, std::string_view owner,
               int64_t now, std::chrono::milliseconds ttl);
// kConflict: the lease is held by `holder` (already printable).
Error LeaseHeld(std::string_view container, std::string_view pk, std::string_view name,
                std::string_view holder);
// kPreconditionFailed: a renew (`renewing`) or release found the lease no longer ours.
Error LeaseLost(const Lease& lease, bool renewing);

}  // namespace hcprp::store::internal
