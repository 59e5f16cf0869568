"""What the runner reads from and writes into the model's segments, in one place: flags in
packetdrill's letters, relative sequence numbers (packetdrill maps the local ISN to 0, and the
script's peer numbers its own bytes from 0), and options. The model's segments carry
``options: tuple[TcpOption, ...]`` once app.sim.tcp writes them; until then
:data:`MODEL_HAS_OPTIONS` is False, the runner reports "the model sends no options yet" where
a script expects some, and scales the peer's windows itself by the script's ``wscale``."""

from __future__ import annotations

from typing import Any

from app.sim.tcp.options import TcpOption
from app.sim.tcp.packetdrill.ast import Packet
from app.sim.tcp.sock import Seg

MODEL_HAS_OPTIONS = "options" in Seg.__slots__
REMOTE_BASE = (
    0  # the peer's sequence number 0 in the model's numbers (the narration quotes the script's)
)
_LETTER = {"S": "SYN", "F": "FIN", "R": "RST", "P": "PSH", ".": "ACK"}
_ORDER = (("FIN", "F"), ("SYN", "S"), ("RST", "R"), ("PSH", "P"), ("ACK", "."))


def flag_names(letters: str) -> frozenset[str]:
    return frozenset(_LETTER[c] for c in letters)


def flag_letters(names: frozenset[str]) -> str:
    """packetdrill's spelling: ``S.``, ``FP.``, ``R``."""
    return "".join(letter for name, letter in _ORDER if name in names)


def model_options(seg: Seg) -> tuple[TcpOption, ...] | None:
    """The options the model's segment carries; None while the model writes none."""
    if not MODEL_HAS_OPTIONS:
        return None
    opts: tuple[TcpOption, ...] = getattr(seg, "options", ())
    return opts


def shift_sack(opts: tuple[TcpOption, ...], by: int) -> tuple[TcpOption, ...]:
    return tuple(
        TcpOption("sack", tuple(v + by for v in o.values)) if o.kind == "sack" else o for o in opts
    )


def inbound_segment(
    p: Packet, *, seg_id: int, local: str, peer: str, local_isn: int, wscale: int, now: float
) -> Seg:
    """The script's inbound packet as the model's segment (absolute numbers)."""
    names = flag_names(p.flags)
    window = p.win if p.win is not None else 65535
    if not MODEL_HAS_OPTIONS and "SYN" not in names:
        window <<= wscale  # the model reads raw windows until it scales them itself
    extra: dict[str, Any] = {}
    if MODEL_HAS_OPTIONS:  # the model's Seg takes options once it writes them
        extra["options"] = shift_sack(p.options or (), local_isn)
    seg = Seg(
        id=seg_id,
        src=peer,
        dst=local,
        flags=tuple(n for n in ("SYN", "FIN", "RST", "PSH", "ACK") if n in names),
        seq=p.seq + REMOTE_BASE,
        ack=(p.ack or 0) + local_isn if "ACK" in names else 0,
        length=p.length,
        window=window,
        kind="peer",
        sent_ms=now,
        **extra,
    )
    seg.arrive_ms = now
    return seg


def outbound_view(seg: Seg, psh: bool, t_ms: float, local_isn: int) -> dict[str, Any]:
    """The model's segment in the script's terms (relative numbers, packetdrill flags)."""
    names = set(seg.flags)
    if psh:
        names.add("PSH")
    seq = seg.seq if seg.rst and seg.seq == 0 else seg.seq - local_isn
    opts = model_options(seg)
    return {
        "dir": ">",
        "flags": flag_letters(frozenset(names)),
        "seq": seq,
        "end": seq + seg.length,
        "len": seg.length,
        "ack": seg.ack - REMOTE_BASE if seg.has_ack else None,
        "win": seg.window,
        "options": None if opts is None else [o.text() for o in shift_sack(opts, -REMOTE_BASE)],
        "t_ms": round(t_ms, 3),
    }


def packet_view(p: Packet, t_ms: float | None) -> dict[str, Any]:
    return {
        "dir": p.direction,
        "flags": p.flags,
        "seq": p.seq,
        "end": p.end,
        "len": p.length,
        "ack": p.ack,
        "win": p.win,
        "options": None if p.options is None else [o.text() for o in p.options],
        "t_ms": None if t_ms is None else round(t_ms, 3),
    }
