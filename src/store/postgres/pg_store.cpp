#include "store/postgres/pg_store.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "store/document_logic.h"
#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_sql.h"

namespace hcprp::store::postgres {
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
using namespace std::chrono_literals;

constexpr int64_t kPurgeChunk = 512;
constexpr int kTxAttempts = 3;
constexpr int kConnectTimeoutSeconds = 5;
constexpr std::chrono::milliseconds kWaitSafetyInterval = 5s;

Error FeedPositionAhead(std::string_view container, uint64_t position, uint64_t last) {
  return Error::OutOfRange("the change feed of " + Printable(container) + " ends at " + std::to_string(last) +
                           ", before position " + std::to_string(position) +
                           " (changes read there were lost by a failover to a server without them); "
                           "start again from \"now\" after a full resynchronisation");
}

// A change recorded by a transaction, numbered when the transaction appends it (see FlushChanges).
struct PendingChange {
  int16_t kind;
  std::string pk, id, body, etag;
  int64_t ts = 0;
  std::optional<int64_t> ttl;
};

// A write transaction in progress.
struct Tx {
  PgConnection& c;
  int64_t now;
  std::map<std::string, std::vector<PendingChange>> changes;  // by container, in bytewise order
};

Result<std::optional<StoredRow>> LoadRow(Tx& tx, std::string_view container, std::string_view pk,
                                         std::string_view id) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(id);
  auto r = tx.c.Exec(sql::kLoadDocForUpdate, p, "load " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  if (r->rows() == 0) return std::optional<StoredRow>();
  StoredRow row;
  row.body = r->String(0, 0);
  row.etag = r->String(0, 1);
  row.ts = r->Int8(0, 2);
  row.ttl = r->OptInt8(0, 3);
  row.expires_at = r->OptInt8(0, 4);
  return std::optional<StoredRow>(std::move(row));
}

void BindVersion(Params& p, std::string_view container, std::string_view pk, std::string_view id,
                 const Version& v, const std::optional<int64_t>& expires_at) {
  p.Bytea(container).Bytea(pk).Bytea(id).Bytea(v.body).Text(v.etag).Int8(v.ts).OptInt8(v.ttl).OptInt8(
      expires_at);
  p.OptBytea(v.fields.resource_type).OptBytea(v.fields.resource_id).OptBytea(v.fields.status);
  p.Bool(v.fields.non_terminal);
}

// True when inserted, false when a row with that key exists.
Result<bool> InsertDoc(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v) {
  auto expires_at = v.ExpiresAt();
  Params p;
  BindVersion(p, container, pk, id, v, expires_at);
  auto r = tx.c.Exec(sql::kInsertDoc, p, "insert " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  return r->rows() == 1;
}

// True when the live document (with etag `required_etag`, if given) was updated.
Result<bool> UpdateDoc(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v, const std::string* required_etag) {
  auto expires_at = v.ExpiresAt();
  Params p;
  BindVersion(p, container, pk, id, v, expires_at);
  p.OptText(required_etag);
  p.Int8(tx.now);
  auto r = tx.c.Exec(sql::kUpdateDoc, p, "update " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  return r->affected() > 0;
}

// The deleted live row, or nullopt when there was none (with that etag).
Result<std::optional<StoredRow>> DeleteDoc(Tx& tx, std::string_view container, std::string_view pk,
                                           std::string_view id, const std::string* required_etag) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(id);
  p.OptText(required_etag);
  p.Int8(tx.now);
  auto r = tx.c.Exec(sql::kDeleteDoc, p, "delete " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  if (r->rows() == 0) return std::optional<StoredRow>();
  StoredRow row;
  row.body = r->String(0, 0);
  row.etag = r->String(0, 1);
  row.ts = r->Int8(0, 2);
  row.ttl = r->OptInt8(0, 3);
  return std::optional<StoredRow>(std::move(row));
}

void RecordChange(Tx& tx, std::string_view container, int16_t kind, std::string_view pk, std::string_view id,
                  std::string body, std::string etag, int64_t ts, const std::optional<int64_t>& ttl) {
  tx.changes[std::string(container)].push_back(
      PendingChange{kind, std::string(pk), std::string(id), std::move(body), std::move(etag), ts, ttl});
}

void RecordVersion(Tx& tx, std::string_view container, int16_t kind, std::string_view pk, std::string_view id,
                   const Version& v) {
  // Without its body: the feed reads it from the document while this version is current (see
  // sql::kReadChanges).
  RecordChange(tx, container, kind, pk, id, std::string(), v.etag, v.ts, v.ttl);
}

// Removes an expired row that is in the way of a write and records its expiry.
Status ExpireRow(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                 const StoredRow& row) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(id);
  auto r = tx.c.Exec(sql::kDeleteAnyDoc, p, "expire " + DocName(container, pk, id));
  if (!r.ok()) return r.error();
  RecordChange(tx, container, sql::kKindExpire, pk, id, row.body, row.etag, row.ts, row.ttl);
  return Status::Ok();
}

// The live row (locked), or kNotFound.
Result<StoredRow> LoadLive(Tx& tx, std::string_view container, std::string_view pk, std::string_view id) {
  auto row = LoadRow(tx, container, pk, id);
  if (!row.ok()) return row.error();
  if (!*row || !(*row)->Live(tx.now)) return Error::NotFound(DocName(container, pk, id) + " does not exist");
  return std::move(**row);
}

// Why a conditional statement matched nothing: absent (kNotFound) or another etag.
Error Diagnose(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
               const std::optional<std::string>& if_match) {
  auto row = LoadRow(tx, container, pk, id);
  if (!row.ok()) return row.error();
  if (!*row || !(*row)->Live(tx.now)) return Error::NotFound(DocName(container, pk, id) + " does not exist");
  return Error::PreconditionFailed("if-match " + if_match.value_or("") + " does not match the etag of " +
                                   DocName(container, pk, id));
}

// The etag a conditional statement must require (nullptr: any live document).
const std::string* RequiredEtag(const std::optional<std::string>& if_match) {
  return (if_match && *if_match != "*") ? &*if_match : nullptr;
}

// Inserts version `v` where no live document exists (an expired one is recorded as expired first)
// and records the create. False when a live document is in the way.
Result<bool> TryCreate(Tx& tx, std::string_view container, std::string_view pk, std::string_view id,
                       const Version& v) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto inserted = InsertDoc(tx, container, pk, id, v);
    if (!inserted.ok()) return inserted.error();
    if (*inserted) {
      RecordVersion(tx, container, sql::kKindCreate, pk, id, v);
      return true;
    }
    auto row = LoadRow(tx, container, pk, id);
    if (!row.ok()) return row.error();
    if (!*row) continue;  // deleted since the insert looked: insert again
    if ((*row)->Live(tx.now)) return false;
    HCPRP_RETURN_IF_ERROR(ExpireRow(tx, container, pk, id, **row));
  }
  return Error::Unavailable("create of " + DocName(container, pk, id) + " kept racing with other writers");
}

Result<Document> ApplyCreate(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  auto created = TryCreate(tx, container, pk, op.id, v);
  if (!created.ok()) return created.error();
  if (!*created) return Error::AlreadyExists(DocName(container, pk, op.id) + " already exists");
  return MakeDocument(pk, op.id, op.body, v);
}

Status CheckCurrent(const WriteOp& op, const StoredRow& row) {
  HCPRP_RETURN_IF_ERROR(internal::CheckIfMatch(op.if_match, &row.etag));
  if (op.conditions.empty()) return Status::Ok();
  auto current = ParseStoredBody(row.body);
  if (!current.ok()) return current.error();
  return internal::CheckConditions(&*current, op.conditions);
}

Result<Document> ApplyReplace(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  const std::string* required = RequiredEtag(op.if_match);
  std::string checked_etag;
  if (!op.conditions.empty()) {
    auto row = LoadLive(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    HCPRP_RETURN_IF_ERROR(CheckCurrent(op, *row));
    checked_etag = row->etag;
    required = &checked_etag;
  }
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  auto updated = UpdateDoc(tx, container, pk, op.id, v, required);
  if (!updated.ok()) return updated.error();
  if (!*updated) return Diagnose(tx, container, pk, op.id, op.if_match);
  RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v);
  return MakeDocument(pk, op.id, op.body, v);
}

Result<Document> ApplyUpsert(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  Version v = MakeVersion(op.body, op.ttl_seconds, tx.now);
  // Each round either writes or sees a live document appear or disappear under it; a few rounds
  // settle any race with concurrent creates and deletes.
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (op.conditions.empty() && !op.if_match) {
      auto updated = UpdateDoc(tx, container, pk, op.id, v, nullptr);
      if (!updated.ok()) return updated.error();
      if (*updated) {
        RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v);
        return MakeDocument(pk, op.id, op.body, v);
      }
    } else {
      auto row = LoadRow(tx, container, pk, op.id);
      if (!row.ok()) return row.error();
      if (*row && (*row)->Live(tx.now)) {
        HCPRP_RETURN_IF_ERROR(CheckCurrent(op, **row));
        auto updated = UpdateDoc(tx, container, pk, op.id, v, nullptr);
        if (!updated.ok()) return updated.error();
        if (!*updated) return Error::Internal("upsert of " + DocName(container, pk, op.id) + " lost its row");
        RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v);
        return MakeDocument(pk, op.id, op.body, v);
      }
      if (op.if_match) {
        return Error::PreconditionFailed("if-match " + *op.if_match + ": " + DocName(container, pk, op.id) +
                                         " does not exist");
      }
      HCPRP_RETURN_IF_ERROR(internal::CheckConditions(nullptr, op.conditions));
    }
    auto created = TryCreate(tx, container, pk, op.id, v);
    if (!created.ok()) return created.error();
    if (*created) return MakeDocument(pk, op.id, op.body, v);
  }
  return Error::Unavailable("upsert of " + DocName(container, pk, op.id) + " kept racing with other writers");
}

Result<Document> ApplyDelete(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  const std::string* required = RequiredEtag(op.if_match);
  std::string checked_etag;
  if (!op.conditions.empty()) {
    auto row = LoadLive(tx, container, pk, op.id);
    if (!row.ok()) return row.error();
    HCPRP_RETURN_IF_ERROR(CheckCurrent(op, *row));
    checked_etag = row->etag;
    required = &checked_etag;
  }
  auto deleted = DeleteDoc(tx, container, pk, op.id, required);
  if (!deleted.ok()) return deleted.error();
  if (!*deleted) return Diagnose(tx, container, pk, op.id, op.if_match);
  StoredRow& old = **deleted;
  RecordChange(tx, container, sql::kKindDelete, pk, op.id, std::move(old.body), std::move(old.etag), old.ts,
               old.ttl);
  Document d;
  d.id = op.id;
  d.partition_key = std::string(pk);
  return d;
}

Result<Document> ApplyPatch(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
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
  RecordVersion(tx, container, sql::kKindReplace, pk, op.id, v);
  return MakeDocument(pk, op.id, std::move(*body), v);
}

Result<Document> ApplyRead(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
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

Result<Document> ApplyWrite(Tx& tx, std::string_view container, std::string_view pk, const WriteOp& op) {
  // An operation naming another container writes there, in the same partition and transaction.
  const std::string_view where = op.container.empty() ? container : std::string_view(op.container);
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

Status CheckFence(Tx& tx, const Lease& fence) {
  std::string what = LeaseName(fence.container, fence.partition_key, fence.name);
  Params p;
  p.Bytea(fence.container).Bytea(fence.partition_key).Bytea(fence.name);
  auto r = tx.c.Exec(sql::kLeaseFence, p, "fence: read " + what);
  if (!r.ok()) return r.error();
  if (r->rows() == 0 || r->IsNull(0, 0)) return Error::PreconditionFailed("fence: " + what + " is not held");
  auto token = static_cast<uint64_t>(r->Int8(0, 1));
  if (r->Bytes(0, 0) != fence.owner || token != fence.fencing_token) {
    return Error::PreconditionFailed("fence: " + what + " fencing token " +
                                     std::to_string(fence.fencing_token) + " is stale (now " +
                                     std::to_string(token) + ")");
  }
  if (r->Int8(0, 2) <= tx.now) return Error::PreconditionFailed("fence: " + what + " has expired");
  return Status::Ok();
}

// Inserts the transaction's changes, unnumbered (readers number them once committed, see
// pg_store.h). Runs as the last work before COMMIT, after every document lock was taken.
Status FlushChanges(Tx& tx) {
  for (auto& [container, list] : tx.changes) {
    for (const PendingChange& c : list) {
      Params p;
      p.Bytea(container).Int2(c.kind).Bytea(c.pk).Bytea(c.id).Bytea(c.body).Text(c.etag).Int8(c.ts).OptInt8(
          c.ttl);
      auto r = tx.c.Exec(sql::kInsertChange, p, "record changes of " + Printable(container));
      if (!r.ok()) return r.error();
    }
  }
  return Status::Ok();
}

// The prepared query statement of each shape.
const Statement& QueryStatement(int shape) {
  struct Table {
    std::array<std::string, sql::kQueryShapes> names, sqls;
    std::array<Statement, sql::kQueryShapes> statements;
  };
  static const Table* table = [] {
    auto* t = new Table;
    for (int s = 0; s < sql::kQueryShapes; ++s) {
      std::string q = "SELECT pk, id, body, etag, ts, ttl FROM documents WHERE container=$1";
      if (s & sql::kQueryPartition) q += " AND pk=$2";
      if (s & sql::kQueryType) q += " AND resource_type=$3";
      if (s & sql::kQueryRid) q += " AND resource_id=$4";
      if (s & sql::kQueryPrefix) q += " AND resource_id>=$5";
      if (s & sql::kQueryPrefixUpper) q += " AND resource_id<$6";
      if (s & sql::kQueryActive) q += " AND non_terminal";
      q += " AND (expires_at IS NULL OR expires_at>$7)";
      if (s & sql::kQueryAfter) q += (s & sql::kQueryPartition) ? " AND id>$9" : " AND (pk, id)>($8, $9)";
      q += " ORDER BY pk, id LIMIT $10";
      t->names[s] = "h_query" + std::to_string(s);
      t->sqls[s] = std::move(q);
      t->statements[s] = Statement{t->names[s].c_str(), t->sqls[s].c_str()};
    }
    return t;
  }();
  return table->statements[static_cast<size_t>(shape)];
}

bool ValidSchemaName(std::string_view s) {
  if (s.empty() || s.size() > 40) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

int64_t MigrationLockKey(std::string_view schema) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : std::string("hcprp-migrations:") + std::string(schema)) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

class PgStore final : public internal::PointWritesAsBatches {
 public:
  static Result<std::unique_ptr<Store>> Open(PgTarget target, const OpenOptions& options);
  ~PgStore() override;

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
  PgStore(PgTarget target, const OpenOptions& options);

  Result<std::unique_ptr<PgConnection>> Connect() const;
  static Status Migrate(PgConnection& c, const PgTarget& t, const OpenOptions& options);

  // The pool. Acquire sets `reused` when the connection had been used before.
  Result<std::unique_ptr<PgConnection>> Acquire(bool& reused);
  void Release(std::unique_ptr<PgConnection> c);
  void DropIdle();

  // Runs `f(PgConnection&)` (read-only work); reruns it once on a new connection when a reused one
  // turns out to be dead.
  template <typename F>
  auto WithConn(F&& f) -> decltype(f(std::declval<PgConnection&>()));
  // Runs `body(Tx&)` in a transaction (BEGIN .. changes .. COMMIT); rolls back when it fails.
  template <typename T, typename Body>
  Result<T> WriteTx(std::string_view what, Body&& body);

  Result<Document> WriteOne(std::string_view container, std::string_view pk, WriteOp op) override;
  // Removes changes older than OpenOptions::change_retention (part of PurgeExpired).
  Status TrimChanges();
  // Numbers the container's committed, unnumbered changes (a chunk of them, or all for a reader that
  // starts at "now"); returns its last sequence.
  Result<uint64_t> NumberChanges(PgConnection& c, std::string_view container, bool all = false);

  void NotifyChanged();
  // Has the notifier thread send a NOTIFY to the other processes (coalesced).
  void AnnounceCommit();
  void NotifierLoop();
  void EnsureListener();
  void ListenLoop();
  void SweepLoop();

  // Constant after construction.
  const PgTarget target_;
  const OpenOptions options_;
  const Clock* const clock_;
  const std::string conn_options_;  // libpq "options": search_path, lock_timeout
  const std::string channel_;       // NOTIFY channel of this schema

  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<PgConnection>> idle_;  // guarded by pool_mu_
  size_t open_ = 0;                                  // guarded by pool_mu_

  std::mutex notify_mu_;
  std::condition_variable notify_cv_;
  uint64_t generation_ = 0;  // guarded by notify_mu_; bumped after every commit seen

  std::mutex announce_mu_;
  std::condition_variable announce_cv_;
  bool announce_due_ = false;   // guarded by announce_mu_
  bool announce_stop_ = false;  // guarded by announce_mu_
  std::thread notifier_;        // guarded by announce_mu_; started by the first commit with changes

  std::mutex listener_mu_;
  std::thread listener_;         // guarded by listener_mu_; started by the first wait
  int wake_pipe_[2] = {-1, -1};  // constant once the listener runs; written to stop it
  std::atomic<bool> stopping_{false};

  std::mutex sweeper_mu_;
  std::condition_variable sweeper_cv_;
  bool sweeper_stop_ = false;  // guarded by sweeper_mu_
  std::thread sweeper_;
};

PgStore::PgStore(PgTarget target, const OpenOptions& options)
    : target_(std::move(target)),
      options_(options),
      clock_(options.clock),
      conn_options_("-c search_path=" + target_.schema +
                    " -c lock_timeout=" + std::to_string(std::max<int64_t>(1, options.busy_timeout.count()))),
      channel_("hcprp_feed_" + target_.schema) {}

Result<std::unique_ptr<PgConnection>> PgStore::Connect() const {
  auto c = PgConnection::Connect(target_.libpq_url, conn_options_, kConnectTimeoutSeconds);
  if (c.ok()) (*c)->set_query_timeout(target_.query_timeout);
  return c;
}

Result<std::unique_ptr<Store>> PgStore::Open(PgTarget target, const OpenOptions& options) {
  std::unique_ptr<PgStore> s(new PgStore(std::move(target), options));
  auto c = s->Connect();
  if (!c.ok()) return c.error();
  (*c)->set_query_timeout(std::chrono::milliseconds(0));  // a migration may rewrite a large table
  HCPRP_RETURN_IF_ERROR(Migrate(**c, s->target_, options));
  (*c)->set_query_timeout(s->target_.query_timeout);
  {
    std::lock_guard lk(s->pool_mu_);
    s->open_ = 1;
  }
  s->Release(std::move(*c));
  if (options.purge_interval.count() > 0) s->sweeper_ = std::thread([raw = s.get()] { raw->SweepLoop(); });
  return std::unique_ptr<Store>(std::move(s));
}

Status PgStore::Migrate(PgConnection& c, const PgTarget& t, const OpenOptions& options) {
  std::string where = "migrate schema " + t.schema;
  auto run = [&]() -> Status {
    HCPRP_RETURN_IF_ERROR(c.ExecSql("BEGIN", where));
    HCPRP_RETURN_IF_ERROR(c.ExecSql(
        "SET LOCAL lock_timeout = " + std::to_string(std::max<int64_t>(1, options.busy_timeout.count())),
        where));
    HCPRP_RETURN_IF_ERROR(
        c.ExecSql("SELECT pg_advisory_xact_lock(" + std::to_string(MigrationLockKey(t.schema)) + ")", where));
    HCPRP_RETURN_IF_ERROR(c.ExecSql("CREATE SCHEMA IF NOT EXISTS " + t.schema, where));
    HCPRP_RETURN_IF_ERROR(c.ExecSql("CREATE TABLE IF NOT EXISTS " + t.schema +
                                        ".schema_migrations (version integer PRIMARY KEY, "
                                        "applied_at timestamptz NOT NULL DEFAULT now())",
                                    where));
    auto current =
        c.ExecSql("SELECT coalesce(max(version), 0) FROM " + t.schema + ".schema_migrations", where);
    if (!current.ok()) return current.error();
    int version = 0;
    std::string_view text = current->Bytes(0, 0);
    std::from_chars(text.data(), text.data() + text.size(), version);
    const auto& migrations = sql::Migrations();
    if (version > migrations.back().version) {
      return Error::InvalidArgument(where + ": the store has schema version " + std::to_string(version) +
                                    ", newer than this binary's " +
                                    std::to_string(migrations.back().version));
    }
    for (const auto& m : migrations) {
      if (m.version <= version) continue;
      std::string step = where + ": migration " + std::to_string(m.version);
      HCPRP_RETURN_IF_ERROR(c.ExecSql(m.sql, step));
      HCPRP_RETURN_IF_ERROR(c.ExecSql("INSERT INTO " + t.schema + ".schema_migrations(version) VALUES (" +
                                          std::to_string(m.version) + ")",
                                      step));
    }
    HCPRP_RETURN_IF_ERROR(c.ExecSql("COMMIT", where));
    return Status::Ok();
  };
  Status st = run();
  if (!st.ok() && !c.broken()) (void)c.ExecSql("ROLLBACK", where);
  return st;
}

PgStore::~PgStore() {
  {
    std::lock_guard lk(announce_mu_);
    announce_stop_ = true;
  }
  announce_cv_.notify_all();
  if (notifier_.joinable()) notifier_.join();
  {
    std::lock_guard lk(sweeper_mu_);
    sweeper_stop_ = true;
  }
  sweeper_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  stopping_ = true;
  std::lock_guard lk(listener_mu_);
  if (listener_.joinable()) {
    char b = 1;
    (void)!write(wake_pipe_[1], &b, 1);
    listener_.join();
  }
  for (int fd : wake_pipe_) {
    if (fd >= 0) close(fd);
  }
}

Result<std::unique_ptr<PgConnection>> PgStore::Acquire(bool& reused) {
  while (true) {
    std::unique_ptr<PgConnection> c;
    {
      std::unique_lock lk(pool_mu_);
      pool_cv_.wait(lk, [&] { return !idle_.empty() || open_ < kMaxConnections; });
      if (idle_.empty()) {
        ++open_;
      } else {
        c = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (c) {
      if (!c->LooksDead()) {
        reused = true;
        return c;
      }
      c.reset();
      {
        std::lock_guard lk(pool_mu_);
        --open_;
      }
      pool_cv_.notify_one();
      continue;
    }
    reused = false;
    auto opened = Connect();
    if (!opened.ok()) {
      {
        std::lock_guard lk(pool_mu_);
        --open_;
      }
      pool_cv_.notify_one();
    }
    return opened;
  }
}

void PgStore::Release(std::unique_ptr<PgConnection> c) {
  {
    std::lock_guard lk(pool_mu_);
    if (c->broken() || PQtransactionStatus(c->raw()) != PQTRANS_IDLE) {
      --open_;
      c.reset();
    } else {
      idle_.push_back(std::move(c));
    }
  }
  pool_cv_.notify_one();
}

void PgStore::DropIdle() {
  std::vector<std::unique_ptr<PgConnection>> dropped;
  {
    std::lock_guard lk(pool_mu_);
    dropped.swap(idle_);
    open_ -= dropped.size();
  }
  pool_cv_.notify_all();
}

template <typename F>
auto PgStore::WithConn(F&& f) -> decltype(f(std::declval<PgConnection&>())) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    auto c = Acquire(reused);
    if (!c.ok()) return c.error();
    auto r = f(**c);
    bool broken = (*c)->broken() && !(*c)->timed_out();  // a stuck server: a new connection won't help
    Release(std::move(*c));
    if (!r.ok() && broken && reused && attempt == 0) {
      DropIdle();  // the server went away: the other idle connections are dead too
      continue;
    }
    return r;
  }
}

template <typename T, typename Body>
Result<T> PgStore::WriteTx(std::string_view what, Body&& body) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    auto acquired = Acquire(reused);
    if (!acquired.ok()) return acquired.error();
    std::unique_ptr<PgConnection> c = std::move(*acquired);
    auto begin = c->Exec(sql::kBegin, Params(), std::string(what) + ": begin transaction");
    if (!begin.ok()) {
      bool broken = c->broken() && !c->timed_out();
      Release(std::move(c));
      if (broken && reused && attempt == 0) {
        DropIdle();
        continue;
      }
      return begin.error();
    }
    Tx tx{*c, clock_->NowMillis(), {}};
    Result<T> r = body(tx);
    if (r.ok()) {
      Status flushed = FlushChanges(tx);
      if (!flushed.ok()) r = flushed.error();
    }
    if (!r.ok()) {
      std::string state = c->last_sqlstate();
      if (!c->broken()) (void)c->Exec(sql::kRollback, Params(), "rollback");
      Release(std::move(c));
      if (IsRetryableSqlstate(state) && attempt + 1 < kTxAttempts) continue;
      if (state == kReadOnlySqlstate && attempt == 0) {
        // This server was demoted (a switchover): nothing was written; the pool's other
        // connections lead there too. A new connection goes to the primary, if there is one yet.
        DropIdle();
        continue;
      }
      return r;
    }
    auto commit = c->Exec(sql::kCommit, Params(), std::string(what) + ": commit");
    if (!commit.ok()) {
      std::string state = c->last_sqlstate();
      if (!c->broken()) (void)c->Exec(sql::kRollback, Params(), "rollback");
      Release(std::move(c));
      if (IsRetryableSqlstate(state) && attempt + 1 < kTxAttempts) continue;
      return commit.error();
    }
    Release(std::move(c));
    if (!tx.changes.empty()) {
      NotifyChanged();
      AnnounceCommit();
    }
    return r;
  }
}

void PgStore::AnnounceCommit() {
  std::lock_guard lk(announce_mu_);
  if (announce_stop_) return;
  announce_due_ = true;
  if (!notifier_.joinable()) {
    notifier_ = std::thread([this] { NotifierLoop(); });
  } else {
    announce_cv_.notify_one();
  }
}

void PgStore::NotifierLoop() {
  // Its own connection, committing asynchronously: a notification needs no WAL flush, so the
  // server's lock on the notification queue is held for microseconds, not for a disk write, and
  // writers never wait for it. Commits that arrive while a NOTIFY is in flight share the next one.
  // A process that dies between a commit and its NOTIFY leaves the other processes' waiters to
  // their periodic re-check.
  std::unique_ptr<PgConnection> conn;
  auto backoff = 50ms;
  std::unique_lock lk(announce_mu_);
  while (true) {
    announce_cv_.wait(lk, [&] { return announce_due_ || announce_stop_; });
    if (announce_stop_) return;
    announce_due_ = false;
    lk.unlock();
    if (!conn) {
      auto c = PgConnection::Connect(target_.libpq_url, conn_options_ + " -c synchronous_commit=off",
                                     kConnectTimeoutSeconds);
      if (c.ok()) {
        conn = std::move(*c);
        conn->set_query_timeout(target_.query_timeout);
      }
    }
    bool sent = conn && conn->ExecSql("NOTIFY " + channel_, "notify").ok();
    lk.lock();
    if (sent) {
      backoff = 50ms;
      continue;
    }
    conn.reset();
    announce_due_ = true;  // the server is away: try again after a pause (or at the next commit)
    announce_cv_.wait_for(lk, backoff, [&] { return announce_stop_; });
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 2s);
  }
}

void PgStore::NotifyChanged() {
  {
    std::lock_guard lk(notify_mu_);
    ++generation_;
  }
  notify_cv_.notify_all();
}

Result<Document> PgStore::WriteOne(std::string_view container, std::string_view pk, WriteOp op) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  HCPRP_RETURN_IF_ERROR(ValidateOp(op));
  return WriteTx<Document>("write", [&](Tx& tx) { return ApplyWrite(tx, container, pk, op); });
}

Result<Document> PgStore::Read(std::string_view container, std::string_view pk, std::string_view id) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  int64_t now = clock_->NowMillis();
  return WithConn([&](PgConnection& c) -> Result<Document> {
    Params p;
    p.Bytea(container).Bytea(pk).Bytea(id).Int8(now);
    auto r = c.Exec(sql::kReadDoc, p, "read " + DocName(container, pk, id));
    if (!r.ok()) return r.error();
    if (r->rows() == 0) return Error::NotFound(DocName(container, pk, id) + " does not exist");
    auto body = ParseStoredBody(r->Bytes(0, 0));
    if (!body.ok()) return body.error();
    Document d;
    d.id = std::string(id);
    d.partition_key = std::string(pk);
    d.body = std::move(*body);
    d.etag = r->String(0, 1);
    d.timestamp_ms = r->Int8(0, 2);
    d.ttl_seconds = r->OptInt8(0, 3);
    return d;
  });
}

Result<BatchResult> PgStore::Batch(std::string_view container, std::string_view pk, std::vector<WriteOp> ops,
                                   const Lease* fence) {
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

Result<QueryPage> PgStore::Query(const QueryOptions& o) {
  HCPRP_RETURN_IF_ERROR(internal::ValidateQuery(o));
  int shape = 0;
  if (o.partition_key) shape |= sql::kQueryPartition;
  std::optional<std::string> type, rid, prefix, upper;
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
    upper = internal::PrefixUpperBound(*prefix);
    if (upper) shape |= sql::kQueryPrefixUpper;
  }
  if (o.non_terminal_only) shape |= sql::kQueryActive;
  std::optional<std::string> after_pk, after_id;
  if (!o.continuation.empty()) {
    auto decoded = internal::DecodeQueryContinuation(o.continuation);
    if (!decoded.ok()) return decoded.error();
    if (o.partition_key && decoded->first != *o.partition_key) {
      return Error::InvalidArgument("the continuation token belongs to another partition");
    }
    after_pk = std::move(decoded->first);
    after_id = std::move(decoded->second);
    shape |= sql::kQueryAfter;
  }
  int64_t now = clock_->NowMillis();
  int64_t limit = static_cast<int64_t>(std::min<size_t>(o.max_items, INT32_MAX)) + 1;
  std::optional<std::string> pk;
  if (o.partition_key) pk = *o.partition_key;
  return WithConn([&](PgConnection& c) -> Result<QueryPage> {
    Params p;
    p.Bytea(o.container).OptBytea(pk).OptBytea(type).OptBytea(rid).OptBytea(prefix).OptBytea(upper).Int8(now);
    p.OptBytea(after_pk).OptBytea(after_id).Int8(limit);
    auto r = c.Exec(QueryStatement(shape), p, "query " + Printable(o.container));
    if (!r.ok()) return r.error();
    QueryPage page;
    for (int i = 0; i < r->rows(); ++i) {
      if (page.documents.size() == o.max_items) {
        const Document& last = page.documents.back();
        page.continuation = internal::EncodeQueryContinuation(last.partition_key, last.id);
        break;
      }
      auto body = ParseStoredBody(r->Bytes(i, 2));
      if (!body.ok()) return body.error();
      Document d;
      d.partition_key = r->String(i, 0);
      d.id = r->String(i, 1);
      d.body = std::move(*body);
      d.etag = r->String(i, 3);
      d.timestamp_ms = r->Int8(i, 4);
      d.ttl_seconds = r->OptInt8(i, 5);
      page.documents.push_back(std::move(d));
    }
    return page;
  });
}

Result<QueryPage> PgStore::ListPartitions(std::string_view container, size_t max_items,
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
  int64_t limit = static_cast<int64_t>(std::min<size_t>(max_items, INT32_MAX)) + 1;
  return WithConn([&](PgConnection& c) -> Result<QueryPage> {
    Params p;
    p.Bytea(container);
    if (after) p.Bytea(*after);
    p.Int8(now).Int8(limit);
    auto r = c.Exec(after ? sql::kListPartitionsNext : sql::kListPartitionsFirst, p,
                    "list partitions of " + Printable(container));
    if (!r.ok()) return r.error();
    QueryPage page;
    for (int i = 0; i < r->rows(); ++i) {
      if (page.documents.size() == max_items) {
        page.continuation = internal::EncodePartitionContinuation(page.documents.back().partition_key);
        break;
      }
      Document d;
      d.partition_key = r->String(i, 0);
      page.documents.push_back(std::move(d));
    }
    return page;
  });
}

Result<uint64_t> PgStore::NumberChanges(PgConnection& c, std::string_view container, bool all) {
  Params p;
  p.Bytea(container).Int8(all ? std::numeric_limits<int64_t>::max() : sql::kNumberChunk);
  auto r = c.Exec(sql::kNumberChanges, p, "number the changes of " + Printable(container));
  if (!r.ok()) return r.error();
  return static_cast<uint64_t>(r->Int8(0, 0));
}

Result<ChangePage> PgStore::ReadChanges(std::string_view container, std::string_view continuation,
                                        size_t max_changes) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  if (max_changes == 0) return Error::InvalidArgument("max_changes must be > 0");
  auto position = internal::DecodeChangeContinuation(continuation);
  if (!position.ok()) return position.error();
  return WithConn([&](PgConnection& c) -> Result<ChangePage> {
    auto last = NumberChanges(c, container, /*all=*/!*position);
    if (!last.ok()) return last.error();
    const uint64_t start = *position ? **position : *last;
    // A position past the feed's end names numbers this server never gave: it took over from a
    // primary whose last acknowledged commits it had not received (asynchronous replication).
    // Reading on would skip the changes that get those numbers here: the reader must resync.
    if (start > *last) return FeedPositionAhead(container, start, *last);
    uint64_t after = start;
    ChangePage page;
    bool gap = false;
    // Superseded versions are stepped over (the position still moves past them): read ranges until
    // the page is full or the feed ends.
    for (bool first = true; page.changes.size() < max_changes; first = false) {
      const size_t want = max_changes - page.changes.size();
      Params p;
      p.Bytea(container)
          .Int8(static_cast<int64_t>(after))
          .Int8(static_cast<int64_t>(std::min<size_t>(want, INT32_MAX)));
      auto r = c.Exec(sql::kReadChanges, p, "read changes of " + Printable(container));
      if (!r.ok()) return r.error();
      // Numbers are consecutive: a read that does not start right after the position (or finds
      // nothing below the last number) met changes removed by retention.
      if (first) gap = r->rows() == 0 ? *last > start : static_cast<uint64_t>(r->Int8(0, 0)) != start + 1;
      for (int i = 0; i < r->rows(); ++i) {
        after = static_cast<uint64_t>(r->Int8(i, 0));
        if (r->IsNull(i, 4)) continue;  // a superseded version: a later change of the document follows
        Change ch;
        ch.sequence = after;
        ch.kind = ChangeKindFromInt(r->Int2(i, 1));
        ch.document.partition_key = r->String(i, 2);
        ch.document.id = r->String(i, 3);
        auto body = ParseStoredBody(r->Bytes(i, 4));
        if (!body.ok()) return body.error();
        ch.document.body = std::move(*body);
        ch.document.etag = r->String(i, 5);
        ch.document.timestamp_ms = r->Int8(i, 6);
        ch.document.ttl_seconds = r->OptInt8(i, 7);
        page.changes.push_back(std::move(ch));
      }
      if (static_cast<size_t>(r->rows()) < want) break;
    }
    if (gap && !continuation.empty()) return internal::FeedPositionExpired(container);
    page.continuation = internal::EncodeChangeContinuation(after);
    return page;
  });
}

void PgStore::EnsureListener() {
  std::lock_guard lk(listener_mu_);
  if (listener_.joinable()) return;
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    return;  // waits still wake on local commits and re-check
  listener_ = std::thread([this] { ListenLoop(); });
}

void PgStore::ListenLoop() {
  std::unique_ptr<PgConnection> conn;
  auto backoff = 50ms;
  auto sleep_interruptibly = [&](std::chrono::milliseconds d) {
    pollfd p{.fd = wake_pipe_[0], .events = POLLIN, .revents = 0};
    (void)poll(&p, 1, static_cast<int>(d.count()));
  };
  while (!stopping_) {
    if (!conn) {
      auto c = Connect();
      if (c.ok() && (*c)->ExecSql("LISTEN " + channel_, "listen").ok()) {
        conn = std::move(*c);
        backoff = 50ms;
        NotifyChanged();  // notifications may have been missed while disconnected: re-check
      } else {
        sleep_interruptibly(backoff);
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, 2s);
        continue;
      }
    }
    pollfd fds[2] = {{.fd = PQsocket(conn->raw()), .events = POLLIN, .revents = 0},
                     {.fd = wake_pipe_[0], .events = POLLIN, .revents = 0}};
    int n = poll(fds, 2, 60000);
    if (stopping_) break;
    if (n <= 0 || fds[0].revents == 0) continue;
    bool ok = PQconsumeInput(conn->raw()) != 0;
    bool any = false;
    while (PGnotify* note = PQnotifies(conn->raw())) {
      any = true;
      PQfreemem(note);
    }
    if (!ok || conn->broken()) {
      conn.reset();
      any = true;
    }
    if (any) NotifyChanged();
  }
}

Result<bool> PgStore::WaitForChanges(std::string_view container, std::string_view continuation,
                                     std::chrono::milliseconds timeout) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  auto position = internal::DecodeChangeContinuation(continuation);
  if (!position.ok()) return position.error();
  auto deadline = std::chrono::steady_clock::now() + std::max(timeout, std::chrono::milliseconds(0));
  EnsureListener();
  uint64_t after = 0;
  if (*position) {
    after = **position;
  } else {
    auto last = WithConn([&](PgConnection& c) { return NumberChanges(c, container, /*all=*/true); });
    if (!last.ok()) return last.error();
    after = *last;
  }
  while (true) {
    uint64_t generation = 0;
    {
      std::lock_guard lk(notify_mu_);
      generation = generation_;
    }
    auto state = WithConn([&](PgConnection& c) -> Result<bool> {
      Params p;
      p.Bytea(container);
      auto r = c.Exec(sql::kFeedState, p, "change feed state of " + Printable(container));
      if (!r.ok()) return r.error();
      return static_cast<uint64_t>(r->Int8(0, 0)) > after || r->Bool(0, 1);
    });
    if (!state.ok()) return state.error();
    if (*state) return true;
    std::unique_lock lk(notify_mu_);
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    auto until = std::min(deadline, now + kWaitSafetyInterval);
    notify_cv_.wait_until(lk, until, [&] { return generation_ != generation; });
  }
}

Result<Lease> PgStore::AcquireLease(std::string_view container, std::string_view pk, std::string_view name,
                                    std::string_view owner, std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  if (ttl.count() <= 0) return Error::InvalidArgument("a lease ttl must be > 0");
  return WriteTx<Lease>("acquire lease", [&](Tx& tx) -> Result<Lease> {
    std::string what = LeaseName(container, pk, name);
    Lease l;
    l.container = std::string(container);
    l.partition_key = std::string(pk);
    l.name = std::string(name);
    l.owner = std::string(owner);
    l.etag = internal::NewEtag();
    int64_t expires = tx.now + ToMillis(ttl);
    l.expires_at = FromMillis(expires);
    Params p;
    p.Bytea(container).Bytea(pk).Bytea(name).Bytea(owner).Text(l.etag).Int8(expires).Int8(tx.now);
    auto r = tx.c.Exec(sql::kLeaseAcquire, p, "acquire " + what);
    if (!r.ok()) return r.error();
    if (r->rows() == 1) {
      l.fencing_token = static_cast<uint64_t>(r->Int8(0, 0));
      return l;
    }
    Params q;
    q.Bytea(container).Bytea(pk).Bytea(name);
    auto holder = tx.c.Exec(sql::kLeaseHolder, q, "read " + what);
    if (!holder.ok()) return holder.error();
    std::string by =
        holder->rows() == 1 && !holder->IsNull(0, 0) ? Printable(holder->Bytes(0, 0)) : "another owner";
    return Error::Conflict(what + " is held by \"" + by + "\"");
  });
}

Result<Lease> PgStore::RenewLease(const Lease& lease, std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(lease.container));
  if (ttl.count() <= 0) return Error::InvalidArgument("a lease ttl must be > 0");
  return WriteTx<Lease>("renew lease", [&](Tx& tx) -> Result<Lease> {
    std::string what = LeaseName(lease.container, lease.partition_key, lease.name);
    Lease l = lease;
    l.etag = internal::NewEtag();
    int64_t expires = tx.now + ToMillis(ttl);
    Params p;
    p.Bytea(lease.container).Bytea(lease.partition_key).Bytea(lease.name).Text(lease.etag).Text(l.etag);
    p.Int8(expires).Int8(tx.now);
    auto r = tx.c.Exec(sql::kLeaseRenew, p, "renew " + what);
    if (!r.ok()) return r.error();
    if (r->rows() == 0) {
      return Error::PreconditionFailed(what +
                                       " was lost (expired, taken over, released or renewed elsewhere)");
    }
    l.owner = r->String(0, 0);
    l.fencing_token = static_cast<uint64_t>(r->Int8(0, 1));
    l.expires_at = FromMillis(expires);
    return l;
  });
}

Status PgStore::ReleaseLease(const Lease& lease) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(lease.container));
  auto r = WriteTx<bool>("release lease", [&](Tx& tx) -> Result<bool> {
    std::string what = LeaseName(lease.container, lease.partition_key, lease.name);
    Params p;
    p.Bytea(lease.container).Bytea(lease.partition_key).Bytea(lease.name).Text(lease.etag);
    auto u = tx.c.Exec(sql::kLeaseRelease, p, "release " + what);
    if (!u.ok()) return u.error();
    if (u->affected() == 0) {
      return Error::PreconditionFailed(what + " was lost (taken over, released or renewed elsewhere)");
    }
    return true;
  });
  if (!r.ok()) return r.error();
  return Status::Ok();
}

Result<size_t> PgStore::PurgeExpired() {
  size_t total = 0;
  while (true) {
    auto n = WriteTx<size_t>("purge expired documents", [&](Tx& tx) -> Result<size_t> {
      Params p;
      p.Int8(tx.now).Int8(kPurgeChunk);
      auto r = tx.c.Exec(sql::kPurgeChunk, p, "purge expired documents");
      if (!r.ok()) return r.error();
      for (int i = 0; i < r->rows(); ++i) {
        RecordChange(tx, r->Bytes(i, 0), sql::kKindExpire, r->Bytes(i, 1), r->Bytes(i, 2), r->String(i, 3),
                     r->String(i, 4), r->Int8(i, 5), r->OptInt8(i, 6));
      }
      return static_cast<size_t>(r->rows());
    });
    if (!n.ok()) return n.error();
    total += *n;
    if (*n < static_cast<size_t>(kPurgeChunk)) break;
  }
  HCPRP_RETURN_IF_ERROR(TrimChanges());
  return total;
}

Status PgStore::TrimChanges() {
  const bool by_time = options_.change_retention.count() > 0;
  const bool by_size = options_.change_retention_changes > 0;
  if (!by_time && !by_size) return Status::Ok();
  const int64_t cutoff =
      by_time ? clock_->NowMillis() -
                    std::chrono::duration_cast<std::chrono::milliseconds>(options_.change_retention).count()
              : std::numeric_limits<int64_t>::min();
  const int64_t keep = by_size ? static_cast<int64_t>(std::min<uint64_t>(options_.change_retention_changes,
                                                                         std::numeric_limits<int64_t>::max()))
                               : std::numeric_limits<int64_t>::max();
  auto containers = WithConn([&](PgConnection& c) -> Result<std::vector<std::string>> {
    auto pending = c.Exec(sql::kPendingContainers, Params(), "find unnumbered changes");
    if (!pending.ok()) return pending.error();
    for (int i = 0; i < pending->rows(); ++i) {
      auto numbered = NumberChanges(c, pending->Bytes(i, 0), /*all=*/true);
      if (!numbered.ok()) return numbered.error();
    }
    auto feeds = c.Exec(sql::kFeedContainers, Params(), "list change feeds");
    if (!feeds.ok()) return feeds.error();
    std::vector<std::string> out;
    for (int i = 0; i < feeds->rows(); ++i) out.push_back(feeds->String(i, 0));
    return out;
  });
  if (!containers.ok()) return containers.error();
  for (const std::string& container : *containers) {
    while (true) {
      auto removed = WithConn([&](PgConnection& c) -> Result<int> {
        Params p;
        p.Bytea(container).Int8(cutoff).Int8(kPurgeChunk).Int8(keep);
        auto r = c.Exec(sql::kTrimChanges, p, "trim the change feed of " + Printable(container));
        if (!r.ok()) return r.error();
        return r->affected();
      });
      if (!removed.ok()) return removed.error();
      if (*removed < kPurgeChunk) break;
    }
  }
  return Status::Ok();
}

void PgStore::SweepLoop() {
  std::unique_lock lk(sweeper_mu_);
  while (!sweeper_stop_) {
    if (sweeper_cv_.wait_for(lk, options_.purge_interval, [&] { return sweeper_stop_; })) break;
    lk.unlock();
    (void)PurgeExpired();  // a failure (server down) is retried at the next interval
    lk.lock();
  }
}

}  // namespace

Result<PgTarget> ParsePostgresUrl(std::string_view url) {
  if (url.substr(0, 13) != "postgresql://" && url.substr(0, 11) != "postgres://") {
    return Error::InvalidArgument("bad PostgreSQL store URL \"" + std::string(url) +
                                  "\": expected postgresql://user@host:port/db");
  }
  PgTarget t;
  t.schema = "hcprp";
  std::string_view base = url;
  std::string_view query;
  if (size_t q = url.find('?'); q != std::string_view::npos) {
    base = url.substr(0, q);
    query = url.substr(q + 1);
  }
  std::string kept;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (kv.substr(0, 17) == "query_timeout_ms=") {
      std::string_view v = kv.substr(17);
      int64_t ms = -1;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
      if (ec != std::errc() || end != v.data() + v.size() || ms < 0 || ms > 86'400'000) {
        return Error::InvalidArgument("PostgreSQL store URL: query_timeout_ms \"" + Printable(v) +
                                      "\" must be a number of milliseconds from 0 to 86400000");
      }
      t.query_timeout = std::chrono::milliseconds(ms);
    } else if (kv.substr(0, 7) == "schema=") {
      t.schema = std::string(kv.substr(7));
      if (!ValidSchemaName(t.schema)) {
        return Error::InvalidArgument("PostgreSQL store URL: schema \"" + Printable(t.schema) +
                                      "\" must be 1-40 characters of [a-z0-9_]");
      }
    } else if (!kv.empty()) {
      kept += kept.empty() ? "?" : "&";
      kept += kv;
    }
  }
  // Several hosts (a primary and its standbys): sessions must go to the one that takes writes,
  // whichever it is now, unless the URL says otherwise.
  std::string_view authority = base.substr(base.find("://") + 3);
  authority = authority.substr(0, authority.find('/'));
  if (authority.find(',') != std::string_view::npos &&
      kept.find("target_session_attrs=") == std::string::npos) {
    kept += kept.empty() ? "?" : "&";
    kept += "target_session_attrs=read-write";
  }
  t.libpq_url = std::string(base) + kept;
  return t;
}

Result<std::unique_ptr<Store>> OpenPostgresStore(std::string_view url, const OpenOptions& options) {
  if (options.clock == nullptr) return Error::InvalidArgument("OpenOptions::clock is required");
  auto target = ParsePostgresUrl(url);
  if (!target.ok()) return target.error();
  return PgStore::Open(std::move(*target), options);
}

}  // namespace hcprp::store::postgres
