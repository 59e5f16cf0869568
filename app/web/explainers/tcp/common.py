"""What the TCP picture's parts share: the canvas width, each endpoint's colour and word, the
kernel names of the RFC states, the timers' RFC words, and text helpers.

Words are catalog messages rendered when a picture is drawn (in the reader's language); the
tables below map the simulation's identifiers (``client``, ``delayed_ack``, ``delack``) to them.
"""

from __future__ import annotations

from app.sim.core import Message, msg
from app.web.svgtext import advance, in_words

WIDTH = 960


ENDPOINTS = ("client", "server")


COLOUR = {"client": "#0072B2", "server": "#E69F00"}  # Okabe–Ito blue / orange (app.css)


INK = {"client": "#ffffff", "server": "#1b1f24"}  # text on a filled badge of that colour


LETTER = {"client": "C", "server": "S"}


# What the picture calls each endpoint.
ENDPOINT_WORD: dict[str, Message] = {"client": msg("client"), "server": msg("server")}


def who(ep: str) -> str:
    """An endpoint's name in the reader's language."""
    return in_words(ENDPOINT_WORD, ep)


# Events of a state change that are words, not calls or segment names (which stay as they are).
EVENT_WORD: dict[str, Message] = {
    "timer": msg("timer"),
    "RST received": msg("RST received"),
    "retransmission timeout": msg("retransmission timeout"),
    "keepalive timeout": msg("keepalive timeout"),
    "ACK of FIN": msg("ACK of FIN"),
    "SYN (simultaneous open)": msg("SYN (simultaneous open)"),
    "close() with SO_LINGER 0": msg("close() with SO_LINGER 0"),
    "close() with unread data": msg("close() with unread data"),
    "data after close": msg("data after close()"),
}


def event_word(event: str) -> str:
    return in_words(EVENT_WORD, event)


# A segment's kind in words (the plain kinds syn, synack, ack, fin, data, rst are the flags'
# own names and stay as they are).
KIND_WORD: dict[str, Message] = {
    "retransmit": msg("retransmission"),
    "delayed_ack": msg("delayed ack"),
    "dupack": msg("dupack"),
    "challenge_ack": msg("challenge ack"),
    "keepalive": msg("keepalive probe"),
    "probe": msg("window probe"),
    "synack_cookie": msg("SYN+ACK with a cookie"),
    "window_update": msg("window update"),
}


def kind_word(kind: str) -> str:
    return in_words(KIND_WORD, kind, kind.replace("_", " "))


# A segment's options in a few letters each (protocol names, not words): "MSS 1460 · SACK ·
# TS · WS 7" on a SYN; "TS · SACK 3897:5345" or "TS · D-SACK 1001:2001" later. NOPs are
# padding and left out; the exact wire order is in the wire panel.
_OPT_SHORT = {"sackOK": "SACK", "TS": "TS", "eol": "EOL"}


def options_short(options: list[str], ack: int) -> str:
    """A segment's options compactly. A first SACK block that ends at or below the ACK is a
    D-SACK (RFC 2883 4)."""
    out: list[str] = []
    for o in options:
        kind, _, rest = o.partition(" ")
        if kind == "nop":
            continue
        if kind == "mss":
            out.append(f"MSS {rest}")
        elif kind == "wscale":
            out.append(f"WS {rest}")
        elif kind == "sack":
            blocks = rest.split()
            first_end = int(blocks[0].split(":")[1]) if blocks else 0
            if blocks and first_end <= ack:
                out.append(f"D-SACK {blocks[0]}")
                blocks = blocks[1:]
            if blocks:
                out.append("SACK " + " ".join(blocks))
        else:
            out.append(_OPT_SHORT.get(kind, kind))
    return " · ".join(out)


def window_text(window: int, scaled: int) -> str:
    """The window as the header carries it and, when scaled, the bytes it means:
    ``502 ×128 = 64256``."""
    if window and scaled != window:
        return f"{window} ×{scaled // window} = {scaled}"
    return str(window)


def text_w(text: str, narrow: float = 7.2, wide: float = 13.0) -> float:
    """Estimated width of ``text``: a CJK (wide) character takes ``wide`` units."""
    return advance(text, narrow, wide)


KERNEL = {
    "CLOSED": "TCP_CLOSE",
    "LISTEN": "TCP_LISTEN",
    "SYN_RECEIVED": "TCP_SYN_RECV",
    "SYN_SENT": "TCP_SYN_SENT",
    "ESTABLISHED": "TCP_ESTABLISHED",
    "FIN_WAIT_1": "TCP_FIN_WAIT1",
    "CLOSE_WAIT": "TCP_CLOSE_WAIT",
    "FIN_WAIT_2": "TCP_FIN_WAIT2",
    "CLOSING": "TCP_CLOSING",
    "LAST_ACK": "TCP_LAST_ACK",
    "TIME_WAIT": "TCP_TIME_WAIT",
}


PANEL_Y = 444


LINE = 15


def fmt_ms(t: float) -> str:
    if t >= 10_000:
        return f"{t / 1000:.3g} s" if t < 100_000 else f"{t / 1000:.0f} s"
    return f"{t:g} ms"


def dash(name: str) -> str:
    return name.replace("_", "-")


def fit(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# RFC words for the kernel's timers (the RFC view never names a Linux object)
TIMER_RFC: dict[str, Message] = {
    "retransmit": msg("retransmission"),
    "loss_probe": msg("tail loss probe"),
    "synack": msg("SYN-ACK retransmission"),
    "probe0": msg("persist"),
    "delack": msg("delayed ACK"),
    "keepalive": msg("keep-alive"),
    "fin_wait2": msg("FIN-WAIT-2"),
    "timewait": msg("2MSL"),
}


def timer_rfc(name: str) -> str:
    return in_words(TIMER_RFC, name)
