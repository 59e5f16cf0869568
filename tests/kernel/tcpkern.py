"""Run TCP socket scripts on the real kernel and record sock:inet_sock_set_state.

Everything happens inside a network namespace this module creates (loopback only) and a
private tracefs instance; both are removed by :func:`kernel_lab`'s cleanup even on failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.record.tcpcalls import RUNNER

LINE = re.compile(
    r"inet_sock_set_state: family=AF_INET protocol=IPPROTO_TCP sport=(\d+) dport=(\d+) "
    r".*?oldstate=TCP_(\w+) newstate=TCP_(\w+)"
)


@dataclass
class KernelRun:
    results: list[tuple[str, str, str, int]]
    ss: str
    chains: dict[str, list[list[tuple[str, str]]]] = field(default_factory=dict)
    keys: dict[str, list[tuple[int, int] | None]] = field(default_factory=dict)
    netstat: str = ""
    ssi: str = ""  # ss -tino: timers per socket

    def counter(self, name: str) -> int:
        """A TcpExt counter from /proc/net/netstat of the namespace."""
        lines = [ln.split() for ln in self.netstat.splitlines() if ln.startswith("TcpExt:")]
        if len(lines) < 2:
            return -1
        return int(dict(zip(lines[0][1:], lines[1][1:], strict=False)).get(name, -1))


def skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("ip") is None:
        return "needs iproute2 (ip)"
    if "tracefs" not in Path("/proc/filesystems").read_text():
        return "kernel has no tracefs"
    return None


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=20)


_LABS = 0


@contextlib.contextmanager
def kernel_lab(sysctls: dict[str, int], tc: list[str] | None = None) -> Iterator[Lab]:
    """A fresh netns with lo up and ``sysctls`` set (and ``tc`` qdisc arguments for lo, if
    any), and a tracefs instance recording sock:inet_sock_set_state. Removed on exit."""
    global _LABS
    _LABS += 1
    ns = f"stepscope-tcp-{os.getpid()}-{_LABS}"
    mnt: str | None = None
    inst: Path | None = None
    _run("ip", "netns", "add", ns)
    try:
        _run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        if tc:
            _run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "mtu", "1500")
            _run("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", *tc)
        for k, v in sysctls.items():
            key = "/proc/sys/net/ipv4/" + k
            _run("ip", "netns", "exec", ns, "sh", "-c", f"test ! -e {key} || echo {v} > {key}")
        base = Path("/sys/kernel/tracing")
        if not (base / "instances").is_dir():
            mnt = tempfile.mkdtemp(prefix="stepscope-tracefs-")
            _run("mount", "-t", "tracefs", "nodev", mnt)
            base = Path(mnt)
        ev = base / "events/sock/inet_sock_set_state"
        if not ev.is_dir():
            raise RuntimeError("no sock:inet_sock_set_state tracepoint")
        inst = base / "instances" / ns
        inst.mkdir()
        yield Lab(ns=ns, inst=inst)
    finally:
        if inst is not None:
            with contextlib.suppress(OSError):
                (inst / "events/sock/inet_sock_set_state/enable").write_text("0")
            with contextlib.suppress(OSError):
                inst.rmdir()
        if mnt is not None:
            _run("umount", mnt, check=False)
            with contextlib.suppress(OSError):
                os.rmdir(mnt)
        _run("ip", "netns", "del", ns, check=False)


@dataclass
class Lab:
    ns: str
    inst: Path

    def run(self, script: list[dict[str, Any]], ports: dict[str, int], until_s: float) -> KernelRun:
        ev = self.inst / "events/sock/inet_sock_set_state"
        cond = " || ".join(f"sport == {p} || dport == {p}" for p in ports.values())
        (ev / "filter").write_text(cond)
        (self.inst / "trace").write_text("")
        (ev / "enable").write_text("1")
        spec = json.dumps({"script": script, "ports": ports, "until_s": until_s})
        (self.inst / "buffer_size_kb").write_text("512")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, sys.executable, "-c", RUNNER, spec],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None and proc.stdin is not None
            deadline = time.monotonic() + until_s + 10
            line = ""
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                if line.startswith("{") or not line:
                    break
            (ev / "enable").write_text("0")
            trace = (self.inst / "trace").read_text()
            proc.stdin.close()
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        if not line.startswith("{"):
            raise RuntimeError("runner failed: " + (proc.stderr.read() if proc.stderr else ""))
        data = json.loads(line)
        kr = KernelRun(results=[tuple(r) for r in data["results"]], ss=data["ss"])
        kr.ssi = data.get("ssi", "")
        by_port = {p: ep for ep, p in ports.items()}
        chains: list[tuple[str, tuple[int, int] | None, list[tuple[str, str]]]] = []
        for raw in trace.splitlines():
            m = LINE.search(raw)
            if m is None:
                continue
            sport, dport, old, new = int(m[1]), int(m[2]), m[3], m[4]
            ep = by_port.get(sport)
            if ep is None:
                continue
            key = (sport, dport)
            if old == "LISTEN" and new == "SYN_RECV":
                # inet_csk_clone_lock fires before the child's ports are set: a new child
                chains.append((ep, None, [(old, new)]))
                continue
            found = None
            if old != "CLOSE":
                for i, (cep, ckey, ch) in enumerate(chains):
                    if cep == ep and ckey == key and ch[-1][1] == old:
                        found = i
                if found is None:
                    for i, (cep, ckey, ch) in enumerate(chains):
                        if cep == ep and ckey is None and ch[-1][1] == old:
                            found = i
                            break
            if found is None:
                chains.append((ep, key, [(old, new)]))
            else:
                cep, _, ch = chains[found]
                ch.append((old, new))
                chains[found] = (cep, key, ch)
        kr.netstat = data.get("netstat", "")
        for ep, key, ch in chains:
            kr.chains.setdefault(ep, []).append(ch)
            kr.keys.setdefault(ep, []).append(key)
        return kr
