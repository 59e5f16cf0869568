"""What the TCP picture's parts share: the canvas width, each endpoint's colour and word, the
kernel names of the RFC states, the timers' RFC words, and text helpers."""

from __future__ import annotations

from html import escape

WIDTH = 960


ENDPOINTS = ("client", "server")


COLOUR = {"client": "#0072B2", "server": "#E69F00"}  # Okabe–Ito blue / orange (app.css)


INK = {"client": "#ffffff", "server": "#1b1f24"}  # text on a filled badge of that colour


LETTER = {"client": "C", "server": "S"}


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


def attr(value: object) -> str:
    return escape(str(value), quote=True)


def esc(value: object) -> str:
    return escape(str(value), quote=False)


def fmt_ms(t: float) -> str:
    if t >= 10_000:
        return f"{t / 1000:.3g} s" if t < 100_000 else f"{t / 1000:.0f} s"
    return f"{t:g} ms"


def dash(name: str) -> str:
    return name.replace("_", "-")


def fit(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# RFC words for the kernel's timers (the RFC view never names a Linux object)
TIMER_RFC = {
    "retransmit": "retransmission",
    "synack": "SYN-ACK retransmission",
    "probe0": "persist",
    "delack": "delayed ACK",
    "keepalive": "keepalive",
    "fin_wait2": "FIN-WAIT-2",
    "timewait": "2MSL",
}
