"""TCP options as a segment carries them (``include/net/tcp.h`` TCPOPT_*, written by
``tcp_options_write`` in ``net/ipv4/tcp_output.c``): one value type shared by the model's
segments, the pictures and the packetdrill runner, and their packetdrill spelling
(``<mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 7>``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OptionKind = Literal["nop", "eol", "mss", "wscale", "sackOK", "sack", "TS"]


@dataclass(frozen=True, slots=True)
class TcpOption:
    """One option in wire order. ``values``: mss ``(bytes,)``; wscale ``(shift,)``;
    TS ``(tsval, tsecr)``; sack ``(left1, right1, left2, right2, …)`` (sequence numbers as the
    segment carries them); nop, eol and sackOK none."""

    kind: OptionKind
    values: tuple[int, ...] = ()

    def text(self) -> str:
        """The option as packetdrill writes it."""
        if self.kind == "TS":
            return f"TS val {self.values[0]} ecr {self.values[1]}"
        if self.kind == "sack":
            pairs = zip(self.values[::2], self.values[1::2], strict=True)
            return "sack " + " ".join(f"{left}:{right}" for left, right in pairs)
        if self.kind in ("mss", "wscale"):
            return f"{self.kind} {self.values[0]}"
        return self.kind


def options_text(options: tuple[TcpOption, ...]) -> str:
    """A segment's options as packetdrill writes them, e.g. ``<mss 1460,nop,wscale 7>``."""
    return "<" + ",".join(o.text() for o in options) + ">" if options else ""
