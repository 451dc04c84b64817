"""Network namespaces on one bridge, with links that can be cut while the processes behind them run.

Network(["node1", "node2"]) makes a bridge in the caller's namespace (holding the bridge's address, so
the caller's own processes are on the network too) and one namespace per member, joined to the bridge
by a veth pair. Names (namespaces, bridge, host-side veths) and the /24 subnet carry a per-run part
(the pid), so several runs can share a machine; close() removes everything, and a failed set-up
removes what it made.

cut(member) gives both ends of the member's veth a queue that holds nothing (`tc qdisc ... pfifo
limit 0`, which unlike netem needs no kernel module): every packet to and from it is dropped, so
established connections hang and new ones time out, as across a real partition, while the member's
loopback (and its own address, which routes through loopback) keeps working. heal() removes it. wrap(member, argv) runs a command inside the member's namespace; host(member) is its
address ("the caller" for any name that is not a member: the bridge's).

Needs root and iproute2 (`ip`, `tc`); require_root() exits 77 (skipped) only when not root.

    with Network(["node1", "node2"]) as net:
        subprocess.run(net.wrap("node1", ["ping", "-c1", net.host("node2")]))
        net.cut("node1")
        net.heal("node1")
"""

import os
import subprocess

SKIP_CODE = 77


def require_root():
    if os.geteuid() != 0:
        print("skipped: network namespaces need root", flush=True)
        raise SystemExit(SKIP_CODE)


def _ip(*args, ns=None):
    argv = ["ip", *args] if ns is None else ["ip", "netns", "exec", ns, "ip", *args]
    r = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.decode('utf-8', 'replace').strip()}")


def _tc(*args, ns=None):
    argv = ["tc", *args] if ns is None else ["ip", "netns", "exec", ns, "tc", *args]
    r = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.decode('utf-8', 'replace').strip()}")


class Network:
    def __init__(self, members, tag=None):
        tag = os.getpid() if tag is None else tag
        self.tag = tag % 100000
        self.bridge = f"hbr{self.tag}"
        # 10.A.B.0/24, A in 100-227, B from the low bits: distinct for concurrent runs in practice.
        prefix = f"10.{100 + (tag >> 8) % 128}.{tag & 0xff}"
        self.subnet = f"{prefix}.0/24"
        self.bridge_ip = f"{prefix}.1"
        self.members = {}  # name -> (namespace, host-side veth, address)
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.bridge_ip}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i, name in enumerate(members):
                self._add_member(name, f"{prefix}.{11 + i}", i)
        except BaseException:
            self.close()
            raise

    def _add_member(self, name, address, i):
        ns, veth = f"hcprp-{self.tag}-{name}", f"hve{self.tag}x{i}"
        _ip("netns", "add", ns)
        self.members[name] = (ns, veth, address)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", veth, "master", self.bridge)
        _ip("link", "set", veth, "up")
        _ip("link", "set", "lo", "up", ns=ns)
        _ip("addr", "add", f"{address}/24", "dev", "eth0", ns=ns)
        _ip("link", "set", "eth0", "up", ns=ns)

    def host(self, name):
        return self.members[name][2] if name in self.members else self.bridge_ip

    def namespace(self, name):
        return self.members[name][0]

    def wrap(self, name, argv):
        if name not in self.members:
            return list(argv)
        return ["ip", "netns", "exec", self.members[name][0], *argv]

    def cut(self, name):
        ns, veth, _ = self.members[name]
        # A FIFO of length 0 never lets a packet through (and, unlike a longer one, no packet bypasses
        # it): 100% loss in both directions.
        _tc("qdisc", "replace", "dev", veth, "root", "pfifo", "limit", "0")
        _tc("qdisc", "replace", "dev", "eth0", "root", "pfifo", "limit", "0", ns=ns)

    def heal(self, name):
        ns, veth, _ = self.members[name]
        _tc("qdisc", "del", "dev", veth, "root")
        _tc("qdisc", "del", "dev", "eth0", "root", ns=ns)

    def close(self):
        """Removes the namespaces and the bridge (a namespace's removal takes its veth pair along).
        Safe to call twice; best effort, so one failure does not leave the rest behind."""
        for ns, veth, _ in self.members.values():
            for step in (lambda: _ip("link", "del", veth), lambda: _ip("netns", "del", ns)):
                try:
                    step()
                except (RuntimeError, subprocess.TimeoutExpired):
                    pass
        self.members = {}
        try:
            _ip("link", "del", self.bridge)
        except (RuntimeError, subprocess.TimeoutExpired):
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
