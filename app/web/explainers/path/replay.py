"""The sk_buff operations behind a packet-path trace, for the picture and the cross-link.

A path frame carries its skb's geometry (``SkbView``) but not the page frags, the frag_list or
the kernel calls that produced them. The walk is pure and deterministic, so this module runs it
once more with an :class:`~app.sim.skbuff.machine.SkbMachine` that records every op it is given
(and the frame the op happened before) and keeps a full sk_buff-explainer snapshot at every
frame. From that record, for any frame:

* :func:`snapshot` is the sk_buff explainer's state for the skb the frame follows (the shape
  ``app.web.explainers.skb.picture`` draws), restricted to that skb and the skbs it holds;
* :func:`ops_for` is an op list the sk_buff explainer accepts that rebuilds the same skb.

A replay is cached per (sim version, params); it never changes the trace it explains.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypedDict

from app.sim.core import Message, ParamError, msg
from app.sim.path import walks
from app.sim.path.engine import Tracer
from app.sim.path.explainer import EXPLAINER as PATH
from app.sim.path.explainer import PathTrace
from app.sim.path.params import PathParams
from app.sim.path.skb import PathSkbs, SkbView
from app.sim.skbuff import SkbExplainer
from app.sim.skbuff.machine import SkbMachine
from app.sim.skbuff.ops import MAX_OPS, MAX_SKBS, Op
from app.sim.skbuff.skb import DATAREF_MASK, Step
from app.sim.skbuff.state import SkbSnapshot
from app.web.memo import Memo

SKB = SkbExplainer()
_FIELDS = ("size", "len", "offset", "truesize", "nhead", "ntail", "label", "seq", "mss", "start")
# Weighed in frames: a 32-packet veth walk's replay and layout hold ~75 MB (2,240 frames).
CACHE: Memo[tuple[str, str], Replay] = Memo(16, weigh=lambda r: r.frames, budget=4000)


class HeadBuffer(TypedDict):
    """A head buffer as a partial snapshot keeps it (a subset of the sk_buff explainer's
    ``BufferView``)."""

    size: int
    end: int
    dataref: int
    freed: bool
    alloc: str


class PartialSnapshot(TypedDict):
    """``SkbMachine.snapshot()`` of a few skbs: them and their head buffers."""

    skbs: list[SkbSnapshot]
    buffers: dict[str, HeadBuffer]


class _RecordingMachine(SkbMachine):
    """An SkbMachine that notes each op with the index of the next frame to be emitted."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[int, Op]] = []
        self.frame_no = 0
        self.kin: dict[str, set[str]] = {}  # skbs that may share a head (clones, copies)

    def apply(self, op: Op) -> Step:
        self.log.append((self.frame_no, op))
        if op.src is not None and op.op in ("skb_clone", "skb_copy", "pskb_copy"):
            self.kin.setdefault(op.src, set()).add(op.skb)
            self.kin.setdefault(op.skb, set()).add(op.src)
        return super().apply(op)

    def partial_snapshot(self, name: str) -> PartialSnapshot:
        """``snapshot()`` restricted to ``name``, its frag_list and the skbs sharing its head
        (a whole snapshot per frame would cost O(skbs) each, O(frames²) a walk)."""
        me = self.skbs[name]
        names = [name]
        names += [n for n in self.buf(me).frag_list if n in self.skbs and n not in names]
        names += sorted(
            n
            for n in self.kin.get(name, ())
            if n in self.skbs and n not in names and self.skbs[n].buffer == me.buffer
        )
        bufs = {self.skbs[n].buffer for n in names}
        return {
            "skbs": [self.snapshot_skb(n) for n in names],
            "buffers": {
                b.id: {
                    "size": b.nbytes,
                    "end": b.end,
                    "dataref": b.dataref & DATAREF_MASK,
                    "freed": b.freed,
                    "alloc": b.where,
                }
                for b in (self.buffers[i] for i in sorted(bufs))
            },
        }


class _RecordingSkbs(PathSkbs):
    """PathSkbs whose machine records ops and whose ``view`` keeps a snapshot per frame."""

    def __init__(self) -> None:
        super().__init__()
        self.rec = _RecordingMachine()
        self.m = self.rec
        self.tracer: Tracer | None = None
        self.snaps: dict[int, PartialSnapshot] = {}

    def view(self, name: str) -> SkbView:
        out = super().view(name)
        if self.tracer is not None:
            self.snaps[len(self.tracer.frames)] = self.rec.partial_snapshot(name)
        return out


@dataclass(frozen=True, slots=True)
class Replay:
    log: tuple[tuple[int, Op], ...]
    snaps: dict[int, PartialSnapshot]
    frames: int


def replay(trace: PathTrace) -> Replay | None:
    """The recorded ops and snapshots of ``trace``'s walk (None if it cannot be replayed)."""
    params = trace.params
    if not isinstance(params, PathParams):
        return None
    key = (trace.sim_version, json.dumps(PATH.dump(params), sort_keys=True))
    hit = CACHE.get(key)
    if hit is not None:
        return hit
    skbs = _RecordingSkbs()
    tracer = Tracer(skbs, None, PATH.cost(params))
    skbs.tracer = tracer
    original_emit = tracer.emit

    def emit(*args: Any, **kw: Any) -> None:
        skbs.rec.frame_no = len(tracer.frames)
        original_emit(*args, **kw)
        skbs.rec.frame_no = len(tracer.frames)

    tracer.emit = emit  # type: ignore[method-assign]
    walks.run(params, tracer, skbs)
    if len(tracer.frames) != len(trace.frames):
        return None
    out = Replay(log=tuple(skbs.rec.log), snaps=skbs.snaps, frames=len(tracer.frames))
    CACHE.put(key, out)
    return out


def _lineage(log: tuple[tuple[int, Op], ...], name: str, upto: int) -> set[str]:
    """``name`` and every skb an op on it (up to frame ``upto``) took from (clone, frag_list)."""
    want = {name}
    changed = True
    while changed:
        changed = False
        for k, op in log:
            if k > upto:
                break
            if op.skb in want and op.src is not None and op.src not in want:
                want.add(op.src)
                changed = True
    return want


def op_json(op: Op) -> dict[str, Any]:
    """One op as the sk_buff explainer's JSON (``src`` is the field "from")."""
    raw: dict[str, Any] = {"op": op.op, "skb": op.skb}
    if op.src is not None:
        raw["from"] = op.src
    for f in _FIELDS:
        v = getattr(op, f)
        if v is not None:
            raw[f] = v
    return raw


@dataclass(frozen=True, slots=True)
class Rebuild:
    """An op list for the sk_buff explainer and whether it rebuilds this frame's skb exactly."""

    ops: list[dict[str, Any]]
    exact: bool
    why: Message  # empty when exact


def ops_for(rep: Replay, index: int, view: SkbView) -> Rebuild:
    """The kernel calls, in order, that made the skb frame ``index`` shows."""
    name = view["name"]
    keep = _lineage(rep.log, name, index)
    ops = [op_json(op) for k, op in rep.log if k <= index and (op.skb in keep)]
    freed = ops[-1] if ops and ops[-1]["op"] in ("consume_skb", "kfree_skb") else None
    if freed is not None:
        ops.pop()
    for which in ("mac", "network", "transport"):  # offsets the path walk keeps itself
        at = view[f"{which}_header"]  # type: ignore[literal-required]
        if at is not None and ops:
            ops.append({"op": f"skb_set_{which}_header", "skb": name, "offset": at - view["data"]})
    if freed is not None:
        ops.append(freed)
    if not ops:
        return Rebuild(ops=[], exact=False, why=msg("no recorded ops for this skb"))
    if len(ops) > MAX_OPS or len(keep) > MAX_SKBS:
        return Rebuild(ops=[], exact=False, why=msg("too many ops for the sk_buff explainer"))
    try:
        params = SKB.parse({"ops": ops})
    except ParamError:
        return Rebuild(ops=ops, exact=False, why=msg("the sk_buff explainer refuses these ops"))
    trace = SKB.run(params)
    last = trace.frames[-1].state if trace.frames else None
    got = next((s for s in last["skbs"] if s["name"] == name), None) if last else None
    if got is None:
        return Rebuild(ops=ops, exact=False, why=msg("the rebuilt run ends early"))
    keys = ("data", "tail", "end", "nr_frags", "mac_header", "network_header", "transport_header")
    # a header the path walk has not set yet (None) may be 0 in the sk_buff explainer, which
    # models __alloc_skb's zeroed network_header
    same = all(got[k] == view[k] or view[k] is None for k in keys)  # type: ignore[literal-required]
    lengths = all(got[k] == view[k] for k in ("len", "data_len", "truesize"))
    if same and lengths:
        return Rebuild(ops=ops, exact=True, why=Message(""))
    if same:
        return Rebuild(
            ops=ops,
            exact=False,
            why=msg(
                "same pointers; len, data_len and truesize miss the bytes merged into the last "
                "skb of the frag_list"
            ),
        )
    return Rebuild(ops=ops, exact=False, why=msg("the rebuilt skb differs from this step's"))


def snapshot(rep: Replay, index: int, view: SkbView) -> dict[str, Any] | None:
    """The sk_buff explainer's state for the frame's skb and the skbs it holds or shares with."""
    snap = rep.snaps.get(index)
    if snap is None:
        return None
    name = view["name"]
    by_name = {s["name"]: s for s in snap["skbs"]}
    me = by_name.get(name)
    if me is None or me["data"] != view["data"] or me["tail"] != view["tail"]:
        return None
    keep = [me]
    for other in me["frag_list"]:
        if other in by_name:
            keep.append(by_name[other])
    for s in snap["skbs"]:  # clones sharing the head buffer, still alive
        if s is not me and s["buffer"] == me["buffer"] and s["status"] == "live":
            keep.append(s)
    keep = [s.copy() for s in keep]
    keep[0]["len"] = view["len"]
    keep[0]["data_len"] = view["data_len"]
    keep[0]["truesize"] = view["truesize"]
    keep[0]["alloc"] = view["alloc"]
    bufs = {s["buffer"] for s in keep}
    return {
        "primary": name,
        "skbs": keep,
        "buffers": {b: dict(v) for b, v in snap["buffers"].items() if b in bufs},
        "pages": {},
        "changed": [],
    }
