// Leases of the PostgreSQL store and the fencing of batches by them.
#include "store/engine_core.h"
#include "store/postgres/pg_store_internal.h"

namespace hcprp::store::postgres {
Status CheckFence(Tx& tx, const Lease& fence) {
  Params p;
  p.Bytea(fence.container).Bytea(fence.partition_key).Bytea(fence.name);
  auto r = tx.c.Exec(sql::kLeaseFence, p,
                     "fence: read " + LeaseName(fence.container, fence.partition_key, fence.name));
  if (!r.ok()) return r.error();
  std::optional<internal::LeaseState> state;
  if (r->rows() > 0) {
    state.emplace();
    if (!r->IsNull(0, 0)) state->owner = std::string(r->Bytes(0, 0));
    state->fencing_token = static_cast<uint64_t>(r->Int8(0, 1));
    state->expires_at = r->Int8(0, 2);
  }
  return internal::CheckFenceState(fence, state, tx.now);
}

Result<Lease> PgStore::AcquireLease(std::string_view container, std::string_view pk, std::string_view name,
                                    std::string_view owner, std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(internal::ValidateLeaseArgs(container, ttl));
  return WriteTx<Lease>("acquire lease", [&](Tx& tx) -> Result<Lease> {
    std::string what = LeaseName(container, pk, name);
    Lease l = internal::NewLease(container, pk, name, owner, tx.now, ttl);
    int64_t expires = tx.now + ToMillis(ttl);
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
    return internal::LeaseHeld(container, pk, name, by);
  });
}

Result<Lease> PgStore::RenewLease(const Lease& lease, std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(internal::ValidateLeaseArgs(lease.container, ttl));
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
    if (r->rows() == 0) return internal::LeaseLost(lease, /*renewing=*/true);
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
    if (u->affected() == 0) return internal::LeaseLost(lease, /*renewing=*/false);
    return true;
  });
  if (!r.ok()) return r.error();
  return Status::Ok();
}
}  // namespace hcprp::store::postgres
