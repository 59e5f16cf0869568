"""Run an sk_buff scenario: one frame per executed op, stopping at the first fatal outcome."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast

from app.sim.core import Message, Progress
from app.sim.core.trace import Field, Frame, Trace
from app.sim.skbuff.model import BUG_RESULTS, BYTE_FIELDS, DIFF_FIELDS, TABLE_FIELDS, SkbMachine
from app.sim.skbuff.ops import SkbParams

SIM_VERSION = "skb-2"


class SkbSnapshot(TypedDict):
    """One sk_buff as a frame shows it (``SkbMachine.snapshot_skb``); offsets from ``head``."""

    name: str
    head: int
    data: int
    tail: int
    end: int
    len: int
    data_len: int
    truesize: int
    headroom: int
    tailroom: int
    users: int
    dataref: int
    dataref_nohdr: int
    nr_frags: int
    headlen: int
    buffer: str
    alloc: str
    alloc_bytes: int
    frags: list[dict[str, int | str]]
    frag_list: list[str]
    fclone: str | None
    cloned: bool
    nohdr: bool
    sk: bool
    cb: dict[str, Any]  # {"layer": who owns cb[48] now, "fields": what it keeps there}
    ip_summed: str
    csum_start: int
    csum_offset: int
    gso_size: int
    gso_segs: int
    gso_type: list[str]
    drop_reason: str | None
    mac_header: int | None
    network_header: int | None
    transport_header: int | None
    status: str
    regions: list[dict[str, int | str]]


class SkbBug(TypedDict):
    name: str
    message: str


class SkbState(TypedDict):
    """A frame's state: every skb and data buffer after the op, and what it changed."""

    primary: str
    skbs: list[SkbSnapshot]
    buffers: dict[str, dict[str, int | str | bool | None]]
    pages: dict[str, dict[str, int]]
    changed: list[str]
    bug: NotRequired[SkbBug]


SkbTrace = Trace[SkbState, None]


def _message(text: Message | str) -> Message:
    return text if isinstance(text, Message) else Message(text)


def run(params: SkbParams, progress: Progress | None = None) -> SkbTrace:
    """Execute ``params.ops`` in order and return the frozen trace (pure, deterministic)."""
    m = SkbMachine()
    frames: list[Frame[SkbState]] = []
    ended: str | None = None
    total = len(params.ops)
    for i, op in enumerate(params.ops):
        if progress is not None and i % 50 == 0:
            progress(i, total)
        before = {n: m.values(n) for n in m.skbs}
        step = m.apply(op)
        primary = step.primary if step.primary in m.skbs else op.skb
        after = m.values(primary) if primary in m.skbs else {}
        old = before.get(primary)
        if step.result in BUG_RESULTS:
            changed: list[str] = []
        elif old is None:
            changed = [f for f in DIFF_FIELDS if f in after]
        else:
            changed = [f for f in DIFF_FIELDS if old.get(f) != after.get(f)]
        state = cast(SkbState, {"primary": primary, **m.snapshot(), "changed": changed})
        if step.bug:
            state["bug"] = {"name": step.result, "message": step.bug}
        fields = tuple(
            Field(
                name=f,
                value=after[f],
                unit="bytes" if f in BYTE_FIELDS else "",
                changed=f in changed,
            )
            for f in TABLE_FIELDS
            if f in after
        )
        frames.append(
            Frame(
                index=i,
                op=op.op,
                result=step.result,
                narration=_message(step.narration),
                source=step.source,
                state=state,
                fields=fields,
                mark=step.mark,
                notes=tuple(_message(n) for n in step.notes),
            )
        )
        if step.result in BUG_RESULTS:
            ended = step.result
            break
    summary = {"ops": len(params.ops), "frames": len(frames), "skbs": len(m.skbs)}
    return Trace(
        explainer="skb",
        sim_version=SIM_VERSION,
        params=params,
        frames=tuple(frames),
        series=None,
        summary=summary,
        ended_early=ended,
    )


API_INT_FIELDS = (
    "head",
    "data",
    "tail",
    "end",
    "len",
    "data_len",
    "truesize",
    "headroom",
    "tailroom",
    "users",
    "dataref",
    "nr_frags",
)


def api_frames(trace: SkbTrace) -> list[dict[str, Any]]:
    """The public JSON shape of a trace's frames (``POST /api/v1/explainers/skb/run``)."""
    out: list[dict[str, Any]] = []
    for fr in trace.frames:
        every: dict[str, dict[str, Any]] = {s["name"]: dict(s) for s in fr.state["skbs"]}
        primary = fr.state["primary"]
        item: dict[str, Any] = {
            "index": fr.index,
            "op": fr.op,
            "result": fr.result,
            "skb": {k: every[primary][k] for k in API_INT_FIELDS} if primary in every else {},
        }
        if len(every) > 1:  # once a second skb exists, list every skb still alive
            item["skbs"] = {
                name: {k: s[k] for k in API_INT_FIELDS}
                for name, s in every.items()
                if s.get("status", "live") == "live"
            }
        item["narration"] = fr.narration.render()
        item["source"] = (
            {"function": fr.source.function, "path": fr.source.path, "line": fr.source.line}
            if fr.source
            else None
        )
        out.append(item)
    return out
