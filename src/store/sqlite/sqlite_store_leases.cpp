// Leases of the SQLite store and the fencing of batches by them.
#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {
namespace {

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

}  // namespace

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
}  // namespace hcprp::store::sqlite
