"""Check F-RTO, the timestamp undo and SACK compression against the real kernel (issue 11).

The same three-namespace topology (named sl-*), tbf bottleneck and userspace delay line as
bench/kernel_cwnd.py (whose helpers it reuses); one Reno flow at 20 Mbit/s, 40 ms, a 1-BDP buffer. Prints what it
measured; asserts nothing. Three experiments, each run with the kernel's default sysctl and
with the feature off:

* ``sack``: the receiver's ``net.ipv4.tcp_comp_sack_nr`` 44 vs 0 over a 4 s flow (its
  slow-start overshoot fills the buffer and loses packets): TcpExtTCPAckCompressed at the
  receiver and the ACKs the sender received.
* ``spurious``: at 2 s the delay line is frozen (SIGSTOP to the relay, our own child) for
  0.7 s: nothing is lost, but no ACK comes for longer than the RTO. TcpExtTCPTimeouts,
  TCPLossUndo and TCPSpuriousRTOs at the sender, with ``tcp_frto`` 2 vs 0.
* ``blackhole``: at 2 s the receiver's interface goes down for 0.35 s (everything sent then is
  lost, the loss probe too), then the RTO recovers a real loss. From tcp_probe (one row per
  ACK, state before the ACK is processed): snd_nxt at the timeout (high_seq) and snd_nxt after
  the first ACK that moves snd_una: with F-RTO (``tcp_frto`` = 2) new data goes out (step 2.b),
  without it only retransmissions.

    sudo .venv/bin/python bench/kernel_loss.py              # all three
    sudo .venv/bin/python bench/kernel_loss.py --only sack
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "kernel"))

import analyze  # noqa: E402
import kernel_cwnd as kc  # noqa: E402

# Our own namespaces, so a kernel_cwnd.py run at the same time keeps its ss-* ones
kc.NS_SND, kc.NS_MID, kc.NS_RCV = "sl-snd", "sl-mid", "sl-rcv"
kc.ALL_NS = (kc.NS_SND, kc.NS_MID, kc.NS_RCV)

COUNTERS = (
    "TcpInSegs",
    "TcpOutSegs",
    "TcpRetransSegs",
    "TcpExtTCPTimeouts",
    "TcpExtTCPLossUndo",
    "TcpExtTCPSpuriousRTOs",
    "TcpExtTCPLossProbes",
    "TcpExtTCPAckCompressed",
    "TcpExtTCPSackRecovery",
    "TcpExtTCPDSACKRecv",
)


def nstat(ns: str) -> dict[str, int]:
    """The namespace's absolute SNMP counters we look at (nstat -a, no history file)."""
    out = kc.sh(*kc.in_ns(ns, "nstat", "-az", "--json"), check=False).stdout
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        return {}
    kernel = data.get("kernel", data)
    return {k: int(kernel.get(k, 0)) for k in COUNTERS}


def one_flow(
    *,
    rcv_sysctl: dict[str, str],
    snd_sysctl: dict[str, str],
    disrupt: str | None,
    seconds: float = 4.0,
    at: float = 2.0,
    rate: float = 20.0,
) -> dict[str, Any]:
    """One Reno flow through the bottleneck; ``disrupt`` is None, "freeze" or "down"."""
    kc.ensure_cc("reno")
    args = argparse.Namespace(rtt_ms=40.0, seconds=seconds, port=5301)
    limit = int(rate * 1e6 / 8 * args.rtt_ms / 1000)
    tmp = Path(f"/tmp/ss-loss-{os.getpid()}")
    tmp.mkdir(exist_ok=True)
    procs: list[subprocess.Popen[str]] = []
    trace = kc.ProbeTrace(args.port)
    try:
        kc.setup(rate, limit, 3028)
        kc._static_neighbours()
        for k, v in rcv_sysctl.items():
            kc.sh(*kc.in_ns(kc.NS_RCV, "sysctl", "-qw", f"{k}={v}"))
        for k, v in snd_sysctl.items():
            kc.sh(*kc.in_ns(kc.NS_SND, "sysctl", "-qw", f"{k}={v}"))
        relay = kc._start_relay(args, tmp, procs)
        kc._start_recv(args, args.port, procs)
        use_trace = trace.start()
        t_start = time.monotonic() + 1.5
        send = subprocess.Popen(
            kc.in_ns(
                kc.NS_SND,
                sys.executable,
                str(kc.ROOT / "app" / "record" / "flow.py"),
                "send",
                "--dst",
                kc.RCV_IP,
                "--port",
                str(args.port),
                "--cc",
                "reno",
                "--seconds",
                str(seconds),
                "--start-at",
                repr(t_start),
                "--end-at",
                repr(t_start + seconds),
                "--out",
                str(tmp / "send.json"),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(send)
        if disrupt is not None:
            time.sleep(max(0.0, t_start + at - time.monotonic()))
            if disrupt == "freeze":
                relay.send_signal(signal.SIGSTOP)
                time.sleep(0.7)
                relay.send_signal(signal.SIGCONT)
            else:
                kc.sh("ip", "-n", kc.NS_RCV, "link", "set", "r0", "down")
                time.sleep(0.35)
                kc.sh("ip", "-n", kc.NS_RCV, "link", "set", "r0", "up")
        _, err = send.communicate(timeout=seconds + 30)
        if send.returncode != 0:
            raise RuntimeError(f"sender failed: {err.strip()}")
        probe_text, _ = trace.collect() if use_trace else ("", "")
        snd_counters, rcv_counters = nstat(kc.NS_SND), nstat(kc.NS_RCV)
        tc = kc.tc_stats()
        snd = json.loads((tmp / "send.json").read_text())
    finally:
        trace.stop()
        kc._stop_all(procs)
        kc.teardown()
        shutil.rmtree(tmp, ignore_errors=True)
    probe = analyze.parse_probe_trace(probe_text, snd["t0_monotonic"]) if probe_text else []
    return {
        "sender": snd_counters,
        "receiver": rcv_counters,
        "tbf_drops": tc.get("dropped"),
        "probe": probe,
        "samples": snd["samples"],
    }


def frto_step(probe: list[dict[str, Any]], mss: int = 1448) -> dict[str, Any] | None:
    """From tcp_probe rows: the first row after the timeout (cwnd 1: the state the first ACK
    after the RTO finds), high_seq = snd_nxt then, and snd_nxt after that ACK and the next;
    with the cwnd just before the timeout, which an undo (tcp_try_undo_loss) gives back."""
    for i, r in enumerate(probe):
        if r["snd_cwnd"] == 1 and i + 2 < len(probe):
            high = r["snd_nxt"]
            j = next(
                (k for k in range(i, len(probe) - 1) if probe[k + 1]["snd_una"] > r["snd_una"]),
                None,
            )
            if j is None:
                return None
            after = probe[j + 1]
            return {
                "t_rto_ack": r["t"],
                "high_seq": high,
                "new_segments_after_first_ack": (after["snd_nxt"] - high) // mss,
                "cwnd_after_first_ack": after["snd_cwnd"],
                "cwnd_before_timeout": probe[i - 1]["snd_cwnd"] if i else None,
                "ssthresh": after["snd_ssthresh"],
            }
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=["sack", "spurious", "blackhole"])
    ap.add_argument("--rate-mbit", type=float, default=20.0, help="tbf rate for sack")
    args = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("nstat"):
        print("needs root, iproute2 and nstat; skipped")
        return 0
    print(f"kernel {os.uname().release}; Reno, 20 Mbit/s, 40 ms, 1-BDP tbf buffer")
    if "sack" in args.only:
        for nr in ("44", "0"):
            r = one_flow(rcv_sysctl={"net.ipv4.tcp_comp_sack_nr": nr}, snd_sysctl={}, disrupt=None)
            s, v = r["sender"], r["receiver"]
            print(
                f"sack {args.rate_mbit:g} Mbit/s tcp_comp_sack_nr={nr:>2}: receiver TCPAckCompressed "
                f"{v.get('TcpExtTCPAckCompressed')}, receiver segments out {v.get('TcpOutSegs')}"
                f", sender segments in {s.get('TcpInSegs')}, SACK recoveries "
                f"{s.get('TcpExtTCPSackRecovery')}, loss probes {s.get('TcpExtTCPLossProbes')}"
                f", DSACKs {s.get('TcpExtTCPDSACKRecv')}, tbf drops {r['tbf_drops']}"
            )
    if "spurious" in args.only:
        for frto in ("2", "0"):
            r = one_flow(rcv_sysctl={}, snd_sysctl={"net.ipv4.tcp_frto": frto}, disrupt="freeze")
            s = r["sender"]
            print(
                f"spurious tcp_frto={frto}: timeouts {s.get('TcpExtTCPTimeouts')}, loss probes "
                f"{s.get('TcpExtTCPLossProbes')}, TCPLossUndo {s.get('TcpExtTCPLossUndo')}, "
                f"TCPSpuriousRTOs {s.get('TcpExtTCPSpuriousRTOs')}, DSACKs "
                f"{s.get('TcpExtTCPDSACKRecv')}, retransmitted {s.get('TcpRetransSegs')}"
            )
            cw = [x for x in r["samples"] if 1.9 <= x["t"] <= 3.5]
            if cw:
                low = min(cw, key=lambda x: x["snd_cwnd"])
                print(
                    f"   cwnd before {cw[0]['snd_cwnd']}, lowest {low['snd_cwnd']} at "
                    f"{low['t']:.3f} s, at 3.5 s {cw[-1]['snd_cwnd']} (ssthresh "
                    f"{cw[-1]['snd_ssthresh']})"
                )
    if "blackhole" in args.only:
        for frto in ("2", "0"):
            r = one_flow(rcv_sysctl={}, snd_sysctl={"net.ipv4.tcp_frto": frto}, disrupt="down")
            s = r["sender"]
            step = frto_step(r["probe"])
            print(
                f"blackhole tcp_frto={frto}: timeouts {s.get('TcpExtTCPTimeouts')}, "
                f"TCPLossUndo {s.get('TcpExtTCPLossUndo')}, TCPSpuriousRTOs "
                f"{s.get('TcpExtTCPSpuriousRTOs')}; first ACK after the RTO: {step}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
