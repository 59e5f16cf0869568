"""Run an sk_buff scenario: one frame per executed op, stopping at the first fatal outcome."""

from __future__ import annotations

from typing import Any, Literal, get_args

from app.sim.core import Message, Progress
from app.sim.core.trace import Field, Frame, Trace
from app.sim.skbuff.machine import SkbMachine
from app.sim.skbuff.ops import SkbParams
from app.sim.skbuff.skb import BUG_RESULTS
from app.sim.skbuff.state import (
    API_INT_FIELDS,
    BYTE_FIELDS,
    DIFF_FIELDS,
    TABLE_FIELDS,
    SkbSnapshot,
    SkbState,
    SkbTrace,
)

SIM_VERSION = "skb-5"


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
        snap = m.snapshot()
        state: SkbState = {
            "primary": primary,
            "skbs": snap["skbs"],
            "buffers": snap["buffers"],
            "pages": snap["pages"],
            "uargs": snap["uargs"],
            "errqueue": snap["errqueue"],
            "changed": changed,
        }
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


# What else the model knows of each skb and the API gives (documented in README.md, "For skb
# runs"): header offsets from head (None when unset), the owner (skb->sk set or not), cb[]'s
# layer and fields, the GSO and checksum fields of skb_shared_info / sk_buff, and the drop
# reason of a freed skb.
ApiExtra = Literal[
    "mac_header",
    "network_header",
    "transport_header",
    "sk",
    "cb",
    "gso_size",
    "gso_segs",
    "gso_type",
    "ip_summed",
    "csum_start",
    "csum_offset",
    "drop_reason",
    "shinfo_flags",
    "uarg",
    "dst",
    "pp_recycle",
]
API_EXTRA_FIELDS: tuple[ApiExtra, ...] = get_args(ApiExtra)


def _api_skb(s: SkbSnapshot) -> dict[str, Any]:
    out: dict[str, Any] = {k: s[k] for k in API_INT_FIELDS}
    for k in API_EXTRA_FIELDS:
        v = s[k]
        if k == "cb":
            out[k] = {"layer": s["cb"]["layer"], "fields": dict(s["cb"]["fields"])}
        elif k == "uarg":
            out[k] = dict(s["uarg"]) if s["uarg"] else None
        elif isinstance(v, list):
            out[k] = list(v)
        else:
            out[k] = v
    return out


def api_frames(trace: SkbTrace) -> list[dict[str, Any]]:
    """The public JSON shape of a trace's frames (``POST /api/v1/explainers/skb/run``)."""
    out: list[dict[str, Any]] = []
    for fr in trace.frames:
        every = {s["name"]: s for s in fr.state["skbs"]}
        primary = fr.state["primary"]
        item: dict[str, Any] = {
            "index": fr.index,
            "op": fr.op,
            "result": fr.result,
            "skb": _api_skb(every[primary]) if primary in every else {},
        }
        if len(every) > 1:  # once a second skb exists, list every skb still alive
            item["skbs"] = {
                name: _api_skb(s) for name, s in every.items() if s.get("status", "live") == "live"
            }
        item["narration"] = fr.narration.render()
        item["source"] = (
            {"function": fr.source.function, "path": fr.source.path, "line": fr.source.line}
            if fr.source
            else None
        )
        out.append(item)
    return out
