"""Where pg_ha.PgHaCluster's servers run, on the partition tests' network (tests/e2e_partition/netns.py).

PgHaCluster names its servers ("monitor", "node1", "node2", ...) and asks a network three things:
host(name), the address the server listens on and is reached at; wrap(name, argv), a command run where
it runs; subnet, the network its pg_hba.conf trusts. Network(["node1", "node2"]) answers them over a
netns.Net: each named member in a namespace of its own on the bridge, every other name (the monitor,
unless named) in the caller's namespace on the bridge's address. Further members (frontends, say) are
namespaces for the test's own processes: node(name) is a member's netns.Node.

cut(name) cuts a member from every other node of the network, the caller's namespace included
(netns.Net.isolate: packets silently dropped, both ways; its loopback and own address keep working);
heal(name) undoes it. Partial partitions use net.net.cut(a, b) between two nodes.

Needs root and iproute2 (`ip`); require_root() exits 77 (skipped) only when not root.

    with Network(["node1", "node2"]) as net:
        subprocess.run(net.wrap("node1", ["ping", "-c1", net.host("node2")]))
        net.cut("node1")
        net.heal("node1")
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e_partition"))

import netns  # noqa: E402

require_root = netns.skip_unless_root


class Network(netns.Closing):
    def __init__(self, members):
        self.net = netns.Net()
        try:
            for name in members:
                self.net.node(name)
        except BaseException:
            self.net.close()
            raise
        self.subnet = self.net.subnet

    def node(self, name):
        """The member's netns.Node; the caller's (net.host) for any other name."""
        return self.net.get(name) or self.net.host

    def host(self, name):
        return self.node(name).ip

    def wrap(self, name, argv):
        return self.node(name).wrap(argv)

    def cut(self, name):
        self.net.isolate(self.net.get(name))

    def heal(self, name):
        self.net.rejoin(self.net.get(name))

    def close(self):
        self.net.close()
