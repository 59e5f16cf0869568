"""``stepscope record demo cwnd|tcp|path``: traffic between network namespaces this module
creates, recorded by the same recorder as ``stepscope record``; everything created (namespaces
and the veths and qdiscs in them, the helper processes, the tracefs instance) is removed on
exit, on an error and on Ctrl-C / SIGTERM. Names carry the pid, so parallel runs never meet.

cwnd: ``snd [s] --veth-- [m0] mid [m1] --veth-- [r] rcv``; a tbf qdisc on m1 (towards the
receiver) is the bottleneck (rate, buffer = ``--buffer-bdp`` x BDP); the RTT is a netem delay
on m0 (the ACKs' way back) with mid bridging m0 and m1, or, where the kernel has no sch_netem,
the userspace delay relay (app/record/relay.py) between m0 and m1 (RTT/2 each way).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import app
from app.record import output
from app.record.filters import FlowFilter
from app.record.recorder import Collected, Stopper, open_tracefs, record, stop_children
from app.record.tcpcalls import CALLS, DEMO_PRESETS, RUNNER
from app.record.tracefs import Instance, RecordError, Tracefs
from app.sim.core.i18n import msg

PKG_ROOT = str(Path(app.__file__).resolve().parent.parent)
MTU = 1500
BURST = 3028  # tbf burst: two full frames
def _sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except FileNotFoundError as e:
        raise RecordError(msg("{command} not found (install iproute2)", command=cmd[0])) from e
    if check and res.returncode != 0:
        raise RecordError(
            msg("{command} failed: {error}", command=" ".join(cmd),
                error=res.stderr.strip() or str(res.returncode))
        )
    return res


@dataclass
class Lab:
    """Namespaces, helper processes and a temporary directory, all removed by :meth:`close`."""

    tag: str = field(default_factory=lambda: f"stepscope-{os.getpid()}")
    namespaces: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    _tmp: list[Path] = field(default_factory=list)

    def tmp(self) -> Path:
        """A private temporary directory, made on first use (removed by :meth:`close`)."""
        if not self._tmp:
            self._tmp.append(Path(tempfile.mkdtemp(prefix="stepscope-demo-")))
        return self._tmp[0]

    def netns(self, role: str) -> str:
        name = f"{self.tag}-{role}"
        _sh("ip", "netns", "add", name)
        self.namespaces.append(name)
        _sh("ip", "-n", name, "link", "set", "lo", "up")
        # no IPv6 router/multicast chatter on the demo's links: only the demo's packets
        _sh("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1", check=False)
        return name

    def spawn(self, ns: str, args: list[str], ready: str | None = None) -> subprocess.Popen[str]:
        """Run ``python args`` in ``ns`` (this package importable); wait for the ``ready``
        line on its stdout when given."""
        env = {**os.environ, "PYTHONPATH": PKG_ROOT}
        p = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.procs.append(p)
        if ready is not None:
            assert p.stdout is not None
            line = p.stdout.readline()
            if ready not in line:
                err = p.stderr.read() if p.stderr and p.poll() is not None else ""
                raise RecordError(
                    msg("demo helper did not start: {output}",
                        output=f"{line.strip()} {err.strip()}".strip())
                )
        return p

    def close(self) -> None:
        stop_children(self.procs)
        self.procs.clear()
        for ns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.namespaces.clear()
        for d in self._tmp:
            shutil.rmtree(d, ignore_errors=True)


def _ifname(role: str) -> str:
    return f"s{os.getpid() % 10_000_000}{role}"  # <= 15 bytes (IFNAMSIZ)


def _addr(host: int) -> str:
    return f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}.{host}"


def _veth(a_ns: str, a: str, b_ns: str, b: str) -> None:
    _sh("ip", "link", "add", a, "netns", a_ns, "type", "veth", "peer", "name", b, "netns", b_ns)
    for ns, dev in ((a_ns, a), (b_ns, b)):
        _sh("ip", "-n", ns, "link", "set", dev, "mtu", str(MTU), "up")


@contextlib.contextmanager
def _recording() -> Iterator[tuple[Stopper, Callable[[], Instance]]]:
    """Signal handlers, tracefs and the instance for one demo; removed on the way out."""
    stopper = Stopper()
    made: list[Instance] = []
    tfs: list[Tracefs] = []

    def new() -> Instance:
        inst = tfs[0].instance(f"stepscope-{os.getpid()}")
        made.append(inst)
        return inst

    with stopper.installed():
        try:
            tfs.append(open_tracefs())
            yield stopper, new
        finally:
            for t in tfs:
                for inst in made:
                    t.release(inst)
                t.close()


def _link_cwnd(lab: Lab, args: argparse.Namespace) -> tuple[str, str, str, dict[str, Any], str]:
    """Build the cwnd topology; returns (snd ns, rcv ns, mid ns, link, delay method)."""
    snd, mid, rcv = lab.netns("snd"), lab.netns("mid"), lab.netns("rcv")
    s, m0, m1, r = _ifname("s"), _ifname("a"), _ifname("b"), _ifname("r")
    _veth(snd, s, mid, m0)
    _veth(mid, m1, rcv, r)
    snd_ip, rcv_ip = _addr(1), _addr(2)
    _sh("ip", "-n", snd, "addr", "add", f"{snd_ip}/24", "dev", s)
    _sh("ip", "-n", rcv, "addr", "add", f"{rcv_ip}/24", "dev", r)
    # no ARP round trip through the delay for the SYN
    for ns, dev, ip, peer_ns, peer_dev in ((snd, s, rcv_ip, rcv, r), (rcv, r, snd_ip, snd, s)):
        mac = _sh("ip", "-n", peer_ns, "-j", "link", "show", peer_dev).stdout
        lladdr = json.loads(mac)[0]["address"]
        _sh("ip", "-n", ns, "neigh", "replace", ip, "lladdr", lladdr, "dev", dev, "nud",
            "permanent")
    _sh("ip", "netns", "exec", snd, "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1")
    # the namespace's default says what the flow uses (which sets it per socket anyway);
    # outside the initial namespace only tcp_allowed_congestion_control may be set: best effort
    _sh("ip", "netns", "exec", snd, "sysctl", "-qw",
        f"net.ipv4.tcp_congestion_control={args.cc}", check=False)
    rate, rtt = float(args.rate_mbit), float(args.rtt_ms)
    bdp = rate * 1e6 / 8 * rtt / 1000
    limit = max(int(bdp * args.buffer_bdp), 3 * (MTU + 14))
    _sh("ip", "netns", "exec", mid, "tc", "qdisc", "add", "dev", m1, "root", "tbf", "rate",
        f"{rate:g}mbit", "burst", str(BURST), "limit", str(limit))
    netem = _sh("ip", "netns", "exec", mid, "tc", "qdisc", "add", "dev", m0, "root", "netem",
                "delay", f"{rtt:g}ms", "limit", "100000", check=False)
    if netem.returncode == 0 or rtt == 0:
        br = _ifname("x")
        _sh("ip", "-n", mid, "link", "add", br, "type", "bridge")
        for dev in (m0, m1):
            _sh("ip", "-n", mid, "link", "set", dev, "master", br)
        _sh("ip", "-n", mid, "link", "set", br, "up")
        method = "netem" if netem.returncode == 0 else "none"
    else:
        lab.spawn(mid, ["-m", "app.record.relay", "--a", m0, "--b", m1, "--delay-ms",
                        repr(rtt / 2), "--seconds", repr(float(args.seconds) + 30)],
                  ready="relay ready")
        method = "relay"
    link = {"rate_mbit": rate, "rtt_ms": rtt, "buffer_bytes": limit, "mtu": MTU}
    return snd, rcv, snd_ip + " " + rcv_ip, link, method


def _check_cc(cc: str) -> None:
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    if cc not in avail:
        raise RecordError(
            msg("--cc {cc}: not available here (available: {available})", cc=cc,
                available=", ".join(avail))
        )


def demo_cwnd(args: argparse.Namespace) -> tuple[dict[str, Any], Collected]:
    _check_cc(args.cc)
    seconds = float(args.seconds or 10.0)
    args.seconds = seconds
    port = 20000 + os.getpid() % 10000
    lab = Lab()
    notes: list[str] = []
    try:
        with _recording() as (stopper, new_instance):
            snd, rcv, ips, link, method = _link_cwnd(lab, args)
            snd_ip, rcv_ip = ips.split()
            notes.append(f"demo: {args.cc} through tbf {link['rate_mbit']:g} Mbit/s, buffer "
                         f"{link['buffer_bytes']} B, RTT {link['rtt_ms']:g} ms by {method}")
            lab.spawn(rcv, ["-m", "app.record.flow", "recv", "--bind", rcv_ip, "--port",
                            str(port), "--seconds", repr(seconds + 15)], ready="recv ready")
            out_json = lab.tmp() / "send.json"
            sender: list[subprocess.Popen[str]] = []

            def start() -> None:
                sender.append(lab.spawn(snd, [
                    "-m", "app.record.flow", "send", "--dst", rcv_ip, "--port", str(port),
                    "--cc", args.cc, "--seconds", repr(seconds), "--interval-ms", "50",
                    "--out", str(out_json)]))

            got = record(new_instance(), "cwnd", FlowFilter(port, rcv_ip),
                         lambda: bool(sender) and sender[0].poll() is not None, stopper, notes,
                         on_ready=start)
            flows: list[dict[str, Any]] = []
            if sender and sender[0].poll() is None:  # stopped by a signal: ask ss, then stop
                flows = output.ss_flows(port, rcv_ip, netns=snd)[:1]
                sender[0].terminate()
                sender[0].wait(timeout=10)
            flows = _flows(out_json, snd_ip, rcv_ip, port, args.cc) or flows
            sysctls = output.read_sysctls(snd)
            default = sysctls.get("net.ipv4.tcp_congestion_control")
            if default and default != args.cc:
                notes.append(f"the flow sets {args.cc} on its socket (TCP_CONGESTION); the "
                             f"namespace default stays {default}")
    finally:
        lab.close()
    doc = output.build("cwnd", got.events, duration_ms=got.duration_ms, sysctls=sysctls,
                       flows=flows, link=link, flt={"port": port, "dst": rcv_ip},
                       command=_argv(), notes=got.notes)
    return doc, got


def _flows(path: Path, snd_ip: str, rcv_ip: str, port: int, cc: str) -> list[dict[str, Any]]:
    """The sender's TCP_INFO facts (its last sample) as the output's ``flows``."""
    try:
        snd = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    last = snd["samples"][-1] if snd.get("samples") else {}
    return [{
        "src": f"{snd_ip}:{snd.get('sport')}",
        "dst": f"{rcv_ip}:{port}",
        "cc": cc,
        "mss": last.get("snd_mss"),
        "pacing_rate_bps": int(last["pacing_rate"]) * 8 if "pacing_rate" in last else None,
    }]


def _argv() -> list[str]:
    return ["stepscope", *sys.argv[1:]] if sys.argv[1:2] == ["record"] else ["stepscope"]


def preset_script(name: str) -> list[dict[str, Any]]:
    """The socket calls of the TCP explainer's preset ``name`` (one this demo runs)."""
    if name not in DEMO_PRESETS:
        raise RecordError(
            msg("--preset {name}: the demo runs {presets}", name=name,
                presets=", ".join(DEMO_PRESETS))
        )
    from app.sim.tcp.presets import PRESETS  # the explainer's own list

    for p in PRESETS:
        if p.slug == name:
            script = [dict(c) for c in p.params["script"]]
            bad = {c["call"] for c in script} - CALLS
            if bad:
                raise RecordError(
                    msg("--preset {name}: calls the demo cannot make: {calls}", name=name,
                        calls=", ".join(sorted(bad)))
                )
            return script
    raise RecordError(msg("--preset {name}: no such TCP preset", name=name))


def demo_tcp(args: argparse.Namespace) -> tuple[dict[str, Any], Collected]:
    script = preset_script(args.preset)
    seconds = float(args.seconds or 1.0)
    base = 21000 + (os.getpid() % 2000) * 4
    ports = {"server": base, "client": base + 1}
    lab = Lab()
    notes: list[str] = [f"demo: the socket calls of the TCP preset {args.preset} on 127.0.0.1"]
    calls: list[Any] = []
    try:
        with _recording() as (stopper, new_instance):
            ns = lab.netns("tcp")
            spec = json.dumps({"script": script, "ports": ports, "until_s": seconds})
            proc: list[subprocess.Popen[str]] = []
            line: list[str] = []

            def start() -> None:
                proc.append(lab.spawn(ns, ["-c", RUNNER, spec]))

            def done() -> bool:
                if not proc:
                    return False
                assert proc[0].stdout is not None
                if proc[0].poll() is not None:
                    return True
                return _line_ready(proc[0], line)

            got = record(new_instance(), "tcp", FlowFilter(base), done, stopper, notes,
                         on_ready=start)
            if line:
                calls = json.loads(line[0])["results"]
            sysctls = output.read_sysctls(ns)
    finally:
        lab.close()
    doc = output.build("tcp", got.events, duration_ms=got.duration_ms, sysctls=sysctls,
                       flt={"port": base}, command=_argv(), notes=got.notes)
    doc["demo"] = {"preset": args.preset, "ports": ports, "calls": calls}
    return doc, got


def _line_ready(p: subprocess.Popen[str], line: list[str]) -> bool:
    """Whether the runner has printed its JSON line (read without blocking)."""
    import select

    assert p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], 0)
    if ready:
        text = p.stdout.readline()
        if text.startswith("{"):
            line.append(text)
            return True
    return False


# The path demo's two ends: a receiver that reads everything, a sender that writes three
# small segments apart (so each is its own skb) and closes.
_PATH_RECV = r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept()
while c.recv(65536):
    pass
"""
_PATH_SEND = r"""
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for _ in range(3):
    s.send(b"x" * 1000); time.sleep(0.05)
s.close(); time.sleep(0.2)
"""


def demo_path(args: argparse.Namespace) -> tuple[dict[str, Any], Collected]:
    port = 20000 + os.getpid() % 10000
    lab = Lab()
    notes = ["demo: three 1000-byte segments from namespace a to b over a veth pair"]
    try:
        with _recording() as (stopper, new_instance):
            a, b = lab.netns("a"), lab.netns("b")
            da, db = _ifname("a"), _ifname("b")
            _veth(a, da, b, db)
            ip_a, ip_b = _addr(1), _addr(2)
            _sh("ip", "-n", a, "addr", "add", f"{ip_a}/24", "dev", da)
            _sh("ip", "-n", b, "addr", "add", f"{ip_b}/24", "dev", db)
            lab.spawn(b, ["-c", _PATH_RECV, ip_b, str(port)], ready="ready")
            sender: list[subprocess.Popen[str]] = []
            deadline = time.monotonic() + float(args.seconds or 10.0)

            def start() -> None:
                sender.append(lab.spawn(a, ["-c", _PATH_SEND, ip_b, str(port)]))

            def done() -> bool:
                return time.monotonic() > deadline or (
                    bool(sender) and sender[0].poll() is not None
                )

            got = record(new_instance(), "path", FlowFilter(dev=f"{da},{db}"), done, stopper,
                         notes, on_ready=start)
            sysctls = output.read_sysctls(a)
    finally:
        lab.close()
    doc = output.build("path", got.events, duration_ms=got.duration_ms, sysctls=sysctls,
                       flt={"dev": f"{da},{db}"}, command=_argv(), notes=got.notes)
    return doc, got
