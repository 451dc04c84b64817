"""Which process committed which write, read back from PostgreSQL itself, for the fence checks.

install() records the leases as they stand (op SNAPSHOT) and adds a deferred constraint trigger on the
store's documents and leases tables: it fires at COMMIT, once per row written, and records the commit instant (clock_timestamp(), the machine's clock,
which every namespace shares), the client's address (each process has its own namespace, so its own
address), the table, the row's key and, for a lease, its owner, fencing token and expiry. A transaction
that rolls back records nothing.

writes_after_takeover() is the fence's promise: a backend commits no write under a shard after another
backend took that shard's lease over. A write is attributed to the backend whose address made it; it is
covered when the latest lease write of some shard before the write's commit was that backend's (the
write's own shard is a hash the test does not repeat, so this is the weaker of the two checks, and exact
when the backend holds nothing at all, as one cut off from PostgreSQL does). Writes of the `locks`
container (member records, the event stream's place: each backend's own, not fenced) are left out.
"""

import bisect
from datetime import datetime

SQL = r"""
CREATE TABLE IF NOT EXISTS public.write_audit (
  at timestamptz NOT NULL, client inet, tbl text NOT NULL, op text NOT NULL, container text, pk text,
  id text, owner text, token bigint, expires_at bigint);
CREATE OR REPLACE FUNCTION public.audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
  IF TG_TABLE_NAME = 'leases' THEN
    INSERT INTO public.write_audit VALUES (clock_timestamp(), inet_client_addr(), TG_TABLE_NAME, TG_OP,
      encode(r.container, 'escape'), encode(r.pk, 'escape'), encode(r.name, 'escape'),
      encode(r.owner, 'escape'), r.fencing_token, r.expires_at);
  ELSE
    INSERT INTO public.write_audit VALUES (clock_timestamp(), inet_client_addr(), TG_TABLE_NAME, TG_OP,
      encode(r.container, 'escape'), encode(r.pk, 'escape'), encode(r.id, 'escape'), NULL, NULL, NULL);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS write_audit ON hcprp.documents;
DROP TRIGGER IF EXISTS write_audit ON hcprp.leases;
CREATE CONSTRAINT TRIGGER write_audit AFTER INSERT OR UPDATE OR DELETE ON hcprp.documents
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.audit_write();
CREATE CONSTRAINT TRIGGER write_audit AFTER INSERT OR UPDATE OR DELETE ON hcprp.leases
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.audit_write();
-- The leases as they stand when the audit starts: a backend that took its leases before and writes
-- before its next renewal holds them.
INSERT INTO public.write_audit
  SELECT clock_timestamp(), NULL, 'leases', 'SNAPSHOT', encode(container, 'escape'), encode(pk, 'escape'),
         encode(name, 'escape'), encode(owner, 'escape'), fencing_token, expires_at
  FROM hcprp.leases;
"""


def install(pgs):
    pgs.psql(SQL)


class Write:
    def __init__(self, fields):
        at, client, tbl, op, container, pk, key, owner, token, expires = fields
        self.at = datetime.fromisoformat(at).timestamp()
        self.client = client
        self.tbl, self.op, self.container, self.pk, self.key = tbl, op, container, pk, key
        self.owner = owner or None
        self.token = int(token) if token else None
        self.expires_at = int(expires) / 1000.0 if expires else None

    def __repr__(self):
        return f"<{self.tbl} {self.op} {self.container}/{self.pk}/{self.key} by {self.client} at {self.at:.3f}>"


def read(pgs):
    out = pgs.psql("SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"'), "
                   "host(client), tbl, op, container, pk, id, owner, token, expires_at "
                   "FROM public.write_audit ORDER BY at")
    return [Write(line.split("|")) for line in out.splitlines() if line.strip()]


def lease_history(writes):
    """{lease name: ([commit instants], [write])} in commit order."""
    hist = {}
    for w in writes:
        if w.tbl == "leases":
            times, items = hist.setdefault((w.container, w.pk, w.key), ([], []))
            times.append(w.at)
            items.append(w)
    return hist


def holder_at(hist, t):
    """{lease name: the latest lease write before t} for every lease."""
    out = {}
    for name, (times, items) in hist.items():
        i = bisect.bisect_left(times, t)
        if i > 0:
            out[name] = items[i - 1]
    return out


def fenced_writes(writes, ip):
    return [w for w in writes if w.tbl == "documents" and w.client == ip and w.container != "locks"]


def writes_after_takeover(writes, owner, ip):
    """The writes `ip` (backend `owner`) committed while no lease's latest write was `owner`'s, and the
    writes it committed after every lease it last wrote had expired (a figure: the fence is checked at the
    batch's start, its commit may follow a few milliseconds later; until a takeover that is safe)."""
    hist = lease_history(writes)
    taken, late = [], []
    for w in fenced_writes(writes, ip):
        mine = [lw for lw in holder_at(hist, w.at).values() if lw.owner == owner]
        if not mine:
            taken.append(w)
        elif max(lw.expires_at for lw in mine) < w.at:
            late.append(w)
    return taken, late


def explain(writes, w):
    """The lease writes around a write flagged by writes_after_takeover, for its failure message."""
    hist = lease_history(writes)
    lines = [f"{w!r}:"]
    for name, lw in sorted(holder_at(hist, w.at).items()):
        lines.append(f"  {name[2]}: last {lw.op} by {lw.owner} token {lw.token} at {lw.at:.3f} "
                     f"expiring {lw.expires_at if lw.expires_at is None else f'{lw.expires_at:.3f}'}")
    return "\n".join(lines)


def takeovers(writes, old_owner, after):
    """Lease writes after `after` that gave a lease last written by `old_owner` to another owner."""
    out = []
    last = {}
    for w in writes:
        if w.tbl != "leases":
            continue
        name = (w.container, w.pk, w.key)
        prev = last.get(name)
        if (w.at > after and prev is not None and prev.owner == old_owner and w.owner
                and w.owner != old_owner):
            out.append((prev, w))
        last[name] = w
    return out
