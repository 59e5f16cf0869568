"""One bulk TCP flow: ``recv`` (sink) and ``send`` (source + TCP_INFO sampler).

Both sides are started with ``ip netns exec`` by ``stepscope record demo cwnd`` and
``bench/kernel_cwnd.py``; they stop by themselves after ``--seconds``.  The sender picks its congestion
control with ``setsockopt(TCP_CONGESTION)`` before ``connect`` and a thread
polls ``getsockopt(TCP_INFO)`` (and ``TCP_CC_INFO`` for BBR) every
``--interval-ms``, writing the samples as JSON.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import threading
import time

TCP_INFO = 11
TCP_CONGESTION = 13
TCP_CC_INFO = 26

# struct tcp_info, as in include/uapi/linux/tcp.h (fields up to tcpi_snd_wnd, 232 bytes).
# The kernel copies min(optlen, sizeof(struct tcp_info)), so asking for this prefix is
# fine on newer kernels (6.18 appends more fields after tcpi_snd_wnd).
_TCP_INFO = struct.Struct(
    "=8B"  # state, ca_state, retransmits, probes, backoff, options, wscale, app_limited bits
    "24I"  # rto .. total_retrans
    "4Q"  # pacing_rate, max_pacing_rate, bytes_acked, bytes_received
    "6I"  # segs_out, segs_in, notsent_bytes, min_rtt, data_segs_in, data_segs_out
    "4Q"  # delivery_rate, busy_time, rwnd_limited, sndbuf_limited
    "2I"  # delivered, delivered_ce
    "2Q"  # bytes_sent, bytes_retrans
    "4I"  # dsack_dups, reord_seen, rcv_ooopack, snd_wnd
)
assert _TCP_INFO.size == 232, _TCP_INFO.size
_U32_NAMES = (
    "rto ato snd_mss rcv_mss unacked sacked lost retrans fackets last_data_sent "
    "last_ack_sent last_data_recv last_ack_recv pmtu rcv_ssthresh rtt rttvar "
    "snd_ssthresh snd_cwnd advmss reordering rcv_rtt rcv_space total_retrans"
).split()
# struct tcp_bbr_info: bw_lo, bw_hi (bytes/s), min_rtt (us), pacing_gain, cwnd_gain (<<8)
_BBR_INFO = struct.Struct("=5I")


def parse_tcp_info(raw: bytes) -> dict[str, int]:
    v = _TCP_INFO.unpack_from(raw.ljust(_TCP_INFO.size, b"\0"))
    d: dict[str, int] = {
        "state": v[0],
        "ca_state": v[1],
        "retransmits": v[2],
        "backoff": v[4],
        "app_limited": v[7] & 1,
    }
    d.update(zip(_U32_NAMES, v[8:32], strict=True))
    (d["pacing_rate"], d["max_pacing_rate"], d["bytes_acked"], _) = v[32:36]
    (_, _, d["notsent_bytes"], d["min_rtt"], _, d["data_segs_out"]) = v[36:42]
    d["delivery_rate"] = v[42]
    d["delivered"] = v[46]
    d["bytes_sent"], d["bytes_retrans"] = v[48], v[49]
    d["dsack_dups"], d["reord_seen"] = v[50], v[51]  # DSACKed (spurious) retransmits
    d["rwnd_limited_us"], d["delivered_ce"], d["snd_wnd"] = v[44], v[47], v[53]
    return d


def parse_bbr_info(raw: bytes) -> dict[str, float] | None:
    if len(raw) < _BBR_INFO.size:
        return None
    bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain = _BBR_INFO.unpack_from(raw)
    return {
        "bbr_bw": (bw_hi << 32) | bw_lo,
        "bbr_min_rtt": min_rtt,
        "bbr_pacing_gain": pacing_gain / 256.0,
        "bbr_cwnd_gain": cwnd_gain / 256.0,
    }


def _recv(args: argparse.Namespace) -> int:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.rcvbuf:  # a fixed receive buffer (turns autotuning off); accept() inherits it
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    srv.bind((args.bind, args.port))
    srv.listen(1)
    srv.settimeout(args.seconds)
    print("recv ready", flush=True)
    try:
        conn, _ = srv.accept()
    except TimeoutError:
        print("recv: nobody connected", file=sys.stderr)
        return 1
    deadline = time.monotonic() + args.seconds
    conn.settimeout(1.0)
    total = 0
    while time.monotonic() < deadline:
        try:
            chunk = conn.recv(1 << 16)
        except TimeoutError:
            continue
        if not chunk:
            break
        total += len(chunk)
    conn.close()
    print(json.dumps({"received_bytes": total}), flush=True)
    return 0


def _send(args: argparse.Namespace) -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, args.cc.encode())
    got = s.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).rstrip(b"\0").decode()
    if got != args.cc:
        print(f"send: asked for {args.cc}, kernel gave {got}", file=sys.stderr)
        return 2
    if args.start_at is not None:  # several flows: start on a shared CLOCK_MONOTONIC schedule
        time.sleep(max(0.0, args.start_at - time.monotonic()))
    s.settimeout(5.0)
    s.connect((args.dst, args.port))
    t0 = time.monotonic()
    sport = s.getsockname()[1]
    samples: list[dict[str, float]] = []
    stop = threading.Event()
    interval = args.interval_ms / 1000.0

    def sampler() -> None:
        is_bbr = args.cc == "bbr"
        nxt = time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            try:
                info = parse_tcp_info(s.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 256))
                row: dict[str, float] = {"t": round(now - t0, 6), **info}
                if is_bbr:
                    bbr = parse_bbr_info(s.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, 64))
                    if bbr:
                        row.update(bbr)
            except OSError:
                break
            samples.append(row)
            nxt += interval
            time.sleep(max(0.0, nxt - time.monotonic()))

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    buf = b"\x5a" * (1 << 16)
    deadline = args.end_at if args.end_at is not None else t0 + args.seconds
    sent = 0
    while time.monotonic() < deadline:
        try:
            sent += s.send(buf)
        except TimeoutError:
            continue
    stop.set()
    th.join(2.0)
    s.close()
    out = {
        "cc": args.cc,
        "t0_monotonic": t0,
        "sport": sport,
        "dport": args.port,
        "interval_ms": args.interval_ms,
        "sent_bytes": sent,
        "samples": samples,
    }
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    print(json.dumps({"sent_bytes": sent, "samples": len(samples)}), flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--bind", required=True)
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--seconds", type=float, required=True)
    r.add_argument("--rcvbuf", type=int, default=0, help="SO_RCVBUF on the listener")
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--cc", required=True)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--interval-ms", type=float, default=5.0)
    s.add_argument("--out", required=True)
    s.add_argument(
        "--start-at", type=float, help="CLOCK_MONOTONIC time to connect at (multi-flow runs)"
    )
    s.add_argument(
        "--end-at", type=float, help="CLOCK_MONOTONIC time to stop at (overrides --seconds)"
    )
    args = ap.parse_args()
    try:
        return _recv(args) if args.mode == "recv" else _send(args)
    except KeyboardInterrupt:  # the orchestrator was interrupted; it cleans up
        return 130


if __name__ == "__main__":
    sys.exit(main())
