"""Network namespaces for partition tests: one namespace per process of a deployment, joined by a bridge.

    net = Net()                       # a bridge in the root namespace, with address .1 of a private /24
    pg = net.node("pg")               # namespace hcprp-<pid>-pg, eth0 with address .2 on the bridge
    argv = pg.wrap(["postgres", ...]) # ip netns exec ... (the process keeps the pid Popen sees)
    net.cut(be, pg)                   # every packet between them silently dropped, both ways
    net.heal(be, pg)
    net.isolate(be) / net.rejoin(be)  # be cut from every other node
    net.link_down(be) / net.link_up(be)
    net.get("pg")                     # the node of that name (net.host for "host"), or None
    net.close()                       # kills what still runs inside, removes namespaces, veths, bridge

The root namespace (the test itself and whatever runs there) is the node net.host, address .1.
Cuts drop packets silently: both sides' neighbour (ARP) entries for each other are made permanent with a
hardware address nobody has, so frames leave and are lost on the bridge. Open TCP connections hang and
retransmit, as across a real partition, instead of being reset, and new connections time out. (tc netem
and tc drop actions would do the same per link, but many kernels, CI's included, lack their modules.)
link_down() is the other kind of failure: the carrier goes away.

Names carry the test's pid (namespaces hcprp-<pid>-<node>, interfaces hb<pid>/hv<pid>x<n>), so tests run
side by side; the /24 is chosen from the pid among 10.200.0.0/16-10.249.255.0/24 and checked against the
routes in use. Net() first removes what runs of pids no longer alive left behind (a test killed by a
timeout cannot clean up). Needs root: skip_unless_root() exits 77 otherwise, and any other failure to set
up raises NetError (the test fails, it is not skipped).
"""

import atexit
import os
import re
import subprocess

SKIP_CODE = 77
PREFIX = "hcprp-"
BLACKHOLE_MAC = "02:00:5e:00:de:ad"  # locally administered; no interface of the test network has it


class NetError(RuntimeError):
    pass


def skip_unless_root():
    if os.geteuid() != 0:
        print("skipped: network namespaces need root", flush=True)
        raise SystemExit(SKIP_CODE)


def run(*argv, check=True, timeout=30):
    r = subprocess.run(list(argv), capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout)
    if check and r.returncode != 0:
        raise NetError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout.decode(errors="replace")


def _mac(link_line):
    m = re.search(r"link/ether ([0-9a-f:]{17})", link_line)
    if not m:
        raise NetError(f"no hardware address in {link_line!r}")
    return m.group(1)


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _netns_pids(ns):
    try:
        return [int(p) for p in run("ip", "netns", "pids", ns, check=False).split()]
    except (ValueError, subprocess.TimeoutExpired):
        return []


def remove_stale():
    """Removes the namespaces and bridges of earlier runs whose test process is gone."""
    for line in run("ip", "netns", "list", check=False).splitlines():
        m = re.match(rf"{PREFIX}(\d+)-\S+", line.split()[0] if line.split() else "")
        if m and not _alive(int(m.group(1))):
            ns = line.split()[0]
            for pid in _netns_pids(ns):
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            run("ip", "netns", "del", ns, check=False)
    for line in run("ip", "-o", "link", "show", "type", "bridge", check=False).splitlines():
        m = re.match(r"\d+: hb(\d+)[:@]", line)
        if m and not _alive(int(m.group(1))):
            run("ip", "link", "del", f"hb{m.group(1)}", check=False)


class Closing:
    """`with x:` closes x at the end of the block."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Node:
    """One namespace (or the root namespace, for Net.host) with one address on the bridge."""

    def __init__(self, net, name, index, ns):
        self.net = net
        self.name = name
        self.index = index  # the address's last octet - 1
        self.ns = ns  # None for the root namespace
        self.ip = f"{net.prefix}.{index + 1}"
        self.host_if = f"hv{net.pid}x{index}" if ns else None

    def wrap(self, argv):
        """argv run inside this node's namespace."""
        return ["ip", "netns", "exec", self.ns, *argv] if self.ns else list(argv)

    def sh(self, *argv, check=True):
        return run(*self.wrap(list(argv)), check=check)

    def __repr__(self):
        return f"{self.name}({self.ip})"


class Net(Closing):
    def __init__(self):
        remove_stale()
        self.pid = os.getpid()
        self.bridge = f"hb{self.pid}"
        self.prefix = self._pick_prefix()
        self.subnet = f"{self.prefix}.0/24"
        self.nodes = []
        self.cuts = set()  # frozenset({a, b}) of node names
        self.closed = False
        atexit.register(self.close)
        try:
            run("ip", "link", "add", self.bridge, "type", "bridge")
            # Fixed, so that it does not follow its ports' addresses as they come and go.
            run("ip", "link", "set", self.bridge, "address",
                f"02:00:5e:{self.pid >> 16 & 255:02x}:{self.pid >> 8 & 255:02x}:{self.pid & 255:02x}")
            run("ip", "addr", "add", f"{self.prefix}.1/24", "dev", self.bridge)
            run("ip", "link", "set", self.bridge, "up")
        except BaseException:
            self.close()
            raise
        self.host = Node(self, "host", 0, None)
        self.host.mac = _mac(run("ip", "-o", "link", "show", self.bridge))

    def _pick_prefix(self):
        used = run("ip", "-4", "route", "show", check=False)
        for k in range(50 * 256):
            n = (self.pid + k) % (50 * 256)
            prefix = f"10.{200 + n // 256}.{n % 256}"
            if f"{prefix}.0/24" not in used:
                return prefix
        raise NetError("no free 10.2xx.x.0/24 for the test network")

    def node(self, name):
        """A new namespace attached to the bridge, with loopback and eth0 up."""
        index = len(self.nodes) + 1
        ns = f"{PREFIX}{self.pid}-{name}"
        node = Node(self, name, index, ns)
        inner = f"hn{self.pid}x{index}"
        self.nodes.append(node)
        run("ip", "netns", "add", ns)
        run("ip", "link", "add", node.host_if, "type", "veth", "peer", "name", inner)
        run("ip", "link", "set", inner, "netns", ns)
        run("ip", "link", "set", node.host_if, "master", self.bridge)
        run("ip", "link", "set", node.host_if, "up")
        node.sh("ip", "link", "set", inner, "name", "eth0")
        node.sh("ip", "addr", "add", f"{node.ip}/24", "dev", "eth0")
        node.sh("ip", "link", "set", "eth0", "up")
        node.sh("ip", "link", "set", "lo", "up")
        node.mac = _mac(node.sh("ip", "-o", "link", "show", "eth0"))
        return node

    def get(self, name):
        """The node called `name` (the root namespace's is "host"), or None."""
        return next((n for n in [self.host, *self.nodes] if n.name == name), None)

    # -- faults -----------------------------------------------------------------------------------

    def _neigh(self, at, peer, mac):
        dev = "eth0" if at.ns else self.bridge
        at.sh("ip", "neigh", "replace", peer.ip, "lladdr", mac, "dev", dev, "nud", "permanent")

    def cut(self, a, b):
        """Drops every packet between a and b, both ways, from now on: each side's neighbour entry for
        the other names a hardware address nobody has, so frames leave and are lost on the bridge.
        Connections between them hang (retransmits, no reset); the rest of the network works."""
        key = frozenset((a.name, b.name))
        if key in self.cuts:
            return
        self._neigh(a, b, BLACKHOLE_MAC)
        self._neigh(b, a, BLACKHOLE_MAC)
        self.cuts.add(key)

    def heal(self, a, b):
        key = frozenset((a.name, b.name))
        if key not in self.cuts:
            return
        self._neigh(a, b, b.mac)
        self._neigh(b, a, a.mac)
        self.cuts.discard(key)

    def heal_all(self):
        for key in list(self.cuts):
            a, b = sorted(key)
            self.heal(self.get(a), self.get(b))

    def isolate(self, node):
        """Cuts the node from every other node."""
        for other in [self.host, *self.nodes]:
            if other is not node:
                self.cut(node, other)

    def rejoin(self, node):
        for other in [self.host, *self.nodes]:
            if other is not node:
                self.heal(node, other)

    def link_down(self, node):
        """The carrier goes: the node's end of the link sees its peer down."""
        run("ip", "link", "set", node.host_if, "down")

    def link_up(self, node):
        run("ip", "link", "set", node.host_if, "up")

    # -- teardown ---------------------------------------------------------------------------------

    def kill_inside(self):
        """SIGKILLs whatever still runs in the namespaces (only processes this test started run there)."""
        for n in self.nodes:
            for pid in _netns_pids(n.ns):
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass

    def close(self):
        """Safe to call twice; never raises."""
        if self.closed:
            return
        self.closed = True
        try:
            self.kill_inside()
        except Exception:
            pass
        for n in self.nodes:
            run("ip", "netns", "del", n.ns, check=False)
            run("ip", "link", "del", n.host_if, check=False)
        run("ip", "link", "del", self.bridge, check=False)
