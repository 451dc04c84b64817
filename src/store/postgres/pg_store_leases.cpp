// Leases of the PostgreSQL store and the fencing of batches by them.
#include "store/postgres/pg_store_internal.h"

namespace hcprp::store::postgres {
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
}  // namespace hcprp::store::postgres
