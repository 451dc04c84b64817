// Leases of the PostgreSQL store, as primitives of its transactions (Tx).
#include "store/postgres/pg_store_internal.h"

namespace hcprp::store::postgres {

// With FOR SHARE: a fenced batch keeps a takeover from committing before it does.
Result<std::optional<LeaseState>> Tx::LoadLease(std::string_view container, std::string_view pk,
                                                std::string_view name) {
  Params p;
  p.Bytea(container).Bytea(pk).Bytea(name);
  HCPRP_ASSIGN_OR_RETURN(auto r,
                         c.Exec(sql::kLeaseFence, p, "fence: read " + LeaseName(container, pk, name)));
  if (r.rows() == 0) return std::optional<LeaseState>();
  LeaseState state;
  if (!r.IsNull(0, 0)) state.owner = std::string(r.Bytes(0, 0));
  state.fencing_token = static_cast<uint64_t>(r.Int8(0, 1));
  state.expires_at = r.Int8(0, 2);
  return std::optional<LeaseState>(std::move(state));
}

// One statement takes a free or expired lease; the holder is read only when it did not.
Result<std::optional<uint64_t>> Tx::TakeLease(const Lease& lease, int64_t expires_at, std::string& holder) {
  std::string what = LeaseName(lease.container, lease.partition_key, lease.name);
  Params p;
  p.Bytea(lease.container).Bytea(lease.partition_key).Bytea(lease.name).Bytea(lease.owner).Text(lease.etag);
  p.Int8(expires_at).Int8(now);
  HCPRP_ASSIGN_OR_RETURN(auto r, c.Exec(sql::kLeaseAcquire, p, "acquire " + what));
  if (r.rows() == 1) return std::optional<uint64_t>(static_cast<uint64_t>(r.Int8(0, 0)));
  Params q;
  q.Bytea(lease.container).Bytea(lease.partition_key).Bytea(lease.name);
  HCPRP_ASSIGN_OR_RETURN(auto h, c.Exec(sql::kLeaseHolder, q, "read " + what));
  holder = h.rows() == 1 && !h.IsNull(0, 0) ? Printable(h.Bytes(0, 0)) : "another owner";
  return std::optional<uint64_t>();
}

Result<std::optional<LeaseState>> Tx::ExtendLease(const Lease& lease, std::string_view new_etag,
                                                  int64_t expires_at) {
  Params p;
  p.Bytea(lease.container).Bytea(lease.partition_key).Bytea(lease.name).Text(lease.etag).Text(new_etag);
  p.Int8(expires_at).Int8(now);
  HCPRP_ASSIGN_OR_RETURN(
      auto r,
      c.Exec(sql::kLeaseRenew, p, "renew " + LeaseName(lease.container, lease.partition_key, lease.name)));
  if (r.rows() == 0) return std::optional<LeaseState>();
  LeaseState held;
  held.owner = r.String(0, 0);
  held.fencing_token = static_cast<uint64_t>(r.Int8(0, 1));
  held.expires_at = expires_at;
  return std::optional<LeaseState>(std::move(held));
}

Result<bool> Tx::DropLease(const Lease& lease) {
  Params p;
  p.Bytea(lease.container).Bytea(lease.partition_key).Bytea(lease.name).Text(lease.etag);
  HCPRP_ASSIGN_OR_RETURN(auto r,
                         c.Exec(sql::kLeaseRelease, p,
                                "release " + LeaseName(lease.container, lease.partition_key, lease.name)));
  return r.affected() > 0;
}
}  // namespace hcprp::store::postgres
