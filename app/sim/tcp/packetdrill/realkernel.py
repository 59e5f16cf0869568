"""Run a packetdrill script against THIS machine's kernel, the way packetdrill does: a network
namespace of the run's own (``stepscope-pd-<pid>-<n>``), a TUN device in it (local
192.168.0.1, the script's peer 192.0.2.1 behind it), the script's syscalls on real sockets in
that namespace (a thread that ``setns``-es into it), its inbound packets written to the TUN fd
at their times, and the kernel's outbound packets read from it and judged by the model runner's
own :func:`runner.check_packet` and :func:`syscalls.done`. The namespace, the device and the
sockets are removed on exit, on errors and timeouts too; a run has a hard time limit.

Needs root, /dev/net/tun and iproute2; :func:`unavailable` says which is missing. Not
simulation, but it reads the same parsed script and writes the same line results."""

from __future__ import annotations

import ctypes
import fcntl
import itertools
import os
import platform
import select
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from app.sim.core.i18n import Message, msg
from app.sim.tcp.packetdrill import kernelwire as W
from app.sim.tcp.packetdrill.ast import (
    Comment,
    Event,
    InfoAssert,
    Option,
    Packet,
    Script,
    Shell,
    Syscall,
    Unsupported,
)
from app.sim.tcp.packetdrill.kernelcalls import HANDLERS, KFd, KPending, try_pending
from app.sim.tcp.packetdrill.runner import (
    DEFAULT_TOLERANCE_US,
    LineResult,
    RunLimitError,
    Verdict,
    check_packet,
    event_kind,
    judge_info,
    tso_on,
    verdict_of,
)
from app.sim.tcp.packetdrill.settings import DEFAULTS_SH
from app.sim.tcp.packetdrill.tcpinfo import INFO_LEN, OFFSETS

MAX_KERNEL_S = 10.0  # a run's hard limit (wall clock, setup included)
TUN_NAME = "pdk0"
_TUNSETIFF = 0x400454CA
_TUNSETOFFLOAD = 0x400454D0
_IFF_TUN, _IFF_NO_PI, _IFF_VNET_HDR = 0x0001, 0x1000, 0x4000
_TUN_F_CSUM, _TUN_F_TSO4 = 0x01, 0x02
_CLONE_NEWNET = 0x40000000
_RUNS = itertools.count(1)
_ONE_AT_A_TIME = threading.Lock()  # one namespace and TUN device at a time per process


def unavailable() -> Message | None:
    """Why this process cannot run a script on the kernel, or None if it can."""
    if os.geteuid() != 0:
        return msg("the server does not run as root (a TUN device and a namespace need root)")
    if not os.path.exists("/dev/net/tun"):
        return msg("this machine has no /dev/net/tun")
    if not os.path.exists("/proc/self/ns/net"):
        return msg("this kernel has no network namespaces")
    if shutil.which("ip") is None:
        return msg("iproute2 (the ip command) is not installed")
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelResult:
    verdict: Verdict
    lines: tuple[LineResult, ...]
    release: str  # uname -r of the kernel that ran it
    namespace: str
    tolerance_us: int
    packets: tuple[dict[str, Any], ...]  # every TCP packet the kernel sent, script terms
    slip_ms: float  # how late the runner itself was, in all (taken out of the times)


class _Timeout(Exception):
    pass


class KernelRunError(Exception):
    """The machine refused a step of the set-up (the namespace, the TUN device, an address):
    ``why`` names it, for a 503 rather than a crash."""

    def __init__(self, why: Message) -> None:
        self.why = why
        super().__init__(why.render())


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10, check=True)


def _oneline(exc: BaseException) -> str:
    err = getattr(exc, "stderr", None)
    text = err.strip() if isinstance(err, str) and err.strip() else str(exc)
    return text.splitlines()[0][:200] if text else type(exc).__name__


def sysctl_settings(script: Script) -> dict[int, list[tuple[str, str]]]:
    """Per shell line, the sysctls it sets (defaults.sh expanded), as ``net.ipv4.*`` keys."""
    out: dict[int, list[tuple[str, str]]] = {}
    for ev in script.events:
        if isinstance(ev, Shell):
            pairs = [*(DEFAULTS_SH if ev.defaults else ()), *ev.sysctls]
            out[ev.line] = [(k if "." in k else f"net.ipv4.{k}", v) for k, v in pairs]
    return out


def script_span_ms(script: Script) -> float:
    """The script's last time (ms), range ends included."""
    last = span = 0.0
    for ev in script.events:
        if isinstance(ev, Packet | Syscall) and ev.time.kind != "any":
            t = (last if ev.time.kind == "rel" else 0.0) + ev.time.us / 1000
            end = t - ev.time.us / 1000 + (ev.time.end_us or ev.time.us) / 1000
            last, span = t, max(span, t, end)
    return span


def run_kernel(
    script: Script, tolerance_us: int = DEFAULT_TOLERANCE_US, time_limit_s: float = MAX_KERNEL_S
) -> KernelResult:
    """Run ``script`` on this machine's kernel. Raises :class:`RunLimitError` when the script
    spans more than the time limit or the run overruns it."""
    span = script_span_ms(script)
    if span / 1000 + 1.0 > time_limit_s:
        raise RunLimitError(
            msg(
                "the script spans {s} s; a run on the kernel may take {limit} s",
                s=round(span / 1000, 3),
                limit=time_limit_s,
            )
        )
    if not _ONE_AT_A_TIME.acquire(timeout=time_limit_s):
        raise RunLimitError(msg("the kernel is busy with another run; try again"))
    try:
        return _run_locked(script, tolerance_us, time_limit_s)
    finally:
        _ONE_AT_A_TIME.release()


def _run_locked(script: Script, tolerance_us: int, time_limit_s: float) -> KernelResult:
    ns = f"stepscope-pd-{os.getpid()}-{next(_RUNS)}"
    try:
        _ip("netns", "add", ns)
    except (OSError, subprocess.SubprocessError) as exc:
        why = msg("the kernel run could not be set up: {why}", why=_oneline(exc))
        raise KernelRunError(why) from exc
    try:
        k = KernelRun(script, tolerance_us, ns, time.monotonic() + time_limit_s)
        th = threading.Thread(target=k.thread, name=f"packetdrill-{ns}", daemon=True)
        th.start()
        th.join(time_limit_s + 5)
        if th.is_alive() or isinstance(k.error, _Timeout):
            k.stop = True
            raise RunLimitError(
                msg("the run on the kernel took more than {limit} s", limit=time_limit_s)
            )
        if isinstance(k.error, OSError | subprocess.SubprocessError):
            raise KernelRunError(
                msg("the kernel run could not be set up: {why}", why=_oneline(k.error))
            ) from k.error
        if k.error is not None:
            raise k.error
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10, check=False)
    return KernelResult(
        verdict=verdict_of(k.lines),
        lines=tuple(k.lines),
        release=platform.release(),
        namespace=ns,
        tolerance_us=k.tol_us,
        packets=tuple(k.sent_log),
        slip_ms=round(k.slip_ms, 3),
    )


@dataclass(slots=True)
class _Out:
    t_ms: float
    wire: W.Wire


@dataclass(slots=True)
class KernelRun:
    """One run; :meth:`thread` does it all inside the namespace."""

    script: Script
    tol_us: int
    ns: str
    deadline: float
    lines: list[LineResult] = field(default_factory=list)
    error: BaseException | None = None
    stop: bool = False
    tun: int = -1
    t0: float = 0.0
    last_ms: float = 0.0
    local_isn: int = 0
    local_port: int = W.LOCAL_PORT
    remote_port: int = W.REMOTE_PORT
    ts_ecr: int = 0
    ip_id: int = 0
    slip_ms: float = 0.0  # the runner's own lateness so far (see on_time)
    outbox: deque[_Out] = field(default_factory=deque)
    sent_log: list[dict[str, Any]] = field(default_factory=list)
    fds: dict[int, KFd] = field(default_factory=dict)
    pending: list[KPending] = field(default_factory=list)
    applied: dict[int, dict[str, Any]] = field(default_factory=dict)
    # the congestion control a script's sysctl asked for when the namespace refused it
    # (a child namespace may only pick from init_net's tcp_allowed_congestion_control):
    # every socket the script opens gets it with TCP_CONGESTION instead (CAP_NET_ADMIN)
    congestion: str | None = None

    def __post_init__(self) -> None:
        for ev in self.script.events:  # the script's own --tolerance_usecs wins
            if isinstance(ev, Option) and ev.name == "tolerance_usecs" and ev.value.isdigit():
                self.tol_us = int(ev.value)

    @property
    def tol(self) -> float:
        return self.tol_us / 1000

    # --- setup and teardown -------------------------------------------------------------------
    def thread(self) -> None:
        try:
            self.enter_netns()
            self.setup()
            self.run()
        except BaseException as e:  # handed to the caller's thread
            self.error = e
        finally:
            for f in self.fds.values():
                f.sock.close()
            if self.tun >= 0:
                os.close(self.tun)

    def enter_netns(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/run/netns/{self.ns}", os.O_RDONLY)
        try:
            if libc.setns(fd, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
        finally:
            os.close(fd)

    def setup(self) -> None:
        self.tun = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        ifr = struct.pack("16sH22x", TUN_NAME.encode(), _IFF_TUN | _IFF_NO_PI | _IFF_VNET_HDR)
        fcntl.ioctl(self.tun, _TUNSETIFF, ifr)
        # GSO, as packetdrill's device; without TSO when the script turns it off (ethtool)
        offload = _TUN_F_CSUM | (_TUN_F_TSO4 if tso_on(self.script) else 0)
        fcntl.ioctl(self.tun, _TUNSETOFFLOAD, offload)
        n = self.ns
        _ip("-n", n, "link", "set", "lo", "up")
        _ip("-n", n, "link", "set", TUN_NAME, "up")
        _ip("-n", n, "addr", "add", f"{W.LOCAL_IP}/16", "dev", TUN_NAME)
        _ip("-n", n, "route", "add", "192.0.2.0/24", "dev", TUN_NAME)
        self.apply_sysctls()

    def apply_sysctls(self) -> None:
        """Every shell line's sysctls, before the first event (as the model applies them);
        one the namespace refuses (not per namespace, or a bad value) is listed as not set."""
        per_line = sysctl_settings(self.script)
        pairs = [f"{k}={v}" for kvs in per_line.values() for k, v in kvs]
        ok: set[str] = set()
        if pairs:
            shell = 'for kv; do sysctl -q -w "$kv" >/dev/null 2>&1 && echo "$kv"; done'
            cmd = ["ip", "netns", "exec", self.ns, "sh", "-c", shell, "sh", *pairs]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
            ok = set(out.stdout.splitlines())
        for line, kvs in per_line.items():
            done = [f"{k}={v}" for k, v in kvs if f"{k}={v}" in ok]
            skipped = [f"{k}={v}" for k, v in kvs if f"{k}={v}" not in ok]
            self.applied[line] = {"applied": done, "not_set": skipped}
            for k, v in kvs:
                if k == "net.ipv4.tcp_congestion_control" and f"{k}={v}" in skipped:
                    self.congestion = v
                    self.applied[line]["per_socket"] = [f"TCP_CONGESTION={v}"]

    # --- time and the TUN device --------------------------------------------------------------
    def now_ms(self) -> float:
        """Script time: wall time since the start less the runner's own lateness."""
        return (time.monotonic() - self.t0) * 1000 - self.slip_ms

    def on_time(self, t: float | None) -> float:
        """Wait for script time ``t`` (None: now) and return it. When this thread comes back
        late (the machine is shared), the lateness is added to ``slip_ms``, so every later event
        moves with it: the kernel is judged on its own delays, not the runner's."""
        if t is None:
            return self.now_ms()
        self.pump(t)
        late = self.now_ms() - t
        if late > 0:
            self.slip_ms += late
        return t

    def pump(self, until_ms: float, *, want_packet: bool = False) -> None:
        """Read the kernel's packets and finish pending calls until ``until_ms`` (script
        time), or until a packet is there if ``want_packet``."""
        while True:
            self.read_tun()
            self.pending = [p for p in self.pending if not try_pending(self, p)]
            if want_packet and self.outbox:
                return
            now = time.monotonic()
            if now > self.deadline or self.stop:
                raise _Timeout
            left = (until_ms - self.now_ms()) / 1000
            if left <= 0:
                return
            rd = [
                self.tun,
                *(p.fileno() for p in self.pending if p.wants == "r" and p.fileno() >= 0),
            ]
            wr = [p.fileno() for p in self.pending if p.wants == "w" and p.fileno() >= 0]
            tick = 0.001 if any(p.wants == "tick" for p in self.pending) else left
            select.select(rd, wr, [], min(left, tick, self.deadline - now))

    def read_tun(self) -> None:
        while True:
            try:
                buf = os.read(self.tun, 70000)
            except BlockingIOError:
                return
            t = self.now_ms()
            w = W.parse_packet(buf[len(W.VNET_HDR) :])
            if w is None or w.src != W.LOCAL_IP:
                continue
            if "SYN" in w.flags:
                self.local_isn = w.seq
                self.local_port = w.sport
            ts = next((o for o in w.options if o.kind == "TS"), None)
            if ts is not None:
                self.ts_ecr = ts.values[0]
            self.outbox.append(_Out(t, w))
            self.sent_log.append(W.wire_view(w, t, self.local_isn))

    def write_tun(self, p: Packet) -> None:
        self.ip_id += 1
        pkt = W.build_inbound(
            p,
            sport=self.remote_port,
            dport=self.local_port,
            local_isn=self.local_isn,
            ts_ecr=self.ts_ecr,
            ip_id=self.ip_id,
        )
        os.write(self.tun, W.VNET_HDR + pkt)

    # --- the script ---------------------------------------------------------------------------
    def run(self) -> None:
        self.t0 = time.monotonic()
        for ev in self.script.events:
            self.event(ev)
        waits = [p.want_ms for p in self.pending]
        if waits:
            self.pump(max(waits) + self.tol)
        for p in self.pending:
            p.res.fail("return", msg("the call never returned (it is still blocked)"))
        self.pending.clear()

    def event(self, ev: Event) -> None:
        res = LineResult(line=ev.line, kind=event_kind(ev))
        self.lines.append(res)
        if isinstance(ev, Comment | Option | Shell):
            res.status = "comment"
            if isinstance(ev, Shell):
                res.got = self.applied.get(ev.line)
            return
        if isinstance(ev, Unsupported):
            res.status = "unsupported"
            res.reasons.append(msg("not supported: {what}", what=ev.construct))
            return
        t = self.when(ev)
        if isinstance(ev, InfoAssert):
            at = self.on_time(t)
            judge_info(ev, res, self.tcp_info([c.field for c in ev.checks]), at)
        elif isinstance(ev, Packet) and ev.direction == ">":
            self.expect(ev, res, t)
        elif isinstance(ev, Packet):
            at = self.on_time(t)
            self.write_tun(ev)
            res.expected = _packet_view(ev, t)
            res.got = {"injected": True, "t_ms": round(at, 3)}
            res.t_ms = round(at, 3)
            if t is None:
                self.last_ms = at
        else:
            at = self.on_time(t)
            res.t_ms = round(at, 3)
            HANDLERS[ev.name](self, ev, res, at)

    def tcp_info(self, names: list[str]) -> dict[str, int] | None:
        """TCP_INFO fields of the newest connection socket (packetdrill's socket under test),
        read with getsockopt at their offsets in struct tcp_info (tcpinfo.OFFSETS, checked
        in v6.4's include/uapi/linux/tcp.h: tcpi_snd_cwnd is the u32 at offset 80)."""
        for fd in sorted(self.fds, reverse=True):
            s = self.fds[fd].sock
            try:
                s.getpeername()
                raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, INFO_LEN)
            except OSError:
                continue
            out: dict[str, int] = {}
            for name in names:
                off, fmt = OFFSETS[name]
                out[name] = int(struct.unpack_from(fmt, raw, off)[0])
            return out
        return None

    def when(self, ev: Packet | Syscall | InfoAssert) -> float | None:
        tm = ev.time
        if tm.kind == "any":
            return None
        self.last_ms = (self.last_ms if tm.kind == "rel" else 0.0) + tm.us / 1000
        return self.last_ms

    def end_time(self, ev: Packet | Syscall, start: float | None) -> float | None:
        tm = ev.time
        if start is None or tm.end_us is None:
            return start
        return (start - tm.us / 1000 if tm.kind == "rel" else 0.0) + tm.end_us / 1000

    def expect(self, p: Packet, res: LineResult, t: float | None) -> None:
        res.expected = _packet_view(p, t)
        end = self.end_time(p, t)
        limit = end + self.tol if end is not None else (self.deadline - self.t0) * 1000
        self.pump(limit, want_packet=True)
        if not self.outbox:
            res.fail("packet", msg("the kernel sent no packet by {t} ms", t=round(limit, 3)))
            return
        out = self.outbox.popleft()
        got = W.wire_view(out.wire, out.t_ms, self.local_isn)
        res.got = got
        res.t_ms = got["t_ms"]
        if t is None or p.time.end_us is not None:
            self.last_ms = out.t_ms
        check_packet(
            p,
            got,
            out.wire.options,
            res,
            sent_ms=out.t_ms,
            t=t,
            end=end,
            tol=self.tol,
            local_isn=self.local_isn,
        )


def _packet_view(p: Packet, t: float | None) -> dict[str, Any]:
    from app.sim.tcp.packetdrill.model import packet_view

    return packet_view(p, t)


__all__ = ["KernelResult", "KernelRunError", "KernelRun", "run_kernel", "unavailable"]
