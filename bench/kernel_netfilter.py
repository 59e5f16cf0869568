"""Check the order of the IPv4 netfilter hook entries on the running kernel (issue 22).

Three namespaces in a line, ss-nf-a (10.88.1.1) -- ss-nf-m (router) -- ss-nf-b (10.88.2.2),
joined by veth pairs. In ss-nf-m an nftables table registers NAT chains at the usual
priorities (dstnat -100 at prerouting/output, srcnat 100 at postrouting/input), which makes
the kernel register conntrack (ipv4_conntrack_in/local -200, ipv4_confirm INT_MAX) and defrag
(-400) there too. Around them, at every hook, "probe" filter chains at priorities just before
and after each of those entries count the first ICMP echo request of a ping by what it looks
like at that point: fragment or whole, no conntrack entry (``ct state invalid``) or ``new``,
confirmed or not, and its source and destination address.

Between two adjacent probes the packet changes when a kernel entry ran between them:
    fragment -> whole          defrag
    no ct -> ct new            conntrack
    destination rewritten      DNAT
    source rewritten           SNAT
Confirm (INT_MAX) cannot have a probe after it; it is placed at the last hook the request
passes in ss-nf-m when the probe at INT_MAX-1 there still sees the entry unconfirmed and the
echo reply then arrives as ``ct state established``.

Three packets: a ping from a to m (delivered locally in m: PRE_ROUTING, LOCAL_IN), a ping from
a to b (forwarded by m: PRE_ROUTING, FORWARD, POST_ROUTING) and a ping from m to b (generated
in m: LOCAL_OUT, POST_ROUTING). Each goes to a made-up address that a NAT rule rewrites and
is sourced-NATed, so both NAT entries leave a mark. The local-delivery ping is 3000 bytes, so
it arrives in fragments and defrag leaves a mark at PRE_ROUTING.

Needs root, iproute2 and nft (Debian's nftables). Deletes its namespaces even on failure.
    sudo .venv/bin/python bench/kernel_netfilter.py          # prints what it found
    sudo .venv/bin/python bench/kernel_netfilter.py --json   # the same as JSON
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

INT_MAX = 2**31 - 1
NS_A, NS_M, NS_B = "ss-nf-a", "ss-nf-m", "ss-nf-b"
HOOKS = ("prerouting", "input", "forward", "output", "postrouting")
# Probe priorities: just before and after defrag (-400), conntrack (-200), mangle (-150),
# DNAT (-100), filter (0), SNAT (100), and just before conntrack's confirm (INT_MAX).
PROBES = (-401, -399, -201, -199, -151, -149, -101, -99, -1, 1, 99, 101, INT_MAX - 1)
ADDRS = (
    "10.88.1.1", "10.88.1.2", "10.88.1.77", "10.88.2.1", "10.88.2.2", "10.88.2.50",
    "10.88.9.7", "10.88.9.8", "10.88.9.9",
)
# name: (namespace that pings, target, ping size, hooks the request passes in m, in order)
SCENARIOS: dict[str, tuple[str, str, int, tuple[str, ...]]] = {
    "local-in": (NS_A, "10.88.9.9", 3000, ("prerouting", "input")),
    "forward": (NS_A, "10.88.9.8", 56, ("prerouting", "forward", "postrouting")),
    "local-out": (NS_M, "10.88.9.7", 56, ("output", "postrouting")),
}
# The kernel's hook names as the model (and include/uapi/linux/netfilter.h) spell them.
HOOK_NAMES = {
    "prerouting": "PRE_ROUTING", "input": "LOCAL_IN", "forward": "FORWARD",
    "output": "LOCAL_OUT", "postrouting": "POST_ROUTING",
}

NAT_RULES = """
table ip ssnat {
  chain pre { type nat hook prerouting priority -100; policy accept;
    ip daddr 10.88.9.9 dnat to 10.88.1.2
    ip daddr 10.88.9.8 dnat to 10.88.2.2;
  }
  chain out { type nat hook output priority -100; policy accept;
    ip daddr 10.88.9.7 dnat to 10.88.2.2;
  }
  chain post { type nat hook postrouting priority 100; policy accept;
    oifname "ss-nf-mb" snat to 10.88.2.50;
  }
  chain in { type nat hook input priority 100; policy accept;
    ip saddr 10.88.1.1 snat to 10.88.1.77;
  }
}
"""


# One ICMP echo request of a given payload size from a raw socket, waiting for its reply
# (no ping binary needed; the kernel fragments it when it exceeds the MTU).
PING = """
import socket, struct, sys
target, size = sys.argv[1], int(sys.argv[2])
def csum(b):
    if len(b) % 2: b += b"\\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s >> 16) + (s & 0xFFFF); s += s >> 16
    return ~s & 0xFFFF
body = struct.pack("!BBHHH", 8, 0, 0, 0x5353, 1) + bytes(size)
pkt = body[:2] + struct.pack("!H", csum(body)) + body[4:]
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); s.settimeout(3)
s.sendto(pkt, (target, 0))
while True:
    data, _ = s.recvfrom(65535)
    if data[(data[0] & 15) * 4] == 0: break
"""


def run(cmd: list[str], ns: str | None = None, check: bool = True, stdin: str | None = None
        ) -> subprocess.CompletedProcess[str]:
    full = (["ip", "netns", "exec", ns] if ns else []) + cmd
    return subprocess.run(full, input=stdin, capture_output=True, text=True, check=check,
                          timeout=20)


def probe_rules() -> str:
    """One filter chain per hook and probe priority; each rule counts echo requests."""
    lines = ["table ip ssprobe {"]
    for hook in HOOKS:
        for prio in PROBES:
            req = "icmp type echo-request"
            lines.append(f"  chain {hook}_{prio if prio >= 0 else 'm' + str(-prio)} {{")
            lines.append(f"    type filter hook {hook} priority {prio}; policy accept;")
            lines.append(f'    {req} counter comment "all"')
            lines.append('    ip frag-off & 0x3fff != 0 counter comment "frag"')
            lines.append(f'    {req} ct state invalid counter comment "ct:none"')
            lines.append(f'    {req} ct state new counter comment "ct:new"')
            lines.append(f'    {req} ct status confirmed counter comment "confirmed"')
            lines.append('    icmp type echo-reply ct state established counter comment "reply:est"')
            for a in ADDRS:
                lines.append(f'    {req} ip saddr {a} counter comment "saddr:{a}"')
                lines.append(f'    {req} ip daddr {a} counter comment "daddr:{a}"')
            lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass
class Seen:
    """What the echo request looked like at one probe."""

    prio: int
    packets: int = 0
    frag: int = 0
    ct: str = "?"
    confirmed: bool = False
    saddr: str = ""
    daddr: str = ""
    reply_established: int = 0
    counts: dict[str, int] = field(default_factory=dict)


def read_probes() -> dict[str, list[Seen]]:
    data = json.loads(run(["nft", "-j", "list", "table", "ip", "ssprobe"], NS_M).stdout)
    chains: dict[str, dict[str, int]] = {}
    for item in data["nftables"]:
        rule = item.get("rule")
        if not rule:
            continue
        n = next((e["counter"]["packets"] for e in rule["expr"] if "counter" in e), 0)
        chains.setdefault(rule["chain"], {})[rule.get("comment", "")] = n
    out: dict[str, list[Seen]] = {}
    for hook in HOOKS:
        seen = []
        for prio in PROBES:
            c = chains.get(f"{hook}_{prio if prio >= 0 else 'm' + str(-prio)}", {})
            s = Seen(prio, c.get("all", 0), c.get("frag", 0), counts=c,
                     reply_established=c.get("reply:est", 0))
            s.ct = "none" if c.get("ct:none") else "new" if c.get("ct:new") else "?"
            s.confirmed = bool(c.get("confirmed"))
            s.saddr = next((a for a in ADDRS if c.get(f"saddr:{a}")), "")
            s.daddr = next((a for a in ADDRS if c.get(f"daddr:{a}")), "")
            seen.append(s)
        out[hook] = seen
    return out


def entries_between(a: Seen, b: Seen) -> list[str]:
    """Kernel entries that ran between two adjacent probes, by what changed."""
    found = []
    if a.frag and not b.frag:
        found.append("defrag")
    if a.ct == "none" and b.ct == "new":
        found.append("conntrack")
    if a.daddr and b.daddr and a.daddr != b.daddr:
        found.append("DNAT")
    if a.saddr and b.saddr and a.saddr != b.saddr:
        found.append("SNAT")
    return found


def analyse(name: str, probes: dict[str, list[Seen]]) -> dict[str, object]:
    """Per hook the request passed: [(entry, after prio, before prio)], in the order seen."""
    hooks = SCENARIOS[name][3]
    result: dict[str, list[tuple[str, int, int]]] = {}
    for hook in hooks:
        seen = [s for s in probes[hook] if s.packets]
        if len(seen) != len(PROBES):
            raise RuntimeError(f"{name}: the request missed probes at {hook}: {probes[hook]}")
        entries = [(e, a.prio, b.prio) for a, b in zip(seen, seen[1:], strict=False)
                   for e in entries_between(a, b)]
        result[HOOK_NAMES[hook]] = entries
    last = probes[hooks[-1]][-1]
    # The reply may pass other hooks (OUTPUT when m answers, PRE_ROUTING when m is answered).
    established = any(s.reply_established for seen in probes.values() for s in seen)
    if not last.confirmed and established:
        result[HOOK_NAMES[hooks[-1]]].append(("confirm", INT_MAX - 1, INT_MAX))
    return {"hooks": result,
            "unconfirmed_at_last_probe": not last.confirmed,
            "reply_established": established}


@contextmanager
def namespaces() -> Iterator[None]:
    try:
        for ns in (NS_A, NS_M, NS_B):
            run(["ip", "netns", "del", ns], check=False)
            run(["ip", "netns", "add", ns])
        run(["ip", "link", "add", "ss-nf-am", "netns", NS_A, "type", "veth",
             "peer", "ss-nf-ma", "netns", NS_M])
        run(["ip", "link", "add", "ss-nf-mb", "netns", NS_M, "type", "veth",
             "peer", "ss-nf-bm", "netns", NS_B])
        for ns, dev, addr in ((NS_A, "ss-nf-am", "10.88.1.1/24"), (NS_M, "ss-nf-ma", "10.88.1.2/24"),
                              (NS_M, "ss-nf-mb", "10.88.2.1/24"), (NS_B, "ss-nf-bm", "10.88.2.2/24")):
            run(["ip", "addr", "add", addr, "dev", dev], ns)
            run(["ip", "link", "set", dev, "up"], ns)
            run(["ip", "link", "set", "lo", "up"], ns)
        run(["ip", "addr", "add", "10.88.2.50/24", "dev", "ss-nf-mb"], NS_M)
        run(["ip", "route", "add", "default", "via", "10.88.1.2"], NS_A)
        run(["ip", "route", "add", "default", "via", "10.88.2.1"], NS_B)
        run(["ip", "route", "add", "10.88.9.0/24", "via", "10.88.2.2"], NS_M)
        run(["sysctl", "-qw", "net.ipv4.ip_forward=1"], NS_M)
        yield
    finally:
        for ns in (NS_A, NS_M, NS_B):
            run(["ip", "netns", "del", ns], check=False)


def check() -> dict[str, object]:
    """Build the namespaces, ping through each path, and say what ran where."""
    results: dict[str, object] = {"kernel": platform.release()}
    with namespaces():
        for name, (src, target, size, _hooks) in SCENARIOS.items():
            run(["nft", "flush", "ruleset"], NS_M)
            run(["nft", "-f", "-"], NS_M, stdin=NAT_RULES + probe_rules())
            ping = run([sys.executable, "-c", PING, target, str(size)], src, check=False)
            if ping.returncode != 0:
                raise RuntimeError(f"{name}: ping {target} failed: {ping.stdout}{ping.stderr}")
            results[name] = analyse(name, read_probes())
    return results


def main() -> int:
    res = check()
    if "--json" in sys.argv:
        print(json.dumps(res, indent=2))
        return 0
    print(f"kernel {res['kernel']}")
    for name in SCENARIOS:
        r = res[name]
        assert isinstance(r, dict)
        print(f"{name}: reply established={r['reply_established']}, "
              f"unconfirmed at INT_MAX-1={r['unconfirmed_at_last_probe']}")
        for hook, entries in r["hooks"].items():
            where = ", ".join(f"{e} (between {a} and {b})" for e, a, b in entries) or "nothing seen"
            print(f"  {hook}: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
