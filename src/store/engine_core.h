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

// Applies one operation of a batch addressed to `container` and partition `pk` (an operation that
// names another container writes there). REQUIRES: `op` passed ValidateOp. With `consume`, the
// operation's body is moved into the returned Document (an engine that never reruns a transaction);
// without, it is copied so that the engine may apply `op` again after a retryable failure.
Result<Document> ApplyWrite(RowTx& tx, std::string_view container, std::string_view pk, WriteOp& op,
                            bool consume);

// The document of a stored row as a read returns it (kCorruption when the body is not JSON).
Result<Document> DocumentFromRow(std::string_view pk, std::string_view id, std::string_view body,
                                 std::string etag, int64_t ts, std::optional<int64_t> ttl);
// The document of a stored row: with `body_text` its body as stored text (never fails), otherwise as
// DocumentFromRow.
Result<Document> DocumentFromRow(bool body_text, std::string_view pk, std::string_view id,
                                 std::string_view body, std::string etag, int64_t ts,
                                 std::optional<int64_t> ttl);
// The document of a row of a query: with options.body_text its body as stored text (never fails),
// otherwise as DocumentFromRow.
Result<Document> QueryDocumentFromRow(const QueryOptions& options, std::string_view pk, std::string_view id,
                                      std::string_view body, std::string etag, int64_t ts,
                                      std::optional<int64_t> ttl);

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
