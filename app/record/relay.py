"""Userspace delay line: a transparent L2 relay between two interfaces.

Run inside the middle namespace (``ip netns exec NS python -m app.record.relay ...``) by
``stepscope record demo cwnd`` (when the kernel has no sch_netem) and bench/kernel_cwnd.py.
Every frame read on one interface is written to the other one ``--delay-ms``
later, in both directions, so the round-trip time gains ``2 * delay``.  It
exists because this kernel is built without ``sch_netem``.

The sockets use ``PACKET_VNET_HDR`` so the virtio-net header (GSO size,
checksum offsets) travels with each frame: TSO/GSO super-packets from the
sender keep their offload state and the qdisc on the way out (``tbf``)
segments them, as a real NIC path would.  The relay stops by itself after
``--seconds`` or on SIGTERM and writes a one-line JSON stats record.

``--ce-prob P`` makes it an ECN marker as well (this kernel has no sch_red): each
IPv4 frame towards the receiver whose ECN field is ECT(0) or ECT(1) gets CE with
probability P (random.Random(--seed)), the header checksum fixed, as
``INET_ECN_set_ce`` does in a marking qdisc.  Not-ECT frames pass untouched.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_VNET_HDR = 15
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
BUF = 1 << 17


def _segs(frame: bytes) -> int:
    """TCP segments in one frame: a GSO super-packet carries several.

    The frame starts with struct virtio_net_hdr (flags, gso_type, hdr_len, gso_size,
    ...); a frame that tbf drops whole (a 2-segment GSO packet fits in its 3028 B
    burst and is not split) loses all of them, but tbf counts one drop.
    """
    if len(frame) < 10 or frame[1] == 0:  # VIRTIO_NET_HDR_GSO_NONE
        return 1
    hdr_len, gso_size = struct.unpack_from("<HH", frame, 2)
    hdr = hdr_len if 54 <= hdr_len <= 200 else 66
    payload = len(frame) - 10 - hdr
    return max(1, -(-payload // gso_size)) if gso_size else 1


def _mark_ce(frame: bytes, rng: random.Random, prob: float) -> bytes | None:
    """The frame with CE set if it is ECT IPv4 and the draw says so, else None."""
    off = 10 + 14  # virtio_net_hdr, Ethernet
    if len(frame) < off + 20 or frame[22:24] != b"\x08\x00":
        return None
    tos = frame[off + 1]
    if tos & 3 not in (1, 2) or rng.random() >= prob:
        return None
    b = bytearray(frame)
    b[off + 1] = tos | 3
    ihl = (b[off] & 0x0F) * 4
    b[off + 10 : off + 12] = b"\0\0"
    total = 0
    for i in range(off, off + ihl, 2):
        total += (b[i] << 8) | b[i + 1]
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    b[off + 10 : off + 12] = struct.pack("!H", ~total & 0xFFFF)
    return bytes(b)


def _open(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass  # older kernels: we also filter on pkttype below
    s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
    s.setsockopt(socket.SOL_SOCKET, 32, 64 << 20)  # SO_SNDBUFFORCE
    s.bind((ifname, ETH_P_ALL))
    s.setblocking(False)
    return s


def _parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="interface towards the sender")
    ap.add_argument("--b", required=True, help="interface towards the receiver")
    ap.add_argument("--delay-ms", type=float, required=True, help="one-way delay per direction")
    ap.add_argument("--seconds", type=float, default=60.0, help="hard lifetime")
    ap.add_argument("--stats", help="write JSON stats here at exit")
    ap.add_argument("--ce-prob", type=float, default=0.0, help="mark ECT frames CE (a2b)")
    ap.add_argument("--seed", type=int, default=1)
    return ap.parse_args()


def _send_due(
    out: list[tuple[collections.deque[tuple[float, bytes]], socket.socket, str]],
    now: float,
    stats: dict[str, float],
) -> None:
    """Send each frame whose delay has passed; count how late it left and what egress dropped."""
    for q, osock, key in out:
        while q and q[0][0] <= now:
            due, frame = q.popleft()
            late = (now - due) * 1000.0
            if late > stats["late_ms_max"]:
                stats["late_ms_max"] = late
            if late > 0.5:
                stats["late_over_0_5ms"] += 1
                if late > 1.0:
                    stats["late_over_1ms"] += 1
            try:
                osock.send(frame)
            except OSError:  # BlockingIOError, or ENOBUFS: the egress qdisc (tbf) dropped it
                stats[key + "_send_drops"] += 1
                stats[key + "_send_drop_segs"] += _segs(frame)


def main() -> int:
    args = _parse_args()
    rng = random.Random(args.seed)

    delay = args.delay_ms / 1000.0
    sa, sb = _open(args.a), _open(args.b)
    # per input socket: (queue of (due, frame), output socket, counters key)
    qa: collections.deque[tuple[float, bytes]] = collections.deque()
    qb: collections.deque[tuple[float, bytes]] = collections.deque()
    route = {sa.fileno(): (sa, qa), sb.fileno(): (sb, qb)}
    out = [(qa, sb, "a2b"), (qb, sa, "b2a")]
    stats: dict[str, float] = {
        "a2b_frames": 0,
        "b2a_frames": 0,
        "a2b_bytes": 0,
        "b2a_bytes": 0,
        "a2b_send_drops": 0,
        "b2a_send_drops": 0,
        "a2b_send_drop_segs": 0,
        "b2a_send_drop_segs": 0,
        "a2b_segs": 0,
        "max_frame": 0,
        "late_ms_max": 0.0,
        "late_over_0_5ms": 0,
        "late_over_1ms": 0,
        "ce_marked_frames": 0,
        "ce_marked_segs": 0,
        "ect_seen": 0,
    }
    stop = False

    def _term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _term)
    signal.signal(signal.SIGINT, _term)
    deadline = time.monotonic() + args.seconds
    fds = [sa, sb]
    print("relay ready", flush=True)
    while not stop:
        now = time.monotonic()
        if now > deadline:
            break
        _send_due(out, now, stats)
        heads = [q[0][0] for q in (qa, qb) if q]
        timeout = max(0.0, min(heads) - time.monotonic()) if heads else 0.05
        try:
            readable, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for s in readable:
            sock, q = route[s.fileno()]
            key = "a2b" if sock is sa else "b2a"
            while True:
                try:
                    frame, addr = sock.recvfrom(BUF)
                except (BlockingIOError, InterruptedError):
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue
                if key == "a2b" and args.ce_prob > 0:
                    if len(frame) > 25 and frame[25] & 3:
                        stats["ect_seen"] += 1
                    marked = _mark_ce(frame, rng, args.ce_prob)
                    if marked is not None:
                        frame = marked
                        stats["ce_marked_frames"] += 1
                        stats["ce_marked_segs"] += _segs(frame)
                q.append((now + delay, frame))
                stats[key + "_frames"] += 1
                if key == "a2b":
                    stats["a2b_segs"] += _segs(frame)
                stats[key + "_bytes"] += len(frame) - 10
                if len(frame) - 10 > stats["max_frame"]:
                    stats["max_frame"] = len(frame) - 10
    if args.stats:
        with open(args.stats, "w", encoding="utf-8") as fh:
            json.dump(stats, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
