"""The frame recorder of the packet-path explainer: a call stack, an execution context and the
packet's sk_buff, turned into one :class:`Frame` per modelled function.

The walk's stages (app.sim.path.walk and the stage modules that app.sim.path.walks assembles)
call :meth:`Tracer.enter` when a function is entered (the frame shows it on top of the stack),
:meth:`Tracer.leave` when it returns and :meth:`Tracer.leaf` for a call that does its work and
returns at once. Skb changes are made between the two with the :class:`PathSkbs` methods; each
frame lists the fields that changed since the previous frame of the same skb.
"""

from __future__ import annotations

from typing import Literal, TypedDict, Unpack

from app.sim.core.explainer import Cancelled, Progress
from app.sim.core.i18n import Message
from app.sim.core.trace import Field, Frame
from app.sim.path.skb import DIFF_FIELDS, PathSkbs, SkbView
from app.sim.path.sources import src

Context = Literal["process", "softirq", "hardirq"]


class HeldView(TypedDict):
    """A packet GRO holds: its bucket, flow and how many segments it has absorbed."""

    bucket: int
    flow: int
    segs: int
    len: int


class NapiView(TypedDict):
    """NAPI accounting at this frame (None outside NAPI walks)."""

    budget: int  # net_rx_action's budget left (netdev_budget = 300 at the start)
    weight: int  # the poll weight (64)
    work: int  # packets the current poll has handled
    polls: int  # polls so far in this walk
    rx_count: int  # segments waiting on napi->rx_list (gro_normal_batch = 8)
    ring: int  # frames still waiting in the RX ring / backlog queue
    irq_enabled: bool
    held: list[HeldView]


class Counters(TypedDict):
    """Queues the packet passes through."""

    backlog: int  # per-CPU input_pkt_queue length
    qdisc: int  # packets in the transmit qdisc
    receive_queue: int  # skbs on the socket's sk_receive_queue
    delivered_bytes: int  # payload bytes the reader can read
    time_squeeze: int
    dropped: int


class PathState(TypedDict):
    """What a view draws for one frame."""

    function: str
    layer: str
    context: Context
    hook: str | None
    stack: list[str]
    ns: str  # network namespace of the code running
    dev: str | None  # the net_device involved
    packet: int | None  # which packet (0-based) this frame is about
    skb: SkbView | None
    changed: list[str]
    napi: NapiView | None
    counters: Counters
    drop_reason: str | None


class FrameOpts(TypedDict, total=False):
    """What a frame may say besides its function, narration and layer."""

    hook: str | None  # the netfilter hook running
    result: str  # a result kind of the explainer ("ok" when not given)
    mark: str | None
    drop: str | None  # the drop reason, on the frame that frees the skb
    notes: tuple[Message, ...]


TABLE = (
    "len",
    "data_len",
    "headroom",
    "tailroom",
    "truesize",
    "nr_frags",
    "gso_segs",
    "destructor",  # who owns the skb: tcp_wfree (sender), sock_edemux / sock_rfree (receiver)
)
BYTES = frozenset({"len", "data_len", "headroom", "tailroom", "truesize"})


def _value(v: int | str | None) -> int | str:
    """A field-table value; an unset pointer (no owner, no destructor) shows as NULL."""
    return "NULL" if v is None else v


class Tracer:
    """Records frames; mutable within one run only."""

    def __init__(self, skbs: PathSkbs, progress: Progress | None, total: float) -> None:
        self.skbs = skbs
        self.frames: list[Frame[PathState]] = []
        self.stack: list[str] = []
        self.context: Context = "process"
        self.ns = "host"
        self.dev: str | None = None
        self.cur: str | None = None  # the skb the frames follow
        self.packet: int | None = None
        self.napi: NapiView | None = None
        self.counters: Counters = {
            "backlog": 0,
            "qdisc": 0,
            "receive_queue": 0,
            "delivered_bytes": 0,
            "time_squeeze": 0,
            "dropped": 0,
        }
        self._last: dict[str, SkbView] = {}
        self._progress = progress
        self._total = total
        self._tick = max(1, int(total // 100))

    # -- stack ---------------------------------------------------------------------------------
    def enter(self, function: str, text: Message, *, layer: str, **opts: Unpack[FrameOpts]) -> None:
        self.stack.append(function)
        self.emit(
            function,
            text,
            layer,
            opts.get("hook"),
            opts.get("result", "ok"),
            opts.get("mark"),
            opts.get("drop"),
            opts.get("notes", ()),
        )

    def leaf(self, function: str, text: Message, *, layer: str, **opts: Unpack[FrameOpts]) -> None:
        """A call that does its work and returns at once: one frame, then off the stack."""
        self.enter(function, text, layer=layer, **opts)
        self.stack.pop()

    def leave(self, n: int = 1) -> None:
        for _ in range(n):
            self.stack.pop()

    def unwind(self, depth: int) -> None:
        del self.stack[depth:]

    # -- frames --------------------------------------------------------------------------------
    def emit(
        self,
        function: str,
        text: Message,
        layer: str,
        hook: str | None,
        result: str,
        mark: str | None,
        drop: str | None,
        notes: tuple[Message, ...],
    ) -> None:
        view: SkbView | None = None
        changed: list[str] = []
        if self.cur is not None and self.cur in self.skbs.hdr:
            view = self.skbs.view(self.cur)
            old = self._last.get(self.cur)
            if old is None:
                changed = [f for f in DIFF_FIELDS if view[f] is not None]  # type: ignore[literal-required]
            else:
                changed = [f for f in DIFF_FIELDS if view[f] != old[f]]  # type: ignore[literal-required]
            self._last[self.cur] = view
        napi: NapiView | None = None
        if self.napi is not None:
            n = self.napi
            napi = {
                "budget": n["budget"],
                "weight": n["weight"],
                "work": n["work"],
                "polls": n["polls"],
                "rx_count": n["rx_count"],
                "ring": n["ring"],
                "irq_enabled": n["irq_enabled"],
                "held": [
                    {"bucket": h["bucket"], "flow": h["flow"], "segs": h["segs"], "len": h["len"]}
                    for h in n["held"]
                ],
            }
        state: PathState = {
            "function": function,
            "layer": layer,
            "context": self.context,
            "hook": hook,
            "stack": list(self.stack),
            "ns": self.ns,
            "dev": self.dev,
            "packet": self.packet,
            "skb": view,
            "changed": changed,
            "napi": napi,
            "counters": dict(self.counters),  # type: ignore[typeddict-item]
            "drop_reason": drop,
        }
        fields: tuple[Field, ...] = ()
        if view is not None:
            fields = tuple(
                Field(
                    name=f,
                    value=_value(view[f]),  # type: ignore[literal-required]
                    unit="bytes" if f in BYTES else "",
                    changed=f in changed,
                )
                for f in TABLE
            )
        index = len(self.frames)
        self.frames.append(
            Frame(
                index=index,
                op=function,
                result=result,
                narration=text,
                source=src(function),
                state=state,
                fields=fields,
                mark=mark,
                notes=notes,
            )
        )
        if self._progress is not None and index % self._tick == 0:
            self._progress(float(index), self._total)


__all__ = [
    "Cancelled",
    "Context",
    "Counters",
    "FrameOpts",
    "HeldView",
    "NapiView",
    "PathState",
    "Tracer",
]
