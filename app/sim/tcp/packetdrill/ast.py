"""The typed nodes of a parsed packetdrill script. Every node carries the line and column
(1-based) where it starts; times are in microseconds, as packetdrill keeps them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.sim.tcp.options import TcpOption

TimeKind = Literal["abs", "rel", "any"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EventTime:
    """``0.100`` (abs), ``+0.1`` (rel), ``*`` (any) and ranges ``+0...0.5``: packetdrill reads
    both ends of a relative range against the previous event's time."""

    kind: TimeKind
    us: int = 0
    end_us: int | None = None  # a range's end (same kind as the start)


# --- syscall arguments -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Name:
    """An identifier (``SOCK_STREAM``) or several joined by ``|`` (``O_RDWR|O_NONBLOCK``)."""

    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Elided:
    """``...``: an argument the script does not check."""


@dataclass(frozen=True, slots=True)
class Str:
    text: str


@dataclass(frozen=True, slots=True)
class ListArg:
    """``[1]``, ``[{fd=4, events=POLLIN}]``."""

    items: tuple[Arg, ...]


@dataclass(frozen=True, slots=True)
class StructArg:
    """``{onoff=1, linger=0}``."""

    fields: tuple[tuple[str, Arg], ...]

    def get(self, key: str) -> Arg | None:
        return next((v for k, v in self.fields if k == key), None)


Arg = int | Name | Elided | Str | ListArg | StructArg


# --- events -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    line: int
    col: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Comment(Node):
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Option(Node):
    """``--tolerance_usecs=10000``: a command-line option written in the script."""

    name: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Shell(Node):
    """A ```` `command` ```` line: ``sysctl`` settings (``net.ipv4.tcp_sack=1``), the
    selftests' ``defaults.sh`` and ``ethtool -K`` of the tun device's TSO/GSO; other commands
    are unsupported."""

    command: str
    sysctls: tuple[tuple[str, str], ...] = ()
    defaults: bool = False  # runs the selftests' defaults.sh
    # ``ethtool -K <dev> tso off gso off``: the tun device's offloads, (feature, on)
    offloads: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Syscall(Node):
    time: EventTime
    name: str
    args: tuple[Arg, ...]
    ret: int
    errno: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Packet(Node):
    """``< S 0:0(0) win 32792 <mss 1000,nop,wscale 7>`` (inbound) or ``> . 1:1(0) ack 1``.
    ``options`` is None for ``<...>`` (not checked); ``()`` when the script writes none."""

    time: EventTime
    direction: Literal["<", ">"]
    flags: str  # packetdrill letters: S F R P . (ACK)
    seq: int
    end: int
    length: int
    ack: int | None = None
    win: int | None = None
    options: tuple[TcpOption, ...] | None = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Unsupported(Node):
    """A construct the model cannot run (``%{ python }%``, TFO, MPTCP, …): ``construct`` names
    it for the "not supported" answer. ``time``: a timed one (``+.01 %{ … }%``) still takes its
    place on the script's clock, as packetdrill runs it at that time."""

    construct: str
    text: str = ""
    time: EventTime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InfoCheck:
    """One ``assert tcpi_X OP N`` line: a TCP_INFO field, a comparison and a number (a
    ``TCP_CA_*`` name stands for its value; the message after the comma is not evaluated)."""

    field: str
    op: str
    value: int


@dataclass(frozen=True, slots=True, kw_only=True)
class InfoAssert(Node):
    """``+0 %{ assert tcpi_snd_cwnd == 10, tcpi_snd_cwnd }%``, or a block of such lines, one
    per line: the one python form the runner checks, each a comparison of a TCP_INFO field the
    model keeps (app.sim.tcp.packetdrill.tcpinfo) with a number; every one must hold. Any
    other python is :class:`Unsupported`."""

    time: EventTime
    checks: tuple[InfoCheck, ...]


Event = Comment | Option | Shell | Syscall | Packet | InfoAssert | Unsupported


@dataclass(frozen=True, slots=True, kw_only=True)
class Script:
    events: tuple[Event, ...]
    lines: tuple[str, ...]  # the source, one entry per line

    @property
    def unsupported(self) -> tuple[Unsupported, ...]:
        return tuple(e for e in self.events if isinstance(e, Unsupported))
