"""The recording loop: a private instance, the kind's events and filters, trace_pipe read
until a deadline, a command's exit or a signal, then everything disabled and removed."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, TextIO

from app.record import pathmatch
from app.record.filters import FlowFilter, kernel_filter, matches
from app.record.tracefs import Instance, RecordError, Tracefs
from app.record.traceparse import TraceEvent, TraceReader
from app.sim.core.i18n import msg

MAX_EVENTS = 200_000

# (event, essential): a missing essential event fails the run naming it; a missing optional
# one is skipped with a note in the output (sock:sk_data_ready is recent: older kernels lack it).
EVENTS: dict[str, list[tuple[str, bool]]] = {
    "cwnd": [("tcp:tcp_probe", True)],
    "tcp": [
        ("sock:inet_sock_set_state", True),
        ("tcp:tcp_retransmit_skb", False),
        ("tcp:tcp_send_reset", False),
        ("tcp:tcp_receive_reset", False),
    ],
    "path": [
        ("net:net_dev_queue", True),
        ("net:net_dev_start_xmit", False),
        ("net:netif_receive_skb", True),
        ("skb:consume_skb", False),
        ("skb:kfree_skb", True),
        ("sock:sk_data_ready", False),
    ],
}


class Interrupted(Exception):
    """SIGINT/SIGTERM while setting up: unwind through the cleanups."""


@dataclass
class Stopper:
    """SIGINT and SIGTERM handlers. While ``raising`` (setup), a signal raises
    :class:`Interrupted`; while recording or cleaning up it only sets ``stop``."""

    stop: bool = False
    raising: bool = True
    signum: int | None = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.stop = True
        self.signum = signum
        if self.raising:
            self.raising = False
            raise Interrupted(signal.Signals(signum).name)

    @contextmanager
    def installed(self) -> Iterator[Stopper]:
        old = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, h in old.items():
                signal.signal(s, h)


def stop_children(procs: Sequence[subprocess.Popen[Any]]) -> None:
    """Terminate the commands we started (our own children, by handle): SIGTERM, then SIGKILL
    after 5 s."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@dataclass
class Keeper:
    """Which parsed events go into the output: the userspace half of the flow filter, and for
    ``path`` (whose events print no address) the skbs and softirqs of the kept packets."""

    kind: str
    flt: FlowFilter
    userspace: set[str] = field(default_factory=set)  # events matches() must check
    skbs: set[str] = field(default_factory=set)
    last_kept_on_cpu: dict[int, bool] = field(default_factory=dict)
    dropped_receiver_probes: int = 0

    def keep(self, name: str, ev: TraceEvent) -> bool:
        ok = self._keep(name, ev)
        self.last_kept_on_cpu[ev.cpu] = ok
        return ok

    def _keep(self, name: str, ev: TraceEvent) -> bool:
        f = ev.fields
        if by_flow(self.kind, self.flt):  # everything: pathmatch.select decides at the end
            return True
        if name in self.userspace and not matches(self.flt, f):
            return False
        if self.kind == "cwnd" and _receiving_only(f):
            self.dropped_receiver_probes += 1
            return False
        if self.kind != "path" or self.flt.as_json() is None:
            return True
        if name.startswith("net:"):
            if len(self.skbs) < 65536 and "skbaddr" in f:
                self.skbs.add(f["skbaddr"])
            return True
        if name.startswith("skb:"):  # the end of a kept skb's life (its address is reused)
            if f.get("skbaddr") in self.skbs:
                self.skbs.discard(f["skbaddr"])
                return True
            return False
        # sock:sk_data_ready: an inet socket woken right after a kept packet on that CPU
        return f.get("family") in INET_FAMILIES and self.last_kept_on_cpu.get(ev.cpu, False)


def by_flow(kind: str, flt: FlowFilter) -> bool:
    """``record path --port/--dst``: the flow is found by skb address (app.record.pathmatch)."""
    return kind == "path" and (flt.port is not None or flt.dst is not None)


INET_FAMILIES = ("2", "10")  # AF_INET, AF_INET6 as sk_data_ready prints them


def _receiving_only(f: dict[str, str]) -> bool:
    """A tcp_probe of the data's receiver: data arrived and it has nothing in flight."""
    return f.get("data_len", "0") not in ("0", "") and f.get("snd_nxt") == f.get("snd_una")


@dataclass
class Collected:
    events: list[dict[str, Any]]
    notes: list[str]
    duration_ms: float
    lost: int = 0


def setup_instance(
    inst: Instance, kind: str, flt: FlowFilter, notes: list[str]
) -> tuple[dict[str, str], set[str]]:
    """Create ``inst``, check, filter and enable the kind's events. Returns the map from the
    name trace_pipe prints to ``system:name`` and the events needing the userspace filter."""
    inst.create()
    names: dict[str, str] = {}
    userspace: set[str] = set()
    wanted = list(EVENTS[kind])
    if by_flow(kind, flt):  # not filtered in the kernel: other flows' say a CPU moved on
        wanted += [(e, False) for e in pathmatch.IDENTITY]
    for event, essential in wanted:
        if not inst.has_event(event):
            if essential:
                raise RecordError(
                    msg("the kernel has no tracepoint {event} (needed by {kind})", event=event,
                        kind=kind)
                )
            notes.append(f"{event}: not on this kernel; skipped")
            continue
        ports_only = FlowFilter(dev=flt.dev) if by_flow(kind, flt) else flt
        expr, rest = kernel_filter(ports_only, inst.fields(event))
        if expr:
            inst.set_filter(event, expr)
        if rest:
            userspace.add(event)
        names[event.partition(":")[2]] = event
    if kind == "path":
        inst.set_stacktrace()
    for event in names.values():
        inst.enable(event)
    return names, userspace


@dataclass
class Progress:
    out: TextIO | None
    every_s: float = 0.5
    _last: float = 0.0

    def show(self, n: int, seconds: float, force: bool = False) -> None:
        now = time.monotonic()
        if self.out is None or (not force and now - self._last < self.every_s):
            return
        self._last = now
        # rendered each time in the invocation's language (cli.main sets it)
        line = str(msg("{n} events, {seconds:.1f} s", n=n, seconds=seconds))
        self.out.write(f"\rstepscope: {line} ")
        self.out.flush()

    def done(self) -> None:
        if self.out is not None:
            self.out.write("\n")
            self.out.flush()


def progress_stream() -> TextIO | None:
    return sys.stderr if sys.stderr.isatty() else None


def record(
    inst: Instance,
    kind: str,
    flt: FlowFilter,
    until: Callable[[], bool],
    stopper: Stopper,
    notes: list[str],
    on_ready: Callable[[], None] | None = None,
) -> Collected:
    """Record the kind's events into ``inst`` until ``until()`` or a signal; ``on_ready``
    runs once the events are enabled (it starts the command or the demo's traffic)."""
    names, userspace = setup_instance(inst, kind, flt, notes)
    keeper = Keeper(kind, flt, userspace)
    reader = TraceReader()
    kept: list[tuple[float, dict[str, Any]]] = []
    truncated = [False]
    progress = Progress(progress_stream())

    def take(evs: list[TraceEvent]) -> None:
        for ev in evs:
            name = names.get(ev.name)
            if name is None or not keeper.keep(name, ev):
                continue
            if len(kept) >= MAX_EVENTS:
                truncated[0] = True
                continue
            d: dict[str, Any] = {"event": name, "fields": ev.fields}
            if kind == "path":
                d["stack"] = ev.stack or []
                d["cpu"], d["pid"] = ev.cpu, ev.pid
            kept.append((ev.ts, d))

    fd = os.open(inst.pipe(), os.O_RDONLY | os.O_NONBLOCK)
    t0 = time.monotonic()
    try:
        if on_ready is not None:
            on_ready()
        stopper.raising = False
        buf = b""
        while not stopper.stop and not until():
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                buf, _ = _read_lines(fd, buf, reader, take)
            progress.show(len(kept), time.monotonic() - t0)
        duration = (time.monotonic() - t0) * 1000
        inst.disable_all()
        more = True
        while more:  # what is still in the buffer (an empty non-blocking pipe says EAGAIN)
            buf, more = _read_lines(fd, buf, reader, take)
        for line in buf.decode(errors="replace").splitlines():
            take(reader.feed(line))
        take(reader.flush())
        progress.show(len(kept), duration / 1000, force=True)
        progress.done()
    finally:
        os.close(fd)
    lost = max(reader.lost, inst.lost())
    if lost:
        notes.append(f"the trace buffer overflowed: {lost} events lost")
    if truncated[0]:
        notes.append(f"more than {MAX_EVENTS} events: the rest were not kept")
    if keeper.dropped_receiver_probes:
        notes.append(
            f"{keeper.dropped_receiver_probes} tcp:tcp_probe events of the receiving side "
            "(data arrived, nothing in flight) left out"
        )
    kept.sort(key=lambda te: te[0])
    if by_flow(kind, flt):
        kept = flow_events(kept, flt, notes)
    for _, d in kept:
        d.pop("cpu", None)
        d.pop("pid", None)
    first = kept[0][0] if kept else 0.0
    events = [{"t_ms": round((ts - first) * 1000, 3), **d} for ts, d in kept]
    return Collected(events, notes, round(duration, 1), lost)


def flow_events(
    kept: list[tuple[float, dict[str, Any]]], flt: FlowFilter, notes: list[str]
) -> list[tuple[float, dict[str, Any]]]:
    """The recorded path events of the flow (app.record.pathmatch), with a note saying how it
    was found; the TCP events that named the flow are not part of the output."""
    found = pathmatch.select([d for _, d in kept], flt)
    how = (
        "tcp:tcp_probe prints skbaddr on this kernel: received packets matched by skb address"
        if found.skbaddr_in_probe
        else "tcp:tcp_probe prints no skbaddr on this kernel: received packets matched by the "
        "CPU that delivered them to the flow's socket"
    )
    notes.append(
        f"--port/--dst: {found.kept_packets} of {found.packets} packets kept "
        f"({found.by_address} by skb or socket address, the rest by the CPU that handled the "
        f"flow's segment just before); {how}; sent packets are clones no tracepoint names "
        "beside a port, so they are matched by CPU (docs/recording-format.md)"
    )
    return [kept[i] for i in found.keep]


def _read_lines(
    fd: int, buf: bytes, reader: TraceReader, take: Callable[[list[TraceEvent]], None]
) -> tuple[bytes, bool]:
    """Read what trace_pipe has now; feed whole lines; return the unfinished tail and whether
    anything was read."""
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return buf, False
    if not chunk:
        return buf, False
    buf += chunk
    *lines, rest = buf.split(b"\n")
    for raw in lines:
        take(reader.feed(raw.decode(errors="replace")))
    return rest, True


def _has_cap_sys_admin() -> bool:
    try:
        for line in open("/proc/self/status", encoding="ascii"):
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> 21 & 1)  # CAP_SYS_ADMIN is 21
    except (OSError, ValueError):
        pass
    return False


def open_tracefs() -> Tracefs:
    if os.geteuid() != 0 and not _has_cap_sys_admin():
        raise RecordError(msg("stepscope record needs root (or CAP_SYS_ADMIN) for tracefs"))
    return Tracefs.open()


def kernel_ok() -> None:
    """Linux >= 5.4 (tcp:tcp_probe's fields, instances' per-event filters)."""
    rel = os.uname().release
    try:
        major, minor = (int(x) for x in rel.split(".")[:2])
    except ValueError:
        return
    if (major, minor) < (5, 4):
        raise RecordError(
            msg("stepscope record needs Linux 5.4 or later (this is {release})", release=rel)
        )
