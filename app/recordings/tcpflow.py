"""One TCP connection as a capture shows it: its segments (flags, seq, ack, window, length,
options in packetdrill's spelling) and each endpoint's RFC 9293 state, inferred from the
segments by the rules Linux 6.4 follows, each move naming the function that makes it.

The inference sees the wire, not the sockets: a state moves when the segment that makes
Linux move it is captured (a SYN sent: ``tcp_v4_connect`` set SYN_SENT before it went; a FIN
sent from ESTABLISHED: ``tcp_close_state`` set FIN_WAIT_1; an ACK of our FIN received in
FIN_WAIT_1: ``tcp_rcv_state_process`` moves to FIN_WAIT_2; …). A capture that starts after
the handshake begins both endpoints in ESTABLISHED.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import dpkt

from app.recordings.capture import Packet

# RFC 9293 state names, as the API spells them
CLOSED = "CLOSED"
LISTEN = "LISTEN"
SYN_SENT = "SYN_SENT"
SYN_RECEIVED = "SYN_RECEIVED"
ESTABLISHED = "ESTABLISHED"
FIN_WAIT_1 = "FIN_WAIT_1"
FIN_WAIT_2 = "FIN_WAIT_2"
CLOSE_WAIT = "CLOSE_WAIT"
CLOSING = "CLOSING"
LAST_ACK = "LAST_ACK"
TIME_WAIT = "TIME_WAIT"

# Linux's names (``inet_sock_set_state``'s oldstate/newstate, include/net/tcp_states.h)
LINUX_STATES = {
    "TCP_ESTABLISHED": ESTABLISHED,
    "TCP_SYN_SENT": SYN_SENT,
    "TCP_SYN_RECV": SYN_RECEIVED,
    "TCP_FIN_WAIT1": FIN_WAIT_1,
    "TCP_FIN_WAIT2": FIN_WAIT_2,
    "TCP_TIME_WAIT": TIME_WAIT,
    "TCP_CLOSE": CLOSED,
    "TCP_CLOSE_WAIT": CLOSE_WAIT,
    "TCP_LAST_ACK": LAST_ACK,
    "TCP_LISTEN": LISTEN,
    "TCP_CLOSING": CLOSING,
    "TCP_NEW_SYN_RECV": SYN_RECEIVED,
}

MAX_SEGMENTS = 200_000
_FLAGS = (
    (dpkt.tcp.TH_SYN, "S"),
    (dpkt.tcp.TH_FIN, "F"),
    (dpkt.tcp.TH_RST, "R"),
    (dpkt.tcp.TH_PUSH, "P"),
    (dpkt.tcp.TH_URG, "U"),
    (dpkt.tcp.TH_ECE, "E"),
    (dpkt.tcp.TH_CWR, "W"),
    (dpkt.tcp.TH_ACK, "."),
)
_OPTION_NAMES = {
    dpkt.tcp.TCP_OPT_NOP: "nop",
    dpkt.tcp.TCP_OPT_EOL: "eol",
    dpkt.tcp.TCP_OPT_SACKOK: "sackOK",
}


def flags_text(flags: int) -> str:
    """The flags as packetdrill and tcpdump write them: ``S``, ``S.``, ``P.``, ``F.``, ``R``."""
    return "".join(letter for bit, letter in _FLAGS if flags & bit)


def _option_text(kind: int, data: bytes) -> str:
    """One option in packetdrill's spelling (app/sim/tcp/options.py ``TcpOption.text``)."""
    if kind in _OPTION_NAMES:
        return _OPTION_NAMES[kind]
    if kind == dpkt.tcp.TCP_OPT_MSS and len(data) == 2:
        return f"mss {int.from_bytes(data, 'big')}"
    if kind == dpkt.tcp.TCP_OPT_WSCALE and len(data) == 1:
        return f"wscale {data[0]}"
    if kind == dpkt.tcp.TCP_OPT_TIMESTAMP and len(data) == 8:
        return f"TS val {int.from_bytes(data[:4], 'big')} ecr {int.from_bytes(data[4:], 'big')}"
    if kind == dpkt.tcp.TCP_OPT_SACK and data and len(data) % 8 == 0:
        edges = [int.from_bytes(data[i : i + 4], "big") for i in range(0, len(data), 4)]
        return "sack " + " ".join(f"{a}:{b}" for a, b in zip(edges[::2], edges[1::2], strict=True))
    return f"opt{kind}"  # an option the model does not know, by its number


def options_text(raw: bytes) -> tuple[str, int | None]:
    """A header's options as ``<mss 1460,nop,wscale 7>`` (``""`` for none), and its wscale."""
    try:
        parsed = dpkt.tcp.parse_opts(raw)
    except (dpkt.UnpackError, IndexError, ValueError):
        return "<malformed>", None
    wscale = next((d[0] for k, d in parsed if k == dpkt.tcp.TCP_OPT_WSCALE and len(d) == 1), None)
    texts = [_option_text(k, d) for k, d in parsed]
    return ("<" + ",".join(texts) + ">" if texts else ""), wscale


def _after_eq(a: int, b: int) -> bool:
    """``a`` is at or after ``b`` in sequence space (mod 2**32)."""
    return ((a - b) & 0xFFFFFFFF) < 0x80000000


@dataclass(slots=True)
class _Side:
    state: str | None = None
    fin_end: int | None = None  # the sequence number just past its FIN, once sent
    syn_end: int | None = None  # just past its SYN
    wscale: int | None = None
    # its FIN crossed the peer's: the peer's FIN is in flight to it (it arrives when this side
    # first acknowledges it, or the peer sends past it)
    peer_fin_pending: bool = False


@dataclass(slots=True)
class Inference:
    """States and moves of the endpoints, filled in one segment at a time."""

    sides: dict[str, _Side] = field(default_factory=dict)
    states: dict[str, list[str]] = field(default_factory=dict)
    moves: list[dict[str, Any]] = field(default_factory=list)

    def side(self, ep: str) -> _Side:
        if ep not in self.sides:
            self.sides[ep] = _Side()
            self.states[ep] = []
        return self.sides[ep]

    def move(self, index: int, ep: str, to: str, rule: str, cause: str) -> None:
        side = self.side(ep)
        self.moves.append(
            {
                "segment": index,
                "endpoint": ep,
                "from": side.state,
                "to": to,
                "rule": rule,
                "cause": cause,
            }
        )
        side.state = to
        self.states[ep].append(to)

    def _unmove(self, ep: str, to: str) -> None:
        """Take back this side's last move (to ``to``): the capture showed it came later."""
        for i in range(len(self.moves) - 1, -1, -1):
            move = self.moves[i]
            if move["endpoint"] == ep and move["to"] == to:
                del self.moves[i]
                self.states[ep].pop()
                self.sides[ep].state = move["from"]
                return

    def _peer_fin_arrives(self, index: int, ep: str) -> None:
        """The peer's FIN, which crossed this side's own, reaches it now (tcp_fin)."""
        me = self.sides[ep]
        me.peer_fin_pending = False
        if me.state == FIN_WAIT_1:
            self.move(index, ep, CLOSING, "tcp_fin", "got_fin_crossed")
        elif me.state == FIN_WAIT_2:
            self.move(index, ep, TIME_WAIT, "tcp_time_wait", "got_fin_last")

    def sent(  # noqa: C901 (one rule per state a segment can reveal)
        self, index: int, ep: str, peer: str, flags: int, seq: int, ack_no: int, length: int
    ) -> None:
        """What sending this segment tells of the sender's state."""
        me = self.side(ep)
        other = self.side(peer)
        syn, fin, ack = flags & dpkt.tcp.TH_SYN, flags & dpkt.tcp.TH_FIN, flags & dpkt.tcp.TH_ACK
        acks_peer_fin = bool(ack) and other.fin_end is not None and _after_eq(ack_no, other.fin_end)
        if me.peer_fin_pending and acks_peer_fin:
            self._peer_fin_arrives(index, ep)
        if fin and me.state == CLOSE_WAIT and other.fin_end is not None and not acks_peer_fin:
            # It sent its FIN before the peer's arrived (its ACK does not cover it): the FINs
            # crossed. It was ESTABLISHED, not CLOSE_WAIT.
            self._unmove(ep, CLOSE_WAIT)
            me.peer_fin_pending = True
        if flags & dpkt.tcp.TH_RST:
            if me.state not in (None, CLOSED, LISTEN):
                self.move(index, ep, CLOSED, "tcp_send_active_reset", "sent_rst")
            return
        if syn:
            me.syn_end = (seq + 1) & 0xFFFFFFFF
            if not ack and me.state in (None, CLOSED):
                connect = "tcp_v6_connect" if ep.startswith("[") else "tcp_v4_connect"
                self.move(index, ep, SYN_SENT, connect, "sent_syn")
            elif ack and me.state in (None, CLOSED, LISTEN):
                if me.state != LISTEN:
                    self.move(index, ep, LISTEN, "inet_csk_listen_start", "listening")
                self.move(index, ep, SYN_RECEIVED, "tcp_conn_request", "sent_synack")
            return
        if me.state is None:
            self.move(index, ep, ESTABLISHED, "", "midstream")
        if fin:
            me.fin_end = (seq + length + 1) & 0xFFFFFFFF
            if me.state in (ESTABLISHED, SYN_RECEIVED):
                self.move(index, ep, FIN_WAIT_1, "tcp_close_state", "sent_fin")
            elif me.state == CLOSE_WAIT:
                self.move(index, ep, LAST_ACK, "tcp_close_state", "sent_fin_last")

    def received(  # noqa: C901
        self, index: int, ep: str, peer: str, flags: int, seq: int, ack_no: int
    ) -> None:
        """What receiving this segment makes Linux do to the receiver's state."""
        me = self.side(ep)
        other = self.side(peer)
        if me.peer_fin_pending and other.fin_end is not None and _after_eq(seq, other.fin_end):
            self._peer_fin_arrives(index, ep)  # in order: the peer's FIN came before this
        syn, fin, ack = flags & dpkt.tcp.TH_SYN, flags & dpkt.tcp.TH_FIN, flags & dpkt.tcp.TH_ACK
        if flags & dpkt.tcp.TH_RST:
            if me.state == TIME_WAIT:
                self.move(index, ep, CLOSED, "tcp_timewait_state_process", "got_rst")
            elif me.state not in (None, CLOSED, LISTEN):
                self.move(index, ep, CLOSED, "tcp_reset", "got_rst")
            return
        if syn:
            if me.state == SYN_SENT and ack:
                self.move(index, ep, ESTABLISHED, "tcp_finish_connect", "got_synack")
            elif me.state == SYN_SENT:
                self.move(index, ep, SYN_RECEIVED, "tcp_rcv_synsent_state_process", "crossed_syn")
            return
        if me.state is None:
            self.move(index, ep, ESTABLISHED, "", "midstream")
        acks_fin = bool(ack) and me.fin_end is not None and _after_eq(ack_no, me.fin_end)
        acks_syn = bool(ack) and me.syn_end is not None and _after_eq(ack_no, me.syn_end)
        if me.state == SYN_RECEIVED and acks_syn:
            self.move(index, ep, ESTABLISHED, "tcp_rcv_state_process", "got_ack_of_syn")
        elif me.state == FIN_WAIT_1 and acks_fin:
            self.move(index, ep, FIN_WAIT_2, "tcp_rcv_state_process", "got_ack_of_fin")
        elif me.state == CLOSING and acks_fin:
            self.move(index, ep, TIME_WAIT, "tcp_time_wait", "got_ack_closing")
        elif me.state == LAST_ACK and acks_fin:
            self.move(index, ep, CLOSED, "tcp_done", "got_ack_last")
        if fin:
            if me.state == ESTABLISHED:
                self.move(index, ep, CLOSE_WAIT, "tcp_fin", "got_fin")
            elif me.state == FIN_WAIT_1:
                self.move(index, ep, CLOSING, "tcp_fin", "got_fin_crossed")
            elif me.state == FIN_WAIT_2:
                self.move(index, ep, TIME_WAIT, "tcp_time_wait", "got_fin_last")


def connection(packets: Iterable[Packet]) -> dict[str, Any]:
    """The first TCP connection of a capture: ``segments``, ``states`` per endpoint and the
    ``transitions`` that made them (segment index, endpoint, from, to, rule, cause)."""
    key: frozenset[str] | None = None
    start = 0.0
    segments: list[dict[str, Any]] = []
    inference = Inference()
    for pkt in packets:
        if key is None:
            key = frozenset((pkt.src, pkt.dst))
            start = pkt.time_s
        elif frozenset((pkt.src, pkt.dst)) != key:
            continue
        if len(segments) >= MAX_SEGMENTS:
            break
        tcp = pkt.tcp
        opts, wscale = options_text(bytes(tcp.opts))
        index = len(segments)
        length = len(tcp.data) if isinstance(tcp.data, bytes) else 0
        sender = inference.side(pkt.src)
        if tcp.flags & dpkt.tcp.TH_SYN:
            sender.wscale = wscale
        seg: dict[str, Any] = {
            "t_ms": round((pkt.time_s - start) * 1000, 3),
            "from": pkt.src,
            "to": pkt.dst,
            "flags": flags_text(tcp.flags),
            "seq": tcp.seq,
            "ack": tcp.ack if tcp.flags & dpkt.tcp.TH_ACK else 0,
            "win": tcp.win,
            "len": length,
            "options": opts,
        }
        peer = inference.sides.get(pkt.dst)
        scaling = sender.wscale is not None and peer is not None and peer.wscale is not None
        if scaling and not tcp.flags & dpkt.tcp.TH_SYN and sender.wscale is not None:
            seg["win_scaled"] = tcp.win << min(sender.wscale, 14)
        segments.append(seg)
        inference.sent(index, pkt.src, pkt.dst, tcp.flags, tcp.seq, tcp.ack, length)
        inference.received(index, pkt.dst, pkt.src, tcp.flags, tcp.seq, tcp.ack)
    return {"segments": segments, "states": inference.states, "transitions": inference.moves}


def states_from_events(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """States per endpoint from ``sock:inet_sock_set_state`` events (a ``record tcp`` run),
    which name them: the first event's old state, then each new one."""
    states: dict[str, list[str]] = {}
    moves: list[dict[str, Any]] = []
    for index, ev in enumerate(events):
        if ev.get("event") != "sock:inet_sock_set_state":
            continue
        f = ev.get("fields", {})
        six = f.get("family") == "AF_INET6"
        addr = f.get("saddrv6" if six else "saddr", "?")
        ep = f"[{addr}]:{f.get('sport', '?')}" if six else f"{addr}:{f.get('sport', '?')}"
        old = LINUX_STATES.get(f.get("oldstate", ""), f.get("oldstate", "?"))
        new = LINUX_STATES.get(f.get("newstate", ""), f.get("newstate", "?"))
        seen = states.setdefault(ep, [])
        if not seen:
            seen.append(old)
        seen.append(new)
        moves.append(
            {
                "event": index,
                "endpoint": ep,
                "from": old,
                "to": new,
                "rule": "tcp_set_state",
                "cause": "recorded",
            }
        )
    return {"states": states, "transitions": moves}
