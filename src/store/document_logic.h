// Engine-independent document logic shared by the store engines (not part of the store's public
// interface; callers use store.h): JSON pointers, patch operations, conditions, preconditions, the
// indexed fields extracted on write, and continuation tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/result.h"
#include "store/store.h"

namespace hcprp::store::internal {

// The reference tokens of an RFC 6901 JSON pointer ("" -> no tokens). kInvalidArgument when the
// pointer does not start with '/' or has a bad escape ("~2", trailing "~").
Result<std::vector<std::string>> ParseJsonPointer(std::string_view pointer);

// Applies `ops` in order to `body` (an object); the result must pass ValidateBody. On error `body`
// may be partly modified: callers patch a copy.
Status ApplyPatch(json::value& body, const std::vector<PatchOp>& ops);

// kPreconditionFailed naming the first condition that does not hold (`body` nullptr: the document
// is absent, so every path is absent); kInvalidArgument for a bad pointer.
Status CheckConditions(const json::value* body, const std::vector<Condition>& conditions);

// kPreconditionFailed unless `if_match` is unset, "*" with a live document, or equal to `etag`.
// `etag` nullptr: the document is absent.
Status CheckIfMatch(const std::optional<std::string>& if_match, const std::string* etag);

// kInvalidArgument unless `body` is a JSON object that can be stored and read back: no NaN or
// infinite number (Boost.JSON would write them as bare NaN/Infinity, which no parser accepts) and
// nesting at most kMaxBodyDepth deep. Iterative, so any depth is safe to check.
Status ValidateBody(const json::value& body);
inline constexpr size_t kMaxBodyDepth = 512;
// kInvalidArgument unless unset or in (0, kMaxTtlSeconds].
Status ValidateTtl(const std::optional<int64_t>& ttl_seconds);
inline constexpr int64_t kMaxTtlSeconds = int64_t{100} * 365 * 24 * 3600;

// Argument checks every engine makes before touching its database.
Status CheckContainer(std::string_view container);  // kInvalidArgument when empty
Status ValidateOp(const WriteOp& op);               // bodies, ttls, what a create may carry
// The container and every operation; an operation's error names its index (BatchOperationError).
Status ValidateBatch(std::string_view container, const std::vector<WriteOp>& ops);
Status ValidateQuery(const QueryOptions& options);  // container, partition or type, max_items

// The members an IndexSpec names, extracted from a body on write.
struct IndexedFields {
  std::optional<std::string> resource_type;  // lower-cased
  std::optional<std::string> resource_id;    // lower-cased
  std::optional<std::string> status;         // as stored
  bool non_terminal = false;                 // status present and none of the terminal statuses
};

// An IndexSpec ready for the write path: its pointers parsed once, when the store opens. Immutable
// after Make, so safe to share between threads.
class DocumentIndexer {
 public:
  DocumentIndexer() = default;  // indexes nothing
  // kInvalidArgument naming the member whose pointer is malformed.
  static Result<DocumentIndexer> Make(const IndexSpec& spec);

  IndexedFields Extract(const json::value& body) const;
  // kInvalidArgument when `options` filters on a member this indexer does not index.
  Status CheckQuery(const QueryOptions& options) const;

 private:
  // The reference tokens of each member's pointer; nullopt when the spec leaves it empty.
  std::optional<std::vector<std::string>> resource_type_, resource_id_, status_;
  std::vector<std::string> terminal_statuses_;
};

// The stored row of a document, live or expired (timestamps in milliseconds).
struct StoredRow {
  std::string body;
  std::string etag;
  int64_t ts = 0;
  std::optional<int64_t> ttl;
  std::optional<int64_t> expires_at;
  bool Live(int64_t now) const { return !expires_at || *expires_at > now; }
};

// A new version of a document about to be written: serialised body, fresh etag, indexed fields.
struct Version {
  std::string body;
  std::string etag;
  int64_t ts = 0;
  std::optional<int64_t> ttl;
  IndexedFields fields;
  std::optional<int64_t> ExpiresAt() const {
    return ttl ? std::optional<int64_t>(ts + *ttl * 1000) : std::nullopt;
  }
};
Version MakeVersion(const json::value& body, std::optional<int64_t> ttl, int64_t now,
                    const DocumentIndexer& indexer);
// The Document a write returns: `body` with the version's etag, timestamp and ttl.
Document MakeDocument(std::string_view pk, std::string_view id, json::value body, const Version& v);

// The exclusive upper bound of the strings that start with `prefix` (bytewise), or nullopt when
// there is none (the prefix is empty or all 0xFF).
std::optional<std::string> PrefixUpperBound(std::string_view prefix);

// Query continuation tokens: the (partition key, id) of the last document returned, hex-encoded
// ("q1.<hex pk>.<hex id>"), and the partition key of ListPartitions ("p1.<hex pk>").
std::string EncodeQueryContinuation(std::string_view pk, std::string_view id);
Result<std::pair<std::string, std::string>> DecodeQueryContinuation(std::string_view token);
std::string EncodePartitionContinuation(std::string_view pk);
Result<std::string> DecodePartitionContinuation(std::string_view token);

// Change feed positions: "" -> 0, "now" -> nullopt (the caller resolves it), decimal sequence.
Result<std::optional<uint64_t>> DecodeChangeContinuation(std::string_view token);
std::string EncodeChangeContinuation(uint64_t sequence);
// The error of a read whose position is behind changes that retention removed (kOutOfRange).
Error FeedPositionExpired(std::string_view container);

// Names for messages (ids, keys and container names may hold any byte: the others are escaped).
std::string Printable(std::string_view s);
std::string DocName(std::string_view container, std::string_view pk, std::string_view id);
std::string LeaseName(std::string_view container, std::string_view pk, std::string_view name);

// A stored body read back: kCorruption when it is not JSON. Accepts what ValidateBody lets in (the
// same depth limit, kMaxBodyDepth, on write and on read) and invalid UTF-8 as stored.
Result<json::value> ParseStoredBody(std::string_view text);

// Change kinds as both engines store them (the values of Change::Kind, in its order).
inline constexpr int kKindCreate = 0, kKindReplace = 1, kKindDelete = 2, kKindExpire = 3;
Change::Kind ChangeKindFromInt(int64_t k);

// A new etag: 128 random bits as a UUID-shaped string. Thread-safe and cheap (a per-thread PRNG).
std::string NewEtag();

// A Store whose point writes are one-operation batches: an engine implements WriteOne (which must
// have Batch's semantics for a single operation) and gets Create, Replace, Upsert, Delete and Patch.
class PointWritesAsBatches : public Store {
 public:
  Result<Document> Create(std::string_view container, std::string_view pk, std::string_view id,
                          json::value body, std::optional<int64_t> ttl_seconds) final {
    return WriteOne(container, pk, WriteOp::Create(std::string(id), std::move(body), ttl_seconds));
  }
  Result<Document> Replace(std::string_view container, std::string_view pk, std::string_view id,
                           json::value body, std::optional<std::string> if_match,
                           std::optional<int64_t> ttl_seconds) final {
    WriteOp op = WriteOp::Replace(std::string(id), std::move(body), std::move(if_match));
    op.ttl_seconds = ttl_seconds;
    return WriteOne(container, pk, std::move(op));
  }
  Result<Document> Upsert(std::string_view container, std::string_view pk, std::string_view id,
                          json::value body, std::optional<std::string> if_match,
                          std::optional<int64_t> ttl_seconds) final {
    WriteOp op = WriteOp::Upsert(std::string(id), std::move(body), std::move(if_match));
    op.ttl_seconds = ttl_seconds;
    return WriteOne(container, pk, std::move(op));
  }
  Status Delete(std::string_view container, std::string_view pk, std::string_view id,
                std::optional<std::string> if_match) final {
    HCPRP_RETURN_IF_ERROR(WriteOne(container, pk, WriteOp::Delete(std::string(id), std::move(if_match))));
    return Status::Ok();
  }
  Result<Document> Patch(std::string_view container, std::string_view pk, std::string_view id,
                         std::vector<PatchOp> ops, std::vector<Condition> conditions,
                         std::optional<std::string> if_match) final {
    return WriteOne(
        container, pk,
        WriteOp::Patch(std::string(id), std::move(ops), std::move(conditions), std::move(if_match)));
  }

 protected:
  virtual Result<Document> WriteOne(std::string_view container, std::string_view pk, WriteOp op) = 0;
};

}  // namespace hcprp::store::internal
