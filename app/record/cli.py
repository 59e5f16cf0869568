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

from app.record import lang, output
from app.record.argtext import Parser
from app.record.filters import FlowFilter
from app.record.lang import LANGUAGES
from app.record.recorder import (
    Collected,
    Interrupted,
    Stopper,
    kernel_ok,
    open_tracefs,
    record,
    stop_children,
)
from app.record.tracefs import Instance, RecordError, Tracefs
from app.sim.core.i18n import Message, msg, reader_gettext

# The output's keys (identifiers, the same in every language; docs/recording-format.md).
SCHEMA_KEYS = """\
format "stepscope-recording", schema 1, kind (cwnd|tcp|path), recorded_at, tool,
  kernel {release, machine}, sysctls {"net.ipv4.tcp_congestion_control": "cubic", ...},
  link {rate_mbit, rtt_ms, buffer_bytes, mtu} | null, filter {port, dst, dev} | null,
  command [argv] | null, duration_ms, flows [{src, dst, cc, mss, pacing_rate_bps}],
  notes [strings], events [{t_ms, event "system:name", fields {name: "value"}, stack [...]}]"""


def _format_help() -> str:
    """The epilog of every --help: the output file, what is recorded and what is needed."""
    from app.record.recorder import EVENTS

    events = {kind: ", ".join(e for e, _ in evs) for kind, evs in EVENTS.items()}
    return str(
        msg(
            """\
output: one JSON object (UTF-8), schema 1, described in docs/recording-format.md:
  {keys}
Its content is data, the same whatever language this command speaks: the notes are English and
field values are printed as tracefs prints them. t_ms counts from the first event, stack lists
the innermost function first (path only), flows come from ss -tin / TCP_INFO (cwnd), link is
the demo's bottleneck. Upload it at /recordings in Stepscope (at most 5 MB, 200,000 events:
keep runs short).
events (those of path each with its kernel stack):
  cwnd: {cwnd}
  tcp: {tcp}
  path: {path}
Needs root (or CAP_SYS_ADMIN) and Linux >= 5.4; uses a private tracefs instance
({instance}) that is removed on exit, Ctrl-C or SIGTERM.
Language: --lang en|zh-CN, else LC_ALL, LC_MESSAGES or LANG (zh* → Chinese), else English.""",
            keys=SCHEMA_KEYS,
            instance="instances/stepscope-<pid>",
            **events,
        )
    )


def _sub(
    sub: argparse._SubParsersAction[Any], name: str, **kw: Any
) -> argparse.ArgumentParser:
    """A subcommand's parser: translated words, the format epilog and --lang."""
    p: argparse.ArgumentParser = sub.add_parser(name, epilog=_format_help(), **kw)
    _lang_option(p, argparse.SUPPRESS)
    return p


def _lang_option(p: argparse.ArgumentParser, default: str) -> None:
    # Read before parsing (app.record.lang.asked); declared so that help lists it and a wrong
    # value is an error. Subcommands' default is SUPPRESS so theirs never hides the top one.
    p.add_argument("--lang", choices=list(LANGUAGES), default=default,
                   help=str(msg("language of the messages (default: from LC_ALL, LC_MESSAGES, "
                                "LANG; else en)")))


def _parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog="stepscope",
        description=str(msg("Record what your kernel does, to see it beside Stepscope's model.")),
        epilog=_format_help(),
    )
    _lang_option(ap, "")
    sub = ap.add_subparsers(dest="command", required=True)
    rec = _sub(
        sub,
        "record",
        help=str(msg("record tracepoints into a JSON file")),
        description=str(msg("Record tracepoints of a flow into one JSON file. stepscope record "
                            "KIND [options] [-- CMD ...] records while CMD runs.")),
    )
    kinds = rec.add_subparsers(dest="kind", required=True)
    blurbs = {
        "cwnd": msg("tcp:tcp_probe per ACK (cwnd, ssthresh, srtt, ...) and the flows' cc, mss, "
                    "pacing rate"),
        "tcp": msg("socket state changes, retransmits and resets"),
        "path": msg("the functions each packet goes through (stack traces)"),
    }
    for kind, blurb in blurbs.items():
        k = _sub(
            kinds,
            kind,
            help=str(blurb),
            usage=str(msg("stepscope record {kind} [options] [-- CMD ...]", kind=kind)),
            description=str(msg("{what}. With -- CMD ..., records while CMD runs and stops when "
                                "it exits; otherwise until --seconds or Ctrl-C.", what=blurb)),
        )
        _common(k, msg("until Ctrl-C, or until CMD exits"))
        if kind == "path":  # its events print no address: a device is what tracefs can match
            k.add_argument("--dev", type=_devs, help=str(msg(
                "only packets queued on or received by these devices (comma-separated), and "
                "the skbs and socket wake-ups that follow them")))
            k.add_argument("--port", type=_port, help=str(msg(
                "only the packets of the flow(s) with this local or remote port: received "
                "ones by skb address where tcp:tcp_probe prints it (else by the CPU that "
                "delivered them to the flow), sent ones by the CPU that handled the flow's "
                "segment just before (a sent skb is a clone no tracepoint names beside a "
                "port); see docs/recording-format.md")))
            k.add_argument("--dst", type=_addr, help=str(msg(
                "only the packets of the flow(s) with this address at either end, matched "
                "as for --port")))
            continue
        k.add_argument("--port", type=_port, help=str(msg(
            "only the flow(s) with this local or remote port")))
        k.add_argument("--dst", type=_addr, help=str(msg(
            "only the flow(s) with this address at either end")))
    _demo_parsers(kinds)
    return ap


def _demo_parsers(kinds: argparse._SubParsersAction[Any]) -> None:
    demo = _sub(
        kinds,
        "demo",
        help=str(msg("record a transfer between two network namespaces this command creates")),
        description=str(msg("Build two network namespaces joined by veth (with a tbf bottleneck "
                            "for cwnd), run traffic between them while recording, delete "
                            "everything on exit.")),
    )
    dk = demo.add_subparsers(dest="demo", required=True)
    dc = _sub(dk, "cwnd", help=str(msg("one bulk TCP flow through a bottleneck")),
              description=str(msg("One bulk TCP flow from one namespace to another through a "
                                  "tbf bottleneck and a delay, recorded like record cwnd.")))
    _common(dc, "10")
    dc.add_argument("--cc", default="cubic",
                    help=str(msg("congestion control (default {cc})", cc="cubic")))
    dc.add_argument("--rate-mbit", type=_positive, default=20.0,
                    help=str(msg("bottleneck rate in Mbit/s (default {v})", v=20)))
    dc.add_argument("--rtt-ms", type=_nonneg, default=40.0,
                    help=str(msg("base round-trip time in ms (default {v})", v=40)))
    dc.add_argument("--buffer-bdp", type=_positive, default=1.0,
                    help=str(msg("bottleneck buffer in bandwidth-delay products (default {v})",
                                 v=1)))
    from app.record.tcpcalls import DEMO_PRESETS

    dt = _sub(dk, "tcp", help=str(msg("the socket calls of a TCP explainer preset")),
              description=str(msg("The socket calls of one of the TCP explainer's presets, on "
                                  "127.0.0.1 in a new namespace, recorded like record tcp. "
                                  "Presets: {presets}.", presets=", ".join(DEMO_PRESETS))))
    _common(dt, "1")
    dt.add_argument("--preset", default="handshake",
                    help=str(msg("preset name (default {name})", name="handshake")))
    dp = _sub(dk, "path", help=str(msg("a few TCP segments across a veth pair")),
              description=str(msg("Three small TCP segments from one namespace to another over "
                                  "a veth pair, recorded like record path --dev (both ends).")))
    _common(dp, msg("when the segments are through, at most {n}", n=10))


def _addr(v: str) -> str:
    try:
        return str(ipaddress.ip_address(v))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(msg("an IPv4 or IPv6 address"))) from e


def _common(p: argparse.ArgumentParser, default: Message | str) -> None:
    p.add_argument("--seconds", type=_positive, help=str(msg(
        "stop after this many seconds (default: {default})", default=default)))
    p.add_argument("--out", default="-", help=str(msg(
        "output file, - for stdout (default -)")))


def _port(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        n = 0
    if not 0 < n < 65536:
        raise argparse.ArgumentTypeError(str(msg("a port is 1 to 65535")))
    return n


def _devs(v: str) -> str:
    if not all(re.fullmatch(r"[\w.:@-]{1,15}", d) for d in v.split(",")):
        raise argparse.ArgumentTypeError(
            str(msg("device names, comma-separated (at most 15 bytes each)"))
        )
    return v


def _number(v: str) -> float:
    try:
        return float(v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(msg("a number, not {value}", value=repr(v)))) from e


def _positive(v: str) -> float:
    x = _number(v)
    if not x > 0:
        raise argparse.ArgumentTypeError(str(msg("must be > 0")))
    return x


def _nonneg(v: str) -> float:
    x = _number(v)
    if not x >= 0:
        raise argparse.ArgumentTypeError(str(msg("must be >= 0")))
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
                raise RecordError(
                    msg("cannot run {command}: {error}", command=cmd[0], error=str(e))
                ) from e

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
            stop_children(proc)
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


def _finish(doc: dict[str, Any], out: str, got: Collected) -> int:
    size = output.write(doc, out)
    where: Message | str = msg("stdout") if out == "-" else out
    done = msg("{n} events in {seconds:.1f} s, {size} bytes to {where}", n=len(got.events),
               seconds=got.duration_ms / 1000, size=size, where=where)
    print(f"stepscope: {done}", file=sys.stderr)
    if size > output.MAX_BYTES:
        warning = msg("warning: over 5 MB, the app will refuse it; record fewer seconds")
        print(f"stepscope: {warning}", file=sys.stderr)
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
    """Run one invocation in its language (:func:`app.record.lang.choose`): every message,
    --help and argparse's errors included, is rendered in it; the output file is not."""
    argv = list(sys.argv[1:] if argv is None else argv)
    token = reader_gettext.set(lang.gettext_for(lang.choose(argv, os.environ)))
    try:
        return _run(argv)
    finally:
        reader_gettext.reset(token)


def _run(argv: list[str]) -> int:
    cmd: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1 :]
    args = _parser().parse_args(argv)
    try:
        if args.kind == "demo":
            if cmd:
                raise RecordError(msg("record demo runs its own traffic: no -- CMD"))
            return run_demo(args)
        return run_record(args.kind, args, cmd)
    except RecordError as e:
        error = msg("error: {reason}", reason=e.message)
        print(f"stepscope: {error}", file=sys.stderr)
        return 2
    except Interrupted as e:
        stopped = msg("interrupted ({signal}) before recording; everything removed",
                      signal=str(e))
        print(f"stepscope: {stopped}", file=sys.stderr)
        return 130
