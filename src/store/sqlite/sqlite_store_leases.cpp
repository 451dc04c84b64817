// Leases of the SQLite store, as primitives of its write transactions.
#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {

Result<std::optional<LeaseState>> Tx::LoadLease(std::string_view container, std::string_view pk,
                                                std::string_view name) {
  HCPRP_ASSIGN_STMT(s, c, sql::kLeaseGet);
  s.BindText(1, container);
  s.BindBlob(2, pk);
  s.BindBlob(3, name);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<LeaseState>();
  if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "read lease");
  LeaseState r;
  if (!s.IsNull(0)) r.owner = std::string(s.Blob(0));
  r.fencing_token = static_cast<uint64_t>(s.Int(2));
  r.expires_at = s.Int(3);
  return std::optional<LeaseState>(std::move(r));
}

Result<std::optional<uint64_t>> Tx::TakeLease(const Lease& lease, int64_t expires_at, std::string& holder) {
  HCPRP_ASSIGN_OR_RETURN(auto state, LoadLease(lease.container, lease.partition_key, lease.name));
  if (internal::LeaseHeldAt(state, now)) {
    holder = Printable(*state->owner);
    return std::optional<uint64_t>();
  }
  const uint64_t token = (state ? state->fencing_token : 0) + 1;
  HCPRP_ASSIGN_STMT(s, c, sql::kLeasePut);
  s.BindText(1, std::string_view(lease.container));
  s.BindBlob(2, lease.partition_key);
  s.BindBlob(3, lease.name);
  s.BindBlob(4, lease.owner);
  s.BindText(5, std::string_view(lease.etag));
  s.BindInt(6, static_cast<int64_t>(token));
  s.BindInt(7, expires_at);
  HCPRP_RETURN_IF_ERROR(s.Run("acquire " + LeaseName(lease.container, lease.partition_key, lease.name)));
  return std::optional<uint64_t>(token);
}

Result<std::optional<LeaseState>> Tx::ExtendLease(const Lease& lease, std::string_view new_etag,
                                                  int64_t expires_at) {
  std::string what = "renew " + LeaseName(lease.container, lease.partition_key, lease.name);
  HCPRP_ASSIGN_STMT(s, c, sql::kLeaseRenew);
  s.BindText(1, std::string_view(lease.container));
  s.BindBlob(2, lease.partition_key);
  s.BindBlob(3, lease.name);
  s.BindText(4, std::string_view(lease.etag));
  s.BindText(5, new_etag);
  s.BindInt(6, expires_at);
  s.BindInt(7, now);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<LeaseState>();
  if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, what);
  LeaseState held;
  held.owner = std::string(s.Blob(0));
  held.fencing_token = static_cast<uint64_t>(s.Int(1));
  held.expires_at = expires_at;
  rc = s.Step();
  if (rc != SQLITE_DONE) return SqliteError(c.db(), rc, what);
  return std::optional<LeaseState>(std::move(held));
}

Result<bool> Tx::DropLease(const Lease& lease) {
  HCPRP_ASSIGN_STMT(s, c, sql::kLeaseRelease);
  s.BindText(1, std::string_view(lease.container));
  s.BindBlob(2, lease.partition_key);
  s.BindBlob(3, lease.name);
  s.BindText(4, std::string_view(lease.etag));
  HCPRP_RETURN_IF_ERROR(s.Run("release " + LeaseName(lease.container, lease.partition_key, lease.name)));
  return sqlite3_changes(c.db()) > 0;
}
}  // namespace hcprp::store::sqlite
