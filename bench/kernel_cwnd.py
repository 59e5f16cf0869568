"""Measure the real kernel's cwnd for reno / cubic / bbr on a real bottleneck.

Topology (all inside network namespaces this script creates and deletes):

    ss-snd [s0 10.77.0.1] --veth-- [m0] ss-mid [m1] --veth-- [r0 10.77.0.2] ss-rcv
                                    relay.py: +RTT/2 each way
                                    tbf on m1 egress = the bottleneck

This kernel has no sch_netem (nor fq / fq_codel), so the propagation delay is
added by a userspace L2 relay (app/record/relay.py) in ss-mid; the tbf qdisc
on ss-mid's egress towards the receiver is the bottleneck, with its byte
limit set to --buffer-bdp x BDP.  The bottleneck is deliberately *not* on the
sender's own veth: there TCP Small Queues would count the tbf backlog against
the socket and the queue (and the losses) would never build.

cwnd is sampled two ways: getsockopt(TCP_INFO) (+TCP_CC_INFO for BBR) polled by
a thread in the sender every --interval-ms, and the tcp:tcp_probe tracepoint
(one event per incoming ACK) in a private tracefs instance.

Examples:
    sudo .venv/bin/python bench/kernel_cwnd.py --cc cubic --rate-mbit 20 --seconds 15
    sudo .venv/bin/python bench/kernel_cwnd.py --cc bbr --flows 4 --seconds 25   # 4 x bbr
    sudo .venv/bin/python bench/kernel_cwnd.py --mix bbr,cubic --seconds 25      # mixed

With --flows N / --mix, the flows run concurrently (flow i on port+i, started
i x --stagger-s apart, all stopping together); each is sampled on its own and
the run prints per-flow goodput, Jain's fairness index, tbf drops, retransmits,
mean srtt and, for BBR, ProbeRTT dips and long-term ("policer") bw episodes.

The options the model has (issue 11) are checked with:
    --ecn --ce-prob P   the sender sets net.ipv4.tcp_ecn=1 (the receiver keeps 2) and the
                        relay marks ECT frames CE with probability P (this kernel has no
                        sch_red); the tcp:tcp_cong_state_set tracepoint counts CWR entries
    --rcvbuf BYTES      SO_RCVBUF on the receiver's listener: a fixed receive window
and an "options" line: the handshake's RTT sample (the first TCP_INFO poll, before any data
is ACKed: tcpi_rtt, tcpi_rttvar, tcpi_rto, tcpi_snd_cwnd), tcpi_snd_wnd, tcpi_rwnd_limited,
tcpi_delivered_ce and the CA states seen.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "kernel"))

import analyze  # noqa: E402

NS_SND, NS_MID, NS_RCV = "ss-snd", "ss-mid", "ss-rcv"
ALL_NS = (NS_SND, NS_MID, NS_RCV)
SND_IP, RCV_IP = "10.77.0.1", "10.77.0.2"
TRACEFS = Path("/sys/kernel/tracing")
ECN_SENDER = False  # --ecn: set net.ipv4.tcp_ecn=1 in the sender's namespace
CSV_FIELDS = (
    "t ca_state snd_cwnd snd_ssthresh rtt rttvar min_rtt pacing_rate delivery_rate "
    "unacked lost retrans total_retrans bytes_acked delivered snd_mss "
    "bbr_bw bbr_min_rtt bbr_pacing_gain bbr_cwnd_gain"
).split()


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {res.stderr.strip()}")
    return res


def in_ns(ns: str, *cmd: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *cmd]


def teardown() -> None:
    """Delete our namespaces (only the ss- ones we create); the veths go with them."""
    existing = sh("ip", "netns", "list", check=False).stdout.split()
    for ns in ALL_NS:
        if ns in existing:
            sh("ip", "netns", "del", ns, check=False)


def setup(rate_mbit: float, limit_bytes: int, burst_bytes: int) -> None:
    teardown()
    for ns in ALL_NS:
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh(
        "ip",
        "link",
        "add",
        "s0",
        "netns",
        NS_SND,
        "type",
        "veth",
        "peer",
        "name",
        "m0",
        "netns",
        NS_MID,
    )
    sh(
        "ip",
        "link",
        "add",
        "m1",
        "netns",
        NS_MID,
        "type",
        "veth",
        "peer",
        "name",
        "r0",
        "netns",
        NS_RCV,
    )
    sh("ip", "-n", NS_SND, "addr", "add", f"{SND_IP}/24", "dev", "s0")
    sh("ip", "-n", NS_RCV, "addr", "add", f"{RCV_IP}/24", "dev", "r0")
    for ns, dev in ((NS_SND, "s0"), (NS_MID, "m0"), (NS_MID, "m1"), (NS_RCV, "r0")):
        sh("ip", "-n", ns, "link", "set", dev, "up")
    # no route cache / metrics reuse between runs (fresh netns anyway)
    sh(*in_ns(NS_SND, "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1"))
    if ECN_SENDER:  # the sender asks for ECN; the receiver keeps the default 2 (accept)
        sh(*in_ns(NS_SND, "sysctl", "-qw", "net.ipv4.tcp_ecn=1"))
    sh(
        *in_ns(
            NS_MID,
            "tc",
            "qdisc",
            "add",
            "dev",
            "m1",
            "root",
            "tbf",
            "rate",
            f"{rate_mbit}mbit",
            "burst",
            str(burst_bytes),
            "limit",
            str(limit_bytes),
        )
    )


def tc_stats() -> dict[str, Any]:
    out = sh(*in_ns(NS_MID, "tc", "-s", "qdisc", "show", "dev", "m1"), check=False).stdout
    d: dict[str, Any] = {"text": out}
    m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", out)
    if m:
        d.update(sent_bytes=int(m[1]), sent_pkt=int(m[2]), dropped=int(m[3]), overlimits=int(m[4]))
    return d


class ProbeTrace:
    """tcp:tcp_probe in a private tracefs instance, clock = CLOCK_MONOTONIC."""

    def __init__(self, port: int, nports: int = 1) -> None:
        self.port = port
        self.nports = nports
        self.mounted = False
        self.inst: Path | None = None
        self.error: str | None = None

    def start(self) -> bool:
        try:
            if not (TRACEFS / "instances").is_dir():
                TRACEFS.mkdir(parents=True, exist_ok=True)
                sh("mount", "-t", "tracefs", "nodev", str(TRACEFS))
                self.mounted = True
            inst = TRACEFS / "instances" / f"ss-cwnd-{os.getpid()}"
            inst.mkdir()
            self.inst = inst
            (inst / "buffer_size_kb").write_text("32768")
            (inst / "trace_clock").write_text("mono")
            ev = inst / "events" / "tcp" / "tcp_probe"
            flt = (
                f"dport == {self.port}"
                if self.nports == 1
                else f"dport >= {self.port} && dport < {self.port + self.nports}"
            )
            (ev / "filter").write_text(flt)
            (ev / "enable").write_text("1")
            cs = inst / "events" / "tcp" / "tcp_cong_state_set"
            if cs.is_dir():  # CA-state changes (6.4 has no such tracepoint; 6.18 has)
                (cs / "filter").write_text(flt)
                (cs / "enable").write_text("1")
            return True
        except (OSError, RuntimeError) as exc:
            self.error = str(exc)
            self.stop()
            return False

    def collect(self) -> tuple[str, str]:
        assert self.inst is not None
        (self.inst / "events" / "tcp" / "tcp_probe" / "enable").write_text("0")
        cs = self.inst / "events" / "tcp" / "tcp_cong_state_set"
        if cs.is_dir():
            (cs / "enable").write_text("0")
        overrun = ""
        for cpu in sorted((self.inst / "per_cpu").glob("cpu*")):
            m = re.search(r"^overrun: (\d+)", (cpu / "stats").read_text(), re.M)
            if m and m[1] != "0":
                overrun += f"{cpu.name}:{m[1]} "
        return (self.inst / "trace").read_text(), overrun.strip()

    def stop(self) -> None:
        if self.inst is not None and self.inst.exists():
            try:
                (self.inst / "events" / "tcp" / "tcp_probe" / "enable").write_text("0")
            except OSError:
                pass
            try:
                self.inst.rmdir()
            except OSError as exc:
                print(f"warning: could not remove {self.inst}: {exc}", file=sys.stderr)
        self.inst = None
        if self.mounted:
            sh("umount", str(TRACEFS), check=False)
            self.mounted = False


def ensure_cc(cc: str) -> None:
    path = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    if cc in path.read_text().split():
        return
    if shutil.which("modprobe"):
        sh("modprobe", f"tcp_{cc}", check=False)
    if cc not in path.read_text().split():
        raise SystemExit(
            f"congestion control {cc!r} is not available on this kernel "
            f"(have: {path.read_text().strip()})"
        )


def _wait_line(proc: subprocess.Popen[str], want: str, timeout: float) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if want in line:
            return
        if not line and proc.poll() is not None:
            break
    raise RuntimeError(f"helper did not report {want!r} (rc={proc.poll()})")


def _start_relay(
    args: argparse.Namespace, tmp: Path, procs: list[subprocess.Popen[str]], rt: bool = False
) -> subprocess.Popen[str]:
    # With several senders (and their samplers) competing for the two vCPUs, the
    # relay runs SCHED_FIFO so the delay line keeps its timing.
    prio = ["chrt", "-f", "20"] if rt and shutil.which("chrt") else []
    relay = subprocess.Popen(
        in_ns(
            NS_MID,
            *prio,
            sys.executable,
            str(ROOT / "app" / "record" / "relay.py"),
            "--a",
            "m0",
            "--b",
            "m1",
            "--delay-ms",
            str(args.rtt_ms / 2),
            "--seconds",
            str(args.seconds + 30),
            "--stats",
            str(tmp / "relay.json"),
            "--ce-prob",
            str(getattr(args, "ce_prob", 0.0)),
        ),
        stdout=subprocess.PIPE,
        text=True,
    )
    procs.append(relay)
    _wait_line(relay, "relay ready", 10)
    return relay


def _start_recv(
    args: argparse.Namespace, port: int, procs: list[subprocess.Popen[str]]
) -> subprocess.Popen[str]:
    recv = subprocess.Popen(
        in_ns(
            NS_RCV,
            sys.executable,
            str(ROOT / "app" / "record" / "flow.py"),
            "recv",
            "--bind",
            RCV_IP,
            "--port",
            str(port),
            "--seconds",
            str(args.seconds + 10),
            "--rcvbuf",
            str(getattr(args, "rcvbuf", 0)),
        ),
        stdout=subprocess.PIPE,
        text=True,
    )
    procs.append(recv)
    _wait_line(recv, "recv ready", 10)
    return recv


def _mac(ns: str, dev: str) -> str:
    out = sh("ip", "-n", ns, "-o", "link", "show", "dev", dev).stdout
    m = re.search(r"link/ether ([0-9a-f:]{17})", out)
    if not m:
        raise RuntimeError(f"no MAC for {ns}/{dev}")
    return m[1]


def _static_neighbours() -> None:
    """Permanent ARP entries both ways, so the first flow's SYN does not wait one
    relayed round trip for ARP (that would eat ~40 ms of the 0.1 s stagger)."""
    sh(
        "ip",
        "-n",
        NS_SND,
        "neigh",
        "replace",
        RCV_IP,
        "lladdr",
        _mac(NS_RCV, "r0"),
        "dev",
        "s0",
        "nud",
        "permanent",
    )
    sh(
        "ip",
        "-n",
        NS_RCV,
        "neigh",
        "replace",
        SND_IP,
        "lladdr",
        _mac(NS_SND, "s0"),
        "dev",
        "r0",
        "nud",
        "permanent",
    )


def _stop_all(procs: list[subprocess.Popen[str]]) -> None:
    """Terminate the helpers we started (by their own Popen handle, nothing else)."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)


def run_one(args: argparse.Namespace, cc: str, out_dir: Path) -> dict[str, Any]:
    ensure_cc(cc)
    py = sys.executable
    bdp_bytes = args.rate_mbit * 1e6 / 8 * args.rtt_ms / 1000
    limit = max(int(bdp_bytes * args.buffer_bdp), 3 * 1514)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = out_dir / f"{stamp}-{cc}-{args.rate_mbit:g}mbit-{args.rtt_ms:g}ms"
    tmp = Path(f"/tmp/ss-cwnd-{os.getpid()}")
    tmp.mkdir(exist_ok=True)
    procs: list[subprocess.Popen[str]] = []
    trace = ProbeTrace(args.port)
    try:
        setup(args.rate_mbit, limit, args.burst_bytes)
        _static_neighbours()  # no ARP round trip through the relay inflating the SYN's RTT
        relay = _start_relay(args, tmp, procs)
        recv = _start_recv(args, args.port, procs)
        use_trace = not args.no_trace and trace.start()
        send = subprocess.run(
            in_ns(
                NS_SND,
                py,
                str(ROOT / "app" / "record" / "flow.py"),
                "send",
                "--dst",
                RCV_IP,
                "--port",
                str(args.port),
                "--cc",
                cc,
                "--seconds",
                str(args.seconds),
                "--interval-ms",
                str(args.interval_ms),
                "--out",
                str(tmp / "send.json"),
            ),
            capture_output=True,
            text=True,
            timeout=args.seconds + 30,
        )
        if send.returncode != 0:
            raise RuntimeError(f"sender failed: {send.stderr.strip()}")
        probe_text, overrun = trace.collect() if use_trace else ("", "")
        recv.wait(timeout=15)
        relay.terminate()
        relay.wait(timeout=5)
        tc = tc_stats()
        snd = json.loads((tmp / "send.json").read_text())
        relay_stats = json.loads((tmp / "relay.json").read_text())
    finally:
        trace.stop()
        _stop_all(procs)
        teardown()
        shutil.rmtree(tmp, ignore_errors=True)

    probe = analyze.parse_probe_trace(probe_text, snd["t0_monotonic"]) if probe_text else []
    run = {
        "config": {
            "cc": cc,
            "rate_mbit": args.rate_mbit,
            "rtt_ms": args.rtt_ms,
            "buffer_bdp": args.buffer_bdp,
            "limit_bytes": limit,
            "burst_bytes": args.burst_bytes,
            "seconds": args.seconds,
            "interval_ms": args.interval_ms,
            "kernel": os.uname().release,
            "hz": _kernel_hz(),
        },
        "tc": tc,
        "relay": relay_stats,
        "trace": {"enabled": bool(probe_text), "error": trace.error, "overrun": overrun},
        "sent_bytes": snd["sent_bytes"],
        "tcp_info": snd["samples"],
        "tcp_probe": probe,
    }
    run["summary"] = analyze.summarize(run)
    run["options"] = options_summary(snd["samples"], probe_text, relay_stats, args)
    base.with_suffix(".json").write_text(json.dumps(run))
    with open(base.with_suffix(".csv"), "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(snd["samples"])
    if probe:
        with open(f"{base}-probe.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(probe[0]))
            w.writeheader()
            w.writerows(probe)
    run["files"] = [str(base.with_suffix(".json")), str(base.with_suffix(".csv"))]
    return run


_CONG_STATE = re.compile(r"^\s*\S+\s+\[\d+\].*?\s([\d.]+): tcp_cong_state_set: .* cong_state=(\d+)")
CA_NAMES = ("Open", "Disorder", "CWR", "Recovery", "Loss")


def options_summary(
    samples: list[dict[str, Any]], trace_text: str, relay: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    """The figures the model's options are checked against (see the module docstring)."""
    first = samples[0] if samples else {}
    states = [int(r["ca_state"]) for r in samples]
    entries = {name: 0 for name in CA_NAMES}
    traced = [int(m[2]) for m in map(_CONG_STATE.search, trace_text.splitlines()) if m]
    for prev, cur in zip([0, *traced], traced, strict=False):
        if cur != prev:
            entries[CA_NAMES[cur]] += 1
    last = samples[-1] if samples else {}
    acked_mbit = 8 * last.get("bytes_acked", 0) / max(last.get("t", 1e-9), 1e-9) / 1e6
    return {
        "handshake": {k: first.get(k) for k in ("t", "rtt", "rttvar", "rto", "snd_cwnd")},
        "ca_state_samples": {CA_NAMES[s]: states.count(s) for s in sorted(set(states))},
        "ca_state_entries_traced": entries if traced else None,
        "delivered_ce": last.get("delivered_ce"),
        "total_retrans": last.get("total_retrans"),
        "snd_wnd_max": max((r.get("snd_wnd", 0) for r in samples), default=None),
        "rwnd_limited_s": (last.get("rwnd_limited_us") or 0) / 1e6,
        "goodput_mbit": round(acked_mbit, 3),
        "relay_ce_marked_frames": relay.get("ce_marked_frames"),
        "relay_ect_frames": relay.get("ect_seen"),
        "ecn": bool(getattr(args, "ecn", False)),
        "rcvbuf": getattr(args, "rcvbuf", 0),
    }


def _print_options(run: dict[str, Any]) -> None:
    o = run.get("options")
    if o:
        print("options:", json.dumps(o))


def run_multi(args: argparse.Namespace, ccs: list[str], out_dir: Path) -> dict[str, Any]:
    """len(ccs) concurrent flows through the one bottleneck, flow i on port+i.

    Every sender is started ahead of time and waits for its slot on a shared
    CLOCK_MONOTONIC schedule (flow i connects at T0 + i * --stagger-s), so the
    ~0.1 s stagger is not at the mercy of Python start-up; all flows stop at the
    same instant (T0 + --seconds), like the simulator's flows with start_s = i * 0.1.
    """
    for cc in set(ccs):
        ensure_cc(cc)
    n = len(ccs)
    bdp_bytes = args.rate_mbit * 1e6 / 8 * args.rtt_ms / 1000
    limit = max(int(bdp_bytes * args.buffer_bdp), 3 * 1514)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    tag = f"{n}x{ccs[0]}" if len(set(ccs)) == 1 else "+".join(ccs)
    base = out_dir / f"{stamp}-{tag}-{args.rate_mbit:g}mbit-{args.rtt_ms:g}ms"
    tmp = Path(f"/tmp/ss-cwnd-{os.getpid()}")
    tmp.mkdir(exist_ok=True)
    procs: list[subprocess.Popen[str]] = []
    trace = ProbeTrace(args.port, n)
    try:
        setup(args.rate_mbit, limit, args.burst_bytes)
        _static_neighbours()
        _start_relay(args, tmp, procs, rt=True)
        for i in range(n):
            _start_recv(args, args.port + i, procs)
        use_trace = not args.no_trace and trace.start()
        t_start = time.monotonic() + 1.5  # leave time for the senders' interpreters
        t_end = t_start + args.seconds
        senders = []
        for i, cc in enumerate(ccs):
            p = subprocess.Popen(
                in_ns(
                    NS_SND,
                    sys.executable,
                    str(ROOT / "app" / "record" / "flow.py"),
                    "send",
                    "--dst",
                    RCV_IP,
                    "--port",
                    str(args.port + i),
                    "--cc",
                    cc,
                    "--seconds",
                    str(args.seconds),
                    "--start-at",
                    repr(t_start + i * args.stagger_s),
                    "--end-at",
                    repr(t_end),
                    "--interval-ms",
                    str(args.interval_ms),
                    "--out",
                    str(tmp / f"send{i}.json"),
                ),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            procs.append(p)
            senders.append(p)
        for i, p in enumerate(senders):
            try:
                _, err = p.communicate(timeout=max(5.0, t_end - time.monotonic() + 20))
            except subprocess.TimeoutExpired as exc:
                raise RuntimeError(f"sender {i} did not finish") from exc
            if p.returncode != 0:
                raise RuntimeError(f"sender {i} ({ccs[i]}) failed: {err.strip()}")
        probe_text, overrun = trace.collect() if use_trace else ("", "")
        tc = tc_stats()  # before the relay stops: nothing more goes through tbf anyway
        _stop_all(procs)
        snds = [json.loads((tmp / f"send{i}.json").read_text()) for i in range(n)]
        relay_stats = json.loads((tmp / "relay.json").read_text())
    finally:
        trace.stop()
        _stop_all(procs)
        teardown()
        shutil.rmtree(tmp, ignore_errors=True)

    flows = []
    for i, snd in enumerate(snds):
        probe = (
            analyze.parse_probe_trace(probe_text, snd["t0_monotonic"], dport=args.port + i)
            if probe_text
            else []
        )
        flows.append(
            {
                "cc": ccs[i],
                "port": args.port + i,
                "sport": snd.get("sport"),
                "t0_monotonic": snd["t0_monotonic"],
                "sent_bytes": snd["sent_bytes"],
                "tcp_info": snd["samples"],
                "tcp_probe": probe,
            }
        )
    run: dict[str, Any] = {
        "config": {
            "ccs": ccs,
            "rate_mbit": args.rate_mbit,
            "rtt_ms": args.rtt_ms,
            "buffer_bdp": args.buffer_bdp,
            "limit_bytes": limit,
            "burst_bytes": args.burst_bytes,
            "seconds": args.seconds,
            "stagger_s": args.stagger_s,
            "interval_ms": args.interval_ms,
            "kernel": os.uname().release,
            "hz": _kernel_hz(),
            "relay_sched": "SCHED_FIFO 20" if shutil.which("chrt") else "normal",
        },
        "t_start_monotonic": t_start,
        "t_end_monotonic": t_end,
        "tc": tc,
        "relay": relay_stats,
        "trace": {"enabled": bool(probe_text), "error": trace.error, "overrun": overrun},
        "flows": flows,
    }
    run["summary"] = analyze.summarize_multi(run)
    base.with_suffix(".json").write_text(json.dumps(run))
    with open(base.with_suffix(".csv"), "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["flow", "cc", *CSV_FIELDS], extrasaction="ignore")
        w.writeheader()
        for i, f in enumerate(flows):
            off = f["t0_monotonic"] - t_start
            for r in f["tcp_info"]:
                w.writerow({**r, "flow": i, "cc": f["cc"], "t": round(r["t"] + off, 6)})
    run["files"] = [str(base.with_suffix(".json")), str(base.with_suffix(".csv"))]
    return run


def _kernel_hz() -> int | None:
    try:
        import gzip

        with gzip.open("/proc/config.gz", "rt") as fh:
            m = re.search(r"^CONFIG_HZ=(\d+)", fh.read(), re.M)
        return int(m[1]) if m else None
    except OSError:
        return None


def _print_relay(run: dict[str, Any]) -> None:
    r = run["relay"]
    frames = (r.get("a2b_frames", 0) + r.get("b2a_frames", 0)) or 1
    print(
        f"   relay: {100 * r.get('late_over_1ms', 0) / frames:.2f}% of frames >1 ms "
        f"late, max {r.get('late_ms_max', 0):.2f} ms; largest frame "
        f"{r.get('max_frame')} B; files: {', '.join(run['files'])}"
    )
    if run["trace"]["error"] or run["trace"]["overrun"]:
        print(f"   tcp_probe: {run['trace']}")


def main() -> int:
    ap = argparse.ArgumentParser(
        description="Measure real-kernel cwnd (reno/cubic/bbr) through a tbf bottleneck "
        "in private ss-* network namespaces.",
        epilog="Needs root (namespaces, tc, tracefs). Writes data/kernel/*.json|csv.",
    )
    ap.add_argument(
        "--cc", default="cubic", help="reno, cubic, bbr or a comma list (e.g. reno,cubic,bbr)"
    )
    ap.add_argument("--rate-mbit", type=float, default=20.0, help="tbf rate (default 20)")
    ap.add_argument(
        "--rtt-ms",
        type=float,
        default=40.0,
        help="base RTT added by the userspace delay relay (default 40)",
    )
    ap.add_argument(
        "--buffer-bdp",
        type=float,
        default=1.0,
        help="tbf limit in BDPs of the base RTT (default 1.0)",
    )
    ap.add_argument(
        "--burst-bytes",
        type=int,
        default=3028,
        help="tbf burst; GSO packets bigger than this get segmented (default 3028)",
    )
    ap.add_argument("--seconds", type=float, default=15.0, help="flow length (default 15)")
    ap.add_argument(
        "--flows",
        type=int,
        default=1,
        help="N concurrent flows of each --cc through the one bottleneck (default 1)",
    )
    ap.add_argument(
        "--mix",
        help="one run of concurrent flows with these ccs, e.g. bbr,cubic (overrides --cc/--flows)",
    )
    ap.add_argument(
        "--stagger-s",
        type=float,
        default=0.1,
        help="start flow i at i x this (multi-flow runs, default 0.1)",
    )
    ap.add_argument("--interval-ms", type=float, default=5.0, help="TCP_INFO poll period")
    ap.add_argument("--port", type=int, default=5201)
    ap.add_argument("--no-trace", action="store_true", help="skip the tcp_probe tracepoint")
    ap.add_argument("--out-dir", default=str(ROOT / "data" / "kernel"))
    ap.add_argument("--ecn", action="store_true", help="sender sysctl net.ipv4.tcp_ecn=1")
    ap.add_argument(
        "--ce-prob", type=float, default=0.0, help="relay marks ECT frames CE with this probability"
    )
    ap.add_argument("--rcvbuf", type=int, default=0, help="SO_RCVBUF on the receiver (bytes)")
    args = ap.parse_args()
    global ECN_SENDER
    ECN_SENDER = args.ecn

    if os.geteuid() != 0:
        print(
            "kernel_cwnd.py needs root: it creates network namespaces, a tbf qdisc and a "
            "tracefs instance.\nRun: sudo .venv/bin/python bench/kernel_cwnd.py "
            + " ".join(sys.argv[1:]),
            file=sys.stderr,
        )
        return 2
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            print(f"missing {tool} (apt-get install iproute2)", file=sys.stderr)
            return 2
    ccs = [c.strip() for c in args.cc.split(",") if c.strip()]
    mix = [c.strip() for c in (args.mix or "").split(",") if c.strip()]
    for cc in ccs + mix:
        if cc not in ("reno", "cubic", "bbr"):
            ap.error(f"--cc/--mix {cc!r}: choose reno, cubic or bbr")
    if not 1 <= args.flows <= 16:
        ap.error("--flows: 1 to 16")
    if args.seconds > 60 and (args.flows > 1 or mix):
        ap.error("--seconds: multi-flow runs are capped at 60 s")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"kernel {os.uname().release}, tbf {args.rate_mbit:g} Mbit/s, base RTT "
        f"{args.rtt_ms:g} ms (userspace relay), buffer {args.buffer_bdp:g} BDP, "
        f"{args.seconds:g} s per flow"
    )
    groups = [mix] if mix else [[cc] * args.flows for cc in ccs] if args.flows > 1 else []
    try:
        for group in groups:
            run = run_multi(args, group, out_dir)
            print(analyze.format_multi(run["summary"]))
            _print_relay(run)
        for cc in ccs if not groups else []:
            run = run_one(args, cc, out_dir)
            print(analyze.format_summary(run["summary"]))
            _print_relay(run)
            _print_options(run)
    except KeyboardInterrupt:
        print("interrupted; namespaces removed", file=sys.stderr)
        return 130
    finally:
        teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
