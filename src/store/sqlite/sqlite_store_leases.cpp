// Leases of the SQLite store and the fencing of batches by them.
#include "store/engine_core.h"
#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {
namespace {

using internal::LeaseState;

Result<std::optional<LeaseState>> LoadLease(Tx& tx, std::string_view container, std::string_view pk,
                                            std::string_view name) {
  HCPRP_ASSIGN_STMT(s, tx.c, sql::kLeaseGet);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, name);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<LeaseState>();
  if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "read lease");
  LeaseState r;
  if (!s.IsNull(0)) r.owner = std::string(s.Blob(0));
  r.fencing_token = static_cast<uint64_t>(s.Int(2));
  r.expires_at = s.Int(3);
  return std::optional<LeaseState>(std::move(r));
}

}  // namespace

Status CheckFence(Tx& tx, const Lease& fence) {
  auto row = LoadLease(tx, fence.container, fence.partition_key, fence.name);
  if (!row.ok()) return row.error();
  return internal::CheckFenceState(fence, *row, tx.now);
}

Result<Lease> SqliteStore::AcquireLease(std::string_view container, std::string_view pk,
                                        std::string_view name, std::string_view owner,
                                        std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(internal::ValidateLeaseArgs(container, ttl));
  return WriteTx<Lease>("acquire lease", [&](Tx& tx) -> Result<Lease> {
    auto row = LoadLease(tx, container, pk, name);
    if (!row.ok()) return row.error();
    if (*row && (*row)->owner && (*row)->expires_at > tx.now) {
      return internal::LeaseHeld(container, pk, name, Printable(*(*row)->owner));
    }
    Lease l = internal::NewLease(container, pk, name, owner, tx.now, ttl);
    l.fencing_token = (*row ? (*row)->fencing_token : 0) + 1;
    int64_t expires = tx.now + ToMillis(ttl);
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
  HCPRP_RETURN_IF_ERROR(internal::ValidateLeaseArgs(lease.container, ttl));
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
    if (rc == SQLITE_DONE) return internal::LeaseLost(lease, /*renewing=*/true);
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
    if (sqlite3_changes(tx.c.db()) == 0) return internal::LeaseLost(lease, /*renewing=*/false);
    return true;
  });
  if (!r.ok()) return r.error();
  return Status::Ok();
}
}  // namespace hcprp::store::sqlite
