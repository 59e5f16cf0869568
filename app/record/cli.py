"""``stepscope``: the command users run on their own Linux machine (see ``--help``)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.record import output
from app.record.filters import FlowFilter
from app.record.recorder import (
    Collected,
    Interrupted,
    Stopper,
    kernel_ok,
    open_tracefs,
    record,
)
from app.record.tracefs import Instance, RecordError, Tracefs

FORMAT_HELP = """\
output: one JSON object (UTF-8), schema 1, described in docs/recording-format.md:
  format "stepscope-recording", schema 1, kind (cwnd|tcp|path), recorded_at, tool,
  kernel {release, machine}, sysctls {"net.ipv4.tcp_congestion_control": "cubic", ...},
  link {rate_mbit, rtt_ms, buffer_bytes, mtu} or null (the demo's bottleneck),
  filter {port, dst, dev} or null, command [argv] or null, duration_ms,
  flows [{src, dst, cc, mss, pacing_rate_bps}] (cwnd; from ss -tin / TCP_INFO),
  notes [strings: skipped events, lost events], and
  events [{t_ms (since the first event), event "system:name", fields {name: "value" as
  tracefs prints it}, stack [innermost function first] (path only)}].
Upload it at /recordings in Stepscope (at most 5 MB, 200,000 events: keep runs short).
events: cwnd tcp:tcp_probe; tcp sock:inet_sock_set_state, tcp:tcp_retransmit_skb,
  tcp:tcp_send_reset, tcp:tcp_receive_reset; path net:net_dev_queue, net:net_dev_start_xmit,
  net:netif_receive_skb, skb:consume_skb, skb:kfree_skb (reason), sock:sk_data_ready, each
  with its kernel stack.
Needs root (or CAP_SYS_ADMIN) and Linux >= 5.4; uses a private tracefs instance
(instances/stepscope-<pid>) that is removed on exit, Ctrl-C or SIGTERM."""


def _parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    ap = argparse.ArgumentParser(
        prog="stepscope",
        description="Record what your kernel does, to see it beside Stepscope's model.",
        epilog=FORMAT_HELP,
        formatter_class=fmt,
    )
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser(
        "record",
        help="record tracepoints into a JSON file",
        description="Record tracepoints of a flow into one JSON file. "
        "stepscope record KIND [options] [-- CMD ...] records while CMD runs.",
        epilog=FORMAT_HELP,
        formatter_class=fmt,
    )
    kinds = rec.add_subparsers(dest="kind", required=True)
    blurbs = {
        "cwnd": "tcp:tcp_probe per ACK (cwnd, ssthresh, srtt, ...) and the flows' cc, mss, "
        "pacing rate",
        "tcp": "socket state changes, retransmits and resets",
        "path": "the functions each packet goes through (stack traces)",
    }
    for kind, blurb in blurbs.items():
        k = kinds.add_parser(
            kind,
            help=blurb,
            usage=f"stepscope record {kind} [options] [-- CMD ...]",
            description=f"{blurb}. With -- CMD ..., records while CMD runs and stops when it "
            "exits; otherwise until --seconds or Ctrl-C.",
            epilog=FORMAT_HELP,
            formatter_class=fmt,
        )
        _common(k, "until Ctrl-C, or until CMD exits")
        if kind == "path":  # its events print no address: a device is what tracefs can match
            k.add_argument("--dev", type=_devs, help="only packets queued on or received by "
                           "these devices (comma-separated), and the skbs and socket wake-ups "
                           "that follow them")
            continue
        k.add_argument("--port", type=_port, help="only the flow(s) with this local or "
                       "remote port")
        k.add_argument("--dst", type=_addr, help="only the flow(s) with this address at "
                       "either end")
    demo = kinds.add_parser(
        "demo",
        help="record a transfer between two network namespaces this command creates",
        description="Build two network namespaces joined by veth (with a tbf bottleneck for "
        "cwnd), run traffic between them while recording, delete everything on exit.",
        epilog=FORMAT_HELP,
        formatter_class=fmt,
    )
    dk = demo.add_subparsers(dest="demo", required=True)
    dc = dk.add_parser("cwnd", help="one bulk TCP flow through a bottleneck",
                       description="One bulk TCP flow from one namespace to another through a "
                       "tbf bottleneck and a delay, recorded like record cwnd.",
                       epilog=FORMAT_HELP, formatter_class=fmt)
    _common(dc, "10")
    dc.add_argument("--cc", default="cubic", help="congestion control (default cubic)")
    dc.add_argument("--rate-mbit", type=_positive, default=20.0,
                    help="bottleneck rate in Mbit/s (default 20)")
    dc.add_argument("--rtt-ms", type=_nonneg, default=40.0,
                    help="base round-trip time in ms (default 40)")
    dc.add_argument("--buffer-bdp", type=_positive, default=1.0,
                    help="bottleneck buffer in bandwidth-delay products (default 1)")
    from app.record.tcpcalls import DEMO_PRESETS

    dt = dk.add_parser("tcp", help="the socket calls of a TCP explainer preset",
                       description="The socket calls of one of the TCP explainer's presets, on "
                       "127.0.0.1 in a new namespace, recorded like record tcp. Presets: "
                       + ", ".join(DEMO_PRESETS) + ".",
                       epilog=FORMAT_HELP, formatter_class=fmt)
    _common(dt, "1")
    dt.add_argument("--preset", default="handshake", help="preset name (default handshake)")
    dp = dk.add_parser("path", help="a few TCP segments across a veth pair",
                       description="Three small TCP segments from one namespace to another "
                       "over a veth pair, recorded like record path --dev (both ends).",
                       epilog=FORMAT_HELP, formatter_class=fmt)
    _common(dp, "when the segments are through, at most 10")
    return ap


def _addr(v: str) -> str:
    try:
        return str(ipaddress.ip_address(v))
    except ValueError as e:
        raise argparse.ArgumentTypeError("an IPv4 or IPv6 address") from e


def _common(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--seconds", type=_positive, help=f"stop after this many seconds "
                   f"(default: {default})")
    p.add_argument("--out", default="-", help="output file, - for stdout (default -)")


def _port(v: str) -> int:
    n = int(v)
    if not 0 < n < 65536:
        raise argparse.ArgumentTypeError("a port is 1 to 65535")
    return n


def _devs(v: str) -> str:
    if not all(re.fullmatch(r"[\w.:@-]{1,15}", d) for d in v.split(",")):
        raise argparse.ArgumentTypeError("device names, comma-separated (at most 15 bytes each)")
    return v


def _positive(v: str) -> float:
    x = float(v)
    if not x > 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return x


def _nonneg(v: str) -> float:
    x = float(v)
    if not x >= 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return x


@dataclass
class FlowWatch:
    """``ss -tin`` every second while recording: the flows' facts before they close."""

    port: int | None
    dst: str | None
    flows: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    _next: float = 0.0

    def poll(self, force: bool = False) -> None:
        now = time.monotonic()
        if now < self._next and not force:
            return
        self._next = now + 1.0
        for f in output.ss_flows(self.port, self.dst):
            self.flows[(f["src"], f["dst"])] = f


def run_record(kind: str, args: argparse.Namespace, cmd: list[str]) -> int:
    kernel_ok()
    flt = FlowFilter(getattr(args, "port", None), getattr(args, "dst", None),
                     getattr(args, "dev", None))
    deadline = time.monotonic() + args.seconds if args.seconds else None
    proc: list[subprocess.Popen[bytes]] = []
    watch = FlowWatch(flt.port, flt.dst) if kind == "cwnd" else None
    notes: list[str] = []

    def start() -> None:
        if cmd:
            stdout = sys.stderr if args.out == "-" else None
            try:
                proc.append(subprocess.Popen(cmd, stdout=stdout))
            except OSError as e:
                raise RecordError(f"cannot run {cmd[0]}: {e}") from e

    def until() -> bool:
        if watch is not None:
            watch.poll()
        if deadline is not None and time.monotonic() >= deadline:
            return True
        return bool(proc) and proc[0].poll() is not None

    stopper = Stopper()
    made: list[tuple[Tracefs, Instance]] = []
    with stopper.installed():
        try:
            tfs = open_tracefs()
            made.append((tfs, tfs.instance(f"stepscope-{os.getpid()}")))
            got = record(made[0][1], kind, flt, until, stopper, notes, on_ready=start)
            if watch is not None:
                watch.poll(force=True)
        finally:
            for t, inst in made:  # the instance, then tracefs (if we mounted it)
                t.release(inst)
                t.close()
            _stop(proc)
    if proc and proc[0].returncode:
        notes.append(f"the command exited with status {proc[0].returncode}")
    doc = output.build(
        kind,
        got.events,
        duration_ms=got.duration_ms,
        sysctls=output.read_sysctls(),
        flows=list(watch.flows.values()) if watch is not None else [],
        flt=flt.as_json(),
        command=cmd or None,
        notes=got.notes,
    )
    return _finish(doc, args.out, got)


def _stop(proc: list[subprocess.Popen[bytes]]) -> None:
    """Terminate the command we started (our own child only)."""
    for p in proc:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _finish(doc: dict[str, Any], out: str, got: Collected) -> int:
    size = output.write(doc, out)
    where = "stdout" if out == "-" else out
    print(f"stepscope: {len(got.events)} events in {got.duration_ms / 1000:.1f} s, "
          f"{size} bytes to {where}", file=sys.stderr)
    if size > output.MAX_BYTES:
        print("stepscope: warning: over 5 MB, the app will refuse it; record fewer seconds",
              file=sys.stderr)
    return 0


def run_demo(args: argparse.Namespace) -> int:
    from app.record import demo  # the namespaces, qdiscs and traffic

    handlers: dict[str, Callable[[argparse.Namespace], tuple[dict[str, Any], Collected]]] = {
        "cwnd": demo.demo_cwnd,
        "tcp": demo.demo_tcp,
        "path": demo.demo_path,
    }
    kernel_ok()
    doc, got = handlers[args.demo](args)
    return _finish(doc, args.out, got)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1 :]
    args = _parser().parse_args(argv)
    try:
        if args.kind == "demo":
            if cmd:
                raise RecordError("record demo runs its own traffic: no -- CMD")
            return run_demo(args)
        return run_record(args.kind, args, cmd)
    except RecordError as e:
        print(f"stepscope: error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"stepscope: interrupted ({e}) before recording; everything removed",
              file=sys.stderr)
        return 130
