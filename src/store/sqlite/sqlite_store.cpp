#include "store/sqlite/sqlite_store.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "store/document_logic.h"
#include "store/sqlite/change_watcher.h"
#include "store/sqlite/connection.h"
#include "store/sqlite/sql.h"

namespace hcprp::store::sqlite {
namespace {

using internal::ChangeKindFromInt;
using internal::CheckContainer;
using internal::DocName;
using internal::FromMillis;
using internal::IndexedFields;
using internal::LeaseName;
using internal::MakeDocument;
using internal::MakeVersion;
using internal::ParseStoredBody;
using internal::Printable;
using internal::StoredRow;
using internal::ToMillis;
using internal::ValidateOp;
using internal::Version;

constexpr size_t kMaxReaders = 32;
// The most writes one group commit takes (bounds the latency a write adds to the others).
constexpr size_t kMaxGroup = 64;
constexpr int64_t kPurgeChunk = 512;

struct Target {
  std::string path;  // ":memory:" for the in-memory database
  std::string vfs;
  bool memory = false;
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return Error::InvalidArgument("bad percent-escape in URL");
    int hi = HexDigit(s[i + 1]), lo = HexDigit(s[i + 2]);
    if (hi < 0 || lo < 0) return Error::InvalidArgument("bad percent-escape in URL");
    out += static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return out;
}

Result<Target> ParseUrl(std::string_view url) {
  Target t;
  std::string_view rest = url;
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (rest == "sqlite::memory:") {
    t.memory = true;
    t.path = ":memory:";
  } else if (rest.substr(0, 10) == "sqlite:///") {
    auto path = PercentDecode(rest.substr(9));
    if (!path.ok()) return path.error();
    if (path->size() < 2 || path->back() == '/') {
      return Error::InvalidArgument("store URL \"" + std::string(url) + "\" does not name a file");
    }
    if (path->find('\0') != std::string::npos) return Error::InvalidArgument("store URL has a NUL byte");
    t.path = std::move(*path);
  } else {
    return Error::InvalidArgument("bad SQLite store URL \"" + std::string(url) +
                                  "\": expected sqlite:///absolute/path.db or sqlite::memory:");
  }
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    size_t eq = kv.find('=');
    std::string_view key = kv.substr(0, eq);
    auto value = PercentDecode(eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1));
    if (!value.ok()) return value.error();
    if (key == "vfs") {
      if (sqlite3_vfs_find(value->c_str()) == nullptr) {
        return Error::InvalidArgument("store URL names an unknown SQLite VFS \"" + *value + "\"");
      }
      t.vfs = std::move(*value);
    } else {
      return Error::InvalidArgument("unknown store URL parameter \"" + std::string(key) + "\"");
    }
  }
  return t;
}

// A write transaction in progress on the writer connection.
struct Tx {
  Connection& c;
  int64_t now;
  bool feed_changed = false;
};

#define HCPRP_ASSIGN_STMT(var, conn, sql)                  \
  auto var##_prepared = (conn).Prepare(sql);               \
  if (!var##_prepared.ok()) return var##_prepared.error(); \
  Stmt var((conn).db(), *var##_prepared)

Result<std::optional<StoredRow>> LoadRow(Tx& tx, std::string_view container, std::string_view pk,
                                         std::string_view id) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kLoadDoc);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<StoredRow>();
  if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "load " + DocName(container, pk, id));
  StoredRow r;
  r.body = std::string(s.Text(0));
  r.etag = std::string(s.Text(1));
  r.ts = s.Int(2);
  r.ttl = s.OptInt(3);
  r.expires_at = s.OptInt(4);
  return std::optional<StoredRow>(std::move(r));
}

void BindVersion(Stmt& s, std::string_view container, std::string_view pk, std::string_view id,
                 const Version& v, const std::optional<int64_t>& expires_at) {
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  s.BindText(4, std::string_view(v.body));
  s.BindText(5, std::string_view(v.etag));
  s.BindInt(6, v.ts);
  s.BindOptInt(7, v.ttl);
  s.BindOptInt(8, expires_at);
  s.BindOptText(9, v.fields.resource_type);
  s.BindOptText(10, v.fields.resource_id);
  s.BindOptText(11, v.fields.status);
  s.BindInt(12, v.fields.non_terminal ? 1 : 0);
}

// True when inserted, false when a row with that key exists.
Result<bool> InsertDoc(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v) {
  auto expires_at = v.ExpiresAt();
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kInsertDoc);
  BindVersion(s, container, pk, id, v, expires_at);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return true;
  if ((rc & 0xff) == SQLITE_CONSTRAINT) return false;
  return SqliteError(tx.c.db(), rc, "insert " + DocName(container, pk, id));
}

// True when the live document (with etag `required_etag`, if given) was updated.
Result<bool> UpdateDoc(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v, const std::string* required_etag) {
  auto expires_at = v.ExpiresAt();
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kUpdateDoc);
  BindVersion(s, container, pk, id, v, expires_at);
  if (required_etag != nullptr) s.BindText(13, std::string_view(*required_etag));
  s.BindInt(14, tx.now);
  int rc = s.Step();
  if (rc != SQLITE_DONE) return SqliteError(tx.c.db(), rc, "update " + DocName(container, pk, id));
  return sqlite3_changes(tx.c.db()) > 0;
}

// The deleted live row, or nullopt when there was none (with that etag).
Result<std::optional<StoredRow>> DeleteDoc(Tx& tx, std::string_view container, std::string_view pk,
                                           std::string_view id, const std::string* required_etag) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kDeleteDoc);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  if (required_etag != nullptr) s.BindText(4, std::string_view(*required_etag));
  s.BindInt(5, tx.now);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<StoredRow>();
  if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "delete " + DocName(container, pk, id));
  StoredRow r;
  r.body = std::string(s.Text(0));
  r.etag = std::string(s.Text(1));
  r.ts = s.Int(2);
  r.ttl = s.OptInt(3);
  rc = s.Step();  // finishes the statement
  if (rc != SQLITE_DONE) return SqliteError(tx.c.db(), rc, "delete " + DocName(container, pk, id));
  return std::optional<StoredRow>(std::move(r));
}

Status InsertChange(Tx& tx, std::string_view container, int kind, std::string_view pk, std::string_view id,
                    std::string_view body, std::string_view etag, int64_t ts,
                    const std::optional<int64_t>& ttl) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kInsertChange);
  s.BindText(1, container);
  s.BindInt(2, kind);
  s.BindBlob(3, pk);
  s.BindBlob(4, id);
  s.BindText(5, body);
  s.BindText(6, etag);
  s.BindInt(7, ts);
  s.BindOptInt(8, ttl);
  int rc = s.Step();
  if (rc != SQLITE_DONE) return SqliteError(tx.c.db(), rc, "record change of " + DocName(container, pk, id));
  tx.feed_changed = true;
  return Status::Ok();
}

// A create or replace is recorded without its body (sql::kVersionInDocuments): the feed reads it from
// the document while that version is current and leaves the change out once it is superseded.
Status RecordVersion(Tx& tx, std::string_view container, int kind, std::string_view pk, std::string_view id,
                     const Version& v) {
  return InsertChange(tx, container, kind, pk, id, sql::kVersionInDocuments, v.etag, v.ts, v.ttl);
}

// Removes an expired row that is in the way of a write and records its expiry.
Status ExpireRow(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                 const StoredRow& row) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kDeleteAnyDoc);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, id);
  HCPRP_RETURN_IF_ERROR(s.Run("expire " + DocName(container, pk, id)));
  return InsertChange(tx, container, sql::kKindExpire, pk, id, row.body, row.etag, row.ts, row.ttl);
}

// The live row, or kNotFound.
Result<StoredRow> LoadLive(Tx& tx, std::string_view container, std::string_view pk, std::string_view id) {
  auto row = LoadRow(tx, container, pk, id);
  if (!row.ok()) return row.error();
  if (!*row || !(*row)->Live(tx.now)) return Error::NotFound(DocName(container, pk, id) + " does not exist");
  return std::move(**row);
}

// Why a fast-path conditional write matched nothing: absent (kNotFound, or kPreconditionFailed for
// an upsert) or another etag.
Error Diagnose(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
               const std::optional<std::string>& if_match, bool absent_is_precondition) {
  auto row = LoadRow(tx, container, pk, id);
  if (!row.ok()) return row.error();
  if (!*row || !(*row)->Live(tx.now)) {
    if (absent_is_precondition) {
      return Error::PreconditionFailed("if-match " + if_match.value_or("") + ": " +
                                       DocName(container, pk, id) + " does not exist");
    }
    return Error::NotFound(DocName(container, pk, id) + " does not exist");
  }
  return Error::PreconditionFailed("if-match " + if_match.value_or("") + " does not match the etag of " +
                                   DocName(container, pk, id));
}

// The etag a fast-path statement must require (nullptr: any live document).
const std::string* RequiredEtag(const std::optional<std::string>& if_match) {
  return (if_match && *if_match != "*") ? &*if_match : nullptr;
}

// Inserts version `v` of op.id (absent or expired) and records the create.
Result<Document> CreateVersion(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op,
                               const Version& v) {
  auto inserted = InsertDoc(tx, container, pk, op.id, v);
  if (!inserted.ok()) return inserted.error();
  if (!*inserted) {
    auto row = LoadRow(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    if (*row && (*row)->Live(tx.now))
      return Error::AlreadyExists(DocName(container, pk, op.id) + " already exists");
    if (*row) HCPRP_RETURN_IF_ERROR(ExpireRow(tx, container, pk, op.id, **row));
    inserted = InsertDoc(tx, container, pk, op.id, v);
    if (!inserted.ok()) return inserted.error();
    if (!*inserted)
      return Error::Internal("insert of " + DocName(container, pk, op.id) + " conflicted twice");
  }
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindCreate, pk, op.id, v));
  return MakeDocument(pk, op.id, std::move(op.body), v);
}

Result<Document> ApplyCreate(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  return CreateVersion(tx, container, pk, op, MakeVersion(op.body, op.ttl_seconds, tx.now));
}

Result<Document> ApplyReplace(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  if (!op.conditions.empty()) {
    auto row = LoadLive(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row->etag));
    auto current = ParseStoredBody(row->body);
    if (!current.ok()) return current.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*current, op.conditions));
  }
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  auto updated = UpdateDoc(tx, container, pk, op.id, v, RequiredEtag(op.if_match));
  if (!updated.ok()) return updated.error();
  if (!*updated) return Diagnose(tx, container, pk, op.id, op.if_match, false);
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v));
  return MakeDocument(pk, op.id, std::move(op.body), v);
}

Result<Document> ApplyUpsert(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  if (op.conditions.empty() && !op.if_match) {
    auto updated = UpdateDoc(tx, container, pk, op.id, v, nullptr);
    if (!updated.ok()) return updated.error();
    if (*updated) {
      HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v));
      return MakeDocument(pk, op.id, std::move(op.body), v);
    }
    return CreateVersion(tx, container, pk, op, v);  // absent or expired
  }
  auto row = LoadRow(tx, container, pk, op.id);
  if (!row.ok()) return row.error();
  bool live = *row && (*row)->Live(tx.now);
  if (!live) {
    HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, nullptr));
    HCPRP_RETURN_IF_ERROR(internal::CheckConditions(nullptr, op.conditions));
    return CreateVersion(tx, container, pk, op, v);
  }
  HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &(*row)->etag));
  if (!op.conditions.empty()) {
    auto current = ParseStoredBody((*row)->body);
    if (!current.ok()) return current.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*current, op.conditions));
  }
  auto updated = UpdateDoc(tx, container, pk, op.id, v, nullptr);
  if (!updated.ok()) return updated.error();
  if (!*updated) return Error::Internal("upsert of " + DocName(container, pk, op.id) + " lost its row");
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v));
  return MakeDocument(pk, op.id, std::move(op.body), v);
}

Result<Document> ApplyDelete(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  const std::string* required = RequiredEtag(op.if_match);
  std::string checked_etag;
  if (!op.conditions.empty()) {
    auto row = LoadLive(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row->etag));
    auto current = ParseStoredBody(row->body);
    if (!current.ok()) return current.error();
    HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*current, op.conditions));
    checked_etag = row->etag;
    required = &checked_etag;
  }
  auto deleted = DeleteDoc(tx, container, pk, op.id, required);
  if (!deleted.ok()) return deleted.error();
  if (!*deleted) return Diagnose(tx, container, pk, op.id, op.if_match, false);
  const StoredRow& old = **deleted;
  HCPRP_RETURN_IF_ERROR(
      InsertChange(tx, container, sql::kKindDelete, pk, op.id, old.body, old.etag, old.ts, old.ttl));
  Document d;
  d.id = op.id;
  d.partition_key = std::string(pk);
  return d;
}

Result<Document> ApplyPatch(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  auto row = LoadLive(tx, container, pk, op.id);
  if (!row.ok()) return row.error();
  HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row->etag));
  auto body = ParseStoredBody(row->body);
  if (!body.ok()) return body.error();
  HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*body, op.conditions));
  HCPRP_RETURN_IF_ERROR(internal::ApplyPatch(*body, op.patch));
  Version v = MakeVersion(*body, row->ttl, tx.now);
  auto updated = UpdateDoc(tx, container, pk, op.id, v, &row->etag);
  if (!updated.ok()) return updated.error();
  if (!*updated) return Error::Internal("patch of " + DocName(container, pk, op.id) + " lost its row");
  HCPRP_RETURN_IF_ERROR(RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v));
  return MakeDocument(pk, op.id, std::move(*body), v);
}

Result<Document> ApplyRead(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  auto row = LoadLive(tx, container, pk, op.id);
  if (!row.ok()) return row.error();
  HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row->etag));
  auto body = ParseStoredBody(row->body);
  if (!body.ok()) return body.error();
  HCPRP_RETURN_IF_ERROR(internal::CheckConditions(&*body, op.conditions));
  Document d;
  d.id = op.id;
  d.partition_key = std::string(pk);
  d.body = std::move(*body);
  d.etag = std::move(row->etag);
  d.timestamp_ms = row->ts;
  d.ttl_seconds = row->ttl;
  return d;
}

Result<Document> ApplyWrite(Tx& tx, std::string_view container, std::string_view pk, WriteOp& op) {
  // An operation naming another container writes there, in the same partition and transaction.
  const std::string_view where = op.container.empty() ? container : std::string_view(op.container);
  HCPRP_RETURN_IF_ERROR(ValidateOp(op));
  switch (op.kind) {
    case WriteOp::Kind::kCreate:
      return ApplyCreate(tx, where, pk, op);
    case WriteOp::Kind::kReplace:
      return ApplyReplace(tx, where, pk, op);
    case WriteOp::Kind::kUpsert:
      return ApplyUpsert(tx, where, pk, op);
    case WriteOp::Kind::kDelete:
      return ApplyDelete(tx, where, pk, op);
    case WriteOp::Kind::kPatch:
      return ApplyPatch(tx, where, pk, op);
    case WriteOp::Kind::kRead:
      return ApplyRead(tx, where, pk, op);
  }
  return Error::InvalidArgument("unknown write operation kind");
}

struct LeaseRow {
  std::optional<std::string> owner;
  std::optional<std::string> etag;
  uint64_t fencing_token = 0;
  int64_t expires_at = 0;
};

Result<std::optional<LeaseRow>> LoadLease(Tx& tx, std::string_view container, std::string_view pk,
                                          std::string_view name) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kLeaseGet);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, name);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<LeaseRow>();
  if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "read lease");
  LeaseRow r;
  if (!s.IsNull(0)) r.owner = std::string(s.Blob(0));
  if (!s.IsNull(1)) r.etag = std::string(s.Text(1));
  r.fencing_token = static_cast<uint64_t>(s.Int(2));
  r.expires_at = s.Int(3);
  return std::optional<LeaseRow>(std::move(r));
}

Status CheckFence(Tx& tx, const Lease& fence) {
  auto row = LoadLease(tx, fence.container, fence.partition_key, fence.name);
  if (!row.ok()) return row.error();
  std::string what = LeaseName(fence.container, fence.partition_key, fence.name);
  if (!*row || !(*row)->owner) return Error::PreconditionFailed("fence: " + what + " is not held");
  const LeaseRow& r = **row;
  if (*r.owner != fence.owner || r.fencing_token != fence.fencing_token) {
    return Error::PreconditionFailed("fence: " + what + " fencing token " +
                                     std::to_string(fence.fencing_token) + " is stale (now " +
                                     std::to_string(r.fencing_token) + ")");
  }
  if (r.expires_at <= tx.now) return Error::PreconditionFailed("fence: " + what + " has expired");
  return Status::Ok();
}

class SqliteStore final : public internal::PointWritesAsBatches {
 public:
  static Result<std::unique_ptr<Store>> Open(Target target, const OpenOptions& options);
  ~SqliteStore() override;

  Result<Document> Read(std::string_view container, std::string_view pk, std::string_view id) override;
  Result<BatchResult> Batch(std::string_view container, std::string_view pk, std::vector<WriteOp> ops,
                            const Lease* fence) override;
  Result<QueryPage> Query(const QueryOptions& options) override;
  Result<QueryPage> ListPartitions(std::string_view container, size_t max_items,
                                   std::string_view continuation) override;
  Result<ChangePage> ReadChanges(std::string_view container, std::string_view continuation,
                                 size_t max_changes) override;
  Result<bool> WaitForChanges(std::string_view container, std::string_view continuation,
                              std::chrono::milliseconds timeout) override;
  Result<Lease> AcquireLease(std::string_view container, std::string_view pk, std::string_view name,
                             std::string_view owner, std::chrono::milliseconds ttl) override;
  Result<Lease> RenewLease(const Lease& lease, std::chrono::milliseconds ttl) override;
  Status ReleaseLease(const Lease& lease) override;
  Result<size_t> PurgeExpired() override;

 private:
  SqliteStore(Target target, const OpenOptions& options, std::unique_ptr<Connection> writer)
      : target_(std::move(target)), options_(options), clock_(options.clock), writer_(std::move(writer)) {}

  static Status InitDatabase(Connection& c, const Target& t);
  Result<std::unique_ptr<Connection>> OpenReader();

  // Runs `body(Tx&)` in a write transaction and returns once that transaction has committed (or
  // failed). Group commit: concurrent writes share one transaction (BEGIN IMMEDIATE .. COMMIT, one
  // sync), each inside its own savepoint, so a write that fails is undone alone and the others
  // still commit; no caller returns before the shared COMMIT has returned (synchronous=FULL: the
  // WAL is synced). When SQLite ends the whole transaction (an I/O error, a full disk) every
  // member applied so far fails with that error and the rest of the group runs in a new one.
  template <typename T, typename Body>
  Result<T> WriteTx(std::string_view what, Body&& body);
  void Rollback(Connection& c);

  // A write waiting for a group commit; lives in the submitting thread's frame.
  struct PendingWrite {
    std::string_view what;
    std::function<Status(Tx&)> run;  // applies the write; its result stays in the caller's frame
    // Set by the leader before `done`.
    Status outcome = Status::Ok();
    std::exception_ptr exception;
    bool feed_changed = false;
    bool done = false;  // guarded by group_mu_
  };
  void SubmitWrite(PendingWrite& w);
  // Commits `group` (holding write_mu_); true when a committed member wrote to the change feed.
  bool RunGroup(const std::vector<PendingWrite*>& group);
  static Status Exec(Connection& c, const char* statement, std::string_view what);

  // Runs `f(Connection&)` on a reader connection (the writer connection for an in-memory store).
  template <typename F>
  auto WithReader(F&& f) -> decltype(f(std::declval<Connection&>()));

  Result<Document> WriteOne(std::string_view container, std::string_view pk, WriteOp op) override;
  Result<uint64_t> MaxSeq(Connection& c, std::string_view container);
  // Removes changes older than OpenOptions::change_retention (part of PurgeExpired).
  Status TrimChanges();
  Result<bool> HasChangesAfter(std::string_view container, uint64_t seq);

  void NotifyChanged();
  void EnsureWatcher();
  void SweepLoop();

  // Constant after construction.
  const Target target_;
  const OpenOptions options_;
  const Clock* const clock_;

  std::mutex group_mu_;
  std::condition_variable group_cv_;
  std::deque<PendingWrite*> queue_;  // guarded by group_mu_: writes not yet taken by a leader
  bool leading_ = false;             // guarded by group_mu_: a thread is committing a group

  std::mutex write_mu_;
  std::unique_ptr<Connection> writer_;  // guarded by write_mu_

  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<Connection>> idle_readers_;  // guarded by pool_mu_
  size_t open_readers_ = 0;                                // guarded by pool_mu_

  std::mutex notify_mu_;
  std::condition_variable notify_cv_;
  uint64_t generation_ = 0;  // guarded by notify_mu_; bumped after every commit seen
  std::atomic<int> waiters_{0};

  std::mutex watcher_mu_;
  std::unique_ptr<ChangeWatcher> watcher_;  // guarded by watcher_mu_; started by the first wait
  bool watcher_failed_ = false;             // guarded by watcher_mu_

  std::mutex sweeper_mu_;
  std::condition_variable sweeper_cv_;
  bool stopping_ = false;  // guarded by sweeper_mu_
  std::thread sweeper_;
};

Result<std::unique_ptr<Store>> SqliteStore::Open(Target target, const OpenOptions& options) {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (target.memory) flags |= SQLITE_OPEN_MEMORY;
  auto writer = Connection::Open(target.path, target.vfs, flags, options.busy_timeout);
  if (!writer.ok()) return writer.error();
  // SQLite falls back to read-only when the file cannot be written; a store that cannot write is an
  // error at start-up, not a process that answers every write 503.
  if (!target.memory && sqlite3_db_readonly((*writer)->db(), "main") == 1) {
    return Error::IoError(
        "the store file " + target.path +
        " is read-only (file permissions or a read-only file system); hcprp needs to write it");
  }
  Status init = InitDatabase(**writer, target);
  if (!init.ok()) {
    if (init.error().code() != ErrorCode::kUnavailable) return init.error();
    return Error::Unavailable(init.error().message() +
                              " (still locked by another connection after the busy timeout of " +
                              std::to_string(options.busy_timeout.count()) + " ms)");
  }
  std::unique_ptr<SqliteStore> s(new SqliteStore(std::move(target), options, std::move(*writer)));
  if (options.purge_interval.count() > 0) s->sweeper_ = std::thread([raw = s.get()] { raw->SweepLoop(); });
  return std::unique_ptr<Store>(std::move(s));
}

Status SqliteStore::InitDatabase(Connection& c, const Target& t) {
  std::string where = "open " + t.path;
  if (!t.memory) {
    auto mode = c.QueryText("PRAGMA journal_mode=WAL", where);
    if (!mode.ok()) return mode.error();
    if (*mode != "wal") return Error::IoError(where + ": cannot use WAL (journal mode is \"" + *mode + "\")");
  }
  HCPRP_RETURN_IF_ERROR(
      c.Exec("PRAGMA synchronous=FULL; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-16384", where));
  HCPRP_RETURN_IF_ERROR(c.Exec("BEGIN IMMEDIATE", where));
  auto check = [&]() -> Status {
    auto app = c.QueryInt("PRAGMA application_id", where);
    if (!app.ok()) return app.error();
    auto version = c.QueryInt("PRAGMA user_version", where);
    if (!version.ok()) return version.error();
    auto objects = c.QueryInt("SELECT count(*) FROM sqlite_schema", where);
    if (!objects.ok()) return objects.error();
    if (*app == sql::kApplicationId) {
      if (*version > sql::kSchemaVersion) {
        return Error::InvalidArgument(where + ": the store has schema version " + std::to_string(*version) +
                                      ", newer than this binary's " + std::to_string(sql::kSchemaVersion));
      }
    } else if (*app != 0 || *objects != 0) {
      return Error::InvalidArgument(where + ": the file is an SQLite database but not an hcprp store");
    }
    if (*app != sql::kApplicationId || *version < sql::kSchemaVersion) {
      HCPRP_RETURN_IF_ERROR(c.Exec(sql::kSchema, where + ": create schema"));
      std::string pragmas = "PRAGMA application_id=" + std::to_string(sql::kApplicationId) +
                            "; PRAGMA user_version=" + std::to_string(sql::kSchemaVersion);
      HCPRP_RETURN_IF_ERROR(c.Exec(pragmas.c_str(), where));
    }
    return c.Exec("COMMIT", where);
  };
  Status st = check();
  if (!st.ok() && !sqlite3_get_autocommit(c.db())) (void)c.Exec("ROLLBACK", where);
  return st;
}

Result<std::unique_ptr<Connection>> SqliteStore::OpenReader() {
  auto c = Connection::Open(target_.path, target_.vfs, SQLITE_OPEN_READWRITE, options_.busy_timeout);
  if (!c.ok()) return c.error();
  // 4 MiB of page cache per reader (up to kMaxReaders of them); the OS page cache is shared. No mmap:
  // with mmap an I/O error would be a SIGBUS instead of a failed call.
  HCPRP_RETURN_IF_ERROR(
      (*c)->Exec("PRAGMA query_only=1; PRAGMA cache_size=-4096", "open reader " + target_.path));
  return c;
}

SqliteStore::~SqliteStore() {
  {
    std::lock_guard lk(sweeper_mu_);
    stopping_ = true;
  }
  sweeper_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  std::lock_guard lk(watcher_mu_);
  watcher_.reset();
}

template <typename F>
auto SqliteStore::WithReader(F&& f) -> decltype(f(std::declval<Connection&>())) {
  if (target_.memory) {
    std::lock_guard lk(write_mu_);
    return f(*writer_);
  }
  std::unique_ptr<Connection> conn;
  {
    std::unique_lock lk(pool_mu_);
    pool_cv_.wait(lk, [&] { return !idle_readers_.empty() || open_readers_ < kMaxReaders; });
    if (!idle_readers_.empty()) {
      conn = std::move(idle_readers_.back());
      idle_readers_.pop_back();
    } else {
      ++open_readers_;
    }
  }
  if (!conn) {
    auto opened = OpenReader();
    if (!opened.ok()) {
      {
        std::lock_guard lk(pool_mu_);
        --open_readers_;
      }
      pool_cv_.notify_one();
      return opened.error();
    }
    conn = std::move(*opened);
  }
  struct GiveBack {  // also on exceptions; never pools a connection inside a transaction
    SqliteStore& self;
    std::unique_ptr<Connection>& conn;
    ~GiveBack() {
      if (!sqlite3_get_autocommit(conn->db())) self.Rollback(*conn);
      {
        std::lock_guard lk(self.pool_mu_);
        if (sqlite3_get_autocommit(conn->db())) {
          self.idle_readers_.push_back(std::move(conn));
        } else {
          --self.open_readers_;  // could not end its transaction: drop it
        }
      }
      self.pool_cv_.notify_one();
    }
  } give_back{*this, conn};
  return f(*conn);
}

void SqliteStore::Rollback(Connection& c) {
  if (sqlite3_get_autocommit(c.db())) return;  // SQLite already rolled back (e.g. after an I/O error)
  auto s = c.Prepare(sql::kRollback);
  if (s.ok()) {
    Stmt st(c.db(), *s);
    (void)st.Step();
  }
}

template <typename T, typename Body>
Result<T> SqliteStore::WriteTx(std::string_view what, Body&& body) {
  Result<T> result = Error::Internal("write not run");
  PendingWrite w;
  w.what = what;
  w.run = [&](Tx& tx) -> Status {
    result = body(tx);
    if (!result.ok()) return result.error();
    return Status::Ok();
  };
  SubmitWrite(w);
  if (w.exception) std::rethrow_exception(w.exception);
  if (!w.outcome.ok()) return w.outcome.error();
  return result;
}

void SqliteStore::SubmitWrite(PendingWrite& w) {
  std::unique_lock lk(group_mu_);
  queue_.push_back(&w);
  while (!w.done) {
    if (leading_) {
      group_cv_.wait(lk);
      continue;
    }
    // This thread leads: it commits everything queued so far (its own write included, unless more
    // than kMaxGroup were ahead of it) in one transaction, then hands the lead on.
    leading_ = true;
    std::vector<PendingWrite*> group;
    while (!queue_.empty() && group.size() < kMaxGroup) {
      group.push_back(queue_.front());
      queue_.pop_front();
    }
    lk.unlock();
    bool feed_changed = false;
    try {
      feed_changed = RunGroup(group);
    } catch (...) {  // bad_alloc outside a write: every member fails, nothing was committed
      for (PendingWrite* g : group) g->exception = std::current_exception();
    }
    if (feed_changed) NotifyChanged();
    lk.lock();
    for (PendingWrite* g : group) g->done = true;
    leading_ = false;
    group_cv_.notify_all();
  }
}

Status SqliteStore::Exec(Connection& c, const char* statement, std::string_view what) {
  auto prepared = c.Prepare(statement);
  if (!prepared.ok()) return prepared.error();
  Stmt s(c.db(), *prepared);
  int rc = s.Step();
  if (rc != SQLITE_DONE) return SqliteError(c.db(), rc, std::string(what) + ": " + statement);
  return Status::Ok();
}

bool SqliteStore::RunGroup(const std::vector<PendingWrite*>& group) {
  std::lock_guard lk(write_mu_);
  Connection& c = *writer_;
  bool feed_changed = false;
  size_t next = 0;
  while (next < group.size()) {
    Status begun = Exec(c, sql::kBegin, group[next]->what);
    if (!begun.ok()) {
      Rollback(c);
      for (size_t i = next; i < group.size(); ++i) group[i]->outcome = begun;
      return feed_changed;
    }
    // Members applied in this transaction; each keeps its own outcome through a savepoint.
    std::vector<PendingWrite*> applied;
    std::optional<Error> lost;  // set when SQLite ended the whole transaction
    for (; next < group.size() && !lost; ++next) {
      PendingWrite& w = *group[next];
      Status saved = Exec(c, sql::kSavepoint, w.what);
      if (!saved.ok()) {
        w.outcome = saved;
        lost = saved.error();
        continue;
      }
      Tx tx{c, clock_->NowMillis()};
      Status st = Status::Ok();
      try {
        st = w.run(tx);
      } catch (...) {  // a programming error or bad_alloc: undo this member, rethrow in its thread
        w.exception = std::current_exception();
        st = Error::Internal("exception in write");
      }
      if (st.ok()) {
        Status released = Exec(c, sql::kRelease, w.what);
        if (!released.ok()) {
          w.outcome = released;
          lost = released.error();
          continue;
        }
        w.feed_changed = tx.feed_changed;
        applied.push_back(&w);
        continue;
      }
      w.outcome = st;
      if (sqlite3_get_autocommit(c.db())) {  // SQLite rolled the transaction back (I/O error, full disk)
        lost = st.error();
        continue;
      }
      Status undone = Exec(c, sql::kRollbackToSavepoint, w.what);
      if (undone.ok()) undone = Exec(c, sql::kRelease, w.what);
      if (!undone.ok()) lost = undone.error();
    }
    if (lost) {
      // The members applied before the failure went with the transaction; none was acknowledged.
      Rollback(c);
      for (PendingWrite* a : applied) {
        a->outcome =
            Error(lost->code(), std::string(a->what) + ": the shared transaction failed: " + lost->message());
      }
      continue;  // the rest of the group in a new transaction
    }
    Status committed = Exec(c, sql::kCommit, applied.empty() ? std::string_view("write") : applied[0]->what);
    if (!committed.ok()) {
      Rollback(c);
      for (PendingWrite* a : applied) a->outcome = committed;
      continue;
    }
    for (PendingWrite* a : applied) feed_changed = feed_changed || a->feed_changed;
  }
  return feed_changed;
}

void SqliteStore::NotifyChanged() {
  {
    std::lock_guard lk(notify_mu_);
    ++generation_;
  }
  notify_cv_.notify_all();
}

Result<Document> SqliteStore::WriteOne(std::string_view container, std::string_view pk, WriteOp op) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  HCPRP_RETURN_IF_ERROR(ValidateOp(op));
  return WriteTx<Document>("write", [&](Tx& tx) { return ApplyWrite(tx, container, pk, op); });
}

Result<Document> SqliteStore::Read(std::string_view container, std::string_view pk, std::string_view id) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  int64_t now = clock_->NowMillis();
  return WithReader([&](Connection& c) -> Result<Document> {
    HCPRP_ASSIGN_STMT(s, c, sql::kReadDoc);
    s.BindText(1, container);
    s.BindBlob(2, pk);
    s.BindBlob(3, id);
    s.BindInt(4, now);
    int rc = s.Step();
    if (rc == SQLITE_DONE) return Error::NotFound(DocName(container, pk, id) + " does not exist");
    if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "read " + DocName(container, pk, id));
    auto body = ParseStoredBody(s.Text(0));
    if (!body.ok()) return body.error();
    Document d;
    d.id = std::string(id);
    d.partition_key = std::string(pk);
    d.body = std::move(*body);
    d.etag = std::string(s.Text(1));
    d.timestamp_ms = s.Int(2);
    d.ttl_seconds = s.OptInt(3);
    return d;
  });
}

Result<BatchResult> SqliteStore::Batch(std::string_view container, std::string_view pk,
                                       std::vector<WriteOp> ops, const Lease* fence) {
  HCPRP_RETURN_IF_ERROR(internal::ValidateBatch(container, ops));
  return WriteTx<BatchResult>("batch", [&](Tx& tx) -> Result<BatchResult> {
    if (fence != nullptr) HCPRP_RETURN_IF_ERROR(CheckFence(tx, *fence));
    BatchResult out;
    out.documents.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      auto d = ApplyWrite(tx, container, pk, ops[i]);
      if (!d.ok()) return BatchOperationError(i, d.error());
      out.documents.push_back(std::move(*d));
    }
    return out;
  });
}

Result<QueryPage> SqliteStore::Query(const QueryOptions& o) {
  HCPRP_RETURN_IF_ERROR(internal::ValidateQuery(o));
  int shape = 0;
  if (o.partition_key) shape |= sql::kQueryPartition;
  std::string type, rid, prefix;
  std::optional<std::string> upper;
  if (o.resource_type) {
    shape |= sql::kQueryType;
    type = ToLower(*o.resource_type);
  }
  if (o.resource_id) {
    shape |= sql::kQueryRid;
    rid = ToLower(*o.resource_id);
  }
  if (o.resource_id_prefix) {
    shape |= sql::kQueryPrefix;
    prefix = ToLower(*o.resource_id_prefix);
    upper = internal::PrefixUpperBound(prefix);
    if (upper) shape |= sql::kQueryPrefixUpper;
  }
  if (o.non_terminal_only) shape |= sql::kQueryActive;
  std::pair<std::string, std::string> after;
  if (!o.continuation.empty()) {
    auto decoded = internal::DecodeQueryContinuation(o.continuation);
    if (!decoded.ok()) return decoded.error();
    after = std::move(*decoded);
    if (o.partition_key && after.first != *o.partition_key) {
      return Error::InvalidArgument("the continuation token belongs to another partition");
    }
    shape |= sql::kQueryAfter;
  }
  int64_t now = clock_->NowMillis();
  int64_t limit = static_cast<int64_t>(std::min<size_t>(o.max_items, INT32_MAX)) + 1;
  return WithReader([&](Connection& c) -> Result<QueryPage> {
    auto prepared = c.PrepareKeyed(shape, [&] { return sql::QuerySql(shape); });
    if (!prepared.ok()) return prepared.error();
    Stmt s(c.db(), *prepared);
    s.BindText(1, o.container);
    if (o.partition_key) s.BindBlob(2, *o.partition_key);
    if (shape & sql::kQueryType) s.BindText(3, std::string_view(type));
    if (shape & sql::kQueryRid) s.BindText(4, std::string_view(rid));
    if (shape & sql::kQueryPrefix) s.BindText(5, std::string_view(prefix));
    if (shape & sql::kQueryPrefixUpper) s.BindText(6, std::string_view(*upper));
    s.BindInt(7, now);
    if (shape & sql::kQueryAfter) {
      s.BindBlob(8, after.first);
      s.BindBlob(9, after.second);
    }
    s.BindInt(10, limit);
    QueryPage page;
    while (true) {
      int rc = s.Step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "query " + o.container);
      if (page.documents.size() == o.max_items) {
        const Document& last = page.documents.back();
        page.continuation = internal::EncodeQueryContinuation(last.partition_key, last.id);
        break;
      }
      auto body = ParseStoredBody(s.Text(2));
      if (!body.ok()) return body.error();
      Document d;
      d.partition_key = std::string(s.Blob(0));
      d.id = std::string(s.Blob(1));
      d.body = std::move(*body);
      d.etag = std::string(s.Text(3));
      d.timestamp_ms = s.Int(4);
      d.ttl_seconds = s.OptInt(5);
      page.documents.push_back(std::move(d));
    }
    return page;
  });
}

Result<QueryPage> SqliteStore::ListPartitions(std::string_view container, size_t max_items,
                                              std::string_view continuation) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  if (max_items == 0) return Error::InvalidArgument("max_items must be > 0");
  std::optional<std::string> after;
  if (!continuation.empty()) {
    auto pk = internal::DecodePartitionContinuation(continuation);
    if (!pk.ok()) return pk.error();
    after = std::move(*pk);
  }
  int64_t now = clock_->NowMillis();
  return WithReader([&](Connection& c) -> Result<QueryPage> {
    std::string what = "list partitions of " + std::string(container);
    HCPRP_ASSIGN_STMT(begin, c, sql::kBeginRead);
    HCPRP_RETURN_IF_ERROR(begin.Run(what));
    auto page = [&]() -> Result<QueryPage> {
      QueryPage out;
      std::optional<std::string> cursor = after;
      while (true) {
        std::string pk;
        {
          HCPRP_ASSIGN_STMT(next, c, cursor ? sql::kNextPartition : sql::kFirstPartition);
          next.BindText(1, container);
          if (cursor) next.BindBlob(2, *cursor);
          int rc = next.Step();
          if (rc == SQLITE_DONE) return out;
          if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, what);
          pk = std::string(next.Blob(0));
        }
        HCPRP_ASSIGN_STMT(live, c, sql::kPartitionLive);
        live.BindText(1, container);
        live.BindBlob(2, pk);
        live.BindInt(3, now);
        int rc = live.Step();
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteError(c.db(), rc, what);
        if (rc == SQLITE_ROW) {
          if (out.documents.size() == max_items) {
            out.continuation = internal::EncodePartitionContinuation(out.documents.back().partition_key);
            return out;
          }
          Document d;
          d.partition_key = pk;
          out.documents.push_back(std::move(d));
        }
        cursor = std::move(pk);
      }
    }();
    HCPRP_ASSIGN_STMT(end, c, sql::kEndRead);
    Status ended = end.Run(what);
    if (!page.ok()) return page;
    if (!ended.ok()) return ended.error();
    return page;
  });
}

Result<uint64_t> SqliteStore::MaxSeq(Connection& c, std::string_view container) {
  HCPRP_ASSIGN_STMT(s, c, sql::kMaxSeq);
  s.BindText(1, container);
  int rc = s.Step();
  if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "change feed position of " + std::string(container));
  return static_cast<uint64_t>(s.Int(0));
}

Result<ChangePage> SqliteStore::ReadChanges(std::string_view container, std::string_view continuation,
                                            size_t max_changes) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  if (max_changes == 0) return Error::InvalidArgument("max_changes must be > 0");
  auto position = internal::DecodeChangeContinuation(continuation);
  if (!position.ok()) return position.error();
  return WithReader([&](Connection& c) -> Result<ChangePage> {
    uint64_t after = 0;
    if (*position) {
      after = **position;
    } else {
      auto max = MaxSeq(c, container);
      if (!max.ok()) return max.error();
      after = *max;
    }
    // One statement, so one snapshot: superseded versions are stepped over (the position still
    // moves past them) until the page is full or the feed ends.
    HCPRP_ASSIGN_STMT(s, c, sql::kReadChanges);
    s.BindText(1, container);
    s.BindInt(2, static_cast<int64_t>(after));
    ChangePage page;
    while (page.changes.size() < max_changes) {
      int rc = s.Step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "read changes of " + std::string(container));
      const uint64_t seq = static_cast<uint64_t>(s.Int(0));
      std::string_view stored = s.Text(4);
      if (stored == sql::kVersionInDocuments) {
        if (s.IsNull(8) || s.Text(8) != s.Text(5)) {  // superseded or gone: a later change says so
          after = seq;
          continue;
        }
        stored = s.Text(9);
      }
      Change ch;
      ch.sequence = seq;
      ch.kind = ChangeKindFromInt(s.Int(1));
      ch.document.partition_key = std::string(s.Blob(2));
      ch.document.id = std::string(s.Blob(3));
      auto body = ParseStoredBody(stored);
      if (!body.ok()) return body.error();
      ch.document.body = std::move(*body);
      ch.document.etag = std::string(s.Text(5));
      ch.document.timestamp_ms = s.Int(6);
      ch.document.ttl_seconds = s.OptInt(7);
      after = ch.sequence;
      page.changes.push_back(std::move(ch));
    }
    if (*position && !continuation.empty()) {
      // Checked after the read: a trim that removed changes after the position before the read
      // is seen (one that ran after it is reported too, which costs the reader a resync only).
      HCPRP_ASSIGN_STMT(t, c, sql::kTrimmedThrough);
      t.BindText(1, container);
      int rc = t.Step();
      if (rc != SQLITE_ROW)
        return SqliteError(c.db(), rc, "change feed retention of " + std::string(container));
      if (static_cast<uint64_t>(t.Int(0)) > **position) return internal::FeedPositionExpired(container);
    }
    page.continuation = internal::EncodeChangeContinuation(after);
    return page;
  });
}

Result<bool> SqliteStore::HasChangesAfter(std::string_view container, uint64_t seq) {
  return WithReader([&](Connection& c) -> Result<bool> {
    HCPRP_ASSIGN_STMT(s, c, sql::kHasChanges);
    s.BindText(1, container);
    s.BindInt(2, static_cast<int64_t>(seq));
    int rc = s.Step();
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteError(c.db(), rc, "look for changes of " + std::string(container));
  });
}

void SqliteStore::EnsureWatcher() {
  if (target_.memory) return;  // only this store's connection can write
  std::lock_guard lk(watcher_mu_);
  if (watcher_ || watcher_failed_) return;
  auto conn = OpenReader();
  if (conn.ok()) {
    auto w = ChangeWatcher::Start(
        std::move(*conn), target_.path, [this] { NotifyChanged(); }, [this] { return waiters_.load() > 0; });
    if (w.ok()) {
      watcher_ = std::move(*w);
      return;
    }
  }
  // Without a watcher, waits still wake on this store's own commits and at their timeout.
  watcher_failed_ = true;
}

Result<bool> SqliteStore::WaitForChanges(std::string_view container, std::string_view continuation,
                                         std::chrono::milliseconds timeout) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  auto position = internal::DecodeChangeContinuation(continuation);
  if (!position.ok()) return position.error();
  auto deadline = std::chrono::steady_clock::now() + std::max(timeout, std::chrono::milliseconds(0));
  EnsureWatcher();
  uint64_t after = 0;
  if (*position) {
    after = **position;
  } else {
    auto max = WithReader([&](Connection& c) { return MaxSeq(c, container); });
    if (!max.ok()) return max.error();
    after = *max;
  }
  waiters_.fetch_add(1);
  struct Leave {
    std::atomic<int>& w;
    ~Leave() { w.fetch_sub(1); }
  } leave{waiters_};
  while (true) {
    uint64_t generation = 0;
    {
      std::lock_guard lk(notify_mu_);
      generation = generation_;
    }
    auto has = HasChangesAfter(container, after);
    if (!has.ok() || *has) return has;
    std::unique_lock lk(notify_mu_);
    if (!notify_cv_.wait_until(lk, deadline, [&] { return generation_ != generation; })) return false;
  }
}

Result<Lease> SqliteStore::AcquireLease(std::string_view container, std::string_view pk,
                                        std::string_view name, std::string_view owner,
                                        std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  if (ttl.count() <= 0) return Error::InvalidArgument("a lease ttl must be > 0");
  return WriteTx<Lease>("acquire lease", [&](Tx& tx) -> Result<Lease> {
    auto row = LoadLease(tx, container, pk, name);
    if (!row.ok()) return row.error();
    if (*row && (*row)->owner && (*row)->expires_at > tx.now) {
      return Error::Conflict(LeaseName(container, pk, name) + " is held by \"" + Printable(*(*row)->owner) +
                             "\"");
    }
    Lease l;
    l.container = std::string(container);
    l.partition_key = std::string(pk);
    l.name = std::string(name);
    l.owner = std::string(owner);
    l.etag = internal::NewEtag();
    l.fencing_token = (*row ? (*row)->fencing_token : 0) + 1;
    int64_t expires = tx.now + ToMillis(ttl);
    l.expires_at = FromMillis(expires);
    HCPRP_ASSIGN_STMT(s, tx.c, sql::kLeasePut);
    s.BindText(1, container);
    s.BindBlob(2, pk);
    s.BindBlob(3, name);
    s.BindBlob(4, owner);
    s.BindText(5, std::string_view(l.etag));
    s.BindInt(6, static_cast<int64_t>(l.fencing_token));
    s.BindInt(7, expires);
    HCPRP_RETURN_IF_ERROR(s.Run("acquire " + LeaseName(container, pk, name)));
    return l;
  });
}

Result<Lease> SqliteStore::RenewLease(const Lease& lease, std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(lease.container));
  if (ttl.count() <= 0) return Error::InvalidArgument("a lease ttl must be > 0");
  return WriteTx<Lease>("renew lease", [&](Tx& tx) -> Result<Lease> {
    std::string what = LeaseName(lease.container, lease.partition_key, lease.name);
    Lease l = lease;
    l.etag = internal::NewEtag();
    int64_t expires = tx.now + ToMillis(ttl);
    HCPRP_ASSIGN_STMT(s, tx.c, sql::kLeaseRenew);
    s.BindText(1, std::string_view(lease.container));
    s.BindBlob(2, lease.partition_key);
    s.BindBlob(3, lease.name);
    s.BindText(4, std::string_view(lease.etag));
    s.BindText(5, std::string_view(l.etag));
    s.BindInt(6, expires);
    s.BindInt(7, tx.now);
    int rc = s.Step();
    if (rc == SQLITE_DONE) {
      return Error::PreconditionFailed(what +
                                       " was lost (expired, taken over, released or renewed elsewhere)");
    }
    if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "renew " + what);
    l.owner = std::string(s.Blob(0));
    l.fencing_token = static_cast<uint64_t>(s.Int(1));
    l.expires_at = FromMillis(expires);
    rc = s.Step();
    if (rc != SQLITE_DONE) return SqliteError(tx.c.db(), rc, "renew " + what);
    return l;
  });
}

Status SqliteStore::ReleaseLease(const Lease& lease) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(lease.container));
  auto r = WriteTx<bool>("release lease", [&](Tx& tx) -> Result<bool> {
    std::string what = LeaseName(lease.container, lease.partition_key, lease.name);
    HCPRP_ASSIGN_STMT(s, tx.c, sql::kLeaseRelease);
    s.BindText(1, std::string_view(lease.container));
    s.BindBlob(2, lease.partition_key);
    s.BindBlob(3, lease.name);
    s.BindText(4, std::string_view(lease.etag));
    HCPRP_RETURN_IF_ERROR(s.Run("release " + what));
    if (sqlite3_changes(tx.c.db()) == 0) {
      return Error::PreconditionFailed(what + " was lost (taken over, released or renewed elsewhere)");
    }
    return true;
  });
  if (!r.ok()) return r.error();
  return Status::Ok();
}

Result<size_t> SqliteStore::PurgeExpired() {
  size_t total = 0;
  while (true) {
    auto n = WriteTx<size_t>("purge expired documents", [&](Tx& tx) -> Result<size_t> {
      struct Expired {
        int64_t rowid;
        std::string container, pk, id;
        StoredRow row;
      };
      std::vector<Expired> rows;
      {
        HCPRP_ASSIGN_STMT(s, tx.c, sql::kSelectExpired);
        s.BindInt(1, tx.now);
        s.BindInt(2, kPurgeChunk);
        while (true) {
          int rc = s.Step();
          if (rc == SQLITE_DONE) break;
          if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "find expired documents");
          Expired e;
          e.rowid = s.Int(0);
          e.container = std::string(s.Text(1));
          e.pk = std::string(s.Blob(2));
          e.id = std::string(s.Blob(3));
          e.row.body = std::string(s.Text(4));
          e.row.etag = std::string(s.Text(5));
          e.row.ts = s.Int(6);
          e.row.ttl = s.OptInt(7);
          rows.push_back(std::move(e));
        }
      }
      for (const auto& e : rows) {
        HCPRP_ASSIGN_STMT(d, tx.c, sql::kDeleteByRowid);
        d.BindInt(1, e.rowid);
        HCPRP_RETURN_IF_ERROR(d.Run("purge " + DocName(e.container, e.pk, e.id)));
        HCPRP_RETURN_IF_ERROR(InsertChange(tx, e.container, sql::kKindExpire, e.pk, e.id, e.row.body,
                                           e.row.etag, e.row.ts, e.row.ttl));
      }
      return rows.size();
    });
    if (!n.ok()) return n.error();
    total += *n;
    if (*n < static_cast<size_t>(kPurgeChunk)) break;
  }
  HCPRP_RETURN_IF_ERROR(TrimChanges());
  return total;
}

Status SqliteStore::TrimChanges() {
  const bool by_time = options_.change_retention.count() > 0;
  const bool by_size = options_.change_retention_changes > 0;
  if (!by_time && !by_size) return Status::Ok();
  while (true) {
    auto n = WriteTx<size_t>("trim the change feed", [&](Tx& tx) -> Result<size_t> {
      std::map<std::string, int64_t> last;  // by container
      size_t removed = 0;
      {
        HCPRP_ASSIGN_STMT(s, tx.c, sql::kTrimChanges);
        s.BindInt(
            1,
            by_time
                ? tx.now -
                      std::chrono::duration_cast<std::chrono::milliseconds>(options_.change_retention).count()
                : std::numeric_limits<int64_t>::min());
        s.BindInt(2, kPurgeChunk);
        s.BindInt(3, by_size ? static_cast<int64_t>(std::min<uint64_t>(options_.change_retention_changes,
                                                                       std::numeric_limits<int64_t>::max()))
                             : std::numeric_limits<int64_t>::max());
        while (true) {
          int rc = s.Step();
          if (rc == SQLITE_DONE) break;
          if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "trim the change feed");
          int64_t& l = last[std::string(s.Text(0))];
          l = std::max(l, s.Int(1));
          ++removed;
        }
      }
      for (const auto& [container, seq] : last) {
        HCPRP_ASSIGN_STMT(r, tx.c, sql::kRecordTrim);
        r.BindText(1, container);
        r.BindInt(2, seq);
        HCPRP_RETURN_IF_ERROR(r.Run("record the trim of " + container));
      }
      return removed;
    });
    if (!n.ok()) return n.error();
    if (*n < static_cast<size_t>(kPurgeChunk)) return Status::Ok();
  }
}

void SqliteStore::SweepLoop() {
  std::unique_lock lk(sweeper_mu_);
  while (!stopping_) {
    if (sweeper_cv_.wait_for(lk, options_.purge_interval, [&] { return stopping_; })) break;
    lk.unlock();
    (void)PurgeExpired();  // a failure (busy, I/O) is retried at the next interval
    lk.lock();
  }
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(std::string_view url, const OpenOptions& options) {
  if (options.clock == nullptr) return Error::InvalidArgument("OpenOptions::clock is required");
  auto target = ParseUrl(url);
  if (!target.ok()) return target.error();
  return SqliteStore::Open(std::move(*target), options);
}

}  // namespace hcprp::store::sqlite
